"""The transport under both adapters: JSON POST over `http.client`, retries, error bodies, SSE framing.

Where it sits: `chat_completions.py` and `responses.py` build a body, hand it to `HTTPTransport`, and get
back parsed JSON (or SSE events). Everything protocol-shaped that needs no socket is a pure function here
(`iter_lines`, `iter_sse`, `error_from_body`, `should_retry`, `retry_delay`) so tests can hammer it.
Never: retry after a stream has delivered an event, put the API key in a message or repr, follow
redirects, ask for gzip, or import `http.client`/`ssl`/`urllib` at module import time.

Retries follow openai-python (WIRE.md §8.2): connection errors, timeouts, 408/409/429 (not
`insufficient_quota`) and 5xx, `x-should-retry` obeyed, `retry-after-ms`/`retry-after` honoured up to
`MAX_SERVER_DELAY` (a longer wait fails fast), else `min(0.5 * 2**n, 8) * (1 - 0.25 * random())`.
Proxies: `https_proxy`/`http_proxy`/`no_proxy` from the environment (CONNECT tunnel for https).
"""
from __future__ import annotations

import json
import random
import threading
import time
from typing import Any, Iterable, Iterator, Optional, Tuple

from ..errors import ModelHTTPError, ModelTimeoutError

INITIAL_RETRY_DELAY = 0.5   # seconds; tests patch these two to keep the suite fast
MAX_RETRY_DELAY = 8.0
MAX_SERVER_DELAY = 60.0     # the longest retry-after we wait for; longer means "fail now"
CONNECT_TIMEOUT = 5.0
USER_AGENT = "miniagents/0.1 (python stdlib)"

# ----------------------------------------------------------------------------- pure: SSE framing


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Split a byte stream, chunked anyhow, into lines without terminators (\\n, \\r\\n or \\r)."""
    buf, skip_lf = b"", False
    for chunk in chunks:
        if skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        if not chunk:
            continue
        skip_lf = False
        pieces = (buf + chunk).splitlines(keepends=True)
        buf = pieces.pop() if not pieces[-1].endswith((b"\n", b"\r")) else b""
        for piece in pieces:
            yield piece.rstrip(b"\r\n")
        skip_lf = not buf and bool(pieces) and pieces[-1].endswith(b"\r")
    if buf:
        yield buf


def iter_sse(lines: Iterable[Any]) -> Iterator[Tuple[str, str]]:
    """Server-sent events from lines: yields `(event, data)`; comments skipped, data lines joined by \\n.

    A blank line dispatches; a pending event is dispatched at EOF too. `id`, `retry` and unknown
    fields are ignored. Lines may be bytes (decoded as UTF-8, one whole line at a time) or str.
    """
    event, data = "", []
    for line in lines:
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event or "message", "\n".join(data)


def parse_sse_json(data: str, secret: Optional[str] = None) -> Any:
    """The JSON payload of one `data:` field; `"[DONE]"` is returned as is."""
    if data.strip() == "[DONE]":
        return "[DONE]"
    try:
        return json.loads(data)
    except ValueError:
        raise ModelHTTPError(None, "stream sent a data line that is not JSON: "
                             + redact(data[:200], secret), type="invalid_stream") from None


# ----------------------------------------------------------------------------- pure: errors, retries


def redact(text: str, secret: Optional[str]) -> str:
    """`text` with the API key (if any, and not trivially short) replaced by `***`."""
    if secret and len(secret) >= 4 and isinstance(text, str):
        return text.replace(secret, "***")
    return text


def error_fields(body: Any) -> dict:
    """`{message, type, code, param}` from an error body of any shape (object, string, empty)."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if not isinstance(err, dict):  # LM Studio: {"error": "<string>"}
            err = {"message": err}
    elif body in (None, ""):
        err = {}
    else:
        err = {"message": body}
    out = {}
    for key in ("message", "type", "code", "param"):
        value = err.get(key)
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False) if key == "message" else str(value)
        out[key] = value
    return out


def error_from_body(status: Optional[int], raw: Any, request_id: Optional[str] = None,
                    secret: Optional[str] = None) -> ModelHTTPError:
    """A readable `ModelHTTPError` from a response body (bytes/str/parsed), never a JSON traceback."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    body = raw
    if isinstance(raw, str):
        text = raw.strip()
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = _strip_html(text) if text.lstrip().startswith("<") else text
    f = error_fields(body)
    message = f["message"] or (f"HTTP {status} with an empty body" if status else "unknown error")
    if len(message) > 2000:
        message = message[:2000] + "…"
    body = json.loads(redact(json.dumps(body, ensure_ascii=False), secret)) if body is not None else None
    return ModelHTTPError(status, redact(message, secret), type=f["type"], code=f["code"],
                          param=f["param"], request_id=request_id, body=body)


def _strip_html(text: str) -> str:
    """The visible text of an HTML error page, squeezed to one line (a 502 from a proxy, say)."""
    out, in_tag = [], False
    for ch in text:
        if ch == "<":
            in_tag = True
        elif ch == ">":
            in_tag = False
            out.append(" ")
        elif not in_tag:
            out.append(ch)
    return " ".join("".join(out).split())


def retry_after(headers: dict, now: Optional[float] = None) -> Optional[float]:
    """The server's requested delay in seconds (`retry-after-ms`, `retry-after` seconds or date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - (time.time() if now is None else now)


def should_retry(status: int, headers: dict, error: Optional[ModelHTTPError] = None) -> bool:
    """openai-python's decision for an HTTP error status, plus: never retry `insufficient_quota`."""
    delay = retry_after(headers)
    if delay is not None and delay > MAX_SERVER_DELAY:
        return False
    if error is not None and "insufficient_quota" in (error.code or "", error.type or ""):
        return False
    flag = (headers.get("x-should-retry") or "").lower()
    if flag in ("true", "false"):
        return flag == "true"
    return status in (408, 409, 429) or status >= 500


def retry_delay(retries_so_far: int, headers: Optional[dict] = None, rand=random.random) -> float:
    """Seconds to sleep before the next attempt: the server's delay if sane, else jittered backoff."""
    delay = retry_after(headers or {})
    if delay is not None and 0 < delay <= MAX_SERVER_DELAY:
        return delay
    return min(INITIAL_RETRY_DELAY * 2 ** retries_so_far, MAX_RETRY_DELAY) * (1 - 0.25 * rand())


# ----------------------------------------------------------------------------- the transport


class _Retry(Exception):
    """Internal: an attempt failed in a retryable way (carries the error and the response headers)."""

    def __init__(self, error: Exception, headers: Optional[dict] = None):
        self.error, self.headers = error, headers or {}


class HTTPTransport:
    """POSTs JSON to one base URL with one keep-alive connection per thread, retrying per WIRE §8."""

    def __init__(self, base_url: str, headers: dict, *, timeout: float = 600.0, max_retries: int = 2,
                 query: Optional[dict] = None, secret: Optional[str] = None):
        from urllib.parse import urlsplit
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path, self.base_query = parts.path, parts.query
        self.headers, self.query = dict(headers), dict(query or {})
        self.timeout, self.max_retries, self.secret = timeout, max_retries, secret
        self._local = threading.local()
        self._conns: list = []  # every thread's connection, so close() and GC close them all
        self._conns_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HTTPTransport({self.scheme}://{self.host}:{self.port}{self.base_path})"

    # -- public

    def post_json(self, path: str, body: dict, *, headers: Optional[dict] = None,
                  query: Optional[dict] = None, timeout: Optional[float] = None) -> Tuple[Any, dict]:
        """POST `body`; returns `(parsed JSON, response headers)`. Raises `ModelHTTPError`/`ModelTimeoutError`."""
        def attempt(t):
            resp, hdrs = self._open(path, body, headers, query, t, stream=False)
            raw = resp.read()
            text = raw.decode("utf-8", errors="replace").strip()  # DeepSeek pads with blank lines
            try:
                return json.loads(text), hdrs
            except ValueError:
                raise error_from_body(resp.status, raw, hdrs.get("x-request-id"), self.secret) from None
        return self._with_retries(attempt, timeout)

    def post_stream(self, path: str, body: dict, *, headers: Optional[dict] = None,
                    query: Optional[dict] = None, timeout: Optional[float] = None,
                    on_headers=None) -> Iterator[Tuple[str, str]]:
        """POST `body` and yield SSE `(event, data)` pairs. Retries only until the first event is yielded."""
        import http.client
        import socket
        t = self.timeout if timeout is None else timeout
        hdrs = dict(headers or {}, Accept="text/event-stream")
        retries = 0
        while True:
            resp, rh = self._with_retries(lambda tt: self._open(path, body, hdrs, query, tt, stream=True),
                                          timeout, retries_start=retries)
            if on_headers is not None:
                on_headers(rh)
            delivered, finished = False, False
            try:
                for event in iter_sse(iter_lines(iter(lambda: resp.read1(65536), b""))):
                    delivered = True
                    yield event
                finished = True
                return
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if delivered or retries >= self.max_retries:
                    if isinstance(exc, socket.timeout):
                        raise ModelTimeoutError(t) from None
                    raise ModelHTTPError(None, f"stream broken after it started: {type(exc).__name__}",
                                         type="stream_error", code="truncated") from None
                time.sleep(retry_delay(retries))
                retries += 1
            finally:
                if not finished:
                    self._drop()  # an abandoned stream leaves unread bytes: never reuse that socket

    # -- internals

    def _with_retries(self, attempt, timeout: Optional[float], retries_start: int = 0):
        import socket
        t = self.timeout if timeout is None else timeout
        retries = retries_start
        while True:
            try:
                return attempt(t)
            except _Retry as r:
                if retries >= self.max_retries:
                    if isinstance(r.error, socket.timeout):
                        raise ModelTimeoutError(t) from None
                    raise r.error from None
                time.sleep(retry_delay(retries, r.headers))
                retries += 1

    def _open(self, path, body, headers, query, timeout, *, stream):
        """One attempt: send, get status+headers. Returns `(response, lowercased headers)` on 2xx."""
        import http.client
        import socket
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        all_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                       "Accept": "application/json", **self.headers, **(headers or {})}
        url = self._url(path, query)
        for fresh in (False, True):
            reused = False
            try:
                conn, reused = self._connection(timeout)
                conn.request("POST", url, body=payload, headers=all_headers)
                resp = conn.getresponse()
                break
            except socket.timeout as exc:
                self._drop()
                raise _Retry(exc) from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if reused and not fresh:
                    continue  # the server closed an idle keep-alive socket: one free retry, fresh socket
                raise _Retry(ModelHTTPError(None, f"connection to {self.host}:{self.port} failed: "
                                                  f"{type(exc).__name__}: {redact(str(exc), self.secret)}",
                                            type="connection_error")) from None
        rh = {k.lower(): v for k, v in resp.getheaders()}
        if 200 <= resp.status < 300:
            return resp, rh
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            raw, _ = b"", self._drop()
        err = error_from_body(resp.status, raw, rh.get("x-request-id"), self.secret)
        if should_retry(resp.status, rh, err):
            raise _Retry(err, rh)
        raise err

    def _url(self, path: str, query: Optional[dict]) -> str:
        from urllib.parse import urlencode
        q = "&".join(p for p in (self.base_query, urlencode({**self.query, **(query or {})})) if p)
        url = self.base_path + path + (("?" + q) if q else "")
        if self._proxy() and self.scheme == "http":
            return f"http://{self.host}:{self.port}{url}"  # plain-http proxy: absolute-form target
        return url

    def _proxy(self):
        if not hasattr(self, "_proxy_cache"):
            from urllib.parse import urlsplit
            import urllib.request
            env = urllib.request.getproxies_environment()
            proxy = env.get(self.scheme)
            if proxy and urllib.request.proxy_bypass_environment(self.host):
                proxy = None
            self._proxy_cache = urlsplit(proxy if "://" in (proxy or "://") else "http://" + proxy) \
                if proxy else None
        return self._proxy_cache

    def _connection(self, timeout: float):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            conn.timeout = timeout
            return conn, conn.sock is not None
        import http.client
        proxy = self._proxy()
        host, port = (proxy.hostname, proxy.port or 80) if proxy else (self.host, self.port)
        if self.scheme == "https":
            import ssl
            conn = http.client.HTTPSConnection(host, port, timeout=min(timeout, CONNECT_TIMEOUT),
                                               context=ssl.create_default_context())
            if proxy:
                conn.set_tunnel(self.host, self.port)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=min(timeout, CONNECT_TIMEOUT))
        self._local.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        conn.connect()
        conn.sock.settimeout(timeout)
        conn.timeout = timeout
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()
            with self._conns_lock:
                if conn in self._conns:
                    self._conns.remove(conn)

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
