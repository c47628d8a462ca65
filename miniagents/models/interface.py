"""The boundary between the kernel and a model: `Model`, `ModelResponse`, `ModelSettings`, `ModelTracing`.

As upstream, the kernel sends input items (Responses-shaped dicts), the tool objects the agent offers
(`FunctionTool`s and hosted tools), its `Handoff`s, the output schema object (an `AgentOutputSchemaBase`, or
None for plain text) and a `ModelTracing`. Each tool, handoff and output schema has `spec()`, its plain-data
form: a function tool's and a handoff's is `{"type": "function", "name", "description", "parameters",
"strict"}` (the Responses API's flat shape), a hosted tool's is its Responses tool object, an output
schema's is `{"name": "final_output", "schema": {...}, "strict": bool}`. Model adapters read only those
specs, so nothing here knows about agents or tools. A model returns output items in the Responses shape.

Unlike upstream, the methods are synchronous: the kernel's loop is synchronous and `Runner.run`
runs it off the event loop. So a run is cancelled through `CANCEL_CALLBACKS`, not by cancelling a task.
"""
from __future__ import annotations

import contextvars
import enum
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any, Iterator, Optional, Protocol, runtime_checkable

from ..caller import CANCEL_CALLBACKS  # noqa: F401 - part of the Model contract, documented below
from ..context import from_fields, overlay
from ..items import ModelResponse  # noqa: F401 - upstream's agents.models.interface exports it

# `CANCEL_CALLBACKS` (caller.py) is part of this contract: while a request is in flight, a model keeps an abort
# for it in the run's list (a model with nothing to abort may ignore it).
# True while the run retries a call itself (the retry shell sets it): a model adapter reading it makes one attempt.
provider_retries_disabled: contextvars.ContextVar = contextvars.ContextVar("miniagents_provider_retries_disabled",
                                                                          default=False)


# What a field declared of one kind may hold besides None, as upstream's settings check where they are made (a
# string of includes was sent one letter an entry; a header, query or body that is no dict failed deep in a request).
KINDS = {"Optional[float]": ((int, float), "a number"), "Optional[int]": ((int,), "a whole number"),
         "Optional[bool]": ((bool,), "a bool"), "Optional[str]": ((str,), "a string"),
         "Optional[dict]": ((dict,), "a dict"), "Optional[list]": ((list, tuple), "a list")}


@dataclass
class ModelSettings:
    """Sampling and request options. Every field defaults to None, meaning "not sent"."""

    temperature: Optional[float] = None
    top_p: Optional[float] = None
    frequency_penalty: Optional[float] = None
    presence_penalty: Optional[float] = None
    tool_choice: Any = None
    parallel_tool_calls: Optional[bool] = None
    truncation: Optional[str] = None
    max_tokens: Optional[int] = None
    reasoning: Any = None
    verbosity: Optional[str] = None
    metadata: Optional[dict] = None
    store: Optional[bool] = None
    prompt_cache_retention: Optional[str] = None
    include_usage: Optional[bool] = None
    response_include: Optional[list] = None
    top_logprobs: Optional[int] = None
    extra_query: Optional[dict] = None
    extra_body: Optional[dict] = None
    extra_headers: Optional[dict] = None
    extra_args: Optional[dict] = None
    retry: Any = None
    context_management: Any = None
    prompt_cache_options: Any = None
    preserve_raw_usage: Optional[bool] = None
    timeout: Optional[float] = None

    def __post_init__(self):
        for name, value in vars(self).items():  # (most are None, not sent: the check costs little per run)
            if value is not None and name in FIELD_KINDS:
                kinds, what = FIELD_KINDS[name]
                if not isinstance(value, kinds) or isinstance(value, bool) and int in kinds:
                    raise TypeError(f"ModelSettings {name} must be {what} or None, got {type(value).__name__}")
        timeout = self.timeout
        if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
            raise ValueError(f"ModelSettings.timeout must be a finite number of seconds > 0, got {self.timeout!r}")
        if self.retry is not None:  # the run manages retries: the retry shell takes part in the runs (its plugin)
            from .. import seams

            seams.load_asked_for(self)

    @classmethod
    def from_dict(cls, settings: dict, where: str = "ModelSettings") -> "ModelSettings":
        """Settings given as a dict (upstream takes them so): an unknown key is a `UserError` naming it."""
        return from_fields(cls, settings, where)

    def resolve(self, override: Optional["ModelSettings"]) -> "ModelSettings":
        """Lay the non-None fields of `override` (settings, or a dict of them) over these; `extra_args` dicts
        are merged, retry settings layered field by field (`layered`)."""
        if isinstance(override, dict):
            override = ModelSettings.from_dict(override)
        merged = overlay(self, override)
        if override is not None and self.extra_args and override.extra_args:
            merged.extra_args = {**self.extra_args, **override.extra_args}
        if override is not None and self.retry is not None and override.retry is not None:
            merged.retry = layered(self.retry, override.retry)
        return merged

    def to_json_dict(self) -> dict:
        """The set fields, JSON-ready (`retry` and a dataclass `tool_choice`, upstream's `MCPToolChoice`, as dicts)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) is not None}


FIELD_KINDS = {f.name: KINDS[f.type] for f in fields(ModelSettings) if f.type in KINDS}  # name -> (kinds, what)


def layered(base: Any, override: Any, where: str = "ModelSettings.retry") -> Any:
    """Retry settings layered as upstream layers them: each field the run's (`override`) leaves None keeps the
    agent's, and the backoff's fields too, so a run's backoff keeps the agent's `max_retries` and `policy`. Either
    may be a dict of the fields (the retry shell reads one so); of any other kind, `override` wins whole (for the
    retry shell to refuse)."""
    under, over = _fields(base), _fields(override)
    if under is None or over is None:
        return override
    merged = {**under, **{name: value for name, value in over.items() if value is not None}}
    if under.get("backoff") is not None and over.get("backoff") is not None:
        merged["backoff"] = layered(under["backoff"], over["backoff"], where + ".backoff")
    kind = next((type(side) for side in (base, override) if not isinstance(side, dict)), dict)
    return merged if kind is dict else from_fields(kind, merged, where)


def _fields(value: Any) -> Optional[dict]:
    """Settings as a dict of their fields (a dict is one already); None for a value that is no settings."""
    if isinstance(value, dict):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return None


def _jsonable(value: Any) -> Any:
    """A settings value as JSON data: its own `to_json_dict()` when it has one, a dataclass's fields, or itself."""
    if callable(getattr(value, "to_json_dict", None)):
        return value.to_json_dict()
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else value


class ModelTracing(enum.Enum):
    """What a model may record about a call in traces: nothing, everything, or everything but the data."""

    DISABLED = 0
    ENABLED = 1
    ENABLED_WITHOUT_DATA = 2

    def is_disabled(self) -> bool:
        return self is ModelTracing.DISABLED

    def include_data(self) -> bool:
        return self is ModelTracing.ENABLED


@runtime_checkable
class Model(Protocol):
    """What the kernel calls once per turn.

    `stream_response` yields Responses-shaped stream events (dicts with a `type`); the last one is
    `{"type": "response.completed", "response": {"id", "output": [...], "usage": {...}}}`.
    """

    def get_response(self, system_instructions: Optional[str], input: list,
                     model_settings: ModelSettings, tools: list, output_schema: Any,
                     handoffs: list, tracing: Any = None, *, previous_response_id: Optional[str] = None,
                     conversation_id: Optional[str] = None, prompt: Any = None) -> ModelResponse: ...

    def stream_response(self, system_instructions: Optional[str], input: list,
                        model_settings: ModelSettings, tools: list, output_schema: Any,
                        handoffs: list, tracing: Any = None, *, previous_response_id: Optional[str] = None,
                        conversation_id: Optional[str] = None, prompt: Any = None) -> Iterator[dict]: ...


class ModelProvider(Protocol):
    """Resolves a model name (`Agent(model="gpt-4.1-mini")`) to a `Model`."""

    def get_model(self, model_name: Optional[str]) -> Model: ...
