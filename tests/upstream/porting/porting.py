"""Runs the upstream-style programs in programs/ against a package: `agents` (upstream, unchanged) or
`miniagents` (the import lines pointed at its upstream shell, `miniagents.upstream`, nothing else).

Each program is a script that asserts what upstream does and exits 0. Used by test_porting.py, and by
hand against an upstream install: `python tests/upstream/porting/porting.py --python <venv>/bin/python --package agents`.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]  # the repository: tests/upstream/porting/ is three levels down
PROGRAMS = sorted(path.stem for path in (HERE / "programs").glob("*.py"))
_IMPORT = re.compile(r"^(\s*)(from|import) agents\b", flags=re.M)


def ported(source: str, package: str) -> str:
    """The program with its `agents` imports pointed at `package`'s upstream shell (`import agents` keeps the
    name)."""
    if package == "agents":
        return source
    source = re.sub(r"^(\s*)import agents\s*$", rf"\1import {package}.upstream as agents", source, flags=re.M)
    return _IMPORT.sub(rf"\1\2 {package}.upstream", source)


def run(name: str, python: str = sys.executable, package: str = "miniagents",
        timeout: float = 60) -> subprocess.CompletedProcess:
    source = ported((HERE / "programs" / f"{name}.py").read_text(encoding="utf-8"), package)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env.update(OPENAI_AGENTS_DISABLE_TRACING="1", PYTHONPATH=str(ROOT) if package == "miniagents" else "")
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / f"{name}.py"
        script.write_text(source, encoding="utf-8")
        return subprocess.run([python, str(script)], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=timeout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable, type=lambda p: os.path.abspath(p))
    parser.add_argument("--package", default="miniagents", choices=["agents", "miniagents"])
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    failed = 0
    for name in args.names or PROGRAMS:
        done = run(name, args.python, args.package)
        ok = done.returncode == 0
        failed += not ok
        last = (done.stderr.strip().splitlines() or [""])[-1]
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f"  -- {last[:200]}"))
    print(f"{len(args.names or PROGRAMS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
