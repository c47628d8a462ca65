"""Vendoring: a copy of `miniagents/` alone, in an empty folder, runs an agent on every installed Python.

The README promises "copy `miniagents/` into a project and it works". Each test copies only the package (no
tests, no pyproject, no install) into a fresh folder beside a small script, and runs the script with `python -S`
(no site module: no site-packages at all) and `python -I` (isolated: no environment variables, no user site).
The script exercises the lazily loaded parts too: a tool call, an approval pause through JSON, a SQLiteSession
and a streamed run. The interpreters are the one running the suite plus every supported CPython that pyenv has
installed (3.9 to 3.13); one that is not installed is simply not in the list.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from support import ROOT  # noqa: E402
SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")

SCRIPT = r'''
import asyncio, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the project folder, as a vendoring app does
from miniagents import Agent, Runner, RunState, SQLiteSession, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call

@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"

model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("paid it")],
                       [assistant_message("streamed reply")]])
agent = Agent(name="Desk", instructions="Pay.", tools=[pay], model=model)
session = SQLiteSession("vendored")
paused = Runner.run_sync(agent, "pay 5", session=session)
state = RunState.from_string(agent, paused.to_state().to_string())
state.approve(state.get_interruptions()[0])
done = Runner.run_sync(agent, state, session=session)
streamed = Runner.run_streamed(agent, "again", session=session)

async def drain():
    return [event.type async for event in streamed.stream_events()]

events = asyncio.run(drain())
print(json.dumps({"final": done.final_output, "streamed": streamed.final_output, "events": len(events),
                  "session": len(session.get_items()), "package": os.path.dirname(sys.modules["miniagents"].__file__),
                  "site": "site" in sys.modules}))
'''


def installed_pythons():
    """(label, executable): this interpreter, then each supported CPython that pyenv has installed."""
    found = {f"{sys.version_info[0]}.{sys.version_info[1]}": sys.executable}
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for version in SUPPORTED:
        for folder in sorted(glob.glob(os.path.join(root, "versions", f"{version}.*")), reverse=True):
            executable = os.path.join(folder, "bin", "python3")
            if version not in found and os.access(executable, os.X_OK):
                found[version] = executable
    return sorted(found.items(), key=lambda kv: tuple(int(p) for p in kv[0].split(".")))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vendored_app")
    shutil.copytree(os.path.join(ROOT, "miniagents"), folder / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (folder / "app.py").write_text(SCRIPT, encoding="utf-8")
    assert sorted(os.listdir(folder)) == ["app.py", "miniagents"]
    return folder


@pytest.mark.parametrize("flag", ["-S", "-I"])
@pytest.mark.parametrize("label,python", installed_pythons(), ids=[v for v, _ in installed_pythons()])
def test_a_copied_package_runs_an_agent_with_no_site_packages(project, label, python, flag):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([python, flag, "app.py"], cwd=str(project), env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["final"] == "paid it" and report["streamed"] == "streamed reply"
    assert report["events"] > 0 and report["session"] == 6  # 2 inputs, call, output, 2 replies
    assert report["package"] == str(project / "miniagents")
    if flag == "-S":
        assert report["site"] is False
