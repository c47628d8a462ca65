"""How the session's SQL reaches SQLite: what sql_session.py leaves to the database (`SQLiteDialect`), and one
transaction (`run_transaction`).

A dialect is an object with `SQLiteDialect`'s attributes and methods; the dbapi shell (miniagents/dbapi/) adds
PostgreSQL's and the driver's placeholder styles. It knows no table and no item, and never imports a database
driver: what it needs of one (an error's SQLite result code) it reads from the objects the driver returns.
`store_problem` turns an error that means the database itself cannot be used (a file that is not a database,
corrupt, read-only, full...) into words for the user.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

# SQLite's primary result codes of a database that cannot be used -> (SQLite's text for the code, what it means).
_SQLITE_PROBLEMS = {
    5: ("database is locked", "stayed locked by another connection for longer than the busy timeout (a long "
                              "transaction elsewhere): retry later"),
    6: ("database table is locked", "stayed locked by another connection for longer than the busy timeout: "
                                    "retry later"),
    8: ("attempt to write a readonly database", "is read-only for this process: give it, and its folder (where "
                                                "SQLite keeps the -wal and -shm files), write permission"),
    10: ("disk I/O error", "could not be read or written (an I/O error: the disk may be full or failing): free "
                           "disk space or check the disk, then retry"),
    11: ("database disk image is malformed", "is corrupt: restore it from a backup (the sqlite3 shell's "
                                             ".recover command may save what is left)"),
    13: ("database or disk is full", "is full (the disk, or its max_page_count): free disk space, then retry"),
    14: ("unable to open database file", "cannot be opened: it must be a file this process may read and write, "
                                         "in a folder where it may create the -wal and -shm files"),
    26: ("file is not a database", "is not a SQLite database (or is encrypted): pass the path of a session "
                                   "database, or move this file away to start a new one there"),
}
_CORRUPT_TEXTS = ("could not decode to utf-8", "unsupported file format")  # result code 1 (SQLITE_ERROR): corrupt
_SQLITE_ERROR = 1
_SQLITE_SYNC_FAILURES = (10 | 4 << 8, 10 | 5 << 8)  # SQLITE_IOERR_FSYNC, SQLITE_IOERR_DIR_FSYNC
_LAYOUT_CLASHES = ("no such column", "has no column named", "because it is a view")


class SQLiteDialect:
    """sqlite3: explicit BEGIN / COMMIT statements; `BEGIN IMMEDIATE` takes the write lock first, so writers
    queue instead of deadlocking on a lock upgrade. What a dialect says: the id column, ignoring a key conflict
    (the atomic claim needs it), how a transaction starts and ends, which errors are worth another attempt and
    which say the database itself cannot be used."""

    name = "sqlite"
    id_column = "INTEGER PRIMARY KEY AUTOINCREMENT"
    _BUSY_OR_LOCKED = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED

    def own(self, conn: Any) -> None:
        """Put a connection in the transaction mode the session's statements expect."""
        if getattr(conn, "autocommit", -1) in (True, False):  # Python 3.12+ explicit transaction control
            conn.autocommit = True
        else:
            conn.isolation_level = None  # the sqlite3 module opens no implicit transactions

    def quote(self, name: str) -> str:
        """A table's name as a statement names it: quoted, so a keyword ("order", "group") is a name too. SQLite
        matches a name, quoted or not, in any case: a table made unquoted before is still the same table."""
        return f'"{name}"'

    def insert_ignoring_conflict(self, table: str, columns: str, count: int) -> str:
        return f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({', '.join('?' * count)})"

    def begin(self, cur: Any, write: bool) -> None:
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")

    def commit(self, conn: Any, cur: Any) -> None:
        cur.execute("COMMIT")

    def rollback(self, conn: Any, cur: Any) -> None:
        if conn.in_transaction:
            cur.execute("ROLLBACK")

    def is_transient(self, exc: BaseException, conn: Any = None) -> bool:
        """Whether a new attempt may succeed: SQLite's busy and locked errors (after the busy timeout)."""
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        return code & 0xFF in self._BUSY_OR_LOCKED if code is not None else "locked" in str(exc)

    def store_problem(self, exc: BaseException) -> Optional[str]:
        """What `exc` says is wrong with the database itself, worded to follow "the database", with what to do;
        None when `exc` is about something else (a trigger's refusal, a lost connection...). By SQLite's result
        code, or (Python < 3.11, whose exceptions carry none) by SQLite's text for it."""
        code, text = getattr(exc, "sqlite_errorcode", None), str(exc)
        if code is None:
            code = next((c for c, (errstr, _) in _SQLITE_PROBLEMS.items() if errstr in text), 1)
        if code & 0xFF in _SQLITE_PROBLEMS:
            return _SQLITE_PROBLEMS[code & 0xFF][1]
        if code & 0xFF == _SQLITE_ERROR and any(corrupt in text.lower() for corrupt in _CORRUPT_TEXTS):
            return _SQLITE_PROBLEMS[11][1]  # bytes that are no text, a header no SQLite writes: as a malformed image
        if code & 0xFF == _SQLITE_ERROR and "no such table" in text:
            return ("has no table of a name the session uses: create the tables (create_tables=True), or pass "
                    "the names of the session's tables (sessions_table=, messages_table=, tool_calls_table=)")
        if code & 0xFF == _SQLITE_ERROR and any(clash in text for clash in _LAYOUT_CLASHES):
            return ("has a table of a name the session uses but not its layout (another program's table?): pass "
                    "other table names (sessions_table=, messages_table=, tool_calls_table=) or another database")
        return None

    def commit_may_have_landed(self, exc: BaseException) -> bool:
        """Whether a write whose COMMIT failed with `exc` may still have been stored: only when the commit's sync
        to disk failed (its frames may be in the journal, the -wal file)."""
        code = getattr(exc, "sqlite_errorcode", None)
        return code in _SQLITE_SYNC_FAILURES if code is not None else "disk I/O error" in str(exc)


SQLITE = SQLiteDialect()


def run_transaction(conn: Any, dialect: Any, body: Callable, write: bool,
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
