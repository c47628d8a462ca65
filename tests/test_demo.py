"""demo.py runs offline from a bare copy of the repository and passes its own invariants.

`python -S` (no site-packages) from a temp copy of `demo.py` + `miniagents/`, started from another
directory: the demo must find the package next to itself and need nothing installed.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = [
    "Chapter 1 · The loop: one plain answer",
    "Chapter 2 · A typed tool",
    "Chapter 3 · A handoff to a specialist",
    "Chapter 4 · An agent as a tool, in parallel with a function tool",
    "Chapter 5 · A blocking input guardrail",
    "Chapter 6 · Recovery",
]


def run_demo_copy(tmp_path: Path) -> subprocess.CompletedProcess:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy2(ROOT / "demo.py", repo / "demo.py")
    shutil.copytree(ROOT / "miniagents", repo / "miniagents",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR")}
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run([sys.executable, "-S", str(repo / "demo.py")], cwd=str(elsewhere), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def test_demo_runs_offline_without_site_packages_and_passes_its_invariants(tmp_path):
    proc = run_demo_copy(tmp_path)
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
    found = re.findall(r"^invariants: (\d+)/(\d+) passed$", out, re.M)
    assert len(found) == 1, out
    passed, total = map(int, found[0])
    assert passed == total >= 6, out
    for heading in HEADINGS:
        assert heading in out, f"missing chapter heading {heading!r}"
    assert "\033[" not in out  # no colours when stdout is not a terminal
    assert len(out.splitlines()) <= 250
