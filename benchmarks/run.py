"""Benchmarks: figures, never pass/fail. `./run.sh bench` runs them all.

- import: wall time of `python -c "import miniagents"` in a fresh interpreter (best of N).
- loop: the kernel's own work per turn with a scripted model and one tool call per turn, for runs of
  2 and 200 turns (the model's cost is nil, so this is all kernel).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miniagents import Agent, Runner, function_tool  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402


def bench_import(repeats: int = 15) -> None:
    code = "import time; t = time.perf_counter(); import miniagents; print(time.perf_counter() - t)"
    times = [float(subprocess.check_output([sys.executable, "-c", code], cwd=ROOT)) for _ in range(repeats)]
    base = [float(subprocess.check_output([sys.executable, "-c", "import time; t=time.perf_counter(); "
                                           "import json, dataclasses, typing, inspect; "
                                           "print(time.perf_counter()-t)"], cwd=ROOT)) for _ in range(repeats)]
    print(f"import miniagents: best {min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms "
          f"(json+dataclasses+typing+inspect alone: median {statistics.median(base) * 1e3:.1f} ms)")


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def one_run(turns: int) -> float:
    steps = [[function_call("add", {"a": i, "b": 1}, call_id=f"c{i}")] for i in range(turns - 1)]
    steps.append([assistant_message("done")])
    agent = Agent(name="Bench", tools=[add], model=ScriptedModel(steps))
    start = time.perf_counter()
    result = Runner.run_sync(agent, "go", max_turns=turns)
    elapsed = time.perf_counter() - start
    assert result.final_output == "done"
    return elapsed


def bench_loop() -> None:
    for turns, repeats in ((2, 300), (200, 5)):
        per_turn = sorted(one_run(turns) / turns for _ in range(repeats))
        print(f"loop, {turns}-turn run: median {statistics.median(per_turn) * 1e6:.0f} µs per turn "
              f"(best {per_turn[0] * 1e6:.0f} µs; scripted model, one tool call per turn)")


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    bench_import()
    bench_loop()
