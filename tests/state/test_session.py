"""Specification of sessions: `SessionSettings`, the `Session` protocol, and what only `SQLiteSession` does (one
shared connection per file, WAL, reads whose cost follows what they return, private new files, upstream's files).
The contract every session keeps is tests/test_session_contract.py."""
from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading

import pytest

from miniagents import session as session_mod
from miniagents import Agent, RunState, Runner, function_tool
from miniagents.errors import SessionStoreError, UserError
from miniagents.session import Session, SessionABC, SessionItems, SessionSettings, SQLiteSession
from miniagents.testing import ScriptedModel, assistant_message, function_call
from session_backends import assistant, call, output, user


@pytest.fixture
def session():
    s = SQLiteSession("s1")
    yield s
    s.close()


def count_rows(path, table="agent_messages"):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


# -- settings and protocol -------------------------------------------------------------------------------

def test_settings_resolve_lets_non_none_override_fields_win():
    base = SessionSettings(limit=10, limit_turns=3)
    assert base.resolve(None) == base
    assert base.resolve(SessionSettings(limit=5)) == SessionSettings(limit=5, limit_turns=3)
    assert base.resolve(SessionSettings(limit_turns=1)) == SessionSettings(limit=10, limit_turns=1)
    assert SessionSettings().to_dict() == {"limit": None, "limit_turns": None}


def test_sqlite_session_satisfies_protocol_and_abc(session):
    assert isinstance(session, Session)
    assert isinstance(session, SessionABC)
    assert not isinstance(object(), Session)


def test_every_method_upstream_awaits_can_be_awaited_or_run_with_asyncio_and_used_synchronously(session):
    """Code written for upstream's coroutines runs unchanged; synchronous code uses the results directly."""
    assert asyncio.run(session.add_items([user("hi"), user("there")])) is True

    async def main():
        return await session.get_items()

    items = asyncio.run(main())
    assert items == [user("hi"), user("there")] and isinstance(items, SessionItems)
    assert asyncio.run(session.get_items()) == items  # asyncio.run takes it like a coroutine
    assert asyncio.run(session.pop_item()) == user("there")
    assert session.pop_item().value == user("hi") and session.pop_item().value is None
    assert asyncio.run(session.clear_session()) is None
    for name in ("add_items", "pop_item", "clear_session"):
        assert "Ready" in getattr(SQLiteSession, name).__doc__


def test_synchronous_code_tests_a_result_as_its_value_true_false_and_equal_as_it(session):
    """`while session.pop_item(): ...` empties a session: a result is true, false and equal as its value is."""
    assert session.add_items([user("hi")])
    popped, empty = session.pop_item(), session.pop_item()
    assert popped and popped == user("hi") and popped != user("there")
    assert not empty and empty == None  # noqa: E711 (equal as its value is)


def test_adding_no_items_is_done_at_once_and_stores_nothing(session):
    assert session.add_items([]).value is True
    assert session.get_items() == []


def test_a_result_prints_as_its_value_and_acts_as_a_finished_coroutine_when_thrown_into_or_closed(session):
    """What asyncio does to a coroutine it gives up on (throw, close) works on a result that is already there."""
    session.add_items([user("hi")])
    popped = session.pop_item()
    assert repr(popped) == f"Ready({user('hi')!r})"
    assert popped.close() is None
    with pytest.raises(ValueError, match="^stop$"):
        popped.throw(ValueError("stop"))
    with pytest.raises(KeyError):
        popped.throw(KeyError)


# -- behaviour -----------------------------------------------------------------------------------------

def vm_steps(session, read):
    """How many SQLite VM steps (x10) `read()` costs on the session's connection."""
    steps = [0]

    def tick():
        steps[0] += 1
        return 0

    conn = session._shared.conn
    conn.set_progress_handler(tick, 10)
    try:
        read()
    finally:
        conn.set_progress_handler(None, 10)
    return steps[0]


def test_reading_the_newest_items_costs_the_same_in_a_long_session():
    def filled(turns):
        s = SQLiteSession("s")
        s.add_items([x for t in range(turns) for x in (user(f"u{t}"), call(f"c{t}"), output(f"c{t}"), assistant("a"))])
        s.add_items([assistant("noise")] * 50)  # a long answer after the last turn
        return s

    small, large = filled(10), filled(3000)
    for read in (lambda s: s.get_items(5), lambda s: s.get_items(limit_turns=2)):
        cost_small, cost_large = vm_steps(small, lambda: read(small)), vm_steps(large, lambda: read(large))
        assert cost_large <= cost_small * 1.5 + 20, (cost_small, cost_large)
    assert vm_steps(large, lambda: large.get_items()) > 10 * vm_steps(small, lambda: small.get_items())
    small.close(), large.close()


def test_a_failed_write_leaves_no_transaction_open_on_the_shared_connection(tmp_path):
    s = SQLiteSession("s", str(tmp_path / "fail.db"))
    conn = s._shared.conn
    conn.execute("CREATE TRIGGER boom BEFORE INSERT ON agent_messages WHEN NEW.message_data LIKE '%boom%' "
                 "BEGIN SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(sqlite3.DatabaseError, match="boom"):
        s.add_items([user("ok"), user("boom")])
    assert not conn.in_transaction
    s.add_items([user("after")])
    assert s.get_items() == [user("after")]
    s.close()


def test_a_missing_parent_folder_is_a_user_error_naming_the_path(tmp_path):
    missing = tmp_path / "no such folder" / "chat.db"
    with pytest.raises(UserError, match="no such folder"):
        SQLiteSession("s", missing)
    assert not (tmp_path / "no such folder").exists()


def test_a_parent_that_is_a_file_is_a_user_error_saying_so(tmp_path):
    (tmp_path / "notes").write_text("")
    with pytest.raises(UserError) as info:
        SQLiteSession("s", tmp_path / "notes" / "chat.db")
    assert info.value.message.endswith(f": {os.path.realpath(tmp_path / 'notes')!r} is not a folder")


def test_a_db_path_that_is_not_a_path_is_a_user_error():
    said = r"db_path \(a file path or ':memory:'\) must be a str or an os.PathLike, got NoneType"
    with pytest.raises(UserError, match=said):
        SQLiteSession("s", None)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_new_database_file_is_private_to_its_owner_and_an_existing_one_keeps_its_mode(tmp_path):
    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "new.db"
        with SQLiteSession("s", path) as s:
            s.add_items([user("secret")])
            files = [p for p in tmp_path.iterdir() if p.name.startswith("new.db")]
            assert {p.name for p in files} >= {"new.db", "new.db-wal"}  # WAL: the conversation is in -wal too
            assert {p.name: p.stat().st_mode & 0o777 for p in files} == {p.name: 0o600 for p in files}
        existing = tmp_path / "existing.db"
        sqlite3.connect(str(existing)).close()
        existing.chmod(0o640)
        with SQLiteSession("s", existing) as s:
            s.add_items([user("x")])
        assert existing.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old_umask)


def test_a_row_that_is_json_but_not_an_object_never_breaks_a_later_run(tmp_path):
    from miniagents import Agent, Runner
    from miniagents.testing import ScriptedModel, assistant_message

    path = str(tmp_path / "odd.db")
    with SQLiteSession("s", path) as s:
        s.add_items([user("hello")])
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                     [("[1, 2]",), ("42",), ('"text"',), ("null",)])
    conn.commit()
    conn.close()
    model = ScriptedModel([[assistant_message("fine")], [assistant_message("still fine")]])
    with SQLiteSession("s", path) as s:
        assert Runner.run_sync(Agent("A", model=model), "next", session=s).final_output == "fine"
        assert Runner.run_sync(Agent("A", model=model), "again", session=s).final_output == "still fine"
    assert [dict(i) for i in model.calls[0].input] == [user("hello"), user("next")]


def test_file_database_uses_wal_and_pragmas(tmp_path):
    path = str(tmp_path / "wal.db")
    s = SQLiteSession("s", path)
    conn = s._shared.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    s.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent


UPSTREAM_DDL = [
    """CREATE TABLE IF NOT EXISTS agent_sessions (
        session_id TEXT PRIMARY KEY,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""",
    """CREATE TABLE IF NOT EXISTS agent_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        message_data TEXT NOT NULL,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE)""",
    "CREATE INDEX IF NOT EXISTS idx_agent_messages_session_id ON agent_messages (session_id, id)",
]


def test_database_written_by_upstream_loads(tmp_path):
    path = str(tmp_path / "upstream.db")
    conn = sqlite3.connect(path)
    for ddl in UPSTREAM_DDL:
        conn.execute(ddl)
    items = [user("from upstream"), call("c1"), output("c1"), assistant("done")]
    conn.execute("INSERT INTO agent_sessions (session_id) VALUES ('conv')")
    conn.executemany("INSERT INTO agent_messages (session_id, message_data) VALUES ('conv', ?)",
                     [(json.dumps(i),) for i in items])
    conn.commit()
    conn.close()
    s = SQLiteSession("conv", path)
    assert s.get_items() == items
    s.add_items([user("here")])
    s.close()
    check = sqlite3.connect(path)
    assert check.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 5
    assert [r[0] for r in check.execute("SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'idx%'")] \
        == ["idx_agent_messages_session_id"]


def test_sessions_on_the_same_file_share_one_connection(tmp_path):
    path = str(tmp_path / "shared.db")
    a, b = SQLiteSession("a", path), SQLiteSession("b", os.path.join(str(tmp_path), ".", "shared.db"))
    assert a._shared is b._shared and a._shared.conn is b._shared.conn
    m1, m2 = SQLiteSession("a"), SQLiteSession("a")
    assert m1._shared.conn is not m2._shared.conn  # :memory: is private per object
    conn = a._shared.conn
    a.close()
    conn.execute("SELECT 1")  # b still uses it
    b.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")  # the last user closed it
    m1.close(), m2.close()


def test_closed_session_reconnects_on_next_use(tmp_path):
    s = SQLiteSession("s", str(tmp_path / "re.db"))
    s.add_items([user("1")])
    s.close()
    s.close()  # idempotent
    s.add_items([user("2")])
    assert s.get_items() == [user("1"), user("2")]
    s.close()


def test_a_closed_in_memory_session_is_a_store_error_saying_its_history_is_gone():
    s = SQLiteSession("s")
    s.add_items([user("1")])
    s.close()
    s.close()  # idempotent
    for use in (s.get_items, lambda: s.add_items([user("2")]), lambda: s.claim_call("run", "c1")):
        with pytest.raises(SessionStoreError, match=r"'s' was in memory, and its history is gone \(closed"):
            use()


def test_an_approval_resumed_twice_around_closing_its_in_memory_session_runs_once():
    refunds = []

    @function_tool(needs_approval=True)
    def refund(amount: int) -> str:
        refunds.append(amount)
        return "refunded"

    def desk():
        return Agent("Desk", tools=[refund], model=ScriptedModel(
            [[function_call("refund", {"amount": 5}, call_id="c1")], [assistant_message("done")]]))

    session = SQLiteSession("conv")
    saved = Runner.run_sync(desk(), "refund me", session=session).to_state().to_string()
    for attempt in (1, 2):  # a retried webhook resumes the same saved JSON twice, the session closed between
        agent = desk()
        state = RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        if attempt == 1:
            assert Runner.run_sync(agent, state, session=session).final_output == "done"
            session.close()
        else:  # a new connection would have been a new database: no ledger, and the refund paid again
            with pytest.raises(SessionStoreError, match="history is gone"):
                Runner.run_sync(agent, state, session=session)
    assert refunds == [5]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
# Forking is the point of the test: the child opens its own connection, writes and exits at once; the idle
# threads other tests left behind (which Python 3.12+ warns about) hold no lock it needs.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_opens_its_own_connection(tmp_path):
    s = SQLiteSession("s", str(tmp_path / "fork.db"))
    s.add_items([user("parent")])
    parent_shared = s._shared
    pid = os.fork()
    if pid == 0:  # child: must not reuse the parent's connection
        code = 1
        try:
            s.add_items([user("child")])
            code = 0 if s._shared is not parent_shared and s._shared.pid == os.getpid() else 2
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    assert s.get_items() == [user("parent"), user("child")]
    s.close()


def test_eight_threads_writing_one_file_lose_nothing(tmp_path):
    path = str(tmp_path / "threads.db")
    errors = []

    def work(n):
        s = SQLiteSession(f"t{n % 3}", path)
        try:
            for i in range(200):
                s.add_items([user(f"{n}-{i}")])
                if i % 50 == 0:
                    s.get_items(5)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert count_rows(path) == 1600




