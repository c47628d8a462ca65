"""docs/mcp.md stays true: its runnable example prints what its comments say, the listing command it shows works;
`python -m miniagents.mcp` lists, fails and refuses as it says; the HTTP transports raise their explained error;
the shell never names its own package (it may be vendored under another name)."""
import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from miniagents.mcp import MCPError, MCPServerSse, MCPServerStreamableHttp, MCPTransportNotProvidedError
from mcp_support import TEST_SERVER, gone

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")


def test_the_runnable_example_prints_what_its_comments_say(monkeypatch):
    section = DOC.split("## An example you can run", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    assert "tests/mcp/mcp_test_server.py" in code
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    namespace = {"__name__": "docs_mcp"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/mcp.md", "exec"), namespace)
    expected = [m.strip() for m in re.findall(r"print\(.*\)\s+#\s*(.*)", code)]
    assert out.getvalue().splitlines() == expected and len(expected) == 5
    assert not namespace["server"].connected


def cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "miniagents.mcp", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_the_listing_command_in_the_doc_lists_the_test_servers_tools():
    assert "python -m miniagents.mcp python tests/mcp/mcp_test_server.py" in DOC
    done = cli(sys.executable, "tests/mcp/mcp_test_server.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("test-server 1 (MCP 2025-11-25): 21 tools")
    assert "add (strict schema)" in lines and "optional (schema sent as given)" in lines
    assert lines[lines.index("add (strict schema)") + 1] == "    Add two integers."  # its description
    assert "dotted.name (strict schema, offered as 'dotted_name')" in lines
    assert '  input: {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}' in lines


def test_the_listing_command_as_json():
    done = cli("--json", sys.executable, TEST_SERVER)
    tools = json.loads(done.stdout)
    assert done.returncode == 0 and tools[0] == {"name": "add", "title": None, "description": "Add two integers.",
                                                 "inputSchema": tools[0]["inputSchema"]}


def test_the_listing_command_lists_odd_tools_and_escapes_a_lone_surrogate_in_a_name():
    """A name JSON may carry but UTF-8 cannot (a lone surrogate) is printed as its escape, never a crash; in --json
    the escape reads back as the same name."""
    done = cli(sys.executable, TEST_SERVER, "--mode", "odd_tools")
    assert done.returncode == 0, done.stderr
    assert "lone\\ud800surrogate (strict schema, offered as 'lone_surrogate')" in done.stdout.splitlines()
    assert "required_not_a_list (schema sent as given)" in done.stdout.splitlines()
    done = cli("--json", sys.executable, TEST_SERVER, "--mode", "odd_tools")
    assert done.returncode == 0 and "lone\ud800surrogate" in [tool["name"] for tool in json.loads(done.stdout)]


ESCAPES = "import json, sys\nsys.stderr.write('\\x1b[2J died\\n') if sys.argv[1:] else None\nfor line in sys.stdin:\n" \
          "    r = json.loads(line)\n    if sys.argv[1:]: sys.exit(1)\n    if 'id' not in r: continue\n" \
          "    result = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {'name': " \
          "'\\x1b[31mEVIL', 'version': '\\x9b1A'}} if r['method'] == 'initialize' else {'tools': [{'name': " \
          "'ok\\x1b]52;c;eA==\\x07', 'description': '\\x1b[1A\\u202efake line', 'inputSchema': {}}]}\n" \
          "    print(json.dumps({'jsonrpc': '2.0', 'id': r['id'], 'result': result}), flush=True)"


def test_the_listing_command_prints_a_servers_control_characters_as_escapes():
    """Names, versions, descriptions and the server's last words reach a terminal with no escape sequence."""
    done = cli(sys.executable, "-c", ESCAPES)
    assert done.returncode == 0 and done.stdout.startswith("\\u001b[31mEVIL \\u009b1A (MCP 2025-06-18): 1 tool")
    assert "ok\\u001b]52;c;eA==\\u0007 (strict schema, offered as 'ok__52_c_eA___')" in done.stdout.splitlines()
    assert "    \\u001b[1A\\u202efake line" in done.stdout.splitlines()
    done = cli("--json", sys.executable, "-c", ESCAPES)
    assert "\x1b" not in done.stdout and json.loads(done.stdout)[0]["description"] == "\x1b[1A\u202efake line"
    done = cli(sys.executable, "-c", ESCAPES, "die")
    assert done.returncode == 1 and "\\u001b[2J died" in done.stderr and "\x1b" not in done.stderr


def test_the_listing_command_prints_what_the_terminals_encoding_lacks_as_escapes():
    """A description in a terminal's encoding that lacks é (ASCII) is printed with its escape (it was a traceback
    and exit status 1, which says the server failed)."""
    server = ESCAPES.replace("\\x1b[1A\\u202efake line", "caf\\u00e9").replace("\\x1b[31mEVIL", "srv")
    done = subprocess.run([sys.executable, "-m", "miniagents.mcp", sys.executable, "-c", server], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert done.returncode == 0 and "    caf\\xe9" in done.stdout.splitlines(), done.stderr


FAKE_LINES = "import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n    if 'id' not in r: continue\n" \
             "    result = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {'name': " \
             "'fs\\nok', 'version': '1 (MCP 2025-06-18): 0 tools\\n\\nAll checks passed'}} if r['method'] == " \
             "'initialize' else {'tools': [{'name': 'read (strict schema)\\n  input: {}\\n\\nnote', 'description': " \
             "'Reads.\\ninput: {}\\n\\nwrite (strict schema)', 'inputSchema': {}}]}\n" \
             "    print(json.dumps({'jsonrpc': '2.0', 'id': r['id'], 'result': result}), flush=True)"


def test_no_name_version_or_description_a_server_sends_passes_for_a_line_of_the_listing():
    """A newline in a name or a version is shown as its escape; a description's lines are indented deeper than the
    input's, so none is taken for a tool, its input or the listing's first line."""
    done = cli(sys.executable, "-c", FAKE_LINES)
    assert done.returncode == 0 and done.stdout.splitlines() == [
        "fs\\nok 1 (MCP 2025-06-18): 0 tools\\n\\nAll checks passed (MCP 2025-06-18): 1 tool", "",
        "read (strict schema)\\n  input: {}\\n\\nnote (strict schema, offered as "
        "'read__strict_schema____input______note')", "    Reads.", "    input: {}", "    ", "    write (strict schema)",
        "  input: {}"]


def test_the_listing_command_called_from_python_reads_the_arguments_it_is_given(monkeypatch, capsys):
    """`main(argv)` lists what `argv` names, whatever the process's own command line is."""
    from miniagents.mcp.__main__ import main

    monkeypatch.setattr(sys, "argv", ["prog", "no-such-server-program"])
    assert main(["--json", sys.executable, TEST_SERVER]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "add"


def test_the_listing_command_passes_arguments_and_environment_to_the_server():
    done = cli("--env", "SEEN=yes", sys.executable, TEST_SERVER, "--mode", "print_env", "--mode", "exit_at_start")
    assert done.returncode == 1 and done.stdout == ""
    assert "exited with code 2" in done.stderr and '"SEEN": "yes"' in done.stderr


def test_the_listing_command_says_what_failed_and_refuses_a_bad_env():
    done = cli("no-such-server-program")
    assert done.returncode == 1 and "could not start 'no-such-server-program'" in done.stderr
    done = cli("--env", "JUSTANAME", sys.executable)
    assert done.returncode == 2 and "--env takes NAME=VALUE" in done.stderr


@pytest.mark.parametrize("transport", [MCPServerStreamableHttp, MCPServerSse])
def test_the_http_transports_raise_an_explained_error(transport):
    with pytest.raises(MCPTransportNotProvidedError) as caught:
        transport({"url": "http://localhost:8000/mcp"}, name="remote")
    assert isinstance(caught.value, MCPError)
    assert "speaks stdio only (MCPServerStdio" in str(caught.value) and "HostedMCPTool" in str(caught.value)


def test_the_shell_imports_only_relatively_and_never_names_its_package():
    folder = ROOT / "miniagents" / "mcp"
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.ImportFrom):
                assert node.level > 0 or not (node.module or "").startswith("miniagents"), (path.name, node.lineno)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("miniagents") for a in node.names), (path.name, node.lineno)
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert "miniagents." not in node.value, (path.name, node.lineno, node.value)


def test_a_vendored_copy_under_another_name_runs_an_mcp_tool(tmp_path):
    """The package copied as `myproj._vendor.miniagents`: the shell finds its kernel by relative imports."""
    vendor = tmp_path / "myproj" / "_vendor"
    import shutil

    shutil.copytree(ROOT / "miniagents", vendor / "miniagents", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "myproj" / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    script = (
        "import sys\n"
        "sys.path.insert(0, '.')\n"
        "from myproj._vendor.miniagents import Agent, Runner\n"
        "from myproj._vendor.miniagents.mcp import MCPServerStdio\n"
        "from myproj._vendor.miniagents.testing import ScriptedModel, assistant_message, function_call\n"
        f"server = MCPServerStdio({{'command': sys.executable, 'args': [{TEST_SERVER!r}]}})\n"
        "model = ScriptedModel([[function_call('add', {'a': 1, 'b': 2}, call_id='c')], [assistant_message('ok')]])\n"
        "Runner.run_sync(Agent(name='V', mcp_servers=[server], model=model), 'go')\n"
        "print([i['output'] for i in model.calls[1].input if i.get('type') == 'function_call_output'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('miniagents')))\n")
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['3']", "[]"]


def sleepers():
    """Processes whose command line is the test server's spawned child (`spawn_child`)."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and b"time.sleep(600)" in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.add(int(entry))
        except OSError:
            continue
    return found


def test_a_listing_leaves_no_process():
    before = sleepers()
    done = cli(sys.executable, TEST_SERVER, "--mode", "spawn_child")
    assert done.returncode == 0, done.stderr
    assert all(gone(pid) for pid in sleepers() - before)
    assert sleepers() - before == set()
