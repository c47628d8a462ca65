"""The HTTP side of both APIs as pure functions: SSE framing, error bodies and messages, the retry policy.

Where it sits: below the transport (`http.py`), which applies these to real sockets, and the adapters,
which read error events and stream payloads with them. No I/O here, so tests can hammer every rule.
Retries follow openai-python, since servers are built to its behaviour: 408/409/429 (not `insufficient_quota`)
and 5xx (not a validation error, not 501), `x-should-retry` obeyed, `retry-after-ms`/`retry-after` honoured up to
`MAX_SERVER_DELAY` (a longer wait fails fast), else `min(0.5 * 2**n, 8) * (1 - 0.25 * random())`.
Never: put the API key (or any secret the transport holds) in a message (redact before anything is cut short),
let a server's control characters into one (`shown`), or parse anything quadratically.
"""
from __future__ import annotations

import json
import math
import random
import re
import time
from typing import Any, Iterable, Iterator, Optional

from ..errors import AgentsException, ModelHTTPError, ModelTimeoutError
from ..validate import STRICT_JSON

INITIAL_RETRY_DELAY = 0.5   # seconds; tests patch these two to keep the suite fast
MAX_RETRY_DELAY = 8.0
MAX_SERVER_DELAY = 60.0     # the longest retry-after we wait for; longer means "fail now"

# ----------------------------------------------------------------------------- pure: SSE framing


def too_large(what: str, limit: int, status: Optional[int] = None, said: str = "") -> ModelHTTPError:
    """The error for an answer, or a piece of a stream, over `max_response_bytes` (raised before it is kept)."""
    return http_error(status, f"{what} is larger than max_response_bytes={limit}{f' ({said})' if said else ''}; "
                              "raise max_response_bytes on the model or provider if such answers are expected",
                      type="response_too_large")


def iter_lines(chunks: Iterable[bytes], max_bytes: Optional[int] = None) -> Iterator[bytes]:
    """Split a byte stream, chunked anyhow, into lines without terminators (\\n, \\r\\n or \\r).

    Linear in the input: each chunk is scanned once, and a line's pieces are only joined when it ends
    (a 4 MB line arriving in 1 KB chunks is never rescanned or recopied chunk by chunk). A line longer than
    `max_bytes` is refused (`too_large`) as soon as its pending part passes it.
    """
    pending = bytearray()   # the unfinished line
    skip_lf = False         # the last chunk ended in \r: a \n starting the next one belongs to it
    for chunk in chunks:
        if skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        skip_lf = chunk.endswith(b"\r")  # (a chunk that was only that \n leaves none to skip)
        if not chunk:
            continue
        for piece in chunk.splitlines(keepends=True):
            ended = piece.endswith((b"\n", b"\r"))
            if ended:
                piece = piece.rstrip(b"\r\n")
            if max_bytes is not None and len(pending) + len(piece) > max_bytes:
                raise too_large("a line of the stream", max_bytes)
            pending += piece
            if ended:
                yield bytes(pending)
                pending.clear()
    if pending:
        yield bytes(pending)


def iter_sse(lines: Iterable[Any], max_bytes: Optional[int] = None) -> Iterator[tuple]:
    """Server-sent events from lines: yields `(event, data)`; comments skipped, data lines joined by \\n.

    A blank line dispatches; a pending event is dispatched at EOF too. `id`, `retry` and unknown
    fields are ignored. Lines may be bytes (decoded as UTF-8, one whole line at a time) or str. An event whose
    data lines add up to more than `max_bytes` is refused (`too_large`) before the line that passes it is kept.
    A byte order mark starting the stream is skipped, as the SSE standard says (it made the first line a field
    of another name: the first event was lost).
    """
    event, data, size = "", [], 0
    for n, line in enumerate(lines):
        length = len(line)
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if n == 0 and line.startswith("\ufeff"):
            line = line[1:]
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data, size = "", [], 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            size += length
            if max_bytes is not None and size > max_bytes:
                raise too_large("an event of the stream", max_bytes)
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event or "message", "\n".join(data)


def parse_sse_json(data: str, secret: Any = None) -> Any:
    """The JSON payload of one `data:` field; `"[DONE]"` is returned as is."""
    if data.strip() == "[DONE]":
        return "[DONE]"
    try:
        return STRICT_JSON.decode(data)  # no NaN or Infinity (JSON has not), as in a plain answer
    except (ValueError, RecursionError):  # (nested deeper than Python reads)
        raise http_error(None, "the stream sent a data line that is not JSON: " + redact(data, secret)[:200],
                         type="invalid_stream") from None


# ----------------------------------------------------------------------------- pure: errors, retries


SHORTEST_SECRET = 4  # a shorter secret (a local server's "x") would be found in ordinary words
CREDENTIAL_PAIR = re.compile(  # name=value where the name says credential (a query string a server echoes back)
    r"(?i)(?<![A-Za-z0-9_-])((?:x-)?(?:api[-_]?key|key|access[-_]?token|refresh[-_]?token|token|sig|signature"
    r"|client[-_]?secret|secret|password|passwd|auth|subscription[-_]?key))=([^&\s\"'<>#;,]+)")
_CREDENTIAL_WORDS = frozenset(("key", "apikey", "token", "secret", "password", "passwd", "sig", "signature", "auth",
                               "authorization", "credential", "credentials", "code", "cookie", "session"))


def is_credential_name(name: str) -> bool:
    """Whether a query parameter's or header's name says it holds a credential (`key`, `api-key`, `sig`,
    `access_token`, `apiKey`, `code`, `X-Goog-Api-Key`); `api-version`, `model` do not."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _CREDENTIAL_WORDS for word in re.split(r"[^a-z0-9]+", words))


SECRET_VARIABLE = re.compile(r"(?i)passw(?:or)?d|(?:^|_)(?:pass|passphrase|pw|secrets?|tokens?|pat|creds?|jwt)(?:_|$)"
                             r"|_pwd(?:_|$)")  # not PWD, the working folder
WHERE_VARIABLE = re.compile(r"(?i)_(?:file|dir|path|sock|socket|address)$|askpass|passfile")  # its value: a place


def is_secret_variable(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret (what traces and recordings hide): by
    `is_credential_name` (`OPENAI_API_KEY`, `HF_TOKEN`) or as a password or token (`PGPASSWORD`, `DB_PASS`,
    `GITHUB_PAT`, `LDAP_BIND_PW`, `CI_JOB_JWT`), unless it names where one is (`PGPASSFILE`, `SSH_AUTH_SOCK`)."""
    return bool((is_credential_name(name) or SECRET_VARIABLE.search(name)) and not WHERE_VARIABLE.search(name))


def secret_values(secret: Any) -> list:
    """The strings to hide: `secret` is one (the API key), a tuple or list of them, or None; each also as a URL or
    a form carries it, percent-encoded (a server echoing a request back); each with uppercase hex, as a search reads a
    text's (`percent_upper`: `%2F` and `%2f` are both valid, and clients write either, even mixed; a password may
    hold one); longest first."""
    from urllib.parse import quote, quote_plus

    found = secret if isinstance(secret, (tuple, list)) else (secret,)
    plain = {s for s in found if isinstance(s, str) and len(s) >= SHORTEST_SECRET}
    encoded = {encode(s) for s in plain for encode in (lambda s: quote(s, safe=""), quote, quote_plus)}
    return sorted({percent_upper(value) for value in plain | encoded}, key=len, reverse=True)


QUERY_STRING = re.compile(r"\?[^\s#\"'<>]*")
JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
ESCAPED_SLASH = re.compile(r"\\+/")  # `\/` as JSON may write `/`, also in JSON text inside JSON text (`\\\/`)
PERCENT_HEX = re.compile("%[0-9a-fA-F]{2}")


def percent_upper(text: str) -> str:
    """`text` with the hex of each `%XX` in uppercase, as `secret_values` writes it: of the same length, so a secret
    found in it is at the same place in `text`."""
    return PERCENT_HEX.sub(lambda hex: hex.group().upper(), text) if "%" in text else text


def unescaped(text: str) -> str:
    """`text` with the JSON escapes a secret may hide behind decoded (`\\u0073k-`, `\\/`, also JSON text's inside
    JSON text, `\\\\\\/`), wherever they stand: also after a prefix, or nested, where no one JSON parse decodes them."""
    return ESCAPED_SLASH.sub("/", JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text))


def without_secrets(text: Any, secret: Any, values: Optional[list] = None) -> Any:
    """`text` with every secret replaced by `***` (a text is read with its escapes decoded, `unescaped`, and its
    percent-encoding's hex in uppercase, `percent_upper`, when that shows one); so is the value of every
    credential-named parameter of a query string in it (a URL, a request target echoed back), and of every
    `name=value` whose name is plainly one (`key=`, `api-key=`, `token=`, `sig=`, ... anywhere); `values`: the
    `secret_values` of `secret`, when the caller has them."""
    if not isinstance(text, str):
        return text
    values = secret_values(secret) if values is None else values
    if ("\\" in text or "%" in text) and values:
        decoded = percent_upper(unescaped(text))
        text = decoded if any(value in decoded for value in values) else text
    for value in values:
        text = text.replace(value, "***")
    if "=" not in text:
        return text
    text = QUERY_STRING.sub(lambda m: "&".join(_pair_shown(pair) for pair in m.group().split("&")), text)
    return CREDENTIAL_PAIR.sub(r"\1=***", text)


def _pair_shown(pair: str) -> str:
    name, equals, value = pair.partition("=")
    return f"{name}=***" if equals and value and is_credential_name(name.lstrip("?")) else pair


def shown(text: Any) -> Any:
    """Server-provided text as a message may show it: every character that is not printable (controls such as
    ESC, CR and LF, line and paragraph separators, bidirectional overrides) escaped as Python writes it, so a
    server cannot clear a terminal, forge a log line or reorder what is read."""
    if not isinstance(text, str) or text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else
                   ({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or ascii(ch)[1:-1]) for ch in text)


def redact(text: Any, secret: Any) -> Any:
    """`text` (from a server, a URL, an exception) made safe for a message: no secret (`secret`: the API key, or a
    tuple of every value to hide; see `without_secrets`) and no raw control character (`shown`)."""
    return shown(without_secrets(text, secret))


def redact_json(value: Any, secret: Any, values: Optional[list] = None) -> Any:
    """The secrets removed from every string (keys included) of a decoded JSON value; the text is otherwise kept as
    it came (it is data, as `ModelHTTPError.body`). The secrets' forms are worked out once for the whole value: per
    string, an error body of a million strings took minutes."""
    values = secret_values(secret) if values is None else values
    if isinstance(value, str):
        return without_secrets(value, secret, values)
    if isinstance(value, list):
        return [redact_json(v, secret, values) for v in value]
    if isinstance(value, dict):
        return {redact_json(k, secret, values): redact_json(v, secret, values) for k, v in value.items()}
    return value


def http_error(status: Optional[int], message: str, cls: type = ModelHTTPError, **fields) -> ModelHTTPError:
    """A `ModelHTTPError`; without a status it reads as its message (not "stream error: ..."), since the
    failures that have none (could not connect, cancelled, broken stream) say what happened themselves. Its text
    fields (message, type, code, param, request id) are `shown`: no server's control character reaches them."""
    fields = {name: shown(value) if name != "body" else value for name, value in fields.items()}
    err = cls(status, shown(message), **fields)
    if status is None:
        detail = "".join(f" {k}={v}" for k, v in (("type", err.type), ("code", err.code)) if v)
        rid = f" (request id {err.request_id})" if err.request_id else ""
        err.args = (f"{err.message}{rid}" + (f" [{detail.strip()}]" if detail else ""),)
    return err


def timeout_error(seconds: float, what: str) -> ModelTimeoutError:
    """A `ModelTimeoutError` that also says which wait ran out."""
    err = ModelTimeoutError(seconds)
    err.args = (f"{err.args[0]} {what}",)
    return err


def with_note(err: AgentsException, note: str) -> AgentsException:
    """The same error (same type and fields) with `note` appended to what it says."""
    if isinstance(err, ModelHTTPError):
        new = http_error(err.status, f"{err.message} {note}", type(err), type=err.type, code=err.code,
                         param=err.param, request_id=err.request_id, body=err.body)
        new.retry_headers = err.retry_headers
    elif isinstance(err, ModelTimeoutError):
        new = ModelTimeoutError(err.timeout_seconds)
        new.args = (f"{err.args[0]} {note}",)
    else:
        return err
    new.explained = getattr(err, "explained", False)
    return new


def error_fields(body: Any) -> dict:
    """`{message, type, code, param}` from an error body of any common shape: OpenAI's `{"error": {...}}`, a
    string `error` (LM Studio), a top-level `message` (old vLLM), `detail` as a string or as pydantic's list of
    `{loc, msg}` (FastAPI servers), a one-element list of those (Gemini), a bare string, nothing."""
    if isinstance(body, list) and len(body) == 1 and isinstance(body[0], dict):
        body = body[0]
    if isinstance(body, dict):
        err = body.get("error")
        if err is None:
            err = body
        elif not isinstance(err, dict):
            err = {"message": err}
    elif body in (None, ""):
        err = {}
    else:
        err = {"message": body}
    out = {}
    for key in ("message", "type", "code", "param"):
        value = err.get(key)
        if key == "message" and value is None and err.get("detail") is not None:
            value = detail_text(err["detail"])
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False) if key == "message" else str(value)
        out[key] = value
    return out


def detail_text(detail: Any) -> Any:
    """FastAPI's `detail`: a string as is; pydantic's list of errors as `loc.of.field: msg; ...`."""
    if not isinstance(detail, list):
        return detail
    said = []
    for error in detail:
        if isinstance(error, dict) and isinstance(error.get("msg"), str):
            where = ".".join(str(part) for part in error.get("loc") or ())
            said.append(f"{where}: {error['msg']}" if where else error["msg"])
        else:
            said.append(error if isinstance(error, str) else json.dumps(error, ensure_ascii=False))
    return "; ".join(said)


def error_from_body(status: Optional[int], raw: Any, request_id: Optional[str] = None,
                    secret: Any = None, where: str = "in the stream") -> ModelHTTPError:
    """A readable `ModelHTTPError` from a response body (bytes/str/parsed), never a JSON traceback.

    Without a status the body came in-band, `where` says where (an error event in a stream, or a completed
    response whose status is "failed"). The key is redacted from every field before anything is cut short, so no
    part of it survives a truncation.
    """
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    body = raw
    if isinstance(raw, str):
        text = raw.strip()
        try:
            body = json.loads(text) if text else None
        except (ValueError, RecursionError):
            body = _strip_html(text) if text.lstrip().startswith("<") else text
    try:
        body = redact_json(body, secret)
    except RecursionError:  # nested deeper than Python walks: what it said cannot be read
        body = None
    f = {k: redact(v, secret) for k, v in error_fields(body).items()}
    message = f["message"] or (f"HTTP {status} with an empty body" if status else "unknown error")
    if len(message) > 2000:
        message = message[:2000] + "…"
    if status is None:
        message = f"the server reported an error {where}: " + message
    return http_error(status, message, type=f["type"], code=f["code"], param=f["param"],
                      request_id=redact(request_id, secret), body=body)


def hint(err: ModelHTTPError, base_url: str) -> str:
    """What to do about an error the server's own words do not say (they come first): HTTP 501, which a server
    that is not an OpenAI-compatible API gives a POST; a context too small for the request (llama.cpp's
    `exceed_context_size_error`, OpenAI's `context_length_exceeded`)."""
    if err.status == 501:
        return (f"HTTP 501 (Not Implemented): base_url={base_url!r} is probably not an OpenAI-compatible API (a "
                "static file server such as python -m http.server answers a POST so); point it at the API. ")
    if "context" in f"{err.type} {err.code}" and ("exceed" in f"{err.type} {err.code}"):
        return ("The request does not fit the model's context: shorten the conversation, lower max_tokens, or "
                "give the server a larger context (llama-server: -c). ")
    return ""


def not_an_api_error(status: int, raw: bytes, content_type: str, base_url: str, request_id: Optional[str] = None,
                     secret: Any = None) -> ModelHTTPError:
    """A 2xx answer that is not JSON (a web server's welcome page, a proxy's text): what it said, and what to
    check; `base_url` as shown (no key)."""
    said = error_from_body(status, raw, request_id, secret).message if raw.strip() else "an empty body"
    if len(said) > 200:
        said = said[:200] + "…"
    shown_type = redact(content_type, secret) or "no Content-Type"
    return http_error(status, f"the answer is not JSON ({shown_type}: {said}); check that "
                              f"base_url={redact(base_url, secret)!r} is an OpenAI-compatible API (its address "
                              "usually ends in /v1)", type="invalid_response", request_id=redact(request_id, secret))


def _strip_html(text: str) -> str:
    """The visible text of an HTML error page, squeezed to one line (a 502 from a proxy, say)."""
    return " ".join(re.sub(r"<[^>]*>?", " ", text).split())


RETRY_HEADERS = ("retry-after-ms", "retry-after", "x-should-retry")  # what a server says of retrying


def retry_after(headers: dict, now: Optional[float] = None) -> Optional[float]:
    """The server's requested delay in seconds (`retry-after-ms`, `retry-after` seconds or date); None when it
    asked for none, or for one that cannot be read (a date in a year past any a datetime holds overflows; inf or
    nan, which no wait keeps and no reader should be shown)."""
    from email.utils import parsedate_to_datetime
    for name, unit in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            delay = float(headers.get(name) or "") * unit
        except ValueError:
            continue
        if math.isfinite(delay):
            return delay
    try:
        when = parsedate_to_datetime(headers.get("retry-after") or "")
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.timestamp() - (time.time() if now is None else now)


def is_validation_error(error: ModelHTTPError) -> bool:
    """Whether the server refused the request's shape (pydantic's "N validation errors" on a 500, say):
    such a request fails the same way every time, so it is never retried unchanged."""
    return "validation error" in (error.message or "").lower()


def should_retry(status: int, headers: dict, error: Optional[ModelHTTPError] = None) -> bool:
    """openai-python's decision for an HTTP error status, plus: never retry `insufficient_quota`, a validation
    error or a 501."""
    delay = retry_after(headers)
    if delay is not None and delay > MAX_SERVER_DELAY:
        return False
    if error is not None and ("insufficient_quota" in (error.code or "", error.type or "")
                              or is_validation_error(error)):
        return False
    if status == 501:  # Not Implemented: the same request gets the same answer (a static file server's to a POST)
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
    # 32 doublings put any delay at its ceiling long since; more would overflow a float (2.0 ** 1024)
    return min(INITIAL_RETRY_DELAY * 2 ** min(retries_so_far, 32), MAX_RETRY_DELAY) * (1 - 0.25 * rand())
