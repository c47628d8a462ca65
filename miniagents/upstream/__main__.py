"""`python -m miniagents.upstream PROGRAM [args]` (or `-m package.module`, `-c CODE`, `-` for stdin): run a program
written for the OpenAI Agents SDK on miniagents, with no edit.

`agents` and every `agents.<path>` resolve to miniagents (never to an installed upstream SDK: see `alias`);
where the openai package is not installed, `openai.types...` is served by stand-ins whose `isinstance` checks
match miniagents' dict events (see `openai_types`). Then the program runs as `python PROGRAM [args]` would run
it, so that what it reads of itself is the same: as `__main__`, with the same `sys.argv`, `__file__` and
`sys.path[0]`. PROGRAM is taken as Python takes it: a folder or zip is a `sys.path` entry whose `__main__` module
runs, with that entry (absolute) first on `sys.path`; a file is a script, whose folder goes first with its
symlinks resolved (Python's realpath, so a linked script imports the siblings of its real file). Under `-I` or
`-P` (3.11+) Python puts no script folder on `sys.path`, and neither does the runner. `-c CODE` and `-` run as
Python runs them: `sys.argv[0]` is `-c` or `-`, `''` goes first on `sys.path`, stdin's program is `<stdin>`.

The processes the program starts import `agents` too. multiprocessing's spawn and forkserver start methods (the
default on macOS and Windows, and on Linux from Python 3.14) start a fresh interpreter that never runs this
runner: it gets the parent's `sys.path`, then runs the program's main module again (as `__mp_main__`) and
unpickles what it was sent. So the runner puts a temporary folder second on `sys.path` (after the program's own
entry, before any installed upstream SDK). It holds a module for each name such a process may import first:
`agents`, `openai` where the stand-ins serve, and the package's top-level name (an object the program sends is
pickled under the package's real module names). Imported there, each installs the runner's hooks, then imports
its own name again: through the hooks, or for the top-level name the package itself. A child's children get its
`sys.path`, so they find the folder too; in the runner's own process the hooks come first, so the folder is never
read there. It is removed when the program's process exits (a process killed by a signal runs no exit handler,
and leaves it); nothing else is written, and the environment is left alone. The modules name the package by what
it was imported as, never by a spelled name, so a vendored copy (`myproj._vendor.miniagents`) serves its children
the same.
"""
from __future__ import annotations

import atexit
import builtins
import importlib.util
import os
import pkgutil
import runpy
import shutil
import sys
import tempfile
import types
from importlib.machinery import BuiltinImporter, PathFinder, SourcelessFileLoader, SourceFileLoader
from typing import Any, Optional

from . import alias, openai_types

# The package never names itself: a vendored copy says the name it was imported under.
USAGE = (f"usage: python -m {alias.SHELL} PROGRAM [ARGS...]\n       python -m {alias.SHELL} -m MODULE [ARGS...]\n"
         f"       python -m {alias.SHELL} -c CODE [ARGS...]\n       python -m {alias.SHELL} - [ARGS...]\n"
         "Runs a program written for the OpenAI Agents SDK with `agents` resolved to miniagents; PROGRAM is what\n"
         "`python PROGRAM` takes: a .py file, or a folder or zip holding __main__.py; `-` reads it from stdin.")
# A program given as text (`-c CODE`, `-` for stdin): the `__file__` and name Python gives it.
GIVEN_AS_TEXT = {"-c": (None, "<string>"), "-": ("<stdin>", "<stdin>")}
# Each module of the children's folder: the runner's hooks installed where it is imported, then its own name
# imported again through them. It leaves sys.modules first: as the package's top-level name it must not be found
# while the package imports. The package's folder is on sys.path only meanwhile: a child's sys.path may lack it
# (when `python -m` found the package in the working folder, which the program's own folder replaced).
CHILD_MODULE = '''import importlib, sys  # made by `python -m {shell}` for its program's processes; removed at its exit
sys.modules.pop(__name__, None)
sys.path.insert(0, {root!r})
from {shell} import alias, openai_types
sys.path.remove({root!r})
alias.install()
openai_types.install(check={check!r})  # unchecked where the runner served them: a check finds this very module
importlib.import_module(__name__)
'''


def main(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] in ("-m", "-c") and len(argv) < 2):
        print(USAGE, file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    # How many entries Python put first on sys.path for the runner (`python -m`: the working folder).
    own = 0 if sys.flags.isolated or getattr(sys.flags, "safe_path", False) else 1
    program, path, named = argv[0], os.path.abspath(argv[0]), argv[0] not in ("-m", *GIVEN_AS_TEXT)
    entry = named and pkgutil.get_importer(path) is not None  # a folder or zip: a sys.path entry
    if entry and PathFinder.find_spec("__main__", [path]) is None:
        print(f"{alias.SHELL}: can't find '__main__' module in {path!r}", file=sys.stderr)
        return 1
    if named and not entry and not os.path.exists(path):
        print(f"{alias.SHELL}: no such program: {program}", file=sys.stderr)
        return 2
    alias.install()
    openai_types.install()
    sys.path.insert(1, _children_folder(stand_ins=openai_types.installed()))
    # As Python sets it: `-m` gives way to the module's path (runpy), `-c` stays and its code goes.
    sys.argv = argv[1:] if program == "-m" else ["-c", *argv[2:]] if program == "-c" else list(argv)
    if program in GIVEN_AS_TEXT:  # Python puts '' first (the working folder, whatever it becomes), but takes `-`
        # for a script's name there: a file or folder named `-` in the working folder puts its real folder first
        first = os.path.dirname(os.path.realpath(path)) if program == "-" and os.path.exists(path) else ""
        sys.path[:own] = [first][:own]
        # stdin is read for `-` only; a process with none runs an empty program, as Python does
        source = argv[1] if program == "-c" else sys.stdin.buffer.read() if sys.stdin else b""
        _run_text(source, *GIVEN_AS_TEXT[program])
    elif program == "-m":  # `python -m MODULE` puts first the working folder that `python -m` put first here
        missing = _missing_module(argv[1])
        if missing:
            print(f"{alias.SHELL}: {missing}", file=sys.stderr)
            return 1
        runpy.run_module(argv[1], {"__builtins__": builtins}, run_name="__main__", alter_sys=True)
    else:
        sys.path[:own] = [path] if entry else [os.path.dirname(os.path.realpath(path))][:own]
        _run_as_main(path, entry)
    return 0


def _missing_module(name: str):
    """Why `python -m name` finds nothing to run, said as Python says it, or None. `runpy.run_module` raises it
    as an ImportError, a traceback out of runpy's insides. A parent package that fails on an import of its own
    is the program's error, raised as it is (as under Python)."""
    try:
        spec = None if name.startswith(".") else importlib.util.find_spec(name)
    except ModuleNotFoundError as missing:
        if missing.name is None or not f"{name}.".startswith(f"{missing.name}."):
            raise
        spec = None
    if spec is None:
        return f"No module named {name}"
    if not hasattr(spec.loader, "get_code"):  # `agents[.<path>]`, this shell's modules: runpy's bare AttributeError
        return f"{name} is a module of {alias.SHELL} here, with no code to run as a program"
    if spec.submodule_search_locations is not None and _missing_module(f"{name}.__main__"):
        return f"No module named {name}.__main__; {name!r} is a package and cannot be directly executed"
    return None


def _children_folder(stand_ins: bool) -> str:
    """A new temporary folder holding the children's `agents`, the package's top-level name (an object the program
    sends a child is pickled under its real module's name) and with `stand_ins` `openai`; removed at exit."""
    folder = tempfile.mkdtemp(prefix="agents-for-children-")
    atexit.register(_remove, folder, os.getpid())
    root = os.path.abspath(alias.__file__).rsplit(os.sep, alias.SHELL.count(".") + 2)[0]  # holds the top package
    for name in {"agents", alias.SHELL.partition(".")[0]} | ({"openai"} if stand_ins else set()):
        with open(os.path.join(folder, f"{name}.py"), "w", encoding="utf-8") as f:
            f.write(CHILD_MODULE.format(shell=alias.SHELL, root=root, check=not stand_ins))
    return folder


def _remove(folder: str, owner: int) -> None:
    """The children's folder removed at the exit of the process that made it. A child the program forks inherits
    this exit handler: ending normally (`sys.exit`), it removed the folder, and every child started after that
    could not import `agents` (a pool then starts new ones forever)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _run_text(source: Any, file: Optional[str], name: str) -> None:
    """Run `source` (`-c`'s text, or stdin's bytes, whose coding declaration holds as a script's does) as
    `__main__` with what Python gives it: compiled as `name`, no `__spec__`, the built-in importer as
    `__loader__`, and `__file__` (`__cached__` None) only for stdin."""
    module = types.ModuleType("__main__")
    module.__loader__ = BuiltinImporter
    if file is not None:
        module.__dict__.update(__file__=file, __cached__=None)
    _exec_as_main(_compile(source, name), module)


def _run_as_main(path: str, entry: bool) -> None:
    """Run the program as `__main__` with what `python path` gives it: a folder's or zip's `__main__` module as
    imported from there, else the script with `__file__` absolute and no `__spec__`.

    Not `runpy.run_path`: it sets `sys.argv[0]` to the path it runs, where Python keeps the argument as typed and
    makes only `__file__` and `sys.path[0]` absolute.
    """
    if entry:
        spec = PathFinder.find_spec("__main__", [path])
        code, module = spec.loader.get_code("__main__"), importlib.util.module_from_spec(spec)
    else:
        compiled = path.endswith(".pyc")  # Python runs a .pyc file's bytecode as it is (compiled, an error)
        loader = (SourcelessFileLoader if compiled else SourceFileLoader)("__main__", path)
        # a source is compiled from its bytes: its own coding declaration holds
        code = loader.get_code("__main__") if compiled else _compile(loader.get_data(path), path)
        module = types.ModuleType("__main__")
        module.__dict__.update(__file__=path, __cached__=None, __loader__=loader)
    _exec_as_main(code, module)


def _compile(source: Any, name: str) -> types.CodeType:
    """The program's code as Python compiles it: the `from __future__ import annotations` of this module is not
    inherited (it made the program's annotations strings, which a tool's local types then could not resolve)."""
    return compile(source, name, "exec", dont_inherit=True)


def _exec_as_main(code: Any, module: types.ModuleType) -> None:
    module.__builtins__ = builtins  # as in Python's `__main__`: the module (exec alone puts in its dict)
    sys.modules["__main__"] = module  # and it stays, as under Python: the runner's own module is done
    exec(code, module.__dict__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
