"""Upstream's `function_tool(custom_data_extractor=...)` (the upstream shell's custom_data.py): data for the
program kept on `ToolCallOutputItem.custom_data`, in RunState JSON, never sent to the model; what JSON cannot hold
is refused; an extractor that fails never makes its call run again."""
from __future__ import annotations

import functools
import json
import math

import pytest

from miniagents import RunState, SQLiteSession, ToolCallOutputItem, UserError
from miniagents.upstream import Agent, FunctionToolCustomDataContext, Runner, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call


def lookup_agent(extractor, calls, answers=("done",), **tool_options):
    @function_tool(custom_data_extractor=extractor, **tool_options)
    def lookup(city: str) -> str:
        calls.append(city)
        return f"sunny in {city}"

    model = ScriptedModel([[function_call("lookup", {"city": "Oslo"}, call_id="c1")]]
                          + [[assistant_message(a)] for a in answers])
    return Agent(name="Weather", tools=[lookup], model=model), model


def output_items(result):
    return [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]


@pytest.mark.parametrize("is_async", [False, True])
def test_the_extractors_mapping_is_on_the_output_item_and_never_reaches_the_model(is_async):
    seen = []

    def extract(ctx):
        seen.append(ctx)
        return {"call_id": ctx.raw_item["call_id"], "output": ctx.output, "rows": [1, 2]}

    async def extract_async(ctx):
        return extract(ctx)

    calls = []
    agent, model = lookup_agent(extract_async if is_async else extract, calls)
    result = Runner.run_sync(agent, "weather?")
    (item,) = output_items(result)
    assert item.custom_data == {"call_id": "c1", "output": "sunny in Oslo", "rows": [1, 2]}
    (ctx,) = seen
    assert isinstance(ctx, FunctionToolCustomDataContext) and ctx.tool is agent.tools[0]
    assert ctx.tool_context.tool_call_id == "c1"
    assert ctx.raw_item == {"type": "function_call_output", "call_id": "c1", "output": "sunny in Oslo"}
    assert "rows" not in json.dumps(model.last_call.input) and "rows" not in json.dumps(result.to_input_list())


@pytest.mark.parametrize("returned", [None, {}])
def test_nothing_returned_means_no_custom_data(returned):
    agent, _ = lookup_agent(lambda ctx: returned, [])
    (item,) = output_items(Runner.run_sync(agent, "weather?"))
    assert item.custom_data is None


@pytest.mark.parametrize("returned, message", [
    ({"bad": object()}, "custom_data_extractor must return JSON-compatible data"),
    ({"score": math.nan}, "custom_data_extractor must return JSON-compatible data"),
    ({"score": math.inf}, "custom_data_extractor must return JSON-compatible data"),
    (["not", "a", "mapping"], "custom_data_extractor must return a mapping or None"),
    ({1: "x"}, "custom_data_extractor must return a mapping with string keys"),
    (functools.reduce(lambda inner, _: {"k": inner}, range(100_000), {}),  # deeper than JSON's encoder recurses
     # on every Python (3.13's takes 5,000)
     "custom_data_extractor must return JSON-compatible data"),
])
def test_what_json_cannot_hold_is_refused_with_a_user_error(returned, message):
    agent, _ = lookup_agent(lambda ctx: returned, [])
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent, "weather?")


@pytest.mark.parametrize("extractor", [5, "rows"])
def test_an_extractor_that_cannot_be_called_is_refused_where_the_tool_is_made(extractor):
    """It was a bare TypeError out of the run once the tool's first call had run (its side effect done)."""
    def weather(city: str) -> str:
        return city

    with pytest.raises(UserError, match="custom_data_extractor must be a callable or None, got"):
        function_tool(custom_data_extractor=extractor)(weather)


def test_the_kept_data_is_a_copy():
    kept = {"nested": {"n": 1}}
    agent, _ = lookup_agent(lambda ctx: kept, [])
    (item,) = output_items(Runner.run_sync(agent, "weather?"))
    kept["nested"]["n"] = 2
    assert item.custom_data == {"nested": {"n": 1}}


def test_custom_data_survives_the_run_state_json_round_trip():
    """The first call's output carries custom data; the second call waits for approval; the JSON keeps it."""
    @function_tool(custom_data_extractor=lambda ctx: {"city": ctx.output})
    def lookup(city: str) -> str:
        return city

    @function_tool(needs_approval=True)
    def book(city: str) -> str:
        return f"booked {city}"

    model = ScriptedModel([[function_call("lookup", {"city": "Oslo"}, call_id="c1")],
                           [function_call("book", {"city": "Oslo"}, call_id="c2")], [assistant_message("ok")]])
    agent = Agent(name="Trip", tools=[lookup, book], model=model)
    paused = Runner.run_sync(agent, "plan")
    text = paused.to_state().to_string()
    assert json.loads(text)["generated_items"][1]["custom_data"] == {"city": "Oslo"}
    state = RunState.from_string(agent, text)
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(agent, state)
    first = [i for i in output_items(result) if i.call_id == "c1"]
    assert [i.custom_data for i in first] == [{"city": "Oslo"}] and result.final_output == "ok"


def test_an_extractor_that_raises_fails_the_run_but_its_approved_call_never_runs_again(tmp_path):
    """The call ran, then its extractor raised: the failed resume keeps the call in the session's history (what it
    did is unknown to the run, so the history says it may have happened), and a take-over of that pause is refused
    as completed instead of running the call again."""
    from miniagents.errors import AlreadyResumedError
    from miniagents.turn import STOPPED_MIDWAY

    calls, session = [], SQLiteSession("s", str(tmp_path / "db"))

    def extract(ctx):
        raise RuntimeError("extractor broke")

    agent, _ = lookup_agent(extract, calls, needs_approval=True)
    text = Runner.run_sync(agent, "weather?", session=session).to_state().to_string()
    state = RunState.from_string(agent, text)
    state.approve(state.get_interruptions()[0])
    with pytest.raises(RuntimeError, match="extractor broke"):
        Runner.run_sync(agent, state, session=session)
    assert calls == ["Oslo"]
    assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == [STOPPED_MIDWAY]
    again = RunState.from_string(agent, text)
    again.take_over()
    again.approve(again.get_interruptions()[0])
    with pytest.raises(AlreadyResumedError) as refused:
        Runner.run_sync(agent, again, session=session)
    assert refused.value.outcome == "completed" and calls == ["Oslo"]


def test_a_cancel_while_the_extractor_runs_keeps_the_calls_output_and_never_runs_it_again():
    """The call returned before its extractor ran: the run stops at its next step, the output kept (it was left
    with no output, and a resume ran the tool again)."""
    import asyncio
    import threading

    extracting, calls = threading.Event(), []

    async def slow_extractor(ctx):
        extracting.set()
        await asyncio.sleep(60)

    agent, model = lookup_agent(slow_extractor, calls)
    result = Runner.run_streamed(agent, "go")

    async def read_and_cancel():
        threading.Thread(target=lambda: (extracting.wait(30), result.cancel()), daemon=True).start()
        async for _ in result.stream_events():
            pass

    asyncio.run(read_and_cancel())
    state = result.to_state()
    assert [i.output for i in output_items(result)] == ["sunny in Oslo"] and state.pending is None
    assert Runner.run_sync(agent, state).final_output == "done" and calls == ["Oslo"]
