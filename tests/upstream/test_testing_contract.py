"""miniagents.upstream.testing keeps upstream's `agents.testing` contract: step forms, validation, ModelCall, errors,
streams (the kernel's miniagents.testing keeps only what miniagents' own tests and demo use)."""
import asyncio
import json

import pytest

from miniagents.upstream import Agent, ModelResponse, Runner, Usage, function_tool
from miniagents.retry import ModelRetryAdvice, ModelRetryAdviceRequest
from miniagents.upstream.testing import (InvalidModelStep, ModelCall, ModelScriptError, ModelStep, ModelStepSpec,
                                         ScriptedModel, UnconsumedModelSteps, UnexpectedModelCall, assistant_message,
                                         function_call)


@function_tool
def noop() -> str:
    """Do nothing."""
    return "nothing"


def run(model, text="go", **agent_options):
    return Runner.run_sync(Agent(name="A", model=model, tools=[noop], **agent_options), text)


def streamed(model, text="go"):
    async def go():
        result = Runner.run_streamed(Agent(name="A", model=model), text)
        events = [e async for e in result.stream_events()]
        return result, events

    return asyncio.run(go())


# --- Step forms ----------------------------------------------------------------------------------------------


def test_every_step_form_upstream_accepts_plays_back_in_order():
    model = ScriptedModel([
        ModelStep(output=[function_call("noop", {}, call_id="c1")], usage=Usage(requests=1, input_tokens=3)),
        {"output": [function_call("noop", {}, call_id="c2")], "response_id": "r2"},
        ModelResponse(output=[function_call("noop", {}, call_id="c3")], usage=Usage(requests=1), response_id="r3"),
        [function_call("noop", {}, call_id="c4")],
        [assistant_message("finished")],
    ])
    result = run(model)
    assert result.final_output == "finished"
    assert [r.response_id for r in result.raw_responses] == ["resp-789", "r2", "r3", "resp-789", "resp-789"]
    assert isinstance(model.calls, tuple) and len(model.calls) == 5 and model.remaining_steps == 0
    model.assert_complete()


def test_an_exception_step_and_raise_error_raise_it_from_the_call():
    for step in (RuntimeError("provider down"), ModelStep.raise_error(RuntimeError("provider down")),
                 {"error": RuntimeError("provider down")}):
        with pytest.raises(RuntimeError, match="provider down"):
            run(ScriptedModel([step]))


@pytest.mark.parametrize("form", ["list", "spec", "step", "response", "error"])
def test_a_responder_sees_the_call_and_may_return_any_step_form_sync_or_async(form):
    seen = []

    def answer(text):
        return {"list": [assistant_message(text)], "spec": {"output": [assistant_message(text)]},
                "step": ModelStep(output=[assistant_message(text)]),
                "response": ModelResponse(output=[assistant_message(text)]),
                "error": ValueError(text)}[form]

    def responder(call: ModelCall):
        seen.append(call.input[-1]["content"])
        return answer("you said " + call.input[-1]["content"])

    async def async_responder(call: ModelCall):
        await asyncio.sleep(0)
        return responder(call)

    for step in (ModelStep.respond(responder), {"responder": async_responder}, responder):
        model = ScriptedModel([step])
        if form == "error":
            with pytest.raises(ValueError, match="you said hi"):
                run(model, "hi")
        else:
            assert run(model, "hi").final_output == "you said hi"
    assert seen == ["hi"] * 3


def test_a_responder_returning_another_responder_is_followed():
    model = ScriptedModel([ModelStep.respond(lambda call: ModelStep.respond(lambda c: [assistant_message("deep")]))])
    assert run(model).final_output == "deep"


def test_typed_output_items_with_model_dump_are_accepted_as_their_dicts():
    class Typed:  # what the openai package's response types look like to the model
        def model_dump(self, exclude_none=False):
            return assistant_message("typed")

    assert run(ScriptedModel([[Typed()]])).final_output == "typed"


# --- Validation: InvalidModelStep with upstream's reason and input_index -------------------------------------


@pytest.mark.parametrize("step, reason", [
    ({"output": [], "colour": "red"}, "unsupported_field"),
    ({"type": "message", "role": "assistant", "content": []}, "unsupported_field"),  # an item is not a step
    ("not a list", "invalid_input"),
    ([{"role": "assistant", "content": "no type"}], "invalid_input"),
    ([42], "invalid_input"),
    ({"output": [], "usage": {"requests": 1}}, "invalid_input"),
    ({"output": [], "response_id": 5}, "invalid_input"),
    ({"output": [], "request_id": 5}, "invalid_input"),
    ({"output": [], "raw_usage": "x"}, "invalid_input"),
    ({"error": "boom"}, "invalid_error"),
    ({"responder": "nope"}, "invalid_responder"),
    ({"stream_events": "abc"}, "invalid_stream_events"),
    ({"error": ValueError(), "responder": lambda call: []}, "conflicting_outcomes"),
    ({"output": [], "retry_advice": ModelRetryAdvice(suggested=True)}, "invalid_retry_advice"),
])
def test_a_bad_step_is_refused_when_it_is_added_naming_the_reason_and_position(step, reason):
    with pytest.raises(InvalidModelStep) as caught:
        ScriptedModel([[assistant_message("fine")], step])
    assert caught.value.reason == reason and caught.value.input_index == 1
    assert str(caught.value).startswith("Scripted model step #2 ")
    assert isinstance(caught.value, ModelScriptError)
    model = ScriptedModel()
    with pytest.raises(InvalidModelStep):
        model.enqueue(step)
    with pytest.raises(InvalidModelStep) as caught:
        model.extend([[], step])
    assert caught.value.input_index == 1 and model.remaining_steps == 0


def test_model_step_spec_names_exactly_the_fields_of_model_step():
    from dataclasses import fields

    assert set(ModelStepSpec.__annotations__) == {f.name for f in fields(ModelStep)}


# --- Calls, usage, errors ---------------------------------------------------------------------------------


def test_calls_are_detached_snapshots_with_upstreams_fields():
    model = ScriptedModel([[assistant_message("hi")]])
    Runner.run_sync(Agent(name="A", instructions="Be kind.", model=model), "hello")
    call = model.first_call
    assert (call.system_instructions, call.streamed, call.previous_response_id, call.conversation_id,
            call.prompt) == ("Be kind.", False, None, None, None)
    assert hasattr(call, "tracing") and call is not model.last_call and call == model.last_call
    call.input.append({"role": "user", "content": "tampered"})
    assert len(model.calls[0].input) == 1
    with pytest.raises(Exception):
        call.input = []  # frozen, as upstream's


def test_a_detached_call_is_detached_down_to_its_items_so_editing_one_changes_neither_run_nor_record():
    """`calls` and a stream_events function's call copied the input list only: editing an item of it in place (a
    test normalising what it compares) changed the run's items, its to_input_list and every later record."""
    def events(call):
        call.input[0]["content"] = "edited by the events function"
        return [{"type": "response.completed", "response": {"id": "r2", "output": [assistant_message("done")]}}]

    model = ScriptedModel([[function_call("noop", {}, call_id="c1")], ModelStep.stream(events)])
    result, _ = streamed(model, "hello")
    model.first_call.input[0]["content"] = model.calls[1].input[1]["arguments"] = "edited by the test"
    assert result.to_input_list()[:2] == [{"role": "user", "content": "hello"}, function_call("noop", {}, call_id="c1")]
    assert model.last_call.input[:2] == result.to_input_list()[:2] and model.first_call.input == result.to_input_list()[:1]


def test_calls_is_a_tuple():
    model = ScriptedModel()
    assert model.calls == () and isinstance(model.calls, tuple)
    model.enqueue([assistant_message("x")])
    run(model)
    assert isinstance(model.calls, tuple) and len(model.calls) == 1


def test_a_step_without_usage_gets_the_default_usage_or_one_request():
    plain = ScriptedModel([[assistant_message("a")]])
    assert run(plain).raw_responses[0].usage.requests == 1
    model = ScriptedModel([[assistant_message("a")], ModelStep(output=[assistant_message("b")],
                                                               usage=Usage(requests=1, input_tokens=9))],
                          default_usage=Usage(requests=1, input_tokens=5))
    assert run(model).context_wrapper.usage.input_tokens == 5
    assert run(model).context_wrapper.usage.input_tokens == 9
    model.set_default_usage(None)
    model.enqueue([assistant_message("c")])
    assert run(model).context_wrapper.usage.input_tokens == 0


def test_an_unexpected_call_carries_the_call_and_its_index():
    model = ScriptedModel([[function_call("noop", {}, call_id="c1")]])
    with pytest.raises(UnexpectedModelCall) as caught:
        run(model, "hi")
    assert str(caught.value) == "Unexpected non-streaming model call #2: no scripted steps remain."
    assert caught.value.call_index == 1 and caught.value.call.input[0]["content"] == "hi"
    with pytest.raises(UnexpectedModelCall, match="Unexpected streaming model call #1"):
        streamed(ScriptedModel())


def test_unconsumed_steps_are_counted():
    model = ScriptedModel([[assistant_message("a")], [assistant_message("b")], [assistant_message("c")]])
    run(model)
    with pytest.raises(UnconsumedModelSteps) as caught:
        model.assert_complete()
    assert caught.value.remaining_steps == 2 and str(caught.value) == "2 scripted model step(s) were not consumed."


def test_retry_advice_is_reported_for_the_very_error_that_was_raised():
    error = RuntimeError("busy")
    model = ScriptedModel([ModelStep.raise_error(error, retry_advice=ModelRetryAdvice(suggested=True, retry_after=2))])
    with pytest.raises(RuntimeError):
        run(model)
    advice = model.get_retry_advice(ModelRetryAdviceRequest(error=error, attempt=1, stream=False))
    assert advice == ModelRetryAdvice(suggested=True, retry_after=2)
    assert model.get_retry_advice(ModelRetryAdviceRequest(error=RuntimeError("busy"), attempt=1, stream=False)) is None


# --- Streaming ----------------------------------------------------------------------------------------------


def test_a_streamed_step_sends_one_text_delta_per_part_in_upstreams_event_order():
    message = assistant_message("Hello brave new world")
    result, events = streamed(ScriptedModel([[message]]))
    raw = [e.data for e in events if e.type == "raw_response_event"]
    assert [e.type for e in raw] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in raw] == list(range(len(raw)))
    assert raw[2].item.content == [] and raw[2].item.status == "in_progress"
    assert raw[4].delta == "Hello brave new world" and raw[-1].response.output[0].content[0].text == raw[4].delta
    assert result.final_output == "Hello brave new world"


def test_a_streamed_message_announces_each_of_its_annotations():
    message = assistant_message("See the FAQ.")
    link = {"type": "url_citation", "url": "https://example.com/faq", "title": "FAQ", "start_index": 8,
            "end_index": 11}
    message["content"][0]["annotations"] = [link]
    _, events = streamed(ScriptedModel([[message]]))
    added = [e.data for e in events if e.type == "raw_response_event"
             and e.data.type == "response.output_text.annotation.added"]
    assert [(e.annotation_index, e.annotation.url) for e in added] == [(0, "https://example.com/faq")]
    (opened,) = [e.data.part for e in events if e.type == "raw_response_event"
                 and e.data.type == "response.content_part.added"]
    assert (opened.text, opened.annotations) == ("", [])  # the part opens empty; its annotations come after


def test_function_calls_and_reasoning_stream_their_parts():
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}],
                 "content": [{"type": "reasoning_text", "text": "step"}, {"type": "reasoning_text"}]}
    model = ScriptedModel([[reasoning, function_call("noop", {}, call_id="c1")], [assistant_message("ok")]])

    async def go():
        result = Runner.run_streamed(Agent(name="A", model=model, tools=[noop]), "go")
        return [e.data async for e in result.stream_events() if e.type == "raw_response_event"]

    raw = asyncio.run(go())
    kinds = [e.type for e in raw]
    assert "response.reasoning_summary_text.delta" in kinds
    # Each reasoning content part streams its text, and a part without text streams as empty.
    assert [e.delta for e in raw if e.type == "response.reasoning_text.delta"] == ["step", ""]
    assert [e.text for e in raw if e.type == "response.reasoning_text.done"] == ["step", ""]
    assert kinds.index("response.function_call_arguments.delta") < kinds.index("response.function_call_arguments.done")
    # Each item opens empty, as upstream's events show it, and closes whole.
    added = [e.item for e in raw if e.type == "response.output_item.added"]
    done = [e.item for e in raw if e.type == "response.output_item.done"]
    assert (added[0].summary, added[1].arguments, added[1].status) == ([], "", "in_progress")
    assert (done[0].summary[0].text, done[1].arguments, done[1].call_id) == ("think", "{}", "c1")


@pytest.mark.parametrize("factory", ["list", "sync", "async"])
def test_model_step_stream_plays_exact_events(factory):
    final = {"type": "response.completed", "response": {"id": "r1", "output": [assistant_message("exact")],
                                                         "usage": {"input_tokens": 1, "output_tokens": 1}}}
    events = [{"type": "response.created", "response": {"id": "r1"}}, final]

    def sync_events(call):
        assert call.streamed
        return iter(events)

    async def async_events(call):
        for event in events:
            yield event

    source = {"list": events, "sync": sync_events, "async": async_events}[factory]
    result, seen = streamed(ScriptedModel([ModelStep.stream(source)]))
    assert [e.data.type for e in seen if e.type == "raw_response_event"] == ["response.created", "response.completed"]
    assert result.final_output == "exact"


def test_function_call_and_assistant_message_build_upstreams_items():
    assert function_call("f", {"a": 1}, call_id="c1") == {
        "type": "function_call", "id": "c1", "call_id": "c1", "name": "f", "arguments": '{"a":1}',
        "status": "completed"}
    assert function_call("f", "{}", call_id="c1", item_id="fc_1", namespace="ns")["namespace"] == "ns"
    message = assistant_message("hi")
    assert message["id"] == "scripted-message" and message["content"][0]["text"] == "hi"
    assert json.loads(json.dumps(message)) == message


def test_a_message_with_text_and_a_refusal_streams_each_parts_own_events_in_order():
    from miniagents.upstream.testing import response_events

    item = {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Hi", "annotations": []},
                        {"type": "refusal", "refusal": "No."}]}
    events = response_events(ModelResponse(output=[item], usage=Usage(), response_id="r1"))
    assert [(e["type"], e.get("delta", e.get("text", e.get("refusal")))) for e in events] == [
        ("response.created", None), ("response.in_progress", None), ("response.output_item.added", None),
        ("response.content_part.added", None), ("response.output_text.delta", "Hi"),
        ("response.output_text.done", "Hi"), ("response.content_part.done", None),
        ("response.content_part.added", None), ("response.refusal.delta", "No."), ("response.refusal.done", "No."),
        ("response.content_part.done", None), ("response.output_item.done", None), ("response.completed", None)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


@pytest.mark.parametrize("returned", [None, 42])
def test_a_stream_events_function_that_returns_no_events_is_an_invalid_step_in_the_shell_too(returned):
    """A forgotten `return` in a step's stream function is found when the call plays it: a typed error."""
    with pytest.raises(InvalidModelStep, match="stream_events function returned a") as caught:
        streamed(ScriptedModel([ModelStep(stream_events=lambda call: returned)]))
    assert (caught.value.reason, caught.value.input_index) == ("invalid_stream_events", None)

