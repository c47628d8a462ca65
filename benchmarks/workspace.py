"""Workspace cost: figures, never pass/fail. `python benchmarks/workspace.py`.

- read_file, list_files, write_file on a small tree: every path is opened name by name relative to its
  folder's descriptor, and a write is a new file renamed into place;
- search for plain text (in this process) and for a regular expression (matched in a child Python process,
  so its start-up is part of each regex search) over 200 files of 100 lines, each line read (no match);
- the catastrophic `(a+)+$` on a 2,000-character line: how long until the search gives up (the bound is
  `Workspace.regex_seconds`, 2 s), and how often another thread of this process ran meanwhile.

Wall times are best of N and move with the machine's load.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from miniagents import ToolError, Workspace  # noqa: E402


def best(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def make_tree(root: str) -> None:
    for folder in range(10):
        os.makedirs(os.path.join(root, f"f{folder}", "deeper"))
        for n in range(20):
            where = os.path.join(root, f"f{folder}", "deeper" if n % 2 else "", f"n{n}.txt")
            with open(where, "w") as f:
                f.write("".join(f"line {i} of note {n}: nothing much\n" for i in range(100)))


def bench_tools(workspace: Workspace) -> None:
    cases = [("read_file f3/deeper/n5.txt", lambda: workspace.read_file("f3/deeper/n5.txt"), 500),
             ("list_files f3", lambda: workspace.list_files("f3"), 500),
             ("write_file f3/new.txt (1 kB)", lambda: workspace.write_file("f3/new.txt", "x" * 1000), 500),
             ("search text, 200 files, no match", lambda: workspace.search("no such text"), 20),
             ("search regex, 200 files, no match", lambda: workspace.search(r"no such \w+", regex=True), 20),
             ("search regex, one small file", lambda: workspace.search(r"line \d+", "f3/n0.txt", regex=True), 20)]
    for name, call, repeats in cases:
        print(f"{name:38s} {best(call, repeats) * 1e3:8.2f} ms (best of {repeats})")


def bench_catastrophic(workspace: Workspace, root: str) -> None:
    with open(os.path.join(root, "aaa.txt"), "w") as f:
        f.write("a" * 1999 + "b\n")
    ticks, done = [0], threading.Event()

    def heartbeat() -> None:
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=heartbeat)
    thread.start()
    start = time.perf_counter()
    try:
        workspace.search("(a+)+$", "aaa.txt", regex=True)
    except ToolError as refusal:
        outcome = refusal.message[:60] + "..."
    else:
        outcome = "no refusal (unexpected)"
    elapsed = time.perf_counter() - start
    done.set()
    thread.join()
    print(f"(a+)+$ on 2,000 characters: gave up after {elapsed:.2f} s; another thread ticked {ticks[0]} times "
          f"(1 ms sleeps) meanwhile; {outcome}")


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f}")
    base = tempfile.mkdtemp()
    try:
        make_tree(base)
        workspace = Workspace(base, writable=True, write_needs_approval=False)
        bench_tools(workspace)
        bench_catastrophic(workspace, base)
    finally:
        shutil.rmtree(base)
