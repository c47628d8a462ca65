"""The MCP protocol as the stdio client speaks it, against the small test server (tests/mcp/mcp_test_server.py):
the handshake and version negotiation, tools/list pages, tools/call results, pings and requests from the server,
notifications, the tools cache and filters, retries. Each test talks to a real child process."""
import asyncio
import dataclasses
import json
import logging
import sys

import pytest

from miniagents import UserError
from miniagents.mcp import PROTOCOL_VERSIONS, MCPProtocolError, MCPRequestError, MCPServerStdio, MCPTimeoutError, \
    MCPVersionError, create_static_tool_filter
from mcp_support import make_server


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_the_handshake_accepts_every_version_it_speaks(version):
    with make_server(version=version) as server:
        assert server.server_initialize_result["protocolVersion"] == version
        assert server.call_tool("echo", {"text": "hi"}).content[0].text == "hi"


def test_the_client_asks_for_its_newest_version_and_speaks_at_least_2025_06_18():
    assert PROTOCOL_VERSIONS[0] == "2025-11-25" and "2025-06-18" in PROTOCOL_VERSIONS
    with make_server() as server:  # the test server answers with the version it was asked for
        assert server.server_initialize_result["protocolVersion"] == PROTOCOL_VERSIONS[0]
        assert server.server_initialize_result["serverInfo"]["name"] == "test-server"


def test_a_version_the_client_cannot_speak_is_refused_naming_both_and_the_server_is_ended():
    server = make_server(version="1999-01-01")
    with pytest.raises(MCPVersionError) as caught:
        server.connect()
    error = caught.value
    assert "'1999-01-01'" in str(error) and "2025-06-18" in str(error) and error.server == server.name
    assert error.server_version == "1999-01-01" and error.client_versions == PROTOCOL_VERSIONS
    assert not server.connected and server.pid is None


def test_an_initialize_result_without_a_version_is_a_protocol_error(tmp_path):
    script = tmp_path / "noversion.py"
    script.write_text("import sys, json\n"
                      "for line in sys.stdin:\n"
                      "    m = json.loads(line)\n"
                      "    if m.get('method') == 'initialize':\n"
                      "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'capabilities': {}}}),"
                      " flush=True)\n")
    with pytest.raises(MCPProtocolError, match="without a protocolVersion"):
        MCPServerStdio({"command": sys.executable, "args": [str(script)]}).connect()


def test_the_initialized_notification_follows_the_handshake(tmp_path):
    log = tmp_path / "seen.txt"
    script = tmp_path / "strict.py"
    script.write_text("import sys, json\n"
                      f"log = open({str(log)!r}, 'a')\n"
                      "for line in sys.stdin:\n"
                      "    m = json.loads(line)\n"
                      "    log.write(m['method'] + '\\n'); log.flush()\n"
                      "    if m['method'] == 'initialize':\n"
                      "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': "
                      "'2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {'name': 's', 'version': '1'}}}),"
                      " flush=True)\n"
                      "    elif m['method'] == 'tools/list':\n"
                      "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'tools': []}}), flush=True)\n")
    with MCPServerStdio({"command": sys.executable, "args": [str(script)]}) as server:
        assert server.list_tools() == []
    assert log.read_text().split() == ["initialize", "notifications/initialized", "tools/list"]


def test_tools_are_listed_page_after_page():
    with make_server(page_size=3) as paged, make_server() as whole:
        assert [t.name for t in paged.list_tools()] == [t.name for t in whole.list_tools()]
        assert len(whole.list_tools()) > 3 * 5


def test_a_listed_tool_cannot_be_changed_by_its_reader_since_the_cached_list_is_shared():
    with make_server(cache_tools_list=True) as server:
        tool = server.list_tools()[0]
        with pytest.raises(dataclasses.FrozenInstanceError):
            tool.name = "renamed"
        assert server.list_tools()[0] is tool


def test_a_cursor_that_comes_back_is_a_protocol_error_not_an_endless_loop():
    with make_server("repeat_cursor") as server:
        with pytest.raises(MCPProtocolError, match="again: its pages would never end"):
            server.list_tools()


def test_a_listing_over_its_size_cap_in_all_its_pages_is_a_protocol_error(monkeypatch):
    from miniagents.mcp import server as server_module

    with make_server(page_size=3) as paged, make_server() as whole:
        sizes: list = []
        whole._connection.request("tools/list", None, 10, sizes)  # all the tools in one page: the cap
        monkeypatch.setattr(server_module, "MAX_LISTING_BYTES", sizes[0])
        assert len(whole.list_tools()) > 3 * 5  # the same tools in pages of 3 take more bytes in all
        with pytest.raises(MCPProtocolError, match="answered tools/list with more than .* bytes in all"):
            paged.list_tools()


def test_entries_left_out_of_a_listing_are_warned_about_a_bounded_number_of_times(caplog):
    code = "import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n    if 'id' not in r: continue\n" \
           "    result = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {}} if " \
           "r['method'] == 'initialize' else {'tools': [{'nameless': k} for k in range(1000)]}\n" \
           "    print(json.dumps({'jsonrpc': '2.0', 'id': r['id'], 'result': result}), flush=True)"
    with MCPServerStdio({"command": sys.executable, "args": ["-c", code]}) as server, caplog.at_level("WARNING"):
        assert server.list_tools() == [] and server.list_tools() == []
    warned = [r for r in caplog.records if "lists a tool without a name" in r.getMessage()]
    assert 10 <= len(warned) <= 100 and len(server._warned) == len(warned)


def test_a_server_without_the_tools_capability_is_not_asked_for_tools():
    with make_server("no_tools_capability") as server:
        assert server.list_tools() == []


def test_a_ping_from_the_server_is_answered_even_during_the_handshake():
    with make_server("ping_first") as server:
        assert server.server_initialize_result["capabilities"]["experimental"] == {"ping": {}}


def test_requests_the_client_does_not_offer_are_answered_with_an_error_not_left_hanging():
    with make_server() as server:
        answers = json.loads(server.call_tool("ask_client").content[0].text)
    for method in ("sampling/createMessage", "elicitation/create", "roots/list"):
        assert answers[method]["code"] == -32601 and method in answers[method]["message"]
    assert answers["ping"] == {}


def test_log_messages_reach_the_miniagents_logger_at_debug_level(caplog):
    with caplog.at_level(logging.DEBUG, logger="miniagents"):
        with make_server() as server:
            assert server.call_tool("log").content[0].text == "logged"
    logged = [r for r in caplog.records if "logged" in r.getMessage()]
    assert [r.levelno for r in logged] == [logging.DEBUG] * 3
    assert "a error message" in logged[2].getMessage() and server.name in logged[2].getMessage()


def test_list_changed_drops_the_cached_list():
    with make_server(cache_tools_list=True) as server:
        first = [t.name for t in server.list_tools()]
        assert server.cached_tools is not None and "extra" not in first
        server.call_tool("change_tools")  # the notification comes before the answer
        assert server.cached_tools is None
        assert "extra" in [t.name for t in server.list_tools()]


def counting(server):
    """Wrap the server's connection so each request's method is recorded in the returned list."""
    asked, real = [], server._connection.request

    def request(method, params=None, timeout=None, sizes=None):
        asked.append(method)
        return real(method, params, timeout, sizes)

    server._connection.request = request
    return asked


def test_the_cache_is_used_until_invalidated():
    with make_server(cache_tools_list=True) as server:
        asked = counting(server)
        listed = [t.name for t in server.list_tools()]
        assert [t.name for t in server.list_tools()] == listed and asked == ["tools/list"]
        server.invalidate_tools_cache()
        assert [t.name for t in server.list_tools()] == listed and asked == ["tools/list"] * 2


def test_without_the_cache_every_list_asks_the_server():
    with make_server() as server:
        asked = counting(server)
        server.list_tools()
        server.list_tools()
        assert server.cached_tools is None and asked == ["tools/list"] * 2


def test_a_static_filter_allows_and_blocks_by_name():
    allowed = create_static_tool_filter(allowed_tool_names=["add", "echo", "fail"], blocked_tool_names=["fail"])
    with make_server(tool_filter=allowed) as server:
        assert [t.name for t in server.list_tools()] == ["add", "echo"]
    assert create_static_tool_filter() is None


def test_a_callable_filter_sees_the_context_and_a_failing_one_leaves_the_tool_out(caplog):
    seen = []

    def only_a(context, tool):
        seen.append((context.run_context, context.agent, context.server_name))
        if tool.name == "echo":
            raise RuntimeError("broken filter")
        return tool.name.startswith("a")

    with make_server(tool_filter=only_a, name="srv") as server:
        assert [t.name for t in server.list_tools("ctx", "agent")] == ["add", "ask_client"]
        assert seen[0] == ("ctx", "agent", "srv")
        with pytest.raises(UserError, match="run_context and agent are required"):
            server.list_tools()
    assert "raised for tool 'echo'; the tool is left out" in caplog.text


def test_an_async_filter_is_awaited():
    async def only_echo(context, tool):
        return tool.name == "echo"

    with make_server(tool_filter=only_echo) as server:
        assert [t.name for t in server.list_tools("ctx", "agent")] == ["echo"]


def test_call_results_keep_text_structured_content_and_is_error():
    with make_server() as server:
        added = server.call_tool("add", {"a": 2, "b": 40})
        assert added.content == [{"type": "text", "text": "42"}] and added.structuredContent == {"sum": 42}
        assert added.isError is False and added.content[0].type == "text"
        failed = server.call_tool("fail", {"message": "no such city"})
        assert failed.isError is True and failed.content[0].text == "no such city"


def test_a_content_items_keys_named_as_python_methods_are_data_never_methods():
    import copy

    with make_server() as server:
        result = server.call_tool("media", {})
    item = result.content[0]
    assert item.text == "here is everything" and item["__deepcopy__"] == "no method"
    assert not hasattr(item, "__html__") and copy.deepcopy(result).content == result.content


def test_an_error_answer_is_an_mcp_request_error_with_its_code():
    with make_server() as server:
        with pytest.raises(MCPRequestError) as caught:
            server.call_tool("no_such_tool")
    assert caught.value.code == -32602 and "Unknown tool: no_such_tool" in str(caught.value)


def test_an_error_code_that_is_no_int_is_shown_cut_as_an_id_is():
    code = "import json; input(); print(json.dumps({'jsonrpc': '2.0', 'id': 1, 'error': {'code': 'C\\n' * 100000, " \
           "'message': 'bad'}}), flush=True); input()"
    server = MCPServerStdio({"command": sys.executable, "args": ["-c", code]}, shutdown_grace_seconds=0.5)
    with pytest.raises(MCPRequestError) as caught:
        server.connect()
    assert caught.value.code == "C\n" * 100000  # kept whole, as sent
    assert "\n" not in caught.value.summary and len(caught.value.summary) < 200 and "more characters" in \
        caught.value.summary


@pytest.mark.parametrize("failure", [MCPTimeoutError, MCPRequestError])
def test_retries_send_a_failed_request_again_with_backoff_but_never_a_tool_call(tmp_path, failure):
    """A request that timed out or got an error answer is sent again, but a tool call: it may have run (a handler
    that fails after its side effect is answered with an error), and a side effect runs once."""
    with make_server(max_retry_attempts=2, retry_backoff_seconds_base=0.01) as server:
        calls = []
        real = server._connection.request

        def flaky(method, params=None, timeout=None, *rest):
            calls.append(method)
            if len(calls) < 3:
                raise server._connection.error(failure, "failed (simulated)")
            return real(method, params, timeout, *rest)

        server._connection.request = flaky
        assert [t.name for t in server.list_tools()] and calls == ["tools/list"] * 3
        calls.clear()
        with pytest.raises(failure):
            server.call_tool("echo", {"text": "once"})
        assert calls == ["tools/call"]
        server.max_retry_attempts = 1
        calls.clear()
        with pytest.raises(failure):
            server.list_tools()
        assert calls == ["tools/list"] * 2


def test_a_retry_whose_backoff_would_begin_after_the_runs_cancel_does_not_wait_it():
    import contextvars
    import time

    from miniagents.caller import CANCEL_CALLBACKS, Aborts
    from miniagents.mcp import MCPCancelledError

    server, aborts = make_server(max_retry_attempts=1, retry_backoff_seconds_base=30), Aborts()

    def cancelled_meanwhile():  # the run's cancel came (and called the aborts there were) as the request failed
        aborts.cancelled = True
        raise MCPTimeoutError("did not answer (simulated)", server.name)

    def retried():
        CANCEL_CALLBACKS.set(aborts)
        started = time.monotonic()
        with pytest.raises(MCPCancelledError):
            server._retrying(cancelled_meanwhile)
        return time.monotonic() - started

    assert contextvars.copy_context().run(retried) < 5


def test_copying_an_agent_keeps_its_server():
    import copy

    from miniagents import Agent

    server = make_server()
    agent = Agent(name="A", mcp_servers=[server])
    assert copy.deepcopy(agent).mcp_servers[0] is server and agent.clone(name="B").mcp_servers[0] is server


def test_a_request_before_connect_is_a_user_error_that_says_what_to_do():
    server = make_server()
    with pytest.raises(UserError, match="not connected: call connect"):
        server.list_tools()


def test_connect_twice_keeps_one_process_and_cleanup_then_connect_starts_a_new_one():
    server = make_server()
    server.connect()
    first = server.pid
    server.connect()
    assert server.pid == first
    server.cleanup()
    server.cleanup()  # idempotent
    server.connect()
    assert server.pid not in (None, first)
    server.cleanup()


def test_the_async_api_upstream_programs_use():
    async def main():
        server = make_server()
        async with server:
            tools = await server.list_tools()
            result = await server.call_tool("echo", {"text": "awaited"})
        await server.connect()
        await server.cleanup()
        return [t.name for t in tools], result.content[0].text

    names, text = asyncio.run(main())
    assert "echo" in names and text == "awaited"


@pytest.mark.parametrize("options, match", [
    ({"params": {"args": []}}, "command"),
    ({"params": {"command": "x", "args": "not a list"}}, "args"),
    ({"params": {"command": "x", "env": {"KEY": 1}}}, "env"),
    ({"params": {"command": "x", "encoding": "latin-1"}}, "UTF-8"),
    ({"params": {"command": "x", "shell": True}}, "unknown keys"),
    ({"params": {"command": "x", 1: 2, "shell": True}}, r"unknown keys \['shell', 1\]"),
    ({"params": {"command": "x", "cwd": 123}}, r"params\['cwd'\] must be the server's folder \(a path\), got int"),
    ({"params": {"command": "x", "encoding": None}}, r"leave params\['encoding'\] out"),
    ({"params": {"command": "x"}, "client_session_timeout_seconds": -1}, "client_session_timeout_seconds"),
    ({"params": {"command": "x"}, "max_retry_attempts": -1}, "max_retry_attempts"),
    ({"params": {"command": "x"}, "require_approval": "sometimes"}, "require_approval"),
    ({"params": {"command": "x"}, "require_approval": {"always": {"tool_names": ["a"]},
                                                       "never": {"tool_names": ["a"]}}}, "both"),
    ({"params": {"command": "x"}, "tool_filter": ["add"]}, "tool_filter"),
    ({"params": {"command": "x"}, "message_handler": print}, "not provided"),
    ({"params": {"command": "x"}, "shutdown_grace_seconds": float("nan")}, "shutdown_grace_seconds"),
    ({"params": {"command": "x"}, "retry_backoff_seconds_base": -1}, "retry_backoff_seconds_base"),
])
def test_configuration_mistakes_are_user_errors_when_the_server_is_made(options, match):
    with pytest.raises(UserError, match=match):
        MCPServerStdio(**options)


def test_an_env_value_is_never_in_a_configuration_error():
    with pytest.raises(UserError) as caught:
        MCPServerStdio({"command": "x", "env": {"TOKEN": "sk-very-secret", "BAD": None}})
    assert "sk-very-secret" not in str(caught.value)
