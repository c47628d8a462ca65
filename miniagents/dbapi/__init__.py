"""`DBAPISession`: a session on any PEP 249 (DB-API 2.0) connection, e.g. PostgreSQL shared by many workers.

Everything a session reads and writes is `SQLSession`'s (sql_session.py: upstream's tables, the exactly-once
ledger, the limit walk, the JSON rules), so a database written by `SQLiteSession` or by upstream reads the same
here. This module adds only how a user's driver is reached:
- `connect` is a factory the session calls for a connection: once at construction (which tells the driver,
  hence the dialect and the placeholder style) and again after a connection is lost. The session owns what the
  factory returns: it keeps one connection per session object (guarded by a lock), sets its transaction mode,
  and closes it in `close()`. After fork the child opens its own and never touches the parent's.
- A write that fails with a lost connection, a serialization failure or a deadlock was rolled back by the
  database; it is retried on a fresh connection up to `max_attempts` times, then raised as `SessionStoreError`.
  A lost connection during the commit of a write that is not repeatable (`add_items` without `once`,
  `pop_item`) leaves its outcome unknown: that raises `SessionStoreError` at once instead of risking a turn
  stored twice. Either way a turn is whole or absent, never half-written.
- An error that says the database itself cannot be used (with sqlite3: not a database, corrupt, read-only,
  full; tables of another layout) is a `SessionStoreError` saying what to do; the tables are checked when the
  session is made. Other errors are the driver's own, raised as they are.
- What the kernel's sessions never need lives here: the PostgreSQL dialect (`POSTGRESQL`), a lost connection
  or a SQLSTATE worth retrying, and PEP 249's placeholder styles (`ParamStyle`).
It must never import a driver: the user brings theirs.
"""
from __future__ import annotations

import binascii
import inspect
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

from ..errors import UserError
from ..session import SessionSettings
from ..sql_dialect import SQLiteDialect, run_transaction
from ..sql_session import SessionStoreError, SQLSession

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named

RETRY_DELAY = 0.05  # seconds before the second attempt; doubled for each later one, up to 32 times it
_TRANSIENT_SQLSTATES = ("40001", "40P01", "57P01", "57P02", "57P03")


def connection_lost(exc: BaseException, conn: Any) -> bool:
    """Whether a fresh connection and a new attempt may succeed: by the error's SQLSTATE when the driver gives one
    (`exc.sqlstate` in psycopg 3, `exc.pgcode` in psycopg2): a serialization failure, a deadlock, a connection
    exception (class 08) or a server shutdown; without one, when the driver reports the connection closed or
    broken."""
    code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    if isinstance(code, str):
        return code in _TRANSIENT_SQLSTATES or code.startswith("08")
    return bool(getattr(conn, "closed", False)) or bool(getattr(conn, "broken", False))


class PostgreSQLDialect:
    """PostgreSQL through psycopg 3, psycopg2 or any DB-API driver: the driver opens the transaction,
    `conn.commit()` ends it. What each method is for: the kernel's `SQLiteDialect` (sql_dialect.py)."""

    name = "postgresql"
    id_column = "BIGSERIAL PRIMARY KEY"
    is_transient = staticmethod(connection_lost)

    def own(self, conn: Any) -> None:
        if getattr(conn, "autocommit", False) is True:
            conn.autocommit = False

    def quote(self, name: str) -> str:
        return f'"{name.lower()}"'  # PostgreSQL folds a name it is not quoted to lower case: the same table as before

    def insert_ignoring_conflict(self, table: str, columns: str, count: int) -> str:
        return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * count)}) ON CONFLICT DO NOTHING"

    def begin(self, cur: Any, write: bool) -> None:
        pass

    def commit(self, conn: Any, cur: Any) -> None:
        conn.commit()

    def rollback(self, conn: Any, cur: Any) -> None:
        conn.rollback()

    def schema_lock(self, tables: Tuple[str, ...]) -> str:
        """Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog: creators of one layout queue on a
        lock named by the CRC-32 of the table names as PostgreSQL names them, in lower case (`quote`: "S1" and
        "s1" are one table), binascii's, the same number as zlib's, in every Python."""
        return f"SELECT pg_advisory_xact_lock({binascii.crc32(' '.join(tables).lower().encode())})"

    def store_problem(self, exc: BaseException) -> Optional[str]:
        return None  # PostgreSQL's errors (a refused password, a missing table) are raised as the driver's

    def commit_may_have_landed(self, exc: BaseException) -> bool:
        return True


class DBAPISQLiteDialect(SQLiteDialect):
    """sqlite3 (or a driver around it) as a DB-API connection: also retried when the driver reports a lost
    connection or a SQLSTATE, as with PostgreSQL, if the error carries no SQLite result code, or when the
    connection was closed under the session (sqlite3's has no `closed` to read: its error says so)."""

    def is_transient(self, exc: BaseException, conn: Any = None) -> bool:
        return super().is_transient(exc, conn) or (getattr(exc, "sqlite_errorcode", None) is None and (
            connection_lost(exc, conn) or "closed database" in str(exc)))

    def store_problem(self, exc: BaseException) -> Optional[str]:
        if "can only be used in that same thread" in str(exc):  # sqlite3's ProgrammingError, by its text
            return ("is reached through a sqlite3 connection only the thread that made it may use, and a run uses "
                    "its session from others (parallel tool calls, Runner.run's worker): connect with "
                    "sqlite3.connect(..., check_same_thread=False); the session's lock guards the connection")
        return super().store_problem(exc)


SQLITE, POSTGRESQL = DBAPISQLiteDialect(), PostgreSQLDialect()
DIALECTS = {d.name: d for d in (SQLITE, POSTGRESQL)}
_DRIVER_DIALECTS = {"sqlite3": SQLITE, "psycopg": POSTGRESQL, "psycopg2": POSTGRESQL, "pg8000": POSTGRESQL}
_inherited: List[Any] = []  # parents' connections seen after fork: kept referenced so no finalizer closes them


class DBAPISession(SQLSession):
    """A session on connections from `connect()` (any DB-API 2.0 driver: psycopg 3, psycopg2, sqlite3...).

    `dialect` ("postgresql" or "sqlite") and `paramstyle` are found from the driver's module when not given.
    `create_tables=False` for a database user that may not create tables (they must exist, e.g. created once
    by a session with the right)."""

    def __init__(self, session_id: str, connect: Callable[[], Any], *, dialect: Optional[str] = None,
                 paramstyle: Optional[str] = None, sessions_table: str = "agent_sessions",
                 messages_table: str = "agent_messages", tool_calls_table: str = "agent_tool_calls",
                 session_settings: Optional[SessionSettings] = None, create_tables: bool = True,
                 max_attempts: int = 3):
        super().__init__(session_id, sessions_table=sessions_table, messages_table=messages_table,
                         tool_calls_table=tool_calls_table, session_settings=session_settings)
        if not callable(connect):
            raise UserError("DBAPISession: connect must be a callable that returns a DB-API connection, "
                            f"e.g. lambda: psycopg.connect(dsn); got {type(connect).__name__}")
        if dialect is not None and dialect not in DIALECTS:
            raise UserError(f"DBAPISession: dialect {dialect!r} is not one of {', '.join(DIALECTS)}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise UserError(f"DBAPISession: max_attempts must be an int >= 1, got {max_attempts!r}")
        self.max_attempts = max_attempts
        self._connect, self._lock = connect, threading.Lock()
        self._conn: Any = None
        self._pid = os.getpid()
        try:
            conn = connect()
        except Exception as exc:  # with a driver it knows (sqlite3: a file it cannot open), it says what to do
            self._dialect = DIALECTS.get(dialect) or _DRIVER_DIALECTS.get(type(exc).__module__.partition(".")[0])
            if self._dialect is None:
                raise
            self._raise_store_error(exc, "opening")
        driver_name = type(_checked(conn)).__module__.partition(".")[0]
        try:
            chosen = DIALECTS[dialect] if dialect is not None else _DRIVER_DIALECTS.get(driver_name)
            if chosen is None:
                raise UserError(f"DBAPISession: cannot tell the database of a {type(conn).__module__} connection; "
                                f"pass dialect= (one of {', '.join(DIALECTS)})")
            driver = sys.modules.get(driver_name)
            style = paramstyle if paramstyle is not None else getattr(driver, "paramstyle", None)
            self._style = ParamStyle(type(self).__name__, style)
            self._bind(chosen, self._style)
            if chosen is POSTGRESQL:
                self._schema.insert(0, POSTGRESQL.schema_lock((self.sessions_table, self.messages_table,
                                                               self.tool_calls_table)))
            self._sql.page = self._style.sql(f"SELECT id, message_data FROM {chosen.quote(self.messages_table)} WHERE "
                                             "session_id = ? AND id < ? ORDER BY id DESC LIMIT ?")
        except BaseException:
            _close_quietly(conn)
            raise
        chosen.own(conn)
        self._conn = conn
        try:  # tables of another layout (or none, without create_tables) fail here, not at the first write
            self._transaction(self._create_tables if create_tables else self._check_tables, write=create_tables)
            if self._transaction(_first_row, write=False) != (1, "a"):  # read by position, text as str: PEP 249's
                raise UserError("DBAPISession: the connection returns rows as mappings or objects (psycopg's "
                                "dict_row or class_row, psycopg2's RealDictCursor, a sqlite3 row_factory) or text "
                                "as no str (a sqlite3 text_factory): connect without them")
            if paramstyle is not None:  # the style given is the driver's: a query written in it is read
                self._probe_style(paramstyle)
        except BaseException:
            self.close()  # the caller never gets this object: its connection must not outlive it
            raise

    def _probe_style(self, paramstyle: str) -> None:
        try:
            self._transaction(lambda cur: self._execute(cur, "claimed_output", "", "", "").fetchall(), write=False)
        except SessionStoreError:
            raise
        except Exception as exc:
            raise UserError(f"DBAPISession: the driver refused a query written in paramstyle {paramstyle!r} "
                            f"({type(exc).__name__}): pass the driver's own, or leave paramstyle out") from None

    def _rows_newest_first(self, cur: Any, limit: Optional[int]) -> Iterator[tuple]:
        """A page at a time, as a driver that reads a whole result into memory (psycopg) needs: pages grow from
        64 rows (at most `limit`) to 4096, so what is read follows what is returned."""
        before, page = 2**63 - 1, 64  # above every id: the first page
        while True:
            want = page if limit is None else min(page, limit)
            rows = self._execute(cur, "page", self.session_id, before, want).fetchall()
            yield from rows
            if len(rows) < want:
                return
            before, page = rows[-1][0], min(page * 2, 4096)

    def _connection(self) -> Any:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited through fork: its socket is the parent's
            _inherited.append(self._conn)
            self._conn = None
        conn = _checked(self._connect())
        self._dialect.own(conn)
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _transaction(self, body: Callable, *, write: bool, repeatable: bool = True) -> Any:
        with self._lock:
            for attempt in range(1, self.max_attempts + 1):
                conn, committing = None, []
                try:
                    conn = self._connection()
                    return run_transaction(conn, self._dialect, body, write, committing)
                except SessionStoreError:  # the session's own finding (a table whose ids are no key), said already
                    raise
                except Exception as exc:
                    if conn is not None and not self._dialect.is_transient(exc, conn):
                        self._raise_store_error(exc, "a write" if write else "a read", write, committing)
                    self._drop(conn)  # lost, or unsure: the next attempt starts on a fresh connection
                    what = "write" if write else "read"
                    unknown = bool(committing) and write
                    if attempt == self.max_attempts or (unknown and not repeatable):
                        outcome = ("; whether it was stored is unknown" if unknown else
                                   "; nothing of it was stored" if write else "")
                        problem = self._dialect.store_problem(exc)  # with sqlite3: a lock held past the timeout
                        said = f": {self._where()} {problem}" if problem else ""
                        raise SessionStoreError(
                            f"DBAPISession: a {what} of session {self.session_id!r} failed after {attempt} "
                            f"attempt(s) ({type(exc).__name__}){said}{outcome}") from exc
                    logger.warning("session %r: retrying a %s after %s (attempt %d of %d)", self.session_id,
                                   what, type(exc).__name__, attempt + 1, self.max_attempts)
                    time.sleep(RETRY_DELAY * 2 ** min(attempt - 1, 5))  # bounded: max_attempts may be large

    def _drop(self, conn: Any) -> None:
        if conn is not None and conn is self._conn:
            self._conn = None
            _close_quietly(conn)

    def close(self) -> None:
        """Close this session's connection. Later calls open a new one from `connect`."""
        with self._lock:
            if self._pid == os.getpid():
                self._drop(self._conn)


def _first_row(cur: Any) -> tuple:
    cur.execute("SELECT 1, 'a'")
    row = cur.fetchone()
    return tuple(row) if isinstance(row, Iterable) else ()  # an object (psycopg's class_row): no row to unpack


def _checked(conn: Any) -> Any:
    """`conn` when it is a DB-API connection (it has `cursor()`, and a `commit()` no coroutine: an async driver's
    connection, psycopg's AsyncConnection, aiosqlite's, only made coroutines); else a `UserError`, and `conn` closed
    if it can be (an async driver's coroutine: else never awaited)."""
    if callable(getattr(conn, "cursor", None)) and not inspect.iscoroutinefunction(getattr(conn, "commit", None)):
        return conn
    _close_quietly(conn)
    raise UserError(f"DBAPISession: connect returned a {type(conn).__name__}, not a DB-API connection (one with "
                    "cursor()): pass a function that opens one, e.g. lambda: psycopg.connect(dsn); an async "
                    "driver's connection cannot be used")


def _close_quietly(conn: Any) -> None:
    try:
        closing = conn.close()
        if inspect.iscoroutine(closing):  # an async driver's connection: nothing here can await it
            closing.close()
    except Exception:  # a broken connection may refuse to close; it is gone either way
        pass


class ParamStyle:
    """PEP 249 placeholders: the session's statements are written with `?` and turned into the driver's style
    once, when the session is made."""

    STYLES = ("qmark", "format", "pyformat", "numeric", "named")

    def __init__(self, owner: str, name: Any):
        if name not in self.STYLES:
            raise UserError(f"{owner}: paramstyle {name!r} is not one of {', '.join(self.STYLES)}")
        self.name = name

    def sql(self, text: str) -> str:
        parts = text.split("?")
        mark = {"qmark": "?", "format": "%s", "pyformat": "%({})s", "numeric": ":{}", "named": ":{}"}[self.name]
        names = [f"p{i}" if self.name != "numeric" else str(i + 1) for i in range(len(parts) - 1)]
        return parts[0] + "".join(mark.format(n) + part for n, part in zip(names, parts[1:]))

    def args(self, values: tuple) -> Any:
        if self.name in ("pyformat", "named"):
            return {f"p{i}": v for i, v in enumerate(values)}
        return values
