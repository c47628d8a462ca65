"""Raw items read by attribute, as upstream's typed objects are (miniagents/upstream/raw_items.py): what a model gave,
in a run of a program using the shell (its `UpstreamPlugin` hands each turn's model to `ReadableModel`) and in a
`RunState` loaded through the shell's `RunState`. The kernel's items stay plain dicts (tests/loop/test_items.py);
what the kernel makes (tool and handoff outputs, input) is a dict in upstream too, and stays one."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from miniagents import Model, ModelBehaviorError, ModelResponse, UserError
from miniagents.testing import ScriptedModel, assistant_message, function_call, response_events
from miniagents.upstream import Agent, RunConfig, Runner, RunState, function_tool
from miniagents.upstream.raw_items import RawItem, ReadableModel
from support import ROOT, make_agent

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}


@function_tool
def lookup(q: str) -> dict:
    return {"q": q, "hits": 2}


@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    return f"paid {amount}"


class PlainModel(Model):
    """A custom model answering with plain dicts, numbering its call ids per response ("call_0" every time)."""

    def __init__(self, turns):
        self.turns = list(turns)

    def get_response(self, *args, **kwargs):
        return ModelResponse(output=self.turns.pop(0))

    def stream_response(self, *args, **kwargs):
        yield from response_events(self.get_response())


def full_run():
    target, _ = make_agent([[assistant_message("final answer")]], name="Target")
    agent, _ = make_agent([
        [REASONING, assistant_message("checking"), function_call("lookup", {"q": "x"}, call_id="c1")],
        [function_call("transfer_to_target", "{}", call_id="h1")],
    ], tools=[lookup], handoffs=[target])
    return Runner.run_sync(agent, "hi")


def test_what_a_model_gave_reads_by_attribute_nested_too():
    result = full_run()
    reasoning, message, call, output, handoff_call, handoff_output, final = result.new_items
    assert reasoning.raw_item.summary[0].text == "thinking"
    assert message.raw_item.content[0].text == "checking" and message.raw_item.role == "assistant"
    assert call.raw_item.name == "lookup" == call.raw_item["name"] and call.raw_item.call_id == "c1"
    assert json.loads(call.raw_item.arguments) == {"q": "x"} and call.raw_item.type == "function_call"
    assert getattr(call.raw_item, "namespace", None) is None and not hasattr(call.raw_item, "no_such_field")
    assert handoff_call.raw_item.name == "transfer_to_target"
    assert final.raw_item.content[0].text == "final answer"
    assert result.raw_responses[0].output[1].content[0].text == "checking"
    assert result.raw_responses[0].output[2] is call.raw_item  # one object: the response's item is the run's
    with pytest.raises(AttributeError, match="has no field 'no_such_field'"):
        call.raw_item.no_such_field


def test_what_the_kernel_made_stays_a_plain_dict_as_upstreams_typed_dicts():
    result = full_run()
    output, handoff_output = result.new_items[3], result.new_items[5]
    assert type(output.raw_item) is dict and output.raw_item["output"] == '{"q": "x", "hits": 2}'
    assert type(handoff_output.raw_item) is dict and handoff_output.raw_item["type"] == "function_call_output"
    assert all(isinstance(i, dict) for i in result.to_input_list())
    assert json.loads(json.dumps(result.to_input_list())) == result.to_input_list()


def test_a_custom_model_of_plain_dicts_reads_by_attribute_in_the_shell():
    model = PlainModel([[function_call("lookup", {"q": "x"}, call_id="call_0")], [assistant_message("done")]])
    result = Runner.run_sync(Agent(name="A", model=model, tools=[lookup]), "hi")
    assert result.new_items[0].raw_item.name == "lookup" and result.new_items[-1].raw_item.content[0].text == "done"
    assert result.raw_responses[-1].output[0].content[0].text == "done"


def test_a_renumbered_call_keeps_its_attribute_reads():
    """A server numbering ids per response ("call_0" every time): the second call gets a fresh id, on a copy of
    the same type (the response keeps "call_0"), so it still reads by attribute."""
    model = PlainModel([[function_call("lookup", {"q": "x"}, call_id="call_0")],
                        [function_call("lookup", {"q": "y"}, call_id="call_0")], [assistant_message("done")]])
    result = Runner.run_sync(Agent(name="A", model=model, tools=[lookup]), "hi")
    first, second = result.new_items[0].raw_item, result.new_items[2].raw_item
    assert first.call_id == "call_0" and second.call_id not in ("call_0", "") and isinstance(second, RawItem)
    assert json.loads(second.arguments) == {"q": "y"} and result.new_items[3].raw_item["call_id"] == second.call_id
    assert result.raw_responses[1].output[0].call_id == "call_0"  # the response stays as the model gave it


def test_streamed_events_and_the_streamed_result_read_by_attribute():
    agent, _ = make_agent([[function_call("lookup", {"q": "x"}, call_id="c1")], [assistant_message("Hi there")]],
                          tools=[lookup])

    async def go():
        streamed = Runner.run_streamed(agent, "hi")
        return [e async for e in streamed.stream_events() if e.type == "raw_response_event"], streamed

    events, streamed = asyncio.run(go())
    deltas = "".join(e.data.delta for e in events if e.data.type == "response.output_text.delta")
    assert deltas == "Hi there"
    completed = [e for e in events if e.data.type == "response.completed"][-1]
    assert completed.data.response.output[0].content[0].text == "Hi there"
    assert streamed.new_items[0].raw_item.name == "lookup" and streamed.new_items[-1].raw_item.content[0].text == \
        "Hi there"
    assert streamed.raw_responses[-1].output[0].content[0].text == "Hi there"
    with pytest.raises(AttributeError, match="has no field 'nope'"):
        completed.data.nope


def test_an_interruption_reads_by_attribute_and_so_does_a_state_loaded_through_upstreams_run_state():
    agent = Agent(name="A", tools=[pay], model=ScriptedModel([
        [assistant_message("paying"), function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("done")]]))
    result = Runner.run_sync(agent, "pay")
    interruption = result.interruptions[0]
    assert interruption.raw_item.name == "pay" and json.loads(interruption.raw_item.arguments) == {"amount": 5}

    text = result.to_state().to_string()
    state = asyncio.run(RunState.from_string(agent, text))
    assert all(isinstance(i.raw_item, RawItem) for i in state.generated_items)  # each of them a model gave
    loaded = state.get_interruptions()[0]
    assert loaded.raw_item.name == "pay" and loaded.raw_item.call_id == "c1"
    assert state.generated_items[0].raw_item.content[0].text == "paying"
    assert state.model_responses[0].output[1].arguments == '{"amount":5}'
    assert state.pending.output[1].name == "pay"
    state = asyncio.run(RunState.from_json(agent, json.loads(text)))
    state.approve(state.get_interruptions()[0])
    resumed = Runner.run_sync(agent, state)
    assert resumed.final_output == "done"
    call = next(i for i in resumed.new_items if i.type == "tool_call_item")
    assert call.raw_item.name == "pay" and resumed.new_items[-1].raw_item.content[0].text == "done"


def test_an_agent_tools_paused_inner_run_loads_readable_too():
    inner = Agent(name="Payer", tools=[pay], model=ScriptedModel([[function_call("pay", {"amount": 3}, call_id="p1")],
                                                                 [assistant_message("paid")]]))
    outer = Agent(name="Boss", tools=[inner.as_tool("payer", "pays")], model=ScriptedModel([
        [function_call("payer", {"input": "pay 3"}, call_id="o1")], [assistant_message("all done")]]))
    result = Runner.run_sync(outer, "go")
    assert result.interruptions and result.interruptions[0].raw_item.name == "pay"
    state = asyncio.run(RunState.from_string(outer, result.to_state().to_string()))
    nested = state.pending.nested["o1"]
    assert nested.get_interruptions()[0].raw_item.arguments == '{"amount":3}'
    assert nested.pending.output[0].name == "pay"
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(outer, state).final_output == "all done"


def test_an_async_model_and_the_omitted_reasoning_ids_read_by_attribute():
    class AsyncModel(Model):
        async def get_response(self, *args, **kwargs):
            return ModelResponse(output=[dict(REASONING), assistant_message("async hi")])

        def stream_response(self, *args, **kwargs):  # pragma: no cover - not streamed here
            raise NotImplementedError

    result = Runner.run_sync(Agent(name="A", model=AsyncModel()), "hi",
                             run_config=RunConfig(reasoning_item_id_policy="omit"))
    reasoning, message = result.new_items
    assert reasoning.raw_item.summary[0].text == "thinking" and "id" not in reasoning.raw_item
    assert message.raw_item.content[0].text == "async hi"


def test_the_readable_model_is_the_wrapped_models_in_all_else():
    model = ScriptedModel([[assistant_message("x")]])
    model.model = "gpt-test"  # a tracing span reads a model's name there
    readable = ReadableModel(model)
    assert readable.model == "gpt-test" and readable.calls == model.calls


class StreamReturns:
    """A custom model whose `stream_response` returns what it is given, whatever that is."""

    def __init__(self, value):
        self.value = value

    def get_response(self, *args, **kwargs):  # pragma: no cover - only streamed here
        raise AssertionError

    def stream_response(self, *args, **kwargs):
        return self.value


@pytest.mark.parametrize("policy", [None, "omit"])
@pytest.mark.parametrize("value, error, words", [
    (None, UserError, "stream_response must return an iterable of events, not NoneType"),
    (["not-a-dict"], ModelBehaviorError, "The model's stream sent a str, not an event"),
    ([{"type": "response.completed", "response": None}], ModelBehaviorError, "holds no response with a list"),
    ([{"type": "response.completed", "response": {"output": ["x"]}}], ModelBehaviorError, "holds no response with"),
], ids=["None", "no event", "no response", "no items"])
def test_a_custom_models_stream_the_shell_wraps_is_refused_by_the_kernels_checks_not_a_bare_error(policy, value, error,
                                                                                                  words):
    """The shell's wrappers (`ReadableModel`; `WithoutReasoningIds`, under `reasoning_item_id_policy="omit"`)
    iterated the stream and read its events before the kernel checked them: a bare TypeError or AttributeError."""
    config = RunConfig(reasoning_item_id_policy=policy) if policy else None
    result = Runner.run_streamed(Agent(name="A", model=StreamReturns(value)), "hi", run_config=config)

    async def read():
        async for _ in result.stream_events():
            pass

    with pytest.raises(error, match=words):
        asyncio.run(read())


class NamedAsyncModel:
    """A model written for upstream's async protocol, with upstream's `model` attribute: its name."""

    model = "async-model-7"

    async def get_response(self, *args, **kwargs):
        return ModelResponse(output=[assistant_message("hi")])

    async def stream_response(self, *args, **kwargs):
        for event in response_events([assistant_message("hi")]):
            yield event


@pytest.mark.parametrize("omit_reasoning_ids,prompt", [(False, None), (True, None), (False, {"id": "pmpt_1"})])
def test_a_trace_names_the_model_a_shell_wrapper_wraps(omit_reasoning_ids, prompt):
    """The shell wraps a turn's model (awaited, ids left out, a stored prompt, read by attribute): a generation span
    still names the model by its `model` attribute, never the wrapper or the model object."""
    from miniagents import tracing

    class Names(tracing.TracingProcessor):
        def __init__(self):
            self.models = []

        def on_trace_start(self, trace): ...
        def on_trace_end(self, trace): ...
        def on_span_start(self, span): ...
        def force_flush(self): ...
        def shutdown(self): ...

        def on_span_end(self, span):
            data = span.export()["span_data"]
            if data["type"] == "generation":
                self.models.append(data["model"])

    names = Names()
    tracing.add_trace_processor(names)
    try:
        config = RunConfig(reasoning_item_id_policy="omit" if omit_reasoning_ids else None)
        result = Runner.run_sync(Agent(name="A", model=NamedAsyncModel(), prompt=prompt), "go", run_config=config)
    finally:
        tracing.set_trace_processors([])
    assert result.final_output == "hi"
    assert names.models == ["async-model-7"]


DIES_MID_TURN = """
import os, sys
from miniagents.testing import ScriptedModel, function_call
from miniagents.upstream import Agent, Runner, SQLiteSession, function_tool

@function_tool
def pay(amount: int) -> str:
    os._exit(3)  # the process dies inside the call: the session's journal holds the turn

model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1")]])
with SQLiteSession("s", sys.argv[1]) as session:
    Runner.run_sync(Agent(name="A", tools=[pay], model=model), "go", session=session)
"""


def test_a_turn_continued_from_a_sessions_journal_reads_by_attribute(tmp_path):
    """The kernel loads a journaled turn itself (ledger.open_journal): the shell makes its items readable when the
    run starts, as it does for a state loaded through its `RunState`."""
    from miniagents.upstream import SQLiteSession

    path = str(tmp_path / "s.db")
    died = subprocess.run([sys.executable, "-c", DIES_MID_TURN, path], cwd=ROOT, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert died.returncode == 3, died.stderr.decode()
    agent = Agent(name="A", tools=[pay], model=ScriptedModel([[assistant_message("done")]]))
    with SQLiteSession("s", path) as session:
        result = Runner.run_sync(agent, [], session=session)  # no new input: continue the journaled turn
    call, question = result.new_items
    assert (call.raw_item.name, call.raw_item.arguments) == ("pay", '{"amount":5}')
    assert result.interruptions[0].raw_item.call_id == "c1"  # started, no output recorded: a person decides
    assert result.raw_responses[0].output[0].name == "pay"
