"""MCP tools in runs: a scripted agent (`ScriptedModel`) with the test server's tools, through the kernel's `offer`
and `run` seams. What the model is offered (names, schemas, strictness), what it is told, approvals through
RunState JSON and the exactly-once ledger across processes, parallel calls, who connects and cleans up, and that
a run without MCP servers runs no code of the shell."""
import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from miniagents import Agent, Handoff, Runner, SQLiteSession, UserError, function_tool, handoff
from miniagents.mcp import MCPConnectionError, MCPTimeoutError
from miniagents.mcp.plugin import all_required, function_tool as mcp_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call
from mcp_resume import build_agent
from mcp_support import HERE, ended, gone, make_server  # noqa: F401


def outputs(model, turn=1):
    """{call id: output} the model was sent at its call number `turn` (0-based)."""
    return {i["call_id"]: i["output"] for i in model.calls[turn].input if i.get("type") == "function_call_output"}


def offered(model, turn=0):
    return {tool.name: tool for tool in model.calls[turn].tools}


def run(server_or_servers, steps, **agent_options):
    servers = server_or_servers if isinstance(server_or_servers, list) else [server_or_servers]
    model = ScriptedModel(steps)
    result = Runner.run_sync(Agent(name="A", mcp_servers=servers, model=model, **agent_options), "go")
    return result, model


def test_the_servers_tools_are_offered_beside_the_agents_own_and_calls_reach_the_server():
    @function_tool
    def local(x: int) -> str:
        """A function tool."""
        return f"local {x}"

    result, model = run(make_server(), [
        [function_call("add", {"a": 2, "b": 3}, call_id="c1"), function_call("local", {"x": 1}, call_id="c2"),
         function_call("echo", {"text": "hé"}, call_id="c3")],
        [assistant_message("done")]], tools=[local])
    assert result.final_output == "done"
    assert outputs(model) == {"c1": "5", "c2": "local 1", "c3": "hé"}
    tools = offered(model)
    assert {"local", "add", "echo", "record", "dotted_name"} <= set(tools)
    assert tools["echo"].description == "Say the text back."


def test_schemas_are_strict_when_that_changes_no_call_and_sent_as_given_otherwise():
    result, model = run(make_server(), [[assistant_message("ok")]])
    tools = offered(model)
    assert tools["add"].strict_json_schema is True
    assert tools["add"].params_json_schema["additionalProperties"] is False
    optional = tools["optional"]  # strict mode would make "b" required: the model would have to invent it
    assert optional.strict_json_schema is False and optional.params_json_schema["required"] == ["a"]
    assert tools["media"].params_json_schema == {"type": "object", "properties": {}, "required": [],
                                                 "additionalProperties": False}  # MCP may omit properties
    _, model = run(make_server(), [[assistant_message("ok")]], mcp_config={"convert_schemas_to_strict": False})
    assert offered(model)["add"].strict_json_schema is False


@pytest.mark.parametrize("key", ["default", "enum", "const", "examples"])
def test_a_value_that_looks_like_a_schema_is_data_when_strictness_is_judged(key):
    """A default, an enum member, a const or an example is data: an object among them with "properties" and no
    "required" is not an object schema with optional properties, so the tool stays strict."""
    value = {"properties": {"a": {"type": "string"}}}
    field = {"type": "object", key: [value] if key in ("enum", "examples") else value}
    assert all_required({"type": "object", "properties": {"x": field}, "required": ["x"]})
    assert not all_required({"type": "object", "properties": {"x": value}, "required": ["x"]})


@pytest.mark.parametrize("field", [{"type": "object", "description": "free-form key/value pairs"},
                                   {"type": "array"}, {"description": "anything"}])
def test_a_schema_strict_mode_cannot_say_without_changing_what_it_accepts_is_sent_as_given(field):
    """Strict mode closed an open object (only {} could then be sent), and sent an array without items or a field
    without a type, which strict endpoints refuse."""
    schema = {"type": "object", "properties": {"x": field}, "required": ["x"]}
    tool = mcp_tool(type("Server", (), {"name": "s"})(), {"name": "log", "inputSchema": schema}, None, {})
    assert tool.strict_json_schema is False and tool.params_json_schema == schema


def test_odd_tool_entries_are_left_out_or_sent_as_given_never_a_crash(caplog):
    _, model = run(make_server("odd_tools"), [[assistant_message("ok")]])
    tools = offered(model)
    assert tools["deep"].strict_json_schema is False and tools["odd_required"].strict_json_schema is False
    assert tools["required_not_a_list"].strict_json_schema is False
    assert tools["anyof_root"].strict_json_schema is False  # strict mode refuses a root anyOf: sent as given
    assert tools["defs_not_an_object"].strict_json_schema is False  # nor can it read $defs that are no object
    assert tools["no_schema"].params_json_schema == {"type": "object", "properties": {}, "required": [],
                                                     "additionalProperties": False}
    long_name = [name for name in tools if name.startswith("xxx")]
    assert len(long_name) == 1 and len(long_name[0]) == 64 and long_name[0].startswith("x" * 55)
    assert "not_a_schema" not in tools and "" not in tools
    assert caplog.text.count("left out") == 4  # no name, an empty one, a schema that is no object, 42: once each


def test_optional_parameters_reach_the_server_only_when_the_model_sends_them():
    _, model = run(make_server(), [[function_call("optional", {"a": "x"}, call_id="c1")], [assistant_message("ok")]])
    assert outputs(model) == {"c1": '{"a": "x"}'}


def test_a_name_the_model_apis_refuse_is_offered_under_one_they_take_and_called_under_its_own():
    _, model = run(make_server(), [[function_call("dotted_name", {}, call_id="c1")], [assistant_message("ok")]])
    assert "dotted.name" not in offered(model) and outputs(model) == {"c1": "dotted"}


def test_what_the_model_is_told_for_each_kind_of_result():
    _, model = run(make_server(client_session_timeout_seconds=0.5), [
        [function_call("media", {}, call_id="m"), function_call("fail", {"message": "no such city"}, call_id="f"),
         function_call("structured", {}, call_id="s"), function_call("hang", {}, call_id="h"),
         function_call("add", '{"a": 1', call_id="bad")],
        [assistant_message("ok")]])
    told = outputs(model)
    assert told["m"].splitlines() == [
        "here is everything", "[image: image/png, 100 bytes]", "[audio: audio/wav, 40 bytes]",
        "[resource link: notes.md file:///x/notes.md (text/markdown): the notes]",
        "[resource file:///x/a.txt (text/plain)]", "A!", "[resource file:///x/b.bin: 8 bytes]", "[hologram content]"]
    assert told["f"] == "no such city"  # isError: the server's own words
    assert told["s"] == '{"x": 1}'
    assert "did not answer tools/call within 0.5 seconds" in told["h"] and "stderr" not in told["h"]
    assert "Invalid JSON input for tool add" in told["bad"]


def test_use_structured_content_sends_the_structured_result():
    _, model = run(make_server(use_structured_content=True),
                   [[function_call("add", {"a": 1, "b": 1}, call_id="c1")], [assistant_message("ok")]])
    assert outputs(model) == {"c1": '{"sum": 2}'}


def test_a_server_that_dies_mid_call_tells_the_model_then_stops_the_run_with_a_typed_error():
    with pytest.raises(MCPConnectionError, match="exited with code 7") as caught:
        run(make_server(cache_tools_list=True), [[function_call("crash", {}, call_id="c1")],
                                                 [assistant_message("never")]])
    assert caught.value.run_data is not None  # the partial run: the call and what the model was told
    told = [item.output for item in caught.value.run_data.new_items if hasattr(item, "output")]
    assert told and "exited with code 7" in told[0]


def test_failure_error_function_none_makes_a_failed_call_raise():
    with pytest.raises(MCPTimeoutError):
        run(make_server(client_session_timeout_seconds=0.3, failure_error_function=None),
            [[function_call("hang", {}, call_id="c1")], [assistant_message("never")]])


@pytest.mark.parametrize("where", ["server", "mcp_config"])
def test_a_failure_error_function_makes_what_the_model_is_told_of_a_failed_call(where):
    seen = []

    def told(context, error):
        seen.append(error)
        return f"unavailable ({type(error).__name__})"

    steps = [[function_call("hang", {}, call_id="c1")], [assistant_message("ok")]]
    if where == "server":
        _, model = run(make_server(client_session_timeout_seconds=0.3, failure_error_function=told), steps)
    else:
        _, model = run(make_server(client_session_timeout_seconds=0.3), steps,
                       mcp_config={"failure_error_function": told})
    assert outputs(model) == {"c1": "unavailable (MCPTimeoutError)"} and isinstance(seen[0], MCPTimeoutError)


def test_a_tool_clashing_with_the_agents_own_tool_is_a_user_error_that_says_how_to_fix_it():
    @function_tool
    def add(a: int, b: int) -> int:
        """Mine."""
        return a + b

    with pytest.raises(UserError, match="offers a tool named 'add', as one of the agent's own tools does"):
        run(make_server(name="calc"), [[assistant_message("never")]], tools=[add])


def test_two_servers_with_one_tool_name_are_a_user_error_unless_names_are_prefixed():
    with pytest.raises(UserError, match=r"MCP server 'two' offers a tool named 'add', as MCP server 'one' does"):
        run([make_server(name="one"), make_server(name="two")], [[assistant_message("never")]])
    _, model = run([make_server(name="one"), make_server(name="two")],
                   [[function_call("mcp_two__echo", {"text": "from two"}, call_id="c1")], [assistant_message("ok")]],
                   mcp_config={"include_server_in_tool_names": True})
    assert {"mcp_one__add", "mcp_two__add", "mcp_one__dotted_name"} <= set(offered(model))
    assert outputs(model) == {"c1": "from two"}


def test_a_tool_clashing_with_a_handoff_is_a_user_error():
    other = Agent(name="Helper", model=ScriptedModel([]))
    with pytest.raises(UserError, match="as a handoff does"):
        run(make_server(tool_filter={"allowed_tool_names": ["add"]}),
            [[assistant_message("never")]], handoffs=[handoff(other, tool_name_override="add")])


def test_a_filter_chooses_what_the_model_is_offered():
    _, model = run(make_server(tool_filter={"allowed_tool_names": ["echo"]}), [[assistant_message("ok")]])
    assert list(offered(model)) == ["echo"]


def test_unknown_mcp_config_keys_are_refused():
    with pytest.raises(UserError, match="unknown mcp_config keys"):
        run(make_server(), [[assistant_message("never")]], mcp_config={"strict": True})


def test_a_run_connects_a_server_it_finds_unconnected_and_ends_it_when_it_ends():
    server = make_server()
    pids = []

    @function_tool
    def which() -> str:
        """The server's process id now."""
        pids.append(server.pid)
        return "noted"

    result, _ = run(server, [[function_call("which", {}, call_id="c1")], [assistant_message("ok")]], tools=[which])
    assert result.final_output == "ok" and pids[0] is not None
    assert not server.connected and ended(pids[0])


def test_a_server_of_an_agent_met_only_during_the_run_is_ended_when_the_run_ends():
    """An agent only a hand-built `Handoff` reaches joins the run when it is handed to: the server its first turn
    connects is held by the run and ended with it, and a later run of the agent ends it again."""
    server = make_server()
    pids = []

    def b_answers(call):
        pids.append(server.pid)
        return [assistant_message("B done")]

    b = Agent(name="B", mcp_servers=[server], model=ScriptedModel([b_answers, [assistant_message("again")]]))
    to_b = Handoff(tool_name="to_b", tool_description="Go to B.", input_json_schema={}, agent_name="B",
                   on_invoke_handoff=lambda ctx, arguments: b)
    a = Agent(name="A", handoffs=[to_b], model=ScriptedModel([[function_call("to_b", {}, call_id="h")]]))
    assert Runner.run_sync(a, "go").final_output == "B done"
    assert not server.connected and ended(pids[0])
    assert Runner.run_sync(b, "again").final_output == "again" and not server.connected


def test_a_server_you_connected_stays_connected_across_runs():
    with make_server() as server:
        pid = server.pid
        for _ in range(2):
            run(server, [[function_call("echo", {"text": "x"}, call_id="c1")], [assistant_message("ok")]])
            assert server.connected and server.pid == pid


def test_parallel_tool_calls_to_one_server_overlap_and_each_gets_its_own_answer():
    with make_server() as server:
        calls = [function_call("slow", {"seconds": 0.6}, call_id=f"s{n}") for n in range(6)]
        calls += [function_call("echo", {"text": f"text {n}"}, call_id=f"e{n}") for n in range(6)]
        started = time.monotonic()
        _, model = run(server, [calls, [assistant_message("ok")]])
        elapsed = time.monotonic() - started
    told = outputs(model)
    assert all(told[f"s{n}"] == "slept 0.6" and told[f"e{n}"] == f"text {n}" for n in range(6))
    assert elapsed < 6 * 0.6  # they ran at once, not one after the other


def test_a_cancelled_run_wakes_its_waiting_call_and_ends_the_server_it_started():
    server = make_server(client_session_timeout_seconds=60)
    model = ScriptedModel([[function_call("hang", {}, call_id="c1")], [assistant_message("never")]])
    agent = Agent(name="A", mcp_servers=[server], model=model)
    pids = []

    async def main():
        task = asyncio.ensure_future(Runner.run(agent, "go"))
        while model.remaining_steps == 2 or not server._connection._pending:  # the call waits on the server
            await asyncio.sleep(0.01)
        pids.append(server.pid)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return started

    started = asyncio.run(main())  # returns once the run's worker thread has ended
    assert time.monotonic() - started < 5 and ended(pids[0]) and len(model.calls) == 1


@pytest.mark.parametrize("modes, step", [((), [function_call("hang", {}, call_id="c1")]),
                                         (("slow_list",), [assistant_message("never")])])
def test_a_cancelled_stream_ends_cleanly_whether_a_call_or_the_tools_list_was_waiting(modes, step):
    server = make_server(*modes, client_session_timeout_seconds=60)
    model = ScriptedModel([step, [assistant_message("never")]])
    result = Runner.run_streamed(Agent(name="A", mcp_servers=[server], model=model), "go")
    pids = []

    def cancel_when_waiting():
        while server._connection is None or not server._connection._pending or \
                next(iter(server._connection._pending)) == 1:  # not the handshake: the list, or the call
            time.sleep(0.01)
        pids.append(server.pid)
        result.cancel()

    canceller = threading.Thread(target=cancel_when_waiting, daemon=True)
    canceller.start()
    started = time.monotonic()

    async def drain():
        return [event async for event in result.stream_events()]

    asyncio.run(drain())  # no exception: a cancelled run just ends
    assert time.monotonic() - started < 10 and ended(pids[0]) and not server.connected


@pytest.mark.parametrize("connected", [False, True])
def test_a_request_that_would_begin_after_the_runs_cancel_is_never_sent_so_the_run_ends_at_once(connected):
    """The cancel comes while the instructions are made, before the plugin connects the server (its handshake) or
    lists its tools, which takes it 30 seconds, with no timeout: neither is waited for, and a connection you made
    goes on."""
    server = make_server("slow_list", client_session_timeout_seconds=None)
    runs = []

    def instructions(context, agent):
        runs[0].cancel()
        return "Use the tools."

    agent = Agent(name="A", instructions=instructions, mcp_servers=[server], model=ScriptedModel([]))
    if connected:
        server.connect()
    runs.append(Runner.run_streamed(agent, "go"))
    started = time.monotonic()

    async def drain():
        return [event async for event in runs[0].stream_events()]

    asyncio.run(drain())
    assert time.monotonic() - started < 10 and server.connected is connected
    if connected:
        assert server.call_tool("echo", {"text": "after"}).content[0].text == "after"
        server.cleanup()


def test_an_async_program_with_async_with_and_await_runner_run():
    async def main():
        async with make_server() as server:
            model = ScriptedModel([[function_call("add", {"a": 20, "b": 22}, call_id="c1")],
                                   [assistant_message("42")]])
            result = await Runner.run(Agent(name="A", mcp_servers=[server], model=model), "add")
            return result.final_output, outputs(model)

    assert asyncio.run(main()) == ("42", {"c1": "42"})


def test_an_agent_used_as_a_tool_has_its_own_servers():
    inner = Agent(name="Inner", mcp_servers=[make_server()], model=ScriptedModel([
        [function_call("echo", {"text": "from inside"}, call_id="i1")], [assistant_message("inner says hi")]]))
    outer_model = ScriptedModel([[function_call("ask_inner", {"input": "q"}, call_id="o1")], [assistant_message("ok")]])
    outer = Agent(name="Outer", tools=[inner.as_tool("ask_inner", "Ask.")], model=outer_model)
    assert Runner.run_sync(outer, "go").final_output == "ok"
    assert outputs(outer_model) == {"o1": "inner says hi"}
    assert not inner.mcp_servers[0].connected


def test_require_approval_pauses_only_the_tools_it_names():
    server = make_server(require_approval={"echo": "always", "add": "never"})
    result, model = run(server, [[function_call("add", {"a": 1, "b": 2}, call_id="a"),
                                  function_call("echo", {"text": "?"}, call_id="e")]])
    assert [i.raw_item["call_id"] for i in result.interruptions] == ["e"]
    assert not server.connected  # a paused run holds no process while it waits for a person


@pytest.mark.parametrize("policy, pauses", [("always", True), ("never", False), (True, True),
                                            ({"always": {"tool_names": ["echo"]}}, True),
                                            (lambda ctx, agent, tool: tool.name == "echo", True),
                                            (lambda ctx, agent, tool: False, False)])
def test_each_form_of_require_approval(policy, pauses):
    result, _ = run(make_server(require_approval=policy),
                    [[function_call("echo", {"text": "?"}, call_id="e")], [assistant_message("ok")]])
    assert bool(result.interruptions) == pauses


def resume(state_path, db_path, log_path):
    # Without PYTHONPATH, as tests/mutation_check.py runs the suite: the script finds its own copy's package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(HERE / "mcp_resume.py"), str(state_path), str(db_path),
                           str(log_path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_approved_mcp_call_resumed_in_a_new_process_runs_once_and_a_second_resume_is_refused(tmp_path):
    log, db, state_file = tmp_path / "calls.log", tmp_path / "session.db", tmp_path / "state.json"
    agent = build_agent(ScriptedModel([[function_call("record", {"note": "once"}, call_id="r1")]]), log)
    paused = Runner.run_sync(agent, "record a note", session=SQLiteSession("notes", str(db)))
    [interruption] = paused.interruptions
    assert interruption.raw_item["name"] == "record" and not log.exists()  # paused before the call
    assert not agent.mcp_servers[0].connected
    state = paused.to_state()
    state.approve(interruption)
    state_file.write_text(state.to_string(), encoding="utf-8")

    assert resume(state_file, db, log) == {"final": "recorded it", "connected_after": False}
    assert log.read_text().splitlines() == ["once"]
    again = resume(state_file, db, log)  # the same JSON, resumed again: refused before anything runs
    assert again["error"] == "AlreadyResumedError"
    assert log.read_text().splitlines() == ["once"]


def test_a_run_without_mcp_servers_runs_no_code_of_the_shell_but_the_two_seam_checks():
    import miniagents.mcp  # noqa: F401  (registered: the shell takes part in every run from now on)

    folder = os.path.dirname(miniagents.mcp.__file__)
    entered = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(folder):
            entered.append(frame.f_code.co_name)

    @function_tool
    def tool() -> str:
        """A tool."""
        return "t"

    model = ScriptedModel([[function_call("tool", {}, call_id="c1")], [assistant_message("ok")]])
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        Runner.run_sync(Agent(name="Plain", tools=[tool], model=model), "go")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert set(entered) <= {"run", "offer"} and entered, entered  # each returned at once (no server)
