"""Real MCP servers, offline once installed: a scripted agent against `mcp-server-time` (the package index) and
`@modelcontextprotocol/server-everything` and `server-filesystem` (the npm registry). Each test skips, saying
what to install, when its server is absent.

Where they are looked for: the folder in MINIAGENTS_MCP_SERVERS (default ~/.cache/miniagents/mcp-servers), laid
out as `pip install mcp-server-time` into `FOLDER/venv` and `npm install --prefix FOLDER
@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem` make it; then PATH.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

from miniagents import Agent, Runner
from miniagents.mcp import MCPServerStdio
from miniagents.testing import ScriptedModel, assistant_message, function_call

FOLDER = Path(os.environ.get("MINIAGENTS_MCP_SERVERS") or Path.home() / ".cache" / "miniagents" / "mcp-servers")
INSTALL = (f"pip install mcp-server-time into {FOLDER}/venv, and npm install --prefix {FOLDER} "
           "@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem (or set "
           "MINIAGENTS_MCP_SERVERS to a folder laid out so)")


def find(program):
    """The installed program: in the folder's venv or node_modules, else on PATH; the test skips when absent."""
    for candidate in (FOLDER / "venv" / "bin" / program, FOLDER / "node_modules" / ".bin" / program):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(program)
    if found is None:
        pytest.skip(f"{program} is not installed: {INSTALL}")
    return found


def real_server(program, *args, **options):
    return MCPServerStdio({"command": find(program), "args": list(args)}, client_session_timeout_seconds=60,
                          **options)


def run(server, calls):
    """A scripted agent that makes `calls` (name, arguments) in one turn, then answers; {call id: output}."""
    steps = [[function_call(name, arguments, call_id=f"c{n}") for n, (name, arguments) in enumerate(calls)],
             [assistant_message("done")]]
    model = ScriptedModel(steps)
    result = Runner.run_sync(Agent(name="Real", mcp_servers=[server], model=model), "go")
    assert result.final_output == "done"
    told = {i["call_id"]: i["output"] for i in model.calls[1].input if i.get("type") == "function_call_output"}
    return [told[f"c{n}"] for n in range(len(calls))], {tool.name: tool for tool in model.calls[0].tools}


def test_the_time_server_tells_the_time_in_a_zone():
    (now, converted), tools = run(real_server("mcp-server-time", "--local-timezone", "UTC"), [
        ("get_current_time", {"timezone": "Europe/Paris"}),
        ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})])
    assert json.loads(now)["timezone"] == "Europe/Paris" and "datetime" in json.loads(now)
    assert json.loads(converted)["target"]["datetime"].endswith("21:00:00+09:00")
    assert tools["get_current_time"].strict_json_schema is True


def test_the_everything_server_echoes_and_adds():
    (echoed, summed, image), tools = run(real_server("mcp-server-everything"), [
        ("echo", {"message": "hello from miniagents"}), ("get-sum", {"a": 2, "b": 3}), ("get-tiny-image", {})])
    assert echoed == "Echo: hello from miniagents"
    assert summed == "The sum of 2 and 3 is 5."
    assert "[image: image/png," in image
    assert {"echo", "get-sum", "get-tiny-image"} <= set(tools)


def test_the_everything_server_under_cached_tools_and_a_filter():
    server = real_server("mcp-server-everything", cache_tools_list=True,
                         tool_filter={"allowed_tool_names": ["echo", "get-sum"]})
    with server:
        (summed,), tools = run(server, [("get-sum", {"a": 40, "b": 2})])
        assert sorted(tools) == ["echo", "get-sum"] and summed == "The sum of 40 and 2 is 42."
        assert server.connected  # connected here: the run left it so


def test_the_filesystem_server_reads_inside_its_root_and_refuses_outside(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "notes.txt").write_text("inside the root\n")
    (outside / "secret.txt").write_text("never read\n")
    (inside, listing, refused), tools = run(real_server("mcp-server-filesystem", str(root)), [
        ("read_text_file", {"path": str(root / "notes.txt")}), ("list_directory", {"path": str(root)}),
        ("read_text_file", {"path": str(outside / "secret.txt")})])
    assert inside.strip() == "inside the root" and "notes.txt" in listing
    assert "Access denied" in refused and "never read" not in refused
    assert tools["read_text_file"].strict_json_schema is False  # head and tail are optional: sent as given
