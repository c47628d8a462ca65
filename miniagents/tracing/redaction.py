"""What no trace file or live view holds: a credential (found by name and by value), or a line strict JSON refuses.

`redacted` is the one pass. Every record the ready processors write (`JsonlTraceProcessor`, `ConsoleTraceProcessor`)
goes through it with `known_secrets()`, and a generation span's model settings go through it when the span is made (so
your own processors never see a credential-named setting either):

- by name: the value of every key, at any depth, that names a credential by the HTTP adapters' rule
  (`is_credential_name`: `api_key`, `Authorization`, `X-Api-Key`, `client_secret`, `token`, `sig`, ...) becomes
  `***`, and so does the token after every `Bearer` in a text (8 characters or more: "bearer of" is prose);
- by value: the value of every environment variable whose name says credential (`OPENAI_API_KEY`, `HF_TOKEN`, ...)
  and what a traced run's HTTP model keeps secret (its API key, credentials in its base URL), 8 characters or
  more, wherever they occur in a text or a key, as they are or percent-encoded; and the value of every
  `name=value` whose name is plainly a credential (`key=`, `token=`, ...: the adapters' `without_secrets`);
- strict JSON: a float JSON has no number for (NaN, Infinity, -Infinity) becomes the text Python's json would have
  written (`"NaN"`, ...) rather than null, so the line still says what the value was; anything else JSON cannot
  hold (an object, a tuple, a key that is not a string) becomes a list or its `str()`, as `default=str` made it.
"""
from __future__ import annotations

import functools
import math
import os
import re
import threading
from typing import Any

from ..models.endpoint import EndpointModel
from ..models.protocol import is_credential_name, secret_values, without_secrets

MASK = "***"
SHORTEST_SECRET = 8  # shorter values (a local server's key "x", XDG_SESSION_TYPE=x11) would match ordinary text
MAX_WRAPPERS = 8  # wrappers looked through for the model they wrap
MAX_MODEL_SECRETS = 64  # the most recent models' secrets kept: each record is searched for every one
BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"'<>,;]{8,}")
NOT_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
credential_name = functools.lru_cache(maxsize=1024)(is_credential_name)  # a record's keys are mostly the same few
_model_secrets: tuple = ()  # replaced (never mutated) under _lock, so a reader in another thread sees a whole one
_lock = threading.Lock()


def remember(model: Any) -> None:
    """Keep what a traced run's model keeps secret, when it is a miniagents HTTP adapter (its transport's: the API
    key, credentials in its base URL), itself or wrapped (a wrapper, such as the upstream shell's or a recording's,
    keeps the model it wraps as `wrapped`); asked after a call succeeded, so the transport exists."""
    global _model_secrets
    for _ in range(MAX_WRAPPERS):
        if isinstance(model, EndpointModel):
            break
        model = getattr(model, "wrapped", None)
    else:
        return
    found = tuple(s for s in model.transport.secret if isinstance(s, str) and s not in _model_secrets)
    if found:
        with _lock:
            _model_secrets = (_model_secrets + found)[-MAX_MODEL_SECRETS:]


def known_secrets() -> tuple:
    """The texts `redacted` hides by value, each also percent-encoded, longest first; asked for each record, so a
    variable set after a processor was made counts too (worked out again only when the environment or the models'
    secrets changed: each record would pay half a millisecond)."""
    return _searched(tuple(os.environ.items()), _model_secrets)


@functools.lru_cache(maxsize=4)
def _searched(environment: tuple, model_secrets: tuple) -> tuple:
    """Each credential-named variable's value also without the whitespace around it: a key read from a file keeps
    its newline, an echo of it does not."""
    found = [text for name, value in environment if is_credential_name(name) for text in (value, value.strip())]
    return tuple(secret_values([text for text in found + list(model_secrets) if len(text.strip()) >= SHORTEST_SECRET]))


def redacted(value: Any, secrets: Any = ()) -> Any:
    """`value` as plain strict JSON data without credentials (see the module's docstring): `secrets` are the texts
    to hide by value (`known_secrets()`)."""
    if isinstance(value, str):
        return _text(value, secrets)
    if isinstance(value, dict):
        shown = {}
        for key, inner in value.items():
            name = _text(key if isinstance(key, str) else str(key), secrets)
            shown[name] = MASK if credential_name(name) else redacted(inner, secrets)
        return shown
    if isinstance(value, (list, tuple)):
        return [redacted(inner, secrets) for inner in value]
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else NOT_FINITE.get(value, "NaN")
    return _text(str(value), secrets)


def _text(text: str, secrets: Any) -> str:
    """One text without a secret, a credential `name=value` or a Bearer token. Each search only where it can find
    something: a trace has many short texts, and `without_secrets` encodes every secret again for each."""
    if "=" in text or "\\u" in text or any(secret in text for secret in secrets):
        text = without_secrets(text, secrets)
    return BEARER.sub(rf"\1 {MASK}", text) if "bearer" in text.lower() else text
