"""Upstream's provider API: `OpenAIProvider`, `MultiProvider` (model-name prefixes), `set_default_openai_key` and
`set_default_openai_api`, on the kernel's adapters; and upstream's way to say where requests go,
an `openai_client` object (the adapters' and the providers' keyword), read by `client_endpoint`.

Where it sits: `RunConfig(model_provider=...)` turns an agent's model name into a `Model`; upstream's `Runner`
(runner.py) gives a run that names no provider `default_provider()`, a `MultiProvider`, as upstream does. Which
adapter an `OpenAIProvider` makes: `use_responses` if given, else `set_default_openai_api(...)`, else the kernel's
rule (Responses for OpenAI's own base URL, Chat Completions for any other).
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from ..errors import UserError
from ..models import chat_completions, responses
from ..models.connection import api_key_of, env, host_of, resolve_base_url, set_default_endpoint
from ..models.http import MAX_RESPONSE_BYTES, check_bounds, shown_base_url
from ..models.interface import Model
from ..models.provider import default_name

_default_api: Optional[str] = None  # set_default_openai_api
_default_provider: Optional["MultiProvider"] = None  # default_provider(): made on first use, kept for the process


def set_default_openai_key(key: str, use_for_tracing: bool = True) -> None:
    """The API key used when neither the model nor the provider was given one (beats OPENAI_API_KEY)."""
    set_default_endpoint(api_key=key)


def set_default_openai_api(api: str) -> None:
    """`"chat_completions"` or `"responses"`: the API providers use unless told otherwise."""
    if api not in ("chat_completions", "responses"):
        raise ValueError(f"api must be 'chat_completions' or 'responses', got {api!r}")
    global _default_api
    _default_api = api


def client_endpoint(client: Any) -> dict:
    """The endpoint an OpenAI client object points at: its `base_url` and `api_key` (and `organization`,
    `project` when it has them). Any object with those attributes works: `openai.OpenAI`/`AsyncOpenAI`
    instances do, and miniagents never imports openai. Its own HTTP machinery is not used."""
    if not (hasattr(client, "base_url") and hasattr(client, "api_key")):
        raise UserError(f"openai_client must have base_url and api_key attributes (an openai.AsyncOpenAI or "
                        f"openai.OpenAI instance works), got {type(client).__name__}")
    base_url, key = client.base_url, client.api_key
    return {"base_url": str(base_url) if base_url else None, "api_key": key if isinstance(key, str) else None,
            "organization": getattr(client, "organization", None), "project": getattr(client, "project", None)}


def with_client(client: Any, **given: Any) -> dict:
    """`given` (base_url, api_key, organization, project), each unset one read from `client` when there is one."""
    found = client_endpoint(client) if client is not None else {}
    return {name: value or found.get(name) for name, value in given.items()}


def _endpoint(client: Any, options: dict) -> dict:
    """An adapter's keywords, with where `client` points filling those that are unset."""
    return {**options, **with_client(client, **{name: options.get(name) for name in
                                                ("base_url", "api_key", "organization", "project")})}


class OpenAIChatCompletionsModel(chat_completions.OpenAIChatCompletionsModel):
    """The kernel's Chat Completions adapter with upstream's signature: `(model, openai_client)`."""

    def __init__(self, model: str, openai_client: Any = None, **options: Any):
        super().__init__(model, **_endpoint(openai_client, options))


class OpenAIResponsesModel(responses.OpenAIResponsesModel):
    """The kernel's Responses adapter with upstream's signature: `(model, openai_client)`."""

    def __init__(self, model: str, openai_client: Any = None, **options: Any):
        super().__init__(model, **_endpoint(openai_client, options))


def default_provider() -> "MultiProvider":
    """The provider of an upstream run that names none (it reuses connections across runs)."""
    global _default_provider
    if _default_provider is None:
        _default_provider = MultiProvider()
    return _default_provider


class OpenAIProvider:
    """Resolves model names to adapters sharing one endpoint configuration; models are cached per name."""

    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None,
                 organization: Optional[str] = None, project: Optional[str] = None,
                 use_responses: Optional[bool] = None, *, openai_client: Any = None,
                 default_headers: Optional[dict] = None, timeout: float = 600.0, max_retries: int = 2,
                 api_version: Optional[str] = None, attempt_timeout: Optional[float] = None,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, **chat_options):
        check_bounds(attempt_timeout, max_response_bytes, timeout, max_retries)
        given = with_client(openai_client, base_url=base_url, api_key=api_key, organization=organization,
                            project=project)  # where the client points, with its key (the client is never called)
        self._api_key = given["api_key"]
        self.base_url, self.organization, self.project = given["base_url"], given["organization"], given["project"]
        self.use_responses = use_responses
        self._endpoint = dict(organization=self.organization, project=self.project, default_headers=default_headers,
                              timeout=timeout, max_retries=max_retries, api_version=api_version,
                              attempt_timeout=attempt_timeout, max_response_bytes=max_response_bytes)
        self._chat_options = chat_options  # system_role, max_tokens_field, include_usage, reasoning_field,
        # tool_call_content, response_format_type
        self._models: dict = {}
        self._lock = threading.Lock()

    def _wants_responses(self, base_url: str) -> bool:
        if self.use_responses is not None:
            return self.use_responses
        if _default_api is not None:
            return _default_api == "responses"
        return host_of(base_url) == "api.openai.com"

    def get_model(self, model_name: Optional[str]) -> Model:
        base_url = resolve_base_url(self.base_url)
        responses = self._wants_responses(base_url)
        key = (model_name, env("OPENAI_DEFAULT_MODEL"), base_url, responses, api_key_of(self._api_key))  # a key
        # set since (set_default_openai_key, a new default client) is the next run's, as upstream reads it per run
        with self._lock:
            if key not in self._models:
                name, source = default_name(model_name)
                adapter, options = (OpenAIResponsesModel, {}) if responses else (OpenAIChatCompletionsModel,
                                                                                  self._chat_options)
                model = adapter(name, base_url=base_url, api_key=self._api_key, **self._endpoint, **options)
                model.model_source = source  # a 404 for a name nobody chose says where it came from
                self._models[key] = model
            return self._models[key]

    def __repr__(self) -> str:
        shown = shown_base_url(self.base_url, self._api_key) if self.base_url else None
        return f"OpenAIProvider(base_url={shown!r}, use_responses={self.use_responses!r})"


class MultiProvider:
    """Routes a model name by its prefix, as upstream: no prefix or `openai/` → an `OpenAIProvider` (built from
    the `openai_*` arguments; `openai/` is stripped unless `openai_prefix_mode="model_id"`); a prefix in
    `provider_map` (anything with `get_provider(prefix)`, as upstream's `MultiProviderMap`) → that provider, with
    the rest of the name; any other prefix is a `UserError` (or, with
    `unknown_prefix_mode="model_id"`, the whole name goes to the OpenAI provider, for servers whose model ids
    contain "/"). `litellm/` and `any-llm/` need upstream's extensions, which miniagents does not provide. This is
    the default provider of an upstream run without `RunConfig(model_provider=...)`."""

    def __init__(self, *, provider_map: Any = None, openai_api_key: Optional[str] = None,
                 openai_base_url: Optional[str] = None, openai_client: Any = None,
                 openai_organization: Optional[str] = None, openai_project: Optional[str] = None,
                 openai_use_responses: Optional[bool] = None, openai_prefix_mode: str = "alias",
                 unknown_prefix_mode: str = "error"):
        if openai_prefix_mode not in ("alias", "model_id"):
            raise UserError("MultiProvider openai_prefix_mode must be one of: 'alias', 'model_id'.")
        if unknown_prefix_mode not in ("error", "model_id"):
            raise UserError("MultiProvider unknown_prefix_mode must be one of: 'error', 'model_id'.")
        self.provider_map = provider_map
        self.openai_provider = OpenAIProvider(openai_api_key, openai_base_url, openai_organization, openai_project,
                                              openai_use_responses, openai_client=openai_client)
        self._openai_prefix_mode, self._unknown_prefix_mode = openai_prefix_mode, unknown_prefix_mode

    def get_model(self, model_name: Optional[str]) -> Model:
        if model_name is None or "/" not in model_name:
            return self.openai_provider.get_model(model_name)
        prefix, rest = model_name.split("/", 1)
        chosen = self.provider_map.get_provider(prefix) if self.provider_map is not None else None
        if chosen is not None:  # an explicit mapping always wins
            return chosen.get_model(rest)
        if prefix in ("litellm", "any-llm"):
            raise UserError(f"Model {model_name!r}: the {prefix!r} prefix needs upstream's {prefix} extension, which "
                            "miniagents does not provide; point OPENAI_BASE_URL (or a MultiProviderMap entry) at an "
                            "OpenAI-compatible server instead")
        if prefix == "openai":
            return self.openai_provider.get_model(rest if self._openai_prefix_mode == "alias" else model_name)
        if self._unknown_prefix_mode == "model_id":
            return self.openai_provider.get_model(model_name)
        raise UserError(f"Unknown prefix: {prefix}")

    def __repr__(self) -> str:
        prefixes = sorted(self.provider_map.get_mapping()) if self.provider_map is not None else []
        return f"MultiProvider(prefixes={prefixes!r}, openai={self.openai_provider!r})"
