"""Making traces and spans: `trace()` and one factory per kind of span (upstream's `agents.tracing.create`).

Cheap when unused: a span is recorded only below a trace that has a processor; otherwise every factory returns a
`NoOpSpan` (no clock read, no id, nothing sent)."""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Sequence

from . import provider
from .redaction import redacted
from .scope import _current_span, _current_trace
from .span_data import (AgentSpanData, CustomSpanData, FunctionSpanData, GenerationSpanData, GuardrailSpanData,
                        HandoffSpanData, SpanData, TaskSpanData, TurnSpanData)
from .spans import NoOpSpan, Span, SpanImpl, _DetachedSpan
from .traces import NoOpTrace, Trace, TraceImpl

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named


def trace(workflow_name: str, trace_id: Optional[str] = None, group_id: Optional[str] = None,
          metadata: Optional[dict] = None, tracing: Optional[Mapping] = None, disabled: bool = False) -> Trace:
    """A new trace (not started: use `with trace(...)`). It goes to the processors registered now; with none,
    it is silent and costs nothing more. `tracing` (upstream's export config, e.g. an API key) is dropped."""
    if disabled or provider.tracing_disabled():
        return NoOpTrace()
    if _current_trace.get() is not None:
        logger.warning("Trace already exists. Creating a new trace, but this is probably a mistake.")
    return TraceImpl(workflow_name, trace_id, group_id, metadata, provider.processors())


def get_current_trace() -> Optional[Trace]:
    return _current_trace.get()


def get_current_span() -> Optional["Span"]:
    return _current_span.get()


def recording() -> bool:
    """True when a span made here would be recorded: the Runner's one cheap check before it builds span data
    that costs something (tool lists, model settings)."""
    parent = _current_span.get() or _current_trace.get()
    return parent is not None and bool(parent._processors) and not provider.tracing_disabled()


def _span(span_data: SpanData, span_id: Optional[str], parent: Any, disabled: bool) -> Span:
    """The one place that decides whether a span is recorded: below a recording parent (given, or the current
    span, or the current trace) and with tracing not disabled."""
    if parent is None:
        parent = _current_span.get() or _current_trace.get()
        if parent is None:
            return _DetachedSpan(span_data)
    if disabled or not getattr(parent, "_processors", ()) or provider.tracing_disabled():
        return NoOpSpan(span_data)
    return SpanImpl(span_data, parent, span_id)


def agent_span(name: str, handoffs: Optional[list] = None, tools: Optional[list] = None,
               output_type: Optional[str] = None, span_id: Optional[str] = None, parent: Any = None,
               disabled: bool = False) -> Span:
    """An agent's stretch of the run: from when it becomes the current agent until it hands off or the run
    ends. `handoffs` and `tools` are names; `output_type` the output type's name ("str" for text)."""
    return _span(AgentSpanData(name, handoffs, tools, output_type), span_id, parent, disabled)


def task_span(name: str, span_id: Optional[str] = None, parent: Any = None, disabled: bool = False) -> Span:
    """One Runner invocation (`run_trace` opens it)."""
    return _span(TaskSpanData(name), span_id, parent, disabled)


def turn_span(turn: int, agent_name: str, span_id: Optional[str] = None, parent: Any = None,
              disabled: bool = False) -> Span:
    """One turn: input guardrails (turn 1), the model call, the tools it asked for, a handoff."""
    return _span(TurnSpanData(turn, agent_name), span_id, parent, disabled)


def function_span(name: str, input: Optional[str] = None, output: Any = None, span_id: Optional[str] = None,
                  parent: Any = None, disabled: bool = False) -> Span:
    """One tool call: `input` is the raw JSON arguments, `output` what the model was sent (both sensitive)."""
    return _span(FunctionSpanData(name, input, output), span_id, parent, disabled)


# Model settings that may carry credentials or arbitrary request data never reach a trace.
_UNTRACED_SETTINGS = frozenset(("extra_headers", "extra_query", "extra_body", "extra_args", "api_key", "headers"))


def _traced_settings(model_config: Any) -> dict:
    """The settings a trace shows: none of `_UNTRACED_SETTINGS`, and the rest `redacted` (the value of each key that
    names a credential, at any depth, as in `metadata`, hidden as `***`; so is a `Bearer` token)."""
    raw = model_config.to_json_dict() if callable(getattr(model_config, "to_json_dict", None)) else model_config
    try:
        return redacted({k: v for k, v in dict(raw).items() if k not in _UNTRACED_SETTINGS and v is not None},
                        named=True)
    except RecursionError:  # nested past what the walk reads: made in the run's own steps, it must not fail the run
        return {"error": "the settings nest too deep to show"}


def generation_span(input: Optional[Sequence] = None, output: Optional[Sequence] = None, model: Optional[str] = None,
                    model_config: Any = None, usage: Optional[dict] = None, span_id: Optional[str] = None,
                    parent: Any = None, disabled: bool = False) -> Span:
    """One model call. `input`/`output` are the items sent and received (sensitive); `usage` the Responses
    usage dict; `model_config` a mapping or a `ModelSettings`, kept without headers, extra arguments or keys
    (and only converted when the span is recorded)."""
    span = _span(GenerationSpanData(input, output, model, None, usage), span_id, parent, disabled)
    if model_config is not None and isinstance(span, SpanImpl):
        span.span_data.model_config = _traced_settings(model_config)
    return span


def handoff_span(from_agent: Optional[str] = None, to_agent: Optional[str] = None, span_id: Optional[str] = None,
                 parent: Any = None, disabled: bool = False) -> Span:
    return _span(HandoffSpanData(from_agent, to_agent), span_id, parent, disabled)


def guardrail_span(name: str, triggered: bool = False, span_id: Optional[str] = None, parent: Any = None,
                   disabled: bool = False) -> Span:
    return _span(GuardrailSpanData(name, triggered), span_id, parent, disabled)


def custom_span(name: str, data: Optional[dict] = None, span_id: Optional[str] = None, parent: Any = None,
                disabled: bool = False) -> Span:
    """Your own span: a name and a dict of JSON-ready data."""
    return _span(CustomSpanData(name, data or {}), span_id, parent, disabled)


def approval_span(tool_name: str, call_id: str, decision: str, parent: Any = None) -> Span:
    """A call's approval step (miniagents' own; upstream has no such span): `decision` is "pending" when the
    run pauses for a person, "approved" or "rejected" when a resumed run applies the decision. Exported as a
    custom span named "approval"."""
    return _span(CustomSpanData("approval", {"tool_name": tool_name, "call_id": call_id, "decision": decision}),
                 None, parent, False)


def record_approval(tool_name: str, call_id: str, decision: str) -> None:
    """An approval step as a finished span at this point of the run (see `approval_span`)."""
    with approval_span(tool_name, call_id, decision):
        pass
