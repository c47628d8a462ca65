"""The kernel's default provider: a model name (`Agent(model="gpt-4.1-mini")`) + environment → an HTTP adapter.

Where it sits: a run without `RunConfig(model_provider=...)` asks `DefaultProvider` for the `Model` of an agent's
model name (or `OPENAI_DEFAULT_MODEL`'s, else `DEFAULT_MODEL`). The name is sent as it is written ("org/model"
too: a local server's ids often hold a "/"). The adapter: Responses for OpenAI's own base URL, Chat Completions for
any other (compatible servers implement Chat far more faithfully). The endpoint itself (base URL, key, headers,
their environment variables) is resolved in `connection.py`, below the adapters. Upstream's provider API
(`OpenAIProvider`, `MultiProvider` and its prefixes, `set_default_openai_api`) is the upstream shell's.
Never: import http.client/ssl/urllib.request at import time (importing this module must stay cheap).
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from .connection import env, host_of, resolve_base_url
from .interface import Model

DEFAULT_MODEL = "gpt-4.1"


def default_name(model_name: Optional[str]) -> tuple:
    """The name to send for `model_name` (None: `OPENAI_DEFAULT_MODEL`'s, else `DEFAULT_MODEL`), and where it came
    from, for the model's `model_source` (a 404 for a name nobody chose says so): None, "env" or "default"."""
    source = None if model_name else "env" if env("OPENAI_DEFAULT_MODEL") else "default"
    return model_name or env("OPENAI_DEFAULT_MODEL") or DEFAULT_MODEL, source


def make_model(model_name: Optional[str]) -> Model:
    """The adapter for `model_name` at the default base URL: Responses for OpenAI's own, else Chat Completions."""
    name, source = default_name(model_name)
    base_url = resolve_base_url(None)
    if host_of(base_url) == "api.openai.com":
        from .responses import OpenAIResponsesModel
        model: Any = OpenAIResponsesModel(name, base_url=base_url)
    else:
        from .chat_completions import OpenAIChatCompletionsModel
        model = OpenAIChatCompletionsModel(name, base_url=base_url)
    model.model_source = source
    return model


class DefaultProvider:
    """The run's provider when it was given none: `make_model` per name, cached per name and endpoint (so a
    process reuses its connections across runs)."""

    def __init__(self):
        self._models: dict = {}
        self._lock = threading.Lock()

    def get_model(self, model_name: Optional[str]) -> Model:
        key = (model_name, env("OPENAI_DEFAULT_MODEL"), resolve_base_url(None))
        with self._lock:
            if key not in self._models:
                self._models[key] = make_model(model_name)
            return self._models[key]
