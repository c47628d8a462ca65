"""Where a model's requests go and how they authenticate: base URL, API key and headers → `HTTPTransport`.

Where it sits: below both the adapters (`endpoint.py` builds each model's transport here) and
`provider.py` (which picks an adapter for a model name), so nothing in models/ imports upwards.
Environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default https://api.openai.com/v1), `OPENAI_ORG_ID`,
`OPENAI_PROJECT_ID`, `OPENAI_CUSTOM_HEADERS`; read when a transport is built, never at import.
Never: put the key anywhere but the auth header, or import http.client/ssl/urllib.request at import time.
"""
from __future__ import annotations

import os
from typing import Optional

from ..errors import UserError
from . import http

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_default_key: Optional[str] = None  # set_default_openai_key
_default_client: Optional[dict] = None  # set_default_openai_client: the base_url and api_key read from that client


def set_default_endpoint(*, api_key: Optional[str] = None, client: Optional[dict] = None) -> None:
    """Set the process-wide defaults that upstream's `set_default_openai_key`/`_client` give (its shell)."""
    global _default_key, _default_client
    check_key(api_key)  # refused where it is set, not at a later run's first request
    if api_key is not None:
        _default_key = api_key
    if client is not None:
        _default_client = client


def env(name: str) -> Optional[str]:
    """An environment variable, with empty meaning unset."""
    return os.environ.get(name) or None


def resolve_base_url(base_url: Optional[str]) -> str:
    default = _default_client and _default_client["base_url"]
    url = base_url or default or env("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    if not isinstance(url, str):  # (bytes, a number) a bare AttributeError or TypeError from rstrip
        raise UserError(f"The base URL (base_url=) must be text, got {type(url).__name__}")
    return url.rstrip("/")


def host_of(base_url: str) -> str:
    """The base URL's host, lowercased; "" for none, or for a URL that is not one (the transport says so)."""
    from urllib.parse import urlsplit
    try:
        return (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return ""


def check_key(key: Optional[str]) -> None:
    """Refuse a key that cannot go in an HTTP header, before http.client refuses it with an error that
    quotes it (a trailing newline from a key file, a space, a character outside Latin-1), and one that is no text
    (bytes, a number: a bare TypeError or AttributeError out of the run's first request)."""
    if key is not None and not isinstance(key, str):
        raise UserError(f"The API key (api_key=, set_default_openai_key or OPENAI_API_KEY) must be text, got "
                        f"{type(key).__name__}")
    bad = next((i for i, ch in enumerate(key or "") if ch.isspace() or not ch.isprintable() or ord(ch) > 255),
               None)
    if bad is not None:
        raise UserError(f"The API key (api_key=, set_default_openai_key or OPENAI_API_KEY) has a character that "
                        f"cannot be sent in an HTTP header at position {bad + 1} of {len(key)} (a newline, a "
                        "space or a non-Latin-1 character): check for a stray newline or a copy-paste slip.")


def api_key_of(api_key: Optional[str]) -> Optional[str]:
    """The key a transport sends: the one given, else the default client's, the default key, OPENAI_API_KEY."""
    return api_key or (_default_client or {}).get("api_key") or _default_key or env("OPENAI_API_KEY")


def make_transport(base_url: Optional[str], api_key: Optional[str], *, organization=None, project=None,
                   default_headers=None, timeout: float = 600.0, max_retries: int = 2,
                   api_version: Optional[str] = None, attempt_timeout: Optional[float] = None,
                   max_response_bytes: int = http.MAX_RESPONSE_BYTES) -> http.HTTPTransport:
    """The transport for one endpoint: base URL and key from arguments, then defaults, then env.

    Azure (`*.azure.com` or an `api_version`): the key goes in an `api-key` header and `api_version`
    becomes the `api-version` query parameter. Elsewhere `Authorization: Bearer`, with a dummy key for
    local servers that need none; api.openai.com without a key is a `UserError` (before any request).
    """
    base = resolve_base_url(base_url)
    key = api_key_of(api_key)
    check_key(key)
    host = host_of(base)
    if not key and host == "api.openai.com":
        raise UserError("No OpenAI API key: set OPENAI_API_KEY or pass api_key=... (upstream's programs may call "
                        "set_default_openai_key(key)); for a local server set base_url / OPENAI_BASE_URL.")
    headers = {}
    if api_version or host.endswith(".azure.com"):
        if key:
            headers["api-key"] = key
    else:
        headers["Authorization"] = f"Bearer {key or 'no-key'}"
    org, proj = organization or env("OPENAI_ORG_ID"), project or env("OPENAI_PROJECT_ID")
    if org:
        headers["OpenAI-Organization"] = org
    if proj:
        headers["OpenAI-Project"] = proj
    for line in (env("OPENAI_CUSTOM_HEADERS") or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers[name.strip()] = value.strip()
    headers.update(default_headers or {})
    return http.HTTPTransport(base, headers, timeout=timeout, max_retries=max_retries,
                              attempt_timeout=attempt_timeout, max_response_bytes=max_response_bytes,
                              query={"api-version": api_version} if api_version else None, secret=key)
