"""Benchmarks: figures, never pass/fail. `./run.sh bench` runs them all.

- import: wall time of `python -c "import miniagents"` in a fresh interpreter (best of N).
- loop: the work per turn, one tool call a turn, for runs of 2, 20 and 200 turns: the kernel alone (a plain
  model handing back responses made before the run), with the scripted model (which records each call), with
  the recording shell imported but nothing recorded, with every span written to a trace file, and with a
  `SQLiteSession` in a file (each turn written, and with the journal, recorded as it goes: its transactions'
  syncs to disk are most of that figure). With valgrind installed, the kernel's instructions per turn too: a figure
  two commits can be compared by on a loaded machine, where microseconds cannot.
- session: `SQLiteSession.get_items(limit=20)` on sessions of 1,000 and 100,000 rows (file database).
- state: size and time of `to_string` / `from_string` for a paused run.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miniagents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402


def bench_import(repeats: int = 15) -> None:
    """Fresh interpreters with bytecode caches written, as an installed package has them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.check_call([sys.executable, "-c", "import miniagents"], cwd=ROOT, env=env)

    def child(code: str) -> float:
        return float(subprocess.check_output([sys.executable, "-c", code], cwd=ROOT, env=env))

    times = [child("import time; t = time.perf_counter(); import miniagents; print(time.perf_counter() - t)")
             for _ in range(repeats)]
    base = [child(f"import time; t = time.perf_counter(); {STDLIB_IMPORTS}; print(time.perf_counter() - t)")
            for _ in range(repeats)]
    print(f"import miniagents: best {min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms "
          f"(its stdlib imports alone: median {statistics.median(base) * 1e3:.1f} ms)")
    if shutil.which("valgrind"):  # instruction counts: repeatable whatever else the machine is doing
        counts = [_instructions(code, env) for code in ("pass", STDLIB_IMPORTS, "import miniagents")]
        print(f"import miniagents: {counts[2] / 1e6:.0f} M instructions (bare interpreter {counts[0] / 1e6:.0f} M, "
              f"with its stdlib imports {counts[1] / 1e6:.0f} M; valgrind --tool=callgrind)")


STDLIB_IMPORTS = "import json, dataclasses, typing, inspect, logging, enum, re"


def _instructions(code: str, env: dict) -> int:
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          "-c", code], cwd=ROOT, env=env, capture_output=True, text=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class PlainModel:
    """A model that hands back responses made before the run: what the kernel costs on its own."""

    def __init__(self, responses: list):
        self.responses = iter(responses)

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return next(self.responses)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def one_run(turns: int, plain: bool = False, run_config: Any = None, session: Any = None) -> float:
    from miniagents.models.interface import ModelResponse
    from miniagents.context import Usage

    steps = [[function_call("add", {"a": i, "b": 1}, call_id=f"c{i}")] for i in range(turns - 1)]
    steps.append([assistant_message("done")])
    model = PlainModel([ModelResponse(output=s, usage=Usage(requests=1)) for s in steps]) if plain \
        else ScriptedModel(steps)
    agent = Agent(name="Bench", tools=[add], model=model)
    start = time.perf_counter()
    result = Runner.run_sync(agent, "go", max_turns=turns, run_config=run_config, session=session)
    elapsed = time.perf_counter() - start
    assert result.final_output == "done"
    return elapsed


def bench_loop() -> None:
    """Per turn, one tool call a turn: the kernel alone (a plain model), with the scripted model, and with every
    span written to a JSON-lines file (last: it loads the tracing shell, whose plugin then joins every run)."""
    repeats = {2: 300, 20: 60, 200: 7}
    for plain, what in ((True, "plain model (the kernel alone)"), (False, "scripted model")):
        for turns in (2, 20, 200):
            per_turn = sorted(one_run(turns, plain) / turns for _ in range(repeats[turns]))
            print(f"loop, {what}, {turns}-turn run: median {statistics.median(per_turn) * 1e6:.0f} µs per turn "
                  f"(best {per_turn[0] * 1e6:.0f} µs)")
    if shutil.which("valgrind"):  # instruction counts: comparable between commits whatever the machine's load
        for turns, (few, many) in ((2, (20, 220)), (200, (1, 3))):
            counts = [_instructions(f"import sys; sys.path[:0] = ['.', 'benchmarks']; import run as b; "
                                    f"b.one_run({turns}, True); [b.one_run({turns}, True) for _ in range({n})]",
                                    dict(os.environ)) for n in (few, many)]
            print(f"loop, plain model, {turns}-turn run: {(counts[1] - counts[0]) / (many - few) / turns / 1e3:.0f} k "
                  "instructions per turn (valgrind --tool=callgrind)")
    from miniagents import recording  # noqa: F401  (a shell that registers nothing: runs must not change)

    per_turn = sorted(one_run(200, True) / 200 for _ in range(repeats[200]))
    print(f"loop, plain model, 200-turn run, recording shell imported (nothing recorded): median "
          f"{statistics.median(per_turn) * 1e6:.0f} µs per turn")
    with tempfile.TemporaryDirectory() as tmp:
        traced = RunConfig(trace_path=os.path.join(tmp, "trace.jsonl"))
        per_turn = sorted(one_run(200, False, traced) / 200 for _ in range(repeats[200]))
        print(f"loop, scripted model, 200-turn run, traced to a JSON-lines file: median "
              f"{statistics.median(per_turn) * 1e6:.0f} µs per turn (best {per_turn[0] * 1e6:.0f} µs)")


class TurnsOnly:
    """A `SQLiteSession` seen without its ledger (only `get_items` and `add_items`): each turn written in one
    transaction and nothing else, as before the journal: the figure the journal's cost is read against."""

    def __init__(self, session: Any):
        self.session, self.session_id, self.session_settings = session, session.session_id, None

    def get_items(self, limit: Any = None) -> Any:
        return self.session.get_items(limit)

    def add_items(self, items: list) -> Any:
        return self.session.add_items(items)


def bench_session_loop() -> None:
    """Per turn with a `SQLiteSession` in a file (a new session per run, on one database), beside the plain figure
    above: with the ledger and the journal (the run recorded as it goes: the state a turn starts from, the
    response, each call's start and output, the turn's write), and with the turns written only."""
    from miniagents import SQLiteSession

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.db")
        for turns, repeats in ((2, 60), (20, 10)):
            for label, wrap in (("SQLiteSession (file), journaled", lambda s: s),
                                ("SQLiteSession (file), turns written only", TurnsOnly)):
                per_turn = []
                for n in range(repeats):
                    with SQLiteSession(f"s{turns}-{n}-{len(label)}", path) as session:
                        per_turn.append(one_run(turns, True, session=wrap(session)) / turns)
                per_turn.sort()
                print(f"loop, plain model, {turns}-turn run, {label}: median "
                      f"{statistics.median(per_turn) * 1e6:.0f} µs per turn (best {per_turn[0] * 1e6:.0f} µs)")


def bench_session() -> None:
    from miniagents import SQLiteSession

    item = {"role": "user", "content": "x" * 200}
    with tempfile.TemporaryDirectory() as folder:
        for rows in (1_000, 100_000):
            session = SQLiteSession(f"s{rows}", os.path.join(folder, f"{rows}.db"))
            for start in range(0, rows, 10_000):
                session.add_items([item] * min(10_000, rows - start))
            session.add_items([{"role": "user", "content": "other"}])
            runs = []
            for _ in range(200):
                start = time.perf_counter()
                session.get_items(limit=20)
                runs.append(time.perf_counter() - start)
            print(f"session: get_items(limit=20) on {rows:,} rows: median {statistics.median(runs) * 1e6:.0f} µs")
            session.close()


def bench_state() -> None:
    from miniagents import RunState

    @function_tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return path

    steps = [[function_call("add", {"a": i, "b": 1}, call_id=f"c{i}")] for i in range(50)]
    steps.append([function_call("delete", {"path": "/tmp/x"}, call_id="d1")])
    agent = Agent(name="Bench", tools=[add, delete], model=ScriptedModel(steps))
    state = Runner.run_sync(agent, "go", max_turns=100).to_state()
    text = state.to_string()
    dump = min(_timed(state.to_string) for _ in range(20))
    load = min(_timed(lambda: RunState.from_string(agent, text)) for _ in range(20))
    print(f"state: paused after 51 turns: {len(text):,} bytes; to_string {dump * 1e3:.2f} ms, "
          f"from_string {load * 1e3:.2f} ms (best of 20)")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f}")
    bench_import()
    __import__("import_time").bench_import_copies()  # a vendored copy: folder, .py zip, .pyc zip
    bench_loop()
    bench_session_loop()
    bench_session()
    bench_state()
