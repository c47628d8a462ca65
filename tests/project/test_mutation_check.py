"""The mutation check still fits the code, and its mutant generator follows its written rules.

Curated mutants: each `old` text occurs exactly once in its file and the mutated file compiles; a failure names
the mutant to update in tests/mutation_check.py. Generated mutants (tests/mutation_generate.py): every one
compiles, ids are unique and survive cosmetic edits, the skip rules hold, and every entry of the equivalent-mutant
allow-list still names a generated mutant. (Running the mutants is `python tests/mutation_check.py [--generated]`.)
The generated mode reaches every module of miniagents/, shells included.

The check itself, run on a tiny fake repository (one module, one test file whose test starts child processes, one
of them in a session of its own, and hangs when a mutant makes `ready()` false): no process of the check is left
running after it exits, after a mutant's timeout (the test processes' group ended, SIGKILL for one that ignores
SIGTERM) and after the check itself is interrupted (SIGINT, SIGTERM); its summary names each survivor with its
file:line and mutation. A mutant's recorded killer runs first, and one that no longer kills it (or is gone) changes
no verdict; `--record-killers` keeps each killer and drops a survivor's.
"""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import zlib

import pytest

import mutation_check  # tests/ is on sys.path (tests/conftest.py's folder), as for openai_server
import mutation_generate


@pytest.mark.parametrize("mutant", mutation_check.MUTANTS, ids=lambda m: m.id)
def test_each_curated_mutant_applies_exactly_once_and_compiles(mutant):
    path = os.path.join(mutation_check.ROOT, mutant.file)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    hint = f"update the curated mutant {mutant.breaks!r} ({mutant.file}) in tests/mutation_check.py"
    assert text.count(mutant.old) == 1, f"its old text occurs {text.count(mutant.old)} times, want 1: {hint}"
    assert mutant.new != mutant.old, hint
    compile(mutation_check.mutate(text, mutant), path, "exec")
    for test in mutant.tests:
        assert os.path.isfile(os.path.join(mutation_check.ROOT, test)), f"{test} does not exist: {hint}"


def test_curated_mutant_descriptions_are_unique():
    ids = [m.id for m in mutation_check.MUTANTS]
    assert len(ids) == len(set(ids))


def test_a_curated_mutant_that_no_longer_matches_is_reported_by_name_and_file():
    stale = mutation_check.M("turn.py", "this text is not in turn.py", "x", "an example rule", "test_run")
    with pytest.raises(ValueError, match=r"'an example rule' in miniagents/turn.py.*occurs 0 times.*update"):
        mutation_check.mutate("print('hello')\n", stale)


# --- generated mutants ------------------------------------------------------------------------------------------

SAMPLE = '''
"""Module docstring."""
import logging
from typing import TYPE_CHECKING
from support import ROOT

if TYPE_CHECKING:
    import os

__all__ = ["f"]
logger = logging.getLogger("sample")


def f(items, limit: "int" = 3):
    """Docstring."""
    logger.warning("never mutated %s", limit)
    if limit > 0 and items:
        items.append(limit)
    return items[1:limit]


class C:
    def __repr__(self):
        return "C(" + str(1) + ")"
'''


def generate_sample(tmp_path, text=SAMPLE):
    (tmp_path / "sample.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return mutation_generate.generate(str(tmp_path), ["sample.py"])


def test_the_generator_makes_every_kind_of_mutant_and_skips_what_its_rules_skip(tmp_path):
    edits = generate_sample(tmp_path)
    by_kind = {}
    for e in edits:
        by_kind.setdefault(e.kind, []).append((e.old, e.new))
    assert by_kind["compare"] == [("limit > 0", "(limit <= 0)")]
    assert by_kind["boundary"] == [("limit > 0", "(limit >= 0)")]
    assert by_kind["boolop"] == [("limit > 0 and items", "(limit > 0 or items)")]
    assert by_kind["negate"] == [("limit > 0 and items", "(not (limit > 0 and items))")]
    assert by_kind["remove"] == [("items.append(limit)", "pass")]
    assert by_kind["return"] == [("items[1:limit]", "None")]
    assert sorted(by_kind["slice"]) == [("1:limit", "1 + 1:limit"), ("1:limit", "1:limit + 1")]
    assert ("3", "(4)") in by_kind["constant"] and ("0", "(1)") in by_kind["constant"]
    touched = " ".join(e.old for e in edits)
    for skipped in ("Docstring", "never mutated", "sample", "TYPE_CHECKING", "os", '"f"', "C(", '"int"'):
        assert skipped not in touched, f"{skipped!r} should not be mutated"


def test_generated_ids_survive_cosmetic_edits_and_line_moves(tmp_path):
    before = {e.id for e in generate_sample(tmp_path)}
    moved = SAMPLE.replace("def f(items", "# a comment\n\n\ndef f(items").replace("    if limit", "\n    if limit")
    after = {e.id for e in generate_sample(tmp_path, moved)}
    assert before == after


@pytest.fixture(scope="module")
def generated():
    return mutation_check.generated_mutants()


def test_every_generated_mutant_applies_has_a_unique_id_and_a_sample_compiles(generated):
    modules = set(mutation_generate.module_files())
    assert {m.file for m in generated} <= modules and "miniagents/turn.py" in {m.file for m in generated}
    ids = [m.id for m in generated]
    assert len(ids) == len(set(ids))
    texts = {}
    for m in generated:
        if m.file not in texts:
            with open(os.path.join(mutation_check.ROOT, m.file), encoding="utf-8") as f:
                texts[m.file] = f.read()
        mutated = mutation_check.mutate(texts[m.file], m)
        assert all(os.path.isfile(os.path.join(mutation_check.ROOT, t)) for t in m.tests)
        if zlib.crc32(m.id.encode()) % 20 == 0:  # all of them take seconds; the check compiles each one it runs
            compile(mutated, m.file, "exec")


def test_tests_of_the_sources_shape_are_left_out_of_mutant_runs():
    names = {os.path.basename(t) for t in mutation_check.all_test_files(mutation_check.ROOT)}
    assert "test_run.py" in names and "test_mutation_check.py" not in names and "test_readme_tables.py" not in names


def test_every_module_is_mapped_to_test_files_that_exist():
    test_files = mutation_check.all_test_files(mutation_check.ROOT)
    for module in mutation_generate.module_files():
        first = mutation_generate.tests_for(module, test_files)
        assert set(first) <= set(test_files)
    assert "tests/loop/test_tools.py" in mutation_generate.tests_for("miniagents/tool.py", test_files)
    assert "tests/state/test_session_runs.py" in mutation_generate.tests_for("miniagents/session.py", test_files)
    assert "tests/schemas/test_schema.py" in mutation_generate.tests_for("miniagents/schema.py", test_files)
    names = {os.path.splitext(os.path.basename(t))[0] for t in test_files}
    for module, extra in mutation_generate.EXTRA_TESTS.items():
        assert set(extra) <= names, f"EXTRA_TESTS[{module!r}] names a missing test module"


def test_every_equivalent_mutant_listed_still_exists_and_has_a_reason(generated):
    listed = mutation_check.load_equivalent()
    current = {m.id for m in generated}
    stale = sorted(set(listed) - current)
    assert stale == [], ("tests/mutation_equivalent.txt lists mutants the generator no longer makes (the code "
                         f"changed): re-review and update or remove them: {stale}")
    assert all(reason.strip() for reason in listed.values())


def test_generated_mode_reaches_every_module_shells_included(generated):
    package = os.path.join(mutation_check.ROOT, "miniagents")
    every = set()
    for folder, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        every |= {os.path.relpath(os.path.join(folder, f), mutation_check.ROOT).replace(os.sep, "/")
                  for f in files if f.endswith(".py")}
    assert set(mutation_generate.module_files()) == every
    shells = {d for d in os.listdir(package) if os.path.isfile(os.path.join(package, d, "__init__.py"))} - {"models"}
    with_mutants = {m.file.split("/")[1] for m in generated if m.file.count("/") == 2}
    assert shells <= with_mutants, f"shell folders without a generated mutant: {sorted(shells - with_mutants)}"


def test_a_curated_mutants_location_is_the_first_line_of_its_old_text():
    mutant = mutation_check.MUTANTS[0]
    where = mutation_check.location(mutant)
    file, line = where.rsplit(":", 1)
    with open(os.path.join(mutation_check.ROOT, file), encoding="utf-8") as f:
        text = f.read().splitlines()[int(line) - 1]
    assert file == mutant.file and text.strip() == mutant.old.strip().splitlines()[0].strip()


def test_a_process_a_test_starts_elsewhere_imports_the_mutated_copy_not_an_installed_package(tmp_path):
    """The check ran its test processes without PYTHONPATH: a process a test started in another folder (the MCP
    resume script) imported the installed package, which an editable install makes the unmutated repository, so
    such a test ran the real code for every mutant, or failed for every one where none is installed."""
    copy = tmp_path / "copy"
    (copy / "miniagents").mkdir(parents=True)
    (copy / "miniagents" / "__init__.py").write_text("")
    found = subprocess.run([sys.executable, "-c", "import miniagents; print(miniagents.__file__)"], cwd=tmp_path,
                           env=mutation_check.child_env(str(copy)), capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() == str(copy / "miniagents" / "__init__.py"), found.stderr


# --- the check itself, on a fake repository: nothing of it is left running -------------------------------------

FAKE_MODULE = """\
def ready():
    return True


def double(x):
    return x * 2


def unused(x):
    if x > 3:
        return 1
    return 0


def loads(fine=True):
    if not fine:
        raise ImportError("the package cannot load")


loads()
"""

FAKE_TEST = """\
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from miniagents import slow  # noqa: E402


def test_ready_and_double():
    sleep = [sys.executable, "-c", "import signal, sys, time; "
             "sys.argv[2] == 'stubborn' and signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
             os.environ["FAKE_MARKER"]]
    subprocess.Popen(sleep + ["plain"])  # in the test's process group
    subprocess.Popen(sleep + ["plain"], start_new_session=True)  # one that left it
    if os.environ.get("FAKE_STUBBORN"):
        subprocess.Popen(sleep + ["stubborn"])  # one that ignores SIGTERM
    time.sleep(0.5)  # the children are running
    with open(os.environ["FAKE_STARTED"], "a") as f:
        f.write("%d\\n" % os.getpid())
    while not slow.ready():  # the mutant `return False` hangs here: only the check's timeout ends it
        time.sleep(0.1)
    assert slow.double(2) == 4
"""

FAKE_CONFTEST = """\
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from miniagents import slow  # noqa: E402,F401  (as the real conftest imports the package)
"""


def _processes():
    """{pid: (command line, working folder)} of every live process this user can see."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
                found[int(name)] = (command, os.readlink(f"/proc/{name}/cwd"))
            except OSError:
                pass  # gone meanwhile, or not ours to read
    return found


class FakeCheck:
    """The mutation check run on a fake repository under `tmp_path`, in a session of its own (ended whole by
    `close`, whatever the test found); its children are found by `marker` (on their command lines) and by working
    folder (every copy the check makes is under `tmp_path`, its TMPDIR)."""

    def __init__(self, tmp_path, *args, stubborn=False, files=None):
        self.tmp_path, self.marker = str(tmp_path), f"fake-{uuid.uuid4().hex}"
        self.repo = repo = tmp_path / "repo"
        (repo / "miniagents").mkdir(parents=True)
        (repo / "tests").mkdir()
        (repo / "miniagents" / "__init__.py").write_text("", encoding="utf-8")
        (repo / "miniagents" / "slow.py").write_text(FAKE_MODULE, encoding="utf-8")
        (repo / "tests" / "test_slow.py").write_text(FAKE_TEST, encoding="utf-8")
        (repo / "tests" / "conftest.py").write_text(FAKE_CONFTEST, encoding="utf-8")
        for name, text in (files or {}).items():
            (repo / name).write_text(text, encoding="utf-8")
        (tmp_path / "tmp").mkdir()
        self.started = tmp_path / "started"
        env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), FAKE_MARKER=self.marker, FAKE_STARTED=str(self.started))
        if stubborn:
            env["FAKE_STUBBORN"] = "1"
        command = [sys.executable, os.path.join(mutation_check.ROOT, "tests", "mutation_check.py"),
                   "--root", str(repo), "--generated", "--no-baseline", *args]
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def finish(self, timeout=180):
        out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out.decode("utf-8", "replace")

    def wait_until_a_test_runs(self, timeout=120):
        deadline = time.monotonic() + timeout
        while not (self.started.exists() and self.started.read_text()):
            assert self.proc.poll() is None, self.finish()[1]
            assert time.monotonic() < deadline, "the fake test never started"
            time.sleep(0.1)

    def left_running(self):
        """What of the check is still running: processes with the marker, or working in a folder under tmp_path."""
        return {pid: what for pid, what in _processes().items()
                if self.marker in what[0] or what[1].startswith(self.tmp_path + os.sep)}

    def close(self):
        """Whatever the test found: end the check's session and every process it left (all carry the marker or
        work under tmp_path, so nothing else is touched)."""
        for target in [None] + sorted(self.left_running()):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL) if target is None else os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.poll() is None:
            self.proc.communicate(timeout=30)


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process table from /proc (Linux)")


@pytest.fixture
def fake_check(tmp_path):
    made = []

    def start(*args, **kw):
        folder = tmp_path / str(len(made))  # a folder of its own: a test may start a check again
        folder.mkdir()
        made.append(FakeCheck(folder, *args, **kw))
        return made[-1]

    yield start
    for check in made:
        check.close()


def _group_alive(group):
    """Members of a process group that are not zombies (a zombie is dead, waiting for init to reap it)."""
    alive = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            alive.append(int(name))
    return alive


def _gone(group, within=10.0):
    """Whether the process group is empty, its zombies reaped too, within `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


@needs_proc
def test_a_timed_out_mutant_has_its_whole_process_group_ended_and_said_so(fake_check):
    for timeout in (2, 10, 40):  # a loaded machine may take longer than 2 s to reach the test's hang: again, longer
        check = fake_check("--only", "ready::constant", "--timeout", str(timeout), stubborn=True)
        code, out = check.finish()
        if check.started.exists() and check.started.read_text():
            break
    else:
        raise AssertionError(f"the fake test never reached its hang within 40 s:\n{out}")
    assert code == 0, out  # caught, by the timeout
    line = next(line for line in out.splitlines() if line.startswith("TIMEOUT"))
    found = re.search(r"process group (\d+) ended \((\d+) processes, SIGKILL 5 s after SIGTERM\)", line)
    assert found, line  # the pytest and its three children; the stubborn one needed SIGKILL
    assert found.group(2) == "4", line
    group = int(found.group(1))
    assert _group_alive(group) == [], "a process of the timed-out mutant's group is still running"
    assert _gone(group), "the timed-out mutant's process group still exists (zombies init did not reap)"
    assert check.left_running() == {}
    assert "caught only by the timeout" in out and "miniagents/slow.py:2  True  ->  (False)" in out


@needs_proc
def test_the_summary_names_every_survivor_with_its_location_and_nothing_is_left(fake_check):
    check = fake_check("--only", "unused::compare", "--only", "double::return", "--timeout", "300")
    code, out = check.finish()
    assert code == 1, out  # a survivor
    summary = out.split("survivors (file:line  mutation", 1)[1]
    assert "miniagents/slow.py:10  x > 3  ->  (x <= 3)" in summary
    assert "[miniagents/slow.py::unused::compare::x > 3 -> (x <= 3)]" in summary
    assert "slow.py:6" not in summary  # the killed one
    assert out.count("what its tests left running: process group") == 2, out  # each run's children, ended
    assert check.left_running() == {}


@needs_proc
def test_a_mutant_that_stops_the_package_loading_is_caught_not_an_error_of_the_check(fake_check):
    check = fake_check("--only", "loads::constant::True", "--timeout", "300", "-v")
    code, out = check.finish()
    assert code == 0, out
    assert re.search(r"^KILLED +slow\.py:15  True  ->  \(False\)  \(.*by tests/conftest\.py \(cannot load\)$",
                     out, re.M), out
    assert "1/1 generated mutants killed" in out and check.left_running() == {}


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_check_ends_every_test_process_it_started(fake_check, signum):
    check = fake_check("--only", "ready::constant", "--timeout", "600")
    check.wait_until_a_test_runs()
    running = check.left_running()
    assert len([p for p, (command, _) in running.items() if check.marker in command]) == 2, running
    os.kill(check.proc.pid, signum)
    code, out = check.finish(timeout=120)
    assert code == 128 + signum, out
    assert re.search(rf"interrupted \({signal.Signals(signum).name}\): process group \d+ ended \(3 processes", out), out
    assert check.left_running() == {}


DOUBLE = "miniagents/slow.py::double::return::x * 2 -> None"
# Tests the check would not run first for slow.py (their name and imports do not say so): only a hint runs them first.
DOUBLE_TESTS = """\
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
slow = importlib.import_module("miniagents." + "slow")


def test_double_alone():
    assert slow.double(3) == 6


def test_passes_with_any_mutant():
    pass
"""


@needs_proc
@pytest.mark.parametrize("hint, killed_by", [
    ("tests/test_other.py::test_double_alone", "tests/test_other.py::test_double_alone"),
    ("tests/test_other.py::test_gone", "tests/test_slow.py::test_ready_and_double"),
    ("tests/test_gone.py::test_gone", "tests/test_slow.py::test_ready_and_double"),
    ("tests/test_other.py::test_passes_with_any_mutant", "tests/test_slow.py::test_ready_and_double"),
], ids=["kills", "test-gone", "file-gone", "no-longer-kills"])
def test_a_mutants_last_killer_runs_first_and_one_that_no_longer_kills_changes_no_verdict(fake_check, hint,
                                                                                            killed_by):
    killers = json.dumps({DOUBLE: hint})
    check = fake_check("--only", "double::return", "-v", files={"tests/test_other.py": DOUBLE_TESTS,
                                                                "tests/mutation_killers.json": killers})
    code, out = check.finish()
    assert code == 0, out
    assert re.search(rf"^KILLED +slow\.py:6 .*by {re.escape(killed_by)}$", out, re.M), out
    assert check.left_running() == {}


@needs_proc
def test_record_killers_keeps_each_mutants_killing_test_and_drops_a_survivors(fake_check):
    survivor = "miniagents/slow.py::unused::compare::x > 3 -> (x <= 3)"
    others = {survivor: "tests/test_slow.py::test_ready_and_double", "a mutant not run": "tests/test_x.py::test_y"}
    check = fake_check("--only", "double::return", "--only", "unused::compare", "--record-killers",
                       files={"tests/test_other.py": DOUBLE_TESTS, "tests/mutation_killers.json": json.dumps(others)})
    code, out = check.finish()
    assert code == 1, out  # the survivor
    written = json.loads((check.repo / "tests" / "mutation_killers.json").read_text(encoding="utf-8"))
    assert written == {DOUBLE: "tests/test_slow.py::test_ready_and_double",
                       "a mutant not run": "tests/test_x.py::test_y"}


@pytest.mark.parametrize("text", ['{\n"a": "t::x",\n<<<<<<< HEAD\n"b": "t::y"\n}\n', '["t::x"]', '{"a": 1}'],
                         ids=["merge-conflict", "no-object", "no-test-id"])
def test_a_killers_file_that_is_no_object_of_test_ids_stops_the_check_saying_which_file(tmp_path, text):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "mutation_killers.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="mutation_killers.json"):
        mutation_check.load_killers(str(tmp_path))
    check = subprocess.run([sys.executable, os.path.join(mutation_check.ROOT, "tests", "mutation_check.py"),
                            "--root", str(tmp_path), "--only", "run.py:", "--no-baseline"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 2 and "mutation_killers.json" in check.stderr, check.stderr


def test_every_recorded_killer_names_a_mutant_and_a_test_file_that_exist(generated):
    killers = mutation_check.load_killers(mutation_check.ROOT)
    stale = sorted(set(killers) - {m.id for m in mutation_check.MUTANTS + generated})
    assert stale == [], ("tests/mutation_killers.json names mutants that are gone or renamed: remove them, or run "
                         f"`python tests/mutation_check.py --record-killers`: {stale}")
    files = set(mutation_check.all_test_files(mutation_check.ROOT))
    assert {test.split("::")[0] for test in killers.values()} <= files


def test_a_shells_own_modules_run_the_shells_tests_first():
    test_files = mutation_check.all_test_files(mutation_check.ROOT)
    first = mutation_generate.tests_for
    assert "tests/project/test_vendor_command.py" in first("miniagents/vendor/__init__.py", test_files)
    assert "tests/project/test_vendor_command.py" in first("miniagents/vendor/__main__.py", test_files)
    assert "tests/loop/test_retry.py" in first("miniagents/retry/__init__.py", test_files)
    assert "tests/recording/test_replay.py" in first("miniagents/recording/__init__.py", test_files)
    assert "tests/loop/test_run.py" not in first("miniagents/retry/__init__.py", test_files)
    assert "tests/loop/test_run.py" in first("miniagents/__init__.py", test_files)  # the package's own: EXTRA_TESTS
    # a shell's other module that no test file names: its folder's tests, not the whole suite at once
    assert "tests/observability/test_tracing.py" in first("miniagents/tracing/scope.py", test_files)
    assert "tests/mcp/test_mcp_run.py" in first("miniagents/mcp/plugin.py", test_files)
    assert first("miniagents/upstream/runner.py", test_files) == (
        "tests/upstream/test_compat.py", "tests/upstream/test_runner.py", "tests/upstream/test_runner_children.py",
        "tests/upstream/test_upstream_behaviour.py")  # those that name it: only those
    assert all(first(module, test_files) for module in mutation_generate.module_files())
