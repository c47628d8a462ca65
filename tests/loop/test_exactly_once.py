"""An approved call runs once, however a paused state is resumed (issue 9, items 1-4).

With a session that keeps the ledger (SQLiteSession, DBAPISession), a resumed turn's calls are claimed
atomically before they run and their outputs recorded as soon as they finish, keyed by the state's run id,
which every resume of the same JSON shares. The ledger is read by key, never through the history window.
"""
from __future__ import annotations

import json
import random
import threading

from hypothesis import HealthCheck, given, settings, strategies as st

from miniagents import Agent, RunState, Runner, SessionSettings, SQLiteSession, function_tool
from miniagents.items import drop_orphans
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.turn import NOT_RUN_AGAIN


def payer(steps, paid):
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel(steps)
    return Agent(name="Payer", tools=[pay], model=model), model


def paused_json(session, paid, amounts=(5, 7)):
    agent, model = payer([[function_call("pay", {"amount": a}, call_id=f"c{a}") for a in amounts]], paid)
    result = Runner.run_sync(agent, "pay them", session=session)
    assert {i.call_id for i in result.interruptions} == {f"c{a}" for a in amounts}
    return result.to_state().to_string()


def resume(text, paid, session, approve=None, answers=("done",), **kw):
    agent, model = payer([[assistant_message(a)] for a in answers], paid)
    state = RunState.from_string(agent, text)
    for item in state.get_interruptions():
        if approve is None or item.call_id in approve:
            state.approve(item)
    return Runner.run_sync(agent, state, session=session, **kw), model


def test_a_partial_approval_resumed_twice_runs_the_approved_call_once(tmp_path):
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid)
    first, _ = resume(text, paid, session, approve={"c5"})
    second, _ = resume(text, paid, session, approve={"c5"})
    assert paid == [5]
    assert [i.call_id for i in first.interruptions] == [i.call_id for i in second.interruptions] == ["c7"]
    third, model = resume(second.to_state().to_string(), paid, session)
    assert paid == [5, 7] and third.final_output == "done"
    outputs = {i["call_id"]: i["output"] for i in model.calls[0].input if i.get("type") == "function_call_output"}
    assert outputs == {"c5": "paid 5", "c7": "paid 7"}


def test_the_ledger_is_read_by_key_not_through_a_limited_history_window(tmp_path):
    for settings_ in (SessionSettings(limit=4), SessionSettings(limit_turns=1)):
        paid, session = [], SQLiteSession("s", str(tmp_path / f"db{settings_.limit}"), session_settings=settings_)
        text = paused_json(session, paid, amounts=(5,))
        resume(text, paid, session)
        for n in range(4):  # more turns push the paid call out of any window
            agent = Agent(name="Chat", model=ScriptedModel([[assistant_message(f"hi {n}")]]))
            Runner.run_sync(agent, f"hello {n}", session=session)
        again, model = resume(text, paid, session, answers=("again",))
        assert paid == [5] and again.final_output == "again"
        assert {i["call_id"]: i["output"] for i in model.calls[0].input
                if i.get("type") == "function_call_output"} == {"c5": "paid 5"}


def test_input_added_to_a_paused_state_reaches_the_session_once_however_often_it_is_resumed(tmp_path):
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    agent, _ = payer([], paid)
    state = RunState.from_string(agent, paused_json(session, paid, amounts=(5,)))
    state.add_input("and say thanks")
    text = state.to_string()
    resume(text, paid, session)
    resume(text, paid, session)
    added = [i for i in session.get_items() if i.get("content") == "and say thanks"]
    assert paid == [5] and len(added) == 1


def boss(paid, inner_steps, outer_steps):
    """An agent whose one tool is the Payer agent (as_tool): the approval waits inside the nested run."""
    inner, _ = payer(inner_steps, paid)
    return Agent(name="Boss", tools=[inner.as_tool("payer", "Pays.")], model=ScriptedModel(outer_steps))


def test_a_call_inside_an_agent_tool_runs_once_when_the_paused_state_is_resumed_twice(tmp_path):
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    agent = boss(paid, [[function_call("pay", {"amount": 5}, call_id="c5")]],
                 [[function_call("payer", {"input": "pay 5"}, call_id="o1")]])
    paused = Runner.run_sync(agent, "pay", session=session)
    assert [i.call_id for i in paused.interruptions] == ["c5"]
    text, finals = paused.to_state().to_string(), []
    for _ in range(2):  # the same paused state, approved and resumed twice
        agent = boss(paid, [[assistant_message("paid")]], [[assistant_message("done")]])
        state = RunState.from_string(agent, text)
        for item in state.get_interruptions():
            state.approve(item)
        finals.append(Runner.run_sync(agent, state, session=session).final_output)
    assert paid == [5] and finals == ["done", "done"]


def test_two_threads_resuming_the_same_json_run_the_call_once(tmp_path):
    paid, db = [], str(tmp_path / "db")
    text = paused_json(SQLiteSession("s", db), paid, amounts=(5,))
    start, results = threading.Barrier(2), []

    def worker():
        session = SQLiteSession("s", db)
        start.wait()
        results.append(resume(text, paid, session)[0])

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert paid == [5] and len(results) == 2
    outputs = sorted(i.raw_item["output"] for r in results for i in r.new_items if i.type == "tool_call_output_item")
    assert outputs in (["paid 5", "paid 5"], sorted(["paid 5", NOT_RUN_AGAIN]))
    history = SQLiteSession("s", db).get_items()
    assert drop_orphans(history) == list(history)
    assert sum(1 for i in history if i.get("type") == "function_call_output") == 1  # the turn was saved once


def test_call_ids_repeated_across_runs_of_one_session_never_answer_each_other(tmp_path):
    """Servers that number calls per response send `call_1` in every run."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    for amount in (1, 999):
        agent, model = payer([[function_call("pay", {"amount": amount}, call_id="call_1")],
                              [assistant_message(f"paid {amount}")]], paid)
        paused = Runner.run_sync(agent, f"pay {amount}", session=session)
        state = paused.to_state()
        state.approve(state.get_interruptions()[0])
        done = Runner.run_sync(agent, state, session=session)
        assert done.final_output == f"paid {amount}"
        sent = model.calls[1].input
        assert drop_orphans(sent) == sent
        assert [i["output"] for i in sent if i.get("type") == "function_call_output"][-1] == f"paid {amount}"
    assert paid == [1, 999]
    history = session.get_items()
    assert drop_orphans(history) == list(history)
    assert [i["content"] for i in history if i.get("role") == "user"] == ["pay 1", "pay 999"]


def test_repeated_call_ids_without_approval_keep_every_later_request_paired(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "db"))

    @function_tool
    def echo(text: str) -> str:
        return text

    for n in range(3):
        model = ScriptedModel([[function_call("echo", {"text": str(n)}, call_id="0")], [assistant_message("ok")]])
        Runner.run_sync(Agent(name="E", tools=[echo], model=model), f"say {n}", session=session)
        for call in model.calls:
            assert drop_orphans(call.input) == call.input
    history = session.get_items()
    assert drop_orphans(history) == list(history) and len(history) == 12


# --- Random interleavings: pause / approve some / reject some / resume (twice, concurrently, later, windowed) ----


ACTIONS = st.lists(st.tuples(st.sampled_from(["resume", "resume_twice", "resume_concurrently", "chat"]),
                             st.sets(st.sampled_from([1, 2, 3])), st.sets(st.sampled_from([1, 2, 3]))),
                   min_size=1, max_size=5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS, limit=st.sampled_from([None, SessionSettings(limit=3), SessionSettings(limit_turns=1)]),
       seed=st.integers(0, 2**16))
def test_no_interleaving_runs_an_approved_call_twice_or_sends_an_unpaired_history(tmp_path_factory, actions, limit,
                                                                                 seed):
    db = str(tmp_path_factory.mktemp("eo") / "db")
    paid, models = [], []

    def session():
        return SQLiteSession("s", db, session_settings=limit)

    texts = [paused_json(session(), paid, amounts=(1, 2, 3))]
    rng = random.Random(seed)
    for action, approve, reject in actions:
        if action == "chat":
            model = ScriptedModel([[assistant_message("hi")]])
            models.append(model)
            Runner.run_sync(Agent(name="Chat", model=model), "hello", session=session())
            continue
        text = rng.choice(texts)

        def one():
            agent, model = payer([[assistant_message("done")]], paid)
            models.append(model)
            state = RunState.from_string(agent, text)
            for item in state.get_interruptions():
                n = int(item.call_id[1:])
                if n in reject:
                    state.reject(item)
                elif n in approve:
                    state.approve(item)
            result = Runner.run_sync(agent, state, session=session())
            if result.interruptions:
                texts.append(result.to_state().to_string())

        runs = 2 if action != "resume" else 1
        if action == "resume_concurrently":
            threads = [threading.Thread(target=one) for _ in range(runs)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for _ in range(runs):
                one()
    assert len(paid) == len(set(paid)), f"an approved call ran twice: {paid}"
    for model in models:
        for call in model.calls:
            assert drop_orphans(call.input) == call.input, json.dumps(call.input)[:300]
    history = session().get_items(limit=10**6)
    assert drop_orphans(history) == list(history)
