"""`python -m miniagents.vendor`: a copy appears whole or not at all (miniagents/vendor/__init__.py).

A fresh copy killed midway (SIGKILL) left a half copy without its VENDORED.json, which `--replace` then refused,
telling the user to remove it by hand. The command now writes a copy beside its place and renames it into place:
- each command is killed at generated moments once the copy shows (the module offers no hook to slow it): what it
  leaves is no copy or a whole one (a VENDORED.json that reads, the .py files its digest says), a folder or a zip,
  the next run works, and what a killed run left beside the copy is no name an import finds;
- two commands copying to one place at once (fresh, and with --replace) leave one whole copy and nothing beside it;
- a fresh copy that cannot be written whole (no room) leaves nothing.
"""
import json
import os
import random
import subprocess
import sys
import time
import zipfile

import pytest

from support import ROOT, copies_running_out_of_room
from test_vendor_command import digest_of, manifest_of, py_files, run_app, vendor

ENV = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}


def test_a_fresh_copy_that_cannot_be_written_whole_leaves_nothing(tmp_path, monkeypatch):
    from miniagents import vendor as command

    copied = copies_running_out_of_room(monkeypatch)
    with pytest.raises(command.VendorError, match="No space left on device"):
        command.vendor(str(tmp_path / "out"), say=lambda line: None)
    assert len(copied) == 6 and os.listdir(tmp_path / "out") == []


def whole_or_absent(dest, as_zip):
    """The copy at `dest` (a folder's `miniagents`, or a zip) is absent, or whole: a VENDORED.json that reads, and
    the .py files its digest says. Returns whether it is there."""
    if as_zip:
        if not os.path.exists(dest):
            return False
        with zipfile.ZipFile(dest) as z:  # a half zip: BadZipFile
            manifest = json.loads(z.read("miniagents/VENDORED.json"))
            sources = {n[len("miniagents/"):]: z.read(n) for n in z.namelist() if n.endswith(".py")}
    else:
        if not os.path.exists(dest / "miniagents"):
            return False
        manifest, sources = manifest_of(dest / "miniagents"), py_files(dest / "miniagents")
    assert digest_of(sources) == manifest["source_digest"] and len(sources) == manifest["py_files"]
    return True


def entries(folder):
    return set(os.listdir(folder)) if os.path.isdir(folder) else set()


def started(process, folder, before):
    """Wait until something new shows in `folder` (the copy, or what it writes beside its place), or the command
    ended. Polled: the command runs in another process and offers no hook to wait on."""
    while process.poll() is None and not entries(folder) - before:
        time.sleep(0.001)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
def test_a_copy_killed_at_any_moment_is_whole_or_absent_and_the_next_run_goes_on(tmp_path, as_zip):
    """Each command is killed once the copy shows, after a generated delay (the first two at once, in the middle of
    writing it); the next run (--replace where a copy is there) works."""
    dest = tmp_path / ("out.zip" if as_zip else "out")
    folder = dest.parent if as_zip else dest
    moments = random.Random(31).sample([i / 100 for i in range(60)], 6)  # writing a copy takes about 0.1-0.5 s
    for delay in [0.0, 0.0, *moments]:
        there, before = whole_or_absent(dest, as_zip), entries(folder)
        args = [*(["--zip"] if as_zip else []), *(["--replace"] if there else [])]
        process = subprocess.Popen([sys.executable, "-B", "-m", "miniagents.vendor", str(dest), *args], env=ENV,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
        started(process, folder, before)
        time.sleep(delay)  # the generated moment, after the copy showed
        process.kill()
        process.wait()
        whole_or_absent(dest, as_zip)
    done = vendor(dest, *(["--zip"] if as_zip else []), *(["--replace"] if whole_or_absent(dest, as_zip) else []))
    assert done.returncode == 0, done.stderr
    assert whole_or_absent(dest, as_zip)
    imported = run_app(sys.executable, dest, "import miniagents; print(miniagents.__file__)").strip()
    assert imported == os.path.join(str(dest), "miniagents", "__init__.py")
    left = [n for n in os.listdir(folder) if n not in (dest.name, "miniagents")]
    assert not [n for n in left if n.isidentifier()], left


@pytest.mark.parametrize("replace", [False, True], ids=["fresh", "--replace"])
def test_two_commands_copying_to_one_place_at_once_leave_one_whole_copy(tmp_path, replace):
    dest = tmp_path / "out"
    if replace:
        assert vendor(dest).returncode == 0
    command = [sys.executable, "-B", "-m", "miniagents.vendor", str(dest), *(["--replace"] if replace else [])]
    both = [subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
            for _ in range(2)]
    done = [(p.wait(timeout=300), p.stderr.read()) for p in both]
    for p in both:
        p.stdout.close()
        p.stderr.close()
    assert whole_or_absent(dest, False) and os.listdir(dest) == ["miniagents"], os.listdir(dest)
    assert 0 in [code for code, _ in done], done
    for code, said in done:  # the other one made a copy too (one after the other), or was refused, saying why
        assert code == 0 or code == 2 and ("exists and is not empty" in said or "another run" in said
                                           or "could not write the copy" in said), said
