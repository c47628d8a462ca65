"""What a run is configured with: `RunConfig` and its `UsageLimits`.

Nothing here runs anything; the loop (run.py) reads these. Tracing stays in the process: spans go to the
processors you registered, or to `trace_path` (JSON lines); nothing is ever sent anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import seams
from .context import from_fields
from .errors import UserError
from .items import described
from .models.interface import ModelSettings


@dataclass
class UsageLimits:
    """Limits on what one run may spend (`RunConfig(usage_limits=...)`; pydantic-ai's names), counted over the
    whole run, the nested runs of agents used as tools included. None: no limit. The requests limit is checked
    before each model call and the tool-call limit before each turn's calls run, so neither is ever passed; the
    token limits are checked at the same points, so they are passed by at most the one response that crossed
    them (one per request in flight, when agent tools run at once), never by the tools it asked for. Exceeding
    one raises `UsageLimitExceeded` (or asks the run's "usage_limit" error handler), and the run's state can
    resume with a higher limit."""

    request_limit: Optional[int] = None
    input_tokens_limit: Optional[int] = None
    output_tokens_limit: Optional[int] = None
    total_tokens_limit: Optional[int] = None
    tool_calls_limit: Optional[int] = None

    def __post_init__(self):
        for name, value in vars(self).items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise UserError(f"UsageLimits.{name} must be a whole number >= 0 or None, got {described(value)}")

    def within(self, other: "UsageLimits") -> "UsageLimits":
        """The limits that keep within both: the smaller of each pair (None: no limit)."""
        pairs = {name: (value, getattr(other, name)) for name, value in vars(self).items()}
        return UsageLimits(**{name: min((v for v in pair if v is not None), default=None)
                              for name, pair in pairs.items()})

    def after(self, usage: Any) -> "UsageLimits":
        """These limits counted from `usage` on, as limits on the whole count: what a run that starts there may spend
        (an agent tool's own limits bound what its inner run spends, not what its caller spent before)."""
        spent = {"request_limit": usage.requests, "tool_calls_limit": usage.tool_calls,
                 "input_tokens_limit": usage.input_tokens, "output_tokens_limit": usage.output_tokens,
                 "total_tokens_limit": usage.total_tokens}
        return UsageLimits(**{name: None if limit is None else limit + spent[name]
                              for name, limit in vars(self).items()})

    def exceeded(self, usage: Any, requests: int = 0, tool_calls: int = 0) -> Optional[tuple]:
        """(limit name, limit, count) of the first limit that `usage` plus `requests` more model calls and
        `tool_calls` more tool calls would pass, else None."""
        counts = (("request_limit", usage.requests + requests), ("tool_calls_limit", usage.tool_calls + tool_calls),
                  ("input_tokens_limit", usage.input_tokens), ("output_tokens_limit", usage.output_tokens),
                  ("total_tokens_limit", usage.total_tokens))
        for name, count in counts:
            limit = getattr(self, name)
            if limit is not None and count > limit:
                return name, limit, count
        return None


@dataclass(eq=False)
class RunConfig:
    """Settings for one run, laid over its agents' (`model`, `model_settings`) or added to theirs (guardrails).
    Tracing (`tracing_disabled`, `trace_include_sensitive_data`, `workflow_name`, `trace_id`, `group_id`,
    `trace_metadata`, `trace_path`, `tracing`) is the tracing shell's; it stays in the
    process: nothing is ever sent anywhere."""

    model: Any = None
    model_provider: Any = None
    model_settings: Optional[ModelSettings] = None
    handoff_input_filter: Optional[Callable] = None
    input_guardrails: Optional[list] = None
    output_guardrails: Optional[list] = None
    session_settings: Any = None
    max_function_tool_concurrency: Optional[int] = None
    usage_limits: Optional[UsageLimits] = None  # requests, tokens and tool calls one run may spend
    workflow_name: str = "Agent workflow"
    trace_id: Optional[str] = None
    group_id: Optional[str] = None
    trace_metadata: Optional[dict] = None
    tracing_disabled: bool = False
    trace_include_sensitive_data: bool = True
    trace_path: Optional[str] = None  # write this run's trace as JSON lines (MINIAGENTS_TRACE does the same)
    tracing: Optional[dict] = None  # {"include_task_and_turn_spans": False} leaves those spans out
    model_tracing: Any = field(init=False, repr=False)  # what a model may record in its own traces (a ModelTracing)

    def __post_init__(self):
        from .models.interface import ModelTracing

        self.model_tracing = ModelTracing.DISABLED if self.tracing_disabled else ModelTracing.ENABLED \
            if self.trace_include_sensitive_data else ModelTracing.ENABLED_WITHOUT_DATA
        seams.load_asked_for(self)  # the tracing shell, to write the run's trace (`trace_path`)
        if isinstance(self.model_settings, dict):  # upstream takes the settings as a dict too
            self.model_settings = ModelSettings.from_dict(self.model_settings, "RunConfig.model_settings")
        if self.tracing is not None:
            if not isinstance(self.tracing, dict):
                raise UserError("RunConfig.tracing must be a dict (upstream's TracingConfig), got "
                                f"{described(self.tracing)}")
            self.tracing = {k: v for k, v in self.tracing.items() if k != "api_key"}
        if isinstance(self.usage_limits, dict):
            self.usage_limits = from_fields(UsageLimits, self.usage_limits, "RunConfig.usage_limits")
        for name, kind, what in (("model_settings", ModelSettings, "ModelSettings, a dict of its fields"),
                                 ("usage_limits", UsageLimits, "UsageLimits, a dict of its fields"),
                                 ("input_guardrails", list, "a list"), ("output_guardrails", list, "a list")):
            if not isinstance(getattr(self, name), (kind, type(None))):  # 5 was a bare error deep in the run
                raise UserError(f"RunConfig.{name} must be {what} or None, got {type(getattr(self, name)).__name__}")
        limit = self.max_function_tool_concurrency
        if limit is not None and (type(limit) is not int or limit < 1):
            raise UserError(f"RunConfig.max_function_tool_concurrency must be a whole number >= 1 or None, got "
                            f"{described(limit)}")
        if self.handoff_input_filter is not None and not callable(self.handoff_input_filter):
            raise UserError(f"RunConfig.handoff_input_filter must be a callable or None, got "
                            f"{type(self.handoff_input_filter).__name__}")
        if not isinstance(self.model, (str, type(None))) and not callable(getattr(self.model, "get_response", None)):
            raise UserError(f"RunConfig.model must be a model name, a Model or None, got {type(self.model).__name__}")
        if self.input_guardrails or self.output_guardrails:  # (guardrails.py is loaded only by runs that use it)
            from .guardrails import check_guardrails
            check_guardrails("RunConfig", self, "input_guardrails", "output_guardrails")

