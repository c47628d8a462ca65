"""Properties of the loop over generated whole runs (tests/strategies.py): pairing, exactly-once execution,
approval, pause/resume equivalence, streaming equivalence, sessions, and the context never reaching the model.

Each test plays generated conversations through the public API and checks one promise of the README on
everything an observer sees. The example count comes from the hypothesis profile (tests/conftest.py):
`--hypothesis-profile=long` plays 2,000 conversations per property.

The last four properties pin what issue 9 (items 1-4) fixed: exactly-once across a double resume, windowed
sessions, concurrent resumes, and call ids repeated across the runs of one session. Each carries the smallest
counterexample hypothesis found on the code before the fix as an `@example`.
"""
import json
import threading

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from miniagents.errors import AlreadyResumedError
from miniagents import Agent, RunContextWrapper, Runner, RunState, SessionSettings, SQLiteSession, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import json_values
from strategies import (PLAIN_DECISIONS, SECRET, database_file, final_output, play, run_items, scenarios,
                        transcript_view)

HANDOFF_OUTPUT_PREFIX = '{"assistant": '


# ----------------------------------------------------------------------------- observers


def assert_well_paired(items, where):
    """Every function call has exactly one output after it, and the outputs come in the calls' order
    (a handoff's own output comes after the turn's tool outputs, so it is left out of the order)."""
    calls, answered, order = [], set(), []
    for item in items:
        if item.get("type") == "function_call":
            assert item["call_id"] not in calls, f"{where}: call {item['call_id']} sent twice"
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            call_id = item["call_id"]
            assert call_id in calls, f"{where}: output for {call_id} with no call before it"
            assert call_id not in answered, f"{where}: two outputs for {call_id}"
            answered.add(call_id)
            if not str(item.get("output", "")).startswith(HANDOFF_OUTPUT_PREFIX):
                order.append(call_id)
    assert set(calls) == answered, f"{where}: calls without an output: {sorted(set(calls) - answered)}"
    in_call_order = [c for c in calls if c in order]
    assert order == in_call_order, f"{where}: outputs {order} are not in call order {in_call_order}"


def responses_played(scenario, played):
    """(response, tools offered) for every model call that was made, in order."""
    flat = [r for run in scenario.runs for r in run]
    return [(flat[k], {t["name"] for t in request.tools}) for k, request in enumerate(played.requests)]


def tool_runs_key(runs):
    return sorted(json.dumps(r, sort_keys=True) for r in runs)


# ----------------------------------------------------------------------------- the properties


@given(scenarios())
def test_every_call_sent_to_a_model_has_exactly_one_output_after_it_in_call_order(scenario):
    played = play(scenario)
    for n, request in enumerate(played.requests):
        assert_well_paired(request.input, f"model request {n}")


@given(scenarios())
def test_a_run_goes_on_while_the_model_calls_tools_and_ends_with_its_last_message(scenario):
    played = play(scenario)
    expected_calls = 0
    for run, outcome in zip(scenario.runs, played.outcomes):
        if isinstance(outcome, Exception):  # MaxTurnsExceeded: exactly max_turns model calls in this run
            assert scenario.max_turns is not None and scenario.max_turns < len(run)
            expected_calls += scenario.max_turns
            continue
        expected_calls += len(run)  # every response but the last has calls (unknown tools and handoffs too)
        last = run[-1].message
        assert outcome.final_output == (last if last is not None else "")
    assert len(played.requests) == expected_calls


@given(scenarios())
def test_tools_run_once_with_valid_arguments_and_never_before_approval(scenario):
    played = play(scenario)
    assert played.bad_runs == [], "a tool ran with arguments its signature does not allow"
    assert played.approved_before_run == [], "a tool that needs approval ran before it was approved"
    ran = [call_id for _, call_id, _ in played.tool_runs]
    assert len(ran) == len(set(ran)), f"a call ran twice: {ran}"
    rejected_for_good = {tool for _, tool, code in played.decided if code == "always_reject"}
    approved_for_good = {tool for _, tool, code in played.decided if code == "always_approve"}
    decision = {call_id: code for call_id, _, code in played.decided}
    must_run, may_run = set(), set()
    for response, offered in responses_played(scenario, played):
        seen = set()
        for call in response.calls:
            if call.call_id in seen:
                continue  # a repeated id within one response is the same call
            seen.add(call.call_id)
            if call.name not in offered or not call.valid:
                continue  # unknown tool, a handoff, or arguments the tool never sees
            if call.name in rejected_for_good:  # an always_reject answers every later call of its tool, even
                may_run.add(call.call_id)       # one its policy would not ask about (as upstream does)
            elif not scenario.needs_approval(call.name, json.loads(call.arguments)):
                must_run.add(call.call_id)
            elif decision.get(call.call_id) == "approve":
                must_run.add(call.call_id)
            elif call.name in approved_for_good or decision.get(call.call_id) == "always_approve":
                may_run.add(call.call_id)  # an always_approve of the same tool may have ruled first
    assert must_run <= set(ran), f"calls that should have run did not: {sorted(must_run - set(ran))}"
    unexpected = sorted(set(ran) - must_run - may_run)
    assert unexpected == [], f"calls that should not have run did: {unexpected}"


@given(scenarios(max_runs=1, decisions=PLAIN_DECISIONS, travel=("json_then_decide", "decide_then_json")))
def test_pausing_through_json_and_resuming_equals_deciding_the_same_approvals_up_front(scenario):
    paused = play(scenario)
    wrapper = RunContextWrapper(context={"user": "ann", "secret": SECRET})
    for item, code in paused.approval_items:
        if code == "approve":
            wrapper.approve_tool(item)
        else:
            wrapper.reject_tool(item, rejection_message=f"no {item.call_id}" if code == "reject_message" else None)
    upfront = play(scenario, context=wrapper)
    assert upfront.paused == 0
    assert [transcript_view(run_items(o)) for o in upfront.outcomes] == \
        [transcript_view(run_items(o)) for o in paused.outcomes]
    assert [final_output(o) for o in upfront.outcomes] == [final_output(o) for o in paused.outcomes]
    assert [r.input for r in upfront.requests] == [r.input for r in paused.requests]
    assert tool_runs_key(upfront.tool_runs) == tool_runs_key(paused.tool_runs)
    assert upfront.session_items == paused.session_items


@given(scenarios())
def test_a_streamed_run_gives_the_same_events_items_output_and_session_as_a_plain_run(scenario):
    plain, streamed = play(scenario), play(scenario, streamed=True)
    assert [transcript_view(run_items(o)) for o in streamed.outcomes] == \
        [transcript_view(run_items(o)) for o in plain.outcomes]
    assert [final_output(o) for o in streamed.outcomes] == [final_output(o) for o in plain.outcomes]
    assert streamed.session_items == plain.session_items
    assert [r.input for r in streamed.requests] == [r.input for r in plain.requests]
    assert tool_runs_key(streamed.tool_runs) == tool_runs_key(plain.tool_runs)
    assert all(r.streamed for r in streamed.requests)
    for events, outcome in zip(streamed.events, streamed.outcomes):
        announced = [e.item.raw_item for e in events if e.type == "run_item_stream_event"]
        assert transcript_view(announced) == transcript_view(run_items(outcome))
    completed = [e for run in streamed.events for e in run
                 if e.type == "raw_response_event" and e.data.get("type") == "response.completed"]
    assert len(completed) == len(streamed.requests)


@given(scenarios(session=True))
def test_the_session_holds_exactly_the_runs_items_well_paired(scenario):
    played = play(scenario)
    expected = []
    for number, outcome in enumerate(played.outcomes):
        expected += [{"content": f"request {number}", "role": "user"}] + run_items(outcome)
    assert transcript_view(played.session_items) == transcript_view(expected)
    assert_well_paired(played.session_items, "session")


@given(scenarios())
def test_the_run_context_never_appears_in_a_model_request(scenario):
    context = {"user": "ann", "secret": SECRET}
    played = play(scenario, context=context)
    for request in played.requests:
        assert SECRET not in repr(request)
        sent = [request.input, request.tools, request.handoffs, request.output_schema, request.system_instructions]
        assert SECRET not in json.dumps(sent, default=repr)
        assert not any(v is context or isinstance(v, RunContextWrapper) for v in json_values(sent))


# ----------------------------------------------------------------------------- known bugs (issue 9, items 1-4)


class PayDesk:
    """`pay(amount)` needs approval and logs each run; one ScriptedModel answers every request."""

    def __init__(self, barrier=None, needs_approval=True):
        self.runs, self.model, self.barrier = [], ScriptedModel(), barrier
        self.lock = threading.Lock()

        @function_tool(needs_approval=needs_approval)
        def pay(ctx: RunContextWrapper, amount: int) -> str:
            """Pay an amount."""
            with self.lock:
                self.runs.append((ctx.tool_call_id, amount))
            if self.barrier is not None:  # hold the first resume inside the tool until the other arrives
                try:
                    self.barrier.wait(1.0)
                except threading.BrokenBarrierError:
                    pass
            return f"paid {amount}"

        self.agent = Agent("Desk", instructions="Pay what is asked.", tools=[pay], model=self.model)

    def pay_calls(self, amounts, ids=None):
        ids = ids or [f"p{n}" for n in range(len(amounts))]
        return [function_call("pay", {"amount": a}, call_id=i) for a, i in zip(amounts, ids)]

    def ran_twice(self):
        ids = [call_id for call_id, _ in self.runs]
        return sorted({i for i in ids if ids.count(i) > 1})


def decide_all(state, decisions):
    for item, code in zip(state.get_interruptions(), decisions):
        if code == "approve":
            state.approve(item)
        elif code == "reject":
            state.reject(item)


@given(decisions=st.lists(st.sampled_from(["approve", "reject", "later"]), min_size=1, max_size=4),
       reopen=st.booleans())
@example(decisions=["approve", "later"], reopen=False)
def test_resuming_one_json_twice_with_a_session_never_runs_an_approved_call_twice(decisions, reopen):
    with database_file() as db:
        desk = PayDesk()
        desk.model.enqueue(desk.pay_calls([5 + n for n in range(len(decisions))]))
        desk.model.extend([[assistant_message("done")]] * 4)
        session = SQLiteSession("s", db)
        result = Runner.run_sync(desk.agent, "pay them", session=session)
        state = result.to_state()
        decide_all(state, decisions)
        text, resumed_twice = state.to_string(), False
        for _ in range(2):
            if reopen:
                session.close()
                session = SQLiteSession("s", db)
            try:
                Runner.run_sync(desk.agent, RunState.from_string(desk.agent, text), session=session)
            except AlreadyResumedError:  # the second resume of one pause is refused before it runs anything
                resumed_twice = True
        session.close()
        assert desk.ran_twice() == [] and resumed_twice


@given(window=st.one_of(st.tuples(st.just("limit"), st.integers(1, 6)),
                        st.tuples(st.just("limit_turns"), st.integers(1, 2))),
       later_runs=st.integers(1, 3))
@example(window=("limit", 1), later_runs=1)
def test_an_old_json_resumed_after_more_turns_of_a_windowed_session_never_runs_again(window, later_runs):
    with database_file() as db:
        desk = PayDesk()
        desk.model.enqueue(desk.pay_calls([5]))
        desk.model.extend([[assistant_message("done")]] * (later_runs + 3))
        settings = SessionSettings(**{window[0]: window[1]})
        session = SQLiteSession("s", db, session_settings=settings)
        state = Runner.run_sync(desk.agent, "pay", session=session).to_state()
        decide_all(state, ["approve"])
        text = state.to_string()
        Runner.run_sync(desk.agent, RunState.from_string(desk.agent, text), session=session)
        for n in range(later_runs):
            Runner.run_sync(desk.agent, f"and then {n}", session=session)
        with pytest.raises(AlreadyResumedError):  # the ledger is read by key, whatever the window shows
            Runner.run_sync(desk.agent, RunState.from_string(desk.agent, text), session=session)
        session.close()
        assert desk.ran_twice() == []


@given(threads=st.integers(2, 3), shared_session=st.booleans())
@example(threads=2, shared_session=False)
def test_concurrent_resumes_of_one_json_run_an_approved_call_once(threads, shared_session):
    with database_file() as db:
        desk = PayDesk(barrier=threading.Barrier(2))
        desk.model.enqueue(desk.pay_calls([5]))
        desk.model.extend([[assistant_message("done")]] * threads)
        first = SQLiteSession("s", db)
        state = Runner.run_sync(desk.agent, "pay", session=first).to_state()
        decide_all(state, ["approve"])
        text = state.to_string()
        sessions = [first if shared_session else SQLiteSession("s", db) for _ in range(threads)]

        def resume(session):
            try:
                Runner.run_sync(desk.agent, RunState.from_string(desk.agent, text), session=session)
            except Exception:  # a resume may be refused; it must never run the call again
                pass

        workers = [threading.Thread(target=resume, args=(s,)) for s in sessions]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        for s in set(sessions) | {first}:
            s.close()
        assert desk.ran_twice() == []


@given(amounts=st.lists(st.integers(1, 999), min_size=2, max_size=3), approval=st.booleans(),
       call_id=st.sampled_from(["call_1", "0"]))
@example(amounts=[1, 999], approval=True, call_id="call_1")
def test_call_ids_repeated_across_runs_of_one_session_keep_each_call_with_its_own_output(amounts, approval,
                                                                                            call_id):
    with database_file() as db:
        desk = PayDesk(needs_approval=approval)
        session = SQLiteSession("s", db)
        for n, amount in enumerate(amounts):
            desk.model.extend([desk.pay_calls([amount], ids=[call_id]), [assistant_message(f"paid {amount}")]])
            result = Runner.run_sync(desk.agent, f"pay {amount}", session=session)
            while result.interruptions:
                state = result.to_state()
                decide_all(state, ["approve"] * len(result.interruptions))
                result = Runner.run_sync(desk.agent, state, session=session)
        assert sorted(a for _, a in desk.runs) == sorted(amounts), "every approved payment runs once"
        for n, request in enumerate(desk.model.calls):
            assert_well_paired(request.input, f"model request {n}")
        outputs = [i["output"] for i in desk.model.calls[-1].input if i.get("type") == "function_call_output"]
        assert outputs[-1] == f"paid {amounts[-1]}", "the model sees this run's output, not an older one"
        assert_well_paired(session.get_items(), "session")
        session.close()
