"""Upstream's `error_handlers` (miniagents/upstream/error_handlers.py, on the kernel's `answer_error` seam): an
error a run could answer (`max_turns`, an unparsable structured answer, a refusal, a usage limit) becomes the final
output a handler gives, or raises when it gives None."""
from __future__ import annotations

import asyncio

import pytest

from miniagents import MaxTurnsExceeded, RunConfig, function_tool
from miniagents.testing import assistant_message, function_call
from miniagents.upstream import RunErrorHandlerResult, Runner
from support import make_agent


def item_types(result):
    return [i.type for i in result.new_items]


@function_tool
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


def _looping_steps(n):
    return [[function_call("echo", {"text": str(i)}, call_id=f"c{i}")] for i in range(n)]


def test_a_max_turns_error_handler_turns_the_error_into_a_final_output():
    seen = {}

    def on_max_turns(data):
        seen["error"] = data.error
        seen["items"] = [i.type for i in data.run_data.new_items]
        seen["agent"] = data.run_data.last_agent
        return RunErrorHandlerResult(final_output="gave up politely", include_in_history=True)

    agent, model = make_agent(_looping_steps(5), tools=[echo])
    result = Runner.run_sync(agent, "loop", max_turns=2, error_handlers={"max_turns": on_max_turns})
    assert result.final_output == "gave up politely"
    assert len(model.calls) == 2
    assert isinstance(seen["error"], MaxTurnsExceeded)
    assert seen["items"] == ["tool_call_item", "tool_call_output_item"] * 2
    assert seen["agent"] is agent
    last = result.new_items[-1]
    assert last.type == "message_output_item"
    assert last.raw_item["content"][0]["text"] == "gave up politely"
    assert last.raw_item.content[0].text == "gave up politely"  # upstream's is a typed message: read by attribute


def test_a_max_turns_error_handler_returning_a_raw_value_uses_it_without_touching_history():
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    result = Runner.run_sync(agent, "loop", max_turns=1,
                             error_handlers={"max_turns": lambda data: {"final_output": "x",
                                                                        "include_in_history": False}})
    assert result.final_output == "x"
    assert item_types(result) == ["tool_call_item", "tool_call_output_item"]


def test_a_final_output_nested_deeper_than_python_recurses_kept_in_history_is_a_user_error():
    """An error handler's output written into the history as text: nested deeper than JSON's encoder recurses, that
    was a bare RecursionError out of the run."""
    import functools

    from miniagents import UserError

    deep = functools.reduce(lambda inner, _: {"k": inner}, range(100_000), {})  # past any Python's (3.13 takes 5,000)
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    with pytest.raises(UserError, match="Invalid run error handler final_output: .*cannot be kept in the history"):
        Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda data: RunErrorHandlerResult(
            final_output=deep, include_in_history=True)})


def test_a_max_turns_error_handler_returning_none_reraises():
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    with pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda data: None})


def test_an_invalid_final_output_error_handler_supplies_the_final_output():
    from dataclasses import dataclass

    @dataclass
    class Answer:
        value: int

    handled = []

    def on_invalid(data):
        handled.append(data.error)
        return '{"response": {"value": 7}}'

    agent, model = make_agent([[assistant_message("not json at all")]], output_type=Answer)
    result = Runner.run_sync(agent, "go", error_handlers={"invalid_final_output": on_invalid})
    assert result.final_output == Answer(7)
    assert len(handled) == 1 and "not json at all" in str(handled[0])
    assert len(model.calls) == 1


def test_an_error_handlers_final_output_is_validated_against_the_output_type():
    from dataclasses import dataclass

    @dataclass
    class Answer:
        value: int

    agent, _ = make_agent([[assistant_message("not json")]], output_type=Answer)
    result = Runner.run_sync(agent, "go", error_handlers={
        "invalid_final_output": lambda data: RunErrorHandlerResult(final_output={"value": 7},
                                                                   include_in_history=False)})
    assert result.final_output == Answer(7)


def test_the_handlers_ride_on_the_run_config_whichever_config_the_program_gives():
    from miniagents.upstream import RunConfig as UpstreamRunConfig

    for config in (None, RunConfig(workflow_name="kernel's"), UpstreamRunConfig(workflow_name="upstream's"), {}):
        agent, _ = make_agent(_looping_steps(5), tools=[echo])
        result = Runner.run_sync(agent, "loop", max_turns=1, run_config=config,
                                 error_handlers={"max_turns": lambda data: "stopped"})
        assert result.final_output == "stopped"
        if config:
            assert config.error_handlers is None if isinstance(config, UpstreamRunConfig) else True  # not changed


def test_a_kind_with_no_handler_goes_on_as_the_kernel_does():
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    with pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"model_refusal": lambda data: "never asked"})


def test_the_kernels_runner_takes_no_error_handlers():
    from miniagents import Runner as KernelRunner

    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    with pytest.raises(TypeError, match="error_handlers"):
        KernelRunner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda data: "x"})


def test_a_streamed_run_ends_with_the_handlers_answer_and_its_events_say_so():
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    result = Runner.run_streamed(agent, "loop", max_turns=2, error_handlers={"max_turns": lambda data: "stopped"})

    async def read():
        return [event async for event in result.stream_events()]
    events = asyncio.run(read())
    assert result.final_output == "stopped" and result.is_complete
    said = [e.item.raw_item["content"][0]["text"] for e in events
            if e.type == "run_item_stream_event" and e.item.type == "message_output_item"]
    assert said == ["stopped"]  # the handler's message is streamed as the turn's last item, as it joins the history
    assert result.new_items[-1].raw_item["content"][0]["text"] == "stopped"


def test_a_usage_limit_handler_answers_for_calls_held_by_the_limit_and_none_of_them_runs():
    from miniagents import UsageLimits

    ran = []

    @function_tool
    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return f"counted {n}"

    steps = [[function_call("count", {"n": t * 10 + k}, call_id=f"t{t}c{k}") for k in range(3)] for t in range(3)]
    agent, model = make_agent(steps, tools=[count])
    seen = []
    result = Runner.run_sync(agent, "go", run_config=RunConfig(usage_limits=UsageLimits(tool_calls_limit=4)),
                             error_handlers={"usage_limit": lambda data: seen.append(data.error.limit) or "enough"})
    assert result.final_output == "enough" and seen == ["tool_calls_limit"]
    assert ran == [0, 1, 2] and len(model.calls) == 2  # the second turn's three calls would pass the limit


def test_a_handler_that_raises_stops_the_run_with_its_own_error():
    class Refused(Exception):
        pass

    def handler(data):
        raise Refused("no answer")

    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    with pytest.raises(Refused, match="no answer"):
        Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": handler})


def test_an_agent_tools_inner_run_raises_to_its_caller_whose_handler_answers():
    inner, inner_model = make_agent(_looping_steps(12), tools=[echo])
    outer, outer_model = make_agent([[function_call("looper", {"input": "go"}, call_id="o1")]] + _looping_steps(5),
                                    tools=[inner.as_tool("looper", "Loops."), echo])
    result = Runner.run_sync(outer, "go", max_turns=2, error_handlers={"max_turns": lambda data: "outer stopped"})
    # the inner run has its own max_turns (10) and no handler of its own: it stops at its limit, a failure of the
    # call (the caller's model is told the failure text); then the caller reaches its own limit, which its handler
    # answers
    assert len(inner_model.calls) == 10 and len(outer_model.calls) == 2
    sent = [i for i in outer_model.calls[1].input if i.get("type") == "function_call_output"]
    assert sent[0]["output"] == "An error occurred while running the tool. Please try again."
    assert result.final_output == "outer stopped"
