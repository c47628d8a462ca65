"""An approved call runs once, and the session's history says truly what happened, however a paused state is
resumed (issues 9 and 20).

With a session that keeps the ledger (SQLiteSession, DBAPISession), a resume first claims its pause of the turn
(one winner: another resume of the same pause raises `AlreadyResumedError` before it runs, writes or calls the
model); each call is claimed just before it starts and its output recorded as soon as it finishes, keyed by the
state's run id, which every resume of the same JSON shares. The ledger is read by key, never through the history
window.
"""
from __future__ import annotations

import json
import random
import threading

from hypothesis import HealthCheck, given, settings, strategies as st

import pytest

from miniagents import Agent, RunConfig, RunState, Runner, SessionSettings, SQLiteSession, UserError, function_tool
from miniagents.errors import AlreadyResumedError, UnfinishedTurnError
from miniagents.items import drop_orphans
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.ledger import NEVER_STARTED, NOT_RUN_AGAIN
from support import ListSession, make_agent, outputs_sent


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


def resume(text, paid, session, approve=None, answers=("done",), take_over=False, **kw):
    agent, model = payer([[assistant_message(a)] for a in answers], paid)
    state = RunState.from_string(agent, text)
    if take_over:
        state.take_over()
    for item in state.get_interruptions():
        if approve is None or item.call_id in approve:
            state.approve(item)
    return Runner.run_sync(agent, state, session=session, **kw), model


def test_a_partial_approval_resumed_twice_runs_the_approved_call_once(tmp_path):
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid)
    first, _ = resume(text, paid, session, approve={"c5"})
    with pytest.raises(AlreadyResumedError) as refused:
        resume(text, paid, session, approve={"c5"})
    assert paid == [5] and refused.value.outcome == "paused again"
    assert [i.call_id for i in first.interruptions] == ["c7"]
    third, model = resume(first.to_state().to_string(), paid, session)
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
        with pytest.raises(AlreadyResumedError):
            resume(text, paid, session, answers=("again",))
        assert paid == [5]


def resumed_once_with_added_input(tmp_path):
    """A pause on pay(5) with "and say thanks" added to its state, resumed once: (its JSON, paid, session)."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    agent, _ = payer([], paid)
    state = RunState.from_string(agent, paused_json(session, paid, amounts=(5,)))
    state.add_input("and say thanks")
    text = state.to_string()
    resume(text, paid, session)
    return text, paid, session


def test_input_added_to_a_paused_state_reaches_the_session_once_however_often_it_is_resumed(tmp_path):
    text, paid, session = resumed_once_with_added_input(tmp_path)
    with pytest.raises(AlreadyResumedError):
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
        try:
            finals.append(Runner.run_sync(agent, state, session=session).final_output)
        except AlreadyResumedError:
            finals.append("refused")
    assert paid == [5] and finals == ["done", "refused"]


def test_two_threads_resuming_the_same_json_run_the_call_once(tmp_path):
    paid, db = [], str(tmp_path / "db")
    text = paused_json(SQLiteSession("s", db), paid, amounts=(5,))
    start, results = threading.Barrier(2), []

    def worker():
        session = SQLiteSession("s", db)
        start.wait()
        try:
            results.append(resume(text, paid, session)[0].final_output)
        except AlreadyResumedError:
            results.append("refused")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert paid == [5] and sorted(results) == ["done", "refused"]
    assert_one_true_history(SQLiteSession("s", db).get_items(), {"c5": "paid 5"}, answers=1)


def assert_one_true_history(history: list, outputs: dict, answers: int) -> None:
    """The session holds one consistent conversation: paired, each call's one real output, `answers` answers."""
    assert drop_orphans(history) == list(history)
    found = [(i["call_id"], i["output"]) for i in history if i.get("type") == "function_call_output"]
    assert sorted(found) == sorted(outputs.items()), found
    assert NOT_RUN_AGAIN not in json.dumps(history)
    assert sum(1 for i in history if i.get("role") == "assistant" and i.get("type", "message") == "message") == answers


# --- Issue 20: a cancel never loses an approved call; concurrent resumes store one true history ---------------


def test_an_approved_call_a_cancel_kept_from_starting_still_runs_on_the_next_resume(tmp_path):
    """Two approved calls, one at a time, resumed as a streamed run and cancelled while the first runs: the second
    never started, so it was never claimed; the state through JSON resumes and runs it (it once got "not run
    again")."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid, amounts=(1, 2))
    started, release = threading.Event(), threading.Event()

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        started.set()
        release.wait(30)
        return f"paid {amount}"

    agent = Agent(name="Payer", tools=[pay], model=ScriptedModel([]))
    state = RunState.from_string(agent, text)
    for item in state.get_interruptions():
        state.approve(item)
    result = Runner.run_streamed(agent, state, session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    threading.Thread(target=lambda: (started.wait(30), result.cancel(), release.set())).start()

    async def drain():
        async for _ in result.stream_events():
            pass

    import asyncio

    asyncio.run(drain())
    assert paid == [1]
    again, model = resume(result.to_state().to_string(), paid, session)
    assert paid == [1, 2] and again.final_output == "done"
    assert {i["call_id"]: i["output"] for i in model.calls[0].input if i.get("type") == "function_call_output"} \
        == {"c1": "paid 1", "c2": "paid 2"}
    assert_one_true_history(session.get_items(), {"c1": "paid 1", "c2": "paid 2"}, answers=1)


@pytest.fixture(params=["sqlite", "dbapi-sqlite3", "psycopg", "psycopg2"])
def open_backend(request, tmp_path):
    """A factory of session objects on one store: SQLiteSession, DBAPISession on sqlite3, and on PostgreSQL."""
    from session_backends import POSTGRES_KINDS, driver_or_skip, open_session

    kind = request.param
    if kind in POSTGRES_KINDS:
        driver = driver_or_skip(kind)
        spec = {"kind": kind, "dsn": request.getfixturevalue("postgres_server").schema_dsn(driver)}
    else:
        spec = {"kind": kind, "path": str(tmp_path / "sessions.db")}
    opened = []

    def open_one():
        opened.append(open_session(spec, "s"))
        return opened[-1]

    yield open_one
    for session in opened:
        session.close()


@pytest.mark.parametrize("order", ["one after the other", "at once"])
def test_four_resumes_of_one_json_store_one_true_history(open_backend, order):
    """Four resumes of one approved JSON against one session (a retried webhook; four workers at once): one runs
    the turn, the others raise AlreadyResumedError having run, written and asked nothing; the session holds the
    call's one real output and one answer (it once kept a loser's "not run again" and one answer per resume)."""
    paid = []
    text = paused_json(open_backend(), paid, amounts=(5,))
    sessions, outcomes = [open_backend() for _ in range(4)], []
    start = threading.Barrier(4)

    def worker(session):
        if order == "at once":
            start.wait()
        try:
            outcomes.append(resume(text, paid, session)[0].final_output)
        except AlreadyResumedError as refused:
            outcomes.append(refused.outcome or "running")

    if order == "at once":
        threads = [threading.Thread(target=worker, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for session in sessions:
            worker(session)
    assert paid == [5] and outcomes.count("done") == 1 and len(outcomes) == 4
    if order == "one after the other":
        assert outcomes == ["done", "completed", "completed", "completed"]
    assert_one_true_history(open_backend().get_items(), {"c5": "paid 5"}, answers=1)


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
            try:
                Runner.run_sync(Agent(name="Chat", model=model), "hello", session=session())
            except UnfinishedTurnError:  # a pause after some of its calls were decided stays until it is resumed
                assert session().read_journal() and not model.calls
                continue
            models.append(model)
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
            try:
                result = Runner.run_sync(agent, state, session=session())
            except AlreadyResumedError:  # another resume of this pause took it: nothing ran, nothing was written
                return
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
    assert NOT_RUN_AGAIN not in json.dumps(history)  # no output in the history is a loser's placeholder
    outputs = [i["call_id"] for i in history if i.get("type") == "function_call_output"]
    assert len(outputs) == len(set(outputs)), "a call has two outputs in the history"


# --- Taking over a pause whose resume stopped: what that resume did stays done -------------------------------


def test_a_resume_that_crashed_mid_call_can_be_taken_over_and_what_it_did_stays_done(tmp_path):
    """The first resume runs c5 (recorded), starts c7 and dies (Ctrl-C inside the tool stands for a crash): the
    pause stays claimed with no outcome. `take_over()` resumes it: c5 is not run again and the model gets its
    recorded output; c7, started and never recorded, is answered "not run again"."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid)

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        if amount == 7:
            raise KeyboardInterrupt  # the process dies mid-call
        return f"paid {amount}"

    agent = Agent(name="Payer", tools=[pay], model=ScriptedModel([]))
    state = RunState.from_string(agent, text)
    for item in state.get_interruptions():
        state.approve(item)
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, state, session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    assert paid == [5, 7]
    with pytest.raises(AlreadyResumedError) as refused:
        resume(text, paid, session)
    assert refused.value.outcome is None and "stopped before it finished" in str(refused.value)
    result, model = resume(text, paid, session, take_over=True)
    assert result.final_output == "done" and paid == [5, 7]  # nothing ran again
    assert outputs_sent(model.calls[0]) == {"c5": "paid 5", "c7": NOT_RUN_AGAIN}


class DiesAfterWriting(SQLiteSession):
    """A session whose process dies right after a resume wrote its turn, before it recorded "completed"."""

    def settle_call(self, run_id, call_id, output):
        if output == "completed":
            raise KeyboardInterrupt
        return super().settle_call(run_id, call_id, output)


@pytest.mark.parametrize("died_after_writing", [False, True])
def test_taking_over_a_resume_that_did_finish_is_refused_and_asks_no_model(tmp_path, died_after_writing):
    """take_over() on a pause whose resume in fact completed (it recorded "completed", or it wrote its turn and
    died before it could): refused with `AlreadyResumedError` outcome "completed" before the model is asked, so
    the session never holds two answers to one turn (issue 30)."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid, amounts=(5,))
    if died_after_writing:
        with pytest.raises(KeyboardInterrupt):
            resume(text, paid, DiesAfterWriting("s", str(tmp_path / "db")))
    else:
        resume(text, paid, session)
    before = session.get_items()
    with pytest.raises(AlreadyResumedError) as refused:
        resume(text, paid, session, answers=("again",), take_over=True)
    assert refused.value.outcome == "completed" and paid == [5]
    assert session.get_items() == before
    assert [i["call_id"] for i in before if i.get("type") == "function_call_output"] == ["c5"]


def test_a_take_over_of_a_resume_that_died_before_writing_still_proceeds(tmp_path):
    """The other side of the line: a resume that died before its turn's write is taken over, and the turn is
    written once."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    text = paused_json(session, paid, amounts=(5,))

    class DiesBeforeWriting(SQLiteSession):
        def add_items(self, items, *, once=None):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        resume(text, paid, DiesBeforeWriting("s", str(tmp_path / "db")))
    result, _ = resume(text, paid, session, take_over=True)
    assert result.final_output == "done" and paid == [5]
    assert [i["call_id"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["c5"]


def test_take_over_is_for_a_paused_state():
    agent, _ = payer([[assistant_message("hi")]], [])
    state = Runner.run_sync(agent, "hello").to_state()
    with pytest.raises(UserError, match="paused"):
        state.take_over()


def test_taking_over_an_agent_tools_pause_takes_over_its_inner_run_and_runs_nothing_twice(tmp_path):
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    agent = boss(paid, [[function_call("pay", {"amount": 5}, call_id="c5")]],
                 [[function_call("payer", {"input": "pay 5"}, call_id="o1")]])
    text = Runner.run_sync(agent, "pay", session=session).to_state().to_string()
    finals = []
    for take_over in (False, True):  # resumed, then taken over as if the first resume had stopped midway
        agent = boss(paid, [[assistant_message("paid")]], [[assistant_message("done")]])
        state = RunState.from_string(agent, text)
        if take_over:
            state.take_over()
        for item in state.get_interruptions():
            state.approve(item)
        try:
            finals.append(Runner.run_sync(agent, state, session=session).final_output)
        except AlreadyResumedError as refused:  # the first resume completed: taking it over asks no model again
            finals.append(refused.outcome)
    assert paid == [5] and finals == ["done", "completed"]  # the inner call was claimed in the caller's ledger


def test_taking_over_an_agent_tools_resume_that_died_mid_call_runs_none_of_its_inner_calls_again(tmp_path):
    """The resume dies inside the inner run: c5 ran and was recorded, c7 started and was not. Taking the pause over
    resumes the inner run with it, whose calls were claimed in the caller's ledger: neither runs again, and the
    inner model hears what happened to each."""
    paid, session = [], SQLiteSession("s", str(tmp_path / "db"))
    both = [[function_call("pay", {"amount": 5}, call_id="c5"), function_call("pay", {"amount": 7}, call_id="c7")]]
    text = Runner.run_sync(boss(paid, both, [[function_call("payer", {"input": "pay"}, call_id="o1")]]), "pay",
                           session=session).to_state().to_string()

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        if paid == [5, 7]:
            raise KeyboardInterrupt  # the process dies mid-call (the first time only)
        return f"paid {amount}"

    def approved(take_over=False):
        """The paused state, approved (and taken over): (the boss agent, its state, the inner model)."""
        inner = ScriptedModel([[assistant_message("paid")]])
        agent = Agent(name="Boss", model=ScriptedModel([[assistant_message("done")]]), tools=[
            Agent(name="Payer", tools=[pay], model=inner).as_tool("payer", "Pays.")])
        state = RunState.from_string(agent, text)
        if take_over:
            state.take_over()
        for item in state.get_interruptions():
            state.approve(item)
        return agent, state, inner

    one_at_a_time = RunConfig(max_function_tool_concurrency=1)
    agent, state, _ = approved()
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, state, session=session, run_config=one_at_a_time)
    agent, state, inner = approved(take_over=True)
    assert Runner.run_sync(agent, state, session=session, run_config=one_at_a_time).final_output == "done"
    assert paid == [5, 7]  # nothing ran again
    assert outputs_sent(inner.calls[0]) == {"c5": "paid 5", "c7": NOT_RUN_AGAIN}


# --- A turn that fails after some of its calls ran ---------------------------------------------------------


def failing_batch(count, failing, how, ran):
    """An agent whose model asks for `count` calls at once; call `failing` stops the run: before it starts (its
    input guardrail's tripwire), or once it has started (its own error, as `failure_error_function=None` asks, or
    its output guardrail's tripwire after it ran); the others record that they ran."""
    from miniagents import ToolGuardrailFunctionOutput, tool_input_guardrail, tool_output_guardrail

    def verdict(data):
        return ToolGuardrailFunctionOutput.raise_exception("stop") if data.context.tool_name == "stop" else \
            ToolGuardrailFunctionOutput.allow()

    guards = {"tripwire": {"tool_input_guardrails": [tool_input_guardrail(verdict)]},
              "output tripwire": {"tool_output_guardrails": [tool_output_guardrail(verdict)]},
              "raises": {"failure_error_function": None}}[how]

    @function_tool(**guards)
    def work(n: int) -> str:
        ran.append(n)
        return f"did {n}"

    @function_tool(**guards)
    def stop(n: int) -> str:
        ran.append(n)
        if how == "raises":
            raise RuntimeError("the host is gone")
        return f"did {n}"

    calls = [function_call("stop" if n == failing else "work", {"n": n}, call_id=f"c{n}") for n in range(count)]
    model = ScriptedModel([[assistant_message("on it"), *calls]] + [[assistant_message("done")]] * 2)
    return Agent(name="Worker", tools=[work, stop], model=model), model


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 4), data=st.data(), how=st.sampled_from(["tripwire", "output tripwire", "raises"]),
       concurrency=st.sampled_from([1, 4]), with_session=st.booleans(), streamed=st.booleans())
def test_a_turn_that_fails_after_calls_ran_keeps_them_and_only_them_in_the_state_and_the_session(
        tmp_path_factory, count, data, how, concurrency, with_session, streamed):
    """What started is kept (what the stopping call did is unknown: the history says it may have happened); what
    never started is dropped; nothing runs again when the model is asked again."""
    import asyncio

    from miniagents.turn import STOPPED_MIDWAY

    failing = data.draw(st.integers(0, count - 1))
    ran = []
    agent, model = failing_batch(count, failing, how, ran)
    session = SQLiteSession("s", str(tmp_path_factory.mktemp("db") / "db")) if with_session else None
    config = RunConfig(max_function_tool_concurrency=concurrency)
    if streamed:
        result, heard = Runner.run_streamed(agent, "work", session=session, run_config=config), {}

        async def read():
            async for event in result.stream_events():
                if getattr(event, "name", None) == "tool_output":
                    heard[event.item.raw_item["call_id"]] = event.item.raw_item["output"]

        with pytest.raises(Exception) as caught:
            asyncio.run(read())
        state = result.to_state()
    else:
        with pytest.raises(Exception) as caught:
            Runner.run_sync(agent, "work", session=session, run_config=config)
        state = None
    assert "tripwire" in str(caught.value) if "tripwire" in how else "host is gone" in str(caught.value)
    started = set(range(count)) if concurrency > 1 else set(range(failing + 1))
    assert set(ran) == (started - {failing} if how == "tripwire" else started)
    kept = {f"c{n}": f"did {n}" for n in ran}
    if how != "tripwire":
        kept[f"c{failing}"] = STOPPED_MIDWAY
    if streamed or how != "raises":  # the run's items: the state it leaves, the error's run_data (the kernel's)
        new_items = state.generated_items if streamed else caught.value.run_data.new_items
        assert {i.raw_item["call_id"]: i.raw_item["output"] for i in new_items
                if i.type == "tool_call_output_item"} == kept
        assert {i.raw_item["call_id"] for i in new_items if i.type == "tool_call_item"} == set(kept)
        assert not streamed or heard == kept  # a stream's reader hears the outputs the turn keeps
    if session is not None:  # a turn where nothing ran leaves no trace, as a failed model call leaves none
        history = session.get_items()
        assert [i for i in history if i.get("role") == "user"] == ([{"content": "work", "role": "user"}] if kept
                                                                   else [])
        assert [i["call_id"] for i in history if i.get("type") == "function_call"] == sorted(kept)
        assert {i["call_id"]: i["output"] for i in history if i.get("type") == "function_call_output"} == kept
        assert drop_orphans(history) == history
        Runner.run_sync(agent, "next", session=session)  # the session takes new input: no turn left in flight
    if state is not None:  # the state the stream leaves resumes after the kept calls: none of them runs again
        Runner.run_sync(agent, RunState.from_string(agent, state.to_string()), run_config=config)
    assert len(ran) == len(set(ran))


@pytest.mark.parametrize("how", ["raises", "tripwire"])
def test_a_failed_turn_the_session_cannot_take_stays_journaled_and_its_calls_run_once(tmp_path, monkeypatch, how):
    """The ledger records what stopped the run as the call's outcome (it may have happened, or its input guardrail
    kept it from running): a continue is told it, never asks again, and runs nothing more of the turn."""
    from miniagents.errors import SessionStoreError
    from miniagents.turn import HALTED, STOPPED_MIDWAY

    ran = []
    agent, model = failing_batch(3, 1, how, ran)
    session = SQLiteSession("s", str(tmp_path / "db"))

    def full_disk(items, once=None):
        raise SessionStoreError("the disk is full")

    monkeypatch.setattr(session, "add_items", full_disk)
    with pytest.raises(SessionStoreError):
        Runner.run_sync(agent, "work", session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    monkeypatch.undo()
    assert ran == ([0, 1] if how == "raises" else [0]) and session.get_items() == []
    result = Runner.run_sync(agent, [], session=session)  # continues the turn left journaled
    assert result.final_output == "done" and not result.interruptions
    assert ran == ([0, 1] if how == "raises" else [0])  # c2, after the call that stopped the run, never starts
    history = session.get_items()
    assert {i["call_id"]: i["output"] for i in history if i.get("type") == "function_call_output"} == {
        "c0": "did 0", "c1": STOPPED_MIDWAY if how == "raises" else HALTED, "c2": NEVER_STARTED}


def cancel_when(result, started):
    """Read a streamed run's events, cancelling it once `started` is set (from the run's thread)."""
    import asyncio

    async def read_and_cancel():
        async def cancel():
            await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
            result.cancel()
        canceller = asyncio.ensure_future(cancel())
        async for _ in result.stream_events():
            pass
        await canceller

    asyncio.run(read_and_cancel())


def calls_and_outputs(history):
    return [(i["type"], i["call_id"]) for i in history if i.get("type") in ("function_call", "function_call_output")]


def counted(ran):
    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        return f"paid {n}"
    return pay


@pytest.mark.parametrize("breaks", ["on_handoff", "input_filter"])
def test_a_handoff_that_fails_after_its_turns_calls_ran_keeps_them_and_drops_the_handoff(tmp_path, breaks):
    from miniagents import handoff

    def broken(context_or_data):
        raise RuntimeError("the CRM is down")

    ran = []
    other = Agent(name="Other", model=ScriptedModel([[assistant_message("hi")]]))
    transfer = handoff(other, on_handoff=broken) if breaks == "on_handoff" else handoff(other, input_filter=broken)
    model = ScriptedModel([[function_call("pay", {"n": 5}, call_id="c1"), function_call("transfer_to_other", "{}",
                                                                                        call_id="h1")]])
    agent = Agent(name="Main", tools=[counted(ran)], handoffs=[transfer], model=model)
    session = SQLiteSession("s", str(tmp_path / "db"))
    with pytest.raises(RuntimeError, match="CRM is down"):
        Runner.run_sync(agent, "go", session=session)
    assert ran == [5] and session.read_journal() == ""
    assert calls_and_outputs(session.get_items()) == [("function_call", "c1"), ("function_call_output", "c1")]


def test_a_cancel_while_an_async_tool_use_behavior_waits_keeps_the_calls_that_ran(tmp_path):
    import asyncio

    from miniagents import ToolsToFinalOutputResult

    ran, waiting = [], threading.Event()

    async def behavior(ctx, results):
        waiting.set()
        await asyncio.sleep(30)
        return ToolsToFinalOutputResult(False, None)

    model = ScriptedModel([[function_call("pay", {"n": 5}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Main", tools=[counted(ran)], model=model, tool_use_behavior=behavior)
    session = SQLiteSession("s", str(tmp_path / "db"))
    result = Runner.run_streamed(agent, "go", session=session)

    cancel_when(result, waiting)
    state = result.to_state()
    assert [i.type for i in state.generated_items] == ["tool_call_item", "tool_call_output_item"]
    assert calls_and_outputs(session.get_items()) == [("function_call", "c1"), ("function_call_output", "c1")]
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and ran == [5]


@pytest.mark.parametrize("with_session", [False, True])
def test_a_cancel_while_a_calls_output_is_checked_never_runs_it_again(tmp_path, with_session):
    import asyncio

    from miniagents import ToolGuardrailFunctionOutput, tool_output_guardrail
    from miniagents.steps import WITHHELD

    ran, checking = [], threading.Event()

    @tool_output_guardrail
    async def slow_check(data):
        checking.set()
        await asyncio.sleep(30)
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_output_guardrails=[slow_check])
    def pay(n: int) -> str:
        ran.append(n)
        return f"paid {n}"

    model = ScriptedModel([[function_call("pay", {"n": 5}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Main", tools=[pay], model=model)
    session = SQLiteSession("s", str(tmp_path / "db")) if with_session else None
    result = Runner.run_streamed(agent, "go", session=session)

    cancel_when(result, checking)
    resumed = Runner.run_sync(agent, result.to_state(), session=session)
    assert resumed.final_output == "done" and ran == [5]
    outputs = [i.raw_item["output"] for i in resumed.new_items if i.type == "tool_call_output_item"]
    assert outputs[-1] == WITHHELD


def test_an_agent_tool_paused_inside_when_a_sibling_stops_the_run_is_kept_as_may_have_happened(tmp_path):
    from miniagents import ToolGuardrailFunctionOutput, tool_input_guardrail
    from miniagents.turn import STOPPED_MIDWAY

    ran = []

    @function_tool(needs_approval=True)
    def wire(n: int) -> str:
        return "wired"

    @function_tool(tool_input_guardrails=[tool_input_guardrail(lambda data: ToolGuardrailFunctionOutput.raise_exception(
        "no"))])
    def stop(n: int) -> str:
        return "never"

    inner = Agent(name="Inner", tools=[counted(ran), wire], model=ScriptedModel(
        [[function_call("pay", {"n": 1}, call_id="i1"), function_call("wire", {"n": 2}, call_id="i2")]]))
    outer = Agent(name="Outer", tools=[inner.as_tool("helper", "Helps."), stop], model=ScriptedModel(
        [[function_call("helper", {"input": "x"}, call_id="o1"), function_call("stop", {"n": 3}, call_id="o2")]]))
    session = SQLiteSession("s", str(tmp_path / "db"))
    with pytest.raises(Exception, match="tripwire"):
        Runner.run_sync(outer, "go", session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    assert ran == [1]
    history = session.get_items()
    assert calls_and_outputs(history) == [("function_call", "o1"), ("function_call_output", "o1")]
    assert history[-1]["output"] == STOPPED_MIDWAY


def test_the_error_an_agent_tools_inner_run_raises_carries_the_outer_runs_data():
    ran = []

    @function_tool(failure_error_function=None)
    def refuse(n: int) -> str:
        raise UserError("refused")  # an AgentsException: it carries run_data

    inner = Agent(name="Inner", tools=[refuse], model=ScriptedModel([[function_call("refuse", {"n": 1}, call_id="i1")]]))
    outer = Agent(name="Outer", tools=[counted(ran), inner.as_tool("inner", "Inner.", failure_error_function=None)],
                  model=ScriptedModel([[function_call("pay", {"n": 0}, call_id="o0"),
                                        function_call("inner", {"input": "x"}, call_id="o1")]]))
    with pytest.raises(UserError) as caught:
        Runner.run_sync(outer, "go", run_config=RunConfig(max_function_tool_concurrency=1))
    data = caught.value.run_data
    assert data.last_agent is outer and data.input == "go"
    assert [(i.type, i.raw_item["call_id"]) for i in data.new_items][:2] == [("tool_call_item", "o0"),
                                                                            ("tool_call_item", "o1")]


def test_a_turn_saved_before_its_output_guardrail_trips_is_in_a_plain_sessions_history_once():
    """A session with no ledger has no once-key to stop a second write: the turn is saved once, whatever fails
    after it."""
    from miniagents import GuardrailFunctionOutput, OutputGuardrailTripwireTriggered, output_guardrail

    @output_guardrail
    def refuse(ctx, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    ran, session = [], ListSession()
    agent = Agent(name="Main", tools=[counted(ran)], tool_use_behavior="stop_on_first_tool",
                  output_guardrails=[refuse], model=ScriptedModel([[function_call("pay", {"n": 5}, call_id="c1")]]))
    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(agent, "go", session=session)
    assert ran == [5]
    assert calls_and_outputs(session.items) == [("function_call", "c1"), ("function_call_output", "c1")]


def test_ctrl_c_inside_a_call_leaves_the_turn_to_continue_as_a_crash_does(tmp_path):
    """The calls it interrupted may still be running, so the history cannot say yet what they did: the turn stays
    journaled, new input is refused until it is continued, and the continue runs nothing twice."""
    from miniagents.errors import UnfinishedTurnError

    ran = []

    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        if n == 2:
            raise KeyboardInterrupt  # Ctrl-C while the call runs
        return f"paid {n}"

    agent = Agent(name="Main", tools=[pay], model=ScriptedModel(
        [[function_call("pay", {"n": 1}, call_id="c1"), function_call("pay", {"n": 2}, call_id="c2")],
         [assistant_message("done")]]))
    session = SQLiteSession("s", str(tmp_path / "db"))
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "go", session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    assert session.read_journal() and session.get_items() == []
    with pytest.raises(UnfinishedTurnError):
        Runner.run_sync(agent, "something else", session=session)
    paused = Runner.run_sync(agent, [], session=session)
    assert [item.call_id for item in paused.interruptions] == ["c2"]  # it may have happened: a person decides
    state = paused.to_state()
    state.reject(paused.interruptions[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and ran == [1, 2]
    assert [i["call_id"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["c1", "c2"]


def test_a_session_that_stores_a_turn_then_raises_is_not_asked_to_store_it_again():
    class LateSession(ListSession):
        def add_items(self, items):
            super().add_items(items)
            raise TimeoutError("the commit was acknowledged late")

    ran, session = [], LateSession()
    agent = Agent(name="Main", tools=[counted(ran)], model=ScriptedModel([[function_call("pay", {"n": 1},
                                                                                         call_id="c1")]]))
    with pytest.raises(TimeoutError):
        Runner.run_sync(agent, "go", session=session)
    assert ran == [1]
    assert calls_and_outputs(session.items) == [("function_call", "c1"), ("function_call_output", "c1")]


@pytest.mark.parametrize("with_session", [False, True])
def test_a_cancel_in_an_async_step_of_a_resumed_turn_keeps_the_approved_call_that_ran(tmp_path, with_session):
    import asyncio

    from miniagents import ToolsToFinalOutputResult

    ran, waiting = [], threading.Event()

    async def behavior(ctx, results):
        waiting.set()
        await asyncio.sleep(30)
        return ToolsToFinalOutputResult(False, None)

    @function_tool(needs_approval=True)
    def pay(n: int) -> str:
        ran.append(n)
        return f"paid {n}"

    model = ScriptedModel([[function_call("pay", {"n": 7}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Main", tools=[pay], model=model, tool_use_behavior=behavior)
    session = SQLiteSession("s", str(tmp_path / "db")) if with_session else None
    paused = Runner.run_sync(agent, "go", session=session)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    result = Runner.run_streamed(agent, state, session=session)

    cancel_when(result, waiting)
    again = Runner.run_sync(agent, result.to_state(), session=session)
    assert again.final_output == "done" and ran == [7]
    if session is not None:
        assert calls_and_outputs(session.get_items()) == [("function_call", "c1"), ("function_call_output", "c1")]


def test_ctrl_c_after_an_output_guardrail_rejected_a_calls_output_never_shows_the_model_that_output(tmp_path):
    """What the ledger records is what the model was told: a continue reads the guardrail's text, not the tool's."""
    from miniagents import ToolGuardrailFunctionOutput, tool_output_guardrail

    @tool_output_guardrail
    def no_secret(data):
        return ToolGuardrailFunctionOutput.reject_content("withheld") if "SECRET" in str(data.output) else \
            ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_output_guardrails=[no_secret])
    def lookup(n: int) -> str:
        return f"SECRET-{n}"

    @function_tool
    def interrupted(n: int) -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([[function_call("lookup", {"n": 1}, call_id="c1"),
                            function_call("interrupted", {"n": 2}, call_id="c2")], [assistant_message("done")]])
    agent = Agent(name="A", tools=[lookup, interrupted], model=model)
    session = SQLiteSession("s", str(tmp_path / "db"))
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "go", session=session, run_config=RunConfig(max_function_tool_concurrency=1))
    paused = Runner.run_sync(agent, [], session=session)  # c2 may have happened: a person is asked
    state = paused.to_state()
    state.reject(paused.interruptions[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    outputs = [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"]
    assert outputs[0] == "withheld" and not any("SECRET" in str(i) for i in model.calls[-1].input)


def test_ctrl_c_while_the_model_answers_leaves_nothing_in_flight(tmp_path):
    """No call of the turn started: there is nothing a continue would learn, so new input is taken at once."""
    interrupts = [KeyboardInterrupt()]

    class Interrupted(ScriptedModel):
        def get_response(self, *args, **kwargs):
            if interrupts:
                raise interrupts.pop()
            return super().get_response(*args, **kwargs)

    agent = Agent(name="A", model=Interrupted([[assistant_message("answer")]]))
    session = SQLiteSession("s", str(tmp_path / "db"))
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "first", session=session)
    assert session.read_journal() == ""
    assert Runner.run_sync(agent, "second", session=session).final_output == "answer"


def test_an_awaited_run_cancelled_after_a_call_ran_leaves_its_pause_to_continue(tmp_path):
    """`await Runner.run(...)` cancelled while a call runs: no one gets the paused state, so the session's journal
    keeps it; a continue runs what never started, and nothing twice."""
    import asyncio

    ran, started, release = [], threading.Event(), threading.Event()

    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        if n == 1:
            started.set()
            release.wait(10)
        return f"paid {n}"

    model = ScriptedModel([[function_call("pay", {"n": 1}, call_id="c1"), function_call("pay", {"n": 2}, call_id="c2")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[pay], model=model)
    session, config = SQLiteSession("s", str(tmp_path / "db")), RunConfig(max_function_tool_concurrency=1)

    async def cancelled():
        task = asyncio.ensure_future(Runner.run(agent, "pay both", session=session, run_config=config))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()  # as a timeout does
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    asyncio.run(cancelled())  # returns once the run's thread has stopped (the loop's executor is shut down)
    assert ran == [1] and session.read_journal()
    assert Runner.run_sync(agent, [], session=session, run_config=config).final_output == "done"
    assert ran == [1, 2]
    assert [i["call_id"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["c1", "c2"]


def two_blocking_payments(answer):
    """An agent whose model asks for two payments, run one at a time, then answers `answer`; each payment blocks
    until `release` is set, `started` once one has begun. (ran, started, release, agent, session, config)."""
    ran, started, release = [], threading.Event(), threading.Event()

    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        started.set()
        release.wait(10)
        return f"paid {n}"

    model = ScriptedModel([[function_call("pay", {"n": 1}, call_id="c1"), function_call("pay", {"n": 2}, call_id="c2")],
                           [assistant_message(answer)]])
    agent = Agent(name="A", tools=[pay], model=model)
    return ran, started, release, agent, ListSession(), RunConfig(max_function_tool_concurrency=1)


def test_an_awaited_run_cancelled_after_a_call_ran_keeps_that_call_in_a_plain_sessions_history():
    """A timeout cancels `await Runner.run(...)` after the first call paid and before the second started. No one gets
    the state it returns, and a plain session keeps no journal: the pause it stopped in held the paid call, and the
    next run's model never heard of it (the history was empty). Its turn stops midway instead: the call that ran is
    written with its output, the one that never started is dropped."""
    import asyncio

    ran, started, release, agent, session, config = two_blocking_payments("next")
    model = agent.model

    async def cancelled():
        task = asyncio.ensure_future(Runner.run(agent, "pay both", session=session, run_config=config))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()  # as a timeout does
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    asyncio.run(cancelled())  # returns once the run's thread has stopped (the loop's executor is shut down)
    assert ran == [1]
    assert [(i.get("type"), i.get("output")) for i in session.get_items()] == [
        (None, None), ("function_call", None), ("function_call_output", "paid 1")]
    assert Runner.run_sync(agent, "and then?", session=session, run_config=config).final_output == "next"
    assert ran == [1] and outputs_sent(model.calls[1]) == {"c1": "paid 1"}


@pytest.mark.parametrize("point", range(1, 10))
def test_an_awaited_run_cancelled_at_any_async_step_never_runs_a_call_twice_with_a_plain_session(point):
    """The awaiting task is cancelled inside the `point`-th async step (instructions, input guardrail, a call's input
    guardrail, the call itself), one call at a time. After the cancel, every call that ran is in the session's
    history and none that did not is said to have returned; the next run's model hears them, so none runs twice."""
    import asyncio

    from miniagents import GuardrailFunctionOutput, ToolGuardrailFunctionOutput, input_guardrail, tool_input_guardrail
    from miniagents.testing import ModelStep

    steps, ran, loop_task, cancel_at = [], [], {}, [point]

    async def step(name):
        steps.append(name)
        if len(steps) == cancel_at[0]:
            loop_task["loop"].call_soon_threadsafe(loop_task["task"].cancel)
            await asyncio.sleep(0.01)  # the cancel lands while this step runs

    async def instructions(ctx, agent):
        await step("instructions")
        return "pay"

    @input_guardrail
    async def checked(ctx, agent, given):
        await step("input guardrail")
        return GuardrailFunctionOutput(None, False)

    @tool_input_guardrail
    async def allowed(data):
        await step("tool input guardrail")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[allowed])
    async def pay(n: int) -> str:
        await step(f"pay {n}")
        ran.append(n)
        return f"paid {n}"

    def respond(call):
        told = {i["call_id"] for i in call.input if i.get("type") == "function_call_output"}
        calls = [function_call("pay", {"n": n}, call_id=f"c{n}") for n in (1, 2, 3) if f"c{n}" not in told]
        return calls or [assistant_message("all paid")]

    model = ScriptedModel([ModelStep(responder=respond) for _ in range(8)])
    agent = Agent(name="A", model=model, tools=[pay], instructions=instructions, input_guardrails=[checked])
    session, config = ListSession(), RunConfig(max_function_tool_concurrency=1)

    async def cancelled():
        loop_task["loop"] = asyncio.get_running_loop()
        loop_task["task"] = asyncio.ensure_future(Runner.run(agent, "pay", session=session, run_config=config))
        with pytest.raises(asyncio.CancelledError):
            await loop_task["task"]

    asyncio.run(cancelled())
    told = {i["call_id"]: i["output"] for i in session.get_items() if i.get("type") == "function_call_output"}
    assert all(f"c{n}" in told for n in ran)
    assert all(told.get(f"c{n}") != f"paid {n}" for n in (1, 2, 3) if n not in ran)
    cancel_at[0] = 0  # the next run is not cancelled
    assert Runner.run_sync(agent, "go on", session=session, run_config=config).final_output == "all paid"
    assert sorted(ran) == sorted(set(ran)) and set(ran) | {int(c[1:]) for c in told} == {1, 2, 3}


def test_an_awaited_run_of_a_given_state_cancelled_after_a_call_ran_leaves_its_pause_in_that_state():
    """The caller holds a state it gave: the pause a cancel left in it resumes (the second call runs then)."""
    import asyncio

    ran, started, release, agent, session, config = two_blocking_payments("done")
    model = agent.model
    state = RunState(None, "pay both", agent)

    async def cancelled():
        task = asyncio.ensure_future(Runner.run(agent, state, session=session, run_config=config))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    asyncio.run(cancelled())
    assert ran == [1] and state.pending is not None
    assert Runner.run_sync(agent, state, session=session, run_config=config).final_output == "done"
    assert ran == [1, 2] and outputs_sent(model.calls[1]) == {"c1": "paid 1", "c2": "paid 2"}


def test_the_pauses_of_a_turn_are_claimed_under_their_number_from_zero():
    """`resume:turn-<n>:pause-<k>`, `k` how often the turn paused before: its first pause is 0, the pause its
    resume makes (another call waits) is 1, each claimed once with the resume's outcome."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return f"paid {amount}"

    session = SQLiteSession("s")
    agent, _ = make_agent([[function_call("pay", {"amount": 1}, call_id="p1"),
                            function_call("pay", {"amount": 2}, call_id="p2")], [assistant_message("done")]],
                          tools=[pay])
    state = Runner.run_sync(agent, "pay", session=session).to_state()
    assert json.loads(state.to_string())["pending_turn"]["pauses"] == 0
    state.approve(state.get_interruptions()[0])
    state = Runner.run_sync(agent, state, session=session).to_state()
    assert json.loads(state.to_string())["pending_turn"]["pauses"] == 1
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done"
    claims = [session.lookup_call(state.run_id + "#", f"resume:turn-1:pause-{k}") for k in (0, 1, 2)]
    assert claims == [(True, "paused again"), (True, "completed"), (False, None)]


# --- One RunState object given to two runs at once (no session: nothing else says it is taken) ------------------


def approved_in_flight(paid, entered, leave):
    """An agent paused on `pay`, approved; `pay` signals `entered` and waits for `leave` before it pays."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        entered.set()
        leave.wait(10)
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c5")], [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay").to_state()
    state.approve(state.get_interruptions()[0])
    return agent, state, model


def second_run(how, agent, state):
    import asyncio

    if how == "run_sync":
        return Runner.run_sync(agent, state)
    if how == "run":
        return asyncio.run(Runner.run(agent, state))

    async def read():
        async for _ in Runner.run_streamed(agent, state).stream_events():
            pass
    return asyncio.run(read())


@pytest.mark.parametrize("first", ["run_sync", "run", "streamed", "run cancelled"])
@pytest.mark.parametrize("second", ["run_sync", "run", "streamed"])
def test_a_state_still_in_a_run_is_refused_to_a_second_run_and_its_approved_call_runs_once(first, second):
    import asyncio

    paid, entered, leave, gone = [], threading.Event(), threading.Event(), threading.Event()
    agent, state, model = approved_in_flight(paid, entered, leave)

    def go():
        if first == "run cancelled":  # the awaited run is cancelled; its thread finishes the step it is in
            async def cancelled():
                task = asyncio.ensure_future(Runner.run(agent, state))
                await asyncio.get_running_loop().run_in_executor(None, entered.wait, 10)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                gone.set()  # the awaiting task is gone; the run itself still waits in `pay`
            asyncio.run(cancelled())
        else:
            second_run(first, agent, state)

    worker = threading.Thread(target=go)
    worker.start()
    assert entered.wait(10) and (first != "run cancelled" or gone.wait(10))
    with pytest.raises(UserError, match="A run of this RunState is still going on"):
        second_run(second, agent, state)
    leave.set()
    worker.join(10)
    assert paid == [5] and len(model.calls) == (1 if first == "run cancelled" else 2)
    assert state.running is None  # the run ended: the state is free again
    if first == "run cancelled":  # resumed once that run ended: the approved call ran, so it is not run again
        Runner.run_sync(agent, state)
        assert paid == [5] and len(model.calls) == 2


def test_an_awaited_run_cancelled_before_its_thread_began_frees_the_state_and_never_runs():
    """The executor was busy: the cancelled job never starts, so the run that took the state must free it (it was
    taken for good, every later run refused)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    busy = threading.Event()

    async def cancelled_while_queued():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))
        blocker = loop.run_in_executor(None, busy.wait, 10)  # the only worker is busy
        task = asyncio.ensure_future(Runner.run(agent, state))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        busy.set()
        await blocker
        await loop.run_in_executor(None, lambda: None)  # the worker is free: a job still queued has run by now

    asyncio.run(cancelled_while_queued())
    assert state.running is None and paid == [] and len(model.calls) == 1
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_an_awaited_run_abandoned_before_its_thread_began_is_never_driven_when_the_thread_begins_after_all():
    """The executor's worker may pick the job up between the task's cancel and the cancel of the job: `begin`
    then finds the run abandoned (and the state freed by `abandon`), and drives nothing."""
    from miniagents.run import Options, abandon, begin, start_run

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    run = start_run(agent, state, Options())
    abandon(run)
    assert state.running is None and begin(run) is None and paid == [] and len(model.calls) == 1
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_a_streamed_result_cancelled_before_it_was_read_never_runs_once_another_run_took_its_state():
    """Its cancel frees the state at once; reading it afterwards ran the loop on a state it no longer held (the
    approved call ran twice, or a finished run was asked again)."""
    import asyncio

    for mode in ("immediate", "after_turn"):
        paid, entered, leave = [], threading.Event(), threading.Event()
        leave.set()
        agent, state, model = approved_in_flight(paid, entered, leave)
        first = Runner.run_streamed(agent, state)
        first.cancel(mode)
        assert first.is_complete and state.running is None
        assert Runner.run_sync(agent, state).final_output == "done"

        async def read():
            return [event async for event in first.stream_events()]

        assert asyncio.run(read()) == [] and paid == [5] and len(model.calls) == 2


def paused_twice(paid, entered, leave):
    """An agent whose `pay` needs approval, paused on its first call (approved); its second call (6) signals
    `entered` and waits for `leave` before it pays."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        if amount == 6:
            entered.set()
            leave.wait(10)
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c5")],
                           [function_call("pay", {"amount": 6}, call_id="c6")], [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay], model=model)
    state = Runner.run_sync(agent, "pay").to_state()
    state.approve(state.get_interruptions()[0])
    return agent, state


def resume_in_a_thread(agent, state, entered, second):
    """Approve the paused call and resume `state` in a thread of its own (its result in `second`), once it is
    inside the call (`entered`); the thread, to join."""
    state.approve(state.get_interruptions()[0])
    worker = threading.Thread(target=lambda: second.setdefault("result", Runner.run_sync(agent, state)))
    worker.start()
    assert entered.wait(10)
    return worker


@pytest.mark.parametrize("late", ["a finished stream's cancel()", "an awaited run's task cancelled as it ended"])
def test_a_cancel_made_for_a_run_that_ended_never_stops_the_run_that_took_its_state_next(late):
    """The first run resumed the state and paused again; a second run resumed it; the cancel for the first (a
    wait_for timing out just as it ended) stopped the second, which returned with nothing done."""
    import asyncio

    paid, entered, leave = [], threading.Event(), threading.Event()
    agent, state = paused_twice(paid, entered, leave)
    second = {}

    if late.startswith("a finished stream"):
        first = Runner.run_streamed(agent, state)

        async def read():
            async for _ in first.stream_events():
                pass

        asyncio.run(read())
        worker = resume_in_a_thread(agent, state, entered, second)
        first.cancel()
    else:
        async def cancelled_as_it_ended():
            task = asyncio.ensure_future(Runner.run(agent, state))
            await asyncio.sleep(0)
            while state.running is not None or not state.get_interruptions():  # blocks the loop: the task waits
                threading.Event().wait(0.01)
            started = resume_in_a_thread(agent, state, entered, second)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return started

        worker = asyncio.run(cancelled_as_it_ended())
    leave.set()
    worker.join(10)
    assert second["result"].final_output == "done" and paid == [5, 6] and state.cancel_mode is None
    if late.startswith("a finished stream"):  # and the finished result keeps what its own run did
        kept = list(first.new_items)
        first.cancel()
        assert first.new_items == kept and first.final_output is None


def test_a_stream_whose_reader_is_cancelled_after_its_run_ended_never_stops_the_run_that_took_its_state_next():
    """The reader's task is cancelled (a wait_for, a client gone) while it waits for the stream's end, after the run
    ended: stopping a run that no longer holds the state stopped the one that resumed it."""
    import asyncio

    paid, entered, leave = [], threading.Event(), threading.Event()
    agent, state = paused_twice(paid, entered, leave)
    first, second = Runner.run_streamed(agent, state), {}

    async def main():
        async def read():
            async for _ in first.stream_events():
                pass
        reader = asyncio.ensure_future(read())
        while state.running is not None or not first.is_complete:  # the run ends; its end waits in the queue
            await asyncio.sleep(0)
        worker = resume_in_a_thread(agent, state, entered, second)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        return worker

    worker = asyncio.run(main())
    leave.set()
    worker.join(10)
    assert second["result"].final_output == "done" and paid == [5, 6] and state.cancel_mode is None


def test_a_late_cancel_of_an_awaited_run_leaves_the_state_it_freed_uncancelled():
    """The run ended and freed its given state just before its task was cancelled: the cancel was for that run
    alone. Left on the free state, it stopped a run that took the state next if that run chose its steps before the
    cancel came (and so never cleared it)."""
    import asyncio

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state = paused_twice(paid, entered, leave)

    async def cancelled_as_it_ended():
        task = asyncio.ensure_future(Runner.run(agent, state))
        await asyncio.sleep(0)
        while state.running is not None or not state.get_interruptions():  # blocks the loop: the task waits
            threading.Event().wait(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled_as_it_ended())
    assert state.cancel_mode is None and paid == [5]
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5, 6]


def test_a_cancel_racing_the_first_read_of_a_stream_lets_exactly_one_of_them_decide():
    """cancel() from another thread as the stream starts: both saw it unstarted, so the cancel freed the state while
    the stream ran the approved call (another run then ran it again). Now one of them decides, here the cancel."""
    import asyncio
    import time

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    result, deciding = Runner.run_streamed(agent, state), threading.Event()

    class SlowToDecide(type(result)):  # a thread switch right after cancel() reads whether the stream started
        @property
        def _started(self):
            if threading.current_thread().name == "canceller":
                deciding.set()
                time.sleep(0.3)
            return self.__dict__["_seen"]

        @_started.setter
        def _started(self, value):
            self.__dict__["_seen"] = value

    result.__dict__["_seen"] = result.__dict__.pop("_started")
    result.__class__ = SlowToDecide
    canceller = threading.Thread(target=result.cancel, name="canceller")
    canceller.start()
    assert deciding.wait(10)

    async def read():
        return [event async for event in result.stream_events()]

    events = asyncio.run(read())
    canceller.join(10)
    assert events == [] and paid == [] and result.is_complete
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_an_awaited_run_its_executor_refuses_leaves_the_state_free():
    """An executor that was shut down refuses the job: the run never begins, and the state it took is free again
    (it stayed taken for good, every later resume refused)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)

    async def refused():
        pool = ThreadPoolExecutor(1)
        pool.shutdown()
        asyncio.get_running_loop().set_default_executor(pool)
        with pytest.raises(RuntimeError, match="shutdown"):
            await Runner.run(agent, state)

    asyncio.run(refused())
    assert state.running is None and paid == []
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_of_many_runs_given_one_state_at_once_exactly_one_goes_on():
    for _ in range(5):
        paid, entered, leave = [], threading.Event(), threading.Event()
        leave.set()
        agent, state, model = approved_in_flight(paid, entered, leave)
        barrier, outcomes = threading.Barrier(4), []

        def go():
            barrier.wait()
            try:
                outcomes.append(Runner.run_sync(agent, state).final_output)
            except UserError as refused:
                outcomes.append(type(refused).__name__)

        workers = [threading.Thread(target=go) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(10)
        assert paid == [5] and outcomes.count("done") == 1 and len(outcomes) == 4
        assert state.running is None


def test_a_state_a_refused_start_took_is_free_again():
    from miniagents import seams

    class Refuses(seams.Plugin):
        def prepare_run(self, run):
            raise UserError("not today")

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    with pytest.raises(UserError, match="not today"):
        Runner.run_sync(agent, state, plugins=[Refuses()])
    assert state.running is None and paid == []
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_a_streamed_run_cancelled_before_its_events_were_read_leaves_its_state_free():
    import asyncio

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    streamed = Runner.run_streamed(agent, state)
    with pytest.raises(UserError, match="still going on"):
        Runner.run_sync(agent, state)  # the streamed run has it, though its events are not read yet
    streamed.cancel()
    assert state.running is None  # its events will never be read: the run never starts

    async def read():
        async for _ in streamed.stream_events():
            pass
    asyncio.run(read())
    assert state.running is None and paid == []
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_a_plugin_whose_run_seam_raises_as_it_is_entered_leaves_the_state_free():
    import contextlib

    from miniagents import seams

    class Breaks(seams.Plugin):
        def run(self, run):
            @contextlib.contextmanager
            def entered():
                raise RuntimeError("the trace file cannot be opened")
                yield
            return entered()

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    with pytest.raises(RuntimeError, match="trace file"):
        Runner.run_sync(agent, state, plugins=[Breaks()])
    from miniagents.caller import CANCEL_CALLBACKS

    assert state.running is None and paid == [] and CANCEL_CALLBACKS.get() is None  # nothing of the run is left
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


def test_a_session_that_fails_to_close_its_journal_leaves_the_state_free(tmp_path):
    from miniagents.errors import SessionStoreError

    class FullDisk(SQLiteSession):
        full = False

        def write_journal(self, expected, entry):
            if self.full and entry == "":
                raise SessionStoreError("the disk is full")
            return super().write_journal(expected, entry)

    paid, session = [], FullDisk("s", str(tmp_path / "db"))
    agent, model = payer([[function_call("pay", {"amount": 5}, call_id="c5")],
                          [function_call("pay", {"amount": 7}, call_id="c7")], [assistant_message("done")]], paid)
    state = Runner.run_sync(agent, "pay", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    session.full = True
    with pytest.raises(SessionStoreError):
        Runner.run_sync(agent, state, session=session)  # pays 5, pauses on 7, cannot close the journal
    session.full = False
    assert state.running is None and paid == [5]
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and paid == [5, 7]


def gated_send():
    """A `send` tool that says when it has entered and waits for `leave` (10 s at most), and the list it sends to."""
    sent, entered, leave = [], threading.Event(), threading.Event()

    @function_tool
    def send(to: str) -> str:
        entered.set()
        leave.wait(10)
        sent.append(to)
        return "sent"

    return send, sent, entered, leave


def refused_while_running(agent, state, entered, leave) -> list:
    """Run `state` in a thread; while its `send` waits, a second run given the state must be refused. The final
    outputs of the first run."""
    outcome = []
    first = threading.Thread(target=lambda: outcome.append(Runner.run_sync(agent, state).final_output))
    first.start()
    assert entered.wait(10)
    with pytest.raises(UserError, match="still going on"):
        Runner.run_sync(agent, state)
    leave.set()
    first.join(10)
    return outcome


def test_a_state_a_limit_stopped_between_turns_is_refused_to_a_second_run_while_the_first_goes_on():
    from miniagents import UsageLimitExceeded, UsageLimits

    send, sent, entered, leave = gated_send()
    model = ScriptedModel([[function_call("send", {"to": "a"}, call_id="c1")],
                           [function_call("send", {"to": "b"}, call_id="c2")], [assistant_message("done")]])
    agent = Agent(name="Mailer", tools=[send], model=model)
    leave.set()
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent, "go", run_config=RunConfig(usage_limits=UsageLimits(request_limit=1)))
    state = stopped.value.state
    assert state.pending is None and sent == ["a"]
    entered.clear()
    leave.clear()
    assert refused_while_running(agent, state, entered, leave) == ["done"] and sent == ["a", "b"]


@pytest.mark.parametrize("how", ["stopped before its first model call", "made by hand"])
def test_a_state_with_no_response_yet_is_refused_to_a_second_run_while_the_first_goes_on(how):
    """A state given to run holds nothing yet (a request limit of 0 stopped it before the model was asked, or it was
    made by hand): it is still the first run's, so a second run given it meanwhile is refused, not run twice."""
    from miniagents import RunState, UsageLimitExceeded, UsageLimits

    send, sent, entered, leave = gated_send()
    model = ScriptedModel([[function_call("send", {"to": "a"}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Mailer", tools=[send], model=model)
    if how == "made by hand":
        state = RunState(None, "go", agent, 10)
    else:
        with pytest.raises(UsageLimitExceeded) as stopped:
            Runner.run_sync(agent, "go", run_config=RunConfig(usage_limits=UsageLimits(request_limit=0)))
        state = stopped.value.state
    assert state.model_responses == [] and state.pending is None
    assert refused_while_running(agent, state, entered, leave) == ["done"] and sent == ["a"] and len(model.calls) == 2


def test_a_streamed_result_dropped_unread_leaves_its_state_free():
    import gc

    paid, entered, leave = [], threading.Event(), threading.Event()
    leave.set()
    agent, state, model = approved_in_flight(paid, entered, leave)
    Runner.run_streamed(agent, state)  # never read
    gc.collect()
    assert state.running is None
    assert Runner.run_sync(agent, state).final_output == "done" and paid == [5]


@pytest.mark.parametrize("how", ["cancel after the turn", "a failed handoff, no session", "a failed handoff, session",
                                 "an output guardrail trips on a tool's final output"])
def test_a_streamed_turn_that_fails_tells_its_reader_each_output_it_keeps_once(tmp_path, how):
    import asyncio

    from miniagents import (GuardrailFunctionOutput, OutputGuardrailTripwireTriggered, handoff,
                            output_guardrail)

    @function_tool
    def ok() -> str:
        return "fine"

    @function_tool(failure_error_function=None)
    def broken() -> str:
        raise RuntimeError("the tool broke")

    def refuse(context):
        raise RuntimeError("the handoff broke")

    @output_guardrail
    def refuses(context, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    other = Agent(name="Other", model=ScriptedModel([[assistant_message("hi")]]))
    second = function_call("broken", "{}", call_id="c2") if how.startswith("cancel") else \
        function_call("transfer_to_other", "{}", call_id="h1")
    agent = Agent(name="A", tools=[ok, broken], handoffs=[handoff(other, on_handoff=refuse)],
                  model=ScriptedModel([[function_call("ok", "{}", call_id="c1"), second]]))
    if how.startswith("an output guardrail"):  # the tool's output is the final output, which the guardrail refuses
        agent = agent.clone(tool_use_behavior="stop_on_first_tool", output_guardrails=[refuses],
                            model=ScriptedModel([[function_call("ok", "{}", call_id="c1")]]))
    session = SQLiteSession("s", str(tmp_path / "db")) if how.endswith(", session") else None
    result, heard = Runner.run_streamed(agent, "go", session=session,
                                        run_config=RunConfig(max_function_tool_concurrency=1)), []

    async def read():
        async for event in result.stream_events():
            if getattr(event, "name", None) == "tool_called" and how.startswith("cancel"):
                result.cancel("after_turn")
            if getattr(event, "name", None) == "tool_output":
                heard.append(event.item.raw_item["call_id"])

    with pytest.raises(OutputGuardrailTripwireTriggered if how.startswith("an output") else RuntimeError):
        asyncio.run(read())
    kept = [i.raw_item["call_id"] for i in result.to_state().generated_items if i.type == "tool_call_output_item"]
    assert heard == kept and kept == (["c1", "c2"] if how.startswith("cancel") else ["c1"])


# --- A second attack on runs, threads and event loops: every cancellation point, with the ledger -------------------

CANCELS = ["the awaiting task", "the stream's cancel() from inside the step", "the stream's reader task"]


@pytest.mark.parametrize("point", range(1, 16))
@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("how", CANCELS)
def test_a_run_cancelled_at_any_step_with_a_sqlite_session_pays_each_call_at_most_once_and_says_so(
        tmp_path, how, concurrency, point):
    """Three turns of an agent with async instructions, an input guardrail, an async tool input guardrail, a sync
    and an async tool (run one or two at once) and an output guardrail; the run is cancelled inside its `point`-th
    step (14 in all; 15: never), as a wait_for timeout, a Stop button inside a tool, or a client gone cancels it.
    Then the session is continued with `[]` until the answer. Every payment ran at most once, every call is
    answered exactly once in the history, with its payment when it ran and never a payment when it did not, and
    the history is well paired, whatever the cancellation point."""
    import asyncio
    import collections

    from miniagents import (GuardrailFunctionOutput, ToolGuardrailFunctionOutput, input_guardrail,
                            output_guardrail, tool_input_guardrail)
    from miniagents.testing import ModelStep
    from miniagents.turn import STOPPED_MIDWAY

    steps, ran, box, target, lock = [], [], {"gone": threading.Event()}, [point], threading.Lock()

    def at(name):
        with lock:
            steps.append(name)
            here = len(steps) == target[0]
        if here and how == "the awaiting task":
            box["loop"].call_soon_threadsafe(box["task"].cancel)
            assert box["gone"].wait(10)  # the task is cancelled, the run abandoned: the step goes on
        elif here and how == "the stream's reader task":
            box["loop"].call_soon_threadsafe(box["task"].cancel)  # the reader then waits for the run to stop
        elif here:
            box["result"].cancel()
        return here

    async def async_at(name):
        if at(name):
            await asyncio.sleep(0)  # an async step's cancel lands at its next await

    async def instructions(ctx, agent):
        await async_at("instructions")
        return "pay"

    @input_guardrail
    def checked(ctx, agent, given):
        at("input guardrail")
        return GuardrailFunctionOutput(None, False)

    @tool_input_guardrail
    async def allowed(data):
        await async_at("tool guardrail")
        return ToolGuardrailFunctionOutput.allow()

    @output_guardrail
    def answered(ctx, agent, output):
        at("output guardrail")
        return GuardrailFunctionOutput(None, False)

    @function_tool(tool_input_guardrails=[allowed])
    def pay(n: int) -> str:
        with lock:
            ran.append(n)  # paid: the cancel comes after
        at(f"pay {n}")
        return f"paid {n}"

    @function_tool
    async def pay_async(n: int) -> str:
        with lock:
            ran.append(n)
        await async_at(f"pay {n}")
        return f"paid {n}"

    def respond(call):
        at("model")
        told = {i["call_id"] for i in call.input if i.get("type") == "function_call_output"}
        calls = [function_call("pay" if n % 2 else "pay_async", {"n": n}, call_id=f"c{n}") for n in (1, 2, 3, 4)
                 if f"c{n}" not in told]
        return calls[:2] or [assistant_message("all paid")]

    model = ScriptedModel([ModelStep(responder=respond) for _ in range(20)])
    agent = Agent(name="A", model=model, tools=[pay, pay_async], instructions=instructions,
                  input_guardrails=[checked], output_guardrails=[answered])
    session = SQLiteSession("s", str(tmp_path / "db"))
    config = RunConfig(max_function_tool_concurrency=concurrency)

    async def cancelled():
        box["loop"] = asyncio.get_running_loop()
        if how == "the awaiting task":
            box["task"] = asyncio.ensure_future(Runner.run(agent, "pay", session=session, run_config=config))
        else:
            box["result"] = result = Runner.run_streamed(agent, "pay", session=session, run_config=config)

            async def read():
                async for _ in result.stream_events():
                    pass
            box["task"] = asyncio.ensure_future(read())
        try:
            await box["task"]
        except asyncio.CancelledError:
            box["gone"].set()

    asyncio.run(cancelled())  # returns once the run's thread has stopped
    target[0] = 0  # the continues are not cancelled
    for _ in range(4):
        if Runner.run_sync(agent, [], session=session, run_config=config).final_output == "all paid":
            break
    items = session.get_items()
    told = collections.defaultdict(list)
    for item in items:
        if item.get("type") == "function_call_output":
            told[item["call_id"]].append(item["output"])
    assert sorted(ran) == sorted(set(ran)), f"a payment ran twice: {ran}"
    assert drop_orphans(items) == list(items)
    assert sorted(told) == ["c1", "c2", "c3", "c4"] and all(len(outputs) == 1 for outputs in told.values()), told
    for n in (1, 2, 3, 4):
        said = told[f"c{n}"][0]
        assert said in (f"paid {n}", STOPPED_MIDWAY) if n in ran else said != f"paid {n}", (n, ran, told)
    assert items[-1]["content"][0]["text"] == "all paid"


@pytest.mark.skipif(not hasattr(__import__("asyncio"), "TaskGroup"), reason="asyncio.TaskGroup is Python 3.11+")
@pytest.mark.parametrize("point", range(1, 13))
def test_runs_a_task_group_cancels_when_a_sibling_fails_each_pay_at_most_once_and_continue(tmp_path, point):
    """Three awaited runs, each with its SQLiteSession, in one `asyncio.TaskGroup`; a sibling task fails once the
    `point`-th payment (of 12) began, and the group cancels the runs wherever they are. Each session, continued
    with `[]`, ends with its answer; every payment ran at most once and is answered once in its history."""
    import asyncio
    import collections

    from miniagents.testing import ModelStep

    ran, lock, began, failing = collections.Counter(), threading.Lock(), [0], threading.Event()

    def paid(who, n):
        with lock:
            ran[(who, n)] += 1
            began[0] += 1
            if began[0] == point:
                failing.set()
        return f"paid {who} {n}"

    @function_tool
    def pay(who: str, n: int) -> str:
        return paid(who, n)

    @function_tool
    async def pay_async(who: str, n: int) -> str:
        text = paid(who, n)
        await asyncio.sleep(0)
        return text

    def respond(call):
        who = next(i for i in call.input if i.get("role") == "user")["content"]
        told = {i["call_id"] for i in call.input if i.get("type") == "function_call_output"}
        calls = [function_call("pay" if n % 2 else "pay_async", {"who": who, "n": n}, call_id=f"c{n}")
                 for n in range(1, 5) if f"c{n}" not in told]
        return calls[:2] or [assistant_message("done")]

    agent = Agent(name="A", model=ScriptedModel([ModelStep(responder=respond) for _ in range(60)]),
                  tools=[pay, pay_async])
    sessions = {who: SQLiteSession(who, str(tmp_path / "db")) for who in "xyz"}
    config = RunConfig(max_function_tool_concurrency=2)

    async def main():
        async def sibling():
            await asyncio.get_running_loop().run_in_executor(None, failing.wait, 10)
            raise KeyError("a sibling failed")

        async with asyncio.TaskGroup() as group:
            for who in "xyz":
                group.create_task(Runner.run(agent, who, session=sessions[who], run_config=config))
            group.create_task(sibling())

    with pytest.raises(BaseExceptionGroup):  # noqa: F821 (Python 3.11+)
        asyncio.run(main())
    for who in "xyz":
        for _ in range(4):
            if Runner.run_sync(agent, [], session=sessions[who], run_config=config).final_output == "done":
                break
        items = sessions[who].get_items()
        outputs = collections.Counter(i["call_id"] for i in items if i.get("type") == "function_call_output")
        assert drop_orphans(items) == list(items) and items[-1]["content"][0]["text"] == "done"
        assert sorted(outputs) == ["c1", "c2", "c3", "c4"] and set(outputs.values()) == {1}, (who, outputs)
    assert set(ran.values()) == {1}, ran
