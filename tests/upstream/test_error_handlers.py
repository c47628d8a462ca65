"""Upstream's `error_handlers` (miniagents/upstream/error_handlers.py, on the kernel's `answer_error` seam): an
error a run could answer (`max_turns`, an unparsable structured answer, a refusal, a usage limit) becomes the final
output a handler gives, or raises when it gives None."""
from __future__ import annotations

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


def test_a_max_turns_error_handler_returning_a_raw_value_uses_it_without_touching_history():
    agent, _ = make_agent(_looping_steps(5), tools=[echo])
    result = Runner.run_sync(agent, "loop", max_turns=1,
                             error_handlers={"max_turns": lambda data: {"final_output": "x",
                                                                        "include_in_history": False}})
    assert result.final_output == "x"
    assert item_types(result) == ["tool_call_item", "tool_call_output_item"]


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
