"""The kernel alone: a copy of `miniagents/` with every shell folder deleted still runs the loop (issue 19).

The kernel is the modules directly in miniagents/ and in miniagents/models/; the shells (tracing/, retry/,
capabilities/, upstream/, recording/, ...) are optional folders a vendorer may leave out. The test copies the
package, deletes every shell folder, and runs, under `python -S -I`: a tool run, a handoff, an agent as a tool, a
blocking input guardrail, an approval paused, written as JSON and resumed in a new process, a SQLiteSession
conversation, a streamed run and a Chat Completions call against the project's test server. A deleted shell's
names raise an ImportError naming the feature and its folder, and `hasattr` answers False for them.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from miniagents import seams
from openai_server import OpenAITestServer, chat_completion
from support import ROOT

# The offline model is a shell (testing/): these scripts play answers back with a model of their own.
OFFLINE = r'''
import json

def function_call(name, arguments, call_id):
    return {"type": "function_call", "id": call_id, "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}

def assistant_message(text):
    return {"type": "message", "id": "m", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}

class ScriptedModel:
    def __init__(self, answers):
        self.answers, self.calls = list(answers), []

    def get_response(self, instructions, input, *args, **kwargs):
        from miniagents import ModelResponse, Usage  # after the script has put the copy on sys.path
        self.calls.append(list(input))
        return ModelResponse(output=self.answers.pop(0), usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args, **kwargs):
        output = self.get_response(*args, **kwargs).output
        yield {"type": "response.completed", "response": {"id": None, "output": output, "usage": None}}
'''

SCRIPT = r'''
import asyncio, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the project folder, as a vendoring app does
from miniagents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, OpenAIChatCompletionsModel,
                        Runner, RunState, SQLiteSession, function_tool, input_guardrail)

report = {}

@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"

@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"

def run(agent, input, **kw):
    return Runner.run_sync(agent, input, **kw).final_output

model = ScriptedModel([[function_call("weather", {"city": "Paris"}, call_id="c1")], [assistant_message("sunny")]])
report["tool"] = run(Agent(name="A", tools=[weather], model=model), "weather?")

billing = Agent(name="Billing", model=ScriptedModel([[assistant_message("billing here")]]))
triage = Agent(name="Triage", handoffs=[billing], model=ScriptedModel([[function_call("transfer_to_billing", {}, call_id="h1")]]))
report["handoff"] = run(triage, "bill me")

inner = Agent(name="Inner", model=ScriptedModel([[assistant_message("inner answer")]]))
outer = Agent(name="Outer", tools=[inner.as_tool("ask_inner", "Ask.")],
              model=ScriptedModel([[function_call("ask_inner", {"input": "q"}, call_id="o1")],
                                   [assistant_message("outer answer")]]))
report["agent_tool"] = run(outer, "go")

@input_guardrail
def no_secrets(ctx, agent, input):
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="secret" in str(input))

guarded_model = ScriptedModel([[assistant_message("never")]])
try:
    run(Agent(name="G", input_guardrails=[no_secrets], model=guarded_model), "a secret")
except InputGuardrailTripwireTriggered:
    report["guardrail"] = f"tripped, {len(guarded_model.calls)} model calls"

session = SQLiteSession("chat", os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat.db"))
chat = Agent(name="Chat", model=ScriptedModel([[assistant_message("hi")], [assistant_message("again")]]))
run(chat, "hello", session=session)
run(chat, "hello again", session=session)
report["session_items"] = len(session.get_items())

streamed = Runner.run_streamed(Agent(name="S", model=ScriptedModel([[assistant_message("streamed")]])), "s")
async def drain():
    return [event.type async for event in streamed.stream_events()]
report["stream_events"] = len(asyncio.run(drain()))
report["streamed"] = streamed.final_output

chat_model = OpenAIChatCompletionsModel(model="m", base_url=sys.argv[1], api_key="not-a-real-key")
report["chat_completions"] = run(Agent(name="Live", model=chat_model), "say hi")

payer_model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="p1")]])
paused = Runner.run_sync(Agent(name="Payer", tools=[pay], model=payer_model), "pay 5")
state = paused.to_state()
state.approve(state.get_interruptions()[0])
report["paused_json"] = state.to_string()

import miniagents
report["missing"] = {}
for name in ("Workspace", "trace", "ModelRetrySettings", "Recorder"):
    try:
        exec(f"from miniagents import {name}")
        said = "imported"
    except ImportError as error:
        said = str(error)
    report["missing"][name] = [said, hasattr(miniagents, name)]
try:
    import miniagents.tracing
    report["import_shell"] = "imported"
except ImportError as error:
    report["import_shell"] = str(error)
report["shells_loaded"] = sorted(m for m in sys.modules if m.split(".")[1:2] and m.split(".")[1] in {SHELLS})
print(json.dumps(report))
'''

RESUME = r'''
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from miniagents import Agent, Runner, RunState, function_tool

paid = []

@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"

agent = Agent(name="Payer", tools=[pay], model=ScriptedModel([[assistant_message("paid it")]]))
state = RunState.from_string(agent, sys.stdin.read())
print(json.dumps({"final": Runner.run_sync(agent, state).final_output, "paid": paid}))
'''


@pytest.fixture
def kernel_copy(tmp_path):
    folder = tmp_path / "app"
    shutil.copytree(os.path.join(ROOT, "miniagents"), folder / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for shell in seams.SHELLS:
        shutil.rmtree(folder / "miniagents" / shell, ignore_errors=True)
    left = sorted(p.name for p in (folder / "miniagents").iterdir() if p.is_dir())
    assert left == ["models"], left  # only the kernel's own folder is left
    (folder / "app.py").write_text(OFFLINE + SCRIPT.replace("{SHELLS}", repr(set(seams.SHELLS))), encoding="utf-8")
    (folder / "resume.py").write_text(OFFLINE + RESUME, encoding="utf-8")
    return folder


def run_isolated(folder, script, *args, stdin=None):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-S", "-I", script, *args], cwd=str(folder), env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def report(kernel_copy):
    """What the app printed, run once against the test server."""
    server = OpenAITestServer()
    try:
        server.reply(chat_completion("hi from a server"))
        return run_isolated(kernel_copy, "app.py", server.url)
    finally:
        server.close()


def test_the_kernel_without_any_shell_runs_every_part_of_the_loop(kernel_copy, report):
    assert report["tool"] == "sunny" and report["handoff"] == "billing here"
    assert report["agent_tool"] == "outer answer" and report["guardrail"] == "tripped, 0 model calls"
    assert report["session_items"] == 4 and report["streamed"] == "streamed" and report["stream_events"] > 0
    assert report["chat_completions"] == "hi from a server"
    resumed = run_isolated(kernel_copy, "resume.py", stdin=report["paused_json"])  # a new process, from the JSON
    assert resumed == {"final": "paid it", "paid": [5]}
    assert report["shells_loaded"] == []


def test_a_deleted_shells_names_say_which_feature_and_folder_they_belong_to(report):
    folders = {"Workspace": "capabilities", "trace": "tracing", "ModelRetrySettings": "retry", "Recorder": "recording"}
    for name, (said, has) in report["missing"].items():
        assert f"miniagents/{folders[name]}/" in said and "does not have" in said, (name, said)
        assert seams.SHELLS[folders[name]] in said, (name, said)  # the feature, in words
        assert has is False, name
    assert "miniagents/tracing/" in report["import_shell"] and "tracing" in report["import_shell"]


ASKED_FOR = r'''
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from miniagents import Agent, ModelSettings, RunConfig, Runner

os.environ["MINIAGENTS_TRACE"] = "1"
agent = Agent(name="A", model=ScriptedModel([[assistant_message("one")], [assistant_message("two")]]))
report = {"outputs": [Runner.run_sync(agent, "hi").final_output, Runner.run_sync(agent, "again").final_output]}
for name, make in (("trace_path", lambda: RunConfig(trace_path="trace.jsonl")),
                   ("retry", lambda: ModelSettings(retry={"max_retries": 2}))):
    try:
        make()
        report[name] = "made"
    except ImportError as error:
        report[name] = [type(error).__name__, str(error)]
late = RunConfig()
late.trace_path = "trace.jsonl"  # set after the RunConfig was made: refused as when it is made with it
try:
    report["late"] = Runner.run_sync(agent, "late", run_config=late).final_output
except Exception as error:
    report["late"] = [type(error).__name__, str(error)]
print(json.dumps(report))
'''


def test_a_shell_the_environment_asks_for_is_warned_about_once_and_one_a_configuration_asks_for_is_an_error(
        kernel_copy):
    """MINIAGENTS_TRACE in a copy without tracing/ warns once and every run goes on; RunConfig(trace_path=...) and
    ModelSettings(retry=...) ask for a feature the copy lacks where they are made, naming it and its folder, and a
    trace_path set on a RunConfig after it was made is the same error when the run starts (it only warned)."""
    (kernel_copy / "asked.py").write_text(OFFLINE + ASKED_FOR, encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-S", "-I", "asked.py"], cwd=str(kernel_copy), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["outputs"] == ["one", "two"]
    warned = [line for line in done.stderr.splitlines() if "the run goes on without it" in line]
    assert len(warned) == 1 and "MINIAGENTS_TRACE or MINIAGENTS_DEBUG needs" in warned[0]
    assert "miniagents/tracing/" in warned[0] and "does not have" in warned[0]
    for name, (asked, folder) in {"trace_path": ("RunConfig(trace_path=...)", "tracing"),
                                  "late": ("RunConfig(trace_path=...)", "tracing"),
                                  "retry": ("ModelSettings(retry=...)", "retry")}.items():
        kind, said = report[name]
        assert kind == "MissingFeatureError" and said.startswith(f"{asked} needs "), (name, said)
        assert f"miniagents/{folder}/" in said and seams.SHELLS[folder] in said, (name, said)


PLAIN_RUNS = """
import asyncio, sys, tempfile, os
from miniagents import Agent, RunState, Runner, SQLiteSession, function_tool, handoff

@function_tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

@function_tool(needs_approval=True)
def delete(path: str) -> str:
    \"\"\"Delete a file.\"\"\"
    return "deleted " + path

def tools_then(answer):
    return ScriptedModel([[function_call("add", {"a": 1, "b": 2}, call_id="c1")], [assistant_message(answer)]])

assert Runner.run_sync(Agent(name="a", tools=[add], model=tools_then("3")), "1 + 2?").final_output == "3"
other = Agent(name="b", model=ScriptedModel([[assistant_message("from b")]]))
first = Agent(name="a", handoffs=[handoff(other)], model=ScriptedModel([[function_call("transfer_to_b", {}, call_id="h")]]))
assert Runner.run_sync(first, "go").final_output == "from b"
asker = Agent(name="a", tools=[delete], model=ScriptedModel([[function_call("delete", {"path": "x"}, call_id="d")],
                                                              [assistant_message("done")]]))
paused = Runner.run_sync(asker, "delete x")
state = RunState.from_string(asker, paused.to_state().to_string())
state.approve(state.get_interruptions()[0])
assert Runner.run_sync(asker, state).final_output == "done"

async def streamed():
    result = Runner.run_streamed(Agent(name="a", tools=[add], model=tools_then("3")), "1 + 2?")
    return [event async for event in result.stream_events()], result.final_output
events, output = asyncio.run(streamed())
assert events and output == "3"
with tempfile.TemporaryDirectory() as folder:
    session = SQLiteSession("s", os.path.join(folder, "s.db"))
    Runner.run_sync(Agent(name="a", tools=[add], model=tools_then("3")), "1 + 2?", session=session)
    assert len(session.get_items()) == 4
    session.close()
"""


def test_import_miniagents_and_plain_runs_load_no_shell():
    """A tool call, a handoff, an approval resumed through JSON, a streamed run and a SQLiteSession run: none of
    them loads a shell module (upstream/ among them), so none executes a line of one."""
    code = (OFFLINE + PLAIN_RUNS + f"shells = {set(seams.SHELLS)!r}\n"
            "print(sorted(m for m in sys.modules if m.startswith('miniagents.') and m.split('.')[1] in shells))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_shell_missing_one_of_its_files_blames_the_copy_not_the_python(tmp_path):
    """A copy whose mcp/stdio.py was deleted (or never copied) said MCPServerStdio "needs the standard-library module
    'miniagents.mcp.stdio', which this Python was built without: use a Python that has it"."""
    shutil.copytree(os.path.join(ROOT, "miniagents"), tmp_path / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    os.remove(tmp_path / "miniagents" / "mcp" / "stdio.py")
    code = ("import miniagents\nprint(hasattr(miniagents, 'MCPServerStdio'))\n"
            "try:\n    from miniagents import MCPServerStdio\nexcept miniagents.MissingFeatureError as error:\n"
            "    print(error.name)\n    print(error)\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + code
    done = subprocess.run([sys.executable, "-S", "-I", "-B", "-c", code], capture_output=True, text=True, timeout=60)
    has, name, said = done.stdout.splitlines()
    assert [has, name] == ["False", "miniagents.mcp.stdio"], done.stderr
    assert said == ("MCPServerStdio (the shell miniagents.mcp) needs the module 'miniagents.mcp.stdio', which this "
                    "copy of miniagents lacks (deleted, or never copied)")
