"""The transport under both adapters: JSON POST over `http.client`, attempts and retries, bounds, cancelling.

Where it sits: `chat_completions.py` and `responses.py` build a body, hand it to `HTTPTransport.post`, and get
back an `Exchange`: parsed JSON (`data`) or SSE pairs (iterate it). The rules it applies (SSE framing, error
bodies, which failures to retry and how long to wait) are pure functions in `protocol.py`. A server sets none
of the bounds: each wait asks the exchange how long it may take (`_pace`, bounded.py), each body how much it
may hold (`_chunks`). Every message is redacted of every secret the exchange holds (`Exchange.secret`).
Never: retry after a stream has delivered an event, retry a validation error unchanged, put a secret in
a message, repr or URL shown, follow redirects, ask for gzip, or import `http.client`/`ssl`/`urllib` at
module import time.
"""
from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Iterator, Optional

from .. import __version__
from ..errors import AgentsException, ModelHTTPError, ModelTimeoutError, UserError, needs
from ..caller import Cancelled
from ..items import described
from ..validate import STRICT_JSON
from .interface import CANCEL_CALLBACKS
from .protocol import (RETRY_HEADERS, error_from_body, http_error, is_credential_name, iter_lines, iter_sse,
                       not_an_api_error, redact, retry_delay, should_retry, shown, timeout_error, too_large, with_note)
from .protocol import hint as protocol_hint

CONNECT_TIMEOUT = 5.0       # seconds to open a connection (TCP + TLS), whatever the read timeout
DRAIN_SECONDS = 0.25        # after a stream's last event: how long to wait for the body's end before hanging up
MAX_IDLE_CONNECTIONS = 8   # keep-alive connections a transport keeps open between requests; more are closed
MAX_RESPONSE_BYTES = 32 * 2 ** 20  # default cap on a plain body and on one line or event of a stream
READ_SIZE = 65536           # the most one receive asks for
USER_AGENT = f"miniagents/{__version__} (python stdlib)"


def check_bounds(attempt_timeout: Optional[float], max_response_bytes: int, timeout: float = 600.0,
                 max_retries: int = 0) -> None:
    """Refuse bounds that would bound nothing, or nothing a clock can wait for (a ValueError when the model or
    provider is built)."""
    for name, seconds in (("timeout", timeout), ("attempt_timeout", attempt_timeout)):
        if (seconds is not None or name == "timeout") and not seconds_bound(seconds):
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {described(seconds)}")
    for name, count, least in (("max_response_bytes", max_response_bytes, 1), ("max_retries", max_retries, 0)):
        if isinstance(count, bool) or not isinstance(count, int) or count < least:
            raise ValueError(f"{name} must be an int >= {least}, got {described(count)}")


def seconds_bound(seconds: Any) -> bool:
    """Whether `seconds` is a wait a clock can keep: a finite number > 0 (not a bool)."""
    return isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < float("inf")

# ----------------------------------------------------------------------------- cancelling


class CancelSwitch:
    """Aborts one request from any thread by shutting its sockets, so a blocked connect, send or read returns.

    Calling it twice is harmless; after `release()` (the request is over and its socket may serve the
    next one) it touches nothing.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._sockets: list = []
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def watch(self, sock) -> None:
        """Let a cancel reach `sock` (shut at once if the request is already cancelled)."""
        with self._lock:
            if not self.cancelled:
                self._sockets.append(sock)
                return
        _shut(sock)

    def release(self) -> None:
        with self._lock:
            self._sockets = []

    def sleep(self, seconds: float) -> None:
        """Sleep, but wake up the moment the request is cancelled."""
        self._cancelled.wait(seconds)

    def __call__(self) -> None:
        with self._lock:
            self._cancelled.set()
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


def _shut(sock) -> None:
    import socket
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: a TLS socket's would touch its state
    except (OSError, ValueError):
        pass  # not connected yet, or already closed


def _open_socket(switch: CancelSwitch, address, timeout, source_address=None, *_):
    """`socket.create_connection`, with each socket handed to the cancel switch before it starts connecting, and
    `timeout` for connecting in all: every address tried, then the TLS handshake (left the rest as its timeout,
    which the ssl module applies to the whole handshake). Name lookup is the system resolver's, with its own."""
    import socket
    host, port = address
    deadline = time.monotonic() + timeout
    error: Optional[OSError] = None
    for family, kind, proto, _name, addr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        switch.watch(sock)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            if source_address:
                sock.bind(source_address)
            sock.connect(addr)
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            return sock
        except OSError as exc:
            error = exc
            sock.close()
            if switch.cancelled:
                break
    raise error if error is not None else OSError(f"no address found for {host}")


# ----------------------------------------------------------------------------- the transport


class RequestCancelled(ModelHTTPError, Cancelled):
    """A request the run's cancel aborted: a `ModelHTTPError` (code "cancelled") that is also the kernel's
    `Cancelled`, so the run returns as cancelled; any other error raised after a cancel is the run's own."""


class _Retry(Exception):
    """Internal: an attempt failed in a retryable way (carries the error to raise and the response headers)."""

    def __init__(self, error: AgentsException, headers: Optional[dict] = None):
        self.error, self.headers = error, headers or {}


class Exchange:
    """One POST as it happens: attempts (retried by the policy in protocol.py), the 2xx response, then its body.

    A plain exchange has its parsed JSON in `data`; a streamed one is iterated for SSE `(event, data)`
    pairs and must be `close()`d (safe twice): a body read to its end leaves the connection for the next
    request, one that was left early is drained briefly or hung up. `explain(err)` adds what was tried.
    """

    def __init__(self, transport: "HTTPTransport", path: str, body: dict, headers: Optional[dict],
                 query: Optional[dict], timeout: Optional[float], stream: bool, not_found_hint: str = "",
                 max_retries: Optional[int] = None):
        client = needs("http.client", "a model's server reached over HTTP")  # a Python without _socket or select
        self._broken = (OSError, ValueError, client.HTTPException)  # what a socket or a garbled answer raises
        self.transport, self.path, self.stream, self.not_found_hint = transport, path, stream, not_found_hint
        self.url = transport.shown_url(path)
        self.target = transport.request_target(path, query)
        try:
            self.payload = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:  # a value JSON cannot hold (NaN, an object, too deep)
            raise UserError(f"The request body cannot be sent as JSON: {exc}") from None
        self.request_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                                "Accept": "text/event-stream" if stream else "application/json",
                                **transport.headers, **(headers or {})}
        proxy = transport.proxy()
        if proxy and proxy.authorization and transport.scheme == "http":  # the proxy reads plain requests
            self.request_headers.setdefault("Proxy-Authorization", proxy.authorization)
        self.secret = transport.secret + request_secrets(self.request_headers, query)
        self.read_timeout = transport.timeout if timeout is None else timeout
        self.attempt_timeout = transport.attempt_timeout or self.read_timeout
        self.max_bytes = transport.max_response_bytes
        self.max_retries = transport.max_retries if max_retries is None else max_retries
        self.attempts = 0
        self._deadline = 0.0        # when the current wait runs out: the attempt's, the next event's, the drain's
        self._per_attempt = True    # whether that deadline is the attempt's (for the timeout's message)
        self.switch = CancelSwitch()
        self.response: Any = None
        self.headers: dict = {}
        self.data: Any = None
        self._conn: Any = None
        self._finished = self._closed = False
        self._callbacks = CANCEL_CALLBACKS.get()
        if isinstance(self._callbacks, list):
            self._callbacks.append(self.switch)
            if getattr(self._callbacks, "cancelled", False):  # the run was cancelled before this request began
                self.switch()

    @property
    def request_id(self) -> Optional[str]:
        return redact(self.headers.get("x-request-id"), self.secret)

    @property
    def where(self) -> str:
        """What was tried, for error messages: method, URL (no query, no key) and attempts."""
        return f"(POST {self.url}, {self.attempts} attempt{'s' if self.attempts != 1 else ''})"

    def explain(self, err: AgentsException) -> AgentsException:
        """`err` naming what was tried (once), after a hint where the server's words need one (a 404 that a
        mistyped base URL explains, a 501, a context too small)."""
        if getattr(err, "explained", False) or not isinstance(err, (ModelHTTPError, ModelTimeoutError)):
            return err
        hint = self.transport.not_found_hint() + self.not_found_hint if getattr(err, "status", None) == 404 else ""
        if isinstance(err, ModelHTTPError):
            hint += protocol_hint(err, self.transport.shown_url(""))
        err = with_note(err, f"{hint}{self.where}")
        err.explained = True
        return err

    # -- the request

    def open(self) -> "Exchange":
        """Send until a 2xx status line arrives (retrying); then read a plain body. Raises explained errors."""
        try:
            while True:
                self._send()
                if self.stream:
                    return self
                try:
                    self.data = self._read_json()
                    self.close()
                    return self
                except _Retry as retry:
                    self._wait_or_fail(retry)
        except AgentsException as err:
            self.close()
            raise self.explain(err) from None

    def __iter__(self) -> Iterator[tuple]:
        """SSE `(event, data)` pairs; a stream that breaks before its first event is sent again."""
        delivered = False
        try:
            while True:
                try:
                    self._expect_event()
                    for pair in iter_sse(iter_lines(self._chunks(), self.max_bytes), self.max_bytes):
                        delivered = True
                        yield pair
                        self._expect_event()
                    self.close()
                    return
                except _Retry as retry:
                    if delivered:
                        raise retry.error from None
                    self._wait_or_fail(retry)
                    self._send()
        except AgentsException as err:
            self.close()
            raise self.explain(err) from None
        finally:
            self.close()

    def close(self) -> None:
        """End the exchange: keep a finished connection, drain a stream left early for a moment, else hang up."""
        if self._closed:
            return
        self._closed = True
        if isinstance(self._callbacks, list) and self.switch in self._callbacks:
            self._callbacks.remove(self.switch)
        self.switch.release()
        if self.response is not None and not self._finished and (self.switch.cancelled or not self._drain()):
            self.transport.discard(self._conn)
        self.transport.release(self._conn)  # nothing left unread: it can serve the next request, on any thread

    # -- internals

    def _cancelled(self) -> ModelHTTPError:
        return http_error(None, "the request was cancelled", RequestCancelled, type="cancelled", code="cancelled")

    def _hang_up(self, conn: Any) -> None:
        """Hang up a connection that failed or was left mid-body; raise the cancellation when that was why."""
        self.transport.discard(conn)
        if self.switch.cancelled:
            raise self._cancelled() from None

    def _send(self) -> None:
        """Attempt until a 2xx status line arrives, waiting between attempts; raises the last error."""
        while True:
            try:
                return self._attempt()
            except _Retry as retry:
                self._wait_or_fail(retry)

    def _wait_or_fail(self, retry: _Retry) -> None:
        if self.switch.cancelled:
            raise self._cancelled()
        if self.attempts > self.max_retries:
            raise retry.error
        self.switch.sleep(retry_delay(self.attempts - 1, retry.headers))
        if self.switch.cancelled:
            raise self._cancelled()

    def _attempt(self) -> None:
        """One attempt: connect if needed, send, read the status line. Leaves a 2xx response in `response`."""
        import socket
        from .bounded import TooManyInterimResponses, pace
        if self.switch.cancelled:
            raise self._cancelled()
        self.attempts += 1
        self._deadline, self._per_attempt = time.monotonic() + self.attempt_timeout, True
        t = self.transport
        for second_try in (False, True):
            conn = self._conn = self._conn or t.connection()  # each attempt's, and a stale socket's retry, too
            pace(conn, self._pace)
            reused = conn.sock is not None
            if not reused:
                self._connect(conn)
            self.switch.watch(conn.sock)
            try:
                conn.request("POST", self.target, body=self.payload, headers=self.request_headers)
                resp = conn.getresponse()
                break
            except TooManyInterimResponses as exc:
                t.discard(conn)
                raise http_error(None, str(exc), type="invalid_response") from None
            except self._broken as exc:
                self._hang_up(conn)
                if reused and not second_try:
                    continue  # the server closed an idle keep-alive socket: one free retry on a fresh one
                if isinstance(exc, socket.timeout):
                    raise _Retry(self._timed_out("waiting for the response to start",
                                                 "waiting for the response to start, within attempt_timeout")) from None
                raise _Retry(http_error(None, f"the connection to {t.host}:{t.port} failed while sending the "
                                              f"request: {type(exc).__name__}: {redact(str(exc), self.secret)}",
                                        type="connection_error", code="no_response")) from None  # it was made
        self.response, self.headers = resp, {k.lower(): v for k, v in resp.getheaders()}
        self._finished = False
        if 200 <= resp.status < 300:
            if self.stream and self._content_type() == "text/html":
                raise self._not_an_api(self._body())  # a web page, not an event stream
            if self.stream and self._content_type() == "application/json":  # an error, or `stream: true` ignored
                err = error_from_body(resp.status, self._body(), self.request_id, self.secret)
                if isinstance(err.body, dict) and (err.body.get("error") or err.body.get("object") == "error"):
                    raise err  # as a plain answer's error is read
                raise http_error(resp.status, "the server answered a streamed request with application/json, not an "
                                 "event stream: it ignores stream: true; call the model without streaming",
                                 type="invalid_response", request_id=self.request_id)
            return
        try:
            raw = self._body()
        except _Retry:
            raw = b""  # the status says enough; the connection is already hung up
        except ModelHTTPError as failed:
            if failed.type != "response_too_large":
                raise  # cancelled
            raw = failed.message  # over max_response_bytes: the status comes with that
        self.response = None
        err = error_from_body(resp.status, raw, self.headers.get("x-request-id"), self.secret)
        err.retry_headers = {n: redact(self.headers[n], self.secret) for n in RETRY_HEADERS if n in self.headers}
        if resp.status == 407 and t.proxy():
            err = with_note(err, f"(the proxy {t.proxy().host}:{t.proxy().port} asks for credentials: give "
                                 f"them in its URL, {t.scheme}_proxy=http://user:password@host:port, "
                                 "percent-encoded)")
        if should_retry(resp.status, self.headers, err):
            raise _Retry(err, self.headers)
        raise err

    def _connect(self, conn) -> None:
        import socket
        t = self.transport
        left = self._deadline - time.monotonic()
        if left <= 0:  # spent on a pooled socket the server had closed
            raise _Retry(self._timed_out("", "connecting, within attempt_timeout"))
        seconds = min(self.read_timeout, CONNECT_TIMEOUT, left)
        conn.timeout = seconds
        conn._create_connection = lambda *a: _open_socket(self.switch, *a)
        try:
            conn.connect()
        except self._broken as exc:
            self._hang_up(conn)
            target = f"{conn.host}:{conn.port}" + (" (the proxy)" if t.proxy() else "")
            if isinstance(exc, socket.timeout):
                raise _Retry(timeout_error(seconds, f"Could not connect to {target} within {seconds:g} s.")) from None
            reason, final = self._connect_failure(exc, conn.host)
            err = http_error(None, f"could not connect to {target}: {reason}", type="connection_error")
            if final:
                raise err from None
            raise _Retry(err) from None

    def _connect_failure(self, exc: BaseException, host: str) -> tuple:
        """Why a connection to `host` (the server's, or the proxy's) failed, in words, and whether trying again is
        pointless."""
        import socket
        t = self.transport
        if isinstance(exc, ConnectionRefusedError):
            return "connection refused (is the server running, and on that port?)", False
        if isinstance(exc, socket.gaierror):
            return f"the host name {host!r} could not be resolved", False
        if t.scheme == "https":
            import ssl
            if isinstance(exc, ssl.SSLCertVerificationError):
                return f"the TLS certificate was not accepted ({redact(str(exc), self.secret)})", True
            if isinstance(exc, ssl.SSLError) and not isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
                plain = "http" + t.shown_url("")[len("https"):]
                return (f"the TLS handshake failed ({exc.reason or type(exc).__name__}); if that server speaks "
                        f"plain HTTP, use base_url={plain!r}", True)
        if t.proxy() and "Tunnel connection failed" in str(exc):  # the proxy refused the CONNECT
            hint = (f"; give the proxy's credentials in its URL, {t.scheme}_proxy=http://user:password@host:port "
                    "(percent-encoded)" if " 407" in str(exc) else "")
            return f"the proxy refused the tunnel to {t.host}:{t.port} ({redact(str(exc), self.secret)}){hint}", True
        return f"{type(exc).__name__}: {redact(str(exc), self.secret)}", False

    def _read_json(self) -> Any:
        raw = self._body()
        text = raw.decode("utf-8", errors="replace").strip()  # DeepSeek pads with blank lines
        try:
            return STRICT_JSON.decode(text)  # no NaN or Infinity, which JSON has not: no request could send them back
        except (ValueError, RecursionError):  # (nested deeper than Python reads)
            raise self._not_an_api(raw) from None

    def _content_type(self) -> str:
        return (self.headers.get("content-type") or "").split(";")[0].strip().lower()

    def _not_an_api(self, raw: bytes) -> ModelHTTPError:
        """A 2xx answer that is not what an OpenAI-compatible API sends (a web page, a plain text), said so."""
        return not_an_api_error(self.response.status, raw, self._content_type(), self.transport.shown_url(""),
                                self.request_id, self.secret)

    # -- reading, within the bounds

    def _expect_event(self) -> None:
        """A stream's next event is due within `timeout` from now (keep-alive comments do not move this)."""
        self._deadline, self._per_attempt = time.monotonic() + self.read_timeout, False

    def _pace(self) -> float:
        """How long the next receive may wait: `timeout`, cut to what is left of the current deadline."""
        import socket
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the deadline has passed")
        return min(self.read_timeout, left)

    def _timed_out(self, idle: str, late: str) -> ModelTimeoutError:
        """The timeout that ran out, named: one receive's (`idle` says what was awaited), the attempt's (`late`
        says what it was doing), or a stream's wait for its next event."""
        if self._deadline - time.monotonic() > 0.001:
            return timeout_error(self.read_timeout, idle)
        if self._per_attempt:
            return timeout_error(self.attempt_timeout, f"{late} (it bounds one whole attempt: connecting, sending, "
                                                       "the response head with its interim 1xx answers, a plain body)")
        return timeout_error(self.read_timeout, "The stream sent no event within the timeout (keep-alive comments "
                                                "do not count).")

    def _body(self) -> bytes:
        """The rest of a plain body, refused past `max_response_bytes` as soon as the server announces more
        (its Content-Length, or the size of a chunk), before those bytes are read."""
        return b"".join(self._chunks(self.max_bytes))

    def _chunks(self, limit: Optional[int] = None) -> Iterator[bytes]:
        """The body as it arrives, one receive at a time; with `limit`, no more than that in all. At its end the
        response is closed, which leaves the connection for the next request."""
        import http.client
        resp = self.response
        received = 0
        while True:
            if limit is not None:
                announced = resp.length if isinstance(resp.length, int) else resp.chunk_left
                if received + (announced if isinstance(announced, int) else 0) > limit:
                    raise self._too_large(limit, received, announced)
            try:  # a body of unknown length: never more than one byte past the limit is read
                chunk = resp.read1(READ_SIZE if limit is None else max(1, min(READ_SIZE, limit - received + 1)))
            except self._broken as exc:
                raise self._read_failure(exc) from None
            if self.switch.cancelled:
                self._hang_up(self._conn)
            if not chunk:
                if isinstance(resp.length, int) and resp.length > 0:  # closed before its Content-Length
                    raise self._read_failure(http.client.IncompleteRead(b"", resp.length)) from None
                self._finished = True
                resp.close()
                return
            received += len(chunk)
            yield chunk

    def _too_large(self, limit: int, received: int, announced: Any) -> ModelHTTPError:
        self.transport.discard(self._conn)
        if not isinstance(announced, int):  # no Content-Length: the body ends when the connection closes
            said = f"{received} bytes read, and its length was not announced"
        elif not self.response.chunked:
            said = f"its Content-Length is {received + announced}"
        else:
            said = f"{received} bytes read and a chunk of {announced} more announced"
        return too_large("the response", limit, self.response.status, said)

    def _read_failure(self, exc: BaseException) -> BaseException:
        """A body that broke off (reset, stall, bad chunking) as a retryable error, or the cancellation."""
        import socket
        self._hang_up(self._conn)
        if isinstance(exc, socket.timeout):
            return _Retry(self._timed_out("The server sent nothing more within the timeout.",
                                          "The answer did not arrive whole within attempt_timeout"))
        t = self.transport
        return _Retry(http_error(None, f"the connection to {t.host}:{t.port} broke off in the middle of the "
                                       f"response ({type(exc).__name__}): it is truncated",
                                 type="connection_error", code="truncated"))

    def _drain(self) -> bool:
        """Read what is left of a body for `DRAIN_SECONDS` at most; True when it ended (socket reusable)."""
        self._deadline = time.monotonic() + DRAIN_SECONDS
        try:
            for _ in self._chunks():
                pass
        except (_Retry, AgentsException):
            return False
        return True


def query_secrets(query: str) -> tuple:
    """The values of a query string's credential-named parameters (`key`, `api-key`, `sig`, `access_token`, ...),
    as written and as decoded (a server may echo either)."""
    from urllib.parse import unquote, unquote_plus
    found = []
    for pair in (query or "").split("&"):
        name, _, value = pair.partition("=")
        if value and is_credential_name(unquote_plus(name)):
            found += [value, unquote(value), unquote_plus(value)]
    return tuple(dict.fromkeys(found))


def shown_base_url(base_url: str, secret: Any = None) -> str:
    """A base URL as a repr or message shows it: no user or password, no secret, no credential-named query value;
    read without `urlsplit`, so a URL it refuses (an unclosed "[") is shown all the same, and a password with a "/",
    "?" or "#" not percent-encoded is hidden too (to the last "@": a path or query holding one is shown from it)."""
    bare = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)(?:[^/?#]*@|[^/?#@]*:.*@)", r"\1", base_url)
    return redact(bare, (secret,) + query_secrets(base_url.partition("#")[0].partition("?")[2]))


def read_two_ways(url: str) -> bool:
    """Whether `url`'s host has two readings: http.client's, before the first "/", "?" or "#", and the one after the
    last "@" that `shown_base_url` hides to (a password of digits then an unencoded "/" is a port and a path)."""
    return bool(re.match(r"[^:/?#]*://[^/?#@]*:[^/?#@]*[/?#].*@", url))


def request_secrets(headers: dict, query: Optional[dict]) -> tuple:
    """What one request sends that no message may show: its credential-named headers' and query parameters'
    values (an `Authorization` value's credentials without the scheme too)."""
    found = []
    for name, value in list(headers.items()) + list((query or {}).items()):
        if isinstance(name, str) and isinstance(value, str) and is_credential_name(name):
            found += [value] + value.split(" ", 1)[1:]
    return tuple(found)


def check_headers(headers: Optional[dict]) -> Optional[dict]:
    """`headers`, when each can be sent: one with a newline, a NUL or a character outside Latin-1 (a stray newline
    from a key file) is a `UserError` naming the header, before http.client refuses it quoting its value; so is one
    http.client would raise a bare TypeError for (a value None) or fail to send, retried as a connection error (an
    empty name, a colon in it)."""
    for name, value in (headers or {}).items():
        if not (isinstance(name, str) and name and name.strip() == name and ":" not in name
                and isinstance(value, (str, bytes, int))):
            raise UserError(f"The header {shown(str(name))!r} cannot be sent (its name is a {type(name).__name__}, its "
                            f"value a {type(value).__name__}): a name is a string, not empty, with no colon or "
                            "surrounding space, and a value a string")
        if any(ch in "\r\n\x00" or ord(ch) > 255 for ch in f"{name}{value}"):
            raise UserError(f"The header {shown(str(name))!r} has a character that cannot be sent in an HTTP header "
                            "(a newline, a NUL or a character outside Latin-1): check for a stray newline")
    return headers


def quiet(sock: Any) -> bool:
    """Whether an idle keep-alive socket has nothing to read (TLS data already decrypted counts too). The system's
    own selector: `select.select` refuses a descriptor past 1023, which a busy process has."""
    selectors = needs("selectors", "a model's server reached over HTTP (an idle connection checked before reuse)")
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            return not (getattr(sock, "pending", lambda: 0)() or selector.select(0))
    except (OSError, ValueError):  # closed meanwhile
        return False


class HTTPTransport:
    """POSTs JSON to one base URL; a connection that finished a request waits, open, for the next on any thread."""

    def __init__(self, base_url: str, headers: dict, *, timeout: float = 600.0, max_retries: int = 2,
                 attempt_timeout: Optional[float] = None, max_response_bytes: int = MAX_RESPONSE_BYTES,
                 query: Optional[dict] = None, secret: Optional[str] = None):
        from urllib.parse import urlsplit
        try:
            parts = urlsplit(base_url.rstrip("/"))
            self.port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:  # an unclosed "[", a port that is no number
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or re.search(
                "[\x00-\x20\x7f]", parts.path + parts.query):  # what http.client refuses to send, each request
            raise ValueError(f"base_url must be an http(s) URL (with no space or control character), got "
                             f"{shown_base_url(base_url, secret)!r}")
        if read_two_ways(base_url):
            raise ValueError(f"base_url {shown_base_url(base_url, secret)!r} is read two ways: the host is before "
                             "the first '/' (a password's '/', '?' or '#' must be written %2F, %3F or %23) or after "
                             "the last '@' (a path's '@' must be written %40)")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.base_path, self.base_query = parts.path, parts.query
        self.headers, self.query = check_headers(dict(headers)), dict(query or {})
        self.timeout, self.max_retries = timeout, max_retries
        self._secrets = (secret,) + query_secrets(parts.query)
        self.attempt_timeout, self.max_response_bytes = attempt_timeout, max_response_bytes
        self._conns: list = []  # the idle connections: a bounded pool, so a thread that ends leaves no socket open
        self._conns_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HTTPTransport({self.shown_url('')})"

    @property
    def secret(self) -> tuple:
        """Every value no message may show: the API key, the credential-named values of the base URL's query
        string, and the proxy's password and header (once the proxy is known)."""
        try:
            proxy = self.proxy()
        except UserError:
            proxy = None
        return tuple(s for s in self._secrets + (proxy.secrets if proxy else ()) if s)

    def post(self, path: str, body: dict, *, stream: bool = False, headers: Optional[dict] = None,
             query: Optional[dict] = None, timeout: Optional[float] = None, not_found_hint: str = "",
             max_retries: Optional[int] = None) -> Exchange:
        """POST `body` (JSON) to `base_url + path`; returns the open `Exchange` once a 2xx status arrived.

        `not_found_hint` is added to a 404's message (the caller knows things the URL does not); `max_retries`
        overrides the transport's for this request (0 while the run manages retries itself)."""
        return Exchange(self, path, body, check_headers(headers), query, timeout, stream, not_found_hint,
                        max_retries).open()

    # -- what the exchange needs

    def shown_url(self, path: str) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{redact(self.base_path, self._secrets)}{path}"

    def request_target(self, path: str, query: Optional[dict]) -> str:
        from urllib.parse import urlencode
        query = {**self.query, **(query or {})}
        for name, value in query.items():  # urlencode would send another kind's repr (a RecursionError, nested deep)
            if not isinstance(value, (str, bytes, int, float)):
                raise UserError(f"The query parameter {shown(str(name))!r} cannot be sent (its value a "
                                f"{type(value).__name__}): a value is a string or a number")
        q = "&".join(p for p in (self.base_query, urlencode(query)) if p)
        url = self.base_path + path + (("?" + q) if q else "")
        if self.proxy() and self.scheme == "http":
            return f"http://{self.host}:{self.port}{url}"  # plain-http proxy: absolute-form target
        return url

    def not_found_hint(self) -> str:
        """For a 404: what the base URL should look like, when it looks like the usual mistakes."""
        base = self.shown_url("")
        for endpoint in ("/chat/completions", "/responses"):
            if self.base_path.endswith(endpoint):
                root = base[:-len(endpoint)]
                return (f"The base URL must stop before the endpoint: use base_url={root!r} "
                        f"(the adapter adds {endpoint}). ")
        if "v1" not in self.base_path.split("/") and "api-version" not in self.query:
            return (f"Most OpenAI-compatible servers serve the API under /v1: try base_url={base + '/v1'!r}. ")
        return ""

    def proxy(self) -> Any:
        """The proxy from the environment (`https_proxy`/`http_proxy`, unless `no_proxy` exempts the host), read
        once: None, or its `host`, `port`, `authorization` (`Basic ...` for the credentials in its URL,
        percent-decoded; None without) and `secrets`; a `UserError` for a URL this transport cannot use (its
        credentials never quoted)."""
        if not hasattr(self, "_proxy"):
            import base64
            import urllib.request
            from types import SimpleNamespace
            from urllib.parse import unquote, urlsplit
            url = urllib.request.getproxies_environment().get(self.scheme)
            url = url if not url or "://" in url else "http://" + url
            try:
                found = urlsplit(url) if url else None
                port = found and found.port or 80
            except ValueError:  # a port that is not a number, a bracket that opens no IPv6 address
                found, port = urlsplit("http://"), None
            if url and read_two_ways(url):  # its "port" and path would be the password's start and end
                found, port = urlsplit("http://"), None
            if found is None or urllib.request.proxy_bypass_environment(self.host):
                self._proxy = None
            elif not found.hostname or port is None:
                self._proxy = (f"the proxy in {self.scheme}_proxy is not a URL this transport can use (it needs "
                               "http://[user:password@]host[:port], with a number for the port, and a password's "
                               "'/', '?' or '#' written %2F, %3F or %23)")
            else:
                self._proxy = SimpleNamespace(host=found.hostname, port=port, authorization=None, secrets=())
                if found.username is not None:
                    password = found.password or ""
                    pair = base64.b64encode(f"{unquote(found.username)}:{unquote(password)}".encode("utf-8"))
                    self._proxy.authorization = "Basic " + pair.decode("ascii")
                    self._proxy.secrets = (password, unquote(password), self._proxy.authorization, pair.decode())
        if isinstance(self._proxy, str):
            raise UserError(self._proxy)
        return self._proxy

    def connection(self):
        """An idle connection the server left quiet (the newest), or a new one (not connected yet)."""
        with self._conns_lock:
            conn = self._conns.pop() if self._conns else None
        if conn is not None and quiet(conn.sock):
            return conn
        self.discard(conn)  # the server closed it, or sent what no request asked for: the next would read it as its own
        import http.client
        needs("unicodedata", "a connection to a model's server (the idna codec a host name is looked up by)")
        proxy = self.proxy()
        host, port = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        if self.scheme == "https":  # a Python built without _ssl lacks it: a server over plain http still works
            ssl = needs("ssl", f"base_url {self.shown_url('')!r} (https)")
            conn = http.client.HTTPSConnection(host, port, context=ssl.create_default_context())
            if proxy:
                conn.set_tunnel(self.host, self.port, headers={"Proxy-Authorization": proxy.authorization}
                                if proxy.authorization else None)
        else:
            conn = http.client.HTTPConnection(host, port)
        return conn

    def release(self, conn) -> None:
        """Pool `conn` for the next request when it is open and the pool has room; else close it."""
        with self._conns_lock:
            if conn is not None and conn.sock is not None and len(self._conns) < MAX_IDLE_CONNECTIONS:
                self._conns.append(conn)
                return
        self.discard(conn)

    def discard(self, conn) -> None:
        """Hang up `conn` (its unread bytes make it useless); a request that uses it again reconnects."""
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close every pooled connection (a later call simply reconnects)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
