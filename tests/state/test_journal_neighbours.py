"""Another run's turn in flight in the same session's journal, and a session that fails mid-turn (what an attack on
the ledger found): a resumed state never writes over another run's journaled turn, before or during its run; a
run bringing new input that meets one, at its first journal entry (two runs started at once), raises
`UnfinishedTurnError` before the model is asked, while a resumed state goes on unjournaled (its pause is claimed:
stopping would leave the claim held by nobody); a run the session itself failed (`SessionStoreError`) leaves its
turn journaled, as a crash does, so a continue finds what its calls did; a journaled turn this agent cannot
continue is a `SessionStoreError` saying how to go on."""
import json
import os

import pytest

from miniagents import AlreadyResumedError, Runner, RunState, SQLiteSession, UnfinishedTurnError, function_tool
from miniagents.sql_session import SessionStoreError
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent

FOREIGN = json.dumps({"run_id": "run_other", "turn": 1, "epoch": 0, "state": {"schema_version": 6}})


class Raced(SQLiteSession):
    """A session where another run journals its turn right after this run first looked at the journal."""

    raced = False

    def read_journal(self) -> str:
        seen = super().read_journal()
        if not self.raced:
            self.raced = True
            self.write_journal(seen, FOREIGN)
        return seen


def paying(paid, steps):
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    return make_agent(steps, tools=[pay])[0]


def paused_payment(path, paid):
    """A run waiting for a person to approve `pay(5)`, as JSON, in the session at `path`."""
    agent = paying(paid, [[function_call("pay", {"amount": 5}, call_id="p1")]])
    return Runner.run_sync(agent, "pay 5", session=SQLiteSession("s", path)).to_state().to_string()


def approved(text, paid, steps):
    agent = paying(paid, steps)
    state = RunState.from_string(agent, text)
    state.approve(state.get_interruptions()[0])
    return agent, state


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a process that dies mid-turn: os.fork")
def test_a_resumed_state_never_writes_over_the_turn_of_a_run_whose_process_died(tmp_path):
    path, paid, shipped = str(tmp_path / "s.db"), [], []
    text = paused_payment(path, paid)

    @function_tool
    def ship(item: str) -> str:
        shipped.append(item)
        os._exit(9)  # the side effect, then the process dies

    dying, _ = make_agent([[function_call("ship", {"item": "box"}, call_id="s1")]], tools=[ship])
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            Runner.run_sync(dying, "ship the box", session=SQLiteSession("s", path))
        finally:
            os._exit(1)
    assert os.waitpid(pid, 0)[1] >> 8 == 9
    session = SQLiteSession("s", path)
    crashed = session.read_journal()
    agent, state = approved(text, paid, [[assistant_message("done")]])
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and paid == [5]
    assert session.read_journal() == crashed  # the dead run's turn stays, to continue
    survivor, _ = make_agent([[assistant_message("shipped, maybe")]], tools=[ship])
    asked = Runner.run_sync(survivor, [], session=session)  # it started with no output recorded: a person decides
    assert [i.raw_item["call_id"] for i in asked.interruptions] == ["s1"]


def test_a_resume_that_meets_another_runs_first_journal_entry_goes_on_and_runs_its_call_once(tmp_path):
    path, paid = str(tmp_path / "s.db"), []
    text = paused_payment(path, paid)
    agent, state = approved(text, paid, [[assistant_message("done")]])
    session = Raced("s", path)
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and paid == [5]
    assert session.read_journal() == FOREIGN  # never written over, never closed by this run
    agent, state = approved(text, paid, [[assistant_message("again")]])
    with pytest.raises(AlreadyResumedError) as info:  # the pause was claimed once, and its outcome recorded
        Runner.run_sync(agent, state, session=session)
    assert info.value.outcome == "completed" and paid == [5]


def test_a_run_with_new_input_that_meets_another_runs_first_journal_entry_stops_before_the_model_is_asked(tmp_path):
    session = Raced("s", str(tmp_path / "s.db"))
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(UnfinishedTurnError, match="run_other"):
        Runner.run_sync(agent, "hello", session=session)
    assert model.calls == () and session.get_items() == [] and session.read_journal() == FOREIGN


class FullDisk(SQLiteSession):
    """A session whose writes of items fail while `full` (a full disk), as SQLiteSession says it."""

    full = True

    def add_items(self, items, *, once=None):
        if self.full:
            raise SessionStoreError("SQLiteSession: a write failed: the disk is full; nothing of it was stored")
        return super().add_items(items, once=once)


def test_a_run_the_session_failed_after_a_call_ran_leaves_its_turn_to_continue_and_loses_nothing(tmp_path):
    ran = []

    @function_tool
    def ship(item: str) -> str:
        ran.append(item)
        return "shipped"

    agent, _ = make_agent([[function_call("ship", {"item": "box"}, call_id="s1")], [assistant_message("sent")]],
                          tools=[ship])
    session = FullDisk("s", str(tmp_path / "s.db"))
    with pytest.raises(SessionStoreError, match="nothing of it was stored"):
        Runner.run_sync(agent, "ship the box", session=session)
    assert ran == ["box"] and session.read_journal()  # the turn in flight is kept, as a crash's
    session.full = False
    with pytest.raises(UnfinishedTurnError):  # new input waits for it
        Runner.run_sync(agent, "and the bag", session=session)
    assert Runner.run_sync(agent, [], session=session).final_output == "sent" and ran == ["box"]
    kinds = [i.get("type") or i.get("role") for i in session.get_items()]
    assert kinds == ["user", "function_call", "function_call_output", "message"] and not session.read_journal()


def test_a_journaled_turn_this_agent_cannot_continue_is_a_session_store_error_saying_how_to_go_on(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    session.write_journal("", FOREIGN)  # the outer entry is well formed; its state is no state of this agent
    agent, _ = make_agent([[assistant_message("hi")]])
    with pytest.raises(SessionStoreError, match="cannot continue .*write_journal"):
        Runner.run_sync(agent, [], session=session)
    session.write_journal(session.read_journal(), "")
    assert Runner.run_sync(agent, "hello", session=session).final_output == "hi"


def test_a_session_failure_inside_an_agent_tool_stops_the_run_and_leaves_its_turn_never_a_tool_error(tmp_path):
    shipped = []

    @function_tool
    def ship(item: str) -> str:
        shipped.append(item)
        return "shipped"

    class Locked(SQLiteSession):  # the inner call's outcome cannot be recorded: a lock held past the timeout
        def settle_call(self, run_id, call_id, output):
            if call_id == "i1":
                raise SessionStoreError("SQLiteSession: the database is locked; nothing of it was stored")
            return super().settle_call(run_id, call_id, output)

    inner, _ = make_agent([[function_call("ship", {"item": "box"}, call_id="i1")], [assistant_message("ok")]],
                          name="inner", tools=[ship])
    outer, model = make_agent([[function_call("sub", {"input": "ship"}, call_id="o1")], [assistant_message("again?")]],
                              tools=[inner.as_tool("sub", "ships")])
    session = Locked("s", str(tmp_path / "s.db"))
    with pytest.raises(SessionStoreError, match="locked"):  # not 'An error occurred ... try again' for the model
        Runner.run_sync(outer, "ship it", session=session)
    assert shipped == ["box"] and len(model.calls) == 1 and session.read_journal()  # the turn stays, to continue


def test_a_resumed_state_that_went_on_unjournaled_journals_its_next_turn_once_the_other_turn_is_gone(tmp_path):
    path, seen = str(tmp_path / "s.db"), {}
    session = SQLiteSession("s", path)

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        session.write_journal(FOREIGN, "")  # the other run's turn ends while this one is in its first turn
        return f"paid {amount}"

    @function_tool
    def ship(item: str) -> str:
        seen["journal"] = json.loads(session.read_journal() or "{}").get("run_id")  # what a crash here would leave
        return "shipped"

    steps = [[function_call("pay", {"amount": 5}, call_id="p1")],
             [function_call("ship", {"item": "box"}, call_id="s1")], [assistant_message("done")]]
    agent, _ = make_agent(steps, tools=[pay, ship])
    state = Runner.run_sync(agent, "pay, then ship", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    session.write_journal("", FOREIGN)  # another run's turn in flight when this state resumes
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    assert seen["journal"] == state.run_id and not session.read_journal()


# An agent tool paying through an inner agent whose `pay` needs approval; the process dies where
# MINIAGENTS_TEST_DIE says ("tool": right after paying; "write": at the outer turn's write). Run by the test, and
# by the child process it starts.
PAYING_AGENT_TOOL = """
import os
from miniagents import SQLiteSession, function_tool
from miniagents.testing import assistant_message, function_call
from support import make_agent


class DyingAtWrite(SQLiteSession):
    def add_items(self, items, **options):
        if os.environ.get("MINIAGENTS_TEST_DIE") == "write":
            os._exit(9)
        return super().add_items(items, **options)


def outer_agent(effects):
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        with open(effects, "a") as f:
            f.write("paid\\n")
        if os.environ.get("MINIAGENTS_TEST_DIE") == "tool":
            os._exit(9)
        return f"paid {amount}"

    inner, _ = make_agent([[function_call("pay", {"amount": 5}, call_id="i1")], [assistant_message("paid")]],
                          name="Inner", tools=[pay])
    return make_agent([[function_call("helper", {"input": "pay 5"}, call_id="o1")], [assistant_message("done")]],
                      name="Outer", tools=[inner.as_tool("helper", "Pays.")])
"""
RESUME_AND_DIE = PAYING_AGENT_TOOL + """
import sys
from miniagents import Runner, RunState

agent, _ = outer_agent(sys.argv[2])
Runner.run_sync(agent, RunState.from_string(agent, sys.stdin.read()), session=DyingAtWrite("s", sys.argv[1]))
"""


@pytest.mark.parametrize("dies", ["tool", "write"], ids=["in the inner tool", "at the outer turn's write"])
def test_a_continue_after_a_crash_in_an_agent_tools_resumed_inner_run_says_what_the_call_did(tmp_path, dies):
    """An agent tool's inner run waits for a person; the approved state is resumed, and that process dies. The
    continue cannot take over the inner run's resume (it was claimed by the process that died): it tells the
    model what the ledger knows, the agent tool's output if it returned (the process died at the outer turn's
    write), else that the call may have happened, and goes on. It raised `AlreadyResumedError` ("nothing was run
    or written again") after writing the call as stopped midway."""
    import subprocess
    import sys

    from miniagents.ledger import MAY_HAVE_HAPPENED
    from support import ROOT, TESTS

    path, effects, names = str(tmp_path / "s.db"), str(tmp_path / "paid.txt"), {}
    exec(PAYING_AGENT_TOOL, names)
    outer, _ = names["outer_agent"](effects)
    state = Runner.run_sync(outer, "pay 5", session=SQLiteSession("s", path)).to_state()
    state.approve(state.get_interruptions()[0])
    script = tmp_path / "resume_and_die.py"
    script.write_text(RESUME_AND_DIE, encoding="utf-8")
    env = {**os.environ, "MINIAGENTS_TEST_DIE": dies, "PYTHONPATH": os.pathsep.join([ROOT, TESTS])}
    died = subprocess.run([sys.executable, str(script), path, effects], input=state.to_string(), env=env,
                          capture_output=True, text=True, timeout=120)
    assert died.returncode == 9, died.stderr
    outer, model = names["outer_agent"](effects)
    session = SQLiteSession("s", path)
    result = Runner.run_sync(outer, [], session=session)
    assert result.final_output == "done" and result.interruptions == []
    assert open(effects).read().splitlines() == ["paid"]
    said = "paid" if dies == "write" else MAY_HAVE_HAPPENED
    told = [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"]
    assert told == [said] and model.calls[-1].input[-1]["output"] == said
