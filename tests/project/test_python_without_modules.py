"""The shells and the HTTP adapters on a Python built without a standard-library module (tests/state/ has the
sessions': `_sqlite3`, `zlib`, `asyncio`).

Each test runs a fresh interpreter in which a finder first on `sys.meta_path` refuses the modules, as a Python
without them does (`ModuleNotFoundError` naming one), and reports what miniagents did as JSON.

- Without `zlib`, the MCP shell imports: it cut long tool names with `zlib.crc32` and now uses `binascii.crc32`,
  the same number; so `hasattr(miniagents, "MCPServerStdio")` and `from miniagents import *` work.
- Without `select` or `_posixsubprocess` (the MCP shell and the Workspace start processes), a shell that cannot be
  imported is a missing feature, as a shell left out is: `hasattr` answers False, `from miniagents import *`
  skips its names, and `from miniagents import MCPServerStdio` raises the `MissingFeatureError` naming the shell and
  the module (a bare ModuleNotFoundError escaped all three).
- Without `unicodedata` (so without the idna codec, which every host name is looked up by), a model over HTTP
  raises the `MissingFeatureError` naming it, plain and streamed (it was a bare LookupError, "unknown encoding:
  idna", from deep in the socket module).
"""
import binascii
import json
import subprocess
import sys
import textwrap

from support import ROOT

PRELUDE = '''
import json, sys
BLOCKED = set(sys.argv[1].split(","))


class Blocker:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker)
sys.path.insert(0, sys.argv[2])
'''


def without(modules, code):
    """Run `code` in a fresh Python that lacks `modules`; its last line of output, as JSON."""
    done = subprocess.run([sys.executable, "-I", "-c", PRELUDE + textwrap.dedent(code), ",".join(modules), ROOT],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_zlib_the_mcp_shell_imports_and_cuts_long_names_with_the_same_checksum():
    long_name = "x" * 80
    report = without(["zlib"], f'''
        import miniagents
        star = {{}}
        exec("from miniagents import *", star)
        from miniagents.mcp.plugin import public_name
        print(json.dumps([hasattr(miniagents, "MCPServerStdio"), "MCPServerStdio" in star,
                          public_name({long_name!r}, None, False), "zlib" in sys.modules]))
    ''')
    assert report == [True, True, "x" * 55 + f"_{binascii.crc32(long_name.encode()):08x}", False]


def test_a_shell_this_python_cannot_import_is_a_missing_feature_naming_the_shell_and_the_module():
    report = without(["select", "_posixsubprocess"], '''
        import miniagents
        from miniagents import MissingFeatureError

        star = {}
        exec("from miniagents import *", star)
        report = {"hasattr": [hasattr(miniagents, n) for n in ("MCPServerStdio", "Workspace", "trace")],
                  "star": ["MCPServerStdio" in star, "Workspace" in star, "Agent" in star]}
        try:
            miniagents.MCPServerStdio
        except AttributeError as error:
            report["cause"] = [type(error.__cause__).__name__, str(error) == str(error.__cause__)]
        for name in ("MCPServerStdio", "Workspace"):
            try:
                exec(f"from miniagents import {name}")
            except MissingFeatureError as error:
                report[name] = [error.feature, error.name, str(error)]
        print(json.dumps(report))
    ''')
    assert report["hasattr"] == [False, False, True]
    assert report["star"] == [False, False, True]
    assert report["cause"] == ["MissingFeatureError", True]
    feature, name, text = report["MCPServerStdio"]
    assert [feature, name] == ["MCPServerStdio (the shell miniagents.mcp)", "select"]
    assert "needs the standard-library module 'select', which this Python" in text and "was built without" in text
    assert report["Workspace"][:2] == ["Workspace (the shell miniagents.capabilities)", "_posixsubprocess"]


def test_without_unicodedata_a_model_over_http_is_a_missing_feature():
    report = without(["unicodedata"], '''
        import asyncio
        from miniagents import Agent, MissingFeatureError, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner

        report = []
        for make in (OpenAIChatCompletionsModel, OpenAIResponsesModel):
            agent = Agent(name="a", model=make(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"))
            try:
                Runner.run_sync(agent, "hi")
            except MissingFeatureError as error:
                report.append([error.name, str(error).startswith("a connection to a model's server")])
            streamed = Runner.run_streamed(agent, "hi")

            async def drain():
                async for _ in streamed.stream_events():
                    pass
            try:
                asyncio.run(drain())
            except MissingFeatureError as error:
                report.append(error.name)
        print(json.dumps(report))
    ''')
    assert report == [["unicodedata", True], "unicodedata"] * 2
