"""Import time of a vendored copy: figures, never pass/fail. `python benchmarks/import_time.py [N]`; `./run.sh bench`
runs it too.

Copies made by `python -m miniagents.vendor` (the shell's own functions, so each copy is also checked) are imported
in N fresh interpreters each (`python -S -I`, the copy first on sys.path; the time is `import miniagents` alone,
measured inside the interpreter, so start-up is left out):
- a folder whose `__pycache__` was written by a first import (what a project's copy has after its first run);
- a folder with no bytecode (`-B`: every module compiled at each import, as a read-only copy that was never
  compiled);
- a zip holding only `.py` files (compiled at each import: zipimport never writes bytecode);
- a zip made with `--compile` (unchecked hash-based `.pyc` files beside the sources).
Best and median of N; wall times move with the machine's load. Where valgrind is installed, the instructions each
import takes are counted too (callgrind, above a bare `python -S -I`): the same on a busy machine as on a quiet one.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miniagents import vendor  # noqa: E402

CODE = ("import sys, time; sys.path.insert(0, sys.argv[1]); t = time.perf_counter(); import miniagents; "
        "elapsed = time.perf_counter() - t; assert miniagents.__file__.startswith(sys.argv[1]), miniagents.__file__; "
        "print(elapsed)")


def _times(entry: str, repeats: int, flags: tuple = ()) -> list:
    env = {"PATH": os.environ.get("PATH", "")}
    return [float(subprocess.run([sys.executable, "-S", "-I", *flags, "-c", CODE, entry], env=env, check=True,
                                 stdout=subprocess.PIPE, timeout=120).stdout) for _ in range(repeats)]


def _instructions(entry: str, flags: tuple = (), code: str = CODE) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-S",
                           "-I", *flags, "-c", code, entry], env={"PATH": os.environ.get("PATH", "")},
                          capture_output=True, text=True, timeout=600)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def bench_import_copies(repeats: int = 15) -> None:
    quiet = lambda *args, **kw: None  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        folder, bare_folder, plain_zip, compiled_zip = (os.path.join(tmp, n) for n in
                                                        ("folder", "bare-folder", "py.zip", "pyc.zip"))
        vendor.vendor(folder, say=quiet)
        vendor.vendor(bare_folder, say=quiet)  # never imported without -B: no __pycache__, ever
        vendor.vendor(plain_zip, as_zip=True, say=quiet)
        vendor.vendor(compiled_zip, as_zip=True, compiled=True, say=quiet)
        _times(folder, 1)  # writes the folder's __pycache__
        cases = [("folder, __pycache__ written", folder, ()), ("folder, no bytecode (-B)", bare_folder, ("-B",)),
                 ("zip of .py files", plain_zip, ()), ("zip with .pyc files (--compile)", compiled_zip, ())]
        print(f"import miniagents from a vendored copy (python -S -I, {repeats} fresh interpreters each, "
              f"Python {sys.version.split()[0]}):")
        bare = _instructions(folder, (), "pass") if shutil.which("valgrind") else None
        for label, entry, flags in cases:
            times = _times(entry, repeats, flags)
            count = f"; {(_instructions(entry, flags) - bare) / 1e6:5.0f} M instructions" if bare else ""
            print(f"  {label:34s} best {min(times) * 1e3:6.1f} ms, median {statistics.median(times) * 1e3:6.1f} ms"
                  + count)


if __name__ == "__main__":
    bench_import_copies(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
