"""Tracing that stays on the machine: upstream's `trace()` and span API, handed to in-process processors.

A shell: the kernel never imports it; it takes part in a run through the kernel's seams (`plugin.py`,
registered when this package is imported). Upstream's module layout, so processors written for the OpenAI
Agents SDK port: `create` (`trace` and the span factories), `spans`, `traces`, `span_data` (upstream's
`export()` shapes), `scope` (the current trace and span), `processor_interface` (`TracingProcessor`,
`TracingExporter`), `processors` (ready ones: `JsonlTraceProcessor`, JSON lines in a file;
`ConsoleTraceProcessor`, a live view on stderr; `BatchTraceProcessor`, batches for your exporter), `provider`
(the registered processors, `set_tracing_disabled`), `util` (ids). Beside them:
`plugin` (how a run is traced) and `tree` (reading a trace file back: `python -m miniagents.tracing FILE`).

Cheap when unused: no processor is registered by default, and a span is recorded only below a trace that has
a processor; otherwise every factory returns a `NoOpSpan`. Spans find their parent through contextvars, so
nesting follows the code; a thread sees the caller's trace only when the caller copies its context
(`contextvars.copy_context().run`).

It never sends anything anywhere, never records an API key (a `tracing=` config's `api_key` is dropped; its
`include_task_and_turn_spans` is kept, `model_config` loses headers and extra arguments), never lets a failing
processor break a run, and drops sensitive data (model inputs and outputs, tool arguments and outputs) before any
processor sees a span when the run says `trace_include_sensitive_data=False`.
"""
from .create import (agent_span, approval_span, custom_span, function_span, generation_span, get_current_span,
                     get_current_trace, guardrail_span, handoff_span, record_approval, recording, task_span, trace,
                     turn_span)
from . import tree  # noqa: F401  (python -m miniagents.tracing reads it from here)
from .config import TracingConfig
from .plugin import TracingPlugin, run_processors, run_trace
from .processor_interface import TracingProcessor
from .processors import ConsoleTraceProcessor, JsonlTraceProcessor
from .provider import (add_trace_processor, flush_traces, set_trace_processors, set_tracing_disabled,
                       set_tracing_export_api_key)
from .scope import Scope
from .span_data import (AgentSpanData, CustomSpanData, FunctionSpanData, GenerationSpanData, GuardrailSpanData,
                        HandoffSpanData, SpanData, TaskSpanData, TurnSpanData)
from .spans import NoOpSpan, Span, SpanError, SpanImpl
from .traces import NoOpTrace, Trace, TraceImpl
from .util import gen_group_id, gen_span_id, gen_trace_id

__all__ = ["AgentSpanData", "ConsoleTraceProcessor", "CustomSpanData", "FunctionSpanData", "GenerationSpanData",
           "GuardrailSpanData", "HandoffSpanData", "JsonlTraceProcessor", "NoOpSpan", "NoOpTrace", "Scope", "Span",
           "SpanData", "SpanError", "SpanImpl", "TaskSpanData", "Trace", "TraceImpl", "TracingConfig", "TracingPlugin",
           "TracingProcessor", "TurnSpanData", "add_trace_processor", "agent_span", "approval_span", "custom_span",
           "flush_traces", "function_span", "gen_group_id", "gen_span_id", "gen_trace_id", "generation_span",
           "get_current_span", "get_current_trace", "guardrail_span", "handoff_span", "record_approval", "recording",
           "run_processors", "run_trace", "set_trace_processors", "set_tracing_disabled",
           "set_tracing_export_api_key", "task_span", "trace", "turn_span"]
