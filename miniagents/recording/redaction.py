"""What never reaches a recording: credentials, found by name and by value, and whatever the user's hook removes.

Applied to every request before it is written, and to every request of a replay before it is compared, so a
redacted value matches its redacted self. Three passes, in this order:

1. **Credentials by name**, in the request's settings at any depth (`extra_headers`, `extra_query`,
   `extra_body`, `extra_args`, `metadata`, ...): a key whose words include one of `CREDENTIAL_WORDS`
   (`Authorization`, `api-key`, `X-Api-Key`, `access_token`, `client_secret`, `Cookie`, ...) keeps its name and
   loses its value, and so does any string that starts like an authorization value (`Bearer ...`, `Basic ...`).
2. **Secrets by value**, anywhere in the request and the response: the wrapped model's API key and the value of
   every environment variable whose name has a credential word (`OPENAI_API_KEY`, `HF_TOKEN`, ...), 8
   characters or more, are replaced wherever they occur inside a string.
3. **The user's hook** (`redact=`), a function from text to text, applied to every string of the request and
   the response on its own: context-derived text, personal data.

Every replaced value becomes `REDACTED`. A replay cannot know every secret the recording machine knew (its model's
key), so when it compares, a recorded `REDACTED` stands for any text (replay.py).
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Iterable, Optional

from ..errors import UserError
from ..models.endpoint import EndpointModel

REDACTED = "[REDACTED]"
CREDENTIAL_WORDS = frozenset(("authorization", "auth", "key", "apikey", "token", "secret", "password", "passwd",
                              "cookie", "credential", "credentials", "signature", "bearer"))
AUTHORIZATION_VALUE = re.compile(r"(?i)^\s*(bearer|basic|token|digest)\s+\S")
SHORTEST_SECRET = 8  # shorter values (a local server's "x") are not searched for: they would match ordinary text


def is_credential_name(name: str) -> bool:
    """Whether a header, parameter or variable name says it holds a credential: `X-Api-Key`, `apiKey`,
    `OPENAI_API_KEY` do; `max_tokens`, `OpenAI-Organization` do not."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in CREDENTIAL_WORDS for word in re.split(r"[^a-z0-9]+", words))


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


def environment_secrets() -> list:
    """The values of the environment's credential-named variables, long enough to search for."""
    return [value for name, value in os.environ.items()
            if is_credential_name(name) and len(value.strip()) >= SHORTEST_SECRET]


def model_secret(model: Any) -> Optional[str]:
    """The API key a miniagents HTTP adapter sends (its transport's: asked only after a call succeeded, so the
    transport exists); None for any other model."""
    return model.transport.secret if isinstance(model, EndpointModel) else None


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (plain JSON data) with `change` applied to every string value (keys are the program's names, and
    stay as they are)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: map_strings(inner, change) for key, inner in value.items()}
    if isinstance(value, list):
        return [map_strings(inner, change) for inner in value]
    return value


def without_secrets(value: Any, secrets: Iterable[Optional[str]]) -> Any:
    """`value` with every occurrence of each secret, inside any string, replaced by `REDACTED`."""
    found = sorted({s for s in secrets if s and len(s) >= SHORTEST_SECRET}, key=len, reverse=True)
    if not found:
        return value

    def scrub(text: str) -> str:
        for secret in found:
            text = text.replace(secret, REDACTED)
        return text
    return map_strings(value, scrub)


def user_hook(hook: Optional[Callable[[str], str]]) -> Callable[[Any], Any]:
    """The user's `redact=` as a pass over plain data (the identity when there is none); `UserError` when the
    hook gives back something that is not text."""
    if hook is None:
        return lambda value: value
    if not callable(hook):
        raise UserError(f"redact= must be a function from str to str, got {type(hook).__name__}")

    def checked(text: str) -> str:
        result = hook(text)
        if not isinstance(result, str):
            raise UserError(f"the redact= function must return a str, got {type(result).__name__}")
        return result
    return lambda value: map_strings(value, checked)
