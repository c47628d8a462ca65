"""Behaviour that matches upstream's where nothing justifies a difference (issue 12).

Each test names the upstream test (in openai/openai-agents-python's tests/) that shows the behaviour; the tests
here are miniagents' own. Deliberate differences are in docs/porting.md, "What differs, and why".
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from miniagents.upstream import (Agent, AgentHooks, GuardrailFunctionOutput, RunConfig, RunContextWrapper,
                        RunErrorHandlerResult, RunHooks, Runner, RunState, SQLiteSession, ToolApprovalItem, UserError,
                        function_tool, handoff, output_guardrail)
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from support import make_agent, outputs_sent


@function_tool
def echo(text: str) -> str:
    return text


def inputs(model):
    return [[(i.get("type") or i.get("role"), i.get("call_id")) for i in call.input] for call in model.calls]


# --- Server-managed conversations: only new items go out, chained to the latest response ---------------------
# test_agent_runner.py::test_auto_previous_response_id_multi_turn, ::test_conversation_id_only_sends_new_items_multi_turn,
# ::test_previous_response_id_only_sends_new_items_multi_turn (and the _streamed twins)

TWO_TURNS = [ModelStep(output=[function_call("echo", {"text": "a"}, call_id="c1")], response_id="resp-1"),
             ModelStep(output=[function_call("echo", {"text": "b"}, call_id="c2")], response_id="resp-2"),
             ModelStep(output=[assistant_message("done")], response_id="resp-3")]


def drain(agent, text, **kw):
    async def go():
        result = Runner.run_streamed(agent, text, **kw)
        async for _ in result.stream_events():
            pass
        return result

    return asyncio.run(go())


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("options, expected_ids", [
    (dict(auto_previous_response_id=True), [None, "resp-1", "resp-2"]),
    (dict(previous_response_id="resp-0"), ["resp-0", "resp-1", "resp-2"]),
    (dict(conversation_id="conv-1"), [None, None, None]),
])
def test_a_server_managed_conversation_sends_only_new_items(options, expected_ids, streamed):
    agent, model = make_agent(TWO_TURNS, tools=[echo])
    result = drain(agent, "go", **options) if streamed else Runner.run_sync(agent, "go", **options)
    assert result.final_output == "done"
    assert [c.previous_response_id for c in model.calls] == expected_ids
    assert inputs(model) == [[("user", None)], [("function_call_output", "c1")], [("function_call_output", "c2")]]
    if "conversation_id" in options:
        assert [c.conversation_id for c in model.calls] == ["conv-1"] * 3


def test_a_paused_server_managed_run_resumes_from_json_sending_only_the_new_outputs():
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return "paid"

    agent, model = make_agent([ModelStep(output=[function_call("pay", {"amount": 1}, call_id="c1")],
                                         response_id="resp-1"), [assistant_message("ok")]], tools=[pay])
    paused = Runner.run_sync(agent, "pay", auto_previous_response_id=True)
    state = asyncio.run(RunState.from_string(agent, paused.to_state().to_string()))
    state.approve(state.get_interruptions()[0])
    Runner.run_sync(agent, state)
    assert model.calls[1].previous_response_id == "resp-1"
    assert inputs(model)[1] == [("function_call_output", "c1")]


def paused_act(context, inside=None, leave=None):
    """A run paused on `act`, approved: (the contexts `act` runs with, the agent, its model, the state). Given
    events, `act` sets `inside` and waits for `leave` before it looks at its context."""
    seen = []

    @function_tool(needs_approval=True)
    def act(ctx: RunContextWrapper) -> str:
        if inside is not None:
            inside.set()
            leave.wait(10)
        seen.append(ctx.context)
        return "acted"

    agent, model = make_agent([[function_call("act", {}, call_id="c1")], [assistant_message("done")]], tools=[act])
    state = Runner.run_sync(agent, "please act", context=context).to_state()
    state.approve(state.get_interruptions()[0])
    return seen, agent, model, state


def test_a_context_and_a_previous_response_id_given_beside_a_state_replace_the_states_own():
    """As upstream resumes: the application context given replaces the state's (its approvals and usage stay), and so
    does a previous response id; `max_turns` stays the state's. A state loaded without its context gets it here."""
    seen, agent, model, paused = paused_act({"user": "old"})
    state = asyncio.run(RunState.from_string(agent, paused.to_string()))
    result = Runner.run_sync(agent, state, context={"user": "new"}, previous_response_id="resp-1", max_turns=1)
    assert seen == [{"user": "new"}] and result.final_output == "done"
    assert model.calls[1].previous_response_id == "resp-1" and state.max_turns == 10
    assert state.context_wrapper.usage.requests == 2 and state.context_wrapper.is_tool_approved("act", "c1")


def test_a_state_keeps_its_context_when_only_a_conversation_id_is_given_beside_it():
    seen, agent, model, state = paused_act({"user": "alice"})
    Runner.run_sync(agent, state, conversation_id="conv-1")
    assert seen == [{"user": "alice"}] and model.calls[1].conversation_id == "conv-1"


def test_a_context_given_beside_a_state_reaches_an_agent_tools_paused_inner_run():
    """The inner run's approved tool ran with the state's old context while the outer tools got the new one (one
    run, two users); as loading with context_override, the given context is the whole state's."""
    seen = []

    @function_tool(needs_approval=True)
    def act(ctx: RunContextWrapper) -> str:
        seen.append(("inner", ctx.context))
        return "acted"

    @function_tool
    def note(ctx: RunContextWrapper) -> str:
        seen.append(("outer", ctx.context))
        return "noted"

    inner = Agent(name="Clerk", tools=[act], model=ScriptedModel([[function_call("act", {}, call_id="i1")],
                                                                  [assistant_message("ok")]]))
    outer, _ = make_agent([[function_call("clerk", {"input": "go"}, call_id="c1")],
                           [function_call("note", {}, call_id="c2")], [assistant_message("done")]],
                          tools=[inner.as_tool("clerk", "Does it."), note])
    state = Runner.run_sync(outer, "go", context={"user": "old"}).to_state()
    state.approve(state.get_interruptions()[0])
    Runner.run_sync(outer, state, context={"user": "new"})
    assert seen == [("inner", {"user": "new"}), ("outer", {"user": "new"})]


def test_what_is_given_beside_a_state_another_run_holds_never_reaches_that_run():
    """The second run is refused, as in the kernel; the context and conversation id given with it were written into
    the state first, so the run holding it ran its tools with another user's context."""
    import threading

    inside, leave = threading.Event(), threading.Event()
    seen, agent, model, state = paused_act({"user": "alice"}, inside, leave)
    first = threading.Thread(target=lambda: Runner.run_sync(agent, state))
    first.start()
    assert inside.wait(10)
    with pytest.raises(UserError, match="A run of this RunState is still going on"):
        Runner.run_sync(agent, state, context={"user": "mallory"}, conversation_id="conv-x")
    leave.set()
    first.join(10)
    assert seen == [{"user": "alice"}] and state.conversation_id is None


def test_what_is_given_beside_a_state_by_a_run_started_at_the_same_instant_never_reaches_the_other(monkeypatch):
    """Two runs of one state start at once: the second has passed the shell's arguments before the first takes the
    state (forced here by holding it in the shell), and the kernel then refuses it. Its context and conversation id
    are written only by a run that holds the state, so the first runs its tool with its own context."""
    import threading

    from miniagents.upstream import runner

    inside, leave, second_ready, refused = threading.Event(), threading.Event(), threading.Event(), []

    def held_second(*args):
        if threading.current_thread().name == "second":
            second_ready.set()
            assert inside.wait(10)
        return hook_plugins(*args)

    def second_run():
        try:
            Runner.run_sync(agent, state, context={"user": "mallory"}, conversation_id="conv-x")
        except UserError as error:
            refused.append(error)

    seen, agent, model, state = paused_act({"user": "alice"}, inside, leave)
    hook_plugins = runner.hook_plugins
    monkeypatch.setattr(runner, "hook_plugins", held_second)
    second = threading.Thread(target=second_run, name="second")
    second.start()
    assert second_ready.wait(10)
    first = threading.Thread(target=lambda: Runner.run_sync(agent, state))
    first.start()
    second.join(10)
    leave.set()
    first.join(10)
    assert "A run of this RunState is still going on" in str(refused[0])
    assert seen == [{"user": "alice"}] and state.conversation_id is None


def test_a_session_cannot_be_combined_with_a_server_managed_conversation(tmp_path):
    """test_agent_runner.py::test_run_rejects_session_with_resumed_conversation_state"""
    agent, model = make_agent([[assistant_message("x")]])
    for options in (dict(conversation_id="c"), dict(previous_response_id="r"), dict(auto_previous_response_id=True)):
        with pytest.raises(UserError, match="Session persistence cannot be combined"):
            Runner.run_sync(agent, "hi", session=SQLiteSession("s"), **options)
    assert model.calls == ()


def test_a_conversation_id_given_beside_a_state_with_a_session_is_refused_and_changes_nothing():
    """Refused when the run starts, as a fresh run is; the state keeps its own context and no conversation id, and
    a resume without them then runs."""
    agent, model = make_agent([[function_call("act", {}, call_id="c1")], [assistant_message("done")]],
                              tools=[function_tool(lambda: "acted", name_override="act", needs_approval=True)])
    state = Runner.run_sync(agent, "please act", context={"user": "old"}).to_state()
    state.approve(state.get_interruptions()[0])
    with pytest.raises(UserError, match="Session persistence cannot be combined"):
        Runner.run_sync(agent, state, session=SQLiteSession("s"), conversation_id="c", context={"user": "new"})
    assert state.conversation_id is None and state.context_wrapper.context == {"user": "old"}
    assert len(model.calls) == 1 and Runner.run_sync(agent, state).final_output == "done"


@pytest.mark.parametrize("where", ["handoff", "run config"])
def test_handoff_input_filters_are_refused_with_a_server_managed_conversation(where):
    """test_agent_runner.py::test_server_managed_handoff_input_filters_still_raise; refused before the model is asked
    (it was refused once the transfer's output had joined the history the server keeps: the agent never changed)."""
    target = Agent(name="Target", model=ScriptedModel([[assistant_message("hi")]]))
    keep = lambda data: data  # noqa: E731
    agent, _ = make_agent([[function_call("transfer_to_target", "{}", call_id="h1")]],
                          handoffs=[handoff(target, input_filter=keep if where == "handoff" else None)])
    config = RunConfig(handoff_input_filter=keep if where == "run config" else None)
    with pytest.raises(UserError, match="Server-managed conversations do not support handoff input filters"):
        Runner.run_sync(agent, "go", auto_previous_response_id=True, run_config=config)
    assert not agent.model.calls


def test_output_guardrails_are_refused_with_a_server_managed_conversation():
    @output_guardrail
    def check(ctx, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    agent, model = make_agent([[assistant_message("x")]], output_guardrails=[check])
    with pytest.raises(UserError, match="Output guardrails cannot be combined"):
        Runner.run_sync(agent, "go", conversation_id="conv")
    assert model.calls == ()


# --- Approvals are scoped to the run that asked -------------------------------------------------------------
# test_hitl_error_scenarios.py::test_nested_agent_tool_does_not_inherit_parent_approvals,
# test_tool_approval_call_id_reuse.py::test_parent_approval_does_not_authorize_independent_nested_run


def test_a_parents_approval_does_not_authorise_a_nested_call_with_the_same_name_and_id():
    paid = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    inner = Agent(name="Inner", tools=[pay], model=ScriptedModel([[function_call("pay", {"amount": 999},
                                                                                 call_id="c1")]]))
    outer, model = make_agent([[function_call("pay", {"amount": 1}, call_id="c1")],
                               [function_call("inner", {"input": "go"}, call_id="c2")]],
                              tools=[pay, inner.as_tool("inner", "runs the inner agent")])
    first = Runner.run_sync(outer, "go")
    state = first.to_state()
    state.approve(state.get_interruptions()[0])
    second = Runner.run_sync(outer, state)
    assert paid == [1]
    assert [(i.tool_name, i.call_id, i.agent.name) for i in second.interruptions] == [("pay", "c1", "Inner")]
    assert second.to_state().context_wrapper.is_tool_approved("pay", "c1") is True  # the parent's own record


def test_a_nested_approval_given_on_the_parent_reaches_the_nested_call_only():
    paid = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    inner = Agent(name="Inner", tools=[pay], model=ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1")],
                                                                  [assistant_message("inner done")]]))
    outer, model = make_agent([[function_call("inner", {"input": "go"}, call_id="o1")], [assistant_message("done")]],
                              tools=[inner.as_tool("inner", "runs the inner agent")])
    paused = Runner.run_sync(outer, "go")
    state = asyncio.run(RunState.from_string(outer, paused.to_state().to_string()))
    (item,) = state.get_interruptions()
    state.approve(item)
    assert state.context_wrapper.is_tool_approved("pay", "c1") is None  # not the parent's call
    result = Runner.run_sync(outer, state)
    assert paid == [5] and result.final_output == "done"


def test_an_approval_item_without_a_tool_name_takes_it_from_the_call():
    """test_run_context_wrapper.py::test_run_context_scopes_approvals_to_call_ids"""
    item = ToolApprovalItem(agent=Agent(name="A"), raw_item={"type": "function_call", "name": "pay",
                                                             "call_id": "c9", "arguments": "{}"})
    assert item.tool_name == "pay"
    ctx = RunContextWrapper(context=None)
    ctx.approve_tool(item)
    assert ctx.is_tool_approved("pay", "c9") is True and ctx.is_tool_approved("pay", "c8") is None


# --- Error handlers: their answer is kept like any final output -------------------------------------------
# test_max_turns.py::test_non_streamed_max_turns_handler_persists_output_to_session,
# ::test_streamed_max_turns_handler_returns_output, ::test_structured_output_max_turns_handler_pydantic_output

LOOP = [[function_call("echo", {"text": str(i)}, call_id=f"c{i}")] for i in range(5)]


def test_a_max_turns_handlers_answer_is_saved_to_the_session(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "db"))
    agent, _ = make_agent(LOOP, tools=[echo])
    result = Runner.run_sync(agent, "loop", max_turns=1, session=session,
                             error_handlers={"max_turns": lambda data: "fallback"})
    assert result.final_output == "fallback"
    items = session.get_items()
    assert [i.get("type") or i.get("role") for i in items] == ["user", "function_call", "function_call_output",
                                                              "message"]
    assert items[-1]["content"][0]["text"] == "fallback"


def test_a_max_turns_handlers_answer_is_streamed():
    agent, _ = make_agent(LOOP, tools=[echo])

    async def go():
        result = Runner.run_streamed(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda data: "fallback"})
        names = [getattr(e, "name", None) async for e in result.stream_events()]
        return result, names

    result, names = asyncio.run(go())
    assert result.final_output == "fallback" and names[-1] == "message_output_created"


@dataclass
class Verdict:
    answer: str


def test_a_structured_handler_answer_is_written_as_the_model_would_write_it():
    from typing import List

    agent, _ = make_agent(LOOP, tools=[echo], output_type=List[str])
    result = Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda d: ["y", "z"]})
    assert result.final_output == ["y", "z"]
    assert result.new_items[-1].raw_item["content"][0]["text"] == '{"response":["y","z"]}'


def test_a_raw_dict_handler_answer_is_the_final_output_and_a_bad_one_is_a_user_error():
    agent, _ = make_agent(LOOP, tools=[echo], output_type=Verdict)
    result = Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda d: {"answer": "z"}})
    assert result.final_output == Verdict("z")
    agent, _ = make_agent(LOOP, tools=[echo], output_type=Verdict)
    with pytest.raises(UserError, match="Invalid run error handler final_output for structured output"):
        Runner.run_sync(agent, "loop", max_turns=1, error_handlers={"max_turns": lambda d: {"answer": 5}})
    agent, _ = make_agent(LOOP, tools=[echo])
    with pytest.raises(UserError, match="Invalid run error handler result"):
        Runner.run_sync(agent, "loop", max_turns=1,
                        error_handlers={"max_turns": lambda d: {"final_output": "x", "extra": 1}})


# --- Hooks ------------------------------------------------------------------------------------------------
# test_agent_hooks.py::test_non_streamed_agent_hooks, ::test_agent_hooks_receives_turn_input_string


def test_hooks_see_the_turn_input_when_the_agent_starts():
    seen = []

    class Run(RunHooks):
        def on_agent_start(self, context, agent):
            seen.append(("run", list(context.turn_input)))

    class Own(AgentHooks):
        def on_start(self, context, agent):
            seen.append(("agent", list(context.turn_input)))

    agent = Agent(name="Assistant", model=ScriptedModel([[assistant_message("hi")]]), hooks=Own())
    Runner.run_sync(agent, "hello", hooks=Run())
    assert seen == [("run", [{"content": "hello", "role": "user"}]), ("agent", [{"content": "hello", "role": "user"}])]


# --- Streaming results ------------------------------------------------------------------------------------
# test_cancel_streaming.py, test_agent_runner_streamed.py::test_streamed_trip_preserves_accepted_tool_prefix


def test_cancel_before_streaming_yields_nothing_and_completes():
    agent, model = make_agent([[assistant_message("never")]])
    result = Runner.run_streamed(agent, "go")
    result.cancel()

    async def go():
        return [e async for e in result.stream_events()]

    assert asyncio.run(go()) == [] and result.is_complete and model.calls == ()


def test_a_reader_that_stops_early_still_gets_a_complete_result():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("never")]],
                              tools=[echo])
    result = Runner.run_streamed(agent, "go")

    async def first_only():
        async for _ in result.stream_events():
            break

    asyncio.run(first_only())  # asyncio.run waits for the worker thread, which stops at the next step
    assert result.is_complete and result.final_output is None and result.to_state() is not None


def test_a_streamed_run_that_fails_keeps_the_items_it_had_accepted():
    agent, model = make_agent([[function_call("echo", {"text": "a"}, call_id="c1")], RuntimeError("model down")],
                              tools=[echo])
    result = Runner.run_streamed(agent, "go")

    async def go():
        async for _ in result.stream_events():
            pass

    with pytest.raises(RuntimeError, match="model down"):
        asyncio.run(go())
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_output_item"]
    assert result.is_complete


# --- Shapes and checks upstream code relies on --------------------------------------------------------------


def test_generic_classes_can_be_subscripted_in_annotations():
    from miniagents.upstream import AgentHooks, Handoff, InputGuardrail, OutputGuardrail, RunHooks, RunState, \
        ToolInputGuardrail

    from miniagents.upstream.run_context import TContext

    for cls in (RunHooks, AgentHooks, RunState, InputGuardrail, OutputGuardrail, ToolInputGuardrail, Handoff,
                RunContextWrapper, Agent):
        assert cls[dict] is not None
        assert cls.__parameters__ == (TContext,)  # one context type variable, the one upstream exports


def test_agent_hooks_passed_as_run_hooks_are_a_clear_type_error():
    agent, model = make_agent([[assistant_message("x")]])
    with pytest.raises(TypeError, match="Run hooks must be instances of RunHooks"):
        Runner.run_sync(agent, "hi", hooks=AgentHooks())
    assert model.calls == ()


def test_needs_approval_of_the_wrong_type_is_refused_where_the_tool_is_defined():
    def pay() -> str:
        return "paid"

    with pytest.raises(UserError, match="Invalid needs_approval value: expected a bool or callable, got str"):
        function_tool(needs_approval="yes")(pay)


def test_agents_compare_by_their_fields_like_the_dataclass_they_are():
    assert Agent(name="A", instructions="x") == Agent(name="A", instructions="x")
    assert Agent(name="A") != Agent(name="B")


def test_reasoning_ids_left_out_by_policy_stay_out_of_the_stored_items(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "db"))
    agent, model = make_agent([[{"type": "reasoning", "id": "rs_1", "summary": []}, assistant_message("hi")]])
    result = Runner.run_sync(agent, "go", session=session, run_config=RunConfig(reasoning_item_id_policy="omit"))
    stored = [i for i in session.get_items() if i.get("type") == "reasoning"]
    assert stored == [{"type": "reasoning", "summary": []}]
    assert "id" not in result.to_input_list()[1]


# --- Methods that are coroutines upstream can be awaited (and used synchronously) --------------------------
# test_function_tool.py::test_sync_custom_error_function_works


class UpstreamStyleModel:
    """A model written for upstream's async `Model`: a coroutine answer, an async generator stream."""

    def __init__(self, text):
        from miniagents.upstream import testing  # its streams can be async-iterated, as upstream's

        self.scripted = testing.ScriptedModel([[assistant_message(text)], [assistant_message(text)]])

    async def get_response(self, *args, **kwargs):
        await asyncio.sleep(0)
        return self.scripted.get_response(*args, **kwargs)

    async def stream_response(self, *args, **kwargs):
        for event in self.scripted.stream_response(*args, **kwargs):
            await asyncio.sleep(0)
            yield event


def test_a_model_written_for_upstreams_async_protocol_runs_plain_and_streamed():
    agent = Agent(name="Assistant", model=UpstreamStyleModel("from an async model"))
    assert Runner.run_sync(agent, "hi").final_output == "from an async model"
    streamed = drain(agent, "hi")
    assert streamed.final_output == "from an async model"


def test_a_session_written_for_upstream_with_coroutine_methods_works_in_a_run():
    class MemorySession:
        session_id, session_settings = "mem", None

        def __init__(self):
            self.items = []

        async def get_items(self, limit=None):
            return list(self.items)

        async def add_items(self, items):
            self.items.extend(items)

        async def pop_item(self):
            return self.items.pop() if self.items else None

        async def clear_session(self):
            self.items.clear()

    session = MemorySession()
    agent, model = make_agent([[assistant_message("first")], [assistant_message("second")]])
    Runner.run_sync(agent, "one", session=session)
    Runner.run_sync(agent, "two", session=session)
    assert [i.get("role") for i in model.calls[1].input] == ["user", "assistant", "user"]
    assert len(session.items) == 4


# --- Strict schemas are checked where a tool is defined, not by the server later -------------------------------
# test_strict_schema.py::test_open_map_root_errors, test_function_tool.py::test_manual_function_tool_rejects_root_union,
# ::test_manual_function_tool_normalizes_typeless_object_schemas


def manual(schema, strict=True):
    from miniagents import FunctionTool

    return FunctionTool(name="manual", description="", params_json_schema=schema,
                        on_invoke_tool=lambda ctx, args: "ok", strict_json_schema=strict)


def test_a_manual_strict_tool_schema_is_normalised_when_it_is_defined():
    tool = manual({"properties": {"city": {"type": "string"}, "unit": {"type": "string", "default": None}}})
    assert tool.params_json_schema == {"type": "object", "additionalProperties": False, "required": ["city", "unit"],
                                       "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}
    assert manual({}).params_json_schema["properties"] == {}


@pytest.mark.parametrize("schema, message", [
    ({"anyOf": [{"type": "object", "properties": {}}, {"type": "string"}]}, "must not use 'anyOf'"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
    ({"type": "object", "properties": {"x": {"allOf": [{"$ref": "#/$defs/loop"}]}},
      "$defs": {"loop": {"allOf": [{"$ref": "#/$defs/loop"}]}}}, "too large"),
])
def test_a_manual_strict_tool_schema_strict_mode_refuses_fails_when_it_is_defined(schema, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        manual(schema)
    assert manual(schema, strict=False).params_json_schema == schema  # non-strict: sent as written


def test_a_sessions_settings_default_to_upstreams_no_limit():
    from miniagents import SessionSettings

    assert SQLiteSession("s").session_settings == SessionSettings()


# --- Agents as tools --------------------------------------------------------------------------------------------
# test_agent_as_tool.py::test_agent_as_tool_returns_final_output, ::test_agent_as_tool_streams_events_with_on_stream,
# ::test_agent_as_tool_streaming_updates_agent_on_handoff, test_agent_as_tool_output_guardrails.py


def test_an_agent_tools_stream_names_the_agent_a_handoff_gave_the_conversation_to():
    worker, _ = make_agent([[assistant_message("worked")]], name="worker")
    triage, _ = make_agent([[function_call("transfer_to_worker", {}, call_id="h1")]], name="triage", handoffs=[worker])
    received = []
    outer, _ = make_agent([[function_call("delegate", {"input": "go"}, call_id="d1")], [assistant_message("done")]],
                          tools=[triage.as_tool("delegate", "Delegate", on_stream=received.append)])
    assert Runner.run_sync(outer, "go").final_output == "done"
    assert received[0]["agent"] is triage and received[-1]["agent"] is worker


@pytest.mark.parametrize("streamed", [False, True])
def test_an_agent_tool_whose_final_output_a_guardrail_checked_returns_it_even_when_empty(streamed):
    @output_guardrail
    def passes(ctx, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    @function_tool
    def lookup() -> str:
        return "internal"

    inner, _ = make_agent([[function_call("lookup", {}, call_id="l1")], [assistant_message("")]], name="inner", tools=[lookup],
                          output_guardrails=[passes])
    outer, model = make_agent([[function_call("delegate", {"input": "go"}, call_id="d1")], [assistant_message("done")]],
                              tools=[inner.as_tool("delegate", "D", on_stream=(lambda e: None) if streamed else None)])
    Runner.run_sync(outer, "go")
    assert outputs_sent(model.calls[1]) == {"d1": ""}  # not "internal", which the guardrail never saw


# --- A Handoff built by hand -------------------------------------------------------------------------------------
# test_agent_runner.py::test_async_input_filter_supported (and its streamed twin)


def test_a_handoff_built_by_hand_gives_the_conversation_to_the_agent_its_callable_returns():
    from miniagents import Handoff

    target, _ = make_agent([[assistant_message("last")]], name="target")

    async def on_invoke_handoff(ctx, arguments):
        return target

    by_hand = Handoff(tool_name="transfer_to_target", tool_description="To the target", input_json_schema={},
                      on_invoke_handoff=on_invoke_handoff, agent_name="target")
    start, _ = make_agent([[function_call("transfer_to_target", {}, call_id="h1")]], name="start",
                          handoffs=[by_hand])
    result = Runner.run_sync(start, "go")
    assert result.final_output == "last" and result.last_agent is target


# --- Two agents whose names make one tool name ---------------------------------------------------------------------
# test_agent_runner.py::test_run_reports_derived_agent_name_collisions_before_model_call


