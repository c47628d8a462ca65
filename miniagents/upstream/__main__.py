"""`python -m miniagents.upstream PROGRAM [args]` (or `-m package.module [args]`): run a program written for the
OpenAI Agents SDK on miniagents, with no edit.

`agents` and every `agents.<path>` resolve to miniagents (never to an installed upstream SDK: see `alias`);
where the openai package is not installed, `openai.types...` is served by stand-ins whose `isinstance` checks
match miniagents' dict events (see `openai_types`). Then the program runs as `python PROGRAM [args]` would run
it, so that what it reads of itself is the same: as `__main__`, with the same `sys.argv`, `__file__` and
`sys.path[0]`. PROGRAM is taken as Python takes it: a folder or zip is a `sys.path` entry whose `__main__` module
runs, with that entry (absolute) first on `sys.path`; a file is a script, whose folder goes first with its
symlinks resolved (Python's realpath, so a linked script imports the siblings of its real file). Under `-I` or
`-P` (3.11+) Python puts no script folder on `sys.path`, and neither does the runner.
"""
from __future__ import annotations

import importlib.util
import os
import pkgutil
import runpy
import sys
import types
from importlib.machinery import PathFinder, SourceFileLoader, SourcelessFileLoader

from . import alias, openai_types

COMMAND = f"python -m {alias.SHELL}"  # the package never names itself: a vendored copy runs under its own name
USAGE = (f"usage: {COMMAND} PROGRAM [ARGS...]\n"
         f"       {COMMAND} -m MODULE [ARGS...]\n"
         "Runs a program written for the OpenAI Agents SDK with `agents` resolved to miniagents. PROGRAM is\n"
         "what `python PROGRAM` takes: a .py file, or a folder or zip holding __main__.py.")


def main(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    # How many entries Python put first on sys.path for the runner (`python -m`: the working folder).
    own = 0 if sys.flags.isolated or getattr(sys.flags, "safe_path", False) else 1
    program, path = argv[0], os.path.abspath(argv[0])
    entry = program != "-m" and pkgutil.get_importer(path) is not None  # a folder or zip: a sys.path entry
    if program == "-m":
        first = sys.path[:own]  # `python -m MODULE` puts the same working folder first
    elif entry:
        if PathFinder.find_spec("__main__", [path]) is None:
            print(f"{alias.SHELL}: can't find '__main__' module in {path!r}", file=sys.stderr)
            return 1
        first = [path]
    elif os.path.isfile(path):
        first = [os.path.dirname(os.path.realpath(path))][:own]
    else:
        print(f"{alias.SHELL}: no such program: {program}", file=sys.stderr)
        return 2
    alias.install()
    openai_types.install()
    sys.path[:own] = first
    sys.argv = argv[1:] if program == "-m" else list(argv)
    if program == "-m":
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif entry:
        spec = PathFinder.find_spec("__main__", [path])
        _run_as_main(spec.loader.get_code("__main__"), importlib.util.module_from_spec(spec))
    else:
        _run_as_main(*_script(path))
    return 0


def _script(path: str) -> tuple:
    """(code, module) of the script at `path`, as `python path` makes them: `__file__` absolute, no `__spec__`."""
    with open(path, "rb") as f:
        code = pkgutil.read_code(f)  # a .pyc file runs too
    loader = SourcelessFileLoader
    if code is None:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")  # bytes: the source's own coding declaration holds
        loader = SourceFileLoader
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=path, __cached__=None, __loader__=loader("__main__", path), __spec__=None)
    return code, module


def _run_as_main(code, module) -> None:
    """Run `code` in `module`, the process's `__main__` meanwhile.

    Not `runpy.run_path`: it sets `sys.argv[0]` to the path it runs, where Python keeps the argument as typed and
    makes only `__file__` and `sys.path[0]` absolute.
    """
    runner = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules["__main__"] = runner


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
