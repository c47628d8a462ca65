"""Specification of the loop (miniagents/run.py): turn decisions, max_turns, entry points, history.

Every test arranges a `ScriptedModel`, runs an agent, and asserts on what the model was sent
(`model.calls[i]`) and what the run returned. Issue 2, behaviours 1, 2, 13 and 14.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from miniagents import (Agent, AgentsException, MaxTurnsExceeded, ModelBehaviorError, ModelRefusalError,
                        ModelSettings, RunConfig, RunContextWrapper, Runner, UserError, function_tool, handoff,
                        input_guardrail, GuardrailFunctionOutput)
from miniagents.testing import ModelStep, ScriptedModel, UnexpectedModelCall, assistant_message, function_call
from support import ROOT, json_values, kinds, make_agent, outputs_sent



def item_types(result):
    return [i.type for i in result.new_items]


calls_made: list = []


@function_tool
def echo(text: str) -> str:
    """Echo the text back."""
    calls_made.append(text)
    return f"echo: {text}"


@pytest.fixture(autouse=True)
def _reset_calls():
    calls_made.clear()


# --- Behaviour 1: the turn decision --------------------------------------------------------------


def test_plain_reply_is_the_final_output_with_one_item_and_the_starting_agent_as_last_agent():
    agent, model = make_agent([[assistant_message("Hello!")]], instructions="Be brief.")
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "Hello!"
    assert item_types(result) == ["message_output_item"]
    assert len(result.raw_responses) == 1
    assert result.last_agent is agent
    assert len(model.calls) == 1
    assert model.calls[0].system_instructions == "Be brief."
    assert model.calls[0].input == [{"content": "hi", "role": "user"}]
    model.assert_complete()


def test_assistant_text_in_a_response_with_a_tool_call_is_not_final():
    agent, model = make_agent([
        [assistant_message("Let me check."), function_call("echo", {"text": "a"}, call_id="c1")],
        [assistant_message("Done: echo: a")],
    ], tools=[echo])
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "Done: echo: a"
    assert calls_made == ["a"]
    assert len(model.calls) == 2
    assert kinds(model.calls[1].input) == ["user", "msg", "call:c1", "out:c1"]
    assert outputs_sent(model.calls[1]) == {"c1": "echo: a"}
    assert kinds(result.to_input_list()) == ["user", "msg", "call:c1", "out:c1", "msg"]
    assert item_types(result) == ["message_output_item", "tool_call_item", "tool_call_output_item",
                                  "message_output_item"]


def test_a_handoff_wins_over_a_tool_use_behavior_final_output():
    target, target_model = make_agent([[assistant_message("from target")]], name="Target")
    agent, model = make_agent([[function_call("echo", {"text": "x"}, call_id="c1"),
                                function_call("transfer_to_target", "{}", call_id="h1")]],
                              tools=[echo], handoffs=[target], tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "from target"
    assert result.last_agent is target
    assert calls_made == ["x"]  # the same-response tool still ran
    assert len(target_model.calls) == 1


def test_a_tool_use_behavior_final_output_wins_over_running_again():
    agent, model = make_agent([[assistant_message("not final"), function_call("echo", {"text": "t"}, call_id="c1")]],
                              tools=[echo], tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "echo: t"
    assert len(model.calls) == 1


def test_a_pending_approval_wins_over_a_handoff():
    @function_tool(needs_approval=True)
    def delete_everything() -> str:
        calls_made.append("deleted")
        return "deleted"

    target, target_model = make_agent([[assistant_message("never")]], name="Target")
    agent, model = make_agent([[function_call("delete_everything", "{}", call_id="c1"),
                                function_call("transfer_to_target", "{}", call_id="h1")]],
                              tools=[delete_everything], handoffs=[target])
    result = Runner.run_sync(agent, "go")
    assert result.final_output is None
    assert [i.type for i in result.interruptions] == ["tool_approval_item"]
    assert result.interruptions[0].raw_item["call_id"] == "c1"
    assert result.last_agent is agent
    assert target_model.calls == ()
    assert calls_made == []


def test_a_response_with_only_an_unknown_tool_call_runs_again_instead_of_ending():
    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]])
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "ok"
    assert len(model.calls) == 2


def test_an_empty_response_from_a_text_agent_is_an_empty_final_output_with_no_items():
    agent, model = make_agent([[]])
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == ""
    assert result.new_items == []
    assert len(model.calls) == 1


def test_final_output_is_the_last_message_of_a_response_with_several_messages():
    agent, _ = make_agent([[assistant_message("first"), assistant_message("second")]])
    assert Runner.run_sync(agent, "hi").final_output == "second"



def _refusal(*parts):
    """An assistant message whose content is `parts` ending with a refusal part."""
    return {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
            "content": [*parts, {"type": "refusal", "refusal": "I can't help with that."}]}


@pytest.mark.parametrize("streamed", [False, True])
def test_a_refusal_as_the_final_message_raises_model_refusal_error_carrying_the_refusal(streamed):
    agent, model = make_agent([[_refusal()]])
    with pytest.raises(ModelRefusalError) as info:
        _stream(agent, "hi") if streamed else Runner.run_sync(agent, "hi")
    assert info.value.refusal == "I can't help with that."
    assert str(info.value) == "Model refused to produce output: I can't help with that."
    assert [i.type for i in info.value.run_data.new_items] == ["message_output_item"]
    assert len(model.calls) == 1


def test_a_refusal_beside_text_in_the_final_message_still_raises_model_refusal_error():
    agent, _ = make_agent([[_refusal({"type": "output_text", "text": "Sure,", "annotations": []})]])
    with pytest.raises(ModelRefusalError, match="I can't help with that"):
        Runner.run_sync(agent, "hi")

# --- Behaviour 2: max_turns -----------------------------------------------------------------------


def _looping_steps(n):
    return [[function_call("echo", {"text": str(i)}, call_id=f"c{i}")] for i in range(n)]


def test_max_turns_stops_before_model_call_n_plus_one_and_the_error_carries_the_partial_run():
    agent, model = make_agent(_looping_steps(6), tools=[echo])
    with pytest.raises(MaxTurnsExceeded, match=r"^Max turns \(3\) exceeded$") as info:
        Runner.run_sync(agent, "loop", max_turns=3)
    assert len(model.calls) == 3
    assert model.remaining_steps == 3
    assert calls_made == ["0", "1", "2"]
    data = info.value.run_data
    assert data is not None
    assert [i.type for i in data.new_items] == ["tool_call_item", "tool_call_output_item"] * 3
    assert data.last_agent is agent
    assert data.context_wrapper.usage.requests == 3
    assert len(data.raw_responses) == 3
    assert data.input == "loop"


def test_max_turns_defaults_to_ten():
    agent, model = make_agent(_looping_steps(12), tools=[echo])
    with pytest.raises(MaxTurnsExceeded, match=r"Max turns \(10\) exceeded"):
        Runner.run_sync(agent, "loop")
    assert len(model.calls) == 10


def test_max_turns_counts_model_calls_across_agents():
    specialist, specialist_model = make_agent(_looping_steps(5), name="Specialist", tools=[echo])
    agent, model = make_agent([[function_call("transfer_to_specialist", "{}", call_id="h1")]],
                              handoffs=[specialist])
    with pytest.raises(MaxTurnsExceeded) as info:
        Runner.run_sync(agent, "go", max_turns=3)
    assert len(model.calls) + len(specialist_model.calls) == 3
    assert len(specialist_model.calls) == 2
    assert info.value.run_data.last_agent is specialist


def test_max_turns_none_is_unlimited():
    agent, model = make_agent(_looping_steps(12) + [[assistant_message("finally")]], tools=[echo])
    result = Runner.run_sync(agent, "loop", max_turns=None)
    assert result.final_output == "finally"
    assert len(model.calls) == 13
    assert result.max_turns is None


# --- Entry points -----------------------------------------------------------------------------


def test_await_runner_run_runs_the_same_loop():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("async ok")]],
                              tools=[echo])
    result = asyncio.run(Runner.run(agent, "hi"))
    assert result.final_output == "async ok"
    assert calls_made == ["a"]
    assert len(model.calls) == 2


def test_run_sync_works_inside_a_running_event_loop():
    agent, model = make_agent([[assistant_message("from inside a loop")]])

    async def main():
        return Runner.run_sync(agent, "hi")

    assert asyncio.run(main()).final_output == "from inside a loop"


def test_run_sync_inside_a_running_event_loop_can_run_an_async_tool():
    @function_tool
    async def async_echo(text: str) -> str:
        await asyncio.sleep(0)
        return f"async: {text}"

    agent, model = make_agent([[function_call("async_echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[async_echo])

    async def main():
        return Runner.run_sync(agent, "hi")

    assert asyncio.run(main()).final_output == "ok"
    assert outputs_sent(model.calls[1]) == {"c1": "async: a"}


def test_run_sync_inside_a_running_event_loop_can_use_async_instructions():
    async def instructions(ctx, agent):
        return "async instructions"

    agent, model = make_agent([[assistant_message("ok")]], instructions=instructions)

    async def main():
        return Runner.run_sync(agent, "hi")

    assert asyncio.run(main()).final_output == "ok"
    assert model.calls[0].system_instructions == "async instructions"


def test_an_extra_model_call_raises_the_scripted_models_clear_error():
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")]], tools=[echo])
    with pytest.raises(UnexpectedModelCall, match="no scripted steps remain"):
        Runner.run_sync(agent, "hi")


def test_an_exception_from_the_model_propagates_with_the_partial_run_attached():
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], AgentsException("model down")],
                          tools=[echo])
    with pytest.raises(AgentsException, match="model down") as info:
        Runner.run_sync(agent, "hi")
    assert [i.type for i in info.value.run_data.new_items] == ["tool_call_item", "tool_call_output_item"]


# --- Streaming ------------------------------------------------------------------------------------


def _stream(agent, input, **kw):
    async def go():
        result = Runner.run_streamed(agent, input, **kw)
        events = [e async for e in result.stream_events()]
        return result, events

    return asyncio.run(go())


def _event_names(events):
    names = []
    for e in events:
        name = e.name if e.type == "run_item_stream_event" else e.type
        if not names or name != names[-1] or name != "raw_response_event":
            names.append(name)
    return names


def test_run_streamed_yields_agent_updated_raw_and_item_events_in_order_and_fills_final_output():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")],
                               [assistant_message("streamed answer")]], tools=[echo])
    result, events = _stream(agent, "hi")
    assert _event_names(events) == ["agent_updated_stream_event", "raw_response_event", "tool_called",
                                    "tool_output", "raw_response_event", "message_output_created"]
    assert events[0].new_agent is agent
    deltas = "".join(e.data["delta"] for e in events
                     if e.type == "raw_response_event" and e.data["type"] == "response.output_text.delta")
    assert deltas == "streamed answer"
    assert result.final_output == "streamed answer"
    assert result.is_complete and result.current_turn == 2
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_output_item",
                                                  "message_output_item"]
    assert all(c.streamed for c in model.calls)
    assert "_state" not in repr(result)  # the run's internals (and their context) stay out of a printed result


def test_run_streamed_announces_the_new_agent_after_a_handoff():
    target, _ = make_agent([[assistant_message("target here")]], name="Target")
    agent, _ = make_agent([[function_call("transfer_to_target", "{}", call_id="h1")]], handoffs=[target])
    result, events = _stream(agent, "hi")
    assert _event_names(events) == ["agent_updated_stream_event", "raw_response_event", "handoff_requested",
                                    "handoff_occured", "agent_updated_stream_event", "raw_response_event",
                                    "message_output_created"]
    assert [e.new_agent for e in events if e.type == "agent_updated_stream_event"] == [agent, target]
    assert result.final_output == "target here"
    assert result.last_agent is target


def test_a_streamed_results_items_responses_and_last_agent_fill_as_the_run_goes_as_documented():
    """docs/porting.md: "its fields fill as the run goes". They stayed empty until the run ended: a reader (an upstream
    program) reading `result.last_agent.name` while it handled an event met None, and `new_items` was []."""
    target, _ = make_agent([[assistant_message("target here")]], name="Target")
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")],
                           [function_call("transfer_to_target", "{}", call_id="h1")]], tools=[echo], handoffs=[target])
    result, seen = Runner.run_streamed(agent, "hi"), []

    async def read():
        async for event in result.stream_events():
            if event.type != "raw_response_event":
                seen.append((getattr(event, "name", event.type), len(result.new_items), len(result.raw_responses),
                             result.last_agent.name))

    asyncio.run(read())
    assert seen == [("agent_updated_stream_event", 0, 0, "Assistant"), ("tool_called", 0, 1, "Assistant"),
                    ("tool_output", 2, 1, "Assistant"), ("handoff_requested", 2, 2, "Assistant"),
                    ("handoff_occured", 4, 2, "Target"), ("agent_updated_stream_event", 4, 2, "Target"),
                    ("message_output_created", 4, 3, "Target")]
    assert len(result.new_items) == 5 and result.last_agent is target


def test_run_streamed_raises_max_turns_from_stream_events():
    agent, model = make_agent(_looping_steps(4), tools=[echo])
    with pytest.raises(MaxTurnsExceeded):
        _stream(agent, "hi", max_turns=2)
    assert len(model.calls) == 2



def test_a_model_stream_that_ends_without_response_completed_is_an_agents_exception():
    events = [{"type": "response.created", "response": {"id": "r1", "output": []}},
              {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "delta": "cut off"}]
    agent, _ = make_agent([ModelStep(stream_events=events)])
    with pytest.raises(AgentsException, match="^the model's stream ended without a response.completed event$"):
        _stream(agent, "hi")

# --- RunResult ---------------------------------------------------------------------------------------


def test_last_response_id_is_the_id_of_the_runs_last_model_response():
    agent, _ = make_agent([ModelStep([function_call("echo", {"text": "a"}, call_id="c1")], response_id="resp_1"),
                           ModelStep([assistant_message("done")], response_id="resp_2")], tools=[echo])
    assert Runner.run_sync(agent, "go").last_response_id == "resp_2"


def test_to_input_list_is_the_input_then_the_new_items():
    agent, _ = make_agent([[assistant_message("hello")]])
    result = Runner.run_sync(agent, "hi")
    assert result.to_input_list() == [{"content": "hi", "role": "user"}, assistant_message("hello")]

    agent2, _ = make_agent([[assistant_message("hello")]])
    two = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert len(Runner.run_sync(agent2, two).to_input_list()) == 3


@pytest.mark.parametrize("mode", ["all", None])
def test_to_input_list_with_a_mode_it_does_not_know_is_a_user_error_naming_it(mode):
    result = Runner.run_sync(make_agent([[assistant_message("hello")]])[0], "hi")
    with pytest.raises(UserError, match=f"^to_input_list mode must be 'preserve_all' or 'normalized', got {mode!r}$"):
        result.to_input_list(mode=mode)


def test_feeding_to_input_list_back_continues_the_conversation():
    agent, model = make_agent([[assistant_message("first")], [assistant_message("second")]])
    first = Runner.run_sync(agent, "hi")
    follow_up = first.to_input_list() + [{"role": "user", "content": "more"}]
    second = Runner.run_sync(agent, follow_up)
    assert model.calls[1].input == follow_up
    assert len(second.input) == 3
    assert len(second.to_input_list()) == 4
    assert second.final_output == "second"


def test_the_callers_input_list_is_not_modified_by_the_run():
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]],
                          tools=[echo])
    given = [{"role": "user", "content": "hi"}]
    snapshot = json.loads(json.dumps(given))
    Runner.run_sync(agent, given)
    assert given == snapshot


def test_final_output_as_is_unchecked_unless_asked():
    agent, _ = make_agent([[assistant_message("text")]])
    result = Runner.run_sync(agent, "hi")
    assert result.final_output_as(int) == "text"
    assert result.final_output_as(str, raise_if_incorrect_type=True) == "text"
    with pytest.raises(TypeError, match="Final output is not of type int"):
        result.final_output_as(int, raise_if_incorrect_type=True)


def test_raw_responses_and_last_response_id_follow_the_model_calls():
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]],
                          tools=[echo])
    result = Runner.run_sync(agent, "hi")
    assert len(result.raw_responses) == 2
    assert result.last_response_id == result.raw_responses[-1].response_id


def test_usage_counts_every_model_request():
    agent, _ = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]],
                          tools=[echo])
    assert Runner.run_sync(agent, "hi").context_wrapper.usage.requests == 2



def test_a_summed_usage_adds_every_count_and_a_model_call_counts_the_requests_the_kernel_gives():
    from miniagents.context import InputTokensDetails, OutputTokensDetails, Usage

    run = Usage()
    for tokens in (3, 5):
        run.add(Usage(requests=7, input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1, tool_calls=9,
                      input_tokens_details=InputTokensDetails(cached_tokens=tokens - 1),
                      output_tokens_details=OutputTokensDetails(reasoning_tokens=tokens * 2)), requests=1)
    assert (run.requests, run.tool_calls) == (2, 0)  # the model's own counts are not read
    parent = Usage(tool_calls=1)
    parent.add(run)  # a nested run's usage: its requests and tool calls too
    assert (parent.requests, parent.input_tokens, parent.output_tokens, parent.total_tokens) == (2, 8, 2, 10)
    assert (parent.input_tokens_details.cached_tokens, parent.output_tokens_details.reasoning_tokens) == (6, 16)
    parent.add(Usage(input_tokens=-4, output_tokens=-1, total_tokens=-5, tool_calls=2))
    assert (parent.input_tokens, parent.total_tokens, parent.tool_calls) == (8, 10, 3)


def test_agent_tools_running_at_once_lose_no_count_of_the_usage_they_share():
    """Each inner run adds its response's tokens to the usage it shares with its siblings; a reading of the count
    that is slow (here: the model's total, read between the shared total's read and its write, as `+=` does) must
    not let one addition undo another."""
    import threading
    import time

    from miniagents.context import Usage

    entered = threading.Barrier(1)  # nobody waits while the steps are checked

    class SlowUsage(Usage):  # the second reader arrives while the first addition is between its read and write
        @property
        def total_tokens(self):
            try:
                entered.wait()
            except threading.BrokenBarrierError:  # serialized (the fix): the other addition waits for this one
                pass
            time.sleep(0.05)
            return 1

        @total_tokens.setter
        def total_tokens(self, value):
            pass

    def inner(name):
        return Agent(name=name, model=ScriptedModel([ModelStep([assistant_message("done")], usage=SlowUsage())]))

    tools = [inner(name).as_tool(name, "an inner agent") for name in ("a", "b")]
    outer = Agent(name="outer", tools=tools, model=ScriptedModel([
        [function_call("a", {"input": "x"}, call_id="c1"), function_call("b", {"input": "y"}, call_id="c2")],
        [assistant_message("ok")]]))
    entered = threading.Barrier(2, timeout=1)
    usage = Runner.run_sync(outer, "hi").context_wrapper.usage
    assert (usage.total_tokens, usage.requests) == (2, 4)


def test_a_custom_models_usage_whose_counts_are_no_whole_numbers_is_refused_where_it_is_made():
    from miniagents.context import Usage
    from miniagents.items import ModelResponse

    for count in ("5", None, 2.5, float("inf"), float("nan"), True):
        with pytest.raises(UserError, match="token counts must be whole numbers"):
            ModelResponse([], Usage(input_tokens=count))
    usage = Usage()
    usage.output_tokens_details.reasoning_tokens = 1e400
    with pytest.raises(UserError, match="whole numbers"):
        ModelResponse([], usage)


def test_a_streamed_usage_of_infinite_tokens_is_the_models_mistake():
    events = [{"type": "response.completed", "response": {"output": [assistant_message("hi")],
                                                          "usage": {"input_tokens": float("inf")}}}]
    agent = Agent(name="a", model=ScriptedModel([ModelStep(stream_events=events)]))
    with pytest.raises(ModelBehaviorError, match="usage that is not token counts"):
        _stream(agent, "hi")


def test_model_settings_of_the_run_config_are_laid_over_the_agents():
    agent, model = make_agent([[assistant_message("ok")]],
                              model_settings=ModelSettings(temperature=0.1, top_p=0.5))
    Runner.run_sync(agent, "hi", run_config=RunConfig(model_settings=ModelSettings(temperature=0.9)))
    settings = model.calls[0].model_settings
    assert (settings.temperature, settings.top_p) == (0.9, 0.5)


# --- Behaviour 13: instructions and is_enabled, every turn ----------------------------------------


def test_callable_instructions_are_evaluated_every_turn_with_context_and_agent():
    seen = []

    def instructions(ctx, agent):
        seen.append((ctx.context["user"], agent.name))
        return f"Turn {len(seen)} for {ctx.context['user']}"

    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[echo], instructions=instructions)
    Runner.run_sync(agent, "hi", context={"user": "ada"})
    assert [c.system_instructions for c in model.calls] == ["Turn 1 for ada", "Turn 2 for ada"]
    assert seen == [("ada", "Assistant"), ("ada", "Assistant")]


def test_tool_is_enabled_callable_is_evaluated_every_turn():
    checks = []

    def only_first_turn(ctx, agent):
        checks.append(agent.name)
        return len(checks) == 1

    @function_tool(is_enabled=only_first_turn)
    def once() -> str:
        return "used"

    agent, model = make_agent([[function_call("once", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[once, echo])
    Runner.run_sync(agent, "hi")
    assert [t["name"] for t in model.calls[0].tools] == ["once", "echo"]
    assert [t["name"] for t in model.calls[1].tools] == ["echo"]
    assert len(checks) >= 2


def test_a_disabled_tool_is_neither_sent_nor_runnable():
    @function_tool(is_enabled=False)
    def hidden() -> str:
        calls_made.append("hidden")
        return "hidden"

    agent, model = make_agent([[function_call("hidden", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[hidden])
    Runner.run_sync(agent, "hi")
    assert model.calls[0].tools == []
    assert calls_made == []
    assert outputs_sent(model.calls[1])["c1"].startswith("Tool 'hidden' not found.")


# --- Behaviour 14: well-paired history, context never sent ---------------------------------------


def test_orphan_calls_and_outputs_in_the_input_never_reach_the_model():
    history = [
        {"role": "user", "content": "earlier"},
        {"type": "function_call", "call_id": "orphan_call", "name": "echo", "arguments": "{}"},
        {"type": "function_call", "call_id": "paired", "name": "echo", "arguments": "{\"text\":\"p\"}"},
        {"type": "function_call_output", "call_id": "paired", "output": "echo: p"},
        {"type": "function_call_output", "call_id": "orphan_output", "output": "lost"},
        {"role": "user", "content": "now"},
    ]
    agent, model = make_agent([[assistant_message("ok")]], tools=[echo])
    result = Runner.run_sync(agent, history)
    assert kinds(model.calls[0].input) == ["user", "call:paired", "out:paired", "user"]
    assert kinds(result.to_input_list())[:4] == ["user", "call:paired", "out:paired", "user"]  # what goes on from it


def test_an_output_that_comes_before_its_call_is_dropped_with_its_call():
    history = [
        {"type": "function_call_output", "call_id": "x", "output": "too early"},
        {"type": "function_call", "call_id": "x", "name": "echo", "arguments": "{}"},
        {"role": "user", "content": "now"},
    ]
    agent, model = make_agent([[assistant_message("ok")]], tools=[echo])
    Runner.run_sync(agent, history)
    assert kinds(model.calls[0].input) == ["user"]


def test_every_call_sent_to_the_model_has_exactly_one_output_after_it():
    agent, model = make_agent([
        [function_call("echo", {"text": "a"}, call_id="c1"), function_call("nope", "{}", call_id="c2"),
         function_call("echo", "not json", call_id="c3")],
        [function_call("echo", {"text": "b"}, call_id="c4")],
        [assistant_message("ok")],
    ], tools=[echo])
    Runner.run_sync(agent, "hi")
    for call in model.calls:
        pending = []
        for item in call.input:
            if item.get("type") == "function_call":
                pending.append(item["call_id"])
            elif item.get("type") == "function_call_output":
                assert item["call_id"] in pending
                pending.remove(item["call_id"])
        assert pending == []
    assert kinds(model.calls[2].input) == ["user", "call:c1", "call:c2", "call:c3", "out:c1", "out:c2", "out:c3",
                                           "call:c4", "out:c4"]


def test_the_run_context_object_never_appears_in_any_request():
    secret = "SECRET-7f3a-do-not-send"

    class Ctx:
        token = secret

        def __repr__(self):
            return f"Ctx({secret})"

    ctx_obj = Ctx()

    @function_tool
    def whoami(ctx: RunContextWrapper, greeting: str) -> str:
        """Greet the user."""
        assert ctx.context is ctx_obj
        return f"{greeting}, user"

    @input_guardrail
    def guard(ctx, agent, input):
        assert ctx.context is ctx_obj
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    def instructions(ctx, agent):
        assert ctx.context is ctx_obj
        return "Help the user."

    target, target_model = make_agent([[assistant_message("bye")]], name="Closer", instructions=instructions)
    helper, helper_model = make_agent([[function_call("whoami", {"greeting": "hey"}, call_id="n1")],
                                       [assistant_message("helped")]], name="Helper", tools=[whoami],
                                      instructions=instructions)
    agent, model = make_agent([
        [function_call("whoami", {"greeting": "hello"}, call_id="c1"),
         function_call("helper", {"input": "help"}, call_id="c2")],
        [function_call("transfer_to_closer", "{}", call_id="h1")],
    ], tools=[whoami, helper.as_tool("helper", "Ask the helper.")], handoffs=[target], instructions=instructions,
        input_guardrails=[guard])
    result = Runner.run_sync(agent, "hi", context=ctx_obj)
    assert result.final_output == "bye"
    assert result.context_wrapper.context is ctx_obj

    assert len(helper_model.calls) == 2
    for call in model.calls + target_model.calls + helper_model.calls:
        assert secret not in repr(call)
        assert secret not in json.dumps([call.input, call.tools, call.handoffs, call.output_schema,
                                         call.system_instructions], default=repr)
        for value in json_values([call.input, call.tools, call.handoffs, call.output_schema]):
            assert value is not ctx_obj and not isinstance(value, RunContextWrapper)


# --- Import cost -------------------------------------------------------------------------------------


def test_import_miniagents_loads_no_network_async_sqlite_thread_pool_logging_or_hosted_tool_modules():
    code = ("import sys; before = set(sys.modules); import miniagents; "
            "heavy = ['urllib.request', 'asyncio', 'sqlite3', 'concurrent.futures', 'ssl', 'logging', 'hashlib', "
            "'miniagents.hosted_tools', 'miniagents.retry']; "
            "print([m for m in heavy if m in sys.modules and m not in before])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.stdout.strip() == "[]", out.stderr


def test_a_run_without_guardrails_or_sessions_never_loads_their_modules_nor_logging():
    """A run that goes well (a tool call, then an answer) logs nothing: `logging` is imported on the first warning."""
    code = ("import sys, miniagents; from miniagents import Agent, Runner, function_tool; "
            "from miniagents.testing import ScriptedModel, assistant_message, function_call\n"
            "def echo(a: int) -> int:\n    return a\n"
            "tool = function_tool(echo); "
            "steps = [[function_call('echo', {'a': 1}, call_id='c1')], [assistant_message('hi')]]; "
            "Runner.run_sync(Agent(name='A', tools=[tool], model=ScriptedModel(steps)), 'hi'); "
            "print(sorted(m for m in ('miniagents.guardrails', 'miniagents.session', 'miniagents.models.http', "
            "'logging', 'miniagents.hosted_tools') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.stdout.strip() == "[]", out.stderr


def test_run_streamed_announces_calls_before_tools_run_and_a_paused_turn_emits_no_outputs():
    from miniagents import RunState

    @function_tool(needs_approval=True)
    def guarded(x: int) -> str:
        """Needs a person."""
        return f"guarded {x}"

    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1"),
                                function_call("guarded", {"x": 1}, call_id="c2")],
                               [assistant_message("done")]], tools=[echo, guarded])
    paused, events = _stream(agent, "hi")
    assert _event_names(events) == ["agent_updated_stream_event", "raw_response_event", "tool_called",
                                    "tool_called"]
    assert [i.call_id for i in paused.interruptions] == ["c2"]
    state = RunState.from_string(agent, paused.to_state().to_string())
    state.approve(state.get_interruptions()[0])
    resumed, events = _stream(agent, state)
    assert _event_names(events) == ["agent_updated_stream_event", "tool_output", "tool_output",
                                    "raw_response_event", "message_output_created"]
    assert resumed.final_output == "done"


@pytest.mark.parametrize("mode", ["immediate", "after_turn"])
def test_a_streamed_run_cancelled_before_its_first_read_runs_nothing_yet_is_complete(mode):
    agent, model = make_agent([[assistant_message("never")]])
    result = Runner.run_streamed(agent, "go")
    result.cancel(mode)

    async def drain():
        return [event async for event in result.stream_events()]

    assert asyncio.run(drain()) == [] and list(model.calls) == []
    assert result.is_complete and result.final_output is None and result.new_items == []
    assert result.current_agent is agent and result.input == "go"


def test_cancel_immediate_stops_the_stream_before_the_tool_runs():
    ran = []

    @function_tool
    def slow(x: int) -> str:
        """Record the call."""
        ran.append(x)
        return "ran"

    agent, model = make_agent([[function_call("slow", {"x": 1}, call_id="c1")], [assistant_message("never")]],
                              tools=[slow])
    result = Runner.run_streamed(agent, "go")

    async def drain():
        seen = []
        async for event in result.stream_events():
            seen.append(event)
            if event.type == "raw_response_event":
                result.cancel()
        return seen

    events = asyncio.run(drain())
    assert result.is_complete and result.final_output is None
    assert ran == [] and len(model.calls) == 1
    assert _event_names(events) == ["agent_updated_stream_event", "raw_response_event"]  # the cancel's is the last


def test_cancel_after_turn_finishes_the_turn_then_stops_before_the_next_model_call():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("never")]],
                              tools=[echo])
    result = Runner.run_streamed(agent, "go")

    async def drain():
        seen = []
        async for event in result.stream_events():
            seen.append(event)
            if getattr(event, "name", None) == "tool_called":  # mid-turn: the turn still settles
                result.cancel(mode="after_turn")
        return seen

    events = asyncio.run(drain())
    assert len(model.calls) == 1 and "tool_output" in _event_names(events)
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_output_item"]


def test_a_reader_that_stops_early_ends_the_run_and_leaves_the_state_resumable():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("never")]],
                              tools=[echo])
    result = Runner.run_streamed(agent, "go")

    async def first_event_only():
        async for event in result.stream_events():
            return event

    assert asyncio.run(first_event_only()).type == "agent_updated_stream_event"
    assert model.calls == ()
    resumed = Runner.run_sync(agent, result.to_state())
    assert resumed.final_output == "never" and len(model.calls) == 2
