"""`python -m miniagents.upstream app.py [args]` (or `-m package.module [args]`): run a program written for the
OpenAI Agents SDK on miniagents, with no edit.

`agents` and every `agents.<path>` resolve to miniagents (never to an installed upstream SDK: see `alias`);
where the openai package is not installed, `openai.types...` is served by stand-ins whose `isinstance` checks
match miniagents' dict events (see `openai_types`). Then the program runs as `__main__`, with `sys.argv`
and `sys.path[0]` as `python app.py [args]` would set them.
"""
from __future__ import annotations

import os
import runpy
import sys

from . import alias, openai_types

USAGE = ("usage: python -m miniagents.upstream PROGRAM.py [ARGS...]\n"
         "       python -m miniagents.upstream -m MODULE [ARGS...]\n"
         "Runs a program written for the OpenAI Agents SDK with `agents` resolved to miniagents.")


def main(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    alias.install()
    openai_types.install()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    program = argv[0]
    if not os.path.isfile(program):
        print(f"miniagents.upstream: no such program: {program}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(program))
    runpy.run_path(program, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
