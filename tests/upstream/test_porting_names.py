"""Upstream names with upstream's meaning (issue 11): what code written for the OpenAI Agents SDK reaches for."""
import asyncio
import io
import json
import logging
import warnings

import pytest

import miniagents
from miniagents.upstream import (Agent, AgentBase, AgentHookContext, AgentOutputSchema, AgentOutputSchemaBase,
                        CodeInterpreterTool, FileSearchTool, GenerateDynamicPromptData, HostedMCPTool,
                        ImageGenerationTool, InputGuardrailTripwireTriggered, ModelBehaviorError, RunContextWrapper,
                        RunState, Runner, SQLiteSession, ToolContext, ToolOutputFileContent, ToolOutputImage,
                        ToolOutputText, UserError, WebSearchTool, function_tool, input_guardrail)
from miniagents.upstream import GuardrailFunctionOutput
from miniagents.items import InputItem
from miniagents.upstream.run import AgentRunner, get_default_agent_runner, set_default_agent_runner
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent, outputs_sent


@function_tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


# --- Agents ----------------------------------------------------------------------------------------------------


def test_agent_is_an_agent_base_and_get_all_tools_is_a_coroutine_of_the_enabled_tools():
    async def only_for_ann(ctx, agent):
        return ctx.context == "ann"

    hidden = function_tool(lambda: "x", name_override="hidden", is_enabled=only_for_ann)
    search = WebSearchTool()
    agent = Agent(name="A", tools=[lookup, hidden, search])
    assert isinstance(agent, AgentBase)
    names = asyncio.run(agent.get_all_tools(RunContextWrapper(context="bob")))
    assert [t.name for t in names] == ["lookup", "web_search"]
    names = asyncio.run(agent.get_all_tools(RunContextWrapper(context="ann")))
    assert [t.name for t in names] == ["lookup", "hidden", "web_search"]


def test_hook_context_tool_context_and_approval_decisions_share_the_runs_state():
    ctx = RunContextWrapper(context={"user": "ann"})
    assert isinstance(AgentHookContext(context=1), RunContextWrapper)
    call = {"type": "function_call", "call_id": "c1", "name": "pay", "arguments": '{"amount": 5}'}
    tool_ctx = ToolContext.from_agent_context(ctx, "c1", call, agent="the agent", run_config="cfg")
    assert (tool_ctx.tool_name, tool_ctx.tool_arguments, tool_ctx.tool_call_id) == ("pay", '{"amount": 5}', "c1")
    assert tool_ctx.context is ctx.context and tool_ctx.usage is ctx.usage and tool_ctx.approvals is ctx.approvals
    inner = ToolContext.from_agent_context(tool_ctx, "c2", tool_name="refund", tool_arguments="{}")
    assert (inner.agent, inner.run_config) == ("the agent", "cfg")
    with pytest.raises(ValueError, match="must be passed to ToolContext"):
        ToolContext.from_agent_context(ctx, "c3")

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        return "paid"

    agent, _ = make_agent([[function_call("pay", {"amount": 5}, call_id="c1"),
                            function_call("pay", {"amount": 6}, call_id="c2")]], tools=[pay])
    state = Runner.run_sync(agent, "pay").to_state()
    first, second = state.get_interruptions()
    ctx = state.context_wrapper
    assert ctx.is_tool_approved("pay", "c1") is None  # upstream's get_approval_status (docs/porting.md)
    state.approve(first)
    state.reject(second, rejection_message="not today")
    assert ctx.is_tool_approved("pay", "c1") is True and ctx.is_tool_approved("pay", "c2") is False
    assert ctx.rejection_message("pay", "c2") == "not today"  # upstream's get_rejection_message
    assert ctx.rejection_message("pay", "c1") is None


# --- RunState.add_input ---------------------------------------------------------------------------------------


@function_tool(needs_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def paused(steps, **agent_options):
    agent, model = make_agent(steps, tools=[delete], **agent_options)
    result = Runner.run_sync(agent, "clean up")
    return agent, model, result.to_state()


def test_added_input_enters_after_the_paused_turns_outputs_and_before_the_next_model_call(tmp_path):
    agent, model, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")],
                                  [assistant_message("done")]])
    state.approve(state.get_interruptions()[0])
    state.add_input("also b, please")
    state = asyncio.run(RunState.from_string(agent, state.to_string()))  # staged input survives the JSON round trip
    assert state.pending_input == [{"content": "also b, please", "role": "user"}]
    result = Runner.run_sync(agent, state)
    sent = model.calls[1].input
    assert [i.get("type") or i.get("role") for i in sent][-2:] == ["function_call_output", "user"]
    assert sent[-1]["content"] == "also b, please"
    assert [i.type for i in result.new_items][-2:] == ["input_item", "message_output_item"]
    assert isinstance(result.new_items[-2], InputItem)
    assert result.to_input_list()[-2]["content"] == "also b, please"
    assert result.to_state().pending_input == []


def test_added_input_is_saved_to_the_session_and_checked_by_the_input_guardrails(tmp_path):
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    agent, model = make_agent([[function_call("delete", {"path": "a"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[delete])
    state = Runner.run_sync(agent, "clean up", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    state.add_input([{"role": "user", "content": "thanks"}])
    Runner.run_sync(agent, state, session=session)
    assert [i.get("content") for i in session.get_items() if i.get("role") == "user"] == ["clean up", "thanks"]

    @input_guardrail
    def no_secrets(ctx, agent, items):
        text = json.dumps(items)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="password" in text)

    agent, model, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")], [assistant_message("x")]],
                                 input_guardrails=[no_secrets])
    state.approve(state.get_interruptions()[0])
    state.add_input("my password is 1234")
    with pytest.raises(InputGuardrailTripwireTriggered):
        Runner.run_sync(agent, state)
    assert len(model.calls) == 1  # the model never saw it


def test_add_input_refuses_states_it_cannot_honour():
    agent, _ = make_agent([[assistant_message("done")]])
    finished = Runner.run_sync(agent, "hi").to_state()
    with pytest.raises(UserError, match="Cannot add input to a terminal RunState"):
        finished.add_input("more")
    _, _, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")]],
                         tool_use_behavior="stop_on_first_tool")
    with pytest.raises(UserError, match="whose tool result may end the run"):
        state.add_input("more")
    _, _, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")]],
                         tool_use_behavior={"stop_at_tool_names": ["delete"]})
    with pytest.raises(UserError, match="whose tool result may end the run"):  # a call of a stopping tool waits
        state.add_input("more")
    _, _, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")]],
                         tool_use_behavior={"stop_at_tool_names": ["other"]})
    state.add_input("more")  # no waiting call can end the run
    agent, _ = make_agent([[function_call("delete", {"path": "a"}, call_id="c1")]], tools=[delete])
    state = Runner.run_sync(agent, "go", max_turns=1).to_state()
    with pytest.raises(UserError, match="no remaining model turns"):
        state.add_input("more")
    _, _, state = paused([[function_call("delete", {"path": "a"}, call_id="c1")]])
    with pytest.raises(UserError, match="input\\[0\\]"):
        state.add_input([{"role": "robot", "content": "x"}])
    state.add_input("kept")
    assert state.pending_input == [{"content": "kept", "role": "user"}]


@pytest.mark.parametrize("method", ["get_system_prompt", "get_all_tools", "get_prompt"])
def test_an_agent_subclass_overriding_a_coroutine_upstreams_run_calls_is_refused_when_defined(method):
    """Upstream's run asks the agent (`await agent.get_system_prompt(ctx)`; its SandboxAgent overrides
    `get_all_tools`); a miniagents run reads the fields, so such an override was never called: the model silently
    got the base instructions."""
    async def override(self, run_context):
        return "custom"

    with pytest.raises(UserError, match=f"Custom overrides Agent.{method}, which a miniagents run never calls"):
        type("Custom", (Agent,), {method: override})
    assert type("Helper", (Agent,), {"helper": override})  # any other method is the subclass's own


# --- The runner -----------------------------------------------------------------------------------------------


def test_runner_calls_go_to_the_default_agent_runner():
    calls = []

    class Recording(AgentRunner):
        def run_sync(self, starting_agent, input, **options):
            calls.append((starting_agent.name, input, options.get("max_turns")))
            return super().run_sync(starting_agent, input, **options)

    agent, _ = make_agent([[assistant_message("hi")], [assistant_message("again")]])
    set_default_agent_runner(Recording())
    try:
        assert isinstance(get_default_agent_runner(), Recording)
        assert Runner.run_sync(agent, "hello", max_turns=3).final_output == "hi"
    finally:
        set_default_agent_runner(None)
    assert calls == [("Assistant", "hello", 3)]
    assert type(get_default_agent_runner()) is AgentRunner
    assert Runner.run_sync(agent, "hello").final_output == "again" and len(calls) == 1


def test_a_runner_written_for_upstream_gets_every_option_by_keyword_as_upstreams_runner_hands_them():
    """Upstream's `Runner` hands the default agent runner every option by keyword, defaults too: a runner taking
    `**kwargs` got a TypeError for `Runner.run_streamed(agent, input, context)` and a KeyError for
    `kwargs["context"]` when the call gave none."""
    import asyncio

    seen = []

    class Reading(AgentRunner):
        def run_sync(self, starting_agent, input, **kwargs):
            seen.append((kwargs["context"], kwargs["max_turns"], len(kwargs)))
            return super().run_sync(starting_agent, input, **kwargs)

        def run_streamed(self, starting_agent, input, **kwargs):
            seen.append((kwargs["context"], kwargs["max_turns"], len(kwargs)))
            return super().run_streamed(starting_agent, input, **kwargs)

    async def streamed(agent):
        result = Runner.run_streamed(agent, "hello", {"user": 1}, 4)
        async for _ in result.stream_events():
            pass
        return result.final_output

    agent, _ = make_agent([[assistant_message("hi")], [assistant_message("again")]])
    set_default_agent_runner(Reading())
    try:
        assert Runner.run_sync(agent, "hello").final_output == "hi"
        assert asyncio.run(streamed(agent)) == "again"
    finally:
        set_default_agent_runner(None)
    assert seen == [(None, 10, 9), ({"user": 1}, 4, 9)]


# --- Tool outputs, hosted tools -------------------------------------------------------------------------------


def test_structured_tool_outputs_reach_the_model_as_content_parts():
    @function_tool
    def picture() -> ToolOutputImage:
        return ToolOutputImage(image_url="https://x/cat.png", detail="low")

    @function_tool
    def bundle() -> list:
        return [ToolOutputText(text="see file"), {"type": "file", "file_id": "file_1", "filename": "a.pdf"}]

    @function_tool
    def not_quite() -> list:
        return [ToolOutputText(text="see file"), {"type": "file"}]  # a file without a source is plain data

    agent, model = make_agent([[function_call("picture", "{}", call_id="c1"),
                                function_call("bundle", "{}", call_id="c2"),
                                function_call("not_quite", "{}", call_id="c3")], [assistant_message("ok")]],
                              tools=[picture, bundle, not_quite])
    result = Runner.run_sync(agent, "show me")
    sent = outputs_sent(model.calls[1])
    assert sent["c1"] == [{"type": "input_image", "image_url": "https://x/cat.png", "detail": "low"}]
    assert sent["c2"] == [{"type": "input_text", "text": "see file"},
                          {"type": "input_file", "file_id": "file_1", "filename": "a.pdf"}]
    assert isinstance(sent["c3"], str) and json.loads(sent["c3"])[1] == {"type": "file"}
    assert isinstance(result.new_items[3].output, ToolOutputImage)


def test_every_structured_output_may_be_given_as_its_dict():
    @function_tool
    def dicts() -> list:
        return [{"type": "text", "text": "see"}, {"type": "image", "image_url": "https://x/cat.png"},
                {"type": "file", "file_url": "https://x/a.pdf"}]

    agent, model = make_agent([[function_call("dicts", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[dicts])
    Runner.run_sync(agent, "show me")
    assert outputs_sent(model.calls[1])["c1"] == [{"type": "input_text", "text": "see"},
                                                  {"type": "input_image", "image_url": "https://x/cat.png"},
                                                  {"type": "input_file", "file_url": "https://x/a.pdf"}]


def test_structured_outputs_need_a_source():
    with pytest.raises(ValueError, match="image_url or file_id"):
        ToolOutputImage()
    with pytest.raises(ValueError, match="file_data, file_url, or file_id"):
        ToolOutputFileContent(filename="a.txt")


def test_a_structured_output_survives_a_pause_and_the_session_ledger(tmp_path):
    @function_tool
    def picture() -> ToolOutputImage:
        return ToolOutputImage(file_id="file_9")

    session = SQLiteSession("s", str(tmp_path / "s.db"))
    agent, model = make_agent([[function_call("picture", "{}", call_id="c1"),
                                function_call("delete", {"path": "a"}, call_id="c2")], [assistant_message("ok")]],
                              tools=[picture, delete])
    state = Runner.run_sync(agent, "go", session=session).to_state()
    state = asyncio.run(RunState.from_string(agent, state.to_string()))
    state.approve(state.get_interruptions()[0])
    Runner.run_sync(agent, state, session=session)
    assert outputs_sent(model.calls[1])["c1"] == [{"type": "input_image", "file_id": "file_9"}]
    assert [i["output"] for i in session.get_items() if i.get("call_id") == "c1" and "output" in i] == [
        [{"type": "input_image", "file_id": "file_9"}]]


def test_hosted_tools_are_configuration_in_upstreams_wire_shape():
    assert WebSearchTool(search_context_size="high").spec() == {
        "type": "web_search", "filters": None, "user_location": None, "search_context_size": "high"}
    files = FileSearchTool(["vs_1"], max_num_results=3, include_search_results=True)
    assert files.spec() == {"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 3}
    assert files.includes == ("file_search_call.results",) and FileSearchTool(["vs_1"]).includes == ()
    assert FileSearchTool(["v"], max_num_results=0).spec() == {"type": "file_search", "vector_store_ids": ["v"]}
    with pytest.raises(UserError, match="max_num_results"):
        FileSearchTool(["v"], max_num_results=51)
    with pytest.raises(UserError, match="on_approval_request=...\\) is not supported"):
        HostedMCPTool(tool_config={"type": "mcp"}, on_approval_request=lambda request: {"approve": True})
    config = {"type": "mcp", "server_label": "docs", "server_url": "https://x/mcp", "require_approval": "never"}
    for tool, name in ((HostedMCPTool(tool_config=config), "hosted_mcp"),
                       (CodeInterpreterTool(tool_config={"type": "code_interpreter"}), "code_interpreter"),
                       (ImageGenerationTool(tool_config={"type": "image_generation"}), "image_generation")):
        assert tool.name == name and tool.spec() == tool.tool_config and tool.spec() is not tool.tool_config


@pytest.mark.parametrize("make", [HostedMCPTool, CodeInterpreterTool, ImageGenerationTool])
@pytest.mark.parametrize("config", [None, 5, "mcp", [("type", "mcp")]])
def test_a_hosted_tool_config_that_is_no_dict_is_refused_where_the_tool_is_made(make, config):
    """It was a bare TypeError or ValueError out of the run, when the request was built (`dict(tool_config)`)."""
    with pytest.raises(UserError, match=f"{make.__name__} tool_config must be a dict"):
        make(tool_config=config)


def test_hosted_tool_items_stay_in_the_transcript_the_session_and_the_state(tmp_path):
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "news"}}
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    agent, model = make_agent([[search, function_call("delete", {"path": "a"}, call_id="c1")],
                               [assistant_message("done")]], tools=[WebSearchTool(), delete])
    state = Runner.run_sync(agent, "news?", session=session).to_state()
    state = asyncio.run(RunState.from_string(agent, state.to_string()))
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(agent, state, session=session)
    assert [i.type for i in result.new_items][:2] == ["tool_call_item", "tool_call_item"]
    assert search in model.calls[1].input
    assert search in result.to_input_list() and search in session.get_items()


def test_a_hosted_tool_with_a_chat_completions_model_is_refused_when_the_run_starts():
    from miniagents import OpenAIChatCompletionsModel

    chat = OpenAIChatCompletionsModel(model="llama3", base_url="http://127.0.0.1:9/v1", api_key="k")
    helper = Agent(name="Helper", tools=[FileSearchTool(["vs"])], model=chat)
    agent, model = make_agent([[assistant_message("x")]], handoffs=[helper])
    with pytest.raises(UserError, match=r"FileSearchTool \('file_search'\) of agent 'Helper'.*OpenAIResponsesModel"):
        Runner.run_sync(agent, "hi")
    assert model.calls == ()


def test_a_generator_function_made_a_tool_by_the_shell_is_a_user_error_when_called():
    """The shell's function_tool wraps the function (to read structured outputs) in one that is no generator
    function, so a check of the function never saw it: the model was told `<generator object ...>`, nothing ran."""
    sent = []

    @function_tool
    def send_emails(n: int):
        for i in range(n):
            sent.append(i)
            yield f"sent {i}"

    @function_tool
    async def send_async(n: int):
        sent.append(n)
        yield f"sent {n}"

    for name, kind in (("send_emails", "generator"), ("send_async", "async_generator")):
        agent, model = make_agent([[function_call(name, {"n": 2}, call_id="c1")], [assistant_message("ok")]],
                                  tools=[send_emails, send_async])
        with pytest.raises(UserError, match=rf"^tool '{name}' returned a {kind} it never ran: a generator function"):
            Runner.run_sync(agent, "go")
        assert sent == [] and len(model.calls) == 1


def test_defer_loading_warns_and_the_tool_is_sent_like_any_other():
    def lookup(city: str) -> str:
        return city

    with pytest.warns(UserWarning, match=r"defer_loading=True\): miniagents has no tool search"):
        deferred = function_tool(lookup, defer_loading=True)
    assert deferred.spec() == function_tool(lookup).spec()
    agent, model = make_agent([[function_call("lookup", {"city": "Oslo"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[deferred])
    assert Runner.run_sync(agent, "hi").final_output == "ok"
    assert [tool.name for tool in model.calls[0].tools] == ["lookup"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert function_tool(lambda: "x", name_override="ok", defer_loading=False).name == "ok"


# --- Prompts, output schemas, agents as tools -------------------------------------------------------------------


def test_a_stored_prompt_is_sent_and_a_dynamic_one_is_made_each_turn():
    seen = []

    def prompt(data: GenerateDynamicPromptData):
        seen.append((data.agent.name, data.context.context))
        return {"id": "pmpt_1", "variables": {"user": data.context.context}}

    model = ScriptedModel([[assistant_message("a")], [assistant_message("b")]])
    agent = Agent(name="Assistant", model=model, prompt={"id": "pmpt_0"})  # upstream's Agent: the kernel's has none
    Runner.run_sync(agent, "hi")
    assert model.calls[0].prompt == {"id": "pmpt_0"}
    Runner.run_sync(agent.clone(prompt=prompt), "hi", context="ann")
    assert model.calls[1].prompt == {"id": "pmpt_1", "variables": {"user": "ann"}} and seen == [("Assistant", "ann")]
    with pytest.raises(UserError, match="must return a Prompt dict"):
        Runner.run_sync(agent.clone(prompt=lambda data: "p"), "hi")
    with pytest.raises(TypeError, match="Agent prompt must be"):
        Agent(name="A", prompt="pmpt_1")


def test_an_output_schema_object_is_used_as_given():
    class Upper(AgentOutputSchemaBase):
        def is_plain_text(self):
            return False

        def name(self):
            return "Upper"

        def json_schema(self):
            return {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                    "additionalProperties": False}

        def is_strict_json_schema(self):
            return True

        def validate_json(self, json_str):
            data = json.loads(json_str)
            if "text" not in data:
                raise ModelBehaviorError("no text")
            return data["text"].upper()

    agent, model = make_agent([[assistant_message('{"text": "hi"}')]], output_type=Upper())
    assert Runner.run_sync(agent, "x").final_output == "HI"
    assert model.calls[0].output_schema["schema"]["required"] == ["text"]
    loose, model = make_agent([[assistant_message('{"anything": [1, 2]}')]],
                              output_type=AgentOutputSchema(dict, strict_json_schema=False))
    assert Runner.run_sync(loose, "x").final_output == {"anything": [1, 2]}
    assert model.calls[0].output_schema["strict"] is False


def test_a_nested_agent_run_knows_which_call_started_it_and_streams_upstreams_event_dicts():
    seen, events = [], []

    def extract(result):
        seen.append(result.agent_tool_invocation)
        return result.final_output

    expert, _ = make_agent([[assistant_message("42")]], name="Expert")
    tool = expert.as_tool("ask", "Ask.", custom_output_extractor=extract, on_stream=events.append)
    agent, model = make_agent([[function_call("ask", {"input": "q"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[tool])
    result = Runner.run_sync(agent, "go")
    assert result.agent_tool_invocation is None
    assert [(s.tool_name, s.tool_call_id, json.loads(s.tool_arguments)) for s in seen] == [
        ("ask", "c1", {"input": "q"})]
    assert events and all(set(e) == {"event", "agent", "tool_call"} for e in events)
    assert events[0]["agent"] is expert and events[0]["tool_call"]["call_id"] == "c1"


def test_run_items_and_raw_stream_events_answer_nested_attribute_reads():
    agent, _ = make_agent([[assistant_message("Hello")]])
    result = Runner.run_sync(agent, "hi")
    assert result.new_items[0].raw_item.content[0].text == "Hello"

    async def go():
        streamed = Runner.run_streamed(make_agent([[assistant_message("Hi")]])[0], "hi")
        return [e async for e in streamed.stream_events() if e.type == "raw_response_event"]

    completed = asyncio.run(go())[-1]
    assert completed.data.type == "response.completed" and completed.data.response.output[0].content[0].text == "Hi"
    with pytest.raises(AttributeError, match="has no field 'nope'"):
        completed.data.nope


# --- The terminal loop and logging ---------------------------------------------------------------------------


def scripted_input(lines):
    feed = iter(lines)

    def read(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None
    return read


@pytest.mark.parametrize("flavour", ["async", "sync"])
@pytest.mark.parametrize("stream", [True, False])
def test_run_demo_loop_keeps_the_conversation_and_shows_the_run(flavour, stream, capsys):
    from miniagents.upstream.repl import run_demo_loop, run_demo_loop_sync

    agent, model = make_agent([[function_call("lookup", {"order": "A1"}, call_id="c1")],
                               [assistant_message("Shipped.")], [assistant_message("You're welcome.")]],
                              tools=[lookup])
    read = scripted_input(["where is A1?", "   ", "thanks", "quit", "never read"])
    if flavour == "async":
        asyncio.run(run_demo_loop(agent, stream=stream, read=read))
    else:
        run_demo_loop_sync(agent, stream=stream, read=read)
    out = capsys.readouterr().out
    assert out.count("Shipped.") == 1 and out.count("You're welcome.") == 1
    assert ("[tool called]" in out and "[tool output: order A1: shipped]" in out) is stream
    assert [i.get("content") for i in model.calls[2].input if i.get("role") == "user"] == ["where is A1?", "thanks"]
    assert miniagents.upstream.run_demo_loop is run_demo_loop


@pytest.mark.parametrize("flavour", ["async", "sync"])
@pytest.mark.parametrize("stream", [True, False])
def test_run_demo_loop_runs_as_the_shells_runner_runs_so_an_agents_own_hooks_fire(flavour, stream, capsys):
    """Upstream's demo loop runs through its `Runner`; the shell's used the kernel's runner, so the agent's own
    `AgentHooks` never fired there (nor was a model name routed by its prefix)."""
    from miniagents.upstream import AgentHooks
    from miniagents.upstream.repl import run_demo_loop, run_demo_loop_sync

    started = []

    class Hooks(AgentHooks):
        def on_start(self, context, agent):
            started.append(agent.name)

    agent = Agent(name="Shop", model=ScriptedModel([[assistant_message("Hi.")]]), hooks=Hooks())
    if flavour == "async":
        asyncio.run(run_demo_loop(agent, stream=stream, read=scripted_input(["hello"])))
    else:
        run_demo_loop_sync(agent, stream=stream, read=scripted_input(["hello"]))
    assert started == ["Shop"] and "Hi." in capsys.readouterr().out


def test_run_demo_loop_ended_by_end_of_input_ends_its_prompt_line(capsys):
    from miniagents.upstream.repl import run_demo_loop_sync

    agent, model = make_agent([])
    run_demo_loop_sync(agent, read=scripted_input([]))  # Ctrl-D at the first prompt
    assert capsys.readouterr().out == "\n" and not model.calls


def test_enable_verbose_stdout_logging_adds_one_stdout_handler(monkeypatch):
    from miniagents.upstream.logger import logger

    earlier, buffer = io.StringIO(), io.StringIO()
    before, level = list(logger.handlers), logger.level
    try:
        monkeypatch.setattr("sys.stdout", earlier)
        miniagents.upstream.enable_verbose_stdout_logging()
        monkeypatch.setattr("sys.stdout", buffer)  # stdout replaced since (a test runner, a notebook)
        miniagents.upstream.enable_verbose_stdout_logging()
        added = [h for h in logger.handlers if h not in before]
        assert len(added) == 1 and logger.level == logging.DEBUG
        logging.getLogger("miniagents").debug("hello from the kernel")
        assert "hello from the kernel" in buffer.getvalue() and earlier.getvalue() == ""
    finally:
        for handler in logger.handlers[:]:
            if handler not in before:
                logger.removeHandler(handler)
        logger.setLevel(level)
