"""Tracing cost: figures, never pass/fail. `python benchmarks/tracing.py` (or `bench_tracing()` from run.py).

Cases (each one span, or one turn, as the Runner will open them):
- nothing: `with function_span(...)` and two attribute writes with no processor registered (the default);
- silent: the same inside a `trace()` that no processor listens to;
- do-nothing: a registered processor whose methods do nothing (the cost of recording a span);
- file: the JSON-lines processor of `RunConfig(trace_path=...)` (sensitive data on);
- turn, turn+file: one turn's spans (turn, generation, one tool call) with no processor / with the file;
- kernel turn: the kernel's own cost per turn (run.py's loop benchmark: scripted model, one tool call a turn).

Name cases on the command line to run only those. Wall time is best of 7 (timeit) and moves with the machine's load; with valgrind installed, instruction
counts (callgrind, the case run N times minus 0 times, divided by N) give figures that do not.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from miniagents import Usage, tracing  # noqa: E402
from miniagents.models.interface import ModelSettings  # noqa: E402
from run import one_run  # noqa: E402  (run.py's loop benchmark)

SETTINGS, USAGE = ModelSettings(temperature=0), Usage(requests=1, input_tokens=100, output_tokens=20)


class Nothing(tracing.TracingProcessor):
    def on_trace_start(self, trace): pass

    def on_trace_end(self, trace): pass

    def on_span_start(self, span): pass

    def on_span_end(self, span): pass


class Config:
    workflow_name, trace_id, group_id, trace_metadata = "bench", None, None, None
    tracing_disabled, trace_include_sensitive_data, trace_path = False, True, None


def one_span() -> None:
    with tracing.function_span("add") as span:
        span.span_data.input = '{"a": 1, "b": 2}'
        span.span_data.output = "3"


def one_turn() -> None:
    """One turn's spans as the Runner opens them (usage built only when recording)."""
    with tracing.turn_span(1, "Bench"):
        with tracing.generation_span(model="scripted", model_config=SETTINGS) as gen:
            gen.span_data.input, gen.span_data.output = [], []
            if tracing.recording():
                gen.span_data.usage = USAGE.to_json()
        one_span()


def kernel_turn() -> None:
    one_run(2)


def _with_file(fn):
    def run(number: int) -> None:
        config = Config()
        with tempfile.TemporaryDirectory() as folder:
            config.trace_path = os.path.join(folder, "t.jsonl")
            with tracing.run_trace(config):
                for _ in range(number):
                    fn()
    return run


def _in_trace(fn, processors):
    def run(number: int) -> None:
        tracing.set_trace_processors(processors)
        with tracing.trace("bench"):
            for _ in range(number):
                fn()
        tracing.set_trace_processors([])
    return run


def _plain(fn):
    def run(number: int) -> None:
        for _ in range(number):
            fn()
    return run


CASES = {  # name -> (run(number), number for timing, number under valgrind, what it is)
    "nothing": (_plain(one_span), 100_000, 20_000, "one span, no processor (the default)"),
    "silent": (_in_trace(one_span, []), 100_000, 20_000, "one span in a trace with no processor"),
    "do-nothing": (_in_trace(one_span, [Nothing()]), 50_000, 10_000, "one span, a processor that does nothing"),
    "file": (_with_file(one_span), 20_000, 2_000, "one span, JSON-lines file"),
    "turn": (_plain(one_turn), 50_000, 10_000, "one turn's spans, no processor"),
    "turn+file": (_with_file(one_turn), 10_000, 1_000, "one turn's spans, JSON-lines file"),
    "kernel turn": (_plain(kernel_turn), 300, 30, "the kernel's own turn (2-turn runs, per turn: /2)"),
}


def _instructions(case: str, number: int) -> int:
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, "--run", case, str(number)], capture_output=True, text=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def bench_tracing(cases: tuple = tuple(CASES)) -> None:
    tracing.set_trace_processors([])
    for case in cases:
        run, number, counted, what = CASES[case]
        per = min(timeit.repeat(lambda: run(number), number=1, repeat=7)) / number * 1e6
        if case == "kernel turn":
            per /= 2
        line = f"tracing: {what}: {per:.2f} µs"
        if shutil.which("valgrind"):
            count = (_instructions(case, counted) - _instructions(case, 0)) / counted / (2 if case == "kernel turn"
                                                                                          else 1)
            line += f", {count / 1000:.1f} k instructions"
        print(line)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:  # one case for valgrind: once to warm up (lazy imports), then N times
        CASES[sys.argv[2]][0](1)
        CASES[sys.argv[2]][0](int(sys.argv[3]))
        sys.exit()
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f}")
    bench_tracing(tuple(sys.argv[1:]) or tuple(CASES))  # e.g. `python benchmarks/tracing.py nothing turn`
