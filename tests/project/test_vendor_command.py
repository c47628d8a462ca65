"""`python -m miniagents.vendor`: the command that copies the package into a project and checks the copy (issue 31).

Each test runs the command as a user would, in a child process (`python -B -m miniagents.vendor ...`, the source on
PYTHONPATH, a scratch folder as the working folder and as TMPDIR), on a DEST under tmp_path:
- it runs on this Python and on 3.9 and 3.13 (pyenv's, skipped with the reason when absent), and `--python` checks
  the copy with other interpreters; an interpreter older than 3.9 fails the check with the package's own reason;
- the manifest (VENDORED.json) says what the copy is, and its digest is recomputed here from its written rule;
- `--without` leaves shell folders out, `--zip` writes a zip (stored, the same bytes each time) that imports from
  `sys.path`, `--compile` adds `.pyc` files (in a zip: unchecked hash-based ones beside their sources, which
  zipimport then uses without reading the source);
- `--check` passes on a good copy, a zip and the package folder itself, and fails with the reason on a broken one
  (a deleted run.py, a syntax error planted in turn.py);
- a DEST in the way is refused (exit 2) and left as it was: a non-empty package folder (the choice: DEST itself may
  exist, as a project's folder does, but the copy's own folder must be absent or empty; `--replace` removes an
  earlier copy, never anything else), an existing zip, a bad name, an unknown shell;
- the command writes nothing outside DEST: not in the package it copies, its working folder or its TMPDIR
  (a copy killed midway, or two at once: test_vendor_killed.py).
A renamed copy (`--as myproj._vendor.miniagents`) is made with the parents' `__init__.py` files and a decoy
top-level `miniagents` beside it, which the copy must never import; a kernel-only copy passes its check too.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import miniagents
from support import ROOT, copies_running_out_of_room

PACKAGE = os.path.join(ROOT, "miniagents")
SHELLS = sorted(d for d in os.listdir(PACKAGE) if d != "models" and os.path.isfile(os.path.join(PACKAGE, d, "__init__.py")))
THIS = "{}.{}.{}".format(*sys.version_info[:3])
def pyenv_python(version):
    """The newest pyenv CPython `version` (e.g. "3.9"), or None."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    if shutil.which("pyenv"):
        try:
            root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip() or root
        except (OSError, subprocess.TimeoutExpired):
            pass
    found = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", "python3")),
                   key=lambda p: [int(x) for x in p.split(os.sep)[-3].split(".") if x.isdigit()])
    return next((p for p in reversed(found) if os.access(p, os.X_OK)), None)


def python_or_skip(version):
    if version is None:
        return sys.executable
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed under pyenv ($(pyenv root)/versions/{version}.*)")
    return python


def version_of(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          capture_output=True, text=True, timeout=60).stdout.strip()


@pytest.fixture
def scratch(tmp_path):
    """(working folder, TMPDIR) for the command: both must stay empty."""
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    return work, temp


def vendor(*args, python=None, scratch=None, timeout=300):
    """Run `python -B -m miniagents.vendor ARGS` (the source on PYTHONPATH); the CompletedProcess (text)."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
    cwd = None
    if scratch is not None:
        cwd, env["TMPDIR"] = str(scratch[0]), str(scratch[1])
    return subprocess.run([python or sys.executable, "-B", "-m", "miniagents.vendor", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def manifest_of(package_folder):
    with open(os.path.join(package_folder, "VENDORED.json"), encoding="utf-8") as f:
        return json.load(f)


def tree(folder):
    """{relative path: (size, mtime)} of everything under `folder`."""
    found = {}
    for where, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(where, name)
            info = os.stat(path)
            found[os.path.relpath(path, folder)] = (info.st_size if name in files else None, info.st_mtime_ns)
    return found


def digest_of(sources):
    """The manifest's `source_digest`, by the rule the shell's docstring writes down."""
    h = hashlib.sha256()
    for path in sorted(sources):
        h.update(path.encode() + b"\0" + str(len(sources[path])).encode() + b"\0" + sources[path])
    return "sha256:" + h.hexdigest()


def py_files(folder):
    found = {}
    for where, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(where, name), "rb") as f:
                    found[os.path.relpath(os.path.join(where, name), folder).replace(os.sep, "/")] = f.read()
    return found


def run_app(python, entry, code):
    """`code` in a fresh `python -S -I` with `entry` first on sys.path; its stdout."""
    script = f"import sys; sys.path.insert(0, {str(entry)!r})\n" + code
    done = subprocess.run([python, "-S", "-I", "-B", "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(str(entry)))
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def good_copy(tmp_path_factory):
    """A whole copy under its own name, made once for the tests that only read it."""
    dest = tmp_path_factory.mktemp("vendored") / "project"
    done = vendor(dest)
    assert done.returncode == 0, done.stderr
    return dest


# --- making a copy ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "3.9", "3.13"], ids=["this-python", "3.9", "3.13"])
def test_the_command_copies_and_checks_the_package_on_each_python(tmp_path, scratch, version):
    python = python_or_skip(version)
    dest = tmp_path / "project"
    done = vendor(dest, python=python, scratch=scratch)
    assert done.returncode == 0, done.stderr
    copy = dest / "miniagents"
    assert sorted(os.listdir(dest)) == ["miniagents"]
    assert set(py_files(copy)) == set(py_files(PACKAGE)), "the copy is every module of the package"
    assert not list(copy.rglob("__pycache__")) and not list(copy.rglob("*.pyc"))
    assert (copy / "LICENSE").read_bytes() == open(os.path.join(PACKAGE, "LICENSE"), "rb").read()
    assert manifest_of(copy)["checked_with"] == [version_of(python)]
    assert f"checked miniagents with Python {version_of(python)}" in done.stdout and "skipped" not in done.stdout
    out = run_app(python, dest, "import miniagents, json; print(json.dumps(miniagents.__file__))")
    assert json.loads(out) == str(copy / "__init__.py")
    assert os.listdir(scratch[0]) == [] and os.listdir(scratch[1]) == []


def test_the_manifest_says_what_the_copy_is(good_copy):
    manifest = manifest_of(good_copy / "miniagents")
    sources = py_files(good_copy / "miniagents")
    assert manifest == {
        "name": "miniagents", "version": miniagents.__version__, "source_digest": digest_of(sources),
        "py_files": len(sources), "shells": SHELLS, "left_out": [], "compiled": None, "zip": False,
        "checked_with": [THIS]}
    assert digest_of(sources) == digest_of(py_files(PACKAGE)), "the copy's source is the package's, unchanged"


def test_other_pythons_check_the_copy_too_and_are_recorded(tmp_path):
    others = [p for p in (pyenv_python("3.9"), pyenv_python("3.13")) if p]
    if not others:
        pytest.skip("neither Python 3.9 nor 3.13 is installed under pyenv")
    args = [x for python in others for x in ("--python", python)]
    done = vendor(tmp_path / "project", *args)
    assert done.returncode == 0, done.stderr
    versions = [THIS] + [version_of(p) for p in others]
    assert manifest_of(tmp_path / "project" / "miniagents")["checked_with"] == list(dict.fromkeys(versions))
    for version in versions:
        assert f"with Python {version}" in done.stdout


def test_a_python_older_than_the_package_fails_the_check_with_the_packages_reason(tmp_path):
    python = pyenv_python("3.8") or pyenv_python("3.7")
    if python is None:
        pytest.skip("no Python 3.7 or 3.8 under pyenv")
    done = vendor(tmp_path / "project", "--python", python)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"Python {version_of(python)}: import miniagents failed at miniagents/__init__.py:" in done.stderr
    assert "miniagents needs Python 3.9 or newer" in done.stderr
    assert "The copy stays where it is" in done.stderr
    assert manifest_of(tmp_path / "project" / "miniagents")["checked_with"] == []  # not checked: not recorded


def test_without_leaves_shell_folders_out(tmp_path):
    done = vendor(tmp_path / "a", "--without", "vendor")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "a" / "miniagents" / "vendor").exists()
    manifest = manifest_of(tmp_path / "a" / "miniagents")
    assert manifest["shells"] == [s for s in SHELLS if s != "vendor"] and manifest["left_out"] == ["vendor"]
    assert "left out: vendor" in done.stdout

    done = vendor(tmp_path / "b", "--without", "tracing", "--without", "upstream")
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "b" / "miniagents"
    assert not (copy / "tracing").exists() and not (copy / "upstream").exists()
    assert (copy / "models").is_dir() and (copy / "retry").is_dir()
    assert set(py_files(copy)) == {p for p in py_files(PACKAGE) if p.split("/")[0] not in ("tracing", "upstream")}
    manifest = manifest_of(copy)
    assert manifest["left_out"] == ["tracing", "upstream"]
    assert manifest["shells"] == [s for s in SHELLS if s not in ("tracing", "upstream")]


def test_a_copy_without_the_offline_model_imports_every_other_shell_and_says_what_needs_it(tmp_path):
    """The check plays answers back with a model of its own, and the shells that use the offline model (a recording
    replayed as a stream it was not made as, upstream's agents.testing) need it only when that is used."""
    done = vendor(tmp_path / "app", "--without", "testing")
    assert done.returncode == 0, done.stderr
    assert manifest_of(tmp_path / "app" / "miniagents")["left_out"] == ["testing"]
    assert "its shells import" in done.stdout
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import miniagents.recording, miniagents.upstream
        from miniagents import MissingFeatureError
        try:
            import miniagents.testing
        except MissingFeatureError as error:
            print(error)
        """)
    shown = subprocess.run([sys.executable, "-S", "-I", "-c", script, str(tmp_path / "app")],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "miniagents/testing/" in shown.stdout and "ScriptedModel" in shown.stdout


def test_a_kernel_only_copy_passes_its_check(tmp_path):
    done = vendor(tmp_path / "kernel", *[x for s in SHELLS for x in ("--without", s)])
    assert sorted(os.listdir(tmp_path / "kernel" / "miniagents" / "models"))  # the kernel's folder stays
    assert done.returncode == 0, done.stderr


def test_compile_adds_bytecode_for_this_python(tmp_path):
    done = vendor(tmp_path / "project", "--compile")
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "project" / "miniagents"
    tag = sys.implementation.cache_tag
    for path in py_files(copy):
        folder, name = os.path.split(path)
        assert (copy / folder / "__pycache__" / f"{name[:-3]}.{tag}.pyc").is_file(), path
    assert manifest_of(copy)["compiled"] == tag
    assert f"compiled for {tag} to " in done.stdout.splitlines()[0]  # what the copy is, said once
    plain = vendor(tmp_path / "plain")
    assert plain.returncode == 0 and "compiled for" not in plain.stdout


def test_zip_writes_a_zip_that_imports_from_sys_path(tmp_path, scratch):
    dest = tmp_path / "miniagents.zip"
    done = vendor(dest, "--zip", scratch=scratch)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(dest) as z:
        names = z.namelist()
        manifest = json.loads(z.read("miniagents/VENDORED.json"))
        assert all(info.compress_type == zipfile.ZIP_STORED for info in z.infolist())  # a Python without zlib reads it
        assert {info.date_time for info in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}  # no clock in the bytes
    assert {n.split("/")[0] for n in names} == {"miniagents"}, "the package folder is the zip's only top entry"
    assert {n[len("miniagents/"):] for n in names if n.endswith(".py")} == set(py_files(PACKAGE))
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    assert manifest["zip"] is True and manifest["checked_with"] == [THIS]
    out = run_app(sys.executable, dest, "import miniagents; print(miniagents.__file__)")
    assert out.strip() == os.path.join(str(dest), "miniagents", "__init__.py")
    first = dest.read_bytes()
    dest.unlink()
    assert vendor(dest, "--zip").returncode == 0
    assert dest.read_bytes() == first, "the same copy makes the same bytes"
    assert os.listdir(scratch[0]) == [] and os.listdir(scratch[1]) == []


def test_a_compiled_zip_holds_unchecked_bytecode_that_zipimport_uses(tmp_path):
    dest = tmp_path / "compiled.zip"
    done = vendor(dest, "--zip", "--compile")
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(dest) as z:
        names = set(z.namelist())
        sources = [n for n in names if n.endswith(".py")]
        assert all(n + "c" in names for n in sources), "a .pyc beside every .py (zipimport's place for them)"
        header = z.read("miniagents/handoffs.pyc")[:16]
        entries = {n: z.read(n) for n in names}
    assert int.from_bytes(header[4:8], "little") == 0b01, "hash-based and unchecked: no clock in the zip matters"
    # The proof that the bytecode is what runs: a copy of the zip whose handoffs.py source would fail if it were read.
    entries["miniagents/handoffs.py"] = b"raise RuntimeError('the source was compiled, not the .pyc used')\n"
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(tampered, "w") as z:
        for name in sorted(entries):
            z.writestr(name, entries[name])
    out = run_app(sys.executable, tampered, "import miniagents.handoffs; print(miniagents.handoffs.Handoff.__name__)")
    assert out.strip() == "Handoff"


@pytest.mark.skipif(os.name != "posix", reason="the stand-in Python is a shell script")
def test_a_python_without_sqlite3_skips_the_session_step_and_says_so(tmp_path, good_copy):
    stand_in = tmp_path / "python-without-sqlite3"  # runs the check's code with _sqlite3 blocked
    stand_in.write_text(f"""#!/bin/sh
[ "$1 $2 $3 $4" = "-S -I -B -c" ] || exit 99
code=$5; shift 5
exec {sys.executable} -S -I -B -c "import sys; sys.modules['_sqlite3'] = None; exec(sys.argv.pop(1))" "$code" "$@"
""")
    stand_in.chmod(0o755)
    done = vendor("--check", good_copy, "--python", stand_in)
    assert f"({stand_in}): it imports" in done.stdout, done.stderr
    assert "skipped: a SQLiteSession turn (this Python has no sqlite3)" in done.stdout
    assert (f"({stand_in}): it imports, its shells import, a scripted tool run and an approval resumed from JSON "
            "work; skipped: a SQLiteSession turn (this Python has no sqlite3)\n") in done.stdout, "no turn claimed"
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(os.name != "posix", reason="the stand-in Python is a shell script")
def test_a_python_without_zlib_passes_the_check_with_every_shell(tmp_path, good_copy):
    stand_in = tmp_path / "python-without-zlib"  # runs the check's code with zlib blocked (the MCP shell used it)
    stand_in.write_text(f"""#!/bin/sh
[ "$1 $2 $3 $4" = "-S -I -B -c" ] || exit 99
code=$5; shift 5
exec {sys.executable} -S -I -B -c "import sys; sys.modules['zlib'] = None; exec(sys.argv.pop(1))" "$code" "$@"
""")
    stand_in.chmod(0o755)
    done = vendor("--check", good_copy, "--python", stand_in)
    assert done.returncode == 0, done.stderr
    assert f"({stand_in}): it imports, its shells import, a scripted tool run" in done.stdout


def test_a_python_without_select_copies_and_says_why_it_cannot_check(tmp_path):
    """subprocess needs select: the command, run by such a Python, was a ModuleNotFoundError traceback, copying
    nothing. It copies, and its check fails naming the module (exit 1: the copy stays)."""
    code = "import sys, runpy; sys.modules['select'] = None; runpy.run_module('miniagents.vendor', run_name='__main__')"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-B", "-c", code, str(tmp_path / "dest")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "needs the standard-library module 'select'" in done.stderr, done.stderr
    assert manifest_of(tmp_path / "dest" / "miniagents")["name"] == "miniagents"


# --- checking a copy -------------------------------------------------------------------------------------------


def test_check_passes_on_a_good_copy_given_as_dest_or_as_its_package_folder(good_copy):
    before = tree(good_copy)
    for where in (good_copy, good_copy / "miniagents"):
        done = vendor("--check", where)
        assert done.returncode == 0, done.stderr
        assert f"checked miniagents with Python {THIS}" in done.stdout and "note:" not in done.stdout
        assert f"checked miniagents with Python {THIS} ({sys.executable}): it imports, its shells import, a scripted " \
               "tool run, an approval resumed from JSON and a SQLiteSession turn work\n" in done.stdout, \
               "the line says each step that ran"
    assert tree(good_copy) == before, "--check changes nothing"


def test_check_passes_on_a_zip(tmp_path):
    dest = tmp_path / "vendored.zip"
    assert vendor(dest, "--zip", "--compile").returncode == 0
    done = vendor("--check", dest)
    assert done.returncode == 0, done.stderr
    assert "checked miniagents" in done.stdout


def broken_copy(good_copy, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(good_copy, broken)
    return broken


def test_check_fails_with_the_reason_on_a_copy_missing_a_module(good_copy, tmp_path):
    broken = broken_copy(good_copy, tmp_path)
    (broken / "miniagents" / "run.py").unlink()
    done = vendor("--check", broken)
    assert done.returncode == 1, done.stdout
    assert f"the copy miniagents in {broken} is broken" in done.stderr
    assert "import miniagents failed at miniagents/__init__.py:" in done.stderr
    assert "No module named 'miniagents.run'" in done.stderr
    assert "are not those vendored" in done.stdout and "files are missing" in done.stdout


def test_check_of_a_zip_imports_each_shell_it_holds(good_copy, tmp_path):
    broken = broken_copy(good_copy, tmp_path)
    with open(broken / "miniagents" / "retry" / "__init__.py", "a", encoding="utf-8") as f:
        f.write("raise RuntimeError('a broken shell')\n")
    zipped = tmp_path / "broken.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for path in sorted((broken / "miniagents").rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(broken).as_posix())
    done = vendor("--check", zipped)
    assert done.returncode == 1, done.stdout
    assert "import the shell retry failed at miniagents/retry/__init__.py:" in done.stderr
    assert "RuntimeError: a broken shell" in done.stderr


def test_check_fails_with_the_reason_on_a_syntax_error_in_the_copy(good_copy, tmp_path):
    broken = broken_copy(good_copy, tmp_path)
    turn = broken / "miniagents" / "turn.py"
    lines = turn.read_text(encoding="utf-8").count("\n")
    with open(turn, "a", encoding="utf-8") as f:
        f.write("def planted(:\n")
    done = vendor("--check", broken)
    assert done.returncode == 1, done.stdout
    assert f"failed at miniagents/turn.py:{lines + 1}: SyntaxError" in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="the stand-in interpreter is a shell script")
def test_check_fails_with_the_reason_when_an_interpreter_cannot_run_it(good_copy, tmp_path):
    not_python = tmp_path / "not-python"
    not_python.write_text("#!/bin/sh\necho 'first' >&2\necho 'this is' >&2\necho 'no' >&2\necho 'Python' >&2\nexit 3\n")
    not_python.chmod(0o755)
    done = vendor("--check", good_copy, "--python", not_python, "--python", tmp_path / "missing")
    assert done.returncode == 1, done.stdout
    assert f"run the check failed: {not_python} exited 3: this is | no | Python\n" in done.stderr  # its last 3 lines
    assert f"start the Python failed: {tmp_path / 'missing'}:" in done.stderr
    assert f"checked miniagents with Python {THIS}" in done.stdout  # this Python's check still ran and passed


def test_check_says_where_the_copies_are_when_dest_holds_none(good_copy):
    done = vendor("--check", good_copy.parent)
    assert done.returncode == 1
    assert "holds no copy made by this command" in done.stderr
    assert f"VENDORED.json found in {os.path.join('project', 'miniagents')} (named miniagents)" in done.stderr


def test_check_of_a_file_that_is_no_zip_says_so(tmp_path):
    notes = tmp_path / "notes.zip"
    notes.write_text("not a zip", encoding="utf-8")
    done = vendor("--check", notes)
    assert done.returncode == 1 and f"{notes} is not a zip made by this command" in done.stderr


# --- a renamed copy --------------------------------------------------------------------------------------------


def renamed_copy(tmp_path):
    dest = tmp_path / "src"
    (dest / "miniagents").mkdir(parents=True)  # a decoy: the renamed copy must never import it
    (dest / "miniagents" / "__init__.py").write_text("raise ImportError('the decoy miniagents was imported')\n")
    (dest / "myproj").mkdir()
    (dest / "myproj" / "__init__.py").write_text("raise ImportError('the project, not the copy')\n")
    return dest, vendor(dest, "--as", "myproj._vendor.miniagents")


def test_a_renamed_copy_lands_under_its_dotted_name_with_its_parent_packages(tmp_path):
    dest, done = renamed_copy(tmp_path)
    assert done.returncode == 0, done.stderr
    copy = dest / "myproj" / "_vendor" / "miniagents"
    assert set(py_files(copy)) == set(py_files(PACKAGE))
    assert manifest_of(copy)["name"] == "myproj._vendor.miniagents"
    assert (dest / "myproj" / "_vendor" / "__init__.py").read_text() == ""
    assert "raise ImportError" in (dest / "myproj" / "__init__.py").read_text(), "the project's own is left alone"
    assert f"created {dest / 'myproj' / '_vendor' / '__init__.py'} (empty: a parent package of the copy)" in done.stdout
    assert "created " + str(dest / "myproj" / "__init__.py") not in done.stdout
    assert (dest / "miniagents" / "__init__.py").read_text().startswith("raise"), "the decoy is untouched"


def test_a_renamed_copy_passes_its_check_and_never_imports_the_decoy(tmp_path):
    dest, done = renamed_copy(tmp_path)
    assert done.returncode == 0, done.stderr
    again = vendor("--check", dest)
    assert again.returncode == 0, again.stderr


# --- refusals, and nothing written outside DEST -----------------------------------------------------------------


def test_a_dest_in_the_way_is_refused_and_left_as_it_was(tmp_path, good_copy):
    mine = tmp_path / "mine"
    (mine / "miniagents").mkdir(parents=True)
    (mine / "miniagents" / "notes.txt").write_text("my own")
    done = vendor(mine)
    assert done.returncode == 2 and "exists and is not empty" in done.stderr and "--replace" in done.stderr
    done = vendor(mine, "--replace")
    assert done.returncode == 2 and "is not a copy made by this command" in done.stderr
    assert os.listdir(mine / "miniagents") == ["notes.txt"]

    earlier = tmp_path / "earlier"
    shutil.copytree(good_copy, earlier)
    (earlier / "miniagents" / "stale.py").write_text("")
    assert vendor(earlier).returncode == 2
    done = vendor(earlier, "--replace")
    assert done.returncode == 0, done.stderr
    assert not (earlier / "miniagents" / "stale.py").exists()

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert vendor(a_file).returncode == 2 and a_file.read_text() == "x"
    archive = tmp_path / "existing.zip"
    archive.write_bytes(b"not a zip")
    done = vendor(archive, "--zip", "--replace")
    assert done.returncode == 2 and archive.read_bytes() == b"not a zip"


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
def test_a_replacement_that_cannot_be_written_whole_leaves_the_earlier_copy_as_it_was(tmp_path, good_copy,
                                                                                       monkeypatch, as_zip):
    """--replace removed the earlier copy first: a disk that filled up (or a Ctrl-C) mid-copy left a half copy with
    no VENDORED.json, which the next --replace refused, and no earlier copy."""
    from miniagents import vendor as command

    earlier = tmp_path / ("earlier.zip" if as_zip else "earlier")
    if as_zip:
        assert vendor(earlier, "--zip").returncode == 0
    else:
        shutil.copytree(good_copy, earlier)
    before = earlier.read_bytes() if as_zip else tree(earlier)
    copied = copies_running_out_of_room(monkeypatch)
    with pytest.raises(command.VendorError, match="No space left on device"):
        command.vendor(str(earlier), as_zip=as_zip, replace=True, say=lambda line: None)
    assert len(copied) == 6
    assert (earlier.read_bytes() if as_zip else tree(earlier)) == before
    assert sorted(os.listdir(tmp_path)) == [earlier.name]


@pytest.mark.parametrize("args,says", [
    (["--without", "models"], "not a shell of this package"),
    (["--without", "nosuch"], "not a shell of this package"),
    (["--as", "my-proj.vendor"], "want a dotted name of Python identifiers"),
    (["--as", "\ufb01le.miniagents"], "want a dotted name of Python identifiers"),  # read as `file`: no import finds it
    (["--as", "http"], "'http' is a module of the standard library"),
    (["--as", "xml.miniagents"], "'xml' is a module of the standard library"),
    (["--as", "types"], "'types' is a module of the standard library"),
    (["--as", "agents._vendor.miniagents"], "cannot run under the name `agents`"),
    (["--as", "agents"], "or leave the shell out with --without upstream"),
    (["--check", "--zip"], "--check takes only DEST, --as and --python"),
])
def test_bad_arguments_copy_nothing(tmp_path, args, says):
    done = vendor(tmp_path / "dest", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()


def test_a_standard_library_name_is_refused_on_python_3_9_too(tmp_path):
    """Python 3.9 has no sys.stdlib_module_names: the command looks in its standard library's folders."""
    python = python_or_skip("3.9")
    for name, says in (("email.miniagents", "'email' is a module"), ("_thread", "'_thread' is a module"),
                       ("select", "'select' is a module")):
        done = vendor(tmp_path / "dest", "--as", name, python=python)
        assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()


def test_a_copy_under_agents_without_the_upstream_shell_passes_its_check(tmp_path):
    done = vendor(tmp_path / "dest", "--as", "agents._vendor.miniagents", "--without", "upstream")
    assert done.returncode == 0, done.stderr
    assert "checked agents._vendor.miniagents with Python" in done.stdout


def test_a_dest_inside_the_package_or_the_package_itself_is_refused(tmp_path):
    done = vendor(os.path.join(PACKAGE, "copy_of_itself"))
    assert done.returncode == 2 and "inside) the package being copied" in done.stderr
    assert not os.path.exists(os.path.join(PACKAGE, "copy_of_itself"))
    # a copy running the command on itself, with --replace: never removed, however it is asked
    source = tmp_path / "app"
    assert vendor(source).returncode == 0
    before = tree(source)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-S", "-B", "-m", "miniagents.vendor", str(source), "--replace"],
                          cwd=str(source), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "the package being copied" in done.stderr, done.stderr
    assert tree(source) == before
    # DEST above the package, the name inside it: later copies would copy the copy
    done = subprocess.run([sys.executable, "-S", "-B", "-m", "miniagents.vendor", str(source), "--as",
                           "miniagents.sub"], cwd=str(source), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "the package being copied" in done.stderr, done.stderr
    assert tree(source) == before


def test_what_cannot_be_written_or_read_is_said_with_its_exit_status_not_a_traceback(tmp_path, good_copy):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "proj").write_text("")  # a file where a parent package's folder goes
    done = vendor(dest, "--as", "proj.miniagents")
    assert done.returncode == 2 and f"could not write the copy to {dest}: [Errno 17]" in done.stderr, done.stderr
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(good_copy / "miniagents", linked / "miniagents")
    done = vendor(linked, "--replace")
    assert done.returncode == 2 and "miniagents is a symbolic link" in done.stderr, done.stderr
    assert manifest_of(good_copy / "miniagents")["name"] == "miniagents", "what the link names is left alone"
    for body in ("{", "[1]"):  # a damaged VENDORED.json, in a folder, as the package folder, in a zip
        damaged = tmp_path / f"damaged{len(body)}"
        (damaged / "miniagents").mkdir(parents=True)
        (damaged / "miniagents" / "VENDORED.json").write_text(body)
        with zipfile.ZipFile(f"{damaged}.zip", "w") as z:
            z.writestr("miniagents/VENDORED.json", body)
        for where in (damaged, damaged / "miniagents", f"{damaged}.zip"):
            done = vendor("--check", where)
            assert done.returncode == 1 and "is not a VENDORED.json this command can read" in done.stderr, done.stderr


@pytest.mark.parametrize("args", [[], ["--zip", "--compile"], ["--as", "myproj._vendor.miniagents", "--compile"]],
                         ids=["folder", "zip", "renamed"])
def test_the_command_writes_nothing_outside_dest(tmp_path, scratch, args):
    package_before = tree(PACKAGE)
    dest = tmp_path / ("out.zip" if "--zip" in args else "out")
    done = vendor(dest, *args, scratch=scratch)
    assert done.returncode == 0, done.stderr
    assert tree(PACKAGE) == package_before, "the package it copies is unchanged (no __pycache__ either)"
    assert sorted(os.listdir(tmp_path)) == sorted(["out.zip" if "--zip" in args else "out", "work", "temp"])
    assert os.listdir(scratch[0]) == [] and os.listdir(scratch[1]) == [], "the working folder and TMPDIR stay empty"


def test_what_is_copied_leaves_out_caches_dot_files_a_left_out_shell_and_an_earlier_manifest(tmp_path):
    from miniagents import vendor as shell

    for path in ("__init__.py", "LICENSE", "a.pyc", ".DS_Store", "VENDORED.json", "__pycache__/__init__.cpython-311.pyc",
                 ".hidden/x.py", "kept/__init__.py", "kept/VENDORED.json", "gone/__init__.py", "models/__init__.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert shell._files(str(tmp_path), ["gone"]) == ["LICENSE", "__init__.py", "kept/VENDORED.json",
                                                    "kept/__init__.py", "models/__init__.py"]
    assert shell.shells(str(tmp_path)) == ["gone", "kept"]


def test_a_parent_packages_init_that_is_a_link_leading_nowhere_is_not_followed_out_of_dest(tmp_path):
    """The empty `__init__.py` made for a parent package was opened for writing through a dangling symbolic link:
    the command wrote a file where the link led, outside DEST."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out" / "myproj").mkdir(parents=True)
    os.symlink(elsewhere / "planted.py", tmp_path / "out" / "myproj" / "__init__.py")
    done = vendor(tmp_path / "out", "--as", "myproj.miniagents")
    assert done.returncode == 0, done.stderr
    assert os.listdir(elsewhere) == []
    assert "created" not in done.stdout
