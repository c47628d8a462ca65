"""The kernel's offline model (miniagents.testing): step forms, recorded calls, checks when a step is added, the
events of a streamed call, retry advice. Upstream's agents.testing contract (miniagents.upstream.testing) is
tests/upstream/test_testing_contract.py."""
import asyncio

import pytest

from miniagents import Agent, ModelResponse, ModelRetryAdvice, Runner, Usage, function_tool
from miniagents.retry.advice import ModelRetryAdviceRequest
from miniagents.testing import (InvalidModelStep, ModelStep, ScriptedModel, UnconsumedModelSteps, UnexpectedModelCall,
                                assistant_message, function_call)


@function_tool
def noop() -> str:
    """Do nothing."""
    return "nothing"


def run(model, text="go"):
    return Runner.run_sync(Agent(name="A", instructions="Be brief.", model=model, tools=[noop]), text)


def streamed(model):
    async def go():
        result = Runner.run_streamed(Agent(name="A", model=model, tools=[noop]), "go")
        return result, [e.data for e in [e async for e in result.stream_events()] if e.type == "raw_response_event"]

    return asyncio.run(go())


def test_every_step_form_plays_back_in_order_and_every_call_is_recorded():
    async def later(call):
        return [assistant_message(f"{len(call.input)} items")]

    model = ScriptedModel([
        [function_call("noop", {}, call_id="c1")],
        ModelResponse(output=[function_call("noop", {}, call_id="c2")], response_id="r2"),
        ModelStep([function_call("noop", {}, call_id="c3")], Usage(requests=1, input_tokens=5)),
        lambda call: later,  # a responder may return another responder (here an async one)
    ])
    result = run(model)
    assert result.final_output == "7 items" and model.remaining_steps == 0
    assert [r.response_id for r in result.raw_responses] == ["resp-789", "r2", "resp-789", "resp-789"]
    assert result.context_wrapper.usage.requests == 4 and result.context_wrapper.usage.input_tokens == 5
    assert len(model.calls) == 4 and model.first_call.input == [{"role": "user", "content": "go"}]
    assert model.first_call.system_instructions == "Be brief." and model.last_call.tool_names == ["noop"]
    model.assert_complete()


def test_an_exception_step_is_raised_and_the_retry_shell_gets_its_advice():
    error = RuntimeError("provider down")
    model = ScriptedModel([ModelStep(error=error, retry_advice=ModelRetryAdvice(suggested=True))])
    with pytest.raises(RuntimeError) as caught:
        run(model)
    assert caught.value is error
    assert model.get_retry_advice(ModelRetryAdviceRequest(error, 1, False)) == ModelRetryAdvice(suggested=True)
    assert model.get_retry_advice(ModelRetryAdviceRequest(RuntimeError("provider down"), 1, False)) is None


def test_a_call_with_no_step_left_and_a_step_never_used_are_errors_that_say_so():
    with pytest.raises(UnexpectedModelCall, match=r"^Unexpected non-streaming model call #2: no scripted") as caught:
        run(ScriptedModel([[function_call("noop", {}, call_id="c1")]]), "hi")
    assert caught.value.call_index == 1 and caught.value.call.input[0]["content"] == "hi"
    model = ScriptedModel([[assistant_message("a")], [assistant_message("b")]])
    run(model)
    with pytest.raises(UnconsumedModelSteps, match="1 scripted model step") as unused:
        model.assert_complete()
    assert unused.value.remaining_steps == 1


@pytest.mark.parametrize("step, reason", [
    (assistant_message("an item, not a list of items"), "invalid_input"),
    ("not a list", "invalid_input"),
    ([{"role": "assistant", "content": "no type"}], "invalid_input"),
    (ModelStep([], usage={"requests": 1}), "invalid_input"),
    (ModelStep(error="boom"), "invalid_error"),
    (ModelStep(stream_events="abc"), "invalid_stream_events"),
    (ModelStep(stream_events=["not-a-dict"]), "invalid_stream_events"),
    ([{"type": "function_call", "call_id": "c1", "arguments": "{}"}], "invalid_input"),  # no name: no response may
])
def test_a_bad_step_is_refused_when_it_is_added_naming_the_reason_and_position(step, reason):
    with pytest.raises(InvalidModelStep, match=r"^Scripted model step #2 ") as caught:
        ScriptedModel([[assistant_message("fine")], step])
    assert (caught.value.reason, caught.value.input_index) == (reason, 1)
    model = ScriptedModel()
    with pytest.raises(InvalidModelStep, match=r"^Scripted model step #1 ") as caught:
        model.enqueue(step)  # the one step given
    assert caught.value.input_index == 0
    with pytest.raises(InvalidModelStep, match=r"^Scripted model step #2 ") as caught:
        model.extend([[], step])  # counted within the steps given
    assert caught.value.input_index == 1 and model.remaining_steps == 0


def test_a_streamed_call_replays_its_step_as_the_events_a_streamed_run_reads():
    model = ScriptedModel([[function_call("noop", {"a": 1}, call_id="c1")], [assistant_message("Hello there")]])
    result, raw = streamed(model)
    kinds = [e["type"] for e in raw]
    assert kinds[:5] == ["response.created", "response.output_item.added", "response.function_call_arguments.delta",
                         "response.output_item.done", "response.completed"]
    assert kinds[5:] == ["response.created", "response.output_item.added", "response.output_text.delta",
                         "response.output_item.done", "response.completed"]
    assert raw[1]["item"]["arguments"] == "" and raw[2]["delta"] == '{"a":1}' and raw[3]["item"]["arguments"]
    assert raw[6]["item"]["content"] == [] and raw[7]["delta"] == "Hello there"
    assert raw[-1]["response"]["usage"]["requests"] == 1 and result.final_output == "Hello there"
    assert model.last_call.streamed is True


def test_a_streamed_call_replays_a_call_given_no_arguments_as_an_empty_delta():
    model = ScriptedModel([[{"type": "function_call", "call_id": "c1", "name": "noop"}], [assistant_message("ok")]])
    result, raw = streamed(model)
    assert raw[2] == {"type": "response.function_call_arguments.delta", "item_id": None, "output_index": 0, "delta": ""}
    assert result.final_output == "ok"


def test_a_step_with_stream_events_plays_exactly_those_events():
    final = {"type": "response.completed", "response": {"id": "r1", "output": [assistant_message("exact")]}}
    events = [{"type": "response.output_text.delta", "delta": "exact"}, final]
    for source in (events, lambda call: iter(events)):
        result, raw = streamed(ScriptedModel([ModelStep(stream_events=source)]))
        assert [e["type"] for e in raw] == ["response.output_text.delta", "response.completed"]
        assert result.final_output == "exact"


def test_a_stream_events_function_that_returns_no_events_is_an_invalid_step_not_a_bare_type_error():
    with pytest.raises(InvalidModelStep, match="stream_events function returned a NoneType") as caught:
        streamed(ScriptedModel([ModelStep(stream_events=lambda call: None)]))  # the return forgotten
    assert (caught.value.reason, caught.value.input_index) == ("invalid_stream_events", None)


def test_a_stream_events_function_that_is_an_async_generator_is_an_invalid_step_not_a_bare_type_error():
    """Upstream's stream is async, so an async generator is a natural mistake here; the upstream shell's
    ScriptedModel plays one, the kernel's (called from a thread, no event loop) cannot: a typed error, not
    "'async_generator' object is not iterable" out of the run."""
    async def events(call):
        yield {"type": "response.created"}

    with pytest.raises(InvalidModelStep, match="stream_events function returned a async_generator") as caught:
        streamed(ScriptedModel([ModelStep(stream_events=events)]))
    assert (caught.value.reason, caught.value.input_index) == ("invalid_stream_events", None)
