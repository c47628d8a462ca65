"""Specification of what `DBAPISession` adds to the shared session contract (tests/test_session_contract.py):
how it reaches a driver and what it does when the database fails.

Placeholders follow the driver's paramstyle; the dialect comes from the driver's module (or `dialect=`); bad
arguments are `UserError`s before anything is stored. A write that fails with a lost connection, a
serialization failure or a deadlock is rolled back and retried on a fresh connection, a bounded number of times,
then raised as `SessionStoreError`; a lost connection while a non-repeatable write commits is a
`SessionStoreError` at once (never a turn stored twice); the tables are checked when the session is made, so
missing ones fail there; an error that says the database cannot be used is a `SessionStoreError` (files sqlite3
cannot use: tests/state/test_session_files.py); other errors are the driver's own, raised as they are.
The failures are injected by `FlakyConnection`, a sqlite3 connection whose statements fail on cue the way a
PostgreSQL driver's do (an exception carrying `sqlstate`, a connection that reports itself closed).
"""
from __future__ import annotations

import logging
import os
import re
import sqlite3
import sys
import types
import zlib

import pytest
from hypothesis import given, strategies as st

from miniagents import dbapi as dbapi_session
from miniagents.errors import UserError
from miniagents.session import DBAPISession, SessionStoreError
from miniagents.dbapi import ParamStyle
from session_backends import user


@pytest.fixture(autouse=True)
def no_retry_delay(monkeypatch):
    monkeypatch.setattr(dbapi_session, "RETRY_DELAY", 0)


class DriverError(Exception):
    def __init__(self, message, sqlstate=None):
        super().__init__(message)
        self.sqlstate = sqlstate


class FlakyConnection:
    """sqlite3 under a DB-API face that fails on cue. `plan` (shared by every connection a test opens) maps a
    statement prefix to a list of failures, each (sqlstate, lose_connection, after_running); one is used per
    matching statement. `statements` records each statement run (sql, parameters), failed ones too."""

    def __init__(self, path, plan):
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.path, self.plan, self.closed, self.statements = path, plan, False, []

    def cursor(self):
        return FlakyCursor(self, self._conn.cursor())

    @property
    def in_transaction(self):
        return not self.closed and self._conn.in_transaction

    def commit(self):
        raise AssertionError("the sqlite dialect commits with a COMMIT statement")

    def rollback(self):
        raise AssertionError("the sqlite dialect rolls back with a ROLLBACK statement")

    def close(self):
        self.closed = True
        self._conn.close()


class FlakyCursor:
    def __init__(self, owner, cur):
        self.owner, self.cur = owner, cur

    def _run(self, method, sql, params):
        self.owner.statements.append((sql, params))
        if self.owner.closed:
            raise DriverError("the connection is closed")
        for prefix, failures in self.owner.plan.items():
            if sql.startswith(prefix) and failures:
                sqlstate, lose, after = failures.pop(0)
                if after:
                    getattr(self.cur, method)(sql, params)
                if lose:
                    self.owner.close()
                raise DriverError(f"injected failure of {prefix!r}", sqlstate)
        getattr(self.cur, method)(sql, params)
        return self

    def execute(self, sql, params=()):
        return self._run("execute", sql, params)

    def executemany(self, sql, rows):
        return self._run("executemany", sql, rows)

    def __getattr__(self, name):
        return getattr(self.cur, name)


@pytest.fixture
def flaky(tmp_path):
    """(make_session(**kwargs), plan, connections): sessions over FlakyConnections to one file."""
    path, plan, connections = str(tmp_path / "flaky.db"), {}, []

    def connect():
        connections.append(FlakyConnection(path, plan))
        return connections[-1]

    sessions = []

    def make(**kwargs):
        sessions.append(DBAPISession("s", connect, dialect="sqlite", paramstyle="qmark", **kwargs))
        return sessions[-1]

    yield make, plan, connections
    for s in sessions:
        s.close()


def rows(connections):
    """How many message rows the file holds, read with a connection of its own."""
    conn = sqlite3.connect(connections[0].path)
    try:
        return conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0]
    finally:
        conn.close()


SERIALIZATION, DEADLOCK, ADMIN_SHUTDOWN = "40001", "40P01", "57P01"
INSERT_MESSAGE = 'INSERT INTO "agent_messages"'


@pytest.mark.parametrize("sqlstate,lose", [(SERIALIZATION, False), (DEADLOCK, False), (ADMIN_SHUTDOWN, True),
                                           ("08006", True), (None, True)])
def test_a_write_that_fails_transiently_midway_is_retried_whole(flaky, caplog, sqlstate, lose):
    make, plan, connections = flaky
    s = make()
    plan[INSERT_MESSAGE] = [(sqlstate, lose, True)]  # the rows went in, then the failure: rolled back
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        assert s.add_items([user("1"), user("2")]).value is True
    assert s.get_items() == [user("1"), user("2")] and rows(connections) == 2
    assert "retrying a write after DriverError (attempt 2 of 3)" in caplog.text
    assert len(connections) == 2  # the retry ran on a fresh connection


def test_retries_are_bounded_and_then_a_session_store_error_says_nothing_was_stored(flaky):
    make, plan, connections = flaky
    s = make(max_attempts=4)
    plan[INSERT_MESSAGE] = [(DEADLOCK, False, True)] * 10
    with pytest.raises(SessionStoreError, match="failed after 4 attempt.*nothing of it was stored") as caught:
        s.add_items([user("1")])
    assert isinstance(caught.value.__cause__, DriverError)
    assert "injected" not in str(caught.value)  # the driver's text stays in the cause
    assert len(plan[INSERT_MESSAGE]) == 6 and rows(connections) == 0
    plan[INSERT_MESSAGE] = []
    s.add_items([user("after")])
    assert s.get_items() == [user("after")]


def test_a_sqlite3_database_locked_past_every_retry_says_so_as_sqlite_session_does(tmp_path):
    path = str(tmp_path / "locked.db")
    s = DBAPISession("s", lambda: sqlite3.connect(path, timeout=0.05, check_same_thread=False), max_attempts=2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SessionStoreError, match=r"after 2 attempt\(s\) \(OperationalError\): the database stayed "
                                                    "locked by another connection .* retry later; nothing of it"):
            s.add_items([user("1")])
    finally:
        holder.close()
        s.close()


def test_the_wait_before_each_retry_doubles(flaky, monkeypatch):
    make, plan, _ = flaky
    waits = []
    monkeypatch.setattr(dbapi_session, "RETRY_DELAY", 0.25)
    monkeypatch.setattr(dbapi_session, "time", types.SimpleNamespace(sleep=waits.append))  # this module's only
    plan[INSERT_MESSAGE] = [(DEADLOCK, False, True)] * 3
    make(max_attempts=4).add_items([user("1")])
    assert waits == [0.25, 0.5, 1.0]
    waits.clear()  # up to 32 times the first: many attempts never wait for hours (nor overflow a float)
    plan[INSERT_MESSAGE] = [(DEADLOCK, False, True)] * 2000
    with pytest.raises(SessionStoreError, match="after 2000 attempt"):
        make(max_attempts=2000).add_items([user("2")])
    assert waits[:7] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0] and max(waits) == 8.0 and len(waits) == 1999

def test_an_error_that_is_not_transient_is_raised_as_is_without_retry(flaky):
    make, plan, connections = flaky
    s = make()
    plan[INSERT_MESSAGE] = [("23505", False, False)]
    with pytest.raises(DriverError, match="injected"):
        s.add_items([user("1")])
    assert len(connections) == 1 and rows(connections) == 0


def test_a_schema_that_cannot_be_created_fails_the_constructor_and_closes_its_connection(flaky):
    make, plan, connections = flaky
    plan["CREATE TABLE"] = [("42501", False, False)]  # insufficient privilege: not transient
    with pytest.raises(DriverError, match="injected"):
        make()
    assert len(connections) == 1 and connections[0].closed


def test_reads_are_retried_too(flaky):
    make, plan, connections = flaky
    s = make()
    s.add_items([user("1")])
    plan["SELECT id, message_data"] = [(None, True, False)]
    assert s.get_items() == [user("1")]


def test_a_reconnection_that_keeps_failing_ends_in_a_session_store_error(tmp_path):
    path, attempts = str(tmp_path / "down.db"), []

    def connect():
        attempts.append(1)
        if len(attempts) > 1:
            raise DriverError("server is down")
        return FlakyConnection(path, {"SELECT id": [(None, True, False)]})

    s = DBAPISession("s", connect, dialect="sqlite", paramstyle="qmark")
    with pytest.raises(SessionStoreError, match=r"read of session 's' failed after 3 attempt\(s\) \(DriverError\)$"):
        s.get_items()
    assert len(attempts) == 3


def test_losing_the_connection_while_committing_a_plain_append_never_stores_it_twice(flaky):
    make, plan, connections = flaky
    s = make()
    plan["COMMIT"] = [(None, True, True)]  # committed, but the answer never came back
    with pytest.raises(SessionStoreError, match="whether it was stored is unknown"):
        s.add_items([user("1")])
    assert s.get_items() == [user("1")]  # once: the write was not repeated


def test_losing_the_connection_while_committing_a_once_append_retries_safely(flaky):
    make, plan, connections = flaky
    s = make()
    plan["COMMIT"] = [(None, True, True)]
    assert s.add_items([user("1")], once="run/turn-1").value is False  # the retry found its own key
    assert s.get_items() == [user("1")]


def test_losing_the_connection_while_committing_a_pop_raises_instead_of_popping_twice(flaky):
    make, plan, connections = flaky
    s = make()
    s.add_items([user("1"), user("2")])
    plan["COMMIT"] = [(None, True, True)]
    with pytest.raises(SessionStoreError, match="unknown"):
        s.pop_item()
    assert s.get_items() == [user("1")]


def test_losing_the_connection_while_committing_a_claim_leaves_the_call_claimed(flaky):
    make, plan, connections = flaky
    s = make()
    plan["COMMIT"] = [(None, True, True)]
    assert s.claim_call("run", "c1") == (False, None)  # never (True, None) twice: the call stays claimed
    plan["COMMIT"] = [(None, True, True)]
    s.settle_call("run", "c1", "done")
    assert s.claim_call("run", "c1") == (False, "done")


def test_a_closed_session_reconnects_on_next_use(flaky):
    make, plan, connections = flaky
    s = make()
    s.add_items([user("1")])
    s.close()
    s.close()  # idempotent
    assert connections[0].closed
    s.add_items([user("2")])
    assert s.get_items() == [user("1"), user("2")] and len(connections) == 2


def test_a_sqlite3_connection_closed_under_the_session_is_replaced_as_a_lost_one(tmp_path):
    """sqlite3's closed connection has no `closed` to read: its ProgrammingError was raised as it is, by every
    later call of the session, for ever."""
    made, again = [], []

    def connect():
        if not again:
            made.append(sqlite3.connect(str(tmp_path / "c.db"), check_same_thread=False))
        return made[-1]

    s = DBAPISession("s", connect)
    s.add_items([user("1")])
    made[-1].close()  # by a pool, or by code that thought it was its own
    s.add_items([user("2")])
    assert s.get_items() == [user("1"), user("2")] and len(made) == 2
    made[-1].close()
    again.append(True)  # a factory that hands back the closed connection: bounded retries
    with pytest.raises(SessionStoreError, match="a read of session 's' failed after 3 attempt"):
        s.get_items()


def test_a_long_history_is_read_in_pages_that_double_from_64_up_to_4096_rows(flaky):
    """A driver such as psycopg reads a whole result into memory: the history is read newest first a page at a
    time, each page twice the last (so what is read follows what is wanted) but never more than 4096 rows."""
    make, plan, connections = flaky
    s = make()
    history = [user(str(i)) for i in range(64 + 128 + 256 + 512 + 1024 + 2048 + 4096 + 100)]
    s.add_items(history)

    def page_sizes(**kwargs):
        del connections[0].statements[:]
        items = s.get_items(**kwargs)
        return items, [params[-1] for sql, params in connections[0].statements
                       if sql.startswith("SELECT id, message_data FROM")]

    assert page_sizes() == (history, [64, 128, 256, 512, 1024, 2048, 4096, 4096])
    assert page_sizes(limit=100) == (history[-100:], [64, 100])  # a page asks for no more than the limit
    assert page_sizes(limit=10) == (history[-10:], [10])


# --- drivers, dialects and placeholders -------------------------------------------------------------------------


def test_postgresql_creators_of_tables_named_in_any_case_take_one_schema_lock():
    """PostgreSQL's table is the name in lower case (`quote`): creators of "S1" and "s1" at once took two locks and
    collided in its catalog (a bare UniqueViolation). Default names keep the lock they always had."""
    lock = dbapi_session.POSTGRESQL.schema_lock
    assert lock(("S1", "M1", "t1")) == lock(("s1", "m1", "t1")) != lock(("s1", "m1", "t2"))
    assert lock(("agent_sessions", "agent_messages", "agent_tool_calls")) == \
        f"SELECT pg_advisory_xact_lock({zlib.crc32(b'agent_sessions agent_messages agent_tool_calls')})"


def test_the_dialect_and_paramstyle_come_from_the_driver(tmp_path):
    with DBAPISession("s", lambda: sqlite3.connect(str(tmp_path / "a.db"))) as s:
        assert (s._dialect.name, s._style.name) == ("sqlite", "qmark")
        s.add_items([user("x")])
        assert s.get_items() == [user("x")]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sqlite3's autocommit attribute is new in Python 3.12")
@pytest.mark.parametrize("autocommit", [False, True])
def test_a_sqlite3_connection_in_either_pep_249_mode_is_used_with_its_own_transactions(tmp_path, autocommit):
    """Python 3.12's `autocommit=False` opens transactions implicitly: the session turns that off, so its own
    BEGIN IMMEDIATE is not refused inside one, and each write is committed where another connection sees it."""
    path = str(tmp_path / "a.db")
    with DBAPISession("s", lambda: sqlite3.connect(path, autocommit=autocommit)) as s:
        s.add_items([user("x")])
        assert s.get_items() == [user("x")]
        with DBAPISession("s", lambda: sqlite3.connect(path)) as other:
            assert other.get_items() == [user("x")]


def test_a_connection_of_an_unknown_driver_needs_a_dialect_and_is_closed(tmp_path):
    made = []

    def connect():
        made.append(FlakyConnection(str(tmp_path / "u.db"), {}))
        return made[-1]

    with pytest.raises(UserError, match="pass dialect="):
        DBAPISession("s", connect)
    assert made[0].closed
    with pytest.raises(UserError, match="paramstyle None"):
        DBAPISession("s", connect, dialect="sqlite")
    with pytest.raises(UserError, match="dialect 'mysql'"):
        DBAPISession("s", connect, dialect="mysql")


@pytest.mark.parametrize("count", [-1, None])
def test_a_cursor_that_tells_no_row_count_is_a_session_store_error_never_a_claim_lost(flaky, monkeypatch, count):
    """PEP 249 lets rowcount be -1 ("cannot be determined"): read as "claimed before", a claimed call never ran and
    a once-append stored nothing yet said its key was used."""
    make, _, connections = flaky
    s = make()
    s.add_items([user("kept")])
    monkeypatch.setattr(FlakyCursor, "rowcount", count, raising=False)
    for write in (lambda: s.claim_call("r", "c1"), lambda: s.add_items([user("x")], once="k"),
                  lambda: s.settle_call("r", "c2", "out"), lambda: s.write_journal("", "entry"), s.pop_item):
        with pytest.raises(SessionStoreError, match=f"gave no row count \\(rowcount {count}\\).*nothing"):
            write()
    monkeypatch.undo()
    assert s.lookup_call("r", "c1") == (False, None) and s.read_journal() == "" and s.get_items() == [user("kept")]


def test_a_connection_that_returns_rows_as_mappings_is_a_user_error_and_one_indexed_by_position_works(tmp_path):
    """A row factory such as psycopg's dict_row or psycopg2's RealDictCursor: each row was read as its column
    names, so every stored item was skipped as no JSON (the history read empty) and a claim was a bare KeyError."""
    path = str(tmp_path / "r.db")

    def connect(factory):
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.row_factory = factory
        return conn

    made = []
    as_dicts = lambda cur, row: {d[0]: v for d, v in zip(cur.description, row)}  # noqa: E731
    with pytest.raises(UserError, match="returns rows as mappings or objects .*dict_row"):
        DBAPISession("s", lambda: made.append(connect(as_dicts)) or made[-1])
    as_objects = lambda cur, row: types.SimpleNamespace(row=row)  # noqa: E731  (psycopg's class_row: a bare TypeError)
    with pytest.raises(UserError, match="returns rows as mappings or objects .*class_row"):
        DBAPISession("s", lambda: connect(as_objects))
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        made[0].execute("SELECT 1")
    bytes_text = sqlite3.connect(path, check_same_thread=False)
    bytes_text.text_factory = bytes  # the journal read as bytes: a crashed turn could not be continued
    with pytest.raises(UserError, match="or text as no str"):
        DBAPISession("s", lambda: bytes_text)
    with DBAPISession("s", lambda: connect(sqlite3.Row)) as s:
        s.add_items([user("1")])
        s.claim_call("r", "c")
        assert s.get_items() == [user("1")] and s.claim_call("r", "c") == (False, None)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_factory_that_returns_no_connection_is_a_user_error_saying_so(dialect, recwarn):
    """None, a driver's connect function itself, a cursor, an async driver's coroutine: each was a bare
    AttributeError from deep inside (and the coroutine was never awaited, nor closed). An async driver's open
    connection (psycopg's AsyncConnection, aiosqlite's) has a cursor() too, but its statements were coroutines
    never run: the tables "made", then a bare error (or a word about mappings) from deep inside."""
    async def async_connect():
        return None

    class AsyncConnection:  # psycopg's: cursor() made an AsyncCursor, whose execute and fetchone are coroutines
        def cursor(self):
            return types.SimpleNamespace(execute=self.commit, fetchone=self.commit, close=lambda: None)

        async def commit(self, *args):
            pass

        close = rollback = commit

    for made in (lambda: None, lambda: sqlite3.connect, lambda: sqlite3.connect(":memory:").cursor(), async_connect,
                 AsyncConnection):
        with pytest.raises(UserError, match="connect returned a .*, not a DB-API connection"):
            DBAPISession("s", made, dialect=dialect, paramstyle="qmark")
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


@pytest.mark.parametrize("kwargs,message", [({"connect": "postgresql://x"}, "connect must be a callable"),
                                            ({"max_attempts": 0}, "max_attempts"),
                                            ({"max_attempts": True}, "max_attempts")])
def test_bad_arguments_are_user_errors_before_any_connection(kwargs, message):
    args = {"connect": lambda: pytest.fail("connected"), **kwargs}
    with pytest.raises(UserError, match=message):
        DBAPISession("s", **args)


def test_named_placeholders_work_end_to_end(tmp_path):
    with DBAPISession("s", lambda: sqlite3.connect(str(tmp_path / "n.db")), paramstyle="named") as s:
        s.add_items([user("1"), user("2")], once="k")
        assert s.claim_call("r", "c") == (True, None)
        s.settle_call("r", "c", "out")
        assert (s.claim_call("r", "c"), s.pop_item(), s.get_items()) == ((False, "out"), user("2"), [user("1")])


PLACEHOLDER = {"qmark": (r"\?", None), "format": ("%s", None), "pyformat": (r"%\(p\d+\)s", r"%\((p\d+)\)s"),
               "numeric": (r":\d+", r":(\d+)"), "named": (r":p\d+", r":(p\d+)")}


@given(st.sampled_from(ParamStyle.STYLES), st.lists(st.text(alphabet="ab ,()=*'", max_size=6), min_size=1,
                                                     max_size=6))
def test_placeholders_are_converted_in_order_and_nothing_else_changes(style, segments):
    count = len(segments) - 1
    converted = ParamStyle("T", style).sql("?".join(segments))
    mark, name = PLACEHOLDER[style]
    assert re.split(mark, converted) == segments
    args = ParamStyle("T", style).args(tuple(range(count)))
    if style in ("pyformat", "named"):
        assert re.findall(name, converted) == [f"p{i}" for i in range(count)]
        assert args == {f"p{i}": i for i in range(count)}
    else:
        assert args == tuple(range(count))
    if style == "numeric":
        assert re.findall(name, converted) == [str(i + 1) for i in range(count)]


def test_a_connection_in_autocommit_mode_still_writes_all_or_nothing(tmp_path):
    path = str(tmp_path / "auto.db")

    def connect():
        conn = sqlite3.connect(path, isolation_level=None)
        if sys.version_info >= (3, 12):
            conn.autocommit = False  # explicit transaction control: a transaction is always open
        return conn

    with DBAPISession("s", connect) as s:
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("CREATE TRIGGER boom BEFORE INSERT ON agent_messages WHEN NEW.message_data LIKE '%boom%' "
                    "BEGIN SELECT RAISE(ABORT, 'boom'); END")
        with pytest.raises(sqlite3.DatabaseError, match="boom"):
            s.add_items([user("ok"), user("boom")])
        assert raw.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 0
        s.add_items([user("ok")])
        assert raw.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 1
        raw.close()


def test_create_tables_false_creates_nothing_and_missing_tables_fail_when_the_session_is_made(tmp_path):
    path = str(tmp_path / "none.db")
    with pytest.raises(SessionStoreError, match="a read of session 's' failed: the database has no table of a "
                                                "name the session uses: create the tables"):
        DBAPISession("s", lambda: sqlite3.connect(path), create_tables=False)
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    with DBAPISession("s", lambda: sqlite3.connect(path)):
        pass  # creates them
    with DBAPISession("s", lambda: sqlite3.connect(path), create_tables=False) as s:
        s.add_items([user("x")])
        assert s.get_items() == [user("x")]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
# Forking is the point of the test: the child opens its own connection, writes and exits at once; the idle
# threads other tests left behind (which Python 3.12+ warns about) hold no lock it needs.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_opens_its_own_connection(tmp_path):
    path = str(tmp_path / "fork.db")
    s = DBAPISession("s", lambda: sqlite3.connect(path))
    s.add_items([user("parent")])
    parent_conn = s._conn
    pid = os.fork()
    if pid == 0:  # child: must not use the parent's connection
        code = 1
        try:
            s.add_items([user("child")])
            code = 0 if s._conn is not parent_conn else 2
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    assert s._conn is parent_conn
    assert s.get_items() == [user("parent"), user("child")]
    s.close()


# --- What an attack found: a thread-bound sqlite3 connection, a placeholder style the driver refuses -------------


def test_a_sqlite3_connection_only_its_own_thread_may_use_is_a_session_store_error_saying_what_to_pass(tmp_path):
    import threading

    session = DBAPISession("s", lambda: sqlite3.connect(str(tmp_path / "a.db")))  # check_same_thread left on
    failed = []
    worker = threading.Thread(target=lambda: failed.append(
        pytest.raises(SessionStoreError, session.add_items, [user("hi")]).value))
    worker.start()
    worker.join(10)
    assert "check_same_thread=False" in str(failed[0]) and "nothing of it was stored" in str(failed[0])
    session.close()


@pytest.mark.parametrize("style", ["format", "pyformat"])
def test_a_placeholder_style_the_driver_refuses_is_a_user_error_when_the_session_is_made(tmp_path, style):
    with pytest.raises(UserError, match=f"refused a query written in paramstyle '{style}'"):
        DBAPISession("s", lambda: sqlite3.connect(str(tmp_path / "a.db")), paramstyle=style)
