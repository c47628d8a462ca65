"""Sessions: the conversation a run loads before its first turn and appends to after each turn.

Holds `SessionSettings`, the `Session` protocol (`SessionABC` is its abstract-class form) and `SQLiteSession`.
`prepare` reads the history with `get_items`; the end of each turn writes that turn's items with one
`add_items` (one transaction). The session is the durable record the kernel relies on for exactly-once tool
execution (a call id whose output is stored never runs again). This module stores and returns item dicts;
it must never interpret, repair or execute them, and never import the rest of the kernel but `errors`.

Differences from upstream (openai-agents):
- Methods are synchronous, as the kernel is. `get_items` returns a `SessionItems` list that can also be
  awaited (`await session.get_items()` gives the same list); `add_items`, `pop_item` and `clear_session`
  are plain calls — do not await them.
- `SessionSettings.limit_turns=N` returns the items from the N-th most recent user message on, so a
  `function_call` is never cut from its `function_call_output` (upstream's `limit` counts items).
- One connection and one lock per database file per process, shared by all sessions on it; every write is
  `BEGIN IMMEDIATE` … `COMMIT`/`ROLLBACK`, so writers (threads or processes) queue instead of failing.
- `pop_item` drops rows that are not valid JSON on its way to the newest valid item.

The table layout is upstream's exactly (names configurable), so upstream's databases load unchanged:
    agent_sessions(session_id TEXT PRIMARY KEY, created_at TIMESTAMP, updated_at TIMESTAMP)
    agent_messages(id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_data TEXT NOT NULL,
                   created_at TIMESTAMP, FOREIGN KEY (session_id) REFERENCES agent_sessions ON DELETE CASCADE)
    INDEX idx_agent_messages_session_id ON agent_messages (session_id, id); one JSON item per row.
"""
from __future__ import annotations

import abc
import json
import logging
import os
import re
import sqlite3
import threading
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, List, Optional, Protocol, runtime_checkable

from .errors import UserError

logger = logging.getLogger("miniagents.session")

BUSY_TIMEOUT_MS = 30000
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HAS_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)
_BAD = object()  # what _decode returns for a row that is not JSON


@dataclass
class SessionSettings:
    """How much history a session returns. `limit`: newest N items; `limit_turns`: last N user turns."""

    limit: Optional[int] = None
    limit_turns: Optional[int] = None

    def resolve(self, override: Optional[SessionSettings]) -> SessionSettings:
        """These settings with every non-None field of `override` put over them."""
        if override is None:
            return self
        changes = {f.name: getattr(override, f.name) for f in fields(self) if getattr(override, f.name) is not None}
        return replace(self, **changes)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


class SessionItems(list):
    """The list `get_items` returns. Awaiting it yields itself, for code written against upstream's async API."""

    def __await__(self):
        return self
        yield  # pragma: no cover - makes this a generator, as `await` requires


@runtime_checkable
class Session(Protocol):
    """Anything that stores a conversation; synchronous methods (upstream's are coroutines).

    `get_items(limit)`: the newest `limit` items (default `session_settings.limit`, else all), oldest first.
    `add_items(items)`: append, all or none. `pop_item()`: remove and return the newest item, or None.
    `clear_session()`: remove every item of this session.
    """

    session_id: str
    session_settings: Optional[SessionSettings]

    def get_items(self, limit: Optional[int] = None) -> List[dict]: ...
    def add_items(self, items: List[dict]) -> None: ...
    def pop_item(self) -> Optional[dict]: ...
    def clear_session(self) -> None: ...


class SessionABC(abc.ABC):
    """The abstract-class form of `Session`, for implementations that prefer inheritance."""

    session_id: str
    session_settings: Optional[SessionSettings] = None

    @abc.abstractmethod
    def get_items(self, limit: Optional[int] = None) -> List[dict]: ...
    @abc.abstractmethod
    def add_items(self, items: List[dict]) -> None: ...
    @abc.abstractmethod
    def pop_item(self) -> Optional[dict]: ...
    @abc.abstractmethod
    def clear_session(self) -> None: ...


class _Shared:
    """One connection, its lock and how many sessions use it."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn, self.lock, self.users, self.pid = conn, threading.Lock(), 0, os.getpid()


_registry: Dict[tuple, _Shared] = {}  # (pid, absolute path) -> shared connection; pid guards against fork
_registry_lock = threading.Lock()


def _connect(path: str, is_file: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if is_file:
        conn.execute("PRAGMA journal_mode = WAL")
    return conn


def _transaction(conn: sqlite3.Connection, body: Any, mode: str = "IMMEDIATE") -> Any:
    """Run `body(conn)` in one transaction: commit, or roll back on any error (none stays open)."""
    conn.execute(f"BEGIN {mode}")  # IMMEDIATE: take the write lock first, so writers queue, never deadlock
    try:
        result = body(conn)
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message"


class SQLiteSession(SessionABC):
    """A session stored in SQLite, in upstream's table layout. `db_path=":memory:"` is private to this object."""

    def __init__(self, session_id: str, db_path: Any = ":memory:", sessions_table: str = "agent_sessions",
                 messages_table: str = "agent_messages", session_settings: Optional[SessionSettings] = None):
        for what, name in (("sessions_table", sessions_table), ("messages_table", messages_table)):
            if not isinstance(name, str) or not _IDENTIFIER.match(name):
                raise UserError(f"SQLiteSession: {what}={name!r} is not a valid table name; "
                                "use letters, digits and underscores, not starting with a digit")
        self.session_id = session_id
        self.session_settings = session_settings
        self.sessions_table, self.messages_table = sessions_table, messages_table
        path = os.fspath(db_path)
        self._is_file = path not in (":memory:", "")
        self.db_path = os.path.realpath(path) if self._is_file else path
        self._shared: Optional[_Shared] = None
        self._acquire()

    def _acquire(self) -> _Shared:
        shared = self._shared  # the common case, without the registry lock
        if shared is not None and shared.pid == os.getpid():
            return shared
        with _registry_lock:  # (a connection inherited through fork is never used: pid differs)
            if self._shared is not None and self._shared.pid == os.getpid():
                return self._shared
            key = (os.getpid(), self.db_path)
            shared = _registry.get(key) if self._is_file else None
            if shared is None:
                shared = _Shared(_connect(self.db_path, self._is_file))
            with shared.lock:
                _transaction(shared.conn, self._create_tables)
            if self._is_file:
                _registry[key] = shared
            shared.users += 1
            self._shared = shared
            return shared

    def _run(self, body: Any, mode: str = "IMMEDIATE") -> Any:
        shared = self._acquire()
        with shared.lock:  # one connection per file: a statement sequence must not interleave with another
            return _transaction(shared.conn, body, mode)

    def close(self) -> None:
        """Release this session's connection; the last session on a file closes it. Later calls reconnect."""
        with _registry_lock:
            shared, self._shared = self._shared, None
            if shared is None or shared.pid != os.getpid():
                return
            shared.users -= 1
            if shared.users > 0:
                return
            key = (os.getpid(), self.db_path)
            if _registry.get(key) is shared:
                del _registry[key]
        with shared.lock:
            shared.conn.close()

    def __enter__(self) -> SQLiteSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _create_tables(self, conn: sqlite3.Connection) -> None:
        s, m = self.sessions_table, self.messages_table
        conn.execute(f"CREATE TABLE IF NOT EXISTS {s} (session_id TEXT PRIMARY KEY, "
                     "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {m} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                     "session_id TEXT NOT NULL, message_data TEXT NOT NULL, "
                     "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                     f"FOREIGN KEY (session_id) REFERENCES {s} (session_id) ON DELETE CASCADE)")
        conn.execute(f"CREATE INDEX IF NOT EXISTS idx_{m}_session_id ON {m} (session_id, id)")

    def _decode(self, row_id: Any, data: str) -> Any:
        try:
            return json.loads(data)
        except (TypeError, ValueError):
            logger.warning("session %r: skipping row %s of %s, its message_data is not valid JSON",
                           self.session_id, row_id, self.messages_table)
            return _BAD

    def get_items(self, limit: Optional[int] = None, *, limit_turns: Optional[int] = None) -> SessionItems:
        """The newest `limit` items, oldest first. Without arguments `session_settings` decides: `limit_turns`
        (the items from the N-th most recent user message on) wins over `limit`. An explicit `limit` wins
        over both. Reads walk the (session_id, id) index backwards, so cost follows what is returned."""
        settings = self.session_settings or SessionSettings()
        if limit is None and limit_turns is None:
            limit_turns = settings.limit_turns
            limit = settings.limit if limit_turns is None else None
        if (limit is not None and limit <= 0) or (limit_turns is not None and limit_turns <= 0):
            return SessionItems()
        sql = f"SELECT id, message_data FROM {self.messages_table} WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?"

        def read(conn: sqlite3.Connection) -> list:  # newest first, a page at a time, in one snapshot
            newest_first: list = []
            before, page, turns = 2**63 - 1, 64, 0
            while limit is None or len(newest_first) < limit:
                want = page if limit is None else min(page, limit - len(newest_first))
                rows = conn.execute(sql, (self.session_id, before, want)).fetchall()
                for row_id, data in rows:
                    item = self._decode(row_id, data)
                    if item is not _BAD:
                        newest_first.append(item)
                        turns += limit_turns is not None and _is_user_message(item)
                        if limit_turns is not None and turns >= limit_turns:
                            return newest_first
                if len(rows) < want:
                    return newest_first
                before, page = rows[-1][0], min(page * 2, 4096)
            return newest_first

        return SessionItems(reversed(self._run(read, "DEFERRED")))

    def add_items(self, items: List[dict]) -> None:
        """Append `items` in one transaction (a plain call: do not await it). All rows land, or none."""
        rows = [(self.session_id, json.dumps(item, ensure_ascii=False)) for item in items]
        if not rows:
            return
        s, m = self.sessions_table, self.messages_table

        def body(conn: sqlite3.Connection) -> None:
            conn.execute(f"INSERT OR IGNORE INTO {s} (session_id) VALUES (?)", (self.session_id,))
            conn.executemany(f"INSERT INTO {m} (session_id, message_data) VALUES (?, ?)", rows)
            conn.execute(f"UPDATE {s} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?", (self.session_id,))

        self._run(body)

    def pop_item(self) -> Optional[dict]:
        """Remove and return the newest item, or None (a plain call: do not await it)."""
        m = self.messages_table
        newest = f"SELECT id FROM {m} WHERE session_id = ? ORDER BY id DESC LIMIT 1"

        def body(conn: sqlite3.Connection) -> Optional[dict]:
            while True:
                if _HAS_RETURNING:
                    row = conn.execute(f"DELETE FROM {m} WHERE id = ({newest}) RETURNING id, message_data",
                                       (self.session_id,)).fetchone()
                else:
                    row = conn.execute(f"SELECT id, message_data FROM {m} WHERE id = ({newest})",
                                       (self.session_id,)).fetchone()
                    if row is not None:
                        conn.execute(f"DELETE FROM {m} WHERE id = ?", (row[0],))
                if row is None:
                    return None
                item = self._decode(*row)
                if item is not _BAD:
                    return item

        return self._run(body)

    def clear_session(self) -> None:
        """Remove this session's items and its session row (a plain call: do not await it)."""
        def body(conn: sqlite3.Connection) -> None:
            conn.execute(f"DELETE FROM {self.messages_table} WHERE session_id = ?", (self.session_id,))
            conn.execute(f"DELETE FROM {self.sessions_table} WHERE session_id = ?", (self.session_id,))

        self._run(body)
