"""How the session's SQL reaches a database: the few places where databases differ (`Dialect`: `SQLITE`,
`POSTGRESQL`), PEP 249 placeholder styles (`ParamStyle`), and one transaction (`run_transaction`).

Used by sql_session.py (which writes every statement once, with `?` placeholders) and by the two session
classes. It knows no table and no item, and never imports a database driver: what it needs of one (an error's
SQLSTATE, whether a connection reports itself closed) it reads from the objects the driver returns.
"""
from __future__ import annotations

import abc
import zlib
from typing import Any, Callable, Optional, Tuple

from .errors import UserError


class Dialect(abc.ABC):
    """What differs between databases: the id column, ignoring a key conflict, how a transaction starts and
    ends, what the schema creation locks, and which errors are worth retrying."""

    name = ""
    id_column = ""

    def own(self, conn: Any) -> None:
        """Put a connection in the transaction mode the session's statements expect."""

    @abc.abstractmethod
    def insert_ignoring_conflict(self, table: str, columns: str, count: int) -> str:
        """An INSERT of `count` rows that skips a row whose key exists: the atomic claim needs it."""

    def begin(self, cur: Any, write: bool) -> None:
        """Start a transaction (drivers that open one implicitly at the first statement need nothing)."""

    def commit(self, conn: Any, cur: Any) -> None:
        conn.commit()

    def rollback(self, conn: Any, cur: Any) -> None:
        conn.rollback()

    def schema_lock(self, tables: Tuple[str, ...]) -> Optional[str]:
        return None

    _TRANSIENT_SQLSTATES = ("40001", "40P01", "57P01", "57P02", "57P03")

    def is_transient(self, exc: BaseException, conn: Any) -> bool:
        """Whether a fresh connection and a new attempt may succeed: by the error's SQLSTATE when the driver
        gives one (`exc.sqlstate` in psycopg 3, `exc.pgcode` in psycopg2): a serialization failure, a deadlock,
        a connection exception (class 08) or a server shutdown; without one, when the driver reports the
        connection closed or broken."""
        code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        if isinstance(code, str):
            return code in self._TRANSIENT_SQLSTATES or code.startswith("08")
        return bool(getattr(conn, "closed", False)) or bool(getattr(conn, "broken", False))


class SQLiteDialect(Dialect):
    """sqlite3: explicit BEGIN / COMMIT statements; `BEGIN IMMEDIATE` takes the write lock first, so writers
    queue instead of deadlocking on a lock upgrade."""

    name = "sqlite"
    id_column = "INTEGER PRIMARY KEY AUTOINCREMENT"
    _BUSY_OR_LOCKED = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED

    def own(self, conn: Any) -> None:
        if getattr(conn, "autocommit", -1) in (True, False):  # Python 3.12+ explicit transaction control
            conn.autocommit = True
        else:
            conn.isolation_level = None  # the sqlite3 module opens no implicit transactions

    def insert_ignoring_conflict(self, table: str, columns: str, count: int) -> str:
        return f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({', '.join('?' * count)})"

    def begin(self, cur: Any, write: bool) -> None:
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")

    def commit(self, conn: Any, cur: Any) -> None:
        cur.execute("COMMIT")

    def rollback(self, conn: Any, cur: Any) -> None:
        if conn.in_transaction:
            cur.execute("ROLLBACK")

    def is_transient(self, exc: BaseException, conn: Any) -> bool:
        """Also SQLite's busy and locked errors (after the busy timeout)."""
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        if code is not None:
            return code & 0xFF in self._BUSY_OR_LOCKED
        return "locked" in str(exc) or super().is_transient(exc, conn)


class PostgreSQLDialect(Dialect):
    """PostgreSQL through psycopg 3, psycopg2 or any DB-API driver: the driver opens the transaction,
    `conn.commit()` ends it."""

    name = "postgresql"
    id_column = "BIGSERIAL PRIMARY KEY"

    def own(self, conn: Any) -> None:
        if getattr(conn, "autocommit", False) is True:
            conn.autocommit = False

    def insert_ignoring_conflict(self, table: str, columns: str, count: int) -> str:
        return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * count)}) ON CONFLICT DO NOTHING"

    def schema_lock(self, tables: Tuple[str, ...]) -> Optional[str]:
        # Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog: creators of one layout queue.
        return f"SELECT pg_advisory_xact_lock({zlib.crc32(' '.join(tables).encode())})"



SQLITE = SQLiteDialect()
POSTGRESQL = PostgreSQLDialect()
DIALECTS = {d.name: d for d in (SQLITE, POSTGRESQL)}


class ParamStyle:
    """PEP 249 placeholders: statements are written with `?` and turned into the driver's style once."""

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


def run_transaction(conn: Any, dialect: Dialect, body: Callable, write: bool,
                    committing: Optional[list] = None) -> Any:
    """`body(cursor)` in one transaction: committed, or rolled back on any error (the rollback's own failure
    never hides the first one). `committing`, when given, gets True appended just before the commit is sent,
    so a caller can tell a failed commit (outcome unknown) from an earlier failure (nothing written)."""
    cur = conn.cursor()
    try:
        dialect.begin(cur, write)
        result = body(cur)
        if committing is not None:
            committing.append(True)
        dialect.commit(conn, cur)
        return result
    except BaseException:
        try:
            dialect.rollback(conn, cur)
        except Exception:  # a lost connection cannot roll back; the server does it
            pass
        raise
    finally:
        try:
            cur.close()
        except Exception:
            pass
