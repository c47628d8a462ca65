"""Cancelling a run stops it at the next step boundary; nothing starts after, what runs finishes, history stays paired.

The loop is synchronous and runs in a worker thread under `await Runner.run(...)` and `stream_events()`, so
cancelling the awaiting task cannot interrupt it: it asks the run to stop, and the run checks between steps.
"""
from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from miniagents import Runner, SQLiteSession, function_tool
from miniagents.testing import assistant_message, function_call
from miniagents.turn import STOPPED_MIDWAY
from support import make_agent

from support import ROOT  # noqa: E402


def test_cancelling_the_awaiting_task_stops_the_run_before_the_next_step():
    ran, started, release = [], threading.Event(), threading.Event()

    @function_tool
    def work(n: int) -> str:
        ran.append(n)
        started.set()
        release.wait(30)
        return "done"

    steps = [[function_call("work", {"n": i}, call_id=f"c{i}")] for i in range(8)] + [[assistant_message("end")]]
    agent, model = make_agent(steps, tools=[work])

    async def main():
        task = asyncio.ensure_future(Runner.run(agent, "go", max_turns=20))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()  # the running tool finishes; asyncio.run then waits for the worker thread to end

    asyncio.run(main())
    assert ran == [0] and len(model.calls) == 1



def test_an_awaited_value_takes_its_abort_callback_back_when_it_is_done():
    # A run's list of aborts holds only what is still in flight, or cancel() would reach finished work.
    from miniagents import caller

    async def value():
        return 3

    async def fails():
        raise KeyError("boom")

    aborts: list = []
    token = caller.CANCEL_CALLBACKS.set(aborts)
    try:
        assert caller.resolve(value()) == 3
        with pytest.raises(KeyError):
            caller.resolve(fails())
    finally:
        caller.CANCEL_CALLBACKS.reset(token)
    assert aborts == []

@pytest.mark.parametrize("limit", [1, 2], ids=["one-at-a-time", "in-threads"])
def test_cancelled_tools_that_had_not_started_never_start_and_the_state_resumes(limit):
    """The calls past the concurrency limit wait for a slot: one at a time, or in threads two at once. Cancelling
    while the first run means the last call never starts, and the resumed state runs it."""
    from miniagents import RunConfig

    last, ran, started, release = limit + 1, [], threading.Barrier(limit + 1), threading.Event()

    @function_tool
    def work(n: int) -> str:
        ran.append(n)
        if n < last:
            started.wait(30)
            release.wait(30)
        return f"done {n}"

    agent, model = make_agent([[function_call("work", {"n": n}, call_id=f"c{n}") for n in range(1, last + 1)],
                               [assistant_message("end")]], tools=[work])
    result = Runner.run_streamed(agent, "go", run_config=RunConfig(max_function_tool_concurrency=limit))

    async def drain():
        async for event in result.stream_events():
            if getattr(event, "name", None) == "tool_called" and event.item.call_id == f"c{last}":
                threading.Thread(target=lambda: (started.wait(30), result.cancel(), release.set())).start()

    asyncio.run(drain())
    assert sorted(ran) == list(range(1, last)) and len(model.calls) == 1
    resumed = Runner.run_sync(agent, result.to_state())
    assert sorted(ran) == list(range(1, last + 1)) and resumed.final_output == "end"
    outputs = [i["output"] for i in model.calls[1].input if i.get("type") == "function_call_output"]
    assert outputs == [f"done {n}" for n in range(1, last + 1)]


def test_iterating_stream_events_a_second_time_never_runs_the_model_again():
    agent, model = make_agent([[assistant_message("once")]])
    result = Runner.run_streamed(agent, "go")

    async def drain():
        return [e async for e in result.stream_events()]

    assert asyncio.run(drain())
    assert asyncio.run(drain()) == []
    assert len(model.calls) == 1 and result.final_output == "once"


REQUEST = contextvars.ContextVar("request", default=None)


def test_tools_see_the_callers_context_variables_in_every_way_of_running():
    seen = []

    @function_tool
    def who() -> str:
        seen.append(REQUEST.get())
        return "ok"

    @function_tool
    async def who_async() -> str:
        seen.append(REQUEST.get())
        return "ok"

    def script():
        return [[function_call("who", "{}", call_id="c1"), function_call("who_async", "{}", call_id="c2")],
                [assistant_message("end")]]

    REQUEST.set("req-1")
    agent, _ = make_agent(script(), tools=[who, who_async])
    Runner.run_sync(agent, "go")

    async def main():
        REQUEST.set("req-2")
        agent, _ = make_agent(script(), tools=[who, who_async])
        await Runner.run(agent, "go")
        agent, _ = make_agent(script(), tools=[who, who_async])
        async for _ in Runner.run_streamed(agent, "go").stream_events():
            pass

    asyncio.run(main())
    assert seen == ["req-1", "req-1", "req-2", "req-2", "req-2", "req-2"]


CTRL_C = textwrap.dedent("""
    import signal, sys, threading
    # Ctrl-C raises KeyboardInterrupt, as in a terminal, even when this test runs in the background (a shell
    # starts background jobs with SIGINT ignored, and a child process inherits that).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
    from miniagents import Runner, SQLiteSession, function_tool
    from miniagents.items import drop_orphans
    from miniagents.testing import assistant_message, function_call
    from support import make_agent

    never, printing = threading.Event(), threading.Lock()

    @function_tool
    def stuck(n: int) -> str:
        with printing:
            print("started", n, flush=True)
        never.wait()
        return "never"

    agent, model = make_agent([[function_call("stuck", {{"n": 1}}, call_id="c1"),
                                function_call("stuck", {{"n": 2}}, call_id="c2")],
                               [assistant_message("end")]], tools=[stuck])
    session = SQLiteSession("s", {db!r})
    try:
        Runner.run_sync(agent, "go", session=session)
    except KeyboardInterrupt:
        items = session.get_items()
        print("interrupted", len(items), drop_orphans(items) == list(items), flush=True)
""")


def test_ctrl_c_during_parallel_tools_interrupts_at_once_and_leaves_the_session_paired(tmp_path):
    code = CTRL_C.format(root=ROOT, tests=os.path.join(ROOT, "tests"), db=str(tmp_path / "s.db"))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        lines = [child.stdout.readline().strip(), child.stdout.readline().strip()]
        assert sorted(lines) == ["started 1", "started 2"]
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)  # the tools never return: only a prompt interrupt ends the child
    finally:
        if child.poll() is None:  # never leave a stuck child behind
            child.kill()
            child.communicate()
    assert out.strip() == "interrupted 0 True" and child.returncode == 0


CTRL_C_IN_AN_ASYNC_TOOL = textwrap.dedent("""
    import asyncio, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (see CTRL_C)
    sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
    from miniagents import Runner, function_tool
    from miniagents.testing import assistant_message, function_call
    from support import make_agent

    @function_tool
    async def stuck(n: int) -> str:
        print("started", flush=True)
        await asyncio.Event().wait()  # never set
        return "never"

    agent, model = make_agent([[function_call("stuck", {{"n": 1}}, call_id="c1")], [assistant_message("end")]],
                              tools=[stuck])
    try:
        result = Runner.run_sync(agent, "go")
        print("ran on", len(model.calls), result.final_output, flush=True)
    except KeyboardInterrupt:
        print("interrupted", len(model.calls), flush=True)
""")


def test_ctrl_c_during_an_async_tool_interrupts_the_run_not_the_tool_alone():
    """A lone call's async tool runs in the run's thread, the main one: on Python 3.11+ `asyncio.run` answers
    Ctrl-C by cancelling its task, which the run took for the tool cancelling itself, a failure told to the model,
    and the run went on to ask it again ("ran on 2 end")."""
    code = CTRL_C_IN_AN_ASYNC_TOOL.format(root=ROOT, tests=os.path.join(ROOT, "tests"))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)  # the tool never returns: only the interrupt ends the child
    finally:
        if child.poll() is None:  # never leave a stuck child behind
            child.kill()
            child.communicate()
    assert out.strip() == "interrupted 1" and child.returncode == 0
    if sys.version_info >= (3, 11):  # before, Ctrl-C raises in the loop, and its shutdown still logs the UserError
        assert "UserError" not in err


# --- Cancelling reaches what the run waits on: an HTTP request, an async tool -----------------------------------

from openai_server import chat_chunks, sse  # noqa: E402


def test_cancelling_a_streamed_run_against_a_silent_server_ends_it_at_once(server):
    import time

    from miniagents import Agent, OpenAIChatCompletionsModel

    server.reply_sse(sse(*chat_chunks("Hello there")[:2], done=False), hold=True)
    agent = Agent(name="A", model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k", timeout=60))
    result = Runner.run_streamed(agent, "hi")

    async def go():
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.get("type") == "response.output_text.delta":
                result.cancel()

    started = time.monotonic()
    asyncio.run(go())  # returns only once the run's thread is done
    assert time.monotonic() - started < 10  # against a 60 s read timeout: the cancel closed the response
    assert result.is_complete and result.final_output is None and len(server.requests) == 1


def test_cancel_from_another_thread_during_a_model_call_ends_the_stream_quietly(server):
    import time

    from miniagents import Agent, OpenAIChatCompletionsModel

    server.reply(hang=True)
    agent = Agent(name="A", model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k", timeout=60))
    result = Runner.run_streamed(agent, "hi")

    def cancel_once_the_request_is_in():
        while not server.requests:
            time.sleep(0.01)
        result.cancel()  # aborts the request: the failure it causes is the cancel, not an error of the run

    canceller = threading.Thread(target=cancel_once_the_request_is_in)
    canceller.start()

    async def go():
        return [e.type async for e in result.stream_events()]

    events = asyncio.run(go())
    canceller.join()
    assert events == ["agent_updated_stream_event"]
    assert result.is_complete and result.final_output is None and len(server.requests) == 1


def test_cancelling_the_awaiting_task_during_a_model_call_aborts_the_request(server):
    import time

    from miniagents import Agent, OpenAIChatCompletionsModel

    server.reply(hang=True)
    agent = Agent(name="A", model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k", timeout=60))

    async def main():
        task = asyncio.ensure_future(Runner.run(agent, "hi"))
        while not server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(main())  # waits for the worker thread: it ends because the request was aborted
    assert time.monotonic() - started < 10 and len(server.requests) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["awaited", "streamed"])
def test_a_cancel_before_the_model_request_means_no_request_is_sent(server, streamed):
    """Cancelled while its input guardrail runs, the run never sends the request: it was not in flight when the cancel
    came, so nothing aborted it, and it waited on a silent server for its timeout, then was retried (a stream raised
    the last attempt's error after cancel() had ended it)."""
    import time

    from miniagents import Agent, GuardrailFunctionOutput, OpenAIChatCompletionsModel, input_guardrail

    guarding = threading.Event()

    @input_guardrail
    def slow(context, agent, given):
        guarding.set()
        time.sleep(0.3)
        return GuardrailFunctionOutput(None, False)

    server.reply(hang=True).reply(hang=True).reply(hang=True)  # a request sent would wait 2 s, three times
    agent = Agent(name="A", input_guardrails=[slow],
                  model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k", timeout=2))

    async def main():
        if streamed:
            result = Runner.run_streamed(agent, "hi")
            threading.Thread(target=lambda: (guarding.wait(), result.cancel())).start()
            assert [e.type async for e in result.stream_events()] == ["agent_updated_stream_event"]
            return
        task = asyncio.ensure_future(Runner.run(agent, "hi"))
        await asyncio.get_running_loop().run_in_executor(None, guarding.wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())  # waits for the run's thread
    assert server.requests == []


def test_a_state_cancelled_then_given_again_sends_its_request(server):
    """What makes a request start stopped is the cancel of the run it stopped: a state given again runs on."""
    from miniagents import Agent, OpenAIChatCompletionsModel, RunState
    from openai_server import chat_completion

    server.reply(chat_completion("hello"))
    agent = Agent(name="A", model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k", timeout=60))
    state = RunState(None, "hi", agent)
    state.cancel()
    assert Runner.run_sync(agent, state).final_output == "hello" and len(server.requests) == 1


def cancel_while_running(session=None):
    """A streamed run cancelled while its async tool runs (the tool did what it does, then awaits): the run, the
    tool's starts and ends, and the model."""
    started, starts, cancelled, finished = threading.Event(), [], [], []

    @function_tool
    async def slow(n: int) -> str:
        starts.append(n)  # what it does: done before the cancel can reach it
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        finished.append(n)
        return "slept"

    agent, model = make_agent([[function_call("slow", {"n": 1}, call_id="c1")], [assistant_message("end")]],
                              tools=[slow])
    result = Runner.run_streamed(agent, "go", session=session)

    async def drain():
        async for event in result.stream_events():
            if getattr(event, "name", None) == "tool_called":
                threading.Thread(target=lambda: (started.wait(30), result.cancel())).start()

    asyncio.run(drain())
    assert cancelled == [1] and finished == [] and len(model.calls) == 1
    return agent, model, result, starts


@pytest.mark.parametrize("with_session", [False, True], ids=["no session", "SQLiteSession"])
def test_an_async_tool_a_cancel_stopped_while_it_ran_is_kept_as_stopped_midway_and_never_run_again(with_session):
    """It started, so it may have done what it does: the history says so, and a resume asks the model, which is
    told, instead of running the call again (it was run again: a payment made twice)."""
    session = SQLiteSession("s") if with_session else None
    agent, model, result, starts = cancel_while_running(session)
    state = result.to_state()
    assert state.get_interruptions() == [] and state.pending is None
    outputs = [item for item in result.to_input_list() if item.get("type") == "function_call_output"]
    assert outputs == [{"type": "function_call_output", "call_id": "c1", "output": STOPPED_MIDWAY}]
    assert Runner.run_sync(agent, state, session=session).final_output == "end"
    assert starts == [1] and len(model.calls) == 2
    assert model.calls[1].input[-1]["output"] == STOPPED_MIDWAY
    if session is not None:  # the session's history, and the ledger's record of the call
        assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == [
            STOPPED_MIDWAY]
        assert session.lookup_call(state.run_id, "c1") == (True, STOPPED_MIDWAY)


def test_a_run_cancelled_while_its_output_guardrail_runs_keeps_the_final_turn_in_the_session():
    """A cancel is no verdict: nothing is withheld, and the answer the model gave is not lost (upstream's rule)."""
    from miniagents import OutputGuardrail, SQLiteSession

    started = threading.Event()

    async def never_decides(ctx, agent, output):
        started.set()
        await asyncio.Event().wait()

    session = SQLiteSession("s")
    agent, _ = make_agent([[assistant_message("the answer")]], output_guardrails=[OutputGuardrail(never_decides)])

    cancel_awaited(agent, started, session=session)
    kept = asyncio.run(session.get_items())
    assert [i.get("role") for i in kept] == ["user", "assistant"] and kept[-1]["content"][0]["text"] == "the answer"


# --- What a cancel must not do: swallow a verdict, lose input, soften, hang ---------------------------------


def consume(result):
    """Read a streamed run to its end; the events' types."""
    async def read():
        return [event.type async for event in result.stream_events()]
    return asyncio.run(read())


def test_a_tripwire_that_trips_while_a_cancel_is_pending_is_raised_not_taken_for_the_cancel():
    """The cancel aborts what is in flight; a guardrail's verdict is not in flight: swallowing it let a resume of
    the state (the first turn already counted) run past the input guardrails."""
    from miniagents import GuardrailFunctionOutput, InputGuardrailTripwireTriggered, input_guardrail

    agent, model = make_agent([[assistant_message("forbidden answer")]])
    result = None

    @input_guardrail
    def no_forbidden(ctx, agent, text):
        result.cancel()
        return GuardrailFunctionOutput("forbidden", tripwire_triggered=True)

    agent = agent.clone(input_guardrails=[no_forbidden])
    result = Runner.run_streamed(agent, "forbidden request")
    with pytest.raises(InputGuardrailTripwireTriggered):
        consume(result)
    assert model.calls == ()


def test_a_racing_input_guardrail_is_joined_when_a_cancel_cuts_the_first_turn_short():
    from miniagents import GuardrailFunctionOutput, InputGuardrailTripwireTriggered, input_guardrail

    release = threading.Event()

    @input_guardrail(run_in_parallel=True)
    def block_all(ctx, agent, text):
        release.wait(30)
        return GuardrailFunctionOutput("blocked", tripwire_triggered=True)

    agent, _ = make_agent([[assistant_message("secret answer")]], input_guardrails=[block_all])
    result = Runner.run_streamed(agent, "forbidden request")

    async def read():
        async for event in result.stream_events():
            if event.type == "raw_response_event":
                result.cancel()
                release.set()

    with pytest.raises(InputGuardrailTripwireTriggered):
        asyncio.run(read())
    assert "input-guardrails" not in [t.name for t in threading.enumerate()]


def test_the_run_input_of_a_turn_a_cancel_dropped_joins_the_session_with_the_next_turn():
    from miniagents import SQLiteSession

    agent, _ = make_agent([[assistant_message("one")], [assistant_message("two")]])
    session = SQLiteSession("s")
    result = Runner.run_streamed(agent, "hello", session=session)

    async def read():
        async for event in result.stream_events():
            if event.type == "raw_response_event":
                result.cancel()

    asyncio.run(read())
    assert session.get_items() == []
    assert Runner.run_sync(agent, result.to_state(), session=session).final_output == "two"
    assert [(i.get("role"), i["content"] if i.get("role") == "user" else "") for i in session.get_items()] == [
        ("user", "hello"), ("assistant", "")]


def test_a_milder_cancel_never_softens_an_immediate_one():
    ran = []

    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        return "paid"

    agent, _ = make_agent([[function_call("pay", {"n": 1}, call_id="c1")], [assistant_message("done")]], tools=[pay])
    result = Runner.run_streamed(agent, "go")

    async def read():
        async for event in result.stream_events():
            if getattr(event, "name", None) == "tool_called":
                result.cancel()
                result.cancel("after_turn")

    asyncio.run(read())
    assert ran == [] and result.is_complete


def test_a_milder_cancel_of_a_state_never_softens_an_immediate_one():
    """Two cancels of the state a run was given, while its first call runs: the second call never starts (an
    "after_turn" that softened the first would let the turn settle, running it)."""
    from miniagents import RunConfig, RunState

    ran, box = [], {}

    @function_tool
    def pay(n: int) -> str:
        ran.append(n)
        box["state"].cancel()
        box["state"].cancel("after_turn")
        return "paid"

    agent, _ = make_agent([[function_call("pay", {"n": 1}, call_id="c1"), function_call("pay", {"n": 2}, call_id="c2")],
                           [assistant_message("done")]], tools=[pay])
    state = box["state"] = RunState(None, "go", agent)
    result = Runner.run_sync(agent, state, run_config=RunConfig(max_function_tool_concurrency=1))
    assert ran == [1] and result.final_output is None and state.cancel_mode == "immediate"


def test_a_cancel_mode_that_does_not_exist_is_a_user_error():
    from miniagents import UserError

    agent, _ = make_agent([[assistant_message("hi")]])
    with pytest.raises(UserError, match="cancel mode must be 'immediate' or 'after_turn'"):
        Runner.run_streamed(agent, "go").cancel("later")


@pytest.mark.filterwarnings("ignore:coroutine method 'aclose'")  # the stream never closed: what is tested here
def test_a_reader_whose_event_loop_closed_without_closing_the_stream_ends_the_run():
    """Its generator is never finalized: the run notices the loop is gone instead of waiting for it forever (its
    stream's thread is told apart from one an earlier test left ending, which was taken for it under load)."""
    agent, _ = make_agent([[assistant_message("hi")]])
    earlier = set(threading.enumerate())
    result = Runner.run_streamed(agent, "go")

    async def first_event():
        async for event in result.stream_events():
            return event

    loop = asyncio.new_event_loop()
    loop.run_until_complete(first_event())
    loop.close()
    for worker in set(threading.enumerate()) - earlier:
        worker.join(10)
        assert not worker.is_alive(), worker.name
    assert result.is_complete


def test_readers_that_await_other_runs_never_wait_behind_the_streams_that_wait_for_them():
    """As many streams as the event loop's default executor has threads, each reader awaiting another run while
    it handles an event: the streams have threads of their own, so the other runs find the executor free."""
    count = min(32, (os.cpu_count() or 1) + 4)
    classifier, _ = make_agent([[assistant_message("ok")]] * count)

    async def one(n):
        agent, _ = make_agent([[assistant_message(f"stream {n}")]])
        result = Runner.run_streamed(agent, "go")
        async for event in result.stream_events():
            if event.type == "agent_updated_stream_event":
                await Runner.run(classifier, "classify")
        return result.final_output

    async def main():
        return await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(count))), 30)

    assert asyncio.run(main()) == [f"stream {n}" for n in range(count)]


def test_a_cancel_reaches_an_agent_tools_inner_run_which_goes_on_when_the_state_resumes():
    """Nothing new starts in the inner run after the cancel (as in the caller's); resuming runs each inner step
    once: the inner run's state is the call's, as when it pauses for an approval."""
    ran = []
    result = None

    @function_tool
    def step(n: int) -> str:
        ran.append(n)
        if n == 1:
            result.cancel()
        return f"step {n}"

    inner, inner_model = make_agent([[function_call("step", {"n": n}, call_id=f"i{n}")] for n in range(4)]
                                    + [[assistant_message("inner done")]], name="Inner", tools=[step])
    outer, _ = make_agent([[function_call("helper", {"input": "do it"}, call_id="o1")],
                           [assistant_message("outer done")]], name="Outer", tools=[inner.as_tool("helper", "help")])
    result = Runner.run_streamed(outer, "go")
    consume(result)
    assert ran == [0, 1] and len(inner_model.calls) == 2
    assert Runner.run_sync(outer, result.to_state()).final_output == "outer done"
    assert ran == [0, 1, 2, 3] and len(inner_model.calls) == 5


# --- What an attack found: a cancelled streamed run resumed while it was still stopping --------------------------


def test_a_cancelled_stream_still_stopping_cannot_be_resumed_until_its_stream_is_read_to_the_end():
    from miniagents import Agent, RunConfig, UserError
    from miniagents.testing import ScriptedModel

    ran, cancelled = [], threading.Event()
    box = {}

    @function_tool
    def step(n: int) -> str:
        ran.append(n)
        if n == 1:
            box["result"].cancel()
            cancelled.set()
            threading.Event().wait(0.3)  # the cancelled run is still in this step
        return f"step {n}"

    model = ScriptedModel([[function_call("step", {"n": 1}, call_id="a"), function_call("step", {"n": 2}, call_id="b")],
                           [assistant_message("done")]])
    agent = Agent(name="a", tools=[step], model=model)

    async def drain(result):
        async for _ in result.stream_events():
            pass

    async def main():
        result = box["result"] = Runner.run_streamed(agent, "go", run_config=RunConfig(max_function_tool_concurrency=1))
        first = asyncio.ensure_future(drain(result))
        await asyncio.get_running_loop().run_in_executor(None, cancelled.wait, 10)
        with pytest.raises(UserError, match="still going on"):
            Runner.run_streamed(agent, result.to_state())
        await first  # read to the end: now it may go on
        resumed = Runner.run_streamed(agent, result.to_state())
        await drain(resumed)
        return resumed

    resumed = asyncio.run(main())
    assert resumed.final_output == "done" and ran == [1, 2] and len(model.calls) == 2


def cancel_awaited(agent, started, input="go", then=lambda: None, **run_options):
    """Await `Runner.run(agent, input, ...)`, cancelling the awaiting task once `started` is set (then `then()`)."""
    async def main():
        task = asyncio.ensure_future(Runner.run(agent, input, **run_options))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        task.cancel()
        then()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())


def slow_payment(ran, started):
    """An async tool that pays (records its call), then awaits a minute: a cancel stops it there."""
    @function_tool
    async def pay(n: int) -> str:
        ran.append(n)
        started.set()
        await asyncio.sleep(60)
        return f"paid {n}"
    return pay


def wait_until(condition, seconds=30):
    """Wait (polling) until `condition()` holds: a cancelled run goes on stopping in its own thread."""
    for _ in range(int(seconds * 10)):
        if condition():
            return
        threading.Event().wait(0.1)
    raise AssertionError("the condition never held")


def stream_and_cancel(result, ready):
    """Read a streamed run to its end, cancelling it (from another thread) once `ready` is set."""
    async def drain():
        threading.Thread(target=lambda: (ready.wait(30), result.cancel()), daemon=True).start()
        async for _ in result.stream_events():
            pass
    asyncio.run(drain())


def paying_agent(ran, **agent_options):
    @function_tool(**agent_options.pop("tool_options", {}))
    async def pay(n: int) -> str:
        ran.append(n)
        return f"paid {n}"
    return make_agent([[function_call("pay", {"n": 1}, call_id="c1")], [assistant_message("end")]], tools=[pay],
                      **agent_options)


@pytest.mark.parametrize("with_session", [False, True], ids=["no session", "SQLiteSession"])
def test_a_call_a_cancel_stopped_in_its_async_input_guardrail_is_said_to_have_never_started(with_session):
    """Its tool never started. Without a ledger a resume runs it. The ledger had claimed it (the claim comes before
    the guardrails): it records that it never started, and a resume tells the model so, which may call it again.
    It told the model "not run again: an earlier resume already started it"; a claim is never taken twice (taking
    it again let a crash or a second worker run the call twice)."""
    from miniagents.ledger import NEVER_STARTED

    from miniagents import ToolGuardrailFunctionOutput, tool_input_guardrail

    checking, ran, slow = threading.Event(), [], [True]

    @tool_input_guardrail
    async def check(data):
        checking.set()
        if slow[0]:
            await asyncio.sleep(60)
        return ToolGuardrailFunctionOutput.allow()

    session = SQLiteSession("s") if with_session else None
    agent, model = paying_agent(ran, tool_options={"tool_input_guardrails": [check]})
    result = Runner.run_streamed(agent, "go", session=session)
    stream_and_cancel(result, checking)
    state = result.to_state()
    assert ran == [] and state.pending is not None
    slow[0] = False
    assert Runner.run_sync(agent, state, session=session).final_output == "end"
    if session is None:
        assert ran == [1] and model.calls[1].input[-1]["output"] == "paid 1"
    else:
        assert ran == [] and model.calls[1].input[-1]["output"] == NEVER_STARTED
        assert session.lookup_call(state.run_id, "c1") == (True, NEVER_STARTED)


def test_a_cancel_a_plugin_hears_after_the_call_returned_keeps_its_output_and_never_runs_it_again():
    """The `tool_call` seam is left after the tool returned (upstream's async on_tool_end runs there): a cancel
    then stops the run at its next step, and the call keeps the output it returned."""
    import contextlib

    from miniagents import caller, seams

    leaving, ran = threading.Event(), []

    class SlowToLeave(seams.Plugin):
        def tool_call(self, run, step):
            @contextlib.contextmanager
            def around():
                yield
                caller.resolve(leave())  # cancelled
            return around()

    async def leave():
        leaving.set()
        await asyncio.sleep(60)

    agent, model = paying_agent(ran)
    result = Runner.run_streamed(agent, "go", plugins=[SlowToLeave()])
    stream_and_cancel(result, leaving)
    state = result.to_state()
    outputs = [item["output"] for item in result.to_input_list() if item.get("type") == "function_call_output"]
    assert outputs == ["paid 1"] and state.pending is None
    assert Runner.run_sync(agent, state).final_output == "end" and ran == [1]


def test_a_cancel_that_stops_a_call_midway_never_makes_its_text_the_final_output():
    """`stop_on_first_tool` ends a run with a tool's result; a call stopped midway has none: the continue asks
    the model (the text "it may or may not have happened" was the final output the plugins heard, and the run
    was over)."""
    from miniagents import seams

    started, ran, heard = threading.Event(), [], []

    class Listener(seams.Plugin):
        def final_output(self, run, agent, output):
            heard.append(output)

    pay = slow_payment(ran, started)
    session = SQLiteSession("s")
    agent, model = make_agent([[function_call("pay", {"n": 1}, call_id="c1")], [assistant_message("end")]],
                              tools=[pay], tool_use_behavior="stop_on_first_tool")

    cancel_awaited(agent, started, session=session, plugins=[Listener()])
    wait_until(lambda: session.read_journal() or len(session.get_items()) > 1)  # the run stops in its own thread
    assert heard == []
    assert Runner.run_sync(agent, [], session=session).final_output == "end"
    assert ran == [1] and model.calls[1].input[-1]["output"] == STOPPED_MIDWAY


def test_an_async_tool_that_is_cancelled_by_itself_fails_as_the_tool_and_the_run_goes_on():
    """A task the tool awaited was cancelled, not the run: that is the tool's failure, told to the model as one."""
    @function_tool
    async def flaky() -> str:
        inner = asyncio.ensure_future(asyncio.sleep(60))
        asyncio.get_running_loop().call_soon(inner.cancel)
        await inner
        return "never"

    agent, model = make_agent([[function_call("flaky", {}, call_id="c1")], [assistant_message("end")]],
                              tools=[flaky])
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "end"
    told = model.calls[1].input[-1]["output"]
    assert told != STOPPED_MIDWAY and "error" in told.lower()


def test_a_continue_of_an_agent_tool_a_cancel_stopped_inside_goes_on_without_asking_anyone():
    """The awaited run is cancelled while the agent tool's inner async tool runs: its pause (the inner run's state)
    is journaled, and the continue resumes the inner run, asking no one (it asked a person to approve the agent
    tool's call, which the ledger found claimed with no outcome), and runs nothing twice."""
    started, ran = threading.Event(), []

    pay = slow_payment(ran, started)
    inner, inner_model = make_agent([[function_call("pay", {"n": 1}, call_id="i1")], [assistant_message("paid")]],
                                    name="Inner", tools=[pay])
    outer, model = make_agent([[function_call("helper", {"input": "x"}, call_id="o1")], [assistant_message("done")]],
                              name="Outer", tools=[inner.as_tool("helper", "Pays.")])
    session = SQLiteSession("s")

    cancel_awaited(outer, started, session=session)
    wait_until(lambda: '"pending_turn": {' in session.read_journal())  # the run stops, and journals its pause
    result = Runner.run_sync(outer, [], session=session)
    assert result.interruptions == [] and result.final_output == "done" and ran == [1]
    assert inner_model.calls[1].input[-1]["output"] == STOPPED_MIDWAY
    assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["paid"]


def test_a_continue_after_a_resume_cancelled_as_its_agent_tools_inner_run_ended_never_runs_that_run_again():
    """The awaited resume is cancelled while the agent tool's inner run asks for its last answer; the inner run ends
    (its thread goes on), and the pause journaled holds it ended, the call's outcome never recorded. The continue
    started that ended run again: a UserError, told to the model as the tool's failure (a retry would pay again).
    The model is told the call may have happened, and nothing runs again."""
    asking, answer, ran = threading.Event(), threading.Event(), []

    def last_answer(call):
        asking.set()
        answer.wait(30)
        wait_until(lambda: state.cancel_mode == "immediate")  # the cancel came while it asked (else the whole run
        return [assistant_message("clerk done")]  # could end before the awaiting task's cancel reached it)

    @function_tool
    def pay(n: int) -> str:
        ran.append(("pay", n))
        return "paid"

    @function_tool(needs_approval=True)
    def refund(n: int) -> str:
        ran.append(("refund", n))
        return "refunded"

    inner, _ = make_agent([[function_call("pay", {"n": 5}, call_id="i1"), function_call("refund", {"n": 2},
                                                                                        call_id="i2")], last_answer],
                          name="Inner", tools=[pay, refund])
    outer, _ = make_agent([[function_call("helper", {"input": "x"}, call_id="o1")], [assistant_message("done")]],
                          name="Outer", tools=[inner.as_tool("helper", "Pays and refunds.")])
    session = SQLiteSession("s")
    state = Runner.run_sync(outer, "go", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    cancel_awaited(outer, asking, input=state, then=answer.set, session=session)
    wait_until(lambda: '"finished": true' in session.read_journal())  # the inner run ended, its pause journaled
    assert Runner.run_sync(outer, [], session=session).final_output == "done"
    assert ran == [("pay", 5), ("refund", 2)]
    outputs = [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and "may or may not have happened" in outputs[0]


@pytest.mark.parametrize("where", ["in the tool", "in its output guardrail"])
@pytest.mark.parametrize("behavior", ["stop_on_first_tool", {"stop_at_tool_names": ["pay"]}], ids=["first", "names"])
def test_a_turn_cut_short_by_a_cancel_and_paused_never_ends_with_the_stopped_text_when_it_resumes(behavior, where):
    """One call stopped midway (or its output withheld), the next one kept from starting: the turn pauses, and its
    resume runs the second and asks the model (the first call's text became the final output once the turn
    resumed)."""
    from miniagents import RunConfig, ToolGuardrailFunctionOutput, tool_output_guardrail

    started, ran, slow = threading.Event(), [], [True]

    @tool_output_guardrail
    async def check(data):
        if where == "in its output guardrail" and slow[0]:
            started.set()
            await asyncio.sleep(60)
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_output_guardrails=[check])
    async def pay(n: int) -> str:
        ran.append(n)
        if where == "in the tool" and n == 1:
            started.set()
            await asyncio.sleep(60)
        return f"paid {n}"

    agent, model = make_agent([[function_call("pay", {"n": 1}, call_id="c1"), function_call("pay", {"n": 2},
                                                                                           call_id="c2")],
                               [assistant_message("end")]], tools=[pay], tool_use_behavior=behavior)
    config = RunConfig(max_function_tool_concurrency=1)
    result = Runner.run_streamed(agent, "go", run_config=config)
    stream_and_cancel(result, started)
    state = result.to_state()
    assert state.pending is not None and ran == [1]
    slow[0] = False
    resumed = Runner.run_sync(agent, state, run_config=config)
    assert resumed.final_output == "end" and ran == [1, 2] and len(model.calls) == 2


def test_an_async_guardrail_cancelled_by_itself_is_a_user_error_not_a_quiet_cancel():
    """No one cancelled the run: a CancelledError of its own is the guardrail's failure, raised as a typed error
    (it ended the run quietly as cancelled, and then escaped it bare)."""
    from miniagents import GuardrailFunctionOutput, UserError, input_guardrail

    @input_guardrail
    async def flaky(ctx, agent, input):
        inner = asyncio.ensure_future(asyncio.sleep(60))
        asyncio.get_running_loop().call_soon(inner.cancel)
        await inner
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    agent, _ = make_agent([[assistant_message("end")]], input_guardrails=[flaky])
    with pytest.raises(UserError, match="CancelledError, though the run was not cancelled"):
        Runner.run_sync(agent, "go")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_call_whose_input_guardrail_saw_the_run_cancelled_never_starts_and_runs_on_resume(kind):
    """The cancel came while the tool's input guardrail checked the call: the tool started anyway (an async one was
    then stopped at its first await, its payment half made), though a call a cancel finds waiting never starts."""
    from miniagents import RunState, ToolGuardrailFunctionOutput, tool_input_guardrail

    holder, ran = {}, []

    @tool_input_guardrail
    def check(data):
        if not ran and holder["cancel"]:
            holder["cancel"] = False
            holder["state"].cancel()  # Stop pressed while the guardrail checks the call
        return ToolGuardrailFunctionOutput.allow()

    async def charge_async(cents: int) -> str:
        ran.append(cents)
        await asyncio.sleep(0.01)
        return "charged"

    def charge_sync(cents: int) -> str:
        ran.append(cents)
        return "charged"

    charge = function_tool(charge_sync if kind == "sync" else charge_async, name_override="charge",
                           tool_input_guardrails=[check])
    agent, _ = make_agent([[function_call("charge", {"cents": 5}, call_id="k1")], [assistant_message("done")]],
                          tools=[charge])
    state = holder["state"] = RunState(None, "pay", agent)
    holder["cancel"] = True
    assert Runner.run_sync(agent, state).final_output is None and ran == []
    assert Runner.run_sync(agent, state).final_output == "done" and ran == [5]


# --- What a second attack on runs, threads and event loops found ------------------------------------------------


@pytest.mark.parametrize("end", ["a pause", "a final output"])
def test_a_cancel_racing_the_end_of_a_stream_never_hides_what_the_run_ended_with(end):
    """cancel() from another thread (a Stop button) as the run ends: the cancel saw the run still going, the run then
    ended, and the cancel's own "what the run had done" replaced the run's end: no interruptions (the person was never
    asked, though the state waits for them), or no final output (though the session holds the answer)."""
    from miniagents import RunState

    @function_tool(needs_approval=end == "a pause")
    def pay(n: int) -> str:
        return f"paid {n}"

    agent, _ = make_agent([[function_call("pay", {"n": 1}, call_id="c1")], [assistant_message("done")]],
                          tools=[pay])
    result, checked = Runner.run_streamed(agent, "pay"), threading.Event()
    stop, last = result._stop, "tool_called" if end == "a pause" else "message_output_created"

    def stop_once_the_run_ended(mode):  # the thread switch: the run ends between cancel()'s check and its stop
        checked.set()
        for _ in range(1000):
            if result.to_state().running is None:
                break
            threading.Event().wait(0.01)
        stop(mode)

    result._stop = stop_once_the_run_ended
    canceller = threading.Thread(target=result.cancel)

    async def read():
        async for event in result.stream_events():
            if event.type == "run_item_stream_event" and event.name == last:
                canceller.start()
                assert checked.wait(10)  # cancel() saw the run going on; the run goes on to its end

    asyncio.run(read())
    canceller.join(10)
    assert not canceller.is_alive() and result.is_complete
    if end == "a pause":
        assert [i.call_id for i in result.interruptions] == ["c1"] and result.to_state().get_interruptions()
    else:
        assert result.final_output == "done" and result.to_state().finished


STREAM_CONTEXT = contextvars.ContextVar("stream_context", default=None)


def test_a_streamed_run_sees_the_context_variables_of_where_it_was_started():
    """As upstream's, whose `run_streamed` starts its task at once: `with trace(...)` (or a request id) around
    `run_streamed` reaches its tools, guardrails and instructions, even when the events are read elsewhere (by the
    caller of a function that returned the stream, in another thread). They saw the reader's variables instead."""
    from miniagents import GuardrailFunctionOutput, input_guardrail

    seen = []

    @function_tool
    def who() -> str:
        seen.append(("tool", STREAM_CONTEXT.get()))
        return "ok"

    @function_tool
    async def who_async() -> str:
        seen.append(("async tool", STREAM_CONTEXT.get()))
        return "ok"

    @input_guardrail
    def checked(ctx, agent, given):
        seen.append(("guardrail", STREAM_CONTEXT.get()))
        return GuardrailFunctionOutput(None, False)

    def instructions(ctx, agent):
        seen.append(("instructions", STREAM_CONTEXT.get()))
        return "answer"

    agent, _ = make_agent([[function_call("who", "{}", call_id="c1"), function_call("who_async", "{}", call_id="c2")],
                           [assistant_message("end")]], tools=[who, who_async], input_guardrails=[checked],
                          instructions=instructions)

    def started_here():
        token = STREAM_CONTEXT.set("request-7")
        try:
            return Runner.run_streamed(agent, "go")
        finally:
            STREAM_CONTEXT.reset(token)

    result, box = started_here(), {}
    reader = threading.Thread(target=lambda: box.setdefault("types", consume(result)))
    reader.start()
    reader.join(30)
    assert not reader.is_alive() and result.final_output == "end"
    assert sorted(set(seen)) == [("async tool", "request-7"), ("guardrail", "request-7"),
                                 ("instructions", "request-7"), ("tool", "request-7")]


TOOL_CONTEXT = contextvars.ContextVar("tool_context", default="the caller's")


@pytest.mark.parametrize("calls", ["a lone call", "calls one at a time", "calls at once"])
def test_a_sync_tool_that_sets_a_context_variable_changes_it_for_itself_alone(calls):
    """Upstream runs a sync tool with `asyncio.to_thread`, which copies the context: what the tool sets stays its
    own. A lone call here (or calls one at a time) ran in the run's own context, so what a tool set was what the
    next turn's instructions, the next tool and the output guardrail saw; calls at once, in threads, did not leak."""
    from miniagents import GuardrailFunctionOutput, RunConfig, output_guardrail

    seen = []

    @function_tool
    def login(user: str) -> str:
        seen.append((f"tool {user}", TOOL_CONTEXT.get()))
        TOOL_CONTEXT.set(user)
        return "ok"

    @output_guardrail
    def answered(ctx, agent, output):
        seen.append(("output guardrail", TOOL_CONTEXT.get()))
        return GuardrailFunctionOutput(None, False)

    def instructions(ctx, agent):
        seen.append(("instructions", TOOL_CONTEXT.get()))
        return "answer"

    first = [function_call("login", {"user": "ann"}, call_id="c1")]
    if calls != "a lone call":
        first.append(function_call("login", {"user": "bob"}, call_id="c2"))
    agent, _ = make_agent([first, [function_call("login", {"user": "cy"}, call_id="c3")], [assistant_message("end")]],
                          tools=[login], output_guardrails=[answered], instructions=instructions)
    config = RunConfig(max_function_tool_concurrency=1 if calls == "calls one at a time" else None)
    assert Runner.run_sync(agent, "go", run_config=config).final_output == "end"
    assert {value for _, value in seen} == {"the caller's"}, seen


def test_what_a_run_sync_callable_sets_in_a_context_variable_stays_in_that_run():
    """`Runner.run_sync` ran the loop in its caller's own context: what instructions (or a hook, a guardrail) set
    was the caller's after the run, and the next run's. Upstream's `run_sync` runs the loop under `asyncio.run`,
    which copies the context, as `await Runner.run` and a stream here do."""
    seen = []

    def instructions(ctx, agent):
        seen.append(TOOL_CONTEXT.get())
        TOOL_CONTEXT.set("set in the run")
        return "answer"

    for _ in range(2):
        agent, _ = make_agent([[assistant_message("end")]], instructions=instructions)
        assert Runner.run_sync(agent, "go").final_output == "end"
    assert TOOL_CONTEXT.get() == "the caller's" and seen == ["the caller's", "the caller's"]
