"""The kernel's offline model (miniagents.testing): step forms, recorded calls, checks when a step is added, the
events of a streamed call, retry advice. Upstream's agents.testing contract (miniagents.upstream.testing) is
tests/upstream/test_testing_contract.py."""
import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, strategies as st

from miniagents import (Agent, ModelBehaviorError, ModelResponse, ModelRetryAdvice, Runner, SQLiteSession, Usage,
                        function_tool)
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


def nested(depth):
    value = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_a_responder_whose_result_is_no_step_is_named_by_the_call_it_answered_not_as_step_1():
    """A responder's result is checked when the call plays it: the error named "step #1" whichever step the responder
    was (here the third), with input_index 0; it names the call instead, as a stream_events function's result has
    input_index None."""
    model = ScriptedModel([[function_call("noop", {}, call_id="c1")], [function_call("noop", {}, call_id="c2")],
                           lambda call: None])  # the return forgotten
    with pytest.raises(InvalidModelStep, match=r"^The step a responder returned for model call #3 must use a list of "
                                               r"output items") as caught:
        run(model)
    assert (caught.value.reason, caught.value.input_index, caught.value.call_index) == ("invalid_input", None, 2)


DONE = {"type": "response.completed", "response": {"id": "r1", "output": [assistant_message("hi")]}}


@pytest.mark.parametrize("step, refused", [
    ([{"type": "message", "role": "assistant", "content": "hi", "held": threading.Lock()}], None),  # TypeError
    ([{"type": "message", "role": "assistant", "content": "hi", "deep": nested(3000)}],  # RecursionError
     "ModelResponse.output holds an item nested deeper than Python copies"),  # the kernel's, for any model
    (ModelStep(stream_events=[{"type": "response.created", "held": threading.Lock()}, DONE]), None),
    (ModelStep(stream_events=[{"type": "response.created", "deep": nested(3000)}, DONE]),
     "nested too deeply to copy for the reader"),  # the run's own copy of a raw event: the kernel's, for any model
])
def test_a_step_holding_what_deepcopy_cannot_copy_is_kept_as_a_models_items_are_not_a_bare_error(step, refused):
    """The script copied each step with copy.deepcopy: an item holding a lock was a bare TypeError when the step was
    added, one nested 3000 deep a bare RecursionError. Such a step is what a custom model may return: the run takes
    it, or refuses it as it refuses any model's (an item too deep to copy when it is added, an event too deep for
    the reader's copy when it is played), so a test can script it."""
    if refused and not isinstance(step, ModelStep):
        with pytest.raises(InvalidModelStep, match=refused):
            ScriptedModel([step])
        model = ScriptedModel([])
        model.enqueue(lambda call: step)  # a responder's result: when it is played
        with pytest.raises(InvalidModelStep, match=refused):
            run(model)
        return
    model = ScriptedModel([step])
    model.enqueue(lambda call: step)  # a responder's result too
    assert model.remaining_steps == 2
    for _ in range(2):
        if refused:
            with pytest.raises(ModelBehaviorError, match=refused):
                streamed(model)
        else:
            assert (streamed(model)[0] if isinstance(step, ModelStep) else run(model)).final_output == "hi"


def test_a_step_is_its_own_copy_whatever_the_caller_edits_after_adding_it():
    items = [assistant_message("as scripted")]
    events = [{"type": "response.completed", "response": {"id": "r1", "output": [assistant_message("as scripted")]}}]
    model = ScriptedModel([items, ModelStep(stream_events=events)])
    items[0]["content"][0]["text"] = events[0]["response"]["output"][0]["content"][0]["text"] = "edited"
    assert run(model).final_output == "as scripted" and streamed(model)[0].final_output == "as scripted"


@pytest.mark.parametrize("field", ["response_id", "request_id"])
def test_a_step_whose_ids_no_response_may_hold_is_refused_when_it_is_added_not_when_it_is_played(field):
    """The ids were not checked when the step was added: the run failed at that call with the kernel's UserError."""
    with pytest.raises(InvalidModelStep, match=rf"^Scripted model step #2 holds what no response may: .*{field}") as e:
        ScriptedModel([[assistant_message("fine")], ModelStep([assistant_message("a")], **{field: 5})])
    assert (e.value.reason, e.value.input_index) == ("invalid_input", 1)


@pytest.mark.parametrize("steps", [5, None, "hello", b"hi", assistant_message("one step, not a list of steps")])
def test_steps_that_are_no_list_of_steps_are_an_invalid_step_saying_so_not_a_bare_type_error(steps):
    """ScriptedModel(5) was "'int' object is not iterable"; a string or a lone item (a dict) was taken apart,
    character by character or key by key, into steps each refused as "step #1"."""
    for add in (ScriptedModel, ScriptedModel().extend):
        with pytest.raises(InvalidModelStep, match=rf"^Scripted model steps must be a list of steps, not "
                                                   rf"{type(steps).__name__}\.$") as caught:
            add(steps)
        assert (caught.value.reason, caught.value.input_index) == ("invalid_input", None)


def test_a_responder_that_edits_the_request_it_is_given_changes_neither_the_run_nor_the_record():
    """A responder was handed the recorded call, whose input shares the run's items: editing them in place changed
    the run's new items, its to_input_list and the earlier calls' records (the session kept its own copy)."""
    def edits(call):
        for item in call.input:
            item.update(content="HACKED", output="HACKED", arguments="{}") if item.get("role") != "user" else None
        call.input.clear()
        return [assistant_message("done")]

    session = SQLiteSession("edits")
    model = ScriptedModel([[function_call("noop", {}, call_id="c1")], edits])
    result = Runner.run_sync(Agent(name="A", model=model, tools=[noop]), "go", session=session)
    kept = [{"role": "user", "content": "go"}, function_call("noop", {}, call_id="c1"),
            {"type": "function_call_output", "call_id": "c1", "output": "nothing"}]
    assert result.to_input_list()[:3] == kept and [i.raw_item for i in result.new_items][:2] == kept[1:]
    assert model.calls[1].input == kept and model.calls[0].input == kept[:1]
    assert session.get_items()[:3] == kept


@pytest.mark.parametrize("threads", [2, 8])
def test_runs_sharing_one_model_from_threads_take_each_step_once_each_answered_from_its_own_call(threads):
    """One model may serve runs on several threads at once (the docstring's promise): each step is taken by exactly
    one call, a responder sees that call's own request, and calls past the script are each an UnexpectedModelCall
    with a number of its own."""
    runs = 4 * threads
    model = ScriptedModel([lambda call: [assistant_message("re: " + call.input[0]["content"])]] * (runs - threads))

    def one(n):
        try:
            return Runner.run_sync(Agent(name="A", model=model), f"run {n}").final_output
        except UnexpectedModelCall as error:
            return error.call_index

    with ThreadPoolExecutor(threads) as pool:
        outcomes = list(pool.map(one, range(runs)))
    answered = [(n, out) for n, out in enumerate(outcomes) if isinstance(out, str)]
    assert all(out == f"re: run {n}" for n, out in answered) and len(answered) == runs - threads
    assert sorted(out for out in outcomes if isinstance(out, int)) == list(range(runs - threads, runs))
    assert model.remaining_steps == 0 and len(model.calls) == runs


STEP_PARTS = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
                          | st.binary(max_size=3) | st.just(threading.Lock()) | st.just(len),
                          lambda inner: st.lists(inner, max_size=4) | st.tuples(inner)
                          | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4), max_leaves=12)


ITEMS = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["message", "function_call", "reasoning"])},
                                      optional={"role": st.just("assistant"), "content": STEP_PARTS,
                                                "name": STEP_PARTS, "arguments": STEP_PARTS, "extra": STEP_PARTS})
                 | STEP_PARTS, max_size=3)


@given(st.lists(ITEMS | st.builds(lambda o, u, r, e, s: ModelStep(o, *u, response_id=r, error=e,
                                                                      stream_events=s),
                                      ITEMS, st.lists(st.just(Usage()) | STEP_PARTS, max_size=1),
                                      STEP_PARTS, st.none() | STEP_PARTS, st.none() | ITEMS | STEP_PARTS), max_size=4))
def test_any_generated_steps_are_taken_or_refused_as_an_invalid_step_naming_it_never_a_bare_error(steps):
    try:
        model = ScriptedModel(steps)
    except InvalidModelStep as error:
        assert error.reason in ("invalid_input", "invalid_error", "invalid_stream_events")
        assert str(error).startswith(f"Scripted model step #{error.input_index + 1} ")
        return
    assert model.remaining_steps == len(steps)
