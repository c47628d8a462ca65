"""What no trace file or live view holds: a credential (found by name and by value), or a line strict JSON refuses.

`redacted` is the one pass. Every record the ready processors write (`JsonlTraceProcessor`, `ConsoleTraceProcessor`)
goes through it with `known_secrets()`, and a generation span's model settings go through it when the span
is made (so your own processors never see a credential-named setting either):

- by name, only where configuration is kept (a span's `model_config`, a trace's or span's `metadata`, a custom span's
  `data`, at any depth there): the value of every key that names a credential by the HTTP adapters' rule
  (`is_credential_name`: `api_key`, `Authorization`, `X-Api-Key`, `client_secret`, `token`, `sig`, `code`,
  `session`...) becomes `***`. Elsewhere (items, inputs, outputs, logprobs, errors) those names are ordinary data: a
  code interpreter's `code`, a logprob's `token`;
- by value, everywhere: the value of every environment variable whose name says it is a secret (`is_secret_variable`:
  `OPENAI_API_KEY`, `HF_TOKEN`, `PGPASSWORD`, `DB_PASS`, `GITHUB_PAT`; not `PWD` or a `..._FILE`) as it is when the
  record is written, and what a traced run's HTTP model keeps secret (its API key, credentials in its base URL or in a
  credential-named header: until the run ends, then while among the most recent `MAX_MODEL_SECRETS`), 8 characters or
  more, wherever they occur in a text or a key, as they are, percent-encoded (hex of either case) or behind JSON escapes
  (`\\u0073k-`, `\\/`, after a prefix or nested too), also across the text parts of one message (joined, as whoever
  reads them joins them; the logprobs of a part a secret was cut out of are dropped, as their tokens and bytes spell it
  again); an authorization value (`Bearer` and a token of 8 characters or more anywhere, `Basic`/`Token`/`Digest` that
  begins a text or follows `Authorization:`); a URL's password (`postgres://app:***@db`, to the authority's last `@`: a
  user may hold one, `admin@srv`); and the value of each credential-named parameter of a URL's query string (`?sig=...`:
  a presigned URL's, which no search by value knows). A `name=value` elsewhere is prose or code (`sorted(words,
  key=len)`) and is kept;
- any mapping (`MappingProxyType`, `UserDict`) is read as a dict and a dataclass instance by its fields, so their
  names are checked as a dict's are;
- strict JSON: a float JSON has no number for (NaN, Infinity, -Infinity) becomes the text Python's json would have
  written (`"NaN"`, ...) rather than null, so the line still says what the value was; anything else JSON cannot
  hold (an object, a tuple) becomes a list or its `str()`, as `default=str` made it; a key that is no string is
  written as json writes it (`true`, `null`, `1.5`) when json can, else as its `str()`.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

from ..models.endpoint import EndpointModel
from ..models.http import request_secrets
from ..models.protocol import (ESCAPED_SLASH, PERCENT_HEX, QUERY_STRING, is_credential_name, is_secret_variable,
                               secret_values, unescaped)

MASK = "***"
SHORTEST_SECRET = 8  # shorter values (a local server's key "x", XDG_SESSION_TYPE=x11) would match ordinary text
MAX_WRAPPERS = 8  # wrappers looked through for the model they wrap
MAX_MODEL_SECRETS = 64  # the most recent models' secrets kept once their runs ended: each record is searched for all
CONFIGURATION = frozenset(("model_config", "metadata"))  # where a key's name says what its value is
BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"'<>,;]{8,}")
AUTHORIZATION = re.compile(  # a header's value: a whole text that starts with one, or after the header's name
    r"(?i)(^\s*(?:basic|token|digest|bearer))\s+[^\r\n]+"
    r"|(\bauthorization(?:\\?[\"'])?\s*[:=,]\s*(?:\\?[\"'])?(?:basic|token|digest|bearer))\s+(?:\\\"|[^\r\n\"])+")
USERINFO = re.compile(  # a URL's password, as recording/redaction.py's URL_PASSWORD finds it (see there why so)
    r"(?i)((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^/?#\s:\"'<>]*:)[^/\s\"<>]+@")
CONFIGURED = ('"model_config":', '"metadata":', '"data":')  # in a JSON text: where names are checked
# In a JSON text, folded: what a search of its texts may change. Each begins with text, which the regex engine finds
# fast, and no scan crosses the start of the next (a query's stops at its next `?`; a password's at its next `/`), so
# none takes more than linear time. A URL's slashes may be written `\/` in any mix (`:\//`), as the walk reads them.
MAY_CHANGE = tuple(re.compile(probe) for probe in (
    r"\?[^\s#\"'<>?=]*=", r":(?:\\*/){2}[^/\s@]*@", "bearer", "authorization", r"basic(?:\s|\\[bfnrtu])",
    r"token(?:\s|\\[bfnrtu])", r"digest(?:\s|\\[bfnrtu])"))
FOLD = str.maketrans("ıİſ", "iis")
SCHEMES = ("basic", "token", "digest", "bearer")  # of an authorization value
NOT_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
credential_name = functools.lru_cache(maxsize=1024)(is_credential_name)  # a record's keys are mostly the same few
_secret_names: tuple = (None, ())  # (the environment's names, those of secrets) when last read
_model_secrets: tuple = ()  # replaced (never mutated) under _lock, so a reader in another thread sees a whole one
_held: tuple = ()  # the secrets of the traced runs in progress, once for each run holding it; replaced as above
_lock = threading.Lock()


def remember(model: Any, held: list) -> None:
    """Keep what a traced run's model keeps secret, when it is a miniagents HTTP adapter (its transport's: the API
    key, credentials in its base URL, and the credential-named headers and query parameters it sends, such as a
    gateway's `X-Api-Key`), itself or wrapped (a wrapper, such as the upstream shell's or a recording's, keeps the
    model it wraps as `wrapped`); asked after a call succeeded, so the transport exists. `held` is the
    run's: what it holds is hidden until the run ends (`release`), however many other runs remember theirs meanwhile."""
    global _model_secrets, _held
    for _ in range(MAX_WRAPPERS):
        if isinstance(model, EndpointModel):
            break
        model = getattr(model, "wrapped", None)
    else:
        return
    transport = model.transport
    secrets = transport.secret + request_secrets(transport.headers, transport.query)  # as the adapter's messages hide
    with _lock:
        found = tuple(dict.fromkeys(s for s in secrets if isinstance(s, str) and s not in held))
        held += found
        _held += found
        _model_secrets = (_model_secrets + tuple(s for s in found if s not in _model_secrets))[-MAX_MODEL_SECRETS:]


def release(run: Any) -> None:
    """A traced run ended (`run.ended`): its secrets (`run.secrets`) pass to the run it was started in (`run.outer`),
    which may still write them (an agent tool's output), unless that has ended too (an inner run in a tool's thread a
    timeout left running outlives its caller); else they stay hidden only while among the most recent
    (`MAX_MODEL_SECRETS`). Under the lock, so a caller ending at once either takes them or has released its own."""
    global _held
    with _lock:
        run.ended, outer = True, run.outer
        if outer is not None and not outer.ended:
            outer.secrets += run.secrets
            return
        rest = list(_held)
        for secret in run.secrets:
            rest.remove(secret)
        _held = tuple(rest)


def known_secrets() -> Any:
    """The search `redacted` hides values with (None: nothing to hide), asked for each record, so a token a tool
    exports is hidden from the tool's own output on. The variables' names are sorted out again only when they changed
    (reading every value for each record was half of tracing's cost); the search is built again only when a secret
    changed."""
    global _secret_names
    names, seen = tuple(os.environ), _secret_names
    if names != seen[0]:  # one tuple replaced whole: safe across threads
        seen = _secret_names = (names, tuple(name for name in names if is_secret_variable(name)))
    return _search(tuple(os.environ.get(name, "") for name in seen[1]), _model_secrets + _held)


@functools.lru_cache(maxsize=4)
def _search(values: tuple, model_secrets: tuple) -> Any:
    """Each secret variable's value also without the whitespace around it (a key read from a file keeps its
    newline, an echo of it does not), each secret also percent-encoded (its hex in either case, even mixed) and as
    JSON text holds it, longest first."""
    found = [text for value in values for text in (value, value.strip())]
    values = secret_values([text for text in found + list(model_secrets) if len(text.strip()) >= SHORTEST_SECRET])
    values += [json.dumps(value, ensure_ascii=escaped)[1:-1] for value in values for escaped in (False, True)]
    patterns = (PERCENT_HEX.sub(lambda hex: f"%(?i:{hex.group()[1:]})", re.escape(value)) for value in values)
    return re.compile("|".join(sorted(set(patterns), key=len, reverse=True))) if values else None


def redacted(value: Any, secrets: Any = None, named: bool = False) -> Any:
    """`value` as plain strict JSON data without credentials (see the module's docstring): `secrets` is the search
    for the values to hide (`known_secrets()`); `named`: inside configuration, where names are checked."""
    if isinstance(value, str):
        return _text(value, secrets)
    if not named and isinstance(value, list):  # where a span's size is: its items
        plain = _as_it_is(value, secrets)
        if plain is not None:
            return plain
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, Mapping, list, tuple)):  # as json reads it
        value = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        shown = {}
        for key, inner in value.items():
            if not isinstance(key, str):  # a key JSON can write, as it writes it
                key = json.dumps(key) if key is None or isinstance(key, (int, float)) else str(key)
            name = _text(key, secrets)
            if named and credential_name(name):
                shown[name] = MASK
            else:
                inside = named or name in CONFIGURATION or (name == "data" and value.get("type") == "custom")
                shown[name] = redacted(inner, secrets, inside)
        text = value.get("text")
        changed = isinstance(text, str) and shown.get("text") != text
        return {**shown, "logprobs": []} if "logprobs" in shown and changed else shown
    if isinstance(value, (list, tuple)):
        return _parts_joined([redacted(inner, secrets, named) for inner in value], value, secrets)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else NOT_FINITE.get(value, "NaN")
    return _text(str(value), secrets)


def _as_it_is(value: Any, secrets: Any) -> Any:
    """`value` read back from its JSON text when that shows nothing the walk would change: no value JSON cannot hold,
    no configuration, no text a search could change (each probe finds all that it does, or more). One dump and a few
    searches in C, in place of a walk in Python over every value: a model call's span holds the whole conversation.
    None: walk it."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)  # an object: TypeError
    except (TypeError, ValueError, RecursionError):
        return None
    folded = _folded(text)
    if any(key in text for key in CONFIGURED) or any(probe.search(folded) for probe in MAY_CHANGE) or (
            secrets is not None and (
            "\\\\" in text or text.count('"text":') > 1 or secrets.search(text))):  # escapes, split parts, a secret
        return None
    return json.loads(text)


def _parts_joined(shown: list, parts: Any, secrets: Any) -> list:
    """A message's text parts searched joined too, as whoever reads them joins them: when a secret spans two, the
    text whole, without it, in the first part, the others emptied (and each without its logprobs)."""
    texts = [index for index, part in enumerate(parts) if isinstance(part, Mapping) and isinstance(part.get("text"),
                                                                                                    str)]
    if secrets is None or len(texts) < 2:
        return shown
    whole = _text("".join(parts[index]["text"] for index in texts), secrets)
    if whole == "".join(shown[index]["text"] for index in texts):
        return shown
    for number, index in enumerate(texts):
        shown[index] = {**shown[index], "text": "" if number else whole}
        shown[index].update({"logprobs": []} if "logprobs" in shown[index] else {})
    return shown


def _text(text: str, secrets: Any) -> str:
    """One text without a secret, an authorization value or a credential parameter of a URL's query. Each search
    only where it can find something: a trace has many short texts."""
    if secrets is not None:
        text = secrets.sub(MASK, text)
        if "\\" in text:  # JSON text: a secret behind escapes (`\u0073k-`, `\/`)
            decoded = unescaped(text)
            text = secrets.sub(MASK, decoded) if secrets.search(decoded) else text
    if "@" in text and ("://" in text or ":\\/" in text):
        slashed = ESCAPED_SLASH.sub("/", text) if ":\\/" in text else text  # JSON text may write `/` as `\/`
        text = USERINFO.sub(rf"\1{MASK}@", slashed) if USERINFO.search(slashed) else text
    if "?" in text and "=" in text:
        text = QUERY_STRING.sub(lambda m: "&".join(_pair_shown(pair) for pair in m.group().split("&")), text)
    folded = _folded(text)
    if "bearer" in folded:
        text = BEARER.sub(rf"\1 {MASK}", text)
    if any(scheme in folded for scheme in SCHEMES):
        text = AUTHORIZATION.sub(lambda m: f"{m.group(1) or m.group(2)} {MASK}", text)
    return text


def _folded(text: str) -> str:
    """`text` lowercased as a case-blind search reads it (`ı`, `İ` and `ſ` are ASCII letters to it, not to
    lower())."""
    return (text.translate(FOLD) if "ı" in text or "İ" in text or "ſ" in text else text).lower()


def _pair_shown(pair: str) -> str:
    name, equals, value = pair.partition("=")
    return f"{name}={MASK}" if equals and value and credential_name(name.lstrip("?")) else pair
