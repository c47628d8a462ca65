"""The stdio transport: a child process that speaks newline-delimited JSON-RPC 2.0 on its stdin and stdout.

Why it is built this way:

- **Nothing the server does can hang the client.** Every wait has a bound: a request waits at most its timeout,
  a write at most its timeout (a server that stops reading its stdin fails the connection instead of blocking the
  writer), and ending the process at most a few grace periods. A cancelled run wakes the threads waiting on the
  server at once (`caller.CANCEL_CALLBACKS`), for an answer or to write, and the server is told of a request it
  was sent (`notifications/cancelled`).
- **Nothing it does can flood the client.** stdout is read in chunks and split into lines with a size cap
  (`max_message_bytes`): a longer line fails the connection before it is held in memory. stderr is read all
  the time, so a chatty server never blocks on a full pipe, and only its last bytes are kept, for messages.
- **Nothing it does can crash the client.** Each line is routed by one reader thread: a response to the thread
  waiting for its id (any number of threads wait at once: parallel tool calls), a request from the server answered
  at once (`ping` with an empty result, anything else with "method not found": this client offers no sampling,
  elicitation or roots), a notification to `on_notification`. A line that is not JSON, JSON that is not a JSON-RPC
  message, an answer to a request never sent, or the server's exit fail the connection with a typed error that
  says what the server did; every thread waiting on it gets that error.
- **No process is left behind.** The child gets a session (and so a process group) of its own, and is ended as
  the protocol says: its stdin closed, then SIGTERM, then SIGKILL, each after a grace period, then reaped; what
  it left in its group (the `node` that `npx` started, a shell's children) is ended too, and on Linux what left the
  group (a daemon's setsid: `processes`). That happens on `close()`, when the connection fails, and at interpreter
  exit for whatever is still open. A program ended without its interpreter's exit (SIGKILL, SIGTERM's default) runs
  none of that: a small Python started beside each server (`processes.watch`, in a session of its own) sees its
  parent gone and ends what the server left.

POSIX only (process groups, `poll`); the environment given to the child is a few safe variables of ours (as
upstream's client does) plus the ones passed, so a server never sees the parent's secrets by accident.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import signal
import sys
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Optional

from ..caller import CANCEL_CALLBACKS
from ..errors import UserError, needs
from . import processes
from .errors import STDERR_SHOWN, MCPCancelledError, MCPConnectionError, MCPError, MCPRequestError, \
    MCPServerStartError, MCPTimeoutError, hide, redact, secret_forms

# a Python without them (WASI, some embedded builds) gets the typed error on `import`, naming the module
SHELL = f"MCPServerStdio (the shell {__name__.rpartition('.')[0]})"
select, subprocess = needs("select", SHELL), needs("subprocess", SHELL)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the longest line read from a server's stdout (a large image fits)
STDERR_KEPT = 8192  # bytes of a server's stderr kept (its last ones), for messages
WRITE_TIMEOUT = 30.0  # seconds a message may wait to be written when no request timeout applies
POLL = 0.05  # seconds between looks at a failure or a cancel while a write waits
CANCEL_WRITE = 1.0  # seconds a cancel notification may wait to be written (a server not reading fails)
EXIT_WAIT = 1.0  # seconds a server that closed its stdout is given to exit (and its stderr to end), for the message
ABANDONED_KEPT = 1024  # ids of requests given up (timed out, cancelled) whose late answers are ignored
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")  # what a child gets of our environment
METHOD_NOT_FOUND = -32601

_LIVE: "weakref.WeakSet[StdioConnection]" = weakref.WeakSet()  # connections to end at interpreter exit
if hasattr(os, "register_at_fork"):  # a forked child's exit must not end the servers its parent still uses
    os.register_at_fork(after_in_child=_LIVE.clear)

def child_environment(env: Optional[dict], mark: str) -> dict:
    """The child's environment: the safe variables of ours (not exported shell functions), then `env`, and the
    connection's mark (what the child starts inherits it: `processes`)."""
    base = {k: v for k, v in ((k, os.environ.get(k)) for k in INHERITED_ENV) if v and not v.startswith("()")}
    return {**base, **(env or {}), processes.MARK: mark}


def preview(data: Any, limit: int = 200, secrets: Iterable[str] = ()) -> str:
    """A short, printable view of what a server sent, each secret hidden before it is cut (a secret cut in two is
    no longer found, and its part would show). Only its start is searched (not 16 MiB for 200 characters): enough
    that what is shown ends a longest form before the end of the part searched. A form that begins in what is shown
    is then searched whole, and the part's raw end, where a form may be cut, is never shown (hiding only shortens)."""
    try:
        text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data)
    except RecursionError:
        return "(something nested too deeply to show)"
    forms = secret_forms(secrets)
    margin = len(forms[0]) if forms else 0
    size = limit + margin
    while True:  # a part with many secrets hidden is made longer, until what is shown ends `margin` before its end
        shown = hide(text[:size], forms)
        if size >= len(text) or len(shown) >= limit + margin:
            break
        size *= 2
    more = len(shown) - limit + max(0, len(text) - size)  # what was not searched counted as it is
    return repr(shown[:limit]) + (f" (and {more} more characters)" if more > 0 else "")


class _Waiter:
    """One request waiting for its answer: set with the message, or woken by a failure or a cancel."""

    __slots__ = ("event", "message", "size", "cancelled")

    def __init__(self) -> None:
        self.event, self.message, self.size, self.cancelled = threading.Event(), None, 0, False

    def cancel(self) -> None:  # from another thread: the run was cancelled
        self.cancelled = True
        self.event.set()


class StdioConnection:
    """One running server process and the JSON-RPC conversation with it (see the module docstring)."""

    def __init__(self, name: str, command: str, args: list, env: Optional[dict], cwd: Any, *,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, grace: float = 2.0,
                 on_notification: Optional[Callable[[str, Any], None]] = None):
        self.name, self.command, self.args, self.env, self.cwd = name, command, list(args), env, cwd
        self.max_message_bytes, self.grace, self.on_notification = max_message_bytes, grace, on_notification
        self._secrets = [v for v in (env or {}).values() if isinstance(v, str)]
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # _pending, _abandoned, _failure, _closed
        self._write_lock = threading.RLock()  # one message at a time; stdin is closed only under it
        self._stop_lock = threading.Lock()  # one thread ends the process; others wait for it (bounded)
        self._tail_lock = threading.Lock()
        self._pending: dict = {}  # request id -> _Waiter
        self._abandoned: dict = {}  # request id -> None (insertion ordered, bounded)
        self._failure: Optional[tuple] = None  # (error class, what happened) once the connection is unusable
        self._closed = self._stopped = False
        self._stderr, self._stderr_cut = bytearray(), False  # its last bytes; whether earlier ones were dropped
        self._proc: Optional[subprocess.Popen] = None
        self._mark = processes.new_mark()  # in its environment: what it starts is found by it (`processes`)
        self._watcher: Optional[subprocess.Popen] = None  # processes.watch's process
        self._readers: list = []

    # --- Starting and ending ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the process, its two reader threads and the one that sees it end; `MCPServerStartError` when it
        cannot be started."""
        if os.name != "posix":
            raise MCPServerStartError(f"MCP server {self.name!r} cannot be started: miniagents' stdio client needs "
                                      "a POSIX system (process groups and poll)", self.name)
        try:
            with self._lock:  # a close() that came first wins: nothing is started
                if self._closed:
                    raise self.failure()
                self._proc = subprocess.Popen(
                    [self.command, *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, cwd=self.cwd, env=child_environment(self.env, self._mark), bufsize=0,
                    start_new_session=True, close_fds=True)
                self._watcher = self._watch_orphan()
        except OSError as error:
            where = f" ({error.filename})" if error.filename not in (None, self.command) else ""
            raise MCPServerStartError(f"MCP server {self.name!r} could not start {self.command!r}: "
                                      f"{error.strerror or type(error).__name__}{where}", self.name) from None
        except (ValueError, subprocess.SubprocessError) as error:
            raise MCPServerStartError(f"MCP server {self.name!r} could not start {self.command!r}: {error}",
                                      self.name) from None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._poller = select.poll()
        self._poller.register(self._proc.stdin.fileno(), select.POLLOUT)
        _LIVE.add(self)
        for target, stream in ((self._read_stdout, "stdout"), (self._read_stderr, "stderr"), (self._watch, "exit")):
            reader = threading.Thread(target=target, name=f"mcp-{stream}-{self.name}", daemon=True)
            reader.start()
            self._readers.append(reader)

    def _watch_orphan(self) -> Optional[subprocess.Popen]:
        """`processes.watch` started for the server (its file run as a script: it imports nothing of ours); None
        when this program is no Python interpreter it could start (an embedded one: starting the host with Python's
        arguments could do anything), the file is none (a zip), or it cannot be started: then only the interpreter's
        exit ends the server."""
        if not os.path.basename(sys.executable or "").lower().startswith(("python", "pypy")) or \
                not os.path.isfile(processes.__file__):
            return None
        try:
            return subprocess.Popen(
                [sys.executable, "-I", "-S", processes.__file__, str(os.getpid()), str(self._proc.pid), self._mark,
                 repr(self.grace)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True)
        except OSError:
            return None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        """End the conversation and the process (and its group); waiting requests fail. Idempotent, bounded."""
        with self._lock:
            already, self._closed = self._closed, True
        if not already:
            self._fail(MCPConnectionError, "was cleaned up (connect it again to use it)")
        self._stop()
        for reader in self._readers:
            if reader is not threading.current_thread():
                reader.join(self.grace)
        _LIVE.discard(self)

    def _stop(self) -> None:
        """The protocol's shutdown: stdin closed, then SIGTERM, then SIGKILL, each after a grace period; the
        process reaped; what it left ended (`processes.end`), its descendants looked for while it still runs. Once,
        whoever calls first."""
        with self._stop_lock:
            proc = self._proc
            if proc is None or self._stopped:
                return
            family = processes.family(proc.pid, self._mark)
            with self._write_lock:  # no writer is using the descriptor when it is closed
                try:
                    proc.stdin.close()
                except OSError:
                    pass
            if not self._wait(self.grace):
                processes.signal_group(proc.pid, signal.SIGTERM)
                if not self._wait(self.grace):
                    processes.signal_group(proc.pid, signal.SIGKILL)
                    self._wait(self.grace)
            processes.end(proc.pid, self._mark, family, self.grace)
            if self._watcher is not None:  # killed and reaped: the server it watched is gone
                self._watcher.kill()
                self._wait(self.grace, self._watcher)
            self._stopped = True

    def _wait(self, seconds: float, process: Optional[subprocess.Popen] = None) -> bool:
        """Whether the server's process (or `process`) has ended, and is reaped, within `seconds`."""
        try:
            (process or self._proc).wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    # --- Failing -------------------------------------------------------------------------------------

    def _fail(self, kind: type, what: str, stop: bool = False) -> None:
        """Make the connection unusable (the first reason wins), wake every waiting request; with `stop`, end the
        process now (it broke the protocol: nothing it says can be trusted any more)."""
        with self._lock:
            if self._failure is None:
                self._failure = (kind, what)
            waiters, self._pending = list(self._pending.values()), {}
        for waiter in waiters:
            waiter.event.set()
        if stop:
            self._stop()

    def failure(self) -> Optional[MCPError]:
        """The error that made the connection unusable (a new instance each time), or None while it works."""
        if self._failure is None:
            return None
        kind, what = self._failure
        return self.error(kind, what)

    def error(self, kind: type, what: str, **extra: Any) -> MCPError:
        """An error of `kind` saying that the server `what`, with the end of its stderr."""
        return kind(redact(f"MCP server {self.name!r} {what}", self._secrets), self.name, self.stderr_tail(), **extra)

    def stderr_tail(self) -> str:
        """The end of the server's stderr, secrets hidden in all that is kept before it is cut to its end. What is kept
        may begin inside a secret (the bytes before it were dropped): as much as the longest form is dropped there,
        and a secret that straddles that point is dropped whole (dropping a fixed length could cut one too)."""
        with self._tail_lock:
            data, cut = bytes(self._stderr), self._stderr_cut
        text, forms = data.decode("utf-8", "replace"), secret_forms(self._secrets)
        start = len(forms[0]) if cut and forms else 0
        while start:  # it only moves on, to the end of a form found across it
            found = [text.find(form, max(0, start - len(form) + 1), start + len(form) - 1) for form in forms]
            ends = [i + len(form) for i, form in zip(found, forms) if 0 <= i < start]
            if not ends:
                break
            start = max(ends)
        return hide(text[start:], forms)[-STDERR_SHOWN:].strip()

    def shown(self, data: Any, limit: int = 200) -> str:
        """`preview` of what this server sent, without the values of its environment."""
        return preview(data, limit, self._secrets)

    # --- Requests ------------------------------------------------------------------------------------

    def request(self, method: str, params: Optional[dict] = None, timeout: Optional[float] = None,
                sizes: Optional[list] = None) -> Any:
        """Send a request and wait for its result (at most `timeout` seconds; None: until the server answers,
        fails or the run is cancelled); the answer's size in bytes is added to `sizes` (a listing's pages add up).
        A JSON-RPC error answer is an `MCPRequestError`; a cancelled run raises `MCPCancelledError`."""
        waiter = _Waiter()
        with self._lock:
            failed = self._failure is not None
            if not failed:
                request_id = next(self._ids)
                self._pending[request_id] = waiter
        if failed:
            raise self.failure()
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        aborts, deadline = CANCEL_CALLBACKS.get(), None if timeout is None else time.monotonic() + timeout
        if aborts is not None:
            aborts.append(waiter.cancel)
            if getattr(aborts, "cancelled", False):  # the run was cancelled at once before this began: never sent
                waiter.cancel()
        try:  # the write's wait (for the pipe, and for another message being written) counts in the timeout
            self._write(message, timeout, waiter)
            answered = waiter.event.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except BaseException as error:  # the write failed, was never made (a timeout, a cancel), or Ctrl-C: given up
            sent = not isinstance(error, (MCPTimeoutError, MCPCancelledError, UserError))  # UserError: not JSON
            self._give_up(request_id, method, "the client stopped waiting", sent)
            raise
        finally:
            if aborts is not None and waiter.cancel in aborts:
                aborts.remove(waiter.cancel)
        if waiter.message is not None:
            (sizes if sizes is not None else []).append(waiter.size)
            return self._result(method, waiter.message)
        if waiter.cancelled:
            self._give_up(request_id, method, "the run was cancelled")
            raise self.error(MCPCancelledError, f"was asked {method}; the run was cancelled before it answered")
        if answered:  # woken by a failure
            raise self.failure()
        self._give_up(request_id, method, f"no answer within {timeout:g} seconds")
        raise self.error(MCPTimeoutError, f"did not answer {method} within {timeout:g} seconds "
                                          "(client_session_timeout_seconds)")

    def notify(self, method: str, params: Optional[dict] = None, timeout: Optional[float] = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message, timeout)

    def _give_up(self, request_id: int, method: str, reason: str, tell: bool = True) -> None:
        """Stop waiting for a request: a late answer is then ignored, and the server is told (`tell`: it was sent;
        never for `initialize`, which the protocol says a client must not cancel)."""
        with self._lock:
            if self._pending.pop(request_id, None) is None:
                return  # answered, or the connection failed meanwhile
            self._abandoned[request_id] = None
            if len(self._abandoned) > ABANDONED_KEPT:
                del self._abandoned[next(iter(self._abandoned))]
        if tell and method != "initialize" and self._failure is None:
            try:
                self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason}, CANCEL_WRITE)
            except MCPError:
                pass

    def _result(self, method: str, message: dict) -> Any:
        if "error" not in message:
            return message.get("result")
        error = message["error"]
        code, text, data = (error.get("code"), error.get("message"), error.get("data")) if isinstance(error, dict) \
            else (None, error, None)
        shown = code if type(code) is int else self.shown(code, 40)  # a code of any size or type, cut as an id is
        raise self.error(MCPRequestError, f"answered {method} with error {shown}: {self.shown(text)}", code=code,
                         data=data)

    def _write(self, message: dict, timeout: Optional[float], waiter: Optional[_Waiter] = None) -> None:
        """Write one message, waiting at most `timeout` (or WRITE_TIMEOUT) in all: for another message being written
        (the reader's answer to a ping may wait WRITE_TIMEOUT: a cancel's notice never waits as long), then for the
        server to read it. Never written within it: `MCPTimeoutError`; written in part: the connection fails. Both
        waits look at the request's `waiter` every POLL seconds: a cancelled run ends them (`MCPCancelledError`)."""
        try:
            data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"
        except (TypeError, ValueError) as error:
            raise UserError(f"MCP server {self.name!r}: {message.get('method')} cannot be sent, its parameters "
                            f"are not JSON ({error})") from None
        limit, what = WRITE_TIMEOUT if timeout is None else timeout, message.get("method", "an answer")
        view, deadline = memoryview(data), time.monotonic() + limit
        waiter = waiter or _Waiter()  # a notification or an answer to the server: never cancelled
        while not self._write_lock.acquire(timeout=min(POLL, max(0.0, deadline - time.monotonic()))):
            if waiter.cancelled:
                raise self.error(MCPCancelledError, f"was not sent {what} whole: the run was cancelled first")
            if time.monotonic() >= deadline:
                raise self.error(MCPTimeoutError, f"could not send {what} within {limit:g} seconds: another message "
                                                  "waited to be written to its stdin")
        try:
            while view and not waiter.cancelled:  # tried once at least, however long the lock took
                if self._failure is not None:
                    raise self.failure()
                try:
                    view = view[os.write(self._proc.stdin.fileno(), view):]
                    continue
                except BlockingIOError:
                    pass
                except (OSError, ValueError):  # a closed pipe: the server is gone or closed its stdin
                    self._fail(MCPConnectionError, self._ended("closed its stdin (it reads no more requests)"))
                    break  # the process is ended below, outside the write lock
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._poller.poll(int(min(left, POLL) * 1000) + 1)  # a failure or a cancel stops it soon
        finally:
            self._write_lock.release()
        stopped = waiter.cancelled
        if view and (len(view) < len(data) or not stopped):  # outside the write lock: ending the process takes it
            self._fail(MCPConnectionError, f"was sent only part of {what}: the run was cancelled first"
                       if stopped else f"stopped reading its stdin (a message waited {limit:g} seconds to be "
                                       "written)", stop=True)
        if view:
            raise self.error(MCPCancelledError, f"was not sent {what} whole: the run was cancelled first") if stopped \
                else self.failure()

    # --- Reading -------------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        """Split stdout into lines (at most `max_message_bytes` each) and route each; on its end, say how the
        server ended. The only user of stdout's descriptor: it closes it when done."""
        stream = self._proc.stdout
        buffer, searched = bytearray(), 0
        try:
            while self._failure is None:
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    self._stdout_ended()
                    return
                buffer += chunk
                end = buffer.find(b"\n", searched)
                while end >= 0 and self._failure is None:
                    line = bytes(buffer[:end])
                    del buffer[:end + 1]
                    self._route(line)
                    end = buffer.find(b"\n")
                searched = len(buffer)
                if len(buffer) > self.max_message_bytes:
                    self._fail(MCPConnectionError, f"wrote a line of more than {self.max_message_bytes} bytes to "
                                                   "its stdout (max_message_bytes)", stop=True)
        except OSError as error:
            self._fail(MCPConnectionError, f"could not be read from ({error.strerror or error})", stop=True)
        except Exception as error:  # a bug of ours must not leave requests waiting: they fail with it
            self._fail(MCPConnectionError, f"sent something the client could not handle ({type(error).__name__}: "
                                           f"{error})", stop=True)
        finally:
            stream.close()

    def _stdout_ended(self) -> None:
        self._fail(MCPConnectionError, self._ended("closed its stdout (its process is still running)"), stop=True)

    def _ended(self, running: str) -> str:
        """Why a pipe to the server ended: how its process ended (given EXIT_WAIT, and its stderr as long to end,
        so the message has the server's last words), or `running` when it goes on."""
        if not self._wait(EXIT_WAIT):
            return running
        if len(self._readers) > 1:
            self._readers[1].join(EXIT_WAIT)
        return self._exit()

    def _watch(self) -> None:
        """The server's own end, noticed even when a process it started still holds its stdout (whose end the
        reader then never sees): the reader is given EXIT_WAIT to route what was written, then the connection
        fails as the reader would have failed it, and the group (that process too) is ended."""
        self._proc.wait()
        self._readers[0].join(EXIT_WAIT)
        if self._failure is None:
            self._fail(MCPConnectionError, self._exit(), stop=True)

    def _exit(self) -> str:
        """How the server's process ended: its exit code, or the signal that killed it."""
        if self._proc.returncode >= 0:
            return f"exited with code {self._proc.returncode}"
        try:
            return f"was killed by {signal.Signals(-self._proc.returncode).name}"
        except ValueError:
            return f"was killed by signal {-self._proc.returncode}"

    def _read_stderr(self) -> None:
        stream = self._proc.stderr
        try:
            while True:
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    return
                with self._tail_lock:
                    self._stderr += chunk
                    if len(self._stderr) > 2 * STDERR_KEPT:
                        del self._stderr[:-STDERR_KEPT]
                        self._stderr_cut = True
        except OSError:
            return
        finally:
            stream.close()

    def _route(self, line: bytes) -> None:
        """One line of stdout: a response, a request or a notification from the server, or a failure."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return self._fail(MCPConnectionError, f"wrote a line that is not JSON to its stdout: {self.shown(line)}",
                              stop=True)
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            if "id" in message:
                return self._answer(message["id"], message["method"])
            return self._notified(message["method"], message.get("params"))
        if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
            return self._deliver(message, len(line))
        self._fail(MCPConnectionError, f"wrote JSON that is not a JSON-RPC message to its stdout: {self.shown(line)}",
                   stop=True)

    def _deliver(self, message: dict, size: int) -> None:
        request_id = message["id"]
        ours = type(request_id) is int  # the ids sent are ints (True is no id of ours, though it equals 1)
        with self._lock:
            waiter = self._pending.pop(request_id, None) if ours else None
            late = ours and waiter is None and request_id in self._abandoned  # given up: its answer is ignored
            if late:
                del self._abandoned[request_id]
        if waiter is not None:
            waiter.message, waiter.size = message, size
            waiter.event.set()
        elif not late:
            error = message.get("error")
            what = f" with the error {self.shown(error.get('message') if isinstance(error, dict) else error)}" \
                if error is not None else ""
            self._fail(MCPConnectionError, f"answered request id {self.shown(request_id, 40)}{what}, which this "
                                           "client never sent or had an answer to already", stop=True)

    def _answer(self, request_id: Any, method: str) -> None:
        """A request from the server: `ping` is answered; nothing else is offered by this client."""
        if method == "ping":
            reply: dict = {"jsonrpc": "2.0", "id": request_id, "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": {
                "code": METHOD_NOT_FOUND, "message": f"Method not found: this client does not offer {method}"}}
        try:
            self._write(reply, None)
        except MCPError:
            pass  # the connection failed: the waiting requests have the reason

    def _notified(self, method: str, params: Any) -> None:
        if self.on_notification is None:
            return
        try:
            self.on_notification(method, params)
        except Exception:  # a handler's bug must not stop the reading
            from ..errors import warn

            warn("MCP server %r: handling its %s notification failed", self.name, method, exc_info=True)


@atexit.register
def _close_all() -> None:
    """At interpreter exit: end every server still running, so none outlives the program."""
    for connection in list(_LIVE):
        try:
            connection.close()
        except Exception:
            pass
