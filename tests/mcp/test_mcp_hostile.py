"""Nothing a server does can hang, crash or flood the client: each way a stdio server can misbehave gives a typed
error that names the server and says what it did, within a bound, and leaves no process behind (read in /proc,
not asked of the client). The misbehaviours are the test server's tools and modes (tests/mcp/mcp_test_server.py)."""
import contextvars
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from miniagents import AgentsException, UserError
from miniagents.caller import CANCEL_CALLBACKS, Cancelled
from miniagents.mcp import processes
from miniagents.mcp import MCPCancelledError, MCPConnectionError, MCPError, MCPServerStartError, MCPServerStdio, \
    MCPTimeoutError, MCPVersionError
from mcp_support import alive, ended, gone, group, make_server, not_our_child, tagged


@pytest.fixture
def connected():
    """A connected test server, cleaned up after the test; yields (server, pid)."""
    servers = []

    def start(*modes, **options):
        server = make_server(*modes, **options)
        server.connect()
        servers.append(server)
        return server, server.pid

    yield start
    for server in servers:
        server.cleanup()


# --- Failing to start -------------------------------------------------------------------------------------


def test_a_command_that_does_not_exist_is_a_start_error_naming_server_and_command():
    with pytest.raises(MCPServerStartError) as caught:
        MCPServerStdio({"command": "no-such-mcp-server-here"}, name="ghost").connect()
    assert "'ghost' could not start 'no-such-mcp-server-here': No such file or directory" in str(caught.value)
    assert isinstance(caught.value, AgentsException) and caught.value.server == "ghost"


def test_a_working_folder_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(MCPServerStartError, match="nowhere"):
        MCPServerStdio({"command": sys.executable, "cwd": str(tmp_path / "nowhere")}).connect()


def test_a_file_that_is_not_executable_is_a_start_error(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(MCPServerStartError, match="Permission denied"):
        MCPServerStdio({"command": str(script)}).connect()


def test_a_server_that_exits_at_start_says_its_exit_code_and_its_stderr():
    server = make_server("exit_at_start")
    started = time.monotonic()
    with pytest.raises(MCPConnectionError) as caught:
        server.connect()
    assert time.monotonic() - started < 5
    assert "exited with code 2" in caught.value.summary and "cannot start: no configuration" in caught.value.stderr
    assert "cannot start: no configuration" in str(caught.value) and not server.connected


@pytest.mark.parametrize("key", ["sk-live-0123456789abcdefghijklmnopqrstuv", "-----BEGIN KEY-----" + "MIIEvQ" * 280])
def test_no_part_of_a_secret_shows_where_the_kept_stderr_begins(key):
    """Only the last bytes of stderr are kept, and they may begin inside a secret: that piece matched no form and
    showed once hiding had shortened the rest. With 48-byte lines the longest form's length, dropped from the front,
    ends inside the next secret: a secret across the drop point is dropped whole."""
    code = ("import os, time; os.write(2, b'starting' * 2100); time.sleep(0.2); "
            "os.write(2, ('token: ' + os.environ['API_KEY'] + '\\n').encode() * 200); time.sleep(0.2); os._exit(1)")
    with pytest.raises(MCPError) as caught:
        MCPServerStdio({"command": sys.executable, "args": ["-c", code], "env": {"API_KEY": key}},
                       shutdown_grace_seconds=0.5).connect()
    shown = str(caught.value) + caught.value.stderr
    assert "token: ***" in shown and not [key[i:i + 8] for i in range(len(key) - 8) if key[i:i + 8] in shown]


def test_a_server_that_never_answers_initialize_times_out_and_is_ended(tmp_path):
    server = make_server("silent", log=tmp_path / "log.txt", client_session_timeout_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError, match="did not answer initialize within 0.5 seconds"):
        server.connect()
    assert time.monotonic() - started < 5
    assert not (tmp_path / "log.txt").exists()  # the protocol forbids cancelling initialize: nothing was sent


def test_garbage_on_stdout_before_the_handshake_is_named():
    with pytest.raises(MCPConnectionError) as caught:
        make_server("garbage_first").connect()
    assert "wrote a line that is not JSON to its stdout: 'Starting the server...'" in str(caught.value)


# --- Misbehaving during a call ----------------------------------------------------------------------------


def test_a_server_that_exits_mid_call_fails_the_call_and_is_reaped(connected):
    server, pid = connected()
    with pytest.raises(MCPConnectionError) as caught:
        server.call_tool("crash")
    assert "exited with code 7" in caught.value.summary and "crashing on purpose" in caught.value.stderr
    assert ended(pid) and not server.connected
    with pytest.raises(MCPConnectionError, match="exited with code 7"):  # the connection stays failed
        server.call_tool("echo", {"text": "again?"})
    server.connect()  # and a new one can be made
    assert server.call_tool("echo", {"text": "back"}).content[0].text == "back" and server.pid != pid


def test_a_server_that_exits_while_a_process_it_started_holds_its_stdout_is_noticed(connected):
    """Its stdout does not end (the child it started holds it): its exit is seen all the same, the call fails with
    its code, not a timeout, and the child, in its process group, is ended."""
    server, pid = connected("spawn_child", client_session_timeout_seconds=8)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError) as caught:
        server.call_tool("crash")
    assert "exited with code 7" in caught.value.summary and time.monotonic() - started < 5
    assert ended(pid) and not server.connected


def test_a_server_killed_mid_call_is_named_by_its_signal(connected):
    server, pid = connected()
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match="was killed by SIGKILL"):
        server.call_tool("slow", {"seconds": 30})
    assert time.monotonic() - started < 5 and ended(pid)


def in_threads(count, work):
    """Run `work(n)` in `count` threads at once; [(n, outcome)] where outcome is its result or its exception."""
    outcomes = []

    def one(n):
        try:
            outcomes.append((n, work(n)))
        except BaseException as error:  # noqa: BLE001 - collected for the test
            outcomes.append((n, error))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, outcomes


def test_every_call_waiting_on_a_server_that_crashes_fails_at_once_with_its_own_error(connected):
    server, pid = connected()
    threads, outcomes = in_threads(8, lambda n: server.call_tool("slow", {"seconds": 30}))
    while len(server._connection._pending) < 8:
        time.sleep(0.01)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError):
        server.call_tool("crash")
    for thread in threads:
        thread.join(5)
    assert time.monotonic() - started < 5 and len(outcomes) == 8
    errors = [outcome for _, outcome in outcomes]
    assert all(isinstance(e, MCPConnectionError) and "exited with code 7" in e.summary for e in errors)
    assert len({id(e) for e in errors}) == 8  # each thread raised an error of its own (tracebacks stay apart)


def test_cleanup_while_calls_wait_fails_them_and_ends_the_server(connected):
    server, pid = connected()
    threads, outcomes = in_threads(4, lambda n: server.call_tool("hang"))
    while len(server._connection._pending) < 4:
        time.sleep(0.01)
    server.cleanup()
    for thread in threads:
        thread.join(5)
    assert [type(o) for _, o in outcomes] == [MCPConnectionError] * 4
    assert all("was cleaned up" in o.summary for _, o in outcomes) and ended(pid)


def test_a_server_that_closes_stdout_but_keeps_running_is_ended(connected):
    server, pid = connected()
    with pytest.raises(MCPConnectionError, match=r"closed its stdout \(its process is still running\)"):
        server.call_tool("close_stdout")
    assert ended(pid)


def test_a_call_that_takes_longer_than_the_timeout_fails_alone_and_the_server_is_told(connected, tmp_path):
    log = tmp_path / "log.txt"
    server, pid = connected(log=log, client_session_timeout_seconds=2)  # the handshake fits on a loaded machine
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError, match="did not answer tools/call within 2 seconds"):
        server.call_tool("hang")
    assert 2 <= time.monotonic() - started < 8
    assert server.call_tool("echo", {"text": "still fine"}).content[0].text == "still fine"
    assert log.read_text().startswith("cancelled ")  # notifications/cancelled, with the request's id


def test_a_late_answer_to_a_call_given_up_is_ignored(connected):
    server, pid = connected(client_session_timeout_seconds=2)  # the handshake fits on a loaded machine
    with pytest.raises(MCPTimeoutError):
        server.call_tool("slow", {"seconds": 3})
    time.sleep(1.5)  # its answer arrives now, for an id the client gave up
    assert server.call_tool("echo", {"text": "ok"}).content[0].text == "ok" and server.connected


def test_a_late_answer_sent_twice_is_a_protocol_error_at_the_second(connected):
    server, pid = connected(client_session_timeout_seconds=2)
    with pytest.raises(MCPTimeoutError):
        server.call_tool("slow", {"seconds": 3, "twice": True})
    time.sleep(1.5)  # both answers arrive now: the first is the late one ignored, the second answers nothing
    with pytest.raises(MCPConnectionError, match="which this client never sent or had an answer to already"):
        server.call_tool("echo", {"text": "ok"})
    assert ended(pid)


def test_garbage_during_a_call_fails_the_connection_and_ends_the_server(connected):
    server, pid = connected()
    with pytest.raises(MCPConnectionError, match="wrote a line that is not JSON to its stdout: 'this is not JSON"):
        server.call_tool("garbage")
    assert ended(pid)


def test_json_that_is_not_json_rpc_is_named(connected):
    server, pid = connected()
    with pytest.raises(MCPConnectionError, match="JSON that is not a JSON-RPC message"):
        server.call_tool("not_rpc")
    assert ended(pid)


def test_an_answer_to_an_id_never_sent_is_named(connected):
    server, pid = connected()
    with pytest.raises(MCPConnectionError, match="answered request id '424242', which this client never sent"):
        server.call_tool("unknown_id")
    assert ended(pid)


@pytest.mark.parametrize("error, shown", [({"code": -32000, "message": "the server's own words"},
                                           "\"the server's own words\""), ("plain words", "'plain words'")])
def test_an_error_answer_to_an_id_never_sent_shows_the_servers_error(connected, error, shown):
    server, pid = connected()
    with pytest.raises(MCPConnectionError) as raised:
        server.call_tool("unknown_id", {"error": error})
    assert f"answered request id '424242' with the error {shown}, which this client never sent" in str(raised.value)
    assert ended(pid)


def test_a_line_over_the_cap_fails_before_it_is_held_in_memory(connected):
    server, pid = connected(max_message_bytes=1 << 20)
    with pytest.raises(MCPConnectionError, match="wrote a line of more than 1048576 bytes"):
        server.call_tool("huge", {"size": 8 << 20})
    assert ended(pid)


HUNDRED_MB = r'''
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from mcp_support import make_server
from miniagents.mcp import MCPConnectionError
server = make_server()
server.connect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
try:
    server.call_tool("huge", {"size": 100 << 20})
    said = "answered"
except MCPConnectionError as error:
    said = error.summary
seconds = time.monotonic() - started
server.cleanup()
print(json.dumps({"said": said, "seconds": seconds, "before_kb": before,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
'''


def test_a_100_mb_line_is_refused_in_bounded_time_and_memory():
    """In a process of its own, so its peak memory is its own: the 100 MB line never is."""
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", HUNDRED_MB, here], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "wrote a line of more than 16777216 bytes" in report["said"]
    assert report["seconds"] < 10
    assert report["peak_kb"] - report["before_kb"] < 60 * 1024, report  # the cap (16 MiB) and a copy, not 100 MB


def test_a_flood_of_stderr_neither_blocks_the_server_nor_fills_memory(connected):
    server, pid = connected()
    assert server.call_tool("flood_stderr", {"size": 50 << 20}).content[0].text == "flooded"  # 50 MB: far over the pipe
    deadline = time.monotonic() + 10  # stderr is read by a thread of its own: it may be a moment behind stdout
    while not server._connection.stderr_tail().endswith("flood") and time.monotonic() < deadline:
        time.sleep(0.01)
    tail = server._connection.stderr_tail()
    assert tail.endswith("the last line of the flood") and len(tail) <= 2000
    assert len(server._connection._stderr) <= 2 * 8192


def test_calls_go_on_while_a_server_floods_stderr_without_end(connected):
    server, pid = connected("stderr_flood")
    started = time.monotonic()
    for n in range(20):
        assert server.call_tool("echo", {"text": str(n)}).content[0].text == str(n)
    assert time.monotonic() - started < 10
    with pytest.raises(MCPConnectionError) as caught:
        server.call_tool("crash")
    assert "noise" in caught.value.stderr and len(caught.value.stderr) <= 2000


def test_a_server_that_stops_reading_its_stdin_fails_the_write_within_the_timeout(connected):
    server, pid = connected("stop_reading", client_session_timeout_seconds=1)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match="stopped reading its stdin"):
        server.call_tool("echo", {"text": "x" * (4 << 20)})  # more than a pipe holds
    assert time.monotonic() - started < 5 and ended(pid)


PING_FLOOD = "import json, sys, time\nfor line in sys.stdin:\n    r = json.loads(line)\n    if 'id' not in r: continue\n" \
             "    if r['method'] == 'initialize':\n        print(json.dumps({'jsonrpc': '2.0', 'id': r['id'], 'result': " \
             "{'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {}}}), flush=True)\n" \
             "    else:\n        for k in range(20000):\n            print(json.dumps({'jsonrpc': '2.0', 'id': k, " \
             "'method': 'ping'}), flush=True)\n        time.sleep(60)"


def test_a_timeout_never_waits_for_the_readers_answer_to_a_ping_a_server_does_not_read(monkeypatch):
    """The server asks for pings and reads no more: the reader's answer waits WRITE_TIMEOUT to be written. A call's
    timeout waits for it at most CANCEL_WRITE (to tell the server), and a new call's wait for it is in its timeout
    (never sent, the server is not told)."""
    from miniagents.mcp import stdio

    monkeypatch.setattr(stdio, "WRITE_TIMEOUT", 8.0)
    monkeypatch.setattr(stdio, "CANCEL_WRITE", 2.0)
    with MCPServerStdio({"command": sys.executable, "args": ["-c", PING_FLOOD]}, client_session_timeout_seconds=0.5,
                        shutdown_grace_seconds=0.5) as server:
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError, match="did not answer tools/call within 0.5 seconds"):
            server.call_tool("t")
        assert time.monotonic() - started < 4.5
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError, match="could not send tools/call within 0.5 seconds"):
            server.call_tool("t")
        assert time.monotonic() - started < 1.8 and server.connected


def test_a_server_that_exits_while_a_write_waits_on_it_fails_the_write_at_once(connected):
    server, pid = connected("stop_reading", "exit_soon", client_session_timeout_seconds=20)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match="exited with code 5"):
        server.call_tool("echo", {"text": "x" * (4 << 20)})
    assert time.monotonic() - started < 5 and ended(pid)


def test_a_server_that_closes_its_stdin_and_exits_is_told_by_its_exit_and_its_last_words(connected):
    server, pid = connected("close_stdin")
    time.sleep(0.2)  # its stdin is closed: the request cannot be written
    with pytest.raises(MCPConnectionError, match="exited with code 3") as caught:
        server.list_tools()
    assert "my last words" in caught.value.stderr and ended(pid)


def test_a_server_that_closes_its_stdin_and_runs_on_is_ended_when_its_connection_fails(connected):
    server, pid = connected("close_stdin_and_run")
    time.sleep(0.2)  # its stdin is closed: the request cannot be written
    with pytest.raises(MCPConnectionError, match="closed its stdin"):
        server.list_tools()
    assert ended(pid)  # nobody called cleanup(): the failed connection ended it


def test_a_server_that_ignores_eof_and_sigterm_is_killed_on_cleanup():
    server = make_server("ignore_eof", "ignore_term", shutdown_grace_seconds=0.3)
    server.connect()
    pid = server.pid
    started = time.monotonic()
    server.cleanup()
    assert time.monotonic() - started < 3 and ended(pid)


def test_a_server_that_ignores_eof_and_sigterm_gets_sigkill_after_one_grace_period(monkeypatch):
    """The shutdown's order, read from the signals sent: EOF, SIGTERM after the grace, SIGKILL after another;
    nothing is left for the group's sweep to signal."""
    server = make_server("ignore_eof", "ignore_term", shutdown_grace_seconds=0.3)
    server.connect()
    sent, killpg = [], os.killpg

    def recording(pid, sig):
        sent.append(sig)
        return killpg(pid, sig)

    monkeypatch.setattr(os, "killpg", recording)
    server.cleanup()
    assert [sig for sig in sent if sig != 0][:2] == [signal.SIGTERM, signal.SIGKILL]


def test_cleanup_ends_what_the_server_started_in_its_process_group():
    server = make_server("spawn_child")
    server.connect()
    pid = server.pid
    child = json.loads(server.call_tool("pid").content[0].text)["child"]
    assert alive(child) and child in group(pid)
    server.cleanup()
    assert ended(pid) and gone(child)


@pytest.mark.parametrize("how", ["child", "orphan", "clean_env", "forks_on_term"])
def test_cleanup_ends_what_the_server_started_outside_its_process_group(how):
    """A process the server started that left its group with setsid is ended too: found as the server's descendant
    (looked for before the server is ended: once it exits, its children are no longer its) or by the mark its
    environment inherited (an orphan); one with neither, as its descendant; one that forks as it is told to end,
    with what it forked."""
    tag = os.urandom(8).hex()
    server = make_server(f"daemon_{how}", env={"FAMILY_TAG": tag})
    server.connect()
    pid = server.pid
    daemon = json.loads(server.call_tool("pid").content[0].text)["child"]
    try:
        assert alive(daemon) and daemon not in group(pid)
        server.cleanup()
        assert ended(pid) and gone(daemon) and tagged(tag) == []
    finally:
        for leftover in {daemon, *tagged(tag, 0)}:  # the test's own
            try:
                os.kill(leftover, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_pid_that_names_another_process_now_is_never_signalled():
    """What a server left is named by pid and start time: a pid whose process started at another time (the pid was
    reused) is left alone. The SIGTERM meant for the other process would end this one with SIGTERM, not SIGKILL."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    start = int(open(f"/proc/{sleeper.pid}/stat").read().rsplit(")", 1)[1].split()[19])
    processes.send((sleeper.pid, start + 1), signal.SIGTERM)
    processes.send((sleeper.pid, start), signal.SIGKILL)
    assert sleeper.wait(timeout=30) == -signal.SIGKILL


def test_cleanup_leaves_no_process_and_no_zombie(connected):
    server, pid = connected()
    server.cleanup()
    assert not alive(pid) and not_our_child(pid) and group(pid) == []



@pytest.mark.parametrize("calls", [0, 3])
def test_cleanup_leaves_no_reader_thread_running(connected, calls):
    server, pid = connected()
    for n in range(calls):
        server.call_tool("echo", {"text": str(n)})
    readers = [t for t in threading.enumerate() if t.name.startswith("mcp-") and t.name.endswith(server.name)]
    assert readers  # its stdout's and its stderr's
    server.cleanup()
    assert [t.name for t in readers if t.is_alive()] == []


AT_EXIT = r'''
import sys
sys.path.insert(0, sys.argv[1])
from mcp_support import make_server
server = make_server("spawn_child")
server.connect()
import json
print(json.dumps({"pid": server.pid, "child": json.loads(server.call_tool("pid").content[0].text)["child"]}),
      flush=True)
# no cleanup: the interpreter's exit must end the server
'''


def test_the_interpreters_exit_ends_servers_nobody_cleaned_up():
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", AT_EXIT, here], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pids = json.loads(done.stdout)
    assert gone(pids["pid"]) and gone(pids["child"])


FORKED = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
from mcp_support import make_server
server = make_server()
server.connect()
child = os.fork()
if child == 0:
    sys.exit(0)  # a forked child that ends as programs do: its interpreter's exit runs the atexit functions
os.waitpid(child, 0)
print(server.call_tool("echo", {"text": "still here"}).content[0].text, flush=True)
server.cleanup()
'''


def test_a_forked_childs_exit_leaves_the_servers_its_parent_still_uses():
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", FORKED, here], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "still here\n", done.stderr


KILLED_PARENT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from mcp_support import make_server
server = make_server("ignore_eof", *sys.argv[3:], env={"FAMILY_TAG": sys.argv[2]})
server.connect()
print(server.pid, json.loads(server.call_tool("pid").content[0].text)["child"], flush=True)
sys.stdin.read()
'''


@pytest.mark.parametrize("mode", ["spawn_child", "daemon_orphan"])
def test_a_server_whose_program_is_killed_is_ended_with_what_it_left(mode):
    """SIGKILL (or SIGTERM's default) ends a program without its atexit: the watcher started beside the server
    sees its parent gone and ends the server's group, and what left it (an orphan's zombie may stay: it has
    ended)."""
    here, tag = os.path.dirname(os.path.abspath(__file__)), os.urandom(8).hex()
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, here, tag, mode], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    pid, child = map(int, parent.stdout.readline().split())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while group(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left, tagged_left = group(pid), tagged(tag)
    if left:
        os.killpg(pid, signal.SIGKILL)  # the test's own leftovers
    for leftover in tagged_left:
        os.kill(leftover, signal.SIGKILL)
    assert not left and not tagged_left


def test_a_cancel_wakes_a_waiting_call_at_once_and_tells_the_server(connected, tmp_path):
    log = tmp_path / "log.txt"
    server, pid = connected(log=log)
    aborts, outcome = [], {}

    def call():
        CANCEL_CALLBACKS.set(aborts)
        try:
            server.call_tool("hang")
        except Cancelled:
            outcome["cancelled"] = time.monotonic()

    worker = threading.Thread(target=contextvars.copy_context().run, args=(call,))
    worker.start()
    while not aborts:
        time.sleep(0.01)
    cancelled_at = time.monotonic()
    for abort in list(aborts):
        abort()
    worker.join(5)
    assert outcome["cancelled"] - cancelled_at < 3 and aborts == []
    assert server.call_tool("echo", {"text": "after"}).content[0].text == "after"
    deadline = time.monotonic() + 5
    while "cancelled" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert log.read_text().startswith("cancelled ")


def cancelled_calls(server, *arguments):
    """Calls of `server`'s echo tool, one after the other, each in a thread of a run whose aborts are called once
    every call has begun: each call's (seconds from that cancel to its end, what it raised)."""
    aborts, ends = [], {}

    def call(n, text):
        CANCEL_CALLBACKS.set(aborts)
        try:
            server.call_tool("echo", {"text": text})
        except Exception as error:
            ends[n] = (time.monotonic(), error)

    workers = []
    for n, text in enumerate(arguments):
        workers.append(threading.Thread(target=contextvars.copy_context().run, args=(call, n, text)))
        workers[-1].start()
        while len(aborts) <= n:
            time.sleep(0.01)
    time.sleep(0.3)  # the first is writing, or holds the write lock; the others wait for it
    cancelled_at = time.monotonic()
    for abort in list(aborts):
        abort()
    for worker in workers:
        worker.join(10)
    return [(ends[n][0] - cancelled_at, ends[n][1]) for n in range(len(arguments))]


def test_a_cancel_wakes_a_call_writing_its_request_and_one_waiting_to_write(connected):
    """The server reads no more: one call's request fills its stdin, the next waits for the write lock. A cancel
    ends both at once; the request written in part leaves the connection unusable, so the server is ended."""
    server, pid = connected("stop_reading", client_session_timeout_seconds=20)
    writing, waiting = cancelled_calls(server, "x" * (4 << 20), "small")
    assert writing[0] < 3 and isinstance(writing[1], MCPCancelledError) and "not sent tools/call whole" in str(writing[1])
    assert waiting[0] < 3 and isinstance(waiting[1], MCPCancelledError)
    with pytest.raises(MCPConnectionError, match="was sent only part of tools/call"):
        server.call_tool("echo", {"text": "after"})
    assert ended(pid)


def test_a_call_cancelled_before_its_request_is_written_leaves_the_connection_and_the_server_untold(connected,
                                                                                                    tmp_path):
    log = tmp_path / "log.txt"
    server, pid = connected(log=log)
    lock = server._connection._write_lock
    lock.acquire()  # another message is being written
    try:
        [(seconds, error)] = cancelled_calls(server, "never sent")
        assert seconds < 0.5 and isinstance(error, MCPCancelledError)  # never waits to tell the server
    finally:
        lock.release()
    assert server.call_tool("echo", {"text": "after"}).content[0].text == "after"
    assert not log.exists()  # no notifications/cancelled for a request it never got


def test_a_call_whose_arguments_json_cannot_hold_is_a_user_error_and_the_server_is_not_told_of_it(connected,
                                                                                                   tmp_path):
    log = tmp_path / "log.txt"
    server, pid = connected(log=log)
    with pytest.raises(UserError, match="cannot be sent"):
        server.call_tool("add", {"a": float("inf"), "b": 1})  # what a model's 1e400 decodes to
    assert server.call_tool("echo", {"text": "after"}).content[0].text == "after"
    assert not log.exists()  # no notifications/cancelled for a request it never got


def test_a_task_cancelled_inside_async_with_ends_the_server():
    import asyncio

    pids = []

    async def main():
        server = make_server()
        async with server:
            pids.append(server.pid)
            await asyncio.sleep(30)

    async def cancel_it():
        task = asyncio.ensure_future(main())
        while not pids:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    assert ended(pids[0])


def test_a_task_cancelled_while_connecting_leaves_no_server():
    import asyncio

    server = make_server("silent", client_session_timeout_seconds=30)

    async def main():
        task = asyncio.ensure_future(server.__aenter__())
        await asyncio.sleep(0.5)
        pid = server.pid
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pid

    pid = asyncio.run(main())
    assert pid is not None and ended(pid) and not server.connected


def test_the_childs_environment_is_a_few_safe_variables_and_the_given_ones(monkeypatch):
    monkeypatch.setenv("PARENT_SECRET", "do-not-pass-this-on")
    server = make_server("print_env", "exit_at_start", env={"MY_SETTING": "on"})
    with pytest.raises(MCPConnectionError) as caught:
        server.connect()
    printed = json.loads(caught.value.stderr.splitlines()[0])
    assert "PARENT_SECRET" not in printed and printed["MY_SETTING"] == "on" and "PATH" in printed


def test_an_env_value_never_reaches_a_message_even_when_the_server_prints_it():
    secret = "sk-live-0123456789abcdef"
    server = make_server("print_env", version="1999-01-01", env={"API_TOKEN": secret})
    with pytest.raises(MCPVersionError) as caught:
        server.connect()
    assert secret not in str(caught.value) and secret not in repr(caught.value.args)
    assert '"API_TOKEN": "***"' in caught.value.stderr


SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"
CUT_SECRETS = {  # a server that shows its API_KEY where the message shows only part of the text
    "stderr's end": "import os, sys; sys.stderr.write('key=' + os.environ['API_KEY'] + 'x' * 1990); sys.exit(1)",
    "a line cut at 200": "import os; print('x' * 190 + os.environ['API_KEY'], flush=True); input()",
    "an id cut at 40": "import json, os; input(); print(json.dumps({'jsonrpc': '2.0', 'id': 'x' * 30 + "
                       "os.environ['API_KEY'], 'result': {}}), flush=True); input()",
    "a log line cut at 500": "import json, os; input(); print(json.dumps({'jsonrpc': '2.0', 'method': "
                             "'notifications/message', 'params': {'level': 'info', 'data': 'x' * 490 + "
                             "os.environ['API_KEY']}}), flush=True); print('bye', flush=True); input()"}


@pytest.mark.parametrize("code", CUT_SECRETS.values(), ids=CUT_SECRETS)
def test_no_part_of_an_env_value_reaches_a_message_where_the_text_is_cut(code, caplog):
    """A value is hidden in the whole text, then the text is cut: cut first, its part would no longer be found."""
    server = MCPServerStdio({"command": sys.executable, "args": ["-c", code], "env": {"API_KEY": SECRET}},
                            shutdown_grace_seconds=0.5)
    with caplog.at_level("DEBUG", logger="miniagents"), pytest.raises(MCPError) as caught:
        server.connect()
    shown = str(caught.value) + caplog.text
    assert "***" in shown and not [SECRET[i:i + 6] for i in range(len(SECRET) - 5) if SECRET[i:i + 6] in shown]


ESCAPED_SECRETS = ["Pa$$w\\rd-2026", 'sk-"quoted"-123', "cl\u00e9-secr\u00e8te-42", "tab\there-1234", "it's \"both\"/1"]
ESCAPED_LINES = {  # a server that shows its KEY as JSON or Python escape it: \\, \", \u00e9, \t, \'
    "a JSON line": "import json, os, sys; input(); sys.stderr.write(json.dumps({'key': os.environ['KEY']}) + '\\n'); "
                   "sys.stderr.flush(); print(json.dumps({'log': 'auth failed for key ' + os.environ['KEY']}), "
                   "flush=True); input()",
    "str() of an error's message": "import json, os; input(); print(json.dumps({'jsonrpc': '2.0', 'id': 1, 'error': "
                                   "{'code': 1, 'message': {'key': os.environ['KEY']}}}), flush=True); input()"}


@pytest.mark.parametrize("code", ESCAPED_LINES.values(), ids=ESCAPED_LINES)
@pytest.mark.parametrize("secret", ESCAPED_SECRETS)
def test_an_env_value_never_reaches_a_message_in_its_escaped_forms(code, secret):
    server = MCPServerStdio({"command": sys.executable, "args": ["-c", code], "env": {"KEY": secret}},
                            shutdown_grace_seconds=0.5)
    with pytest.raises(MCPError) as caught:
        server.connect()
    shown = str(caught.value)
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}
    assert "***" in caught.value.summary and not [form for form in forms if form in shown]


def go_json(value):
    return json.dumps(value)[1:-1].replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


ENCODED = {  # how common loggers write a value inside a string: (the value, its form)
    "Go's encoding/json, &<> escaped": ("pa&ss<wo>rd", go_json),
    "Jackson, hex in upper case": ("p\u00e4ssw\u00f6rd1", lambda v: json.dumps(v)[1:-1].replace("u00e4", "u00E4").replace(
        "u00f6", "u00F6")),
    "PHP, / escaped": ("cl\u00e9/secr\u00e8te", lambda v: json.dumps(v)[1:-1].replace("/", "\\/")),
    "repr() of its UTF-8 bytes": ("p\u00e4ssw\u00f6rd1", lambda v: repr(v.encode())[2:-1]),
    "JSON in JSON": ('p"ass\\word', lambda v: json.dumps(json.dumps(v)[1:-1])[1:-1]),
    "Go's JSON in Go's JSON": ("pa&ss<wo>rd\u00e9", lambda v: go_json(go_json(v)))}


@pytest.mark.parametrize("secret, form", ENCODED.values(), ids=ENCODED)
def test_an_env_value_never_reaches_a_message_as_common_json_encoders_escape_it(secret, form):
    from miniagents.mcp.errors import redact

    line = f'{{"level": "error", "msg": "auth failed for {form(secret)}!"}}'
    assert redact(line, [secret]) == '{"level": "error", "msg": "auth failed for ***!"}'


OVERLAPS = {  # two values of the environment printed so that one's end is the other's start, or one inside the other
    "the first's end": ("abcdefgh", "efghijkl", "key=abcdefghijkl!", "key=***!"),
    "the second's end": ("efghijkl", "abcdefgh", "key=abcdefghijkl!", "key=***!"),
    "one inside a form of the other": ("x/y/z/w1", "z/w1-tail", "key=x\\/y\\/z\\/w1-tail!", "key=***!"),
    "three in a row, the third after the second": ("1234abcd", "abcd5678", "key=1234abcd5678abcd5678!",
                                                    "key=******!"),
    "one inside the other": ("abcdefgh", "cdef", "key=abcdefgh!", "key=***!")}


@pytest.mark.parametrize("first, second, line, hidden", OVERLAPS.values(), ids=OVERLAPS)
def test_no_part_of_two_overlapping_env_values_reaches_a_message(first, second, line, hidden):
    """Replaced one after the other, the first value replaced left the part of the second it did not share."""
    from miniagents.mcp.errors import redact
    from miniagents.mcp.stdio import preview

    assert redact(line, [first, second]) == hidden
    assert preview(line, 200, [first, second]) == repr(hidden)


def test_a_preview_searches_only_the_start_of_a_long_text():
    """200 values, 16 MiB: the part searched is its start, so the view takes no longer than for a short text; what is
    left is counted as it is."""
    from miniagents.mcp.stdio import preview

    values = [f"value-{n:04d}-/\u00e9\"\\x<&" for n in range(200)]
    started = time.monotonic()
    assert preview("a" * (16 << 20), 200, values) == repr("a" * 200) + f" (and {(16 << 20) - 200} more characters)"
    assert time.monotonic() - started < 1


def test_a_preview_never_shows_the_raw_end_of_the_part_it_searched():
    """Values hidden shorten the part searched: it is made longer until what is shown ends a longest form before its
    end, where a value may be cut (its start was shown as it is: 'x***...***AAAA...')."""
    from miniagents.mcp.stdio import preview

    value = "A" * 50
    assert preview("x" + value * 20, 200, [value]) == repr("x" + "***" * 20)


def test_every_failure_is_an_mcp_error():
    """A table of the above: whatever the server did, what reaches the caller is an MCPError subclass."""
    for modes, tool in ((("garbage_first",), None), (("exit_at_start",), None), ((), "crash"), ((), "garbage"),
                        ((), "not_rpc"), ((), "unknown_id"), ((), "close_stdout"), ((), "no_such_tool")):
        server = make_server(*modes, client_session_timeout_seconds=2)
        try:
            server.connect()
            server.call_tool(tool)
        except Exception as error:
            assert isinstance(error, MCPError), (modes, tool, error)
        else:
            raise AssertionError((modes, tool))
        finally:
            server.cleanup()
