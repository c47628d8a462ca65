"""Each shell works in a copy vendored under another name, `myproj._vendor.miniagents`, with a decoy top-level
`miniagents` on the path that fails when imported: the package never names itself, so a shell finds its own
kernel, never another copy. (MCP's and the upstream runner's own renamed-copy tests are in tests/mcp and
tests/upstream; the vendor command's check runs the kernel's scenarios under the new name.)"""
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = '''
import os, sqlite3, subprocess, sys
sys.path.insert(0, ".")
import myproj._vendor.miniagents as pkg
from myproj._vendor.miniagents import Agent, ModelSettings, RunConfig, Runner, function_tool
from myproj._vendor.miniagents.testing import ScriptedModel, assistant_message, function_call

@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def model():
    return ScriptedModel([[function_call("add", {"a": 2, "b": 3}, call_id="c1")], [assistant_message("5")]])

def agent(**kw):
    return Agent(name="Adder", tools=[add], model=kw.pop("model", None) or model(), **kw)

# tracing: spans to a file, read back by the shell's own command under the new name
Runner.run_sync(agent(), "2 + 3?", run_config=RunConfig(trace_path="trace.jsonl"))
tree = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); "
                                     "import runpy; runpy.run_module('myproj._vendor.miniagents.tracing', "
                                     "run_name='__main__')", "trace.jsonl"], capture_output=True, text=True)
print("tracing", tree.returncode, "agent Adder" in tree.stdout and "tools: add" in tree.stdout)

# retries: the setting resolves to this copy's shell
print("retry", type(pkg.ModelRetrySettings(max_retries=1)).__module__)
print("retried run", Runner.run_sync(agent(model_settings=ModelSettings(retry=pkg.ModelRetrySettings(
    max_retries=1))), "2 + 3?").final_output)

# recording and replay
from myproj._vendor.miniagents.recording import Recorder, Replay
with Recorder("run.jsonl") as recorder:
    Runner.run_sync(agent(model=recorder.wrap(model())), "2 + 3?")
print("replay", Runner.run_sync(agent(model=Replay("run.jsonl")), "2 + 3?").final_output)

# the Workspace
os.mkdir("docs")
with open("docs/a.txt", "w") as f:
    f.write("needle\\n")
tools = pkg.Workspace("docs").tools()
found = Runner.run_sync(Agent(name="R", tools=tools, model=ScriptedModel([
    [function_call("read_file", {"path": "a.txt"}, call_id="r1")], [assistant_message("read")]])), "read")
print("workspace", "needle" in found.new_items[1].output)

# DB-API sessions over sqlite3
session = pkg.DBAPISession("s1", lambda: sqlite3.connect("db.sqlite"), dialect="sqlite")
Runner.run_sync(agent(), "2 + 3?", session=session)
print("dbapi", len(session.get_items()))

# a kernel name mistyped: this copy's own explanation, not the decoy's
try:
    from myproj._vendor.miniagents import Agnet
except ImportError as error:
    print("mistyped", type(error).__name__)
# what the shells' errors tell to run names this copy
from myproj._vendor.miniagents import seams
print("commands", sorted(text[text.index("python -m"):-2] for text in seams.SHELLS.values() if "python -m" in text))
print("loaded", sorted(m for m in sys.modules if m.split(".")[0] == "miniagents"))
'''


def test_every_shell_works_in_a_copy_under_another_name_and_never_imports_the_decoy(tmp_path):
    shutil.copytree(ROOT / "miniagents", tmp_path / "myproj" / "_vendor" / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "myproj" / "__init__.py").write_text("")
    (tmp_path / "myproj" / "_vendor" / "__init__.py").write_text("")
    (tmp_path / "miniagents").mkdir()
    (tmp_path / "miniagents" / "__init__.py").write_text("raise ImportError('the decoy miniagents was imported')\n")
    done = subprocess.run([sys.executable, "-I", "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tracing 0 True", "retry myproj._vendor.miniagents.retry", "retried run 5", "replay 5", "workspace True",
        "dbapi 4", "mistyped ImportError",
        "commands ['python -m myproj._vendor.miniagents.tracing', 'python -m myproj._vendor.miniagents.vendor']",
        "loaded []"]
