"""What a learner reads when following one run: the distinct lines of miniagents/ that execute inside `Runner`.

    python tests/reading_path.py          # the three runs' counts, per file
    python tests/reading_path.py --lines  # and every line, in file order

A line tracer (`sys.settrace` and `threading.settrace`) records each line (and each function's `def` line, when
called) of the package's files while `Runner.run_sync` runs, leaving out the scripted model and everything it
calls (it plays the model's part; a real model is a server). Three runs: the README's hello world (one tool call,
then an answer), a tool needing approval paused, written as JSON, read back and resumed, and a handoff.
`first_entered` lists the package's functions in the order the hello world first enters them: the README's
reading order is that path (tests/project/test_reading_path.py). Standard library only.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import functools
import os
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import miniagents  # noqa: E402
from miniagents import Agent, RunState, Runner, function_tool  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

PACKAGE = os.path.dirname(miniagents.__file__) + os.sep
EXCLUDED = {PACKAGE + "testing" + os.sep + "__init__.py"}


@functools.lru_cache(maxsize=None)
def _qualnames(path: str) -> dict:
    """{first line of a function (its first decorator's, as `co_firstlineno`): its qualified name}, from the source:
    `co_qualname` is new in Python 3.11, and the reading order names methods as `Class.method` on every Python."""
    names = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    names[min([child.lineno] + [d.lineno for d in child.decorator_list])] = name
                visit(child, name + ("." if isinstance(child, ast.ClassDef) else ".<locals>."))
            else:
                visit(child, prefix)
    with open(path, encoding="utf-8") as source:
        visit(ast.parse(source.read()), "")
    return names


def qualname(frame) -> str:
    code = frame.f_code
    if hasattr(code, "co_qualname"):
        return code.co_qualname
    if code.co_name.startswith("<") and frame.f_back is not None:  # a comprehension: inside the frame that runs it
        return f"{qualname(frame.f_back)}.<locals>.{code.co_name}"
    return _qualnames(code.co_filename).get(code.co_firstlineno, code.co_name)


class LineTracer:
    """Records (file, line) and the functions entered, in the package, outside the scripted model."""

    def __init__(self):
        self.lines, self.entered, self.counting = set(), [], True

    def _under_excluded(self, frame) -> bool:
        while frame is not None:
            if frame.f_code.co_filename in EXCLUDED:
                return True
            frame = frame.f_back
        return False

    def trace(self, frame, event, arg):
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE) or path in EXCLUDED:
            return None
        if event == "call":
            if self._under_excluded(frame.f_back):
                return None
            self.entered.append((path[len(PACKAGE):], qualname(frame)))
        if event in ("line", "call") and self.counting:
            self.lines.add((path[len(PACKAGE):], frame.f_lineno))
        return self.trace

    @contextlib.contextmanager
    def on(self, counting: bool = True):
        """Trace inside the block; with `counting=False` only the functions entered are recorded (code a learner
        reads beside the run, such as a RunState's JSON round trip, which runs outside `Runner`)."""
        self.counting = counting
        sys.settrace(self.trace)
        threading.settrace(self.trace)
        try:
            yield
        finally:
            sys.settrace(None)
            threading.settrace(None)
            self.counting = True

    def per_file(self) -> dict:
        return dict(collections.Counter(path for path, _ in self.lines).most_common())

    def first_entered(self) -> list:
        seen, order = set(), []
        for entry in self.entered:
            if entry not in seen:
                seen.add(entry)
                order.append(entry)
        return order


def hello_world(tracer: LineTracer) -> None:
    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"Sunny and 21°C in {city}"

    model = ScriptedModel([[function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
                           [assistant_message("It is sunny and 21°C in Paris.")]])
    agent = Agent(name="Assistant", instructions="Answer briefly.", tools=[get_weather], model=model)
    with tracer.on():
        result = Runner.run_sync(agent, "What's the weather in Paris?")
    assert result.final_output == "It is sunny and 21°C in Paris."


def approval(tracer: LineTracer) -> None:
    """The pause and the resume are traced; the JSON round trip between them runs outside `Runner`."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="call_1")], [assistant_message("Paid.")]])
    agent = Agent(name="Assistant", instructions="Pay.", tools=[pay], model=model)
    with tracer.on():
        paused = Runner.run_sync(agent, "pay 5")
    with tracer.on(counting=False):
        state = paused.to_state()
        state.approve(paused.interruptions[0])
        state = RunState.from_string(agent, state.to_string())
    with tracer.on():
        result = Runner.run_sync(agent, state)
    assert result.final_output == "Paid."


def handoff(tracer: LineTracer) -> None:
    model = ScriptedModel([[function_call("transfer_to_billing", {}, call_id="call_1")],
                           [assistant_message("Billing here.")]])
    billing = Agent(name="Billing", instructions="Bill.", model=model)
    triage = Agent(name="Triage", instructions="Route.", handoffs=[billing], model=model)
    with tracer.on():
        result = Runner.run_sync(triage, "bill me")
    assert result.final_output == "Billing here."


RUNS = {"hello world": hello_world, "approval through JSON": approval, "handoff": handoff}


def measure(name: str) -> LineTracer:
    tracer = LineTracer()
    RUNS[name](tracer)
    return tracer


def main(argv: list) -> int:
    import json
    import linecache

    if "--json" in argv:  # for the test, which measures in a fresh process (no shell registered by other tests)
        report = {}
        for name in RUNS:
            tracer = measure(name)
            report[name] = {"lines": sorted(tracer.lines), "files": tracer.per_file(), "entered": tracer.first_entered()}
        print(json.dumps(report))
        return 0
    for name in RUNS:
        tracer = measure(name)
        files = tracer.per_file()
        print(f"{name}: {len(tracer.lines)} lines in {len(files)} files: "
              + ", ".join(f"{path} {count}" for path, count in files.items()))
        if "--lines" in argv:
            for path, number in sorted(tracer.lines):
                print(f"  {path}:{number}: {linecache.getline(PACKAGE + path, number).rstrip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
