"""demo.py, the walkthrough: it runs offline from a bare copy, and its invariants catch a broken kernel.

The demo is run as a person runs it: `python -S demo.py` (no site-packages) from a temp copy of `demo.py` +
`miniagents/`, started from another directory, so it must find the package next to itself and need nothing
installed. To show that its invariants can fail, the same copy is made with one rule of the kernel broken
(a checked text edit) and the demo must say which invariant failed and exit non-zero. `--live` runs against
tests/openai_server.py; `--live --record` records it there, and `--replay` plays it back with every socket
refused (NETWORK_CLOSED).
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
LIVE = ["1", "2", "3", "4", "5", "7", "8", "9", "10", "12", "14"]  # the chapters --live plays
CALLS = 12  # the model calls of the live walkthrough when every answer is prose (ch3, ch7 and ch9 twice)
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


# Runs the script named first on the command line with no socket able to connect (as tests/recording/ does
# in-process): what runs under it is offline, or fails saying "the network is closed in this test".
NETWORK_CLOSED = """
import runpy, socket, sys

def refuse(*args, **kwargs):
    raise OSError("the network is closed in this test")

socket.socket.connect = socket.socket.connect_ex = socket.create_connection = refuse
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_demo(repo: Path, *args: str, env=None, timeout: float = 60,
             offline: bool = False) -> subprocess.CompletedProcess:
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "NO_COLOR", "MINIAGENTS_TRACE", "MINIAGENTS_DEBUG")
                   and not k.startswith("OPENAI_")}
    environment.update(env or {}, PYTHONIOENCODING="utf-8")
    guard = ["-c", NETWORK_CLOSED] if offline else []
    proc = subprocess.run([sys.executable, "-S", *guard, str(repo / "demo.py"), *args], cwd=str(elsewhere),
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
    shifted = run_demo(bare_copy(tmp_path / "b", [("turn.py", '"""One turn: ', '\n\n\n"""One turn: ')]),
                       "--chapter", str(len(demo.CHAPTERS)))
    assert normal.returncode == shifted.returncode == 0, normal.out + shifted.out
    for name in ("NextStepRunAgain", "NextStepHandoff", "NextStepFinalOutput", "NextStepInterruption"):
        assert name in normal.out
    where = r"turn\.py (\w+) \(lines? ([\d, ]+)\)"
    lines = re.findall(where, " ".join(normal.out.split()))  # a long line wraps
    moved = re.findall(where, " ".join(shifted.out.split()))
    assert len(lines) >= 4 and [(f, [int(n) + 3 for n in x.split(", ")]) for f, x in lines] == \
        [(f, [int(n) for n in x.split(", ")]) for f, x in moved]


def line_of(function, text: str) -> int:
    """The line of demo.py where `text` first occurs inside `function`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(n for n, line in enumerate(lines) if text in line)


# Each broken kernel: (what is broken, the edit, the invariant the demo must report as failed).
BROKEN_KERNELS = {
    "approval never pauses": (
        [("turn.py", "    flag = tool.needs_approval\n", "    flag = False\n")], "✗ ch6: "),
    "session never saves": (
        [("steps.py", "    if run.session is None:\n        return\n    if once is not None",
          "    if True:\n        return\n    if once is not None")], "✗ ch7: run 2's first request carried run 1's"),
    "structured output unparsed": (
        [("turn.py", "return NextStepFinalOutput(turn.setup.output.validate_json(text))",
          "return NextStepFinalOutput(text)")],
        "✗ ch3: final_output is a DeliveryAnswer"),
    "outputs swapped between calls": (
        [("turn.py", "    ran = [call for call in to_run if",
          "    for call, output in zip(to_run, [c.output for c in to_run][::-1]):\n        call.output = output\n"
          "    ran = [call for call in to_run if")],
        "✗ ch5: each output belongs to its call"),
    "replay never compares": (
        [("recording/replay.py", "                if difference is not None:\n",
          "                if False:\n")],
        f"✗ ch{demo.number_of(demo.replayed)}: a changed question raised ReplayMismatch naming request 1"),
    "handoff ignored": (
        [("turn.py", "    elif handoff is not None:\n        turn.next_step = NextStepHandoff(",
          "    elif False:\n        turn.next_step = NextStepHandoff(")],
        f"✗ ch4: the chapter ran to its end (it raised UnexpectedModelCall at demo.py line "
        f"{line_of(demo.handoff, 'Runner.run_sync(triage')}: Unexpected"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_KERNELS))
def test_the_demo_catches_a_broken_kernel(tmp_path, broken):
    edits, failed_line = BROKEN_KERNELS[broken]
    proc = run_demo(bare_copy(tmp_path, edits))
    failed = sorted(set(re.findall(r"^  ✗ (ch\d+|all): ", proc.out, re.M)))
    assert failed and proc.returncode == len(failed), f"{broken}: exit {proc.returncode}\n{proc.out}\n{proc.err}"
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


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pipe whose reader is gone")
@pytest.mark.parametrize("args", [["--quiet"], []])
def test_a_closed_stdout_ends_the_walkthrough_quietly(tmp_path, args):
    """`python demo.py --quiet | head` once ended in a BrokenPipeError traceback. The reader here is gone
    before the demo writes its first line, so the write that fails is the same on every run."""
    repo = bare_copy(tmp_path)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = subprocess.run([sys.executable, "-S", str(repo / "demo.py"), *args], stdout=writer,
                              stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(writer)
    assert proc.stderr.decode("utf-8", "replace") == ""
    assert proc.returncode == 141  # as a shell reports a program that SIGPIPE ended


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
    assert f"python -m miniagents.tracing {trace}" in proc.out
    tree = subprocess.run([sys.executable, "-m", "miniagents.tracing", str(trace)], cwd=str(ROOT),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    text = tree.stdout.decode("utf-8")
    assert tree.returncode == 0, tree.stderr
    assert text.count("trace 'Help desk walkthrough'") == 3  # paused, resumed elsewhere, rejected here
    assert "approval issue_refund (call call_2)" in text and "pending" in text and "approved" in text
    assert re.search(r"tool issue_refund\(.*\) .*-> Refunded 24\.00 EUR", text)


# --- --live -------------------------------------------------------------------------------------------

def test_a_trace_file_that_cannot_be_written_is_a_command_line_error_before_any_chapter(tmp_path):
    """It was each chapter failing deep in its first run, and "trace appended to" at the end."""
    repo = bare_copy(tmp_path)
    for path, why in ((tmp_path / "no-such-folder" / "run.jsonl", "No such file or directory"),
                      (tmp_path, "Is a directory")):
        proc = run_demo(repo, "--chapter", "1", "--trace", str(path))
        assert proc.returncode == 2 and proc.out == "", proc.out + proc.err
        assert proc.err.splitlines()[-1] == f"demo.py: error: --trace: cannot open the trace file {str(path)!r} " \
                                             f"for appending: {why}", proc.err


def test_live_help_names_the_environment_the_model_flag_and_the_exit_status(tmp_path):
    proc = run_demo(bare_copy(tmp_path), "--help")
    assert proc.returncode == 0
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_DEFAULT_MODEL", "--model"):
        assert name in proc.out
    said = " ".join(proc.out.split())
    assert "Exit status: 0 when every chapter ran to its end and every rule it asserts held; otherwise the number " \
           "of chapters that did not" in said
    assert "needs the HTTP adapters" not in (ROOT / "demo.py").read_text(encoding="utf-8")


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_live_against_no_server_says_what_to_check_in_one_line_and_goes_on(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_demo(bare_copy(tmp_path), "--live", "--model", "llama3.2", "--chapter", "1", "--chapter", "10",
                    env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x"})
    assert proc.returncode == 1, proc.out + proc.err  # one chapter could not run
    assert "Traceback" not in proc.err + proc.out
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("live: chapter 1 could not run: "), proc.err
    assert url in lines[0] and "Next: start the server" in lines[0]
    assert "✓ ch10: the tripwire fired" in proc.out  # the walkthrough went on
    assert "did not run to their end or broke a rule: chapter 1 (exit status 1)\n" in proc.out


def live_against(server, tmp_path, *args: str) -> subprocess.CompletedProcess:
    return run_demo(bare_copy(tmp_path), "--live", "--model", "tiny", *args,
                    env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "x"})


@pytest.fixture
def server():
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_server import OpenAITestServer

    running = OpenAITestServer()
    yield running
    running.close()


def test_live_http_errors_say_what_to_check_for_each_chapter(server, tmp_path):
    server.judge = lambda body: (404, {"error": {"message": "model 'tiny' not found", "type": "invalid_request_error"}})
    proc = live_against(server, tmp_path, "--chapter", "1", "--chapter", "2")
    assert proc.returncode == 2 and "Traceback" not in proc.err, proc.out + proc.err  # two chapters could not run
    lines = proc.err.strip().splitlines()
    assert [line.split(" could not run: ")[0] for line in lines] == ["live: chapter 1", "live: chapter 2"], proc.err
    for line in lines:
        assert "HTTP 404" in line and "end in /v1" in line and "--model" in line


def test_live_a_web_page_at_the_base_url_is_named_as_such(server, tmp_path):
    server.reply(raw="<html><body>Open WebUI</body></html>", content_type="text/html")
    proc = live_against(server, tmp_path, "--chapter", "1")
    assert proc.returncode == 1, proc.out + proc.err
    assert "HTTP 200" in proc.err and "Open WebUI" in proc.err and "not as an OpenAI-compatible API" in proc.err, proc.err


def test_live_a_chapter_the_server_fails_is_one_line_and_the_walkthrough_goes_on(server, tmp_path):
    """llama-cpp-python with a tiny model answered chapter 3's structured-output request with an HTTP 500;
    the live walkthrough used to stop there."""
    from openai_server import prose

    failure = {"error": {"message": "grammar: unsupported schema", "type": "internal_server_error"}}
    server.judge = lambda body: (500, failure) if "response_format" in body else None
    server.otherwise = prose("We're open 9 to 5.")
    proc = live_against(server, tmp_path)
    assert proc.returncode == 1, proc.out + proc.err  # the number of chapters that could not run
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1, proc.err
    assert lines[0].startswith("live: chapter 3 could not run: ") and "HTTP 500" in lines[0], lines[0]
    assert "unsupported schema" in lines[0] and "its log says why" in lines[0]
    assert "structured output (a strict JSON schema as `response_format`)" in lines[0]
    assert HEADING.findall(proc.out) == LIVE
    assert "✓ ch1: " in proc.out and "· ch4: the handoff switched agents" in proc.out and "✓ ch10: " in proc.out
    assert "did not run to their end or broke a rule: chapter 3 (exit status 1)\n" in proc.out
    assert sum("response_format" in body for body in server.bodies) == 3  # tried 3 times (retried), then given up


def test_live_a_model_that_never_calls_a_tool_nor_answers_json_is_reported_and_passes(server, tmp_path):
    """Its choices are reported; the kernel's rules of every chapter are still checked, and all ran."""
    from openai_server import prose

    server.otherwise = prose("Hello! How can I help?")
    proc = live_against(server, tmp_path)
    assert proc.returncode == 0, proc.out + proc.err
    assert proc.err == "" and len(server.requests) == CALLS
    out = " ".join(proc.out.split())
    assert "✓ ch3: the model was sent a strict schema" in out and "it did not fit again (InvalidFinalOutput)" in out
    for line in ("· ch2: the model called get_order_status", "· ch3: final_output is a DeliveryAnswer",
                 "· ch4: the handoff switched agents"):
        assert re.search(re.escape(line) + r"[^·✓✗]*: no \(reported, not asserted", out), line
    assert "did not run to their end" not in out


def test_live_a_model_answer_that_ends_the_run_is_reported_and_counted(server, tmp_path):
    server.reply({"id": "chatcmpl-1", "object": "chat.completion", "choices": []})
    proc = live_against(server, tmp_path, "--chapter", "1", "--chapter", "10")
    assert proc.returncode == 1, proc.out + proc.err
    out = " ".join(proc.out.split())
    assert "· ch1: the chapter ran to its end (it raised ModelBehaviorError" in out and "the model's choice" in out
    assert "✓ ch10: " in out and "did not run to their end or broke a rule: chapter 1 (exit status 1)" in out


def test_live_plays_every_chapter_but_three_and_says_why_each_stays_offline(server, tmp_path):
    from openai_server import prose

    server.otherwise = prose("Hello!")
    proc = live_against(server, tmp_path, "--max-tokens", "32")
    assert proc.returncode == 0 and HEADING.findall(proc.out) == LIVE, proc.out + proc.err
    for number, name in ((6, "approval"), (11, "recovery"), (13, "crash_and_continue")):
        assert f"  chapter {number} ({demo.CHAPTERS[number - 1][0]}) stays offline: {demo.OFFLINE[name]}\n" in proc.out
    assert {b.get("max_tokens") for b in server.bodies} == {32}  # every request capped
    assert f"live budget: {CALLS} model calls, {CALLS * 10} tokens in, {CALLS * 5} out; at most 32 tokens per " \
           "answer (--max-tokens)" in proc.out
    said = " ".join(run_demo(bare_copy(tmp_path / "help"), "--help").out.split())
    assert "Played by the scripted model only: chapter 6: its resumed half runs in a fresh process" in said


def test_live_a_long_invalid_answer_is_clipped_where_it_is_shown_and_sent_back(server, tmp_path):
    """The error quotes a bounded start of the answer (the kernel's preview), so the demo shows it as it is."""
    from openai_server import prose

    server.otherwise = prose("na " * 2000)
    proc = live_against(server, tmp_path, "--chapter", "3")
    assert proc.returncode == 0, proc.out + proc.err
    assert "Raw text:" in proc.out and "na na …" in proc.out and "na " * 200 not in proc.out
    sent_back = server.bodies[1]["messages"][-1]["content"]
    assert "…" in sent_back and len(sent_back) < 600


def test_live_a_501_and_a_context_too_small_say_what_to_do(server, tmp_path):
    from openai_server import HTTP_SERVER_501, LLAMA_SERVER_CONTEXT

    server.reply(raw=HTTP_SERVER_501, status=501, content_type="text/html").reply(LLAMA_SERVER_CONTEXT, status=400)
    proc = live_against(server, tmp_path, "--chapter", "1", "--chapter", "2")
    lines = proc.err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2 and len(server.requests) == 2, proc.err  # never retried
    assert "probably not an OpenAI-compatible API" in lines[0] and "Next: set OPENAI_BASE_URL to an " in lines[0]
    said = lines[1].split("failed: ")[1]
    assert said.startswith("HTTP 400: type=exceed_context_size_error code=400 request (5033 tokens) exceeds")
    assert "Next: give the server a larger context (llama-server: -c 8192), or lower --max-tokens." in lines[1]


def test_live_a_stream_the_server_broke_and_a_long_rate_limit_get_advice_that_fits(server, tmp_path):
    """Both were told what fits neither: a broken stream (no status: the server answered) to start the server, a
    429 asking to wait a day that its log says why."""
    from openai_server import prose

    server.reply({"error": {"message": "slow down", "type": "rate_limit"}}, status=429,
                 headers={"retry-after": "100000"})  # chapter 1's request
    plain = prose("We're open 9 to 5.")
    server.otherwise = lambda body: {"sse": ["data: {not json\n\n", "data: [DONE]\n\n"]} if body.get("stream") \
        else plain(body)
    proc = live_against(server, tmp_path, "--chapter", "1", "--chapter", "9")
    lines = proc.err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2 and "Traceback" not in proc.err, proc.out + proc.err
    assert "HTTP 429" in lines[0] and lines[0].endswith("Next: the server limits how often it is asked: it asks for "
                                                        "100,000 s before the next request; run again then.")
    assert "[type=invalid_stream]. Next: the server gave no whole answer, or one an OpenAI-compatible API does " \
           "not send; its log says why. This chapter asks for streaming" in lines[1], lines[1]
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    server.otherwise = lambda body: {"status": 429, "json": quota}
    lines = live_against(server, tmp_path / "again", "--chapter", "1").err.strip().splitlines()
    assert lines[-1].endswith("Next: the account has no quota left: add credit, or set OPENAI_API_KEY to another "
                              "key."), lines


@pytest.mark.parametrize("headers, step", [
    ({"retry-after": "0.4"}, "it asks for 1 s before the next request; run again then."),
    ({"retry-after": "604800"}, "it asks for 604,800 s before the next request; run again then."),
    ({"retry-after": "1e300"}, "wait a minute and run again."),
    ({"retry-after": "inf"}, "wait a minute and run again."),
    ({"retry-after-ms": "nan"}, "wait a minute and run again."),
    ({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}, "wait a minute and run again."),
    ({"retry-after": "-5"}, "wait a minute and run again."),
])
def test_live_advice_for_a_429_names_a_wait_only_when_it_is_one_to_keep(headers, step):
    """The server's Retry-After was printed as it came: 1e300 as 300 digits, inf as "inf s", 0.4 as "0 s", a
    year-9999 date as billions of seconds."""
    from miniagents import ModelHTTPError

    error = ModelHTTPError(429, "slow down")
    error.retry_headers = headers
    assert demo.unreachable(error, "text").endswith("Next: the server limits how often it is asked: " + step)


@pytest.mark.parametrize("code, step", [
    (None, "start the server, or set OPENAI_BASE_URL to where it listens"),
    ("no_response", "the server gave no whole answer, or one an OpenAI-compatible API does not send; its log says"),
    ("truncated", "the server gave no whole answer, or one an OpenAI-compatible API does not send; its log says"),
])
def test_live_advice_tells_a_server_never_reached_from_one_that_took_the_request(code, step):
    """A server that took the request and closed without an answer (RemoteDisconnected) was told to be started."""
    from miniagents.models.protocol import http_error

    error = http_error(None, "the connection failed", type="connection_error", code=code)
    assert "Next: " + step in demo.unreachable(error, "text")


def test_live_without_an_api_key_says_which_variable_to_set(tmp_path):
    proc = run_demo(bare_copy(tmp_path), "--live")  # run_demo drops every OPENAI_ variable
    assert proc.returncode == sum(bool(c[3]) for c in demo.CHAPTERS), proc.out + proc.err  # none of them ran
    assert proc.out == ""
    assert proc.err == ("live: no chapter ran: no API key: set OPENAI_API_KEY; for a local server any value works "
                        "(and set OPENAI_BASE_URL to where it listens, e.g. http://localhost:11434/v1)\n")


def test_live_a_setup_mistake_in_a_chapter_is_a_failed_rule_not_the_models_choice(monkeypatch):
    from miniagents import UserError

    def misconfigured(desk):
        raise UserError("the agent was given a model provider it cannot use")

    from miniagents.testing import ScriptedModel

    monkeypatch.setattr(demo, "live_model", lambda name: (ScriptedModel(), None))  # a model the recorder can wrap
    monkeypatch.setattr(demo, "CHAPTERS", [("Setup", (), misconfigured, "nothing")])
    out = io.StringIO()
    with redirect_stdout(out):
        status = demo.main(["--live", "--no-color"])
    text = " ".join(out.getvalue().split())
    assert status == 1
    assert "✗ ch1: the chapter ran to its end (it raised UserError: the agent was given" in text, text


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


# --- --live --record, --replay ------------------------------------------------------------------------------

KEY = "sk-demo-test-SECRET-0123456789"  # the API key the recording run is given: no file may hold it
RECORDED = 14  # the calls of the recorded walkthrough: 7 in chapters 1-4, then 7 in prose
TRANSCRIPT = re.compile(r"^      [→←] .*$", re.M)  # the items sent to and received from the model


def script_the_live_chapters(server) -> None:
    """A model that plays chapters 1-4 well: it answers, calls the tool, misses the schema once then fits it,
    and hands off; then it answers every request of the later chapters in prose."""
    from openai_server import chat_completion, prose

    server.otherwise = prose("Happy to help.")
    server.reply(chat_completion("We're open 9 to 5, Monday to Friday."))
    server.reply(chat_completion(tool_calls=[("call_7", "get_order_status",
                                              '{"order_id": "A1", "include_items": false}')]))
    server.reply(chat_completion("Order A1 is in transit with ParcelCo and arrives on Friday."))
    for eta in ('"three days"', "3"):
        server.reply(chat_completion('{"response": {"order_id": "A1", "status": "in transit", "eta_days": %s, '
                                     '"reply": "Your kettle arrives in 3 days."}}' % eta))
    server.reply(chat_completion(tool_calls=[("call_9", "transfer_to_refunds_specialist", "{}")]))
    server.reply(chat_completion("Sorry about order B7! A refund has started; a return label is on its way."))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The live walkthrough recorded against the test server: (the bare copy, the recording, the run)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_server import OpenAITestServer

    folder = tmp_path_factory.mktemp("recorded")
    server = OpenAITestServer()
    try:
        script_the_live_chapters(server)
        repo, recording = bare_copy(folder), folder / "walkthrough.jsonl"
        proc = run_demo(repo, "--live", "--model", "tiny", "--record", str(recording),
                        env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY})
        assert len(server.requests) == RECORDED, server.bodies
    finally:
        server.close()
    return repo, recording, proc


def copy_of(recording: Path, folder: Path, change_line=None, change_sidecar=None) -> Path:
    """The recording and its sidecar copied into `folder`; `change_line(number, call)` may edit a call (its
    JSON line, as a dict), `change_sidecar(saved)` the sidecar's JSON."""
    folder.mkdir()
    lines = recording.read_text(encoding="utf-8").splitlines()
    for index in range(1, len(lines)):
        call = json.loads(lines[index])
        if change_line is not None:
            change_line(index, call)
        lines[index] = json.dumps(call, ensure_ascii=False)
    copy = folder / recording.name
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    saved = json.loads(Path(f"{recording}{demo.SIDECAR}").read_text(encoding="utf-8"))
    if change_sidecar is not None:
        change_sidecar(saved)
    Path(f"{copy}{demo.SIDECAR}").write_text(json.dumps(saved), encoding="utf-8")
    return copy


def test_a_recorded_live_walkthrough_replays_offline_with_the_network_closed(recorded):
    repo, recording, live = recorded
    assert live.returncode == 0, live.out + live.err
    assert f"recorded {RECORDED} model calls to {recording}, and what a replay needs besides to {recording}.walkthrough.json" \
        in live.out and f"python demo.py --replay {recording}" in live.out
    replay = run_demo(repo, "--replay", str(recording), offline=True)  # no OPENAI_ variable: no key, no server
    assert replay.returncode == 0 and replay.err == "", replay.out + replay.err
    assert f"(replaying {recording}: the recorded model, offline)" in replay.out
    assert HEADING.findall(replay.out) == LIVE
    assert TRANSCRIPT.findall(replay.out) == TRANSCRIPT.findall(live.out)  # the same items, both ways
    assert len(TRANSCRIPT.findall(live.out)) >= 14
    said = " ".join(replay.out.split())
    reported = re.findall(r"· (ch\d+: [^·✓✗]*?): yes \(reported, not asserted", " ".join(live.out.split()))
    assert len(reported) == 5  # what the live run only reported, the replay asserts, as it was
    for rule in reported:
        assert f"✓ {rule}: yes, as when recorded" in said, rule
    for rule in re.findall(r"· (ch\d+: [^·✓✗]*?): no \(reported, not asserted", " ".join(live.out.split())):
        assert f"✓ {rule}: no, as when recorded" in said, rule
    for number, calls in ((1, "1 model call"), (2, "2 model calls"), (3, "2 model calls"), (4, "2 model calls"),
                          (5, "1 model call"), (7, "2 model calls"), (9, "2 model calls"), (12, "1 model call")):
        assert f"✓ ch{number}: its {calls} asked what was recorded (Replay compared each request" in said
    assert "✓ ch10: it made no model call, as when recorded" in said
    assert f"✓ all: the replay asked for all {RECORDED} recorded model calls (assert_complete)" in said
    passed, total = map(int, SUMMARY.findall(replay.out)[0])
    assert passed == total == len(INVARIANT.findall(replay.out))


def test_no_credential_nor_per_run_value_reaches_the_recording(recorded):
    _, recording, live = recorded
    assert live.returncode == 0, live.out + live.err
    sidecar = Path(f"{recording}{demo.SIDECAR}")
    for path in (recording, sidecar):
        text = path.read_text(encoding="utf-8")
        assert KEY not in text and "Bearer" not in text and demo.API_KEY not in text, path
        assert "miniagents-demo-" not in text  # the walkthrough's temporary folder, another one in every run
        if os.name == "posix":
            assert path.stat().st_mode & 0o077 == 0, path  # readable by its owner only


def test_a_key_in_the_base_url_reaches_neither_stderr_nor_the_recording(tmp_path):
    """Some gateways take the key in the URL (?api-key=...): the line saying the server is down shows the URL
    without its query and its user:password@."""
    recording = tmp_path / "run.jsonl"
    url = f"http://dana:{KEY}@127.0.0.1:{closed_port()}/v1"
    proc = run_demo(bare_copy(tmp_path), "--live", "--model", "tiny", "--chapter", "1", "--record", str(recording),
                    env={"OPENAI_BASE_URL": f"{url}?api-key={KEY}", "OPENAI_API_KEY": "x"})
    assert proc.returncode == 1 and proc.err.startswith("live: chapter 1 could not run: "), proc.out + proc.err
    assert url.replace(f"dana:{KEY}@", "") in proc.err
    saved = Path(f"{recording}{demo.SIDECAR}").read_text(encoding="utf-8")
    assert "could not connect" in saved
    for text in (proc.err, proc.out, saved, recording.read_text(encoding="utf-8")):
        assert KEY not in text and "dana" not in text


def test_the_sidecar_is_redacted_as_the_recording_is(tmp_path, monkeypatch):
    """What a chapter's failure said, or a rule named, may quote the environment's credentials: the sidecar
    replaces them as the recorder does."""
    token = "hf_SECRET_0123456789abcdef"
    monkeypatch.setenv("HF_TOKEN", token)
    path = tmp_path / "run.jsonl"
    chapter = {"number": 1, "title": demo.CHAPTERS[0][0], "calls": 0, "could_not_run": f"the server said {token}"}
    demo.write_sidecar(str(path), [chapter], {f"ch1: the chapter ran to its end (it raised X: {token})": False},
                       None)
    saved = Path(f"{path}{demo.SIDECAR}").read_text(encoding="utf-8")
    assert token not in saved and saved.count("[REDACTED]") == 2, saved


def test_the_network_guard_of_the_replay_tests_is_real(server, tmp_path):
    from openai_server import chat_completion

    server.reply(chat_completion("We're open 9 to 5."))
    proc = run_demo(bare_copy(tmp_path), "--live", "--model", "tiny", "--chapter", "1", offline=True,
                    env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY})
    assert proc.returncode == 1 and "the network is closed in this test" in proc.err, proc.out + proc.err
    assert server.requests == []


def test_a_tampered_recording_says_which_request_and_field_changed_and_fails(recorded, tmp_path):
    """Request 2 is chapter 2's first: chapter 1 still passes, chapter 2 fails naming the request and the field,
    the chapters whose calls come after it cannot be reached, and the calls left unasked are named at the end."""
    repo, recording, _ = recorded

    def ask_another_question(number, call):
        if number == 2:
            call["request"]["input"][0]["content"] = "Where is my order A2?"

    proc = run_demo(repo, "--replay", str(copy_of(recording, tmp_path / "tampered", ask_another_question)),
                    offline=True)
    said = " ".join(proc.out.split())
    # chapters 2, 3, 4 and the later ones that call a model (5, 7, 8, 9, 12), and the whole-walkthrough checks
    assert proc.returncode == 9, proc.out + proc.err
    assert "✗ ch2: the walkthrough changed since the recording: request 2 differs from the recording at " \
           'input[0].content: recorded "Where is my order A2?", received "Where is my order A1?"' in said, said
    assert "✓ ch1: " in said and "✓ ch10: " in said and "✓ ch14: " in said
    for number in (3, 4, 5, 7, 8, 9, 12):
        assert f"✗ ch{number}: not replayed: chapter 2 left recorded calls unasked" in said
    assert f"{RECORDED} recorded model calls (assert_complete) (ReplayIncomplete: {RECORDED - 1} recorded " \
           "request(s) were not asked for: [2, 3, 4," in said
    assert "Traceback" not in proc.err


def test_a_replayed_choice_must_come_out_as_it_was_recorded(recorded, tmp_path):
    repo, recording, _ = recorded

    def said_no(saved):
        for rule in saved["reported"]:
            if rule["rule"].startswith("ch2: the model called get_order_status"):
                rule["held"] = False

    proc = run_demo(repo, "--replay", str(copy_of(recording, tmp_path / "flipped", change_sidecar=said_no)),
                    offline=True)
    assert proc.returncode == 1, proc.out + proc.err
    assert "✗ ch2: the model called get_order_status; its next call got that call's output, as JSON text: yes, " \
           "but no when recorded" in " ".join(proc.out.split())


def bump_chapter_1(saved):
    saved["chapters"][0]["calls"] += 1


def rename_chapter_1(saved):
    saved["chapters"][0]["title"] = "The loop, as it was"


def test_replay_refuses_a_recording_it_cannot_replay_in_one_line(recorded, tmp_path):
    repo, recording, _ = recorded
    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("these are my notes\n", encoding="utf-8")
    alone = tmp_path / "alone" / "walkthrough.jsonl"
    alone.parent.mkdir()
    alone.write_bytes(recording.read_bytes())
    cases = [
        ([str(tmp_path / "missing.jsonl")], "cannot read the recording "),
        ([str(not_json)], "notes.jsonl' line 1 is not JSON"),
        ([str(alone)], f"cannot read {alone}.walkthrough.json (No such file or directory), which --live --record "),
        ([str(recording), "--chapter", "1"], "holds chapters 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 14, and --chapter "
                                             "asked for 1: a replay "
                                             "plays the chapters that were recorded"),
        ([str(copy_of(recording, tmp_path / "bumped", change_sidecar=bump_chapter_1))],
         f"holds {RECORDED} model calls, and its sidecar counts {RECORDED + 1}: they are not from one recording"),
        ([str(copy_of(recording, tmp_path / "renamed", change_sidecar=rename_chapter_1))],
         "chapter 1 was recorded as 'The loop, as it was', and is now 'The loop: one plain answer'"),
    ]
    for args, said in cases:
        proc = run_demo(repo, "--replay", *args, offline=True)
        assert proc.returncode != 0 and proc.out == "", (args, proc.out, proc.err)
        lines = proc.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("replay: no chapter ran: ") and said in lines[0], (args, lines)
    same = run_demo(repo, "--replay", str(recording), *[f"--chapter={n}" for n in reversed(LIVE)], "--quiet",
                    offline=True)
    assert same.returncode == 0, same.out + same.err


def test_record_and_replay_say_what_they_go_with(tmp_path):
    repo = bare_copy(tmp_path)
    alone = run_demo(repo, "--record", str(tmp_path / "run.jsonl"))
    assert alone.returncode == 2 and "--record goes with --live" in alone.err
    both = run_demo(repo, "--live", "--replay", str(tmp_path / "run.jsonl"))
    assert both.returncode == 2 and "--replay plays a recording offline; it does not go with --live" in both.err
    scripted = run_demo(repo, "--replay", str(tmp_path / "run.jsonl"), "--chapter", "6")
    assert scripted.returncode == 2 and "--chapter 6 needs the scripted model" in scripted.err
    unwritable = run_demo(repo, "--live", "--record", str(tmp_path / "no-such-folder" / "run.jsonl"),
                          env={"OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1", "OPENAI_API_KEY": KEY})
    assert unwritable.returncode == sum(bool(c[3]) for c in demo.CHAPTERS) and unwritable.out == ""
    assert unwritable.err.startswith("record: no chapter ran: cannot write the recording "), unwritable.err


def test_a_sidecar_that_cannot_be_written_is_said_and_counted(tmp_path):
    recording = tmp_path / "run.jsonl"
    Path(f"{recording}{demo.SIDECAR}").mkdir()  # a folder where the sidecar goes: it cannot be written
    proc = run_demo(bare_copy(tmp_path), "--live", "--chapter", "10", "--record", str(recording),
                    env={"OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1", "OPENAI_API_KEY": KEY})
    assert proc.returncode == 1, proc.out + proc.err  # chapter 10 passed; the recording cannot be replayed
    assert proc.err.startswith(f"record: cannot write {recording}.walkthrough.json (") and \
        proc.err.endswith("): the recording cannot be replayed without it\n"), proc.err
    assert "broke a rule: the recording's sidecar (exit status 1)" in proc.out


def test_an_interrupted_recording_leaves_no_older_sidecar_beside_it(tmp_path, monkeypatch):
    """A sidecar describes one recording: recording again removes the old one first, so a run that dies midway
    leaves a recording --replay refuses, not one it pairs with another run's chapters."""
    recording = tmp_path / "run.jsonl"
    older = Path(f"{recording}{demo.SIDECAR}")
    older.write_text('{"kind": "miniagents walkthrough recording"}', encoding="utf-8")

    def interrupted(desk, chosen, recorder):
        raise KeyboardInterrupt

    from miniagents.testing import ScriptedModel

    monkeypatch.setattr(demo, "live_model", lambda name: (ScriptedModel(), None))  # a model the recorder can wrap
    monkeypatch.setattr(demo, "play_all", interrupted)
    with pytest.raises(KeyboardInterrupt), redirect_stdout(io.StringIO()):
        demo.main(["--live", "--record", str(recording)])
    assert recording.read_text(encoding="utf-8") == '{"version": 1, "kind": "miniagents recording"}\n'
    assert not older.exists()


def test_a_chapter_the_server_failed_when_recorded_fails_alike_in_the_replay(server, tmp_path):
    """The server fails every request that carries a tool's output: chapters 2 and 4 recorded their first call
    only. The replay serves each chapter its own calls, so each stops where it stopped, and chapter 3 is served
    chapter 3's call."""
    from openai_server import chat_completion

    failure = {"error": {"message": "tool messages are not supported", "type": "internal_server_error"}}
    server.judge = lambda body: (500, failure) if any(m.get("role") == "tool" for m in body["messages"]) else None
    server.reply(chat_completion("We're open 9 to 5."))
    server.reply(chat_completion(tool_calls=[("call_7", "get_order_status", '{"order_id": "A1", '
                                                                             '"include_items": false}')]))
    server.reply(chat_completion('{"response": {"order_id": "A1", "status": "in transit", "eta_days": 3, '
                                 '"reply": "In 3 days."}}'))
    server.reply(chat_completion(tool_calls=[("call_9", "transfer_to_refunds_specialist", "{}")]))
    recording = tmp_path / "run.jsonl"
    repo = bare_copy(tmp_path)
    live = run_demo(repo, "--live", "--model", "tiny", "--record", str(recording), *"--chapter 1 --chapter 2 "
                    "--chapter 3 --chapter 4".split(), env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY})
    assert live.returncode == 2, live.out + live.err
    replay = run_demo(repo, "--replay", str(recording), offline=True)
    assert replay.returncode == 2, replay.out + replay.err
    lines = replay.err.splitlines()
    assert [line.split(": the model server at ")[0] for line in lines] == [
        "replay: chapter 2 could not run when it was recorded", "replay: chapter 4 could not run when it was recorded"]
    assert all("HTTP 500" in line and "tool messages are not supported" in line for line in lines)
    said = " ".join(replay.out.split())
    assert "✓ ch3: its 1 model call asked what was recorded" in said
    assert "✓ all: the replay asked for all 4 recorded model calls" in said
    assert "did not run to their end or broke a rule: chapter 2, chapter 4 (exit status 2)" in said


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
