"""Shell: copy this package into a project, under any dotted name, and check that the copy works.

    python -m miniagents.vendor DEST [--as DOTTED.NAME] [--without SHELL ...] [--zip] [--compile]
                                     [--python PATH ...] [--replace]
    python -m miniagents.vendor --check DEST [--as DOTTED.NAME] [--python PATH ...]

DEST is the folder that will hold the copy: the package lands in `DEST/<name as folders>/`
(`--as myproj._vendor.miniagents`: `DEST/myproj/_vendor/miniagents/`, with empty `__init__.py` files made for the
parent packages that lack one). A name no copy can live under is refused: one in a package of the standard library
(`http`, `xml.miniagents`: the copy and that module would shadow each other), and one under `agents` while the
upstream shell is kept (`python -m agents._vendor.miniagents.upstream` makes `agents` the shell itself). With
`--zip`, DEST is a zip file holding that same tree, for `sys.path.insert(0, "DEST.zip")`. The copy is the package
as it is, renamed nowhere (the package never names itself): every shell folder (any subfolder but `models/`)
unless `--without` leaves it out, no `__pycache__`.
A copy appears whole or not at all: it is written beside its place, as `<its name>.vendoring-<pid>-<random>` (a
dot in the name: no import finds it), then renamed into place, VENDORED.json and all; a zip is written as
`DEST.vendoring-<pid>-<random>` and renamed over DEST. A copy that cannot be written (no room, Ctrl-C) removes what
it wrote; a killed command leaves that folder or file, which no later run reads: remove it once no copy is running.
Two commands copying to one place at once leave one whole copy, either's (the other may be refused).
`--replace` leaves an earlier copy (one holding a VENDORED.json) in place until the new one is written whole, then
moves it aside, as `<its name>.replaced-<pid>-<random>`, renames the new one into place and removes it (a zip is
renamed over it); a command killed between those renames leaves it there, whole.
`--compile` adds `.pyc` files made by the Python running the command (in a zip: unchecked hash-based `.pyc`
files beside their sources, which is where zipimport looks for them). The entries of a zip are stored, not
deflated, so a Python built without zlib imports it too, and their times are fixed, so the same copy makes
the same bytes.

`VENDORED.json`, in the copied package folder, says what the copy is: its dotted name, version, the shells kept and
left out, whether it was compiled, the Python versions its check passed on, and `source_digest`: the sha256 of
every copied `.py` file's path (relative to the package folder, `/`-separated) and contents, in sorted path order,
each as `path NUL length NUL contents`.

The check runs in a fresh `python -S -I -B` (no site-packages, no environment, no bytecode written): it imports the
copy under its name (the parent packages as bare namespaces, so a project's own `__init__.py` is not run), imports
each shell kept, runs a scripted tool call, pauses an approval and resumes it through JSON (`RunState.to_string`,
`RunState.from_string`) and runs two turns on an in-memory `SQLiteSession`, with a model of its own that plays back
answers (the offline model, `testing/`, is a shell a copy may leave out); then it checks that no module came from
DEST but the copy itself. `--python PATH` runs it with other interpreters too. Exit status: 0 when the copy passed, 1
when its check failed (the reason is printed), 2 when nothing was copied (a bad argument, a DEST that is in the way)
or the copy could not be written.

Standard library only; nothing is written outside DEST but temporary files (a zip is built from a temporary
folder), removed before the command ends.
"""
from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import keyword
import os
import py_compile
import shutil
import sys
import sysconfig
import tempfile
import zipfile
from importlib.machinery import PathFinder
from typing import Dict, List, Optional, Sequence, Tuple

from .. import __version__
from ..errors import MissingFeatureError, needs

# The dotted name this package was imported under. Not from __package__: on Python 3.9 a module imported from a
# zip runs with __package__ None (zipimport's load_module sets it afterwards).
PACKAGE = __name__.rpartition(".")[0]
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # its folder
MANIFEST = "VENDORED.json"
KERNEL_FOLDERS = ("models",)  # subfolders that are part of the kernel; every other one is a shell
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
CHECK_SECONDS = 120.0


class VendorError(Exception):
    """Nothing was copied (a bad argument, a DEST that is in the way), or the copy could not be written."""


def shells(source: str = SOURCE) -> List[str]:
    """The shell folders of the package at `source`: every subfolder with an `__init__.py`, but the kernel's."""
    return sorted(name for name in os.listdir(source) if name not in KERNEL_FOLDERS
                  and os.path.isfile(os.path.join(source, name, "__init__.py")))


def _check_name(name: str, without: Sequence[str]) -> List[str]:
    """The parts of `--as NAME`; `VendorError` for a name no copy can live under: one that is no dotted name, one in
    a package of the standard library (`http`, `xml.miniagents`: the copy and that module shadow each other), and
    one in `agents` while the upstream shell is kept (it makes `agents` itself: the copy would be mapped onto
    itself)."""
    parts = name.split(".")
    # an identifier Python reads as another (`ﬁle` is `file`: names are NFKC-normalized) names no import
    if not all(p.isidentifier() and not keyword.iskeyword(p) and compile(p, "", "eval").co_names == (p,)
               for p in parts):
        raise VendorError(f"--as {name!r}: want a dotted name of Python identifiers, such as "
                          f"myproj._vendor.{PACKAGE.rpartition('.')[2]}")
    if _in_stdlib(parts[0]):
        raise VendorError(f"--as {name!r}: {parts[0]!r} is a module of the standard library, which the copy would "
                          "shadow (or be shadowed by): choose a name in a package of your own")
    if parts[0] == "agents" and "upstream" not in without:
        raise VendorError(f"--as {name!r}: the upstream shell cannot run under the name `agents` (`python -m "
                          f"{name}.upstream` makes `agents` the shell itself): choose another name, or leave the "
                          "shell out with --without upstream")
    return parts


def _in_stdlib(top: str) -> bool:
    """Whether `top` is a top-level module of this Python's standard library."""
    if hasattr(sys, "stdlib_module_names"):  # 3.10+
        return top in sys.stdlib_module_names
    stdlib = sysconfig.get_paths()["stdlib"]  # 3.9: a built-in module, or one in the standard library's folders
    folders = [stdlib, os.path.join(stdlib, "lib-dynload")]
    return top in sys.builtin_module_names or PathFinder.find_spec(top, folders) is not None


def _files(source: str, without: Sequence[str]) -> List[str]:
    """The package's files to copy, relative to `source` with `/`: no caches, no dot files, no left-out shell,
    no manifest of an earlier copy."""
    found = []
    for folder, dirs, files in os.walk(source):
        rel = os.path.relpath(folder, source).replace(os.sep, "/")
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith(".")
                         and not (rel == "." and d in without))
        for name in sorted(files):
            path = name if rel == "." else f"{rel}/{name}"
            if not name.startswith(".") and not name.endswith((".pyc", ".pyo")) and path != MANIFEST:
                found.append(path)
    return found


def digest(sources: Dict[str, bytes]) -> str:
    """`sha256:<hex>` of the `.py` files of `{relative path: contents}` (see the module's docstring)."""
    h = hashlib.sha256()
    for path in sorted(p for p in sources if p.endswith(".py")):
        h.update(f"{path}\0{len(sources[path])}\0".encode("utf-8") + sources[path])
    return "sha256:" + h.hexdigest()


def _sources(dest: str, name: str) -> Dict[str, bytes]:
    """{path relative to the package folder: contents} of the `.py` files of the copy `name` at `dest` (a folder
    or a zip)."""
    if os.path.isfile(dest):
        prefix = name.replace(".", "/") + "/"
        with zipfile.ZipFile(dest) as z:
            return {n[len(prefix):]: z.read(n) for n in z.namelist() if n.startswith(prefix) and n.endswith(".py")}
    where = os.path.join(dest, *name.split("."))
    sources = {}
    for path in _files(where, ()):
        if path.endswith(".py"):
            with open(os.path.join(where, *path.split("/")), "rb") as f:
                sources[path] = f.read()
    return sources


# --- making a copy ---------------------------------------------------------------------------------------------


def vendor(dest: str, name: Optional[str] = None, without: Sequence[str] = (), as_zip: bool = False,
           compiled: bool = False, pythons: Sequence[str] = (), replace: bool = False,
           say=print) -> List[dict]:
    """Copy the package to `dest` as `name` and check the copy; the checks' reports (see `check`). Raises
    `VendorError` when nothing was copied, `CheckFailed` when the copy's check failed (the copy stays)."""
    name = name or PACKAGE.rpartition(".")[2]
    parts = _check_name(name, without)
    kept = shells()
    unknown = sorted(set(without) - set(kept))
    if unknown:
        raise VendorError(f"--without {', '.join(unknown)}: not a shell of this package; its shells are "
                          f"{', '.join(kept)} (models/ is part of the kernel)")
    kept = [s for s in kept if s not in without]
    dest = os.path.abspath(dest)
    target = os.path.join(dest, *parts)
    if (os.path.realpath(target) + os.sep).startswith(os.path.realpath(SOURCE) + os.sep):
        raise VendorError(f"{target} is (or is inside) the package being copied ({SOURCE})")
    building = None  # where the copy is written, beside its place, until it is renamed into place whole
    try:
        earlier = _make_room(dest, target, as_zip, replace)
        files = _files(SOURCE, without)
        sources = {}
        for path in files:
            if path.endswith(".py"):
                with open(os.path.join(SOURCE, *path.split("/")), "rb") as f:
                    sources[path] = f.read()
        manifest = {"name": name, "version": __version__, "source_digest": digest(sources),
                    "py_files": len(sources), "shells": kept, "left_out": sorted(without),
                    "compiled": sys.implementation.cache_tag if compiled else None, "zip": as_zip, "checked_with": []}
        with tempfile.TemporaryDirectory(prefix="vendor-") as staging:
            root = staging if as_zip else dest
            for parent in _write_parents(root, parts):
                say(f"created {os.path.join(dest, parent)} (empty: a parent package of the copy)")
            where = os.path.join(root, *parts)
            building = where if as_zip else _beside(where)
            os.makedirs(building)
            _write_tree(SOURCE, files, building, manifest)
            if compiled:
                ok = compileall.compile_dir(building, quiet=1, legacy=as_zip, ddir=os.path.join(dest, *parts),
                                            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
                                            if as_zip else None)
                if not ok:
                    raise CheckFailed(f"compileall could not compile every module of {where}")
            if as_zip:
                _zip(staging, dest)
            else:
                _put_in_place(building, where, earlier)
            building = None
            say(f"copied {PACKAGE} {__version__} ({len(sources)} modules; shells: {', '.join(kept) or 'none'}"
                + (f"; left out: {', '.join(sorted(without))}" if without else "") + ")"
                + (f", compiled for {sys.implementation.cache_tag}" if compiled else "")
                + f" to {os.path.join(dest, *parts)}" + (" (a zip)" if as_zip else ""))
            try:
                reports = check_all(dest, name, pythons, say=say)
            except CheckFailed as failed:
                raise CheckFailed(f"{failed}\nThe copy stays where it is, for a look; `--check {dest}` checks it "
                                  "again.") from None
            manifest["checked_with"] = list(dict.fromkeys(r["python"] for r in reports))  # each version once
            _write_manifest(where, manifest)
            if as_zip:
                _zip(staging, dest)
        return reports
    except OSError as error:  # a file where a folder goes, no room, no permission: said, not a traceback
        raise VendorError(f"could not write the copy to {dest}: {error}") from None
    finally:
        if building and not as_zip:  # the copy was not written whole: nothing of it stays
            shutil.rmtree(building, ignore_errors=True)


def _make_room(dest: str, target: str, as_zip: bool, replace: bool) -> bool:
    """Refuse a DEST in the way: a zip file that exists, or a package folder that exists and is not empty.
    `--replace` takes either when it is an earlier copy (it holds a VENDORED.json), never anything else: True then
    (it is replaced once the new copy is whole)."""
    if as_zip and os.path.isdir(dest):
        raise VendorError(f"{dest} is a folder; with --zip, DEST is the zip file to write")
    if not as_zip and os.path.exists(dest) and not os.path.isdir(dest):
        raise VendorError(f"{dest} exists and is not a folder")
    there = dest if as_zip else target
    if os.path.islink(there):
        raise VendorError(f"{there} is a symbolic link: the copy goes where DEST names, never through a link")
    if not os.path.exists(there) or (os.path.isdir(there) and not os.listdir(there)):
        return False
    if not replace:
        raise VendorError(f"{there} exists and is not empty: to update a copy, pass --replace (it removes an "
                          "earlier copy, one that holds a VENDORED.json) or remove it yourself")
    if as_zip and zipfile.is_zipfile(there):
        with zipfile.ZipFile(there) as z:
            earlier = any(n.endswith("/" + MANIFEST) for n in z.namelist())
    else:
        earlier = os.path.isfile(os.path.join(there, MANIFEST))
    if not earlier:
        raise VendorError(f"--replace: {there} is not a copy made by this command (no VENDORED.json); "
                          "remove it yourself if it should go")
    return True


def _beside(path: str, why: str = "vendoring") -> str:
    """A new name beside `path`, `<name>.<why>-<pid>-<random>`: for what is written before it is renamed to `path`,
    or an earlier copy moved aside. Never importable (a dot in the name), never a name a killed run left."""
    return f"{path}.{why}-{os.getpid()}-{os.urandom(4).hex()}"


def _put_in_place(building: str, target: str, earlier: bool) -> None:
    """Rename the whole copy `building` to `target`: an earlier copy there moved aside first and removed after; an
    empty folder there taken away (a rename onto it fails on Windows). A copy another run put there meanwhile stays
    (this one is refused); else a rename that fails puts the earlier copy back."""
    aside = _beside(target, "replaced") if earlier else None
    if aside:
        os.rename(target, aside)
    elif os.path.isdir(target) and not os.listdir(target):
        os.rmdir(target)
    try:
        os.rename(building, target)
    except BaseException as error:
        taken = os.path.isdir(target)
        if aside and not taken:
            os.rename(aside, target)
        if taken and isinstance(error, OSError):
            raise VendorError(f"{target} was made by another run meanwhile; this copy is not kept"
                              + (f" (the earlier copy stays as {aside})" if aside else "")) from None
        raise
    if aside:
        shutil.rmtree(aside)


def _write_parents(root: str, parts: List[str]) -> List[str]:
    """The parents' `__init__.py` of the copy `root/<parts>` where absent; returns those made (relative paths)."""
    made = []
    for depth in range(1, len(parts)):
        init = os.path.join(root, *parts[:depth], "__init__.py")
        if not os.path.lexists(init):  # a link that leads nowhere is not followed out of DEST
            os.makedirs(os.path.dirname(init), exist_ok=True)
            open(init, "w").close()
            made.append(os.path.join(*parts[:depth], "__init__.py"))
    return made


def _write_tree(source: str, files: List[str], target: str, manifest: dict) -> None:
    """The package's files in the folder `target`, then the manifest."""
    for path in files:
        into = os.path.join(target, *path.split("/"))
        os.makedirs(os.path.dirname(into), exist_ok=True)
        shutil.copyfile(os.path.join(source, *path.split("/")), into)
    _write_manifest(target, manifest)


def _write_manifest(folder: str, manifest: dict) -> None:
    """VENDORED.json written beside, then renamed over the one there: a killed command leaves one whole."""
    written = _beside(os.path.join(folder, "." + MANIFEST))  # a dot file: never copied, nor in the digest
    with open(written, "x", encoding="utf-8") as f:
        f.write(json.dumps(manifest, indent=2) + "\n")
    os.replace(written, os.path.join(folder, MANIFEST))


def _zip(staging: str, dest: str) -> None:
    """The zip of `staging`, written beside DEST, then renamed over it: a killed command leaves no half zip there."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    written = _beside(dest)
    try:
        with zipfile.ZipFile(written, "x", zipfile.ZIP_STORED) as z:
            for folder, dirs, files in os.walk(staging):
                dirs.sort()
                for name in sorted(files):
                    path = os.path.join(folder, name)
                    info = zipfile.ZipInfo(os.path.relpath(path, staging).replace(os.sep, "/"), ZIP_TIME)
                    info.external_attr = 0o644 << 16
                    with open(path, "rb") as f:
                        z.writestr(info, f.read())
        os.replace(written, dest)
    finally:
        if os.path.exists(written):
            os.remove(written)


# --- checking a copy -------------------------------------------------------------------------------------------


class CheckFailed(Exception):
    """The copy was made (or found) but does not work; the message says why."""


# Run by each Python checked, as `python -S -I -B -c CHECK ENTRY NAME ORIGINAL`: ENTRY is what goes on sys.path
# (DEST's folder or the zip), NAME the copy's dotted name, ORIGINAL this package's own name. Old Pythons must be
# able to parse it, to report the copy's own "needs Python 3.9" error. It prints one JSON line.
CHECK = r'''
import importlib, json, os, sys, traceback, types
entry, name, original, shells = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
report = {"python": sys.version.split()[0], "implementation": sys.implementation.name, "ok": False, "skipped": []}
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
stdlib = list(sys.path)
sys.path.insert(0, entry)
lib = {}


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def load():
    parts = name.split(".")
    for depth in range(1, len(parts)):  # the parents: bare packages (a project's own __init__ is not checked)
        parent = types.ModuleType(".".join(parts[:depth]))
        parent.__path__ = [os.path.join(entry, *parts[:depth])]
        sys.modules[parent.__name__] = parent
    lib["pkg"] = importlib.import_module(name)
    report["version"] = lib["pkg"].__version__


def call(tool, arguments, call_id):
    return {"type": "function_call", "id": call_id, "call_id": call_id, "name": tool,
            "arguments": json.dumps(arguments), "status": "completed"}


def message(text):
    return {"type": "message", "id": "m", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


class Answers(object):
    """A model answering each call with the next output items, keeping each call's input."""

    def __init__(self, *outputs):
        self.outputs, self.inputs = list(outputs), []

    def get_response(self, instructions, input, *args, **kwargs):
        self.inputs.append(list(input))
        return lib["pkg"].ModelResponse(output=self.outputs.pop(0), usage=lib["pkg"].Usage(requests=1),
                                        response_id=None)

    def stream_response(self, *args, **kwargs):
        raise AssertionError("the check streams nothing")


def shell(folder):
    return lambda: importlib.import_module(name + "." + folder) and None


def names():
    expect(not hasattr(lib["pkg"], "NoSuchNameAnywhere"), "hasattr answered True")
    exec("from %s import *" % name, {})


def tool_run():
    pkg = lib["pkg"]

    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)
    model = Answers([call("add", {"a": 2, "b": 3}, "c1")], [message("It is 5.")])
    done = pkg.Runner.run_sync(pkg.Agent(name="Adder", tools=[pkg.function_tool(add)], model=model), "2 + 3?")
    expect(done.final_output == "It is 5.", "final output %r" % (done.final_output,))
    expect(model.inputs[1][-1]["output"] == "5", "the tool's output did not reach the model")


def approval():
    pkg = lib["pkg"]
    paid = []

    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid %d" % amount
    model = Answers([call("pay", {"amount": 5}, "p1")], [message("Paid.")])
    agent = pkg.Agent(name="Payer", tools=[pkg.function_tool(pay, needs_approval=True)], model=model)
    paused = pkg.Runner.run_sync(agent, "pay 5")
    expect(len(paused.interruptions) == 1 and not paid, "the run did not pause before the tool ran")
    state = pkg.RunState.from_string(agent, json.dumps(json.loads(paused.to_state().to_string())))
    state.approve(state.get_interruptions()[0])
    done = pkg.Runner.run_sync(agent, state)
    expect(done.final_output == "Paid." and paid == [5], "resumed: %r, tool ran %r" % (done.final_output, paid))


def session_turn():
    try:
        import sqlite3  # noqa: F401
    except ImportError:  # a Python built without it: no fault of the copy's
        return "this Python has no sqlite3"
    pkg = lib["pkg"]
    session = pkg.SQLiteSession("check")
    model = Answers([message("first")], [message("second")])
    agent = pkg.Agent(name="Memory", model=model)
    pkg.Runner.run_sync(agent, "one", session=session)
    pkg.Runner.run_sync(agent, "two", session=session)
    expect(len(session.get_items()) == 4, "the session holds %d items, want 4" % len(session.get_items()))
    expect(model.inputs[1][0]["content"] == "one", "the second turn did not see the first")
    session.close()


def origins():
    ours = os.path.normcase(os.path.abspath(entry))
    for module_name, module in sorted(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if not where:
            continue
        where = os.path.normcase(os.path.abspath(where))
        inside = where == ours or where.startswith(ours + os.sep)
        if inside and not (module_name == name or module_name.startswith(name + ".")):
            raise AssertionError("%s was imported from %s, which is not the copy" % (module_name, where))
        if not inside and not any(where.startswith(os.path.normcase(os.path.abspath(p)) + os.sep) for p in stdlib):
            raise AssertionError("%s was imported from %s, outside the copy and the standard library"
                                 % (module_name, where))
    if original != name.split(".")[0] and original in sys.modules:
        raise AssertionError("the copy imported a package named %r, not itself" % original)


steps = [("import " + name, load)] + [("import the shell " + s, shell(s)) for s in shells] + [
    ("hasattr(%s, a name it does not have) and from %s import *" % (name, name), names),
    ("a scripted tool run", tool_run), ("an approval paused and resumed through JSON", approval),
    ("a SQLiteSession turn", session_turn), ("where the modules came from", origins)]
for step, run in steps:
    try:
        skipped = run()
    except BaseException as error:
        report["step"], report["error"] = step, "%s: %s" % (type(error).__name__, error)
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(entry)]
        if isinstance(error, SyntaxError) and error.filename and error.filename.startswith(entry):
            report["where"] = "%s:%s" % (os.path.relpath(error.filename, entry), error.lineno)
        elif frames:
            report["where"] = "%s:%s" % (os.path.relpath(frames[-1].filename, entry), frames[-1].lineno)
        break
    if skipped:
        report["skipped"].append("%s (%s)" % (step, skipped))
else:
    report["ok"] = True
print(json.dumps(report))
sys.exit(0 if report["ok"] else 1)
'''


def check(dest: str, name: str, python: str = sys.executable, shells_kept: Sequence[str] = ()) -> dict:
    """Check the copy `name` under `dest` (a folder or a zip) with one Python; its report (`python`, the version
    checked; `ok`; on failure `step`, `error` and where in the copy, `where`). Never raises for a broken copy."""
    command = [python, "-S", "-I", "-B", "-c", CHECK, os.path.abspath(dest), name, PACKAGE.split(".")[0],
               json.dumps(list(shells_kept))]
    cwd = dest if os.path.isdir(dest) else os.path.dirname(os.path.abspath(dest))
    env = {k: v for k, v in os.environ.items() if k in ("SYSTEMROOT", "PATH")}
    try:  # a Python without select or _posixsubprocess copies, but cannot start another to check the copy
        subprocess = needs("subprocess", "the check of a copy (another Python run on it)")
    except MissingFeatureError as error:
        return {"python": python, "ok": False, "step": "start the Python", "error": str(error)}
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=CHECK_SECONDS)
    except OSError as error:
        return {"python": python, "ok": False, "step": "start the Python", "error": f"{python}: {error}"}
    except subprocess.TimeoutExpired:
        return {"python": python, "ok": False, "step": "the check", "error": f"not done in {CHECK_SECONDS:.0f} s"}
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        report = json.loads(lines[-1])
        assert isinstance(report, dict) and "ok" in report
    except (IndexError, ValueError, AssertionError):
        tail = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()[-3:]
        return {"python": python, "ok": False, "step": "run the check",
                "error": f"{python} exited {done.returncode}: " + " | ".join(tail)}
    report["executable"] = python
    return report


def check_all(dest: str, name: str, pythons: Sequence[str] = (), say=print,
              shells_kept: Optional[Sequence[str]] = None) -> List[dict]:
    """`check` with this Python and each of `pythons`; a line each. Raises `CheckFailed` naming each failure."""
    if shells_kept is None:
        shells_kept = _shells_of(dest, name)
    reports = [check(dest, name, python, shells_kept) for python in dict.fromkeys([sys.executable, *pythons])]
    failures = []
    for r in reports:
        if r["ok"]:
            skipped = r.get("skipped") or []
            session = not any(skip.startswith("a SQLiteSession turn") for skip in skipped)
            say(f"checked {name} with Python {r['python']} ({r['executable']}): it imports, its shells import, "
                + ("a scripted tool run, an approval resumed from JSON and a SQLiteSession turn work" if session
                   else "a scripted tool run and an approval resumed from JSON work")
                + "".join(f"; skipped: {skip}" for skip in skipped))
        else:
            failures.append(f"Python {r['python']}: {r['step']} failed"
                            + (f" at {r['where']}" if r.get("where") else "") + f": {r['error']}")
    if failures:
        raise CheckFailed(f"the copy {name} in {dest} is broken:\n  " + "\n  ".join(failures))
    return reports


def _shells_of(dest: str, name: str) -> List[str]:
    """The shells the copy `name` at `dest` holds (its folders with an `__init__.py`, but the kernel's)."""
    if os.path.isdir(dest):
        where = os.path.join(dest, *name.split("."))
        return shells(where) if os.path.isdir(where) else []
    prefix = name.replace(".", "/") + "/"
    with zipfile.ZipFile(dest) as z:
        inits = [n[len(prefix):].split("/") for n in z.namelist() if n.startswith(prefix)]
    return sorted({p[0] for p in inits if len(p) == 2 and p[1] == "__init__.py"} - set(KERNEL_FOLDERS))


def find_copy(dest: str, name: Optional[str] = None) -> Tuple[str, str, dict]:
    """(DEST, dotted name, manifest) of the copy at `dest`: DEST as given when vendoring (a folder holding one
    copy, whose manifest says its name, or a zip), or the copied package folder itself. Raises `CheckFailed`."""
    dest = os.path.abspath(dest)
    manifests: Dict[str, dict] = {}
    if os.path.isfile(dest):
        try:
            with zipfile.ZipFile(dest) as z:
                for n in z.namelist():
                    if n.endswith("/" + MANIFEST):
                        manifests[n[: -len(MANIFEST) - 1].replace("/", ".")] = _manifest(f"{dest}:{n}", z.read(n))
        except (OSError, ValueError, zipfile.BadZipFile) as error:
            raise CheckFailed(f"{dest} is not a zip made by this command: {error}") from None
    elif os.path.isfile(os.path.join(dest, MANIFEST)):  # the package folder itself: DEST is above it
        manifest = _manifest(os.path.join(dest, MANIFEST))
        parts = (name or str(manifest.get("name", ""))).split(".")
        if os.path.basename(dest) != parts[-1]:
            raise CheckFailed(f"{dest}: its VENDORED.json names {'.'.join(parts)}, not this folder")
        return os.path.normpath(os.path.join(dest, *[os.pardir] * len(parts))), ".".join(parts), manifest
    elif os.path.isdir(dest):
        for folder, dirs, files in os.walk(dest):
            depth = os.path.relpath(folder, dest).count(os.sep)
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")) and depth < 8)
            if MANIFEST in files and folder != dest:
                dotted = os.path.relpath(folder, dest).replace(os.sep, ".")
                manifests[dotted] = _manifest(os.path.join(folder, MANIFEST))
                dirs[:] = []
    else:
        raise CheckFailed(f"{dest} does not exist")
    found = {k: v for k, v in manifests.items() if v.get("name") == k and (name is None or k == name)}
    if len(found) != 1:
        elsewhere = [f"{k.replace('.', os.sep)} (named {v.get('name')})"
                     for k, v in manifests.items() if k not in found]
        raise CheckFailed(f"{dest} holds {'several copies: ' + ', '.join(found) if found else 'no copy'} made by this "
                          "command (a VENDORED.json whose name says where it is: DEST/a/b/c/ for the copy a.b.c)"
                          + ("; name one with --as" if found else "")
                          + (f"; VENDORED.json found in {', '.join(elsewhere)}" if elsewhere else ""))
    manifests = found
    (dotted, manifest), = manifests.items()
    return dest, dotted, manifest


def _manifest(where: str, data: Optional[bytes] = None) -> dict:
    """The VENDORED.json at `where` (`data`: its bytes, read from a zip); `CheckFailed` when it cannot be read or is
    not a JSON object (damaged, or not one this command wrote)."""
    try:
        if data is None:
            with open(where, "rb") as f:
                data = f.read()
        manifest = json.loads(data)
    except (OSError, ValueError) as error:
        raise CheckFailed(f"{where} is not a VENDORED.json this command can read: {error}") from None
    if not isinstance(manifest, dict):
        raise CheckFailed(f"{where} is not a VENDORED.json this command can read: not a JSON object")
    return manifest


def recheck(dest: str, name: Optional[str] = None, pythons: Sequence[str] = (), say=print) -> List[dict]:
    """`--check`: check an existing copy again. Its manifest is only read: the copy is not changed."""
    dest, name, manifest = find_copy(dest, name)
    sources = _sources(dest, name)
    if digest(sources) != manifest.get("source_digest"):
        say(f"note: the .py files of {name} are not those vendored ({len(sources)} now, {manifest.get('py_files')} "
            "then): edited since, or files are missing")
    return check_all(dest, name, pythons, say=say)


# --- the command -----------------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}",
                                     description=__doc__.split("\n\n")[0].split(": ", 1)[-1])
    parser.add_argument("dest", metavar="DEST", help="the folder that will hold the copy (with --zip: the zip file)")
    parser.add_argument("--as", dest="name", metavar="DOTTED.NAME",
                        help=f"the copy's import name (default {PACKAGE.rpartition('.')[2]}); "
                             "DEST holds its parent packages' folders")
    parser.add_argument("--without", action="append", default=[], metavar="SHELL",
                        help=f"leave a shell folder out (repeatable): {', '.join(shells())}")
    parser.add_argument("--zip", action="store_true", help="write DEST as a zip file holding the package")
    parser.add_argument("--compile", action="store_true", help="add .pyc files compiled by this Python")
    parser.add_argument("--python", action="append", default=[], metavar="PATH",
                        help="check the copy with this interpreter too (repeatable)")
    parser.add_argument("--replace", action="store_true",
                        help="replace an earlier copy (one that holds a VENDORED.json) at the same place")
    parser.add_argument("--check", action="store_true",
                        help="check the copy already at DEST (DEST as given when it was made, or its package folder)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            if args.without or args.zip or args.compile or args.replace:
                raise VendorError("--check takes only DEST, --as and --python")
            recheck(args.dest, args.name, args.python)
        else:
            vendor(args.dest, args.name, args.without, args.zip, args.compile, args.python, args.replace)
    except VendorError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    except CheckFailed as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 1
    return 0
