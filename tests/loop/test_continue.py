"""Continuing a run from its session's journal, in one process (issue 34; the SIGKILL tests are
tests/state/test_crash_continue.py).

A worker stuck inside a tool stands for one whose process died: its turn is in the session's journal. Running the
agent on the session with no new input (`[]`) continues that turn; new input is refused with
`UnfinishedTurnError`; a call that started with no output recorded waits for a person (or runs again when its
tool is idempotent); two workers continuing at once: one wins; the stuck worker, when it wakes, never overwrites
what the winner wrote.
"""
from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings, strategies as st

from miniagents import (Agent, MaxTurnsExceeded, RunConfig, RunContextWrapper, Runner, RunState, SQLiteSession,
                        ToolContext, UnfinishedTurnError, UserError, function_tool)
from miniagents.errors import AlreadyResumedError
from miniagents.ledger import MAY_HAVE_HAPPENED
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import ListSession, outputs_sent


class Stuck:
    """A tool that records each start and blocks its first call until released: a worker that 'died' mid-call."""

    def __init__(self, idempotent=False, needs_approval=False):
        self.starts, self.keys, self.release, self.entered = [], [], threading.Event(), threading.Event()

        @function_tool(idempotent=idempotent, needs_approval=needs_approval)
        def pay(ctx: ToolContext, amount: int) -> str:
            """Pay."""
            self.starts.append(ctx.tool_call_id)
            self.keys.append(ctx.idempotency_key)
            if len(self.starts) == 1:
                self.entered.set()
                self.release.wait(30)
            return f"paid {amount}"

        self.tool = pay


def agent_with(tool, *answers):
    steps = [[function_call("pay", {"amount": 5}, call_id="c1")]] + [[assistant_message(a)] for a in answers]
    return Agent(name="Payer", tools=[tool], model=ScriptedModel(steps))


def stuck_run(tmp_path, idempotent=False, session=None, stuck=None, given="pay 5"):
    """A run stuck in its tool, in a thread: (the tool, the session, the thread, what the thread saw)."""
    stuck, session = stuck or Stuck(idempotent), session or SQLiteSession("s", str(tmp_path / "db"))
    seen = []

    def first():
        try:
            seen.append(Runner.run_sync(agent_with(stuck.tool, "first"), given, session=session).final_output)
        except Exception as error:  # noqa: BLE001 - the test looks at it
            seen.append(error)

    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    assert stuck.entered.wait(30)
    return stuck, session, thread, seen


def continued(session, tool, answer="continued"):
    model = ScriptedModel([[assistant_message(answer)]])
    return Runner.run_sync(Agent(name="Payer", tools=[tool], model=model), [], session=session), model


def test_new_input_while_a_turn_is_unfinished_is_refused_and_nothing_is_written(tmp_path):
    stuck, session, thread, seen = stuck_run(tmp_path)
    try:
        with pytest.raises(UnfinishedTurnError) as refused:
            Runner.run_sync(agent_with(stuck.tool, "x"), "something else", session=session)
        assert "Continue it with no new input" in str(refused.value) and session.get_items() == []
        assert stuck.starts == ["c1"]
    finally:
        stuck.release.set()
        thread.join(30)
    assert seen == ["first"]  # the first worker was not disturbed
    assert not session.read_journal()  # it returned: no turn of it is in flight


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_call_started_with_no_output_waits_for_a_person(tmp_path, decision):
    """The continued turn reuses the recorded response (the model is not asked for it again); c1 started and
    recorded nothing, so it may have happened: a person decides. Approved, it runs again; rejected, the model and
    the session are told it may or may not have happened. The stuck worker, woken afterwards, writes nothing."""
    stuck, session, thread, seen = stuck_run(tmp_path)
    result, model = continued(session, stuck.tool)
    assert [i.call_id for i in result.interruptions] == ["c1"] and not model.calls
    state = result.to_state()
    if decision == "approve":
        state.approve(state.get_interruptions()[0])
    else:
        state.reject(state.get_interruptions()[0])
    result = Runner.run_sync(Agent(name="Payer", tools=[stuck.tool], model=model), state, session=session)
    assert result.final_output == "continued"
    expected = "paid 5" if decision == "approve" else MAY_HAVE_HAPPENED
    assert outputs_sent(model.calls[0]) == {"c1": expected}
    assert stuck.starts == (["c1", "c1"] if decision == "approve" else ["c1"])
    assert len(set(stuck.keys)) == 1  # one idempotency key for every attempt at the call
    history = session.get_items()
    stuck.release.set()
    thread.join(30)
    assert isinstance(seen[0], AlreadyResumedError)  # the stale worker stopped at its next journal write
    assert session.get_items() == history  # and never overwrote the newer turn
    assert [i["output"] for i in history if i.get("type") == "function_call_output"] == [expected]


class Overtaken:
    """Two sessions on one database, ordering a worker thought dead but only slow (`stale`, stuck in its tool) and
    the resume that took its run over (`winner`): the winner's journal write lets the stale worker's call return;
    the stale worker writes the turn first, claims the next turn and stops at its journal write; only then does the
    winner claim that turn. Each stores exactly as SQLiteSession does."""

    def __init__(self, path, stuck):
        wrote, claimed = threading.Event(), threading.Event()

        class Stale(SQLiteSession):
            def add_items(self, *args, **kwargs):
                super().add_items(*args, **kwargs)
                wrote.set()

            def claim_call(self, run_id, call_id):
                won = super().claim_call(run_id, call_id)
                if call_id == "turn-2":
                    claimed.set()
                return won

        class Winner(SQLiteSession):
            def write_journal(self, expected, entry):
                replaced = super().write_journal(expected, entry)
                stuck.release.set()
                return replaced

            def add_items(self, *args, **kwargs):
                assert wrote.wait(30)  # the stale worker writes the turn first: this write is skipped (its once-key)
                return super().add_items(*args, **kwargs)

            def claim_call(self, run_id, call_id):
                assert call_id != "turn-2" or claimed.wait(30)
                return super().claim_call(run_id, call_id)

        self.stale, self.winner = Stale("s", path), Winner("s", path)


def test_a_resume_that_took_the_run_over_finishes_a_turn_the_stale_worker_claimed(tmp_path):
    """The stale worker wakes while the resume answering the continue's question runs: it writes the turn (its
    call ran once), claims turn 2, finds its journal entry replaced and stops. The resume, whose entry the journal
    holds, takes that claim with no outcome over and finishes the run: the history ends in its answer."""
    stuck = Stuck()
    sessions = Overtaken(str(tmp_path / "db"), stuck)
    _, _, thread, seen = stuck_run(tmp_path, session=sessions.stale, stuck=stuck)
    result, model = continued(SQLiteSession("s", str(tmp_path / "db")), stuck.tool)
    state = result.to_state()
    state.reject(state.get_interruptions()[0])
    result = Runner.run_sync(Agent(name="Payer", tools=[stuck.tool], model=model), state, session=sessions.winner)
    thread.join(30)
    assert isinstance(seen[0], AlreadyResumedError) and seen[0].outcome is None
    assert result.final_output == "continued" and stuck.starts == ["c1"]
    history = sessions.winner.get_items()
    assert [i["output"] for i in history if i.get("type") == "function_call_output"] == ["paid 5"]
    assert history[-1]["content"][0]["text"] == "continued" and not sessions.winner.read_journal()


def test_a_take_over_finishes_a_turn_the_resume_it_took_over_claimed(tmp_path):
    """`take_over()` of a resume thought dead but only slow: the same order, with no continue. The slow resume
    writes the turn, claims turn 2 and stops at its journal write; the take-over finishes the run."""
    stuck, path = Stuck(needs_approval=True), str(tmp_path / "db")
    sessions = Overtaken(path, stuck)
    paused = Runner.run_sync(agent_with(stuck.tool), "pay 5", session=SQLiteSession("s", path)).to_state()
    paused.approve(paused.get_interruptions()[0])
    answers = Agent(name="Payer", tools=[stuck.tool], model=ScriptedModel([[assistant_message("done")]]))
    taker = RunState.from_json(answers, paused.to_json())
    _, _, thread, seen = stuck_run(tmp_path, session=sessions.stale, stuck=stuck, given=paused)
    taker.take_over()
    result = Runner.run_sync(answers, taker, session=sessions.winner)
    thread.join(30)
    assert isinstance(seen[0], AlreadyResumedError) and seen[0].outcome is None
    assert result.final_output == "done" and stuck.starts == ["c1"]
    history = sessions.winner.get_items()
    assert [i["output"] for i in history if i.get("type") == "function_call_output"] == ["paid 5"]
    assert history[-1]["content"][0]["text"] == "done" and not sessions.winner.read_journal()


def test_a_take_over_never_takes_a_turn_from_a_worker_set_aside(tmp_path):
    """A resume that started while another run's turn was in flight is set aside: it journals nothing, so no
    journal write can stop it. A take-over of the same pause, started once that other turn ended, journals; when
    it finds the next turn claimed by the set-aside worker, it stops (`AlreadyResumedError`) rather than take that
    turn over: the worker is running it, and both running it ran the tool of that turn twice."""
    path, notes = str(tmp_path / "db"), []
    wrote, claimed, tried = threading.Event(), threading.Event(), threading.Event()

    @function_tool
    def note(text: str) -> str:
        """Note."""
        notes.append(text)
        assert text != "c2a" or tried.wait(30)  # the set-aside worker's turn 2 runs while the take-over claims it
        return "noted"

    class SetAside(SQLiteSession):
        def add_items(self, *args, **kwargs):
            super().add_items(*args, **kwargs)
            wrote.set()

        def claim_call(self, run_id, call_id):
            won = super().claim_call(run_id, call_id)
            claimed.set() if call_id == "turn-2" else None
            return won

    class Journaled(SQLiteSession):
        def write_journal(self, expected, entry):
            replaced = super().write_journal(expected, entry)
            charge.release.set()  # the set-aside worker's call returns once this one journals
            return replaced

        def add_items(self, *args, **kwargs):
            assert wrote.wait(30)  # the set-aside worker writes the turn first
            return super().add_items(*args, **kwargs)

        def claim_call(self, run_id, call_id):
            assert call_id != "turn-2" or claimed.wait(30)  # and claims the next turn first
            won = super().claim_call(run_id, call_id)
            tried.set() if call_id == "turn-2" else None
            return won

    def agent(*steps):
        return Agent(name="Payer", tools=[charge.tool, note], model=ScriptedModel(list(steps)))

    def noting(call_id, answer):  # a resume's turns: the model is not asked for the paused turn again
        return agent([function_call("note", {"text": call_id}, call_id=call_id)], [assistant_message(answer)])

    charge = Stuck(needs_approval=True)
    paying = agent([function_call("pay", {"amount": 5}, call_id="c1")])
    paused = Runner.run_sync(paying, "pay 5", session=SQLiteSession("s", path)).to_state()
    paused.approve(paused.get_interruptions()[0])
    working, taking = noting("c2a", "a"), noting("c2b", "b")
    resumed, taker = (RunState.from_json(who, paused.to_json()) for who in (working, taking))
    other, _, other_thread, _ = stuck_run(tmp_path)  # another run's turn in flight in the session
    seen = []
    worker = threading.Thread(target=lambda: seen.append(Runner.run_sync(
        working, resumed, session=SetAside("s", path)).final_output), daemon=True)
    worker.start()
    assert charge.entered.wait(30)
    other.release.set()
    other_thread.join(30)  # that turn ended: the take-over journals
    taker.take_over()
    with pytest.raises(AlreadyResumedError) as stopped:
        Runner.run_sync(taking, taker, session=Journaled("s", path))
    worker.join(30)
    assert stopped.value.outcome is None and seen == ["a"]
    assert notes == ["c2a"] and charge.starts == ["c1"]
    history = SQLiteSession("s", path).get_items()
    assert [i["call_id"] for i in history if i.get("call_id", "").startswith("c2")] == ["c2a", "c2a"]


def paying_and_noting(notes, in_note=None, wait=None):
    """(pay: approval needed, note: a side effect recorded in `notes`, which signals `in_note` and waits for `wait`
    on its first call), and a maker of agents with those tools and a scripted model."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    @function_tool
    def note(text: str) -> str:
        """Note."""
        notes.append(text)
        if in_note is not None and len(notes) == 1:
            in_note.set()
            assert wait.wait(30)
        return "noted"

    def agent(*steps):
        return Agent(name="Payer", tools=[pay, note], model=ScriptedModel(list(steps)))

    def noting(call_id, answer):  # a resume's turns: the model is not asked for the paused turn again
        return agent([function_call("note", {"text": call_id}, call_id=call_id)], [assistant_message(answer)])

    return agent, noting


def test_a_worker_whose_journal_write_finds_the_journal_empty_again_stops_at_a_turn_taken_over_meanwhile(tmp_path):
    """The journal's compare and swap cannot tell "empty" from "empty again": a worker set aside finds the other
    run's turn gone, claims turn 2 (unmarked: it means to journal it) and is slow before its journal write; a
    take-over of the same pause takes that claim over, runs turn 2 and ends, emptying the journal. The slow
    worker's write over "empty" then succeeds, so it looks its claim up again, finds the turn completed and stops:
    it neither asks the model for turn 2 nor runs its tool a second time."""
    path, notes = str(tmp_path / "db"), []
    paused_claimed, taken, turn_claimed, closed = (threading.Event() for _ in range(4))

    class SetAside(SQLiteSession):
        def claim_call(self, run_id, call_id):
            won = super().claim_call(run_id, call_id)
            paused_claimed.set() if call_id.startswith("resume:") else None
            if call_id == "turn-2":
                turn_claimed.set()
                assert closed.wait(30)  # slow after its claim, before its journal write
            return won

        def add_items(self, *args, **kwargs):
            assert taken.wait(30)  # turn 1 is written once the take-over claimed its pause
            return super().add_items(*args, **kwargs)

    class TakingOver(SQLiteSession):
        def claim_call(self, run_id, call_id):
            won = super().claim_call(run_id, call_id)
            taken.set() if call_id.startswith("resume:") else None
            return won

        def write_journal(self, expected, entry):
            assert turn_claimed.wait(30)  # its first write comes once the other worker claimed turn 2
            replaced = super().write_journal(expected, entry)
            closed.set() if replaced and entry == "" else None
            return replaced

    agent, noting = paying_and_noting(notes)
    paused = Runner.run_sync(agent([function_call("pay", {"amount": 5}, call_id="c1")]), "pay 5",
                             session=SQLiteSession("s", path)).to_state()
    paused.approve(paused.get_interruptions()[0])
    working, taking = noting("c2a", "a"), noting("c2b", "b")
    resumed, taker = (RunState.from_json(who, paused.to_json()) for who in (working, taking))
    other, _, other_thread, _ = stuck_run(tmp_path)  # another run's turn in flight: the worker is set aside
    seen = []

    def work():
        try:
            seen.append(Runner.run_sync(working, resumed, session=SetAside("s", path)).final_output)
        except AlreadyResumedError as error:
            seen.append(error)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    assert paused_claimed.wait(30)
    other.release.set()
    other_thread.join(30)  # that turn ended: the journal is empty
    taker.take_over()
    assert Runner.run_sync(taking, taker, session=TakingOver("s", path)).final_output == "b"
    worker.join(30)
    assert isinstance(seen[0], AlreadyResumedError) and seen[0].outcome == "completed"
    assert notes == ["c2b"] and not working.model.calls
    history = SQLiteSession("s", path).get_items()
    assert [i["call_id"] for i in history if i.get("call_id", "").startswith("c2")] == ["c2b", "c2b"]
    assert not SQLiteSession("s", path).read_journal()


def test_a_first_resume_of_a_pause_a_take_over_already_wrote_stops_as_completed(tmp_path):
    """A take-over of a paused state no resume has claimed yet writes the paused turn and is in the next turn's tool
    when the plain resume of the same state (thought dead, only slow to start) claims the first pause, which no one
    held: the turn it resumes is written, so it stops ("completed") before it runs anything or asks the model."""
    path, notes, in_note, resumed_ended = str(tmp_path / "db"), [], threading.Event(), threading.Event()
    agent, noting = paying_and_noting(notes, in_note, resumed_ended)
    paused = Runner.run_sync(agent([function_call("pay", {"amount": 5}, call_id="c1")]), "pay 5",
                             session=SQLiteSession("s", path)).to_state()
    paused.approve(paused.get_interruptions()[0])
    taking, slow = noting("n-take", "done"), noting("n-slow", "x")
    taker, resumed = (RunState.from_json(who, paused.to_json()) for who in (taking, slow))
    taker.take_over()
    seen = []
    thread = threading.Thread(target=lambda: seen.append(Runner.run_sync(
        taking, taker, session=SQLiteSession("s", path)).final_output), daemon=True)
    thread.start()
    assert in_note.wait(30)  # the take-over wrote turn 1, asked the model for turn 2 and is in its tool
    try:
        with pytest.raises(AlreadyResumedError) as stopped:
            Runner.run_sync(slow, resumed, session=SQLiteSession("s", path))
    finally:
        resumed_ended.set()
        thread.join(30)
    assert stopped.value.outcome == "completed" and seen == ["done"]
    assert notes == ["n-take"] and not slow.model.calls


def test_a_worker_whose_own_entry_a_continue_replaced_stops_though_another_run_journals_now(tmp_path):
    """A worker slow in its model call looks dead: a continue takes its turn over, runs the turn's tool and ends.
    Another run's turn is in flight when the slow worker's call returns, so its journal write fails on that run's
    entry. Only a worker of its own run replaces its own entry (and that one may have taken its turn over), so it
    stops (`AlreadyResumedError`) rather than go on set aside: the turn's tool ran once, and the history holds it."""
    path, notes = str(tmp_path / "db"), []
    in_model, returns = threading.Event(), threading.Event()

    def worker(who):
        @function_tool
        def note(text: str) -> str:
            """Note."""
            notes.append(text)
            return "noted"

        def first(_):
            if who == "slow":
                in_model.set()
                assert returns.wait(30)
            return [function_call("note", {"text": who}, call_id=f"n-{who}")]

        return Agent(name="A", tools=[note], model=ScriptedModel([first, [assistant_message(f"done {who}")]]))

    seen = []

    def slow():
        try:
            seen.append(Runner.run_sync(worker("slow"), "go", session=SQLiteSession("s", path)).final_output)
        except AlreadyResumedError as error:
            seen.append(error)

    thread = threading.Thread(target=slow, daemon=True)
    thread.start()
    assert in_model.wait(30)
    assert Runner.run_sync(worker("continue"), [], session=SQLiteSession("s", path)).final_output == "done continue"
    other, _, other_thread, _ = stuck_run(tmp_path)  # another run's turn in flight
    try:
        returns.set()
        thread.join(30)
    finally:
        other.release.set()
        other_thread.join(30)
    assert notes == ["continue"]
    assert isinstance(seen[0], AlreadyResumedError) and seen[0].outcome is None
    history = SQLiteSession("s", path).get_items()
    assert [i["call_id"] for i in history if i.get("call_id", "").startswith("n-")] == ["n-continue", "n-continue"]


def test_the_question_about_a_call_that_may_have_happened_stays_journaled_until_its_resume_ends(tmp_path):
    """The continued run pauses to ask about c1, and that question stays in the session's journal (a crash while
    the person decides asks it again; new input is refused meanwhile). The resume that answers it ends the run in
    that same turn (the tool's output is the final output) and closes the entry: new input is accepted again."""
    stuck, session, thread, seen = stuck_run(tmp_path)
    try:
        agent = Agent(name="Payer", tools=[stuck.tool], model=ScriptedModel([]), tool_use_behavior="stop_on_first_tool")
        result = Runner.run_sync(agent, [], session=session)
        assert [i.call_id for i in result.interruptions] == ["c1"] and session.read_journal()
        with pytest.raises(UnfinishedTurnError):
            Runner.run_sync(agent, "something else", session=session)
        state = result.to_state()
        state.approve(state.get_interruptions()[0])
        assert Runner.run_sync(agent, state, session=session).final_output == "paid 5"
        assert not session.read_journal()
        follow = Agent(name="Payer", tools=[stuck.tool], model=ScriptedModel([[assistant_message("next")]]))
        assert Runner.run_sync(follow, "anything else?", session=session).final_output == "next"
    finally:
        stuck.release.set()
        thread.join(30)
    assert stuck.starts == ["c1", "c1"]


@pytest.mark.parametrize("ran", [True, False])
def test_a_pause_for_approval_after_a_call_ran_stays_journaled_until_its_resume_ends(tmp_path, ran):
    """`pay` ran, then the run paused to ask about `refund`: until a resume of that pause ends, what `pay` did is in
    no history but the paused state's. So the pause stays in the session's journal (the state returned may be lost
    with its process), new input is refused, and a continue with `[]` gives the same pause. A pause where no call
    ran yet leaves the session free: new input may go on without it."""
    paid = []

    @function_tool
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    @function_tool(needs_approval=True)
    def refund(amount: int) -> str:
        return f"refunded {amount}"

    calls = [function_call("refund", {"amount": 2}, call_id="c2")]
    calls = [function_call("pay", {"amount": 5}, call_id="c1")] + calls if ran else calls
    session = SQLiteSession("s", str(tmp_path / "db"))
    agent = Agent(name="Payer", tools=[pay, refund], model=ScriptedModel([calls, [assistant_message("done")]]))
    paused = Runner.run_sync(agent, "pay 5, refund 2", session=session)  # its state is never saved
    if not ran:
        assert not session.read_journal()
        assert Runner.run_sync(agent, "never mind", session=session).final_output == "done"
        return
    assert session.read_journal() and paid == [5]
    with pytest.raises(UnfinishedTurnError):
        Runner.run_sync(agent, "something else", session=session)
    result = Runner.run_sync(agent, [], session=session)
    assert [i.call_id for i in result.interruptions] == ["c2"] and session.read_journal()
    state = result.to_state()
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    assert paid == [5] and not session.read_journal()
    assert [i["call_id"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["c1", "c2"]
    assert paused.interruptions[0].call_id == "c2"


def test_a_pause_inside_an_agent_tool_whose_inner_call_ran_stays_journaled_until_its_resume_ends(tmp_path):
    """The agent tool's inner run paid, then paused to ask about a refund: the outer run pauses with it, and what the
    inner run did is only in the paused state, so that pause stays journaled as a pause after a call ran does."""
    paid = []

    @function_tool
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    refunded = []

    @function_tool(needs_approval=True)
    def refund(ctx: RunContextWrapper, amount: int) -> str:
        refunded.append(ctx.context)
        return f"refunded {amount}"

    inner = Agent(name="Clerk", tools=[pay, refund], model=ScriptedModel([
        [function_call("pay", {"amount": 5}, call_id="i1"), function_call("refund", {"amount": 2}, call_id="i2")],
        [assistant_message("clerk done")]]))
    outer = Agent(name="Desk", tools=[inner.as_tool("clerk", "Does the paperwork.")], model=ScriptedModel([
        [function_call("clerk", {"input": "pay 5, refund 2"}, call_id="c1")], [assistant_message("done")]]))
    session = SQLiteSession("s", str(tmp_path / "db"))
    Runner.run_sync(outer, "pay 5, refund 2", session=session, context={"user": "alice"})  # the state is lost
    assert session.read_journal() and paid == [5]
    result = Runner.run_sync(outer, [], session=session, context={"user": "alice"})
    state = result.to_state()
    assert [i.call_id for i in state.get_interruptions()] == ["i2"]
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(outer, state, session=session).final_output == "done"
    assert paid == [5] and not session.read_journal()
    assert refunded == [{"user": "alice"}]  # the continue's context reaches the inner run's paused call


def test_a_state_made_by_hand_given_with_a_session_holding_a_pause_is_refused_and_left_free(tmp_path):
    """It brings input of its own: it was taken for a continue (the journal's pause given back, its input dropped)
    and, holding the state it replaced, was never freed."""
    stuck, session, thread, seen = stuck_run(tmp_path)
    try:
        agent = Agent(name="Payer", tools=[stuck.tool], model=ScriptedModel([[assistant_message("hi")]]))
        mine = RunState(None, "a new question", agent, 10)
        for _ in range(2):  # refused each time: the first refusal left it free
            with pytest.raises(UnfinishedTurnError):
                Runner.run_sync(agent, mine, session=session)
        assert mine.running is None and not agent.model.calls
    finally:
        stuck.release.set()
        thread.join(30)


def test_a_streamed_continue_holds_the_state_it_continues(tmp_path):
    """A streamed run takes its own state; a continue replaces it with the journal's, which it must hold instead:
    else a second run could take that state while the stream runs it, and the stream's cancel never reached it."""
    stuck, session, thread, seen = stuck_run(tmp_path)
    try:
        agent = Agent(name="Payer", tools=[stuck.tool], model=ScriptedModel([]))
        result = Runner.run_streamed(agent, [], session=session)
        with pytest.raises(UserError, match="still going on"):
            Runner.run_sync(agent, result.to_state())

        async def read():
            return [event async for event in result.stream_events()]

        asyncio.run(read())
        assert [i.call_id for i in result.interruptions] == ["c1"] and result.to_state().running is None
    finally:
        stuck.release.set()
        thread.join(30)


def test_the_pause_a_continue_gives_and_the_state_the_run_returned_are_one_pause_one_resume_wins(tmp_path):
    """A continue gives the journaled pause again; resumed at once, that copy and the state the run returned were two
    claims: both went on, and the turn written was the one whose call found the other's running ("not run again:
    its result was not recorded", though it ran once and was recorded). One wins; the other runs nothing."""
    ran, inside, leave = [], threading.Event(), threading.Event()

    @function_tool
    def pay(amount: int) -> str:
        ran.append(("pay", amount))
        return "paid"

    @function_tool(needs_approval=True)
    def refund(amount: int) -> str:
        ran.append(("refund", amount))
        inside.set()
        leave.wait(30)
        return "refunded"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1"),
                            function_call("refund", {"amount": 2}, call_id="c2")], [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay, refund], model=model)
    session = SQLiteSession("s", str(tmp_path / "db"))
    returned = Runner.run_sync(agent, "pay 5, refund 2", session=session).to_state()
    again = Runner.run_sync(agent, [], session=session).to_state()
    for state in (returned, again):
        state.approve(state.get_interruptions()[0])
    first = threading.Thread(target=lambda: Runner.run_sync(agent, again, session=session))
    first.start()
    assert inside.wait(30)
    with pytest.raises(AlreadyResumedError):
        Runner.run_sync(agent, returned, session=session)
    leave.set()
    first.join(30)
    assert ran == [("pay", 5), ("refund", 2)] and not session.read_journal()
    assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["paid", "refunded"]


def test_an_idempotent_tools_call_runs_again_without_asking(tmp_path):
    stuck, session, thread, seen = stuck_run(tmp_path, idempotent=True)
    result, model = continued(session, stuck.tool)
    assert result.final_output == "continued" and result.interruptions == []
    assert stuck.starts == ["c1", "c1"] and len(set(stuck.keys)) == 1
    stuck.release.set()
    thread.join(30)


def test_a_call_whose_output_the_ledger_holds_is_asked_about_by_no_one_though_its_tool_needs_approval_now(tmp_path):
    """The worker that died ran c1 (its output recorded) and was stuck in c2. The continue runs with the tool's
    approval policy tightened since: the call that ran keeps its recorded output; no person is asked to approve
    (or could reject) what already happened. Only c2, which may have happened, waits for a person."""
    notes = []

    def note_tool(needs_approval):
        @function_tool(needs_approval=needs_approval)
        def note(text: str) -> str:
            """Note."""
            notes.append(text)
            return f"noted {text}"
        return note

    stuck, session = Stuck(), SQLiteSession("s", str(tmp_path / "db"))
    steps = [[function_call("note", {"text": "a"}, call_id="c1"), function_call("pay", {"amount": 5}, call_id="c2")],
             [assistant_message("first")]]
    dying = Agent(name="Payer", tools=[note_tool(False), stuck.tool], model=ScriptedModel(steps))
    seen = []

    def first():
        try:
            Runner.run_sync(dying, "note, then pay", session=session,
                            run_config=RunConfig(max_function_tool_concurrency=1))
        except Exception as error:  # noqa: BLE001 - the test looks at it
            seen.append(error)

    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    try:
        assert stuck.entered.wait(30) and notes == ["a"]  # c1 ran and recorded its output before c2 began
        model = ScriptedModel([[assistant_message("continued")]])
        agent = Agent(name="Payer", tools=[note_tool(True), stuck.tool], model=model)
        result = Runner.run_sync(agent, [], session=session)
        assert [i.call_id for i in result.interruptions] == ["c2"]
        state = result.to_state()
        state.approve(state.get_interruptions()[0])
        result = Runner.run_sync(agent, state, session=session)
        assert result.final_output == "continued" and notes == ["a"]
        assert outputs_sent(model.calls[0]) == {"c1": "noted a", "c2": "paid 5"}
    finally:
        stuck.release.set()
        thread.join(30)
    assert isinstance(seen[0], AlreadyResumedError)  # the stale worker stopped at its next journal write


def test_two_workers_continuing_at_once_one_wins(tmp_path):
    stuck, session, thread, seen = stuck_run(tmp_path, idempotent=True)
    outcomes, barrier = [], threading.Barrier(2)

    def worker():
        barrier.wait()
        try:
            outcomes.append(continued(session, stuck.tool)[0].final_output)
        except AlreadyResumedError:
            outcomes.append("refused")

    workers = [threading.Thread(target=worker) for _ in range(2)]
    [w.start() for w in workers]
    [w.join(30) for w in workers]
    assert sorted(outcomes) in (["continued", "refused"], ["continued", "continued"])
    # The winner ran it again (idempotent). A loser that read the journal before the winner's takeover ran
    # nothing; one that read it after saw the winner's entry in flight (a journal cannot tell a live worker from a
    # dead one), took it over and ran the idempotent call too, and the winner was refused at its next write. A
    # loser that came once the winner had finished (a slow machine) found no turn in flight: a run with no input.
    assert stuck.starts in (["c1", "c1"], ["c1", "c1", "c1"])
    stuck.release.set()
    thread.join(30)
    outputs = [i for i in session.get_items() if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["c1"]


def test_a_worker_stuck_in_its_model_call_whose_turn_another_continued_runs_nothing_when_it_wakes(tmp_path):
    """The stuck worker's turn was claimed and journaled before its model call; another worker continued that turn
    and finished the run. When the stuck model answers with a call, the stale worker's journal write finds the
    entry replaced: it stops there, before its call runs and before it claims or writes anything more."""
    from miniagents.context import Usage
    from miniagents.items import ModelResponse
    from miniagents.models.interface import Model

    paid, entered, release = [], threading.Event(), threading.Event()

    @function_tool
    def pay(amount: int) -> str:
        """Pay."""
        paid.append(amount)
        return f"paid {amount}"

    class Stalls(Model):
        """Blocks its first request until released, then asks to pay; answers after that."""

        def get_response(self, *args, **kwargs):
            if not entered.is_set():
                entered.set()
                release.wait(30)
                return ModelResponse(output=[function_call("pay", {"amount": 9}, call_id="c9")], usage=Usage())
            return ModelResponse(output=[assistant_message("stale")], usage=Usage())

    session, seen = SQLiteSession("s", str(tmp_path / "db")), []

    def stale():
        try:
            seen.append(Runner.run_sync(Agent(name="Payer", tools=[pay], model=Stalls()), "pay", session=session))
        except Exception as error:  # noqa: BLE001 - the test looks at it
            seen.append(error)

    thread = threading.Thread(target=stale, daemon=True)
    thread.start()
    assert entered.wait(30)
    result, model = continued(session, pay, "done")
    assert result.final_output == "done" and len(model.calls) == 1
    history = session.get_items()
    release.set()
    thread.join(30)
    assert isinstance(seen[0], AlreadyResumedError), seen
    assert paid == [] and session.get_items() == history and not session.read_journal()


@settings(max_examples=10, deadline=None)
@given(turns=st.integers(1, 3), stop_after=st.integers(0, 6))
def test_a_plain_run_writes_the_same_history_with_the_journal_as_without(tmp_path_factory, turns, stop_after):
    """The journal changes no result: a ledger-keeping session holds what a plain session (no ledger) holds."""
    def run(session):
        @function_tool
        def pay(amount: int) -> str:
            """Pay."""
            return f"paid {amount}"

        steps = [[function_call("pay", {"amount": t}, call_id=f"c{t}")] for t in range(turns)]
        agent = Agent(name="Payer", tools=[pay], model=ScriptedModel(steps + [[assistant_message("done")]]))
        try:
            return Runner.run_sync(agent, "go", session=session,
                                   max_turns=stop_after + 1 if stop_after < turns else 10).final_output
        except MaxTurnsExceeded:
            return "stopped"

    plain, kept = ListSession(), SQLiteSession("s", str(tmp_path_factory.mktemp("db") / "db"))
    assert run(plain) == run(kept)
    assert plain.items == kept.get_items() and not kept.read_journal()
