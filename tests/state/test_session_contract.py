"""The session contract, one specification run against every backend: `SQLiteSession`, `DBAPISession` over
sqlite3, and `DBAPISession` over a real PostgreSQL server with psycopg 3 and with psycopg2 (tests/postgres.py
starts it; those cases skip with the reason when PostgreSQL or the driver is missing).

Items round-trip in order; `limit` takes the newest items, `limit_turns` whole user turns (a call is never cut
from its output); `pop_item`; `clear_session` (items, session row and ledger); `add_items` is all or nothing;
stored rows that are not JSON objects are skipped with a warning. The exactly-once ledger: `claim_call` has
one winner however many threads or processes race for it, a claimant killed before `settle_call` leaves
(False, None) for everyone after, the ledger is read by key and never through the history window, and
`add_items(once=key)` appends at most once per key. Many processes appending to one session lose nothing and
never interleave two turns.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading

import pytest

from miniagents.errors import SessionStoreError, UserError
from miniagents.session import SessionSettings
from session_backends import (KINDS, POSTGRES_KINDS, assistant, call, driver_or_skip, fail_inserts_containing,
                              open_session, output, raw_connection, raw_sql, user)


from support import ROOT  # noqa: E402
WORKER = os.path.join(ROOT, "tests", "helpers", "session_worker.py")


class Backend:
    """One backend for one test: sessions opened through it are closed at the end; `sql` runs a statement on
    a separate autocommit connection (placeholders written `?`)."""

    def __init__(self, spec):
        self.spec, self.kind = spec, spec["kind"]
        self._sessions, self._raw = [], None

    def session(self, session_id="s1", **kwargs):
        session = open_session(self.spec, session_id, **kwargs)
        self._sessions.append(session)
        return session

    def sql(self, statement, params=None):
        if self._raw is None:
            self._raw = raw_connection(self.spec)
        cur = self._raw.cursor()
        if params is None:
            cur.execute(statement)  # no placeholders: a literal % (in a LIKE pattern) stays as written
        else:
            cur.execute(raw_sql(self.spec, statement), params)
        return cur.fetchall() if cur.description else []

    def count(self, table="agent_messages"):
        return self.sql(f"SELECT COUNT(*) FROM {table}")[0][0]

    def close(self):
        for session in self._sessions:
            session.close()
        if self._raw is not None:
            self._raw.close()


@pytest.fixture(params=KINDS)
def backend(request, tmp_path):
    kind = request.param
    if kind in POSTGRES_KINDS:
        driver = driver_or_skip(kind)
        server = request.getfixturevalue("postgres_server")
        spec = {"kind": kind, "dsn": server.schema_dsn(driver)}
    else:
        spec = {"kind": kind, "path": str(tmp_path / "sessions.db")}
    backend = Backend(spec)
    yield backend
    backend.close()


# --- items --------------------------------------------------------------------------------------------------


def test_items_round_trip_in_order_with_unicode_and_sql_like_text(backend):
    items = [user("héllo wörld — 你好 🚀"), user("'); DROP TABLE agent_messages; --"), call("c1"), output("c1"),
             user("100% of ?s and %(x)s and :1"), assistant("done")]
    backend.session().add_items(items[:3])
    backend.session().add_items(items[3:])
    assert backend.session().get_items() == items  # a new session object reads what another wrote
    stored = backend.sql("SELECT message_data FROM agent_messages ORDER BY id")[0][0]
    assert "你好" in stored  # stored readable, as upstream's readers expect


def test_sessions_are_isolated_and_clearing_one_leaves_the_other(backend):
    a, b = backend.session("a"), backend.session("b")
    a.add_items([user("for a")])
    b.add_items([user("for b")])
    a.claim_call("run", "c1")
    b.claim_call("run", "c1")
    assert a.get_items() == [user("for a")] and b.get_items() == [user("for b")]
    b.clear_session()
    assert a.get_items() == [user("for a")] and b.get_items() == []
    assert a.claim_call("run", "c1") == (False, None) and b.claim_call("run", "c1") == (True, None)


def test_pop_item_returns_the_newest_and_removes_it(backend):
    s = backend.session()
    assert s.pop_item().value is None
    s.add_items([user("1"), user("2")])
    s.add_items([user("3")])
    assert s.pop_item() == user("3")
    assert s.get_items() == [user("1"), user("2")]
    assert s.pop_item() == user("2") and s.pop_item() == user("1") and s.pop_item().value is None


@pytest.mark.parametrize("session_id", ["s1", "database is locked"])  # the error's text is not read as the driver's
def test_pop_item_on_a_table_whose_ids_are_no_key_stops_with_a_session_store_error(backend, session_id):
    backend.sql("CREATE TABLE agent_messages (id INTEGER, session_id TEXT, message_data TEXT)")  # every id NULL
    s = backend.session(session_id)
    s.add_items([user("1"), user("2")])
    with pytest.raises(SessionStoreError, match="agent_messages whose id is no key.*nothing was removed"):
        s.pop_item()  # it popped one item for ever (and spun for ever on a row that is not JSON, holding the lock)
    assert backend.count() == 2


def test_clear_session_removes_items_session_row_and_ledger(backend):
    s = backend.session()
    s.add_items([user("1"), user("2")], once="r/turn-1")
    s.claim_call("r", "c1")
    s.settle_call("r", "c1", "out")
    s.clear_session()
    assert s.get_items() == []
    assert backend.count("agent_sessions") == 0 and backend.count("agent_tool_calls") == 0
    assert s.claim_call("r", "c1") == (True, None)
    assert s.add_items([user("again")], once="r/turn-1").value is True


def test_limit_returns_the_newest_n_in_order(backend):
    s = backend.session()
    s.add_items([user(str(i)) for i in range(200)])
    assert s.get_items(3) == [user("197"), user("198"), user("199")]
    assert s.get_items(150) == [user(str(i)) for i in range(50, 200)]
    assert s.get_items(0) == [] and len(s.get_items()) == 200


def test_settings_limit_is_the_default_and_an_explicit_limit_wins(backend):
    s = backend.session(session_settings=SessionSettings(limit=2))
    s.add_items([user("1"), user("2"), user("3")])
    assert s.get_items() == [user("2"), user("3")]
    assert s.get_items(1) == [user("3")]


def test_limit_turns_never_splits_a_call_from_its_output(backend):
    s = backend.session(session_settings=SessionSettings(limit=3, limit_turns=2))
    turn1 = [user("first"), call("c1"), output("c1"), assistant("one")]
    turn2 = [{"type": "message", "role": "user", "content": "second"}, call("c2"), call("c3"),
             output("c2"), output("c3"), assistant("two")]
    turn3 = [user("third"), call("c4"), output("c4"), assistant("three")]
    s.add_items(turn1 + turn2 + turn3)
    assert s.get_items() == turn2 + turn3  # limit_turns wins over limit=3, which would split c4
    assert s.get_items(limit_turns=1) == turn3
    assert s.get_items(limit_turns=10) == turn1 + turn2 + turn3


def test_limit_turns_reads_across_pages(backend):
    s = backend.session()
    turns = [[user(f"u{t}")] + [x for i in range(50) for x in (call(f"c{t}.{i}"), output(f"c{t}.{i}"))]
             for t in range(5)]
    s.add_items([x for t in turns for x in t])
    assert s.get_items(limit_turns=2) == turns[3] + turns[4]


def test_a_limit_that_is_not_an_int_is_a_user_error(backend):
    s = backend.session()
    with pytest.raises(UserError, match="limit must be an int"):
        s.get_items("5")
    with pytest.raises(UserError, match="limit_turns must be an int"):
        s.get_items(limit_turns=1.5)


def test_stored_rows_that_are_not_json_objects_are_skipped_with_a_warning(backend, caplog):
    s = backend.session()
    s.add_items([user("1")])
    for data in ("{not json", "[1, 2]", "5", '"text"', "null"):
        backend.sql("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)", ("s1", data))
    s.add_items([user("2")])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        assert s.get_items() == [user("1"), user("2")]
        assert s.get_items(2) == [user("1"), user("2")]
        assert s.get_items(limit_turns=2) == [user("1"), user("2")]
    assert "is not valid JSON" in caplog.text and "is not a JSON object" in caplog.text
    assert s.pop_item() == user("2")
    assert s.pop_item() == user("1")  # the bad rows are dropped on the way
    assert s.pop_item().value is None and backend.count() == 0


def test_add_items_refuses_what_is_not_a_json_object_and_stores_nothing(backend):
    s = backend.session()
    with pytest.raises(UserError, match="item 1 cannot be stored as JSON"):
        s.add_items([user("ok"), {"bad": object()}])
    with pytest.raises(UserError, match="item 0 is a list, not a dict"):
        s.add_items([["not", "an", "item"]])
    for items in (user("one item, not in a list"), None, "text"):
        with pytest.raises(UserError, match=f"add_items takes a list of item dicts, got {type(items).__name__}"):
            s.add_items(items)
    assert backend.count() == 0 and backend.count("agent_sessions") == 0
    assert s.add_items((user("a tuple"),)) and s.get_items() == [user("a tuple")]


def test_a_write_the_database_refuses_midway_leaves_nothing_and_the_session_works_after(backend):
    s = backend.session()
    s.add_items([user("before")])
    backend.sql(fail_inserts_containing(backend.spec, "boom"))
    with pytest.raises(Exception, match="refused boom"):
        s.add_items([user("ok"), call("c1"), user("boom"), output("c1")])
    assert s.get_items() == [user("before")]
    with pytest.raises(Exception, match="refused boom"):
        backend.session("fresh").add_items([user("ok"), user("boom")])
    assert backend.count() == 1 and backend.count("agent_sessions") == 1  # no session row for "fresh" either
    s.add_items([user("after")])
    assert s.get_items() == [user("before"), user("after")]


def test_lone_surrogates_are_stored_replaced_and_pairs_joined(backend):
    s = backend.session()
    s.add_items([user("bad \ud800 end"), {"type": "function_call", "call_id": "c\udfff", "name": "f",
                                           "arguments": '{"q": "\ud83d\ude00"}'}])
    assert s.get_items() == [user("bad \ufffd end"), {"type": "function_call", "call_id": "c\ufffd", "name": "f",
                                                      "arguments": '{"q": "😀"}'}]


@pytest.mark.parametrize("bad", [None, 5, "", "a\x00b", "\ud800"])
def test_a_session_id_that_is_not_a_usable_string_is_a_user_error(backend, bad):
    with pytest.raises(UserError, match="session_id"):
        backend.session(bad)


@pytest.mark.parametrize("table", ["sessions_table", "messages_table", "tool_calls_table"])
def test_a_table_name_that_is_not_an_identifier_is_a_user_error(backend, table):
    with pytest.raises(UserError, match=table):
        backend.session(**{table: "m; DROP TABLE x"})
    with pytest.raises(UserError, match=table):
        backend.session(**{table: "1abc"})


def test_custom_table_names_are_used(backend):
    s = backend.session(sessions_table="my_sessions", messages_table="my_messages", tool_calls_table="my_calls")
    s.add_items([user("x")], once="k")
    s.claim_call("r", "c")
    assert [backend.count(t) for t in ("my_sessions", "my_messages", "my_calls")] == [1, 1, 2]


def test_sql_keywords_are_table_names_too(backend):
    s = backend.session(sessions_table="group", messages_table="order", tool_calls_table="select")
    s.add_items([user("x"), user("y")], once="k")
    assert s.claim_call("r", "c") == (True, None)
    assert s.pop_item().value == user("y") and s.get_items() == [user("x")]
    assert [backend.count(f'"{t}"') for t in ("group", "order", "select")] == [1, 1, 2]


# 'ſ', the Kelvin sign, 'ı', 'İ': letters [A-Za-z] matched case-insensitively, two or three bytes each: 40 'ſ' and a
# suffix are 82 bytes, cut by PostgreSQL to 63, so "ſ…ſ_a" and "ſ…ſ_b" were one table (a bare UndefinedColumn)
@pytest.mark.parametrize("name", ["sqlite_calls", "SQLITE_calls", "t" * 49, "\u017f" * 40 + "_a", "\u212a", "\u0131x",
                                  "x\u0130"])
def test_a_table_name_some_database_cannot_hold_is_a_user_error(backend, name):
    with pytest.raises(UserError, match="tool_calls_table=.*up to 48 .* or sqlite_"):
        backend.session(tool_calls_table=name)
    s = backend.session(messages_table="m" * 48)  # its index, idx_<name>_session_id, is 63 characters
    s.add_items([user("x")])
    assert backend.count("m" * 48) == 1


@pytest.mark.parametrize("names", [{"sessions_table": "t", "messages_table": "t"},
                                   {"messages_table": "m", "tool_calls_table": "M"},
                                   {"sessions_table": "agent_messages"}])
def test_two_table_arguments_naming_one_table_are_a_user_error(backend, names):
    with pytest.raises(UserError, match="must be three tables"):
        backend.session(**names)


# --- the exactly-once ledger ----------------------------------------------------------------------------------


def test_a_claim_has_one_winner_and_later_claims_see_the_settled_output(backend):
    s = backend.session()
    assert s.claim_call("run1", "c1") == (True, None)
    assert s.claim_call("run1", "c1") == (False, None)  # claimed, not settled (running, or crashed)
    s.settle_call("run1", "c1", "paid 5")
    assert s.claim_call("run1", "c1") == (False, "paid 5")
    assert backend.session().claim_call("run1", "c1") == (False, "paid 5")  # another session object, same id
    assert s.claim_call("run2", "c1") == (True, None)  # the same call id in another run is another call
    assert backend.session("other").claim_call("run1", "c1") == (True, None)


def test_settled_outputs_round_trip_any_text(backend):
    s = backend.session()
    for n, text in enumerate(["", "héllo 你好 🚀", "nul \x00 inside", "lone \ud800", '{"json": [1]}', "x" * 100000]):
        s.claim_call("r", f"c{n}")
        s.settle_call("r", f"c{n}", text)
        assert s.claim_call("r", f"c{n}") == (False, text)


def test_a_settled_output_edited_by_hand_is_returned_as_its_text(backend):
    """A row that is no JSON string or list, or is nested deeper than Python reads, is the text it holds (the
    deep one was a bare RecursionError from claim_call and lookup_call)."""
    s = backend.session()
    for n, text in enumerate(["plain text", "5", "[" * 100000]):
        backend.sql("INSERT INTO agent_tool_calls (session_id, run_id, call_id, output) VALUES (?, ?, ?, ?)",
                    ("s1", "r", f"c{n}", text))
        assert s.claim_call("r", f"c{n}") == (False, text)
        assert s.lookup_call("r", f"c{n}") == (True, text)


def test_a_settled_output_edited_to_a_blob_is_a_session_store_error_naming_the_row(backend):
    """SQLite keeps a BLOB a hand edit wrote in the output column as it is: returned as bytes, it became the call's
    output, and every continue of the session failed, on a UserError about the RunState's JSON or a turn write
    the session refused, saying to continue again."""
    if backend.spec["kind"] in POSTGRES_KINDS:
        pytest.skip("a TEXT column of PostgreSQL holds text only")
    s = backend.session()
    backend.sql("INSERT INTO agent_tool_calls (session_id, run_id, call_id, output) VALUES (?, ?, ?, ?)",
                ("s1", "r", "c1", b"\x00\xff"))
    for method in (s.claim_call, s.lookup_call):
        with pytest.raises(SessionStoreError, match="ledger row of call 'c1' of run 'r' in session 's1' holds an "
                                                    "output that is no text"):
            method("r", "c1")
    backend.sql("UPDATE agent_tool_calls SET output = NULL WHERE call_id = ?", ("c1",))  # what the message says
    assert s.lookup_call("r", "c1") == (True, None)


def test_a_settled_output_no_json_holds_is_a_user_error_and_nothing_is_stored(backend):
    """A list of parts with a value JSON has no form for, or nested deeper than Python writes: a bare TypeError or
    RecursionError out of settle_call (the reading side returns such a row as its text)."""
    s = backend.session()
    deep: list = []
    for _ in range(100000):
        deep = [deep]
    s.claim_call("r", "c1")
    for output in (["part", {"a set": {1, 2}}], deep):
        with pytest.raises(UserError, match="settle_call: output cannot be stored as JSON"):
            s.settle_call("r", "c1", output)
    assert s.lookup_call("r", "c1") == (True, None)


def test_settling_a_call_nobody_claimed_claims_it(backend):
    s = backend.session()
    s.settle_call("r", "c1", "done")
    assert s.claim_call("r", "c1") == (False, "done")


def test_ledger_arguments_are_checked(backend):
    s = backend.session()
    with pytest.raises(UserError, match="run_id must not be empty"):
        s.claim_call("", "c1")
    with pytest.raises(UserError, match="call_id must be a string"):
        s.claim_call("r", None)
    with pytest.raises(UserError, match="output must be a string"):
        s.settle_call("r", "c1", {"not": "text"})
    with pytest.raises(UserError, match="once must not be empty"):
        s.add_items([user("x")], once="")
    assert s.claim_call("r", "") == (True, None)  # an empty call id (a model may send one) is a key like any other
    assert backend.count() == 0


def test_the_ledger_is_read_by_key_not_through_the_history_window(backend):
    s = backend.session(session_settings=SessionSettings(limit=1, limit_turns=1))
    s.claim_call("old-run", "c1")
    s.settle_call("old-run", "c1", "paid 5")
    for turn in range(30):
        s.add_items([user(f"turn {turn}"), call(f"c{turn}x"), output(f"c{turn}x")], once=f"new-run/turn-{turn}")
    assert len(s.get_items()) == 3
    assert s.claim_call("old-run", "c1") == (False, "paid 5")
    assert s.add_items([user("again")], once="new-run/turn-0").value is False


def test_a_journal_row_edited_to_null_reads_empty_and_is_written_over(backend):
    """NULL reads as no entry, so it is written over as one: else every run in the session stopped with
    AlreadyResumedError, and the documented way out, write_journal(read_journal(), ""), changed nothing."""
    s = backend.session()
    backend.sql("INSERT INTO agent_tool_calls (session_id, run_id, call_id, output) VALUES (?, ?, ?, NULL)",
                ("s1", "#journal", "head"))
    assert s.read_journal() == ""
    assert s.write_journal("", "entry") is True and s.read_journal() == "entry"
    assert s.write_journal("", "other") is False and s.read_journal() == "entry"


def test_a_journal_entry_with_lone_surrogates_is_stored_replaced_and_matched_as_written(backend):
    """As items are (a custom model's text can hold one): the driver's UTF-8 encoding refused it, a bare
    UnicodeEncodeError that failed the run. The writer's entry, as it holds it, still matches the stored one."""
    s = backend.session()
    assert s.write_journal("", "turn \ud800 1") is True and s.read_journal() == "turn \ufffd 1"
    assert s.write_journal("turn \ud800 1", "turn \udfff 2") is True and s.read_journal() == "turn \ufffd 2"
    assert s.write_journal("turn \ud800 1", "") is False and s.write_journal("turn \udfff 2", "") is True


@pytest.mark.parametrize("expected, entry", [("", None), ("", 5), ("", {"turn": 1}), ("", b"entry"), (None, "entry")])
def test_a_journal_entry_that_is_no_string_is_a_user_error_and_nothing_is_written(backend, expected, entry):
    """An entry is text: a dict was the driver's bare ProgrammingError, an int was stored as "5" (a corrupt entry
    that stopped every later run in the session), None as NULL; an `expected` of None was False for ever."""
    s = backend.session()
    s.write_journal("", "entry")
    with pytest.raises(UserError, match="write_journal takes two strings"):
        s.write_journal("entry" if expected == "" else expected, entry)
    assert s.read_journal() == "entry"


def test_once_appends_at_most_once_per_key(backend):
    s = backend.session()
    turn = [user("pay 5"), call("c1"), output("c1")]
    assert s.add_items(turn, once="run1/turn-1").value is True
    assert s.add_items(turn, once="run1/turn-1").value is False
    assert backend.session().add_items(turn, once="run1/turn-1").value is False
    assert s.get_items() == turn
    assert s.add_items([], once="run1/turn-2").value is True  # an empty append still uses its key
    assert s.add_items([user("late")], once="run1/turn-2").value is False
    assert s.add_items(turn, once="run2/turn-1").value is True and len(s.get_items()) == 6
    assert s.add_items([user("plain")]).value is True


def test_once_keys_and_call_claims_never_collide(backend):
    s = backend.session()
    assert s.add_items([user("x")], once="r/turn-1").value is True
    assert s.claim_call("r/turn-1", "") == (True, None)
    assert s.add_items([user("y")], once="r/turn-1").value is False


def run_threads(count, target):
    barrier, results, errors = threading.Barrier(count), [None] * count, []

    def work(n):
        try:
            barrier.wait()
            results[n] = target(n)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_eight_threads_claiming_one_call_have_exactly_one_winner(backend):
    shared = backend.session()
    own = [backend.session() for _ in range(4)]  # half share one session object, half have their own
    results = run_threads(8, lambda n: (shared if n % 2 else own[n // 2]).claim_call("run", "pay-1"))
    assert sorted(results, key=str) == [(False, None)] * 7 + [(True, None)]


def test_eight_threads_appending_with_one_once_key_store_it_once(backend):
    sessions = [backend.session() for _ in range(8)]
    results = run_threads(8, lambda n: sessions[n].add_items([user(f"from {n}"), call("c1"), output("c1")],
                                                             once="run/turn-1"))
    assert sorted(r.value for r in results) == [False] * 7 + [True]
    assert backend.count() == 3


# --- processes ------------------------------------------------------------------------------------------------


def start_workers(backend, argvs, session_id="s1"):
    """Start one worker per argv, wait until each has opened its session, then let them all go at once."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, WORKER, json.dumps(backend.spec), session_id, *argv], env=env,
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for argv in argvs]
    try:
        for proc in procs:
            line = proc.stdout.readline()
            assert line == b"ready\n", (line, proc.stderr.read() if proc.poll() is not None else b"")
        for proc in procs:
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.communicate()
        raise
    return procs


def finish(procs, timeout=120):
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        results.append((proc.returncode, out.decode().splitlines(), err.decode()))
    return results


def test_four_processes_claiming_one_call_have_exactly_one_winner(backend):
    backend.session()  # tables exist before the race (creation races are another test's subject)
    results = finish(start_workers(backend, [("claim", "run", "pay-1")] * 4))
    assert [code for code, _, _ in results] == [0] * 4, [err for _, _, err in results]
    assert sorted(lines[0] for _, lines, _ in results) == ["lost null"] * 3 + ["won"]


def test_a_claimant_killed_before_settling_leaves_the_call_claimed_without_output(backend):
    [proc] = start_workers(backend, [("claim-and-hang", "run", "pay-1")])
    try:
        assert proc.stdout.readline() == b"won\n"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert backend.session().claim_call("run", "pay-1") == (False, None)
    results = finish(start_workers(backend, [("claim", "run", "pay-1")] * 2))
    assert [lines for _, lines, _ in results] == [["lost null"]] * 2, [err for _, _, err in results]


def test_eight_processes_appending_to_one_session_lose_nothing_and_never_interleave_turns(backend):
    per_writer = 200 if backend.kind in POSTGRES_KINDS else 50
    procs = start_workers(backend, [("append", f"w{n}", str(per_writer)) for n in range(8)])
    results = finish(procs)
    assert [(code, lines) for code, lines, _ in results] == [(0, ["done"])] * 8, [err for _, _, err in results]
    items = backend.session().get_items()
    assert len(items) == 8 * per_writer * 3
    turns = [items[i:i + 3] for i in range(0, len(items), 3)]
    for first, first_call, first_output in turns:  # each add_items' three rows are contiguous
        assert first_call["call_id"] == first_output["call_id"] == first["content"]
    for n in range(8):  # and each writer's turns are in its order
        mine = [t[0]["content"] for t in turns if t[0]["content"].startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(per_writer)]
