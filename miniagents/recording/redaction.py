"""What never reaches a recording: credentials, found by name and by value, and whatever the user's hook removes.

Applied to every request before it is written, and to every request of a replay before it is compared, so a
redacted value matches its redacted self. Three passes, in this order:

1. **Credentials by name**, in the request's settings at any depth (`extra_headers`, `extra_query`,
   `extra_body`, `extra_args`, `metadata`, ...): a key whose name says credential by the HTTP adapters' own rule
   (`is_credential_name`: `Authorization`, `api-key`, `X-Api-Key`, `access_token`, `client_secret`, `Cookie`,
   `sig`, `code`, `X-Session`, ...) keeps its name and loses its value, and so does any string that starts like
   an authorization value (`Bearer ...`, `Basic ...`).
2. **Secrets by value**, anywhere in the request and the response: the wrapped model's API key and the value of
   every environment variable whose name says secret (`OPENAI_API_KEY`, `HF_TOKEN`, `PGPASSWORD`, ...), 8
   characters or more, and every value pass 1 hid (and the adapter's credential-named default headers), are
   replaced wherever they occur inside a string, as they are or percent-encoded; so is the password of every URL
   in the call that holds one (`postgres://app:pw@db`), which no variable may hold (`url_passwords`; a shorter
   one is cut only where its URL stands).
3. **The user's hook** (`redact=`), a function from text to text, applied to every string of the request and
   the response on its own (keys too, and the strings of JSON text behind escapes): context-derived text,
   personal data.

Every replaced value becomes `REDACTED`. A replay cannot know every secret the recording machine knew (its model's
key), so when it compares, a recorded `REDACTED` stands for any text (replay.py).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Iterable, Optional
from urllib.parse import unquote

from ..errors import UserError
from ..models.endpoint import EndpointModel
from ..models.http import request_secrets
from ..models.protocol import (ESCAPED_SLASH, is_credential_name, is_secret_variable, percent_upper, secret_values,
                               unescaped)

REDACTED = "[REDACTED]"
AUTHORIZATION_VALUE = re.compile(r"(?i)^\s*(bearer|basic|token|digest)\s+\S")
SHORTEST_SECRET = 8  # shorter values (a local server's "x") are not searched for: they would match ordinary text
# A URL's password as urlsplit reads it: the user part may hold `@` (Azure's `admin@srv`) and ends at the first `:`,
# or at `/`, `?`, `#`, where the authority ends (`?start=10:00&to=ann@x` is a query, no password); the password runs
# to the last `@` before a `/` or a space (a raw `#` or `?` in it is hidden too, where urlsplit would end the
# authority: such passwords are written, and a port is rarely followed by a query holding an `@`). A scheme starts
# where no scheme character stands before it, not at `\b`: inside a long run of them (`a-a-a-...`) each `\b` started
# a scan to the run's end (quadratic), and a URL right after a letter `\b` does not part from (`已连接postgres://`,
# `_postgres://`) was missed. So each part's scan is linear: one scheme scan per run, and no user or password scan
# crosses the `/` of the next `://`. (A raw `/` in a password is not read as one, as urlsplit does not: allowing it
# would let each password scan run on to the text's end.)
URL_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^/?#\s:\"'<>]*:([^/\s\"<>]+)@")
MOST_URL_PASSWORDS = 64  # of one call, searched for by value (each as written and, where it differs, decoded)


def without_credentials(value: Any) -> Any:
    """`value` (plain JSON data) with every credential-named key's value and every authorization-like string
    replaced by `REDACTED`."""
    if isinstance(value, dict):
        return {key: REDACTED if is_credential_name(key) else without_credentials(inner)
                for key, inner in value.items()}
    if isinstance(value, list):
        return [without_credentials(inner) for inner in value]
    if isinstance(value, str) and AUTHORIZATION_VALUE.match(value):
        return REDACTED
    return value


def credential_values(value: Any, named: bool = False) -> list:
    """What `without_credentials` hides in `value`: every string under a credential-named key (`named`: inside
    one already), and every authorization-like string, also without its scheme. They are searched for by value in
    the whole call too, where the model or a tool may repeat them (an echoed header, a URL in a tool's arguments)."""
    if isinstance(value, dict):
        return [found for key, inner in value.items()
                for found in credential_values(inner, named or is_credential_name(str(key)))]
    if isinstance(value, list):
        return [found for inner in value for found in credential_values(inner, named)]
    if isinstance(value, str) and (named or AUTHORIZATION_VALUE.match(value)):
        return [value] + value.strip().split(None, 1)[1:]
    if named and isinstance(value, (int, float)) and not isinstance(value, bool):  # a number hidden: as text says it
        return [str(value)]
    return []


def hide_credentials(request: dict) -> list:
    """Hide the credentials of a request record's settings by name (in place); the values hidden, to search for by
    value in the rest of the call."""
    found = credential_values(request["settings"])
    request["settings"] = without_credentials(request["settings"])
    return found


def environment_secrets() -> list:
    """The values of the environment's secret variables (`is_secret_variable`: `OPENAI_API_KEY`, `PGPASSWORD`), long
    enough to search for (each also without the whitespace around it: a key read from a file keeps its newline, an
    echo of it does not)."""
    return [found for name, value in os.environ.items() if is_secret_variable(name)
            for found in {value, value.strip()} if len(found.strip()) >= SHORTEST_SECRET]


def model_secret(model: Any) -> Any:
    """What a miniagents HTTP adapter keeps secret (see `model_secrets`), as its transport holds it: the API key, or
    a tuple of it and the base URL's credentials; None for any other model. `searched` takes either."""
    return model.transport.secret if isinstance(model, EndpointModel) else None


def model_secrets(model: Any) -> list:
    """What a miniagents HTTP adapter keeps secret (its transport's: the API key, and credentials in its base URL;
    asked only after a call succeeded, so the transport exists), and the values of its credential-named default
    headers and query parameters (`default_headers={"X-Api-Key": ...}`); nothing for any other model."""
    if not isinstance(model, EndpointModel):
        return []
    transport = model.transport
    secret = transport.secret
    return (list(secret) if isinstance(secret, (tuple, list)) else [secret]) + list(
        request_secrets(transport.headers, transport.query))


def map_strings(value: Any, change: Callable[[str], str], joined: Optional[Callable] = None) -> Any:
    """`value` (plain JSON data) with `change` applied to every string, an object's keys too (a name can be one:
    `metadata={"Ann Lee": ...}`); a part or a delta whose text it changed loses its logprobs (`without_logprobs`).
    `joined(list, mapped)`, if given, has the last word on each list mapped."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        mapped = {change(key): map_strings(inner, change, joined) for key, inner in value.items()}
        return without_logprobs(mapped) if any(mapped.get(f) != value.get(f) for f in ("text", "delta")) else mapped
    if isinstance(value, list):
        mapped = [map_strings(inner, change, joined) for inner in value]
        return mapped if joined is None else joined(value, mapped)
    return value


def searched(secrets: Iterable[Any]) -> list:
    """The secrets worth searching for (strings, or tuples of them as a transport holds them): long enough not to
    match ordinary text, each also percent-encoded as a URL or a form carries it (`secret_values`); longest first.
    Behind JSON's escapes, `without_encoded` finds them."""
    found = {s for group in secrets for s in (group if isinstance(group, (tuple, list)) else (group,))}
    return secret_values([s for s in found if isinstance(s, str) and len(s) >= SHORTEST_SECRET])


def url_passwords(value: Any) -> list:
    """The password of every URL in `value` (a call's request and response, plain JSON data, keys too), as written
    and as it means (`p%40ss` is `p@ss`). A password a URL reveals is a secret of the whole call, searched for by
    value as the others are: the URL's own search cuts it only where the URL stands, and the model repeats it (a tool
    call's `"password"`, then the next request's input). Each text is also read percent-decoded and with `\\/` as `/`:
    a URL that is a query's value (`dsn=postgres%3A%2F%2F...`) or in JSON text no JSON parser reads (`HTTP 200
    {"dsn":"mysql:\\/\\/...`) is not cut where it stands, and the search by value finds its password there too.
    Like every secret searched by value, only one of 8 characters or more is (`searched`): a shorter one (`pw`) would
    cut ordinary text out of the call (which a replay serves back), so it is cut only where the URL stands. So are
    those after the first `MOST_URL_PASSWORDS`: each secret is one more search of every text of the call, and a text
    from outside (a tool's output) may hold thousands of URLs."""
    found: list = []

    def look(text: str) -> str:
        for form in dict.fromkeys((text, unquote(text), ESCAPED_SLASH.sub("/", text))):
            if "://" in form and "@" in form:
                found.extend(read(match.group(1)) for match in URL_PASSWORD.finditer(form) for read in (str, unquote))
        return text
    map_strings(value, look)
    return list(dict.fromkeys(found))[:MOST_URL_PASSWORDS]  # in the order they come, each once


def secret_spans(text: str, secrets: list) -> list:
    """Where the `secrets` occur in `text` (its percent-encoding's hex read in either case, `percent_upper`), and the
    password of each URL that holds one (`postgres://app:pw@db`):
    sorted (start, end) spans, overlapping occurrences (of one secret or of two) merged into one span, so no part of
    either survives."""
    spans = [match.span(1) for match in URL_PASSWORD.finditer(text)] if "://" in text and "@" in text else []
    folded = percent_upper(text)
    for secret in secrets:
        at = folded.find(secret)
        while at >= 0:
            spans.append((at, at + len(secret)))
            at = folded.find(secret, at + 1)
    merged: list = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def cut_out(pieces: list, spans: list) -> list:
    """`pieces` (consecutive parts of one text) with the text of `spans` (positions in the joined text) removed and
    one `REDACTED` put in the piece where each span starts: joined, they are the text with each span replaced,
    and a piece that holds no part of a span is returned unchanged."""
    out, position, first = [], 0, 0
    for piece in pieces:
        start, end = position, position + len(piece)
        position = end
        while first < len(spans) and spans[first][1] <= start:
            first += 1
        kept, cursor = [], start
        for span_start, span_end in spans[first:]:
            if span_start >= end:
                break
            if span_start > cursor:
                kept.append(piece[cursor - start:span_start - start])
            if span_start >= start:
                kept.append(REDACTED)
            cursor = max(cursor, min(span_end, end))
        kept.append(piece[cursor - start:])
        out.append(piece if cursor == start and len(kept) == 1 else "".join(kept))
    return out


def without_secrets(value: Any, secrets: Iterable[Optional[str]]) -> Any:
    """`value` with every occurrence of each secret, inside any string (an object's keys too), replaced by
    `REDACTED`; also inside a string that is JSON text (a tool call's arguments), where escapes (`\\u0073k-...`,
    `\\/`) could hide one; and across the `text` of the parts of one list (a message's content parts, a reasoning
    summary), which whoever reads them joins."""
    return _scrubbed(value, searched(secrets))


def _scrubbed(value: Any, found: list) -> Any:
    if isinstance(value, str):
        return without_encoded(cut_out([value], secret_spans(value, found))[0], found)
    if isinstance(value, dict):
        scrubbed = {_scrubbed(key, found): _scrubbed(inner, found) for key, inner in value.items()}
        return without_logprobs(scrubbed) if scrubbed.get("text") != value.get("text") else scrubbed
    if isinstance(value, list):
        parts = [index for index, inner in enumerate(value) if isinstance(inner, dict)
                 and isinstance(inner.get("text"), str)]
        if len(parts) > 1:  # one text in pieces: cut what a secret spans out of the pieces it spans
            texts = [value[index]["text"] for index in parts]
            value = list(value)
            for index, text in zip(parts, cut_out(texts, secret_spans("".join(texts), found))):
                if text is not value[index]["text"]:
                    value[index] = without_logprobs({**value[index], "text": text})
        return [_scrubbed(inner, found) for inner in value]
    return value


def without_logprobs(part: dict) -> dict:
    """A text part (or a delta) whose text a secret was cut out of (or the hook changed), without its `logprobs`:
    their tokens (and each token's bytes) spell the text again, the secret included, in pieces no search finds."""
    return {**part, "logprobs": []} if "logprobs" in part else part


def without_encoded(text: str, secrets: list) -> str:
    """`text` as it is, unless it is JSON text whose decoded strings (keys included) hold a secret that escapes hid
    from a plain search: then that JSON, decoded, redacted and written again (unescaped); or, where no one JSON parse
    decodes them (after a prefix, JSON text in JSON text), the text with its escapes decoded (`unescaped`, as the
    trace's redaction reads it), redacted."""
    text = in_json_text(text, lambda inner: cut_out([inner], secret_spans(inner, secrets))[0])
    decoded = unescaped(text) if "\\" in text else text
    spans = secret_spans(decoded, secrets) if decoded != text else []
    return cut_out([decoded], spans)[0] if spans else text


def in_json_text(text: str, change: Callable[[str], str]) -> str:
    """`text` as it is, unless it is JSON text with escapes (`\\u00eb`, `\\/`) whose decoded strings (keys
    included) `change` alters, which the escapes hid from `change` applied to the text as written: then that JSON,
    decoded, changed and written again (unescaped)."""
    if "\\" not in text or text.lstrip()[:1] not in ("{", "[", '"'):
        return text  # without an escape, what a plain search saw is what the JSON says
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    changed = [False]

    def clean(inner: Any) -> Any:
        if isinstance(inner, str):
            new = change(inner)
            changed[0] = changed[0] or new != inner
            return new
        if isinstance(inner, dict):
            return {clean(key): clean(item) for key, item in inner.items()}
        if isinstance(inner, list):
            return [clean(item) for item in inner]
        return inner
    try:
        value = clean(value)
    except RecursionError:
        return REDACTED  # too deep to look through: nothing of it is kept
    return json.dumps(value, ensure_ascii=False) if changed[0] else text


# --- Streams: a secret can arrive cut into pieces -------------------------------------------------------------

DELTA_KEYS = ("type", "item_id", "output_index", "content_index", "summary_index")  # one streamed part's events
ITEM_KEYS = DELTA_KEYS[:3]  # one item's streamed text, its parts joined (as a message's text is)


def part_text(event: dict) -> Any:
    """The text of the part a part event carries (`response.content_part.done`, `reasoning_summary_part.done`)."""
    return event["part"].get("text") if isinstance(event.get("part"), dict) else None


def delta_groups(events: list, keys: tuple = DELTA_KEYS, text: Callable = lambda event: event.get("delta")) -> list:
    """The streamed texts of `events`: for each, the indexes of its delta events (`text` of the event a string:
    its `"delta"`, or its part's text), in order. The deltas of one text are the events of one type with the same
    `keys` (item, part, summary); whoever reads a stream joins them."""
    groups: dict = {}
    for index, event in enumerate(events):
        if isinstance(event, dict) and isinstance(text(event), str):
            key = repr([event.get(name) for name in keys])
            groups.setdefault(key, []).append(index)
    return list(groups.values())


def stream_without_secrets(events: list, secrets: Iterable[Optional[str]]) -> list:
    """A stream's events with every secret removed, also where one arrived cut across deltas: each streamed text is
    searched whole (its deltas joined), and each occurrence is cut out of the deltas that carried its pieces (one
    `REDACTED` in the delta where it started); so are an item's parts, whole in its part events, joined. The number
    and order of events stay; so does every delta that carried no part of a secret."""
    found = searched(secrets)
    events = list(events)
    for indexes in delta_groups(events, ITEM_KEYS):  # an item's parts joined: a message's text is
        pieces = [events[index]["delta"] for index in indexes]
        spans = secret_spans("".join(pieces), found)
        if spans:
            pieces = cut_out(pieces, spans)
        joined = "".join(pieces)
        whole = without_encoded(joined, found)
        if whole != joined:  # streamed JSON hid a secret behind escapes: the text whole, in its first delta
            pieces = [whole] + [""] * (len(pieces) - 1)
        for index, piece in zip(indexes, pieces):
            if piece is not events[index]["delta"]:
                events[index] = without_logprobs({**events[index], "delta": piece})
    for indexes in delta_groups(events, ITEM_KEYS, part_text):  # an item's parts, each whole in its part event
        texts = [part_text(events[index]) for index in indexes]
        for index, text in zip(indexes, cut_out(texts, secret_spans("".join(texts), found))):
            if text is not part_text(events[index]):
                events[index] = {**events[index], "part": without_logprobs({**events[index]["part"], "text": text})}
    return without_secrets(events, found)


class Hook:
    """The user's `redact=` function, applied to plain data: called with a value, it gives the value with the
    function applied to every string on its own, a message's text parts also joined; `events` applies it to a
    stream's events, each streamed text (an item's parts joined) also whole."""

    def __init__(self, text: Optional[Callable[[str], str]]):
        self.text = text

    def __call__(self, value: Any) -> Any:
        return value if self.text is None else map_strings(value, self.string, self.joined)

    def joined(self, parts: list, mapped: list) -> list:
        """`mapped` (each of `parts` on its own), unless the function changes their texts (a message's content parts)
        differently one by one than joined (a name cut in two): then the text whole in the first, the others emptied,
        as whoever reads them joins them."""
        texts = [index for index, part in enumerate(parts) if isinstance(part, dict) and isinstance(part.get("text"),
                                                                                                     str)]
        whole = self.string("".join(parts[index]["text"] for index in texts)) if len(texts) > 1 else None
        if whole is not None and "".join(str(mapped[index].get("text")) for index in texts) != whole:
            for number, index in enumerate(texts):
                mapped[index] = without_logprobs({**mapped[index], "text": "" if number else whole})
        return mapped

    def string(self, text: str) -> str:
        """The function applied to one string, and to the strings it holds as JSON text behind escapes (a tool call's
        arguments as `json.dumps` writes them: `Zo\\u00eb`), as the secrets pass does."""
        return in_json_text(self.text(text), self.text)

    def events(self, events: list) -> list:
        """The function applied to every string of the events; and, for each streamed text whose deltas it would
        change differently one by one than whole (a name it hides, cut in two), the text whole: in its first
        delta, the others emptied."""
        if self.text is None:
            return events
        groups = delta_groups(events, ITEM_KEYS)
        out = [self(event) for event in events]
        for indexes in groups:
            whole = self.string("".join(events[index]["delta"] for index in indexes))
            if "".join(out[index]["delta"] for index in indexes) != whole:
                for number, index in enumerate(indexes):
                    out[index] = without_logprobs({**out[index], "delta": "" if number else whole})
        return out


def user_hook(hook: Optional[Callable[[str], str]]) -> Hook:
    """The user's `redact=` as a pass over plain data (the identity when there is none); `UserError` when the
    hook gives back something that is not text."""
    if hook is None:
        return Hook(None)
    if not callable(hook):
        raise UserError(f"redact= must be a function from str to str, got {type(hook).__name__}")

    def checked(text: str) -> str:
        result = hook(text)
        if not isinstance(result, str):
            raise UserError(f"the redact= function must return a str, got {type(result).__name__}")
        return result
    return Hook(checked)
