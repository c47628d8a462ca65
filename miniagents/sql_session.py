"""Sessions kept in SQL tables: the layout, the statements and every rule SQLiteSession and DBAPISession share.

`SQLSession` holds the logic (what is read and written, in which transaction, with which checks); a subclass
only says how a transaction reaches its connection (`_transaction`); the few places where databases differ are
its dialect's (sql_dialect.py: SQLite; the dbapi shell adds PostgreSQL). This module never imports a database
driver, and never interprets, repairs or executes items: it encodes them as JSON (lone surrogates replaced by
U+FFFD, as `items.clean_text` does where model text enters) and skips stored rows that are not JSON objects,
with a warning.

The tables are created by `_bind`'s statements (names configurable, checked as identifiers and quoted, so a
keyword such as "order" is a name too; nothing else is ever interpolated into SQL). `agent_sessions` and
`agent_messages` (one JSON item per row, indexed by session and id) are upstream's layout, so upstream's
databases load unchanged. The third, `agent_tool_calls`, is the exactly-once
ledger (ours; upstream has none). `claim_call` inserts the row (session_id, run_id, call_id) ignoring a conflict,
and the row count says who won: the primary key decides, never a read-then-write. `settle_call` stores the call's
output as a JSON string (ASCII, so any text round-trips, NUL and lone surrogates included). `add_items(...,
once=key)` records its key in the same table and transaction as the rows, as (session_id, run_id='',
call_id=key): run ids are never empty (`claim_call` refuses one), so a key can never collide with a call. The
ledger has no foreign key, so a claim needs no session row; `clear_session` deletes the session's ledger rows
itself. It is read by primary key only, never through the `limit` / `limit_turns` window of `get_items`.

Writers of one session queue on its session row (each write updates `updated_at` before touching messages:
a row lock on PostgreSQL; on SQLite `BEGIN IMMEDIATE` already queues every writer), so the rows of one
`add_items` get consecutive ids in commit order and two turns never interleave.
"""
from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace
from typing import Any, Iterable, List, Optional, Tuple, Union

from .caller import Ready
from .errors import SessionStoreError, UserError
from .items import clean_text, described, keyable
from .session import SessionABC, SessionItems, SessionSettings

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named

# At most 48 characters, each one byte: the index idx_<name>_session_id fits PostgreSQL's 63 bytes (it cuts longer
# names, so two could meet). re.ASCII: else IGNORECASE lets [A-Za-z] match 'ſ', 'ı', 'İ' and the Kelvin sign, two
# bytes or three. sqlite_*: SQLite's own names.
_IDENTIFIER = re.compile(r"(?!sqlite_)[A-Za-z_][A-Za-z0-9_]{0,47}\Z", re.IGNORECASE | re.ASCII)
_SKIPPED = object()  # what _decode returns for a row that is not a JSON object


def check_key(owner: str, what: str, value: Any, allow_empty: bool = False) -> str:
    """`value` if it can be stored as a key on every database; a `UserError` naming `what` otherwise."""
    if not isinstance(value, str):
        raise UserError(f"{owner}: {what} must be a string, not {type(value).__name__}")
    if not value and not allow_empty:
        raise UserError(f"{owner}: {what} must not be empty")
    if value and not keyable(value):
        raise UserError(f"{owner}: {what} must not contain NUL characters or lone surrogates")
    return value


def check_table_name(owner: str, what: str, name: Any) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise UserError(f"{owner}: {what}={described(name)} is not a valid table name; "
                        "use up to 48 ASCII letters, digits and underscores, not starting with a digit or sqlite_")
    return name


def _check_count(owner: str, what: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise UserError(f"{owner}: {what} must be an int or None, not {type(value).__name__}")


def _is_user_message(item: dict) -> bool:
    return item.get("role") == "user" and item.get("type", "message") == "message"


class SQLSession(SessionABC):
    """A session in upstream's SQL tables plus the exactly-once ledger. Subclasses provide `close` and
    `_transaction(body, *, write, repeatable=True)`: `body(cursor)` in one transaction, its result returned
    (`repeatable`: running the write again after a commit whose outcome is unknown changes nothing: a `once`
    append, a claim, a settle, a clear). They call `_bind` before the first statement."""

    def __init__(self, session_id: Any, *, sessions_table: str, messages_table: str, tool_calls_table: str,
                 session_settings: Optional[SessionSettings]):
        owner = type(self).__name__
        self.session_id = check_key(owner, "session_id", session_id)
        self.sessions_table = check_table_name(owner, "sessions_table", sessions_table)
        self.messages_table = check_table_name(owner, "messages_table", messages_table)
        self.tool_calls_table = check_table_name(owner, "tool_calls_table", tool_calls_table)
        if len({name.lower() for name in (sessions_table, messages_table, tool_calls_table)}) < 3:
            raise UserError(f"{owner}: sessions_table, messages_table and tool_calls_table must be three tables (case "
                            f"is ignored): got {sessions_table!r}, {messages_table!r}, {tool_calls_table!r}")
        self.session_settings = SessionSettings.coerce(session_settings)  # upstream's default: no limit

    def _bind(self, dialect: Any, style: Any = None) -> None:
        """Build every statement once, in the dialect. They are written with `?` placeholders, sqlite3's own;
        `style` (the dbapi shell's `ParamStyle`: `.sql(text)`, `.args(values)`) turns them into a driver's."""
        self._dialect, self._args = dialect, style.args if style else tuple  # sqlite3 takes the values as they are
        s, m, t = (dialect.quote(name) for name in (self.sessions_table, self.messages_table, self.tool_calls_table))
        ignore = dialect.insert_ignoring_conflict
        sql = {
            "ensure_session": ignore(s, "session_id", 1),
            "touch_session": f"UPDATE {s} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?",
            "insert_message": f"INSERT INTO {m} (session_id, message_data) VALUES (?, ?)",
            "newest_first": f"SELECT id, message_data FROM {m} WHERE session_id = ? ORDER BY id DESC",
            "newest": f"SELECT id, message_data FROM {m} WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            "delete_message": f"DELETE FROM {m} WHERE id = ?",
            "clear_messages": f"DELETE FROM {m} WHERE session_id = ?",
            "clear_ledger": f"DELETE FROM {t} WHERE session_id = ?",
            "clear_session": f"DELETE FROM {s} WHERE session_id = ?",
            "claim": ignore(t, "session_id, run_id, call_id", 3),
            "claimed_output": f"SELECT output FROM {t} WHERE session_id = ? AND run_id = ? AND call_id = ?",
            "settle": f"UPDATE {t} SET output = ? WHERE session_id = ? AND run_id = ? AND call_id = ?",
            "record": ignore(t, "session_id, run_id, call_id, output", 4),
            "swap": f"UPDATE {t} SET output = ? WHERE session_id = ? AND run_id = ? AND call_id = ? "
                    "AND COALESCE(output, '') = ?",  # a NULL journal (edited by hand) is none, as read_journal says
        }
        self._sql = SimpleNamespace(**{name: style.sql(text) if style else text for name, text in sql.items()})
        self._schema = [
            f"CREATE TABLE IF NOT EXISTS {s} (session_id TEXT PRIMARY KEY, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
            f"CREATE TABLE IF NOT EXISTS {m} (id {dialect.id_column}, session_id TEXT NOT NULL, "
            "message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            f"FOREIGN KEY (session_id) REFERENCES {s} (session_id) ON DELETE CASCADE)",
            f"CREATE INDEX IF NOT EXISTS {dialect.quote(f'idx_{self.messages_table}_session_id')} ON {m} "
            "(session_id, id)",
            f"CREATE TABLE IF NOT EXISTS {t} (session_id TEXT NOT NULL, run_id TEXT NOT NULL, "
            "call_id TEXT NOT NULL, output TEXT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            "PRIMARY KEY (session_id, run_id, call_id))",
        ]
        # Every column a statement above names: a table of the same name in another layout fails here, at once.
        self._probes = [f"SELECT session_id, updated_at FROM {s} WHERE 1 = 0",
                        f"SELECT session_id, id, message_data FROM {m} WHERE 1 = 0",
                        f"SELECT session_id, run_id, call_id, output FROM {t} WHERE 1 = 0"]

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _create_tables(self, cur: Any) -> None:
        for statement in self._schema:
            cur.execute(statement)
        self._check_tables(cur)

    def _check_tables(self, cur: Any) -> None:
        """Fail now, not at the first write, when the tables lack a column the session uses."""
        for probe in self._probes:
            cur.execute(probe)

    def _where(self) -> str:
        return "the database"

    def _raise_store_error(self, exc: BaseException, doing: str, write: bool = False,
                           committing: Optional[list] = None) -> None:
        """Raise the `SessionStoreError` for `exc` when it says the database itself cannot be used, else `exc`.
        `doing`: "opening", "a read" or "a write"; `committing` as `run_transaction` filled it."""
        problem = self._dialect.store_problem(exc)
        if problem is None:
            raise exc
        outcome = ""
        if write:
            landed = bool(committing) and self._dialect.commit_may_have_landed(exc)
            outcome = "; whether it was stored is unknown" if landed else "; nothing of it was stored"
        raise SessionStoreError(f"{type(self).__name__}: {doing} of session {self.session_id!r} failed: "
                                f"{self._where()} {problem}{outcome}") from exc

    def _execute(self, cur: Any, name: str, *args: Any) -> Any:
        cur.execute(getattr(self._sql, name), self._args(args))
        return cur

    def _changed(self, cur: Any, name: str, *args: Any) -> int:
        """How many rows statement `name` changed: a claim, a settle, a pop and the journal's swap are decided by
        it, so a driver that cannot tell (PEP 249 lets rowcount be -1) fails the write instead of losing it."""
        count = getattr(self._execute(cur, name, *args), "rowcount", None)
        if isinstance(count, int) and count >= 0:
            return count
        raise SessionStoreError(f"{type(self).__name__}: a write of session {self.session_id!r} failed: the driver's "
                                f"cursor gave no row count (rowcount {count!r}), which the exactly-once ledger is "
                                "decided by: use a driver that reports it; nothing of it was stored")

    # --- items ---------------------------------------------------------------------------------------------

    def _encode(self, index: int, item: Any) -> tuple:
        """The row for one item: (session_id, JSON text). Anything that is not a JSON object is refused here."""
        owner = type(self).__name__
        if not isinstance(item, dict):
            raise UserError(f"{owner}.add_items: item {index} is a {type(item).__name__}, not a dict; nothing "
                            "was stored")
        try:
            text = json.dumps(item, ensure_ascii=False)  # readable rows, as upstream's readers expect
        except (TypeError, ValueError, RecursionError) as exc:
            raise UserError(f"{owner}.add_items: item {index} cannot be stored as JSON ({exc}); nothing was "
                            "stored") from None
        return self.session_id, clean_text(text)  # a lone surrogate would fail the driver's UTF-8 encoding

    def _decode(self, row_id: Any, data: Any) -> Any:
        try:
            item = json.loads(data)
        except (TypeError, ValueError, RecursionError):
            item, why = _SKIPPED, "is not valid JSON (or is nested deeper than Python reads)"
        else:
            why = "is not a JSON object"
        if isinstance(item, dict):
            return item
        logger.warning("session %r: skipping row %s of %s, its message_data %s",
                       self.session_id, row_id, self.messages_table, why)
        return _SKIPPED

    def get_items(self, limit: Optional[int] = None, *, limit_turns: Optional[int] = None) -> SessionItems:
        """The newest `limit` items, oldest first. Without arguments `session_settings` decides: `limit_turns`
        (the items from the N-th most recent user message on) wins over `limit`. An explicit `limit` wins
        over both. Reads walk the (session_id, id) index backwards, and stop there: cost follows what is
        returned."""
        owner = type(self).__name__
        _check_count(owner, "limit", limit)
        _check_count(owner, "limit_turns", limit_turns)
        settings = self.session_settings
        if limit is None and limit_turns is None:
            limit_turns = settings.limit_turns
            limit = settings.limit if limit_turns is None else None
        if (limit is not None and limit <= 0) or (limit_turns is not None and limit_turns <= 0):
            return SessionItems()
        newest_first = self._transaction(lambda cur: self._walk_back(cur, limit, limit_turns), write=False)
        return SessionItems(reversed(newest_first))

    def _walk_back(self, cur: Any, limit: Optional[int], limit_turns: Optional[int]) -> list:
        """Items newest first, until `limit` items or `limit_turns` user messages."""
        newest_first: list = []
        turns = 0
        for row_id, data in self._rows_newest_first(cur, limit):
            item = self._decode(row_id, data)
            if item is _SKIPPED:
                continue
            newest_first.append(item)
            if limit is not None and len(newest_first) >= limit:
                break
            if limit_turns is not None and _is_user_message(item):
                turns += 1
                if turns >= limit_turns:
                    break
        return newest_first

    def _rows_newest_first(self, cur: Any, limit: Optional[int]) -> Iterable[tuple]:
        """The session's (id, message_data) rows, newest first; sqlite3 reads them one at a time as they are
        taken (the dbapi shell pages them: drivers such as psycopg read a whole result into memory)."""
        return self._execute(cur, "newest_first", self.session_id)

    def add_items(self, items: List[dict], *, once: Optional[str] = None) -> Ready:
        """Append `items` in one transaction: all rows land, or none. Returns a `Ready` (await it as upstream's
        coroutine, or read `.value`; it is true or false as its value is).

        With `once=key` the append happens only if no earlier `add_items` of this session used `key`; the key
        is recorded in the same transaction as the rows. Returns True when this call appended, False when the
        key was used before (nothing is written; this is also what a retry sees after a commit whose
        acknowledgment the connection lost)."""
        owner = type(self).__name__
        if not isinstance(items, (list, tuple)):  # a dict alone was read as its keys, None as a bare TypeError
            raise UserError(f"{owner}.add_items takes a list of item dicts, got {type(items).__name__}; nothing was "
                            "stored")
        rows = [self._encode(index, item) for index, item in enumerate(items)]
        if once is not None:
            check_key(owner, "once", once)
        elif not rows:
            return Ready(True)

        def body(cur: Any) -> bool:
            self._execute(cur, "ensure_session", self.session_id)
            if once is not None and self._changed(cur, "claim", self.session_id, "", once) != 1:
                return False
            self._execute(cur, "touch_session", self.session_id)  # writers of this session queue here
            if rows:
                cur.executemany(self._sql.insert_message, [self._args(row) for row in rows])
            return True

        return Ready(self._transaction(body, write=True, repeatable=once is not None))

    def pop_item(self) -> Ready:
        """Remove the newest item and return it, or None, as a `Ready` (await it, or read `.value`). Rows that
        are not JSON objects are dropped on the way to the newest valid item."""
        def body(cur: Any) -> Optional[dict]:
            self._execute(cur, "touch_session", self.session_id)
            while True:
                row = self._execute(cur, "newest", self.session_id).fetchone()
                if row is None:
                    return None
                if self._changed(cur, "delete_message", row[0]) != 1:  # else the same row, for ever
                    raise SessionStoreError(f"{type(self).__name__}: pop_item of session {self.session_id!r} failed: "
                                            f"{self._where()} has a table {self.messages_table} whose id is no key "
                                            "(another program's table?): pass other table names; nothing was removed")
                item = self._decode(*row)
                if item is not _SKIPPED:
                    return item

        return Ready(self._transaction(body, write=True, repeatable=False))

    def clear_session(self) -> Ready:
        """Remove this session's items, its ledger and its session row (a `Ready` of None: awaitable)."""
        def body(cur: Any) -> None:
            self._execute(cur, "touch_session", self.session_id)
            for name in ("clear_messages", "clear_ledger", "clear_session"):
                self._execute(cur, name, self.session_id)

        return Ready(self._transaction(body, write=True))

    # --- the exactly-once ledger ---------------------------------------------------------------------------

    def claim_call(self, run_id: str, call_id: str) -> Tuple[bool, Optional[str]]:
        """Atomically claim the right to run call `call_id` of run `run_id` once in this session.

        (True, None): this caller won the claim and will run the call. (False, output): claimed before;
        `output` is the text recorded by `settle_call`, or None when the claimant never recorded one (it is
        still running, or it crashed mid-call)."""
        owner = type(self).__name__
        key = (self.session_id, check_key(owner, "run_id", run_id), check_key(owner, "call_id", call_id, True))

        def body(cur: Any) -> Tuple[bool, Optional[str]]:
            if self._changed(cur, "claim", *key) == 1:
                return True, None
            row = self._execute(cur, "claimed_output", *key).fetchone()
            return False, None if row is None or row[0] is None else _output_text(row[0], key)

        return self._transaction(body, write=True)

    def settle_call(self, run_id: str, call_id: str, output: Union[str, list]) -> None:
        """Record the output of a claimed call (its text, or the list of content parts a tool returned as
        `ToolOutputText`/`Image`/`FileContent`), in its own small transaction (right after the call ran).
        A call nobody claimed is claimed and settled at once."""
        owner = type(self).__name__
        key = (self.session_id, check_key(owner, "run_id", run_id), check_key(owner, "call_id", call_id, True))
        if not isinstance(output, (str, list)):
            raise UserError(f"{owner}.settle_call: output must be a string or a list of content parts, "
                            f"not {type(output).__name__}")
        try:
            stored = json.dumps(output)
        except (TypeError, ValueError, RecursionError) as exc:  # a part no JSON holds, or nested deeper than it reads
            raise UserError(f"{owner}.settle_call: output cannot be stored as JSON ({exc}); nothing was "
                            "stored") from None

        def body(cur: Any) -> None:
            if self._changed(cur, "settle", stored, *key) == 0:
                self._execute(cur, "record", *key, stored)

        self._transaction(body, write=True)

    def lookup_call(self, run_id: str, call_id: str) -> Tuple[bool, Optional[Union[str, list]]]:
        """(claimed, output) of call `call_id` of run `run_id`, read without claiming it: a turn that continues
        after a crash must tell a call that never started (it may run) from one that started and recorded nothing
        (it may have happened). `run_id` '' reads a key `add_items(..., once=key)` used."""
        owner = type(self).__name__
        key = (self.session_id, check_key(owner, "run_id", run_id, True), check_key(owner, "call_id", call_id, True))

        def body(cur: Any) -> Tuple[bool, Optional[Union[str, list]]]:
            row = self._execute(cur, "claimed_output", *key).fetchone()
            return (False, None) if row is None else (True, None if row[0] is None else _output_text(row[0], key))

        return self._transaction(body, write=False)

    # --- the journal: the turn in flight, for a run whose process died to be continued --------------------

    def read_journal(self) -> str:
        """The session's journal entry: the turn in flight of a run whose process may have died ('' when none)."""
        def body(cur: Any) -> str:
            row = self._execute(cur, "claimed_output", self.session_id, *JOURNAL).fetchone()
            return row[0] if row is not None and row[0] else ""

        return self._transaction(body, write=False)

    def write_journal(self, expected: str, entry: str) -> bool:
        """Replace the journal entry `expected` ('' when none) by `entry`, in one short transaction. False, and
        nothing written, when the entry is no longer `expected`: another worker continued this session (or runs
        in it), and a stale worker must never overwrite a newer turn. Lone surrogates are stored replaced, as in
        items (the driver's UTF-8 refuses them), in `expected` too: the entry its writer holds still matches."""
        if not isinstance(expected, str) or not isinstance(entry, str):  # else stored as it is, or a driver's error
            raise UserError(f"{type(self).__name__}.write_journal takes two strings (the entry expected, the new one), "
                            f"got {type(expected).__name__} and {type(entry).__name__}; nothing was written")
        entry, expected = clean_text(entry), clean_text(expected)

        def body(cur: Any) -> bool:
            self._execute(cur, "record", self.session_id, *JOURNAL, "")
            if self._changed(cur, "swap", entry, self.session_id, *JOURNAL, expected) == 1:
                return True
            row = self._execute(cur, "claimed_output", self.session_id, *JOURNAL).fetchone()
            return row[0] == entry  # a retry after a commit whose acknowledgement was lost: it is written

        return self._transaction(body, write=True)


JOURNAL = ("#journal", "head")  # the ledger row of a session's journal (run ids start with "run_" or "v1_")


def _output_text(stored: Any, key: tuple) -> Union[str, list]:
    """A settled output as recorded (JSON: a string or a list of content parts); a row edited by hand to plain
    text (or to JSON nested deeper than Python reads) is returned as is. One that is no text (a BLOB, which SQLite
    keeps as a hand edit wrote it) is a `SessionStoreError` naming the row (`key`): returned, its bytes became the
    call's output no journal or history can hold, and every continue of the session failed on it."""
    if not isinstance(stored, str):
        raise SessionStoreError(f"The ledger row of call {key[2]!r} of run {key[1]!r} in session {key[0]!r} holds an "
                                f"output that is no text ({type(stored).__name__}: edited, or corrupt): set it to the "
                                "call's output as JSON text, or to NULL (the call then counts as started with no "
                                "output recorded)")
    try:
        value = json.loads(stored)
    except (ValueError, RecursionError):
        return stored
    return value if isinstance(value, (str, list)) else stored
