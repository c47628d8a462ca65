"""`OpenAIProvider`: a model name (`Agent(model="gpt-4.1-mini")`) + environment → an HTTP adapter.

Where it sits: `RunConfig(model_provider=...)` (or the default provider) turns an agent's model name
into an `OpenAIResponsesModel` or `OpenAIChatCompletionsModel`. Which one: `use_responses` if given,
else `set_default_openai_api(...)`, else Responses for OpenAI's own base URL and Chat Completions for
any other (compatible servers implement Chat far more faithfully). Environment: `OPENAI_API_KEY`,
`OPENAI_BASE_URL` (default https://api.openai.com/v1), `OPENAI_DEFAULT_MODEL`, `OPENAI_ORG_ID`,
`OPENAI_PROJECT_ID`; read when a model is first resolved, never at import.
The endpoint itself (base URL, key, headers) is resolved in `connection.py`, below the adapters.
Never: import http.client/ssl/urllib.request at import time (importing this module must stay cheap).
"""
from __future__ import annotations

import threading
from typing import Optional

from .connection import DEFAULTS, env, host_of, resolve_base_url
from .interface import Model

DEFAULT_MODEL = "gpt-4.1"
_default_api: dict = {"api": None}


def set_default_openai_key(key: str, use_for_tracing: bool = True) -> None:
    """The API key used when neither the model nor the provider was given one (beats OPENAI_API_KEY)."""
    DEFAULTS["api_key"] = key


def set_default_openai_api(api: str) -> None:
    """`"chat_completions"` or `"responses"`: the API providers use unless told otherwise."""
    if api not in ("chat_completions", "responses"):
        raise ValueError(f"api must be 'chat_completions' or 'responses', got {api!r}")
    _default_api["api"] = api


class OpenAIProvider:
    """Resolves model names to adapters sharing one endpoint configuration; models are cached per name."""

    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None,
                 organization: Optional[str] = None, project: Optional[str] = None,
                 use_responses: Optional[bool] = None, *, default_headers: Optional[dict] = None,
                 timeout: float = 600.0, max_retries: int = 2, api_version: Optional[str] = None,
                 **chat_options):
        self._api_key = api_key
        self.base_url, self.organization, self.project = base_url, organization, project
        self.use_responses = use_responses
        self._endpoint = dict(organization=organization, project=project, default_headers=default_headers,
                              timeout=timeout, max_retries=max_retries, api_version=api_version)
        self._chat_options = chat_options  # system_role, max_tokens_field, include_usage, reasoning_field,
        # tool_call_content
        self._models: dict = {}
        self._lock = threading.Lock()

    def _wants_responses(self, base_url: str) -> bool:
        if self.use_responses is not None:
            return self.use_responses
        if _default_api["api"] is not None:
            return _default_api["api"] == "responses"
        return host_of(base_url) == "api.openai.com"

    def get_model(self, model_name: Optional[str]) -> Model:
        source = None if model_name else "env" if env("OPENAI_DEFAULT_MODEL") else "default"
        name = model_name or env("OPENAI_DEFAULT_MODEL") or DEFAULT_MODEL
        base_url = resolve_base_url(self.base_url)
        responses = self._wants_responses(base_url)
        key = (name, source, base_url, responses)
        with self._lock:
            if key not in self._models:
                if responses:
                    from .responses import OpenAIResponsesModel
                    model = OpenAIResponsesModel(name, base_url=base_url, api_key=self._api_key, **self._endpoint)
                else:
                    from .chat_completions import OpenAIChatCompletionsModel
                    model = OpenAIChatCompletionsModel(
                        name, base_url=base_url, api_key=self._api_key, **self._endpoint, **self._chat_options)
                model.model_source = source  # a 404 for a name nobody chose says where it came from
                self._models[key] = model
            return self._models[key]

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, use_responses={self.use_responses!r})"
