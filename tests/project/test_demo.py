"""demo.py, the walkthrough: it runs offline from a bare copy, and its invariants catch a broken kernel.

The demo is run as a person runs it: `python -S demo.py` (no site-packages) from a temp copy of `demo.py` +
`miniagents/`, started from another directory, so it must find the package next to itself and need nothing
installed. To show that its invariants can fail, the same copy is made with one rule of the kernel broken
(a checked text edit) and the demo must say which invariant failed and exit non-zero.
"""
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
import demo  # noqa: E402

SUMMARY = re.compile(r"^invariants: (\d+)/(\d+) passed$", re.M)
HEADING = re.compile(r"^── Chapter (\d+) · ", re.M)
INVARIANT = re.compile(r"^  [✓✗] (ch\d+|all): ", re.M)


def bare_copy(tmp_path: Path, edits=()) -> Path:
    """demo.py + miniagents/ in a fresh folder; `edits` are (file under miniagents/, old, new), each `old`
    required exactly once (a moved anchor fails here, loudly, instead of testing nothing)."""
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    shutil.copy2(ROOT / "demo.py", repo / "demo.py")
    shutil.copytree(ROOT / "miniagents", repo / "miniagents", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for file, old, new in edits:
        path = repo / "miniagents" / file
        text = path.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise AssertionError(f"the anchor for this broken kernel occurs {text.count(old)} times in miniagents/"
                                 f"{file} (must be once): the code moved; update the edit in tests/project/test_demo.py:\n{old}")
        path.write_text(text.replace(old, new), encoding="utf-8")
    return repo


def run_demo(repo: Path, *args: str, env=None, timeout: float = 60) -> subprocess.CompletedProcess:
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "NO_COLOR", "MINIAGENTS_TRACE", "MINIAGENTS_DEBUG")
                   and not k.startswith("OPENAI_")}
    environment.update(env or {}, PYTHONIOENCODING="utf-8")
    proc = subprocess.run([sys.executable, "-S", str(repo / "demo.py"), *args], cwd=str(elsewhere),
                          env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    proc.out, proc.err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")
    return proc


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    return run_demo(bare_copy(tmp_path_factory.mktemp("demo")))


def test_the_demo_runs_offline_from_a_bare_copy_and_passes_its_invariants(full_run):
    out = full_run.out
    assert full_run.returncode == 0, f"exit {full_run.returncode}\n--- stdout\n{out}\n--- stderr\n{full_run.err}"
    assert full_run.err == ""
    found = SUMMARY.findall(out)
    assert len(found) == 1, out
    passed, total = map(int, found[0])
    assert passed == total >= 18, out
    assert total == len(INVARIANT.findall(out))  # the count is the lines shown, not a typed number
    assert [int(n) for n in HEADING.findall(out)] == list(range(1, len(demo.CHAPTERS) + 1))
    for title, _, _, _ in demo.CHAPTERS:
        assert f"· {title} " in out
    assert "\033[" not in out  # no colours when stdout is not a terminal
    assert max(len(line) for line in out.splitlines()) <= demo.WIDTH


def test_each_invariant_is_checked_right_after_its_own_chapter(full_run):
    out = full_run.out
    chapters = [(m.start(), int(m.group(1))) for m in HEADING.finditer(out)] + [(out.index("── The whole"), None)]
    for (start, number), (end, _) in zip(chapters, chapters[1:]):
        labels = INVARIANT.findall(out[start:end])
        assert labels and set(labels) == {f"ch{number}"}, (number, labels)
    assert set(INVARIANT.findall(out[chapters[-1][0]:])) == {"all"}


def test_the_last_chapter_names_the_four_outcomes_where_the_source_decides_them(tmp_path):
    """The locations are read from the source: shift turn.py by three lines and the printed lines follow."""
    normal = run_demo(bare_copy(tmp_path / "a"), "--chapter", str(len(demo.CHAPTERS)))
    shifted = run_demo(bare_copy(tmp_path / "b", [("turn.py", '"""One turn, whole', '\n\n\n"""One turn, whole')]),
                       "--chapter", str(len(demo.CHAPTERS)))
    assert normal.returncode == shifted.returncode == 0, normal.out + shifted.out
    for name in ("NextStepRunAgain", "NextStepHandoff", "NextStepFinalOutput", "NextStepInterruption"):
        assert name in normal.out
    lines = re.findall(r"turn\.py decide_next_step \(lines? ([\d, ]+)\)", normal.out)
    moved = re.findall(r"turn\.py decide_next_step \(lines? ([\d, ]+)\)", shifted.out)
    assert len(lines) == 4 and [[int(n) + 3 for n in x.split(", ")] for x in lines] == \
        [[int(n) for n in x.split(", ")] for x in moved]


def line_of(function, text: str) -> int:
    """The line of demo.py where `text` first occurs inside `function`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(n for n, line in enumerate(lines) if text in line)


# Each broken kernel: (what is broken, the edit, the invariant the demo must report as failed).
BROKEN_KERNELS = {
    "approval never pauses": (
        [("turn.py", "    flag = tool.needs_approval\n", "    flag = False\n")], "✗ ch6: "),
    "session never saves": (
        [("run.py", "    if run.session is None:\n        return\n    if once is not None",
          "    if True:\n        return\n    if once is not None")], "✗ ch7: run 2's first request carried run 1's"),
    "structured output unparsed": (
        [("turn.py", "return NextStepFinalOutput(setup.output.validate_json(text))", "return NextStepFinalOutput(text)")],
        "✗ ch3: final_output is a DeliveryAnswer"),
    "outputs swapped between calls": (
        [("turn.py", "    return {call.call_id: value for call, _, value in outcomes}",
          "    return dict(zip([c.call_id for c, _, _ in outcomes], [v for _, _, v in outcomes][::-1]))")],
        "✗ ch5: each output belongs to its call"),
    "handoff ignored": (
        [("turn.py", "    if settled.handoff is not None:\n        return NextStepHandoff(",
          "    if False:\n        return NextStepHandoff(")],
        f"✗ ch4: the chapter ran to its end (it raised UnexpectedModelCall at demo.py line "
        f"{line_of(demo.handoff, 'Runner.run_sync(triage')}: Unexpected"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_KERNELS))
def test_the_demo_catches_a_broken_kernel(tmp_path, broken):
    edits, failed_line = BROKEN_KERNELS[broken]
    proc = run_demo(bare_copy(tmp_path, edits))
    assert proc.returncode == 1, f"{broken}: the demo passed\n{proc.out}\n{proc.err}"
    assert failed_line in " ".join(proc.out.split()), f"{broken}: expected {failed_line!r}\n{proc.out}"
    passed, total = map(int, SUMMARY.findall(proc.out)[0])
    assert passed < total


def test_a_crashing_chapter_is_a_failed_invariant_with_its_reason(monkeypatch):
    def explodes(desk):
        raise KeyError("no such order")

    monkeypatch.setattr(demo, "CHAPTERS", [("Boom", (), explodes, False)] + demo.CHAPTERS[:1])
    out = io.StringIO()
    with redirect_stdout(out):
        status = demo.main(["--no-color"])
    text = " ".join(out.getvalue().split())  # a long invariant line wraps
    assert status == 1
    assert "✗ ch1: the chapter ran to its end (it raised KeyError: 'no such order')" in text, text
    assert "✓ ch2: " in text and "invariants: " in text  # the other chapters still ran


def test_chapter_selects_chapters_and_quiet_prints_only_the_invariants(tmp_path):
    repo = bare_copy(tmp_path)
    one = run_demo(repo, "--chapter", "3", "--chapter", "1")
    assert one.returncode == 0, one.out
    assert HEADING.findall(one.out) == ["1", "3"]
    assert set(INVARIANT.findall(one.out)) == {"ch1", "ch3", "all"}
    quiet = run_demo(repo, "--quiet", "--chapter", "6")
    lines = quiet.out.splitlines()
    assert quiet.returncode == 0 and lines, quiet.out
    assert all(INVARIANT.match(line) or line.startswith("      ") for line in lines[:-1]), quiet.out
    assert SUMMARY.match(lines[-1])
    wrong = run_demo(repo, "--chapter", str(len(demo.CHAPTERS) + 1))
    assert wrong.returncode == 2 and f"the chapters are 1-{len(demo.CHAPTERS)}" in wrong.err


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colours_only_on_a_terminal_and_never_with_no_color(tmp_path):
    import pty

    repo = bare_copy(tmp_path)

    def on_a_terminal(*args):
        leader, follower = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        proc = subprocess.Popen([sys.executable, "-S", str(repo / "demo.py"), "--chapter", "1", *args],
                                stdout=follower, stderr=subprocess.PIPE, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed (Linux raises EIO)
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        assert proc.wait(timeout=60) == 0
        return b"".join(chunks).decode("utf-8")

    assert "\033[32m" in on_a_terminal()
    assert "\033[" not in on_a_terminal("--no-color")


def test_the_trace_of_the_walkthrough_reads_back_as_a_tree(tmp_path):
    """--trace FILE: every run of the chapter, the fresh process's resume included, is in the file."""
    trace = tmp_path / "walkthrough.jsonl"
    proc = run_demo(bare_copy(tmp_path), "--chapter", "6", "--trace", str(trace))
    assert proc.returncode == 0, proc.out + proc.err
    assert f"python -m miniagents.trace {trace}" in proc.out
    tree = subprocess.run([sys.executable, "-m", "miniagents.trace", str(trace)], cwd=str(ROOT),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    text = tree.stdout.decode("utf-8")
    assert tree.returncode == 0, tree.stderr
    assert text.count("trace 'Help desk walkthrough'") == 3  # paused, resumed elsewhere, rejected here
    assert "approval issue_refund (call call_2)" in text and "pending" in text and "approved" in text
    assert re.search(r"tool issue_refund\(.*\) .*-> Refunded 24\.00 EUR", text)


# --- --live -------------------------------------------------------------------------------------------

def test_live_help_names_the_environment_and_the_model_flag(tmp_path):
    proc = run_demo(bare_copy(tmp_path), "--help")
    assert proc.returncode == 0
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_DEFAULT_MODEL", "--model"):
        assert name in proc.out
    assert "needs the HTTP adapters" not in (ROOT / "demo.py").read_text(encoding="utf-8")


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_live_against_no_server_prints_one_line_with_the_next_step(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_demo(bare_copy(tmp_path), "--live", "--model", "llama3.2",
                    env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x"})
    assert proc.returncode == 2
    assert "Traceback" not in proc.err + proc.out
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "Next: start the server" in lines[0], proc.err


def test_live_http_errors_say_what_to_check(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_server import OpenAITestServer

    server = OpenAITestServer()
    try:
        server.reply({"error": {"message": "model 'nope' not found", "type": "invalid_request_error"}}, status=404)
        proc = run_demo(bare_copy(tmp_path), "--live", "--model", "nope",
                        env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "x"})
    finally:
        server.close()
    assert proc.returncode == 2 and "Traceback" not in proc.err
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1 and "HTTP 404" in lines[0] and "end in /v1" in lines[0] and "--model" in lines[0]


def test_live_reports_the_models_choices_and_asserts_the_kernels_rules(tmp_path):
    """A model that answers instead of calling the tool: reported, not failed; the run still passes."""
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_server import OpenAITestServer, chat_completion

    server = OpenAITestServer()
    try:
        server.reply(chat_completion("We're open 9 to 5."))
        server.reply(chat_completion("I think it is on its way."))  # chapter 2: no tool call
        proc = run_demo(bare_copy(tmp_path), "--live", "--chapter", "1", "--chapter", "2", "--model", "tiny",
                        env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "x"})
    finally:
        server.close()
    assert proc.returncode == 0, proc.out + proc.err
    assert "✓ ch1: a response with no tool calls is the final output" in proc.out
    assert "· ch2: the model called get_order_status" in proc.out and "reported, not asserted" in proc.out
    assert [r["body"]["model"] for r in server.requests] == ["tiny", "tiny"]


# --- the package on a Python it does not support ---------------------------------------------------------

def pyenv_python(version: str):
    """The newest installed patch release of Python `version` (e.g. "3.8") under pyenv, or None."""
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, timeout=30).stdout.decode().strip()
    found = sorted(Path(root or Path.home() / ".pyenv").glob(f"versions/{version}.*/bin/python3"),
                   key=lambda path: [int(n) for n in re.findall(r"\d+", path.parent.parent.name)])
    return found[-1] if found else None


DEFINE_A_TOOL = """
import json, sys
try:
    from miniagents import function_tool

    @function_tool
    def get_weather(city: str) -> str:
        '''Get the weather for a city.'''
        return city
    said = {"tool": get_weather.name}
except ImportError as error:
    said = {"error": str(error)}
said["loaded"] = sorted(name for name in sys.modules if name.startswith("miniagents."))
print(json.dumps(said))
"""


def on_python(version: str, tmp_path: Path) -> dict:
    """What a copy of the package says when Python `version` imports it and defines a tool."""
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed under pyenv")
    repo = bare_copy(tmp_path)
    proc = subprocess.run([str(python), "-S", "-E", "-c", DEFINE_A_TOOL], cwd=str(repo),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return dict(json.loads(proc.stdout), python=str(python))


def test_python_3_8_is_told_which_python_is_needed_before_anything_else_loads(tmp_path):
    said = on_python("3.8", tmp_path)
    version = Path(said["python"]).parent.parent.name  # pyenv's folder is named after the release: 3.8.18
    assert said["error"] == f"miniagents needs Python 3.9 or newer; this is Python {version} ({said['python']})"
    assert said["loaded"] == []  # the check is the package's first statement: no module of it was imported


def test_python_3_9_imports_the_package_and_defines_a_tool(tmp_path):
    said = on_python("3.9", tmp_path)
    assert said.get("tool") == "get_weather", said
