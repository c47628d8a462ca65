"""Tracing that stays on the machine: upstream's `trace()` and span API, handed to in-process processors.

Holds the API of the OpenAI Agents SDK's `agents.tracing` under the same names (`trace`, `custom_span`,
`agent_span`, `function_span`, `generation_span`, `handoff_span`, `guardrail_span`, `turn_span`,
`task_span`, `get_current_trace`, `get_current_span`, `add_trace_processor`, `set_trace_processors`,
`set_tracing_disabled`, `flush_traces`, `gen_trace_id`), the span data classes with upstream's
`export()` shapes, two ready processors (`JsonlTraceProcessor`: JSON lines in a file;
`ConsoleTraceProcessor`: a live view on stderr), and what the Runner calls: `run_trace(config)` once
per run, `recording()` before building costly span data, `approval_span` for a call that waits for a
person.

Cheap when unused: no processor is registered by default, and a span is recorded only below a trace
that has a processor; otherwise every factory returns a `NoOpSpan` (no clock read, no id, nothing
sent). Spans find their parent through contextvars, so nesting follows the code; a thread sees the
caller's trace only when the caller copies its context (`contextvars.copy_context().run`).

It never sends anything anywhere, never records an API key (`tracing=` configs are accepted and
dropped, `model_config` loses headers and extra arguments), never lets a failing processor break a
run, and drops sensitive data (model inputs and outputs, tool arguments and outputs) before any
processor sees a span when the run says `trace_include_sensitive_data=False`.
"""
from __future__ import annotations

import abc
import contextlib
import contextvars
import logging
import os
import sys
import threading
import time
from typing import Any, Iterator, Mapping, Optional, Sequence, TypedDict

from . import seams
from .errors import AgentsException, UserError
from .seams import Plugin

logger = logging.getLogger("miniagents")

_current_trace: contextvars.ContextVar = contextvars.ContextVar("miniagents_current_trace", default=None)
_current_span: contextvars.ContextVar = contextvars.ContextVar("miniagents_current_span", default=None)
_processors: tuple = ()  # the global processors, replaced (never mutated) under _lock
_lock = threading.Lock()
_disabled: Optional[bool] = None  # None until first read: set_tracing_disabled, else OPENAI_AGENTS_DISABLE_TRACING
_TRUE = ("1", "true", "yes", "on")


class SpanError(TypedDict):
    """What went wrong in a span: a short `message` and optional `data` (upstream's shape)."""

    message: str
    data: Optional[dict]


# --- Ids and time ------------------------------------------------------------------------------------


def gen_trace_id() -> str:
    return f"trace_{os.urandom(16).hex()}"


def gen_span_id() -> str:
    return f"span_{os.urandom(12).hex()}"


def gen_group_id() -> str:
    return f"group_{os.urandom(12).hex()}"


_datetime: list = []  # (datetime, utc), imported on first use: `import miniagents` stays cheap


def _iso(timestamp: Optional[float]) -> Optional[str]:
    """A `time.time()` value as upstream's ISO 8601 UTC text (formatted only when someone reads it)."""
    if timestamp is None:
        return None
    if not _datetime:
        from datetime import datetime, timezone

        _datetime.extend((datetime, timezone.utc))
    return _datetime[0].fromtimestamp(timestamp, _datetime[1]).isoformat()


# --- Span data: what a span is about, and its exported JSON shape -------------------------------------


class SpanData(abc.ABC):
    """What a span is about. `type` names the kind; `export()` is upstream's JSON shape. The fields named
    in `sensitive` are cleared before processors see the span when the run excludes sensitive data."""

    __slots__ = ()
    type = "span"
    sensitive: tuple = ()

    @abc.abstractmethod
    def export(self) -> dict: ...


class AgentSpanData(SpanData):
    __slots__ = ("name", "handoffs", "tools", "output_type", "metadata")
    type = "agent"

    def __init__(self, name: str, handoffs: Optional[list] = None, tools: Optional[list] = None,
                 output_type: Optional[str] = None, metadata: Optional[dict] = None):
        self.name, self.handoffs, self.tools, self.output_type = name, handoffs, tools, output_type
        self.metadata = metadata

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "handoffs": self.handoffs, "tools": self.tools,
                "output_type": self.output_type}


class FunctionSpanData(SpanData):
    __slots__ = ("name", "input", "output", "mcp_data")
    type = "function"
    sensitive = ("input", "output")

    def __init__(self, name: str, input: Optional[str] = None, output: Any = None,
                 mcp_data: Optional[dict] = None):
        self.name, self.input, self.output, self.mcp_data = name, input, output, mcp_data

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "input": self.input,
                "output": str(self.output) if self.output is not None else None, "mcp_data": self.mcp_data}


class GenerationSpanData(SpanData):
    __slots__ = ("input", "output", "model", "model_config", "usage")
    type = "generation"
    sensitive = ("input", "output")

    def __init__(self, input: Optional[Sequence] = None, output: Optional[Sequence] = None,
                 model: Optional[str] = None, model_config: Optional[Mapping] = None,
                 usage: Optional[dict] = None):
        self.input, self.output, self.model, self.model_config, self.usage = input, output, model, model_config, usage

    def export(self) -> dict:
        return {"type": self.type, "input": self.input, "output": self.output, "model": self.model,
                "model_config": self.model_config, "usage": self.usage}


class HandoffSpanData(SpanData):
    __slots__ = ("from_agent", "to_agent")
    type = "handoff"

    def __init__(self, from_agent: Optional[str], to_agent: Optional[str]):
        self.from_agent, self.to_agent = from_agent, to_agent

    def export(self) -> dict:
        return {"type": self.type, "from_agent": self.from_agent, "to_agent": self.to_agent}


class GuardrailSpanData(SpanData):
    __slots__ = ("name", "triggered")
    type = "guardrail"

    def __init__(self, name: str, triggered: bool = False):
        self.name, self.triggered = name, triggered

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "triggered": self.triggered}


class CustomSpanData(SpanData):
    __slots__ = ("name", "data")
    type = "custom"

    def __init__(self, name: str, data: dict):
        self.name, self.data = name, data

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "data": self.data}


class TaskSpanData(SpanData):
    """One Runner invocation; exported as a custom span, as upstream does."""

    __slots__ = ("name", "usage", "metadata")
    type = "task"

    def __init__(self, name: str, usage: Optional[dict] = None, metadata: Optional[dict] = None):
        self.name, self.usage, self.metadata = name, usage, metadata

    def export(self) -> dict:
        data: dict = {"sdk_span_type": self.type, "name": self.name}
        if self.usage is not None:
            data["usage"] = self.usage
        return {"type": "custom", "name": self.type, "data": data}


class TurnSpanData(SpanData):
    """One turn of the loop (one model call and what it led to); exported as a custom span, as upstream does."""

    __slots__ = ("turn", "agent_name", "usage", "metadata")
    type = "turn"

    def __init__(self, turn: int, agent_name: str, usage: Optional[dict] = None, metadata: Optional[dict] = None):
        self.turn, self.agent_name, self.usage, self.metadata = turn, agent_name, usage, metadata

    def export(self) -> dict:
        data: dict = {"sdk_span_type": self.type, "turn": self.turn, "agent_name": self.agent_name}
        if self.usage is not None:
            data["usage"] = self.usage
        return {"type": "custom", "name": self.type, "data": data}


# --- Processors --------------------------------------------------------------------------------------


class TracingProcessor(abc.ABC):
    """Receives every trace and span as it starts and ends, synchronously, in the thread that started or
    ended it (so methods must be quick and thread-safe). `shutdown`/`force_flush` default to doing nothing."""

    @abc.abstractmethod
    def on_trace_start(self, trace: "Trace") -> None: ...

    @abc.abstractmethod
    def on_trace_end(self, trace: "Trace") -> None: ...

    @abc.abstractmethod
    def on_span_start(self, span: "Span") -> None: ...

    @abc.abstractmethod
    def on_span_end(self, span: "Span") -> None: ...

    def shutdown(self) -> None:
        """Release what the processor holds (files); called when the run or the program that owns it ends."""

    def force_flush(self) -> None:
        """Write out anything buffered."""


def _notify(processors: tuple, method: str, item: Any) -> None:
    """Call `method` on each processor; a failure is logged by type only and never reaches the run."""
    for processor in processors:
        try:
            getattr(processor, method)(item)
        except Exception as error:
            logger.warning("trace processor %s failed in %s (%s)", type(processor).__name__, method,
                           type(error).__name__)


def add_trace_processor(span_processor: TracingProcessor) -> None:
    """Register a processor for every trace and span from now on (in this process)."""
    global _processors
    with _lock:
        _processors = _processors + (span_processor,)


def set_trace_processors(processors: list) -> None:
    """Replace the registered processors (an empty list turns recording off)."""
    global _processors
    with _lock:
        _processors = tuple(processors)


def set_tracing_disabled(disabled: bool) -> None:
    """Turn tracing off (or back on) for the whole process; overrides OPENAI_AGENTS_DISABLE_TRACING."""
    global _disabled
    _disabled = bool(disabled)


def set_tracing_export_api_key(api_key: str) -> None:
    """Accepted so ported code runs; nothing is exported, so the key is not kept."""


def flush_traces() -> None:
    """Ask every registered processor to write out what it buffered."""
    for processor in _processors:
        try:
            processor.force_flush()
        except Exception as error:
            logger.warning("trace processor %s failed to flush (%s)", type(processor).__name__, type(error).__name__)


def _tracing_disabled() -> bool:
    global _disabled
    if _disabled is None:
        _disabled = os.environ.get("OPENAI_AGENTS_DISABLE_TRACING", "").strip().lower() in _TRUE
    return _disabled


def _reset(var: contextvars.ContextVar, token: Any) -> None:
    try:
        var.reset(token)
    except ValueError:  # ended from another context (a generator closed elsewhere): nothing to restore here
        pass


def _error_for(exc: BaseException, include_data: bool) -> SpanError:
    """An exception as a span error: the type always; the message only for miniagents' own exceptions, and
    only when the run includes sensitive data (other messages may hold paths, secrets or user data)."""
    name = type(exc).__name__
    if include_data and isinstance(exc, AgentsException):
        return {"message": f"{name}: {exc}", "data": {"type": name}}
    return {"message": name, "data": {"type": name}}


# --- Traces ------------------------------------------------------------------------------------------


class _Scope(abc.ABC):
    """What traces and spans share: `start`/`finish` (or `with`, which also makes it current), `export()`,
    and no API key. `_processors` and `_include_data` are what spans below it inherit."""

    __slots__ = ()
    _processors: tuple = ()
    _include_data = True

    @abc.abstractmethod
    def start(self, mark_as_current: bool = False) -> None: ...

    @abc.abstractmethod
    def finish(self, reset_current: bool = False) -> None: ...

    @abc.abstractmethod
    def export(self) -> Optional[dict]: ...

    def __enter__(self) -> Any:
        self.start(mark_as_current=True)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.finish(reset_current=True)

    @property
    def tracing_api_key(self) -> None:
        """Always None: there is no exporter, so no key is ever held."""
        return None


class Trace(_Scope):
    """A workflow: the root of a tree of spans. Use `with trace("name"):` or `start()`/`finish()`."""

    __slots__ = ()

    def to_json(self, *, include_tracing_api_key: bool = False) -> Optional[dict]:
        return self.export()


class NoOpTrace(Trace):
    """A trace that records nothing (tracing disabled); it still becomes the current trace, so spans under it
    are no-ops too."""

    __slots__ = ("_token",)
    trace_id = name = "no-op"
    group_id = metadata = None

    def __init__(self) -> None:
        self._token = None

    def start(self, mark_as_current: bool = False) -> None:
        if mark_as_current and self._token is None:
            self._token = _current_trace.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if reset_current and self._token is not None:
            _reset(_current_trace, self._token)
            self._token = None

    def export(self) -> None:
        return None


class TraceImpl(Trace):
    """A recorded trace; its processors (those registered when it was made) see it and every span below."""

    __slots__ = ("name", "trace_id", "group_id", "metadata", "_processors", "_include_data", "_token", "_state")

    def __init__(self, name: str, trace_id: Optional[str], group_id: Optional[str], metadata: Optional[dict],
                 processors: tuple, include_data: bool = True):
        self.name, self.trace_id = name, trace_id or gen_trace_id()
        self.group_id, self.metadata = group_id, metadata
        self._processors, self._include_data = processors, include_data
        self._token, self._state = None, "new"

    def start(self, mark_as_current: bool = False) -> None:
        if self._state != "new":
            return
        self._state = "started"
        _notify(self._processors, "on_trace_start", self)
        if mark_as_current:
            self._token = _current_trace.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if self._state != "started":
            return
        self._state = "finished"
        _notify(self._processors, "on_trace_end", self)
        if reset_current and self._token is not None:
            _reset(_current_trace, self._token)
            self._token = None

    def export(self) -> dict:
        return {"object": "trace", "id": self.trace_id, "workflow_name": self.name, "group_id": self.group_id,
                "metadata": self.metadata}


def trace(workflow_name: str, trace_id: Optional[str] = None, group_id: Optional[str] = None,
          metadata: Optional[dict] = None, tracing: Optional[Mapping] = None, disabled: bool = False) -> Trace:
    """A new trace (not started: use `with trace(...)`). It goes to the processors registered now; with none,
    it is silent and costs nothing more. `tracing` (upstream's export config, e.g. an API key) is dropped."""
    if disabled or _tracing_disabled():
        return NoOpTrace()
    if _current_trace.get() is not None:
        logger.warning("Trace already exists. Creating a new trace, but this is probably a mistake.")
    return TraceImpl(workflow_name, trace_id, group_id, metadata, _processors)


def get_current_trace() -> Optional[Trace]:
    return _current_trace.get()


def get_current_span() -> Optional["Span"]:
    return _current_span.get()


def recording() -> bool:
    """True when a span made here would be recorded: the Runner's one cheap check before it builds span data
    that costs something (tool lists, model settings)."""
    parent = _current_span.get() or _current_trace.get()
    return parent is not None and bool(parent._processors) and not _tracing_disabled()


# --- Spans -------------------------------------------------------------------------------------------


class Span(_Scope):
    """One timed operation in a trace. Use `with some_span(...) as span:` (it becomes the current span, so
    spans made inside nest under it) or `start()`/`finish()`; `span.span_data` holds what it is about."""

    __slots__ = ()

    @abc.abstractmethod
    def set_error(self, error: SpanError) -> None: ...

    @property
    def trace_metadata(self) -> None:
        return None


class NoOpSpan(Span):
    """A span that records nothing: what every factory returns when no processor would see the span."""

    __slots__ = ("span_data", "_token")
    trace_id = span_id = "no-op"
    parent_id = started_at = ended_at = error = None

    def __init__(self, span_data: SpanData):
        self.span_data, self._token = span_data, None

    def start(self, mark_as_current: bool = False) -> None:
        if mark_as_current and self._token is None:
            self._token = _current_span.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if reset_current and self._token is not None:
            _reset(_current_span, self._token)
            self._token = None

    def set_error(self, error: SpanError) -> None:
        pass

    def export(self) -> None:
        return None


class _DetachedSpan(NoOpSpan):
    """The no-op span made when there is no trace at all (the default): it does not even become the current
    span, which keeps a span's cost, when nothing is traced, to building its data."""

    __slots__ = ()

    def start(self, mark_as_current: bool = False) -> None:
        pass

    def finish(self, reset_current: bool = False) -> None:
        pass

    def __enter__(self) -> "Span":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        pass


class SpanImpl(Span):
    """A recorded span. It inherits its processors and the sensitive-data rule from its parent."""

    __slots__ = ("trace_id", "span_id", "parent_id", "span_data", "_started", "_ended", "error",
                 "_processors", "_include_data", "_token")

    def __init__(self, span_data: SpanData, parent: Any, span_id: Optional[str] = None):
        self.span_data, self.trace_id = span_data, parent.trace_id
        self.span_id = span_id or gen_span_id()
        self.parent_id = parent.span_id if isinstance(parent, SpanImpl) else None
        self._processors, self._include_data = parent._processors, parent._include_data
        self._started = self._ended = self.error = self._token = None

    @property
    def started_at(self) -> Optional[str]:
        return _iso(self._started)

    @property
    def ended_at(self) -> Optional[str]:
        return _iso(self._ended)

    def _scrub(self) -> None:
        if not self._include_data:
            for name in self.span_data.sensitive:
                setattr(self.span_data, name, None)

    def start(self, mark_as_current: bool = False) -> None:
        if self._started is not None:
            return
        self._started = time.time()
        self._scrub()
        _notify(self._processors, "on_span_start", self)
        if mark_as_current:
            self._token = _current_span.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if self._ended is not None:
            return
        self._ended = time.time()
        self._scrub()
        _notify(self._processors, "on_span_end", self)
        if reset_current and self._token is not None:
            _reset(_current_span, self._token)
            self._token = None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Unlike upstream, an exception leaving the block is recorded (unless an error was set already)."""
        if exc is not None and self.error is None and not isinstance(exc, GeneratorExit):
            self.error = _error_for(exc, self._include_data)
        self.finish(reset_current=True)

    def set_error(self, error: SpanError) -> None:
        self.error = error

    def export(self) -> dict:
        return {"object": "trace.span", "id": self.span_id, "trace_id": self.trace_id, "parent_id": self.parent_id,
                "started_at": self.started_at, "ended_at": self.ended_at, "span_data": self.span_data.export(),
                "error": self.error}


def _span(span_data: SpanData, span_id: Optional[str], parent: Any, disabled: bool) -> Span:
    """The one place that decides whether a span is recorded: below a recording parent (given, or the current
    span, or the current trace) and with tracing not disabled."""
    if parent is None:
        parent = _current_span.get() or _current_trace.get()
        if parent is None:
            return _DetachedSpan(span_data)
    if disabled or not getattr(parent, "_processors", ()) or _tracing_disabled():
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
    raw = model_config.to_json_dict() if callable(getattr(model_config, "to_json_dict", None)) else model_config
    return {k: v for k, v in dict(raw).items() if k not in _UNTRACED_SETTINGS and v is not None}


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


# --- The Runner's entry point ------------------------------------------------------------------------


def run_processors(config: Any, inherited: tuple = ()) -> tuple:
    """The processors one run adds for itself: a JSON-lines file (`config.trace_path`, else the environment's
    MINIAGENTS_TRACE) and the stderr live view (MINIAGENTS_DEBUG=1), unless the enclosing run already has
    the same one (a nested run would write each span twice). A file that cannot be opened is a `UserError`
    when the run starts."""
    own: list = []
    path = getattr(config, "trace_path", None) or os.environ.get("MINIAGENTS_TRACE")
    if path and not any(isinstance(p, JsonlTraceProcessor) and p.path == os.path.abspath(path) for p in inherited):
        own.append(JsonlTraceProcessor(path))
    debug = os.environ.get("MINIAGENTS_DEBUG", "").strip().lower() in _TRUE
    if debug and not any(isinstance(p, ConsoleTraceProcessor) for p in inherited):
        own.append(ConsoleTraceProcessor())
    return tuple(own)


class run_trace:
    """`with tracing.run_trace(config) as task:` around one run: the Runner's one tracing call per run.

    Opens a task span (upstream's "task") under the caller's current span or trace, or under a new trace
    named `config.workflow_name` when there is none, with the run's own processors (`run_processors`) added
    for this run only; yields it, or None when nothing would record (no processor anywhere, or
    `config.tracing_disabled`, or the caller's trace is disabled), in which case every span the run makes
    is a no-op. On exit it records an escaping exception, ends the span (and its own trace), and shuts
    down the run's own processors. The sensitive-data rule is `config.trace_include_sensitive_data`,
    and-ed with the enclosing run's.
    """

    def __init__(self, config: Any):
        self._config = config
        self._trace: Optional[TraceImpl] = None
        self._task: Optional[SpanImpl] = None
        self._own: tuple = ()

    def __enter__(self) -> Optional[Span]:
        config = self._config
        if getattr(config, "tracing_disabled", False) or _tracing_disabled():
            return None
        parent = _current_span.get() or _current_trace.get()
        if isinstance(parent, (NoOpTrace, NoOpSpan)):
            return None
        inherited = _processors if parent is None else getattr(parent, "_processors", ())
        own = run_processors(config, inherited)
        if not inherited and not own:
            return None
        include = bool(getattr(config, "trace_include_sensitive_data", True)) and \
            getattr(parent, "_include_data", True)
        self._own = own
        if parent is None:
            parent = self._trace = TraceImpl(getattr(config, "workflow_name", "Agent workflow"),
                                             getattr(config, "trace_id", None), getattr(config, "group_id", None),
                                             getattr(config, "trace_metadata", None), inherited + own, include)
            self._trace.start(mark_as_current=True)
        task = self._task = SpanImpl(TaskSpanData(getattr(config, "workflow_name", "Agent workflow")), parent)
        task._processors, task._include_data = inherited + own, include
        task.start(mark_as_current=True)
        return task

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._task is None:
            return
        try:
            self._task.__exit__(exc_type, exc, tb)
            if self._trace is not None:
                self._trace.finish(reset_current=True)
        finally:
            for processor in self._own:
                try:
                    processor.shutdown()
                except Exception as error:
                    logger.warning("trace processor %s failed to shut down (%s)", type(processor).__name__,
                                   type(error).__name__)


class _TracedRun(run_trace):
    """`run_trace` for one run of the kernel: the task span also records the run's token usage."""

    def __init__(self, run: Any):
        super().__init__(run.config)
        self._run = run

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._task is not None:
            self._task.span_data.usage = self._run.state.context_wrapper.usage.to_json()
        super().__exit__(exc_type, exc, tb)


class TracingPlugin(Plugin):
    """How a run is traced, through the kernel's seams: the run is a task span (in the caller's trace, or a
    trace of its own), holding a span for each agent's stretch, each turn, model call, tool call, handoff,
    guardrail and approval. Registered when this module is imported."""

    def run(self, run: Any) -> Any:
        return _TracedRun(run)

    def agent_started(self, run: Any, agent: Any) -> None:
        from .agent_output import output_schema

        span = agent_span(agent.name, output_type=output_schema(agent.output_type).name())
        if recording():  # names are only worth computing for a span that is kept
            ctx = run.state.context_wrapper
            span.span_data.tools = [t.name for t in agent.get_enabled_tools(ctx)]
            span.span_data.handoffs = [h.agent_name for h in agent.get_enabled_handoffs(ctx)]
        span.start(mark_as_current=True)
        run.scratch[self] = span

    def agent_ended(self, run: Any, agent: Any, error: Optional[BaseException] = None) -> None:
        span = run.scratch.pop(self, None)
        if span is None:
            return
        if type(error).__name__ == "MaxTurnsExceeded":
            span.set_error({"message": "Max turns exceeded", "data": {"max_turns": run.state.max_turns}})
        span.finish(reset_current=True)

    def turn(self, run: Any, step: Any) -> Any:
        return turn_span(step.number, step.agent.name)

    @contextlib.contextmanager
    def model_call(self, run: Any, step: Any) -> Iterator[None]:
        with generation_span(model=getattr(step.model, "model", None), model_config=step.settings) as span:
            yield
            if recording():
                response = step.response
                span.span_data.input, span.span_data.output = step.input, response.output
                span.span_data.usage = response.usage.to_json()

    @contextlib.contextmanager
    def tool_call(self, run: Any, step: Any) -> Iterator[None]:
        with function_span(step.tool.name, input=step.arguments) as span:
            yield
            if step.error is not None:
                span.set_error({"message": "Error running tool", "data": {"tool_name": step.tool.name,
                                                                          "error": type(step.error).__name__}})
            span.span_data.output = step.text

    def handoff(self, run: Any, step: Any) -> Any:
        return handoff_span(from_agent=step.from_agent.name, to_agent=step.handoff.agent_name)

    @contextlib.contextmanager
    def guardrail(self, run: Any, step: Any) -> Iterator[None]:
        with guardrail_span(step.name) as span:
            yield
            span.span_data.triggered = step.triggered

    def approval(self, run: Any, tool_name: str, call_id: str, decision: str) -> None:
        record_approval(tool_name, call_id, decision)


# --- Ready processors --------------------------------------------------------------------------------


class JsonlTraceProcessor(TracingProcessor):
    """Appends one JSON object per line to `path`: `{"event": "trace_start"|"trace_end"|"span_start"|
    "span_end", ...}` plus the trace's or span's `export()`. Each line is one write to a file opened for
    appending, so several runs can share a file; the file is created readable by its owner only (it may
    hold model inputs and tool arguments). Read it back with `python -m miniagents.trace FILE`."""

    def __init__(self, path: Any):
        import json

        self._dumps = json.dumps
        self.path = os.path.abspath(os.fspath(path))
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd: Optional[int] = os.open(self.path, flags, 0o600)
        except OSError as error:
            raise UserError(f"cannot open the trace file {self.path!r} for appending: {error.strerror}") from None
        self._lock = threading.Lock()

    def _write(self, event: str, item: Any) -> None:
        record = item.export()
        if record is None:
            return
        line = self._dumps({"event": event, **record}, ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8", "backslashreplace")  # a lone surrogate becomes a valid JSON escape
        with self._lock:
            while data and self._fd is not None:
                data = data[os.write(self._fd, data):]

    def on_trace_start(self, trace: Trace) -> None:
        self._write("trace_start", trace)

    def on_trace_end(self, trace: Trace) -> None:
        self._write("trace_end", trace)

    def on_span_start(self, span: Span) -> None:
        self._write("span_start", span)

    def on_span_end(self, span: Span) -> None:
        self._write("span_end", span)

    def shutdown(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class ConsoleTraceProcessor(TracingProcessor):
    """A compact live view on stderr (or `stream`): one indented line when a run, agent or turn starts and one
    when any other span ends, with its duration and error. Lines are the tree printer's (`trace_tree`)."""

    def __init__(self, stream: Any = None):
        self._stream = stream
        self._depth: dict = {}
        self._lock = threading.Lock()

    def _line(self, depth: int, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(f"[miniagents] {'  ' * depth}{text}\n")
        stream.flush()

    def on_trace_start(self, trace: Trace) -> None:
        self._line(0, f"trace {trace.name!r} {trace.trace_id}")

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span) -> None:
        from .trace_tree import CONTAINERS, describe, kind_of

        record = span.export()
        with self._lock:
            depth = self._depth[span.span_id] = self._depth.get(span.parent_id, 0) + 1
        if kind_of(record) in CONTAINERS:
            self._line(depth, describe(record, timing=False))

    def on_span_end(self, span: Span) -> None:
        from .trace_tree import CONTAINERS, describe, kind_of

        record = span.export()
        with self._lock:
            depth = self._depth.pop(span.span_id, 0)
        if kind_of(record) not in CONTAINERS or record.get("error"):
            self._line(depth, describe(record))


seams.register(TracingPlugin())
