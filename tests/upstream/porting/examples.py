"""Runs upstream's core example programs unchanged, offline, against the generic scripted model
(generic_model.py), on upstream's SDK or on miniagents (through `python -m miniagents.upstream`).

    python tests/upstream/porting/examples.py UPSTREAM_ROOT --package miniagents --python PYTHON
    python tests/upstream/porting/examples.py UPSTREAM_ROOT --package agents --python UPSTREAM_VENV/bin/python

UPSTREAM_ROOT is a checkout or sdist of openai-agents (the folder holding `examples/`); each program runs
from there as `-m examples.<area>.<name>` with EXAMPLES_INTERACTIVE_MODE=auto (upstream's own switch for
unattended runs), tracing export off and the OpenAI base URL on a closed loopback port. Nothing of upstream
is copied into this repository.
"""
import argparse
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# basic/, agent_patterns/ and handoffs/, less the four programs of features miniagents leaves out.
LEFT_OUT = {
    "basic/hello_world_gpt_oss": "an openai client on a local server (OpenAIChatCompletionsModel given a client)",
    "basic/retry_litellm": "the LiteLLM extension",
    "basic/stream_ws": "the Responses websocket transport",
    "agent_patterns/hosted_multi_agent_beta": "the experimental hosted multi-agent extension",
}


def core_examples(upstream_root: pathlib.Path) -> list:
    names = [f"{area}/{path.stem}" for area in ("basic", "agent_patterns", "handoffs")
             for path in sorted((upstream_root / "examples" / area).glob("*.py"))]
    return [name for name in names if name not in LEFT_OUT]


def run(name: str, upstream_root: pathlib.Path, package: str, python: str, timeout: float = 120):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHONPATH"))}
    env.update(EXAMPLES_INTERACTIVE_MODE="auto", OPENAI_AGENTS_DISABLE_TRACING="1", OPENAI_API_KEY="sk-offline",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    if package == "miniagents":
        env["PYTHONPATH"] = str(ROOT)
    command = [python, str(HERE / "generic_model.py"), package, "-m", "examples." + name.replace("/", ".")]
    try:
        return subprocess.run(command, cwd=upstream_root, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(command, -1, expired.stdout or "", f"timed out after {timeout} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("upstream_root", type=pathlib.Path)
    parser.add_argument("--package", default="miniagents", choices=["agents", "miniagents"])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or core_examples(args.upstream_root)
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda name: run(name, args.upstream_root, args.package, args.python), names))
    failed = 0
    for name, done in zip(names, results):
        ok = done.returncode == 0
        failed += not ok
        last = ((done.stderr or "").strip().splitlines() or [""])[-1]
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f"  -- {last[:240]}"))
    print(f"{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
