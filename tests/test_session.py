"""Specification of sessions: `SessionSettings`, the `Session` protocol and `SQLiteSession` on SQLite."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from miniagents import session as session_mod
from miniagents.errors import UserError
from miniagents.session import Session, SessionABC, SessionItems, SessionSettings, SQLiteSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user(text):
    return {"role": "user", "content": text}


def call(call_id, name="lookup"):
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id, text="ok"):
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def assistant(text):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


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


def test_get_items_can_be_awaited_and_other_methods_are_documented_as_plain_calls(session):
    session.add_items([user("hi")])

    async def main():
        return await session.get_items()

    items = asyncio.run(main())
    assert items == [user("hi")] and isinstance(items, SessionItems)
    for name in ("add_items", "pop_item", "clear_session"):
        assert "do not await" in getattr(SQLiteSession, name).__doc__
    assert "do not await" in session_mod.__doc__


def test_invalid_table_name_raises_user_error():
    with pytest.raises(UserError, match="messages_table"):
        SQLiteSession("s", messages_table="m; DROP TABLE x")
    with pytest.raises(UserError, match="sessions_table"):
        SQLiteSession("s", sessions_table="1abc")


# -- behaviour -----------------------------------------------------------------------------------------

def test_round_trip_keeps_unicode_and_sql_like_text(tmp_path):
    items = [user("héllo wörld — 你好 🚀"), user("'); DROP TABLE agent_messages; --"), call("c1"), output("c1")]
    path = str(tmp_path / "rt.db")
    s = SQLiteSession("s", path)
    s.add_items(items)
    s.close()
    reopened = SQLiteSession("s", path)
    assert reopened.get_items() == items
    reopened.close()
    raw = sqlite3.connect(path).execute("SELECT message_data FROM agent_messages ORDER BY id").fetchone()[0]
    assert "你好" in raw  # ensure_ascii=False: stored readable, as upstream readers expect


def test_session_ids_are_isolated(tmp_path):
    path = str(tmp_path / "iso.db")
    a, b = SQLiteSession("a", path), SQLiteSession("b", path)
    a.add_items([user("for a")])
    b.add_items([user("for b")])
    assert a.get_items() == [user("for a")]
    assert b.get_items() == [user("for b")]
    b.clear_session()
    assert a.get_items() == [user("for a")] and b.get_items() == []
    a.close(), b.close()


def test_pop_item_returns_newest_and_removes_it(session):
    session.add_items([user("1"), user("2"), user("3")])
    assert session.pop_item() == user("3")
    assert session.get_items() == [user("1"), user("2")]


def test_pop_item_without_returning_clause_behaves_the_same(session, monkeypatch):
    monkeypatch.setattr(session_mod, "_HAS_RETURNING", False)
    session.add_items([user("1"), user("2")])
    assert session.pop_item() == user("2")
    assert session.get_items() == [user("1")]


def test_pop_item_on_empty_session_returns_none(session):
    assert session.pop_item() is None
    session.add_items([user("only")])
    session.pop_item()
    assert session.pop_item() is None


def test_clear_session_removes_items_and_session_row(session):
    session.add_items([user("1"), user("2")])
    session.clear_session()
    assert session.get_items() == []
    conn = session._shared.conn
    assert conn.execute("SELECT COUNT(*) FROM agent_sessions").fetchone()[0] == 0


def test_get_items_limit_returns_newest_n_in_order(session):
    session.add_items([user(str(i)) for i in range(200)])
    assert session.get_items(3) == [user("197"), user("198"), user("199")]
    assert session.get_items(150) == [user(str(i)) for i in range(50, 200)]
    assert session.get_items(0) == []
    assert len(session.get_items()) == 200


def test_settings_limit_is_the_default_and_explicit_limit_wins():
    s = SQLiteSession("s", session_settings=SessionSettings(limit=2))
    s.add_items([user("1"), user("2"), user("3")])
    assert s.get_items() == [user("2"), user("3")]
    assert s.get_items(1) == [user("3")]
    s.close()


def test_limit_turns_never_splits_a_call_from_its_output():
    s = SQLiteSession("s", session_settings=SessionSettings(limit=3, limit_turns=2))
    turn1 = [user("first"), call("c1"), output("c1"), assistant("one")]
    turn2 = [{"type": "message", "role": "user", "content": "second"}, call("c2"), call("c3"),
             output("c2"), output("c3"), assistant("two")]
    turn3 = [user("third"), call("c4"), output("c4"), assistant("three")]
    s.add_items(turn1 + turn2 + turn3)
    assert s.get_items() == turn2 + turn3  # limit_turns wins over limit=3, which would split c4
    assert s.get_items(limit_turns=1) == turn3
    assert s.get_items(limit_turns=10) == turn1 + turn2 + turn3
    s.close()


def test_limit_turns_reads_across_pages():
    s = SQLiteSession("s")
    turns = [[user(f"u{t}")] + [x for i in range(50) for x in (call(f"c{t}.{i}"), output(f"c{t}.{i}"))]
             for t in range(5)]
    s.add_items([x for t in turns for x in t])
    assert s.get_items(limit_turns=2) == turns[3] + turns[4]
    s.close()


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


def test_rows_with_bad_json_are_skipped_with_a_warning(session, caplog):
    session.add_items([user("1")])
    conn = session._shared.conn
    conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('s1', '{not json')")
    session.add_items([user("2")])
    with caplog.at_level(logging.WARNING, logger="miniagents.session"):
        assert session.get_items() == [user("1"), user("2")]
        assert session.get_items(2) == [user("1"), user("2")]
    assert "not valid JSON" in caplog.text
    assert session.pop_item() == user("2")
    assert session.pop_item() == user("1")  # the bad row is skipped (and dropped) on the way
    assert session.pop_item() is None


def test_failed_write_leaves_no_partial_rows_and_no_open_transaction(tmp_path):
    s = SQLiteSession("s", str(tmp_path / "fail.db"))
    conn = s._shared.conn
    with pytest.raises(TypeError):
        s.add_items([user("ok"), {"bad": object()}])
    assert conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 0
    assert not conn.in_transaction
    # A failure inside the transaction (after rows went in) is rolled back too.
    conn.execute("CREATE TRIGGER boom BEFORE INSERT ON agent_messages WHEN NEW.message_data LIKE '%boom%' "
                 "BEGIN SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(sqlite3.DatabaseError, match="boom"):
        s.add_items([user("ok"), user("boom")])
    assert conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM agent_sessions").fetchone()[0] == 0
    assert not conn.in_transaction
    s.add_items([user("after")])
    assert s.get_items() == [user("after")]
    s.close()


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


def test_custom_table_names_are_used(tmp_path):
    path = str(tmp_path / "custom.db")
    s = SQLiteSession("s", path, sessions_table="my_sessions", messages_table="my_messages")
    s.add_items([user("x")])
    s.close()
    assert count_rows(path, "my_messages") == 1


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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
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


WRITER = """
import sys
from miniagents.session import SQLiteSession
s = SQLiteSession("p" + sys.argv[2], sys.argv[1])
for i in range(200):
    s.add_items([{"role": "user", "content": "%s-%d" % (sys.argv[2], i)}])
s.close()
"""


def test_four_processes_writing_one_file_lose_nothing(tmp_path):
    path = str(tmp_path / "procs.db")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(n)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(4)]
    results = [(p.wait(timeout=60), p.stderr.read().decode()) for p in procs]
    for p in procs:
        p.stdout.close(), p.stderr.close()
    assert results == [(0, "")] * 4
    assert count_rows(path) == 800
