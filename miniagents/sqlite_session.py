"""`SQLiteSession`: a session in a SQLite file (or in memory), the embedded default.

Everything a session reads and writes is `SQLSession`'s (sql_session.py); this module adds how SQLite is reached:
- one connection and one lock per database file per process, shared by all sessions on it (a connection
  inherited through fork is never used: the child opens its own);
- WAL journal, a 30 s busy timeout and foreign keys on; every write is `BEGIN IMMEDIATE` … `COMMIT`/`ROLLBACK`,
  so writers (threads or processes) queue instead of failing;
- a new database file is created readable and writable by its owner only (0600: it holds conversations);
  SQLite gives its -wal and -shm files the same mode. An existing file's mode is left alone;
- a file that cannot be used is a `SessionStoreError` naming the file and what to do (docs/sessions.md lists the
  cases), at the first statement that meets it; a db_path that is a folder, or whose folder is missing or a file,
  is a `UserError`. A new file the system refuses to create says the system's reason, and what to do for it.
- an in-memory database lives as long as its connection: the session closed (or in a forked child), it is a
  `SessionStoreError`, never a new empty database (that would have no history and no ledger).
It never retries a write of items: the busy timeout is SQLite's own queue. Only the first use of a file is
repeated while the file is busy, within the same bound: the switch to WAL upgrades the connection's read lock
to a write lock, and SQLite calls no busy handler for an upgrade, so processes opening a new file at once
would otherwise fail. That step and the schema creation change nothing when repeated.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Optional

from .errors import UserError, file_name, needs
from .session import SessionSettings
from .sql_dialect import SQLITE, run_transaction
from .sql_session import SessionStoreError, SQLSession

sqlite3 = needs("sqlite3", "SQLiteSession")  # minimal and embedded builds of Python may lack it
BUSY_TIMEOUT_MS = 30000


class _Shared:
    """One connection, its lock and how many sessions use it."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn, self.lock, self.users, self.pid = conn, threading.Lock(), 0, os.getpid()


_registry: Dict[tuple, _Shared] = {}  # (pid, absolute path) -> shared connection; pid guards against fork
_registry_lock = threading.Lock()


def _create_private_file(path: str) -> None:
    """Create `path` empty with mode 0600 unless it exists (an empty file is a valid empty database)."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:  # the system's reason: a folder it may not write is one of many (a full disk, a long name)
        fix = ("pass another path" if os.access(os.path.dirname(path), os.W_OK) else
               "make its folder writable for this process, or pass a path in another")
        raise SessionStoreError(f"SQLiteSession: cannot create the database {path!r} ({exc.strerror}): {fix}") from None


def _check_path(path: str) -> None:
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        why = f"{folder!r} is not a folder" if os.path.exists(folder) else f"the folder {folder!r} does not exist"
        raise UserError(f"SQLiteSession: cannot create the database {path!r}: {why}")
    if os.path.isdir(path):
        raise UserError(f"SQLiteSession: db_path {path!r} is a folder; pass the path of a database file "
                        f"(e.g. {os.path.join(path, 'sessions.db')!r})")
    if os.path.exists(path) and not os.path.isfile(path):
        raise UserError(f"SQLiteSession: db_path {path!r} is not a regular file; pass the path of a database file")


def _connect(path: str, is_file: bool) -> sqlite3.Connection:
    if is_file:
        _check_path(path)
        _create_private_file(path)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    try:
        SQLITE.own(conn)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if is_file:
            conn.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        conn.close()
        raise
    return conn


class SQLiteSession(SQLSession):
    """A session stored in SQLite, in upstream's table layout. `db_path=":memory:"` is private to this object."""

    def __init__(self, session_id: str, db_path: Any = ":memory:", sessions_table: str = "agent_sessions",
                 messages_table: str = "agent_messages", session_settings: Optional[SessionSettings] = None,
                 *, tool_calls_table: str = "agent_tool_calls"):
        super().__init__(session_id, sessions_table=sessions_table, messages_table=messages_table,
                         tool_calls_table=tool_calls_table, session_settings=session_settings)
        self._bind(SQLITE)
        path = os.fsdecode(file_name(db_path, "SQLiteSession: db_path (a file path or ':memory:')"))
        self._is_file = path not in (":memory:", "")
        self.db_path = os.path.realpath(path) if self._is_file else path
        self._shared: Optional[_Shared] = None
        self._opened = False  # an in-memory database, once its connection is gone, is gone with its history
        self._acquire()

    def _acquire(self) -> _Shared:
        shared = self._shared  # the common case, without the registry lock
        if shared is not None and shared.pid == os.getpid():
            return shared
        with _registry_lock:  # (a connection inherited through fork is never used: pid differs)
            if self._shared is not None and self._shared.pid == os.getpid():
                return self._shared
            if self._opened and not self._is_file:  # a new connection would be a new, empty database
                raise SessionStoreError(f"SQLiteSession: session {self.session_id!r} was in memory, and its history is "
                                        "gone (closed, or in a forked process); give a db_path to keep it past close()")
            key = (os.getpid(), self.db_path)
            shared = _registry.get(key) if self._is_file else None
            opened = shared is None
            if opened:
                shared = _Shared(self._first_use(lambda: _connect(self.db_path, self._is_file)))
            try:
                with shared.lock:
                    self._first_use(lambda: run_transaction(shared.conn, SQLITE, self._create_tables, write=True))
            except BaseException:
                if opened:
                    shared.conn.close()
                raise
            if self._is_file:
                _registry[key] = shared
            shared.users += 1
            self._shared, self._opened = shared, True
            return shared

    def _first_use(self, step: Callable[[], Any]) -> Any:
        """`step()` (opening the file, or creating the tables: both change nothing when repeated), repeated
        while the file is busy until the busy timeout has passed; then, or for any other problem of the file,
        a `SessionStoreError`."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        delay = 0.002
        while True:
            try:
                return step()
            except sqlite3.Error as exc:
                if not SQLITE.is_transient(exc) or time.monotonic() + delay >= deadline:
                    self._raise_store_error(exc, "opening")
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def _where(self) -> str:
        return f"the database {self.db_path!r}" if self._is_file else "the in-memory database"

    def _transaction(self, body: Callable, *, write: bool, repeatable: bool = True) -> Any:
        shared = self._acquire()
        committing: list = []
        with shared.lock:  # one connection per file: a statement sequence must not interleave with another
            try:
                return run_transaction(shared.conn, SQLITE, body, write, committing)
            except sqlite3.Error as exc:
                self._raise_store_error(exc, "a write" if write else "a read", write, committing)

    def close(self) -> None:
        """Release this session's connection; the last session on a file closes it. Later calls reconnect to a
        file; an in-memory database is gone, and later calls are a `SessionStoreError`."""
        with _registry_lock:
            shared, self._shared = self._shared, None
            if shared is None or shared.pid != os.getpid():
                return
            shared.users -= 1
            if shared.users > 0:
                return
            _registry.pop((os.getpid(), self.db_path), None)  # (a :memory: connection was never registered)
        with shared.lock:
            shared.conn.close()
