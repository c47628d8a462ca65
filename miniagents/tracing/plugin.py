"""How a run is traced: the plugin on the kernel's seams, and the processors a run adds for itself."""
from __future__ import annotations

import contextlib
import contextvars
import copy
import logging
import os
from typing import Any, Iterator, Optional

from ..context import Usage
from .. import seams
from ..seams import Plugin
from . import provider
from .create import (agent_span, function_span, generation_span, guardrail_span, handoff_span, record_approval,
                     recording, turn_span)
from .processors import ConsoleTraceProcessor, JsonlTraceProcessor, trace_file_name
from .redaction import release, remember
from .scope import _current_span, _current_trace, reset
from .span_data import TaskSpanData
from .spans import NoOpSpan, Span, SpanImpl
from .traces import NoOpTrace, TraceImpl
from .util import TRUE

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named


def run_processors(config: Any, inherited: tuple = ()) -> tuple:
    """The processors one run adds for itself: a JSON-lines file (`config.trace_path`, else the environment's
    MINIAGENTS_TRACE) and the stderr live view (MINIAGENTS_DEBUG=1), unless the enclosing run already has
    the same one (a nested run would write each span twice). A file that cannot be opened is a `UserError`
    when the run starts."""
    own: list = []
    path = getattr(config, "trace_path", None) or os.environ.get("MINIAGENTS_TRACE")
    if path:
        path = trace_file_name(path)  # what is no file name is a UserError here, before it is compared
    if path and not any(isinstance(p, JsonlTraceProcessor) and p.path == os.path.abspath(path) for p in inherited):
        own.append(JsonlTraceProcessor(path))
    debug = os.environ.get("MINIAGENTS_DEBUG", "").strip().lower() in TRUE
    if debug and not any(isinstance(p, ConsoleTraceProcessor) for p in inherited):
        own.append(ConsoleTraceProcessor())
    return tuple(own)


def task_and_turn_spans(config: Any) -> bool:
    """`RunConfig(tracing={"include_task_and_turn_spans": False})` (upstream's `TracingConfig`) leaves out the
    run's task span and its turn spans; they are in by default."""
    return (getattr(config, "tracing", None) or {}).get("include_task_and_turn_spans", True) is not False


class run_trace:
    """`with tracing.run_trace(config) as task:` around one run: the Runner's one tracing call per run.

    Opens a task span (upstream's "task") under the caller's current span or trace, or under a new trace
    named `config.workflow_name` when there is none, with the run's own processors (`run_processors`) added
    for this run only; yields it, or None when nothing would record (no processor anywhere, or
    `config.tracing_disabled`, or the caller's trace is disabled), in which case every span the run makes
    is a no-op. On exit it records an escaping exception, ends the span (and its own trace), and shuts
    down the run's own processors. The sensitive-data rule is `config.trace_include_sensitive_data`,
    and-ed with the enclosing run's. Without a task span (`task_and_turn_spans`) the run's spans hang from the
    trace or the caller's span, still with the run's own processors and rule (`_joined`).
    """

    def __init__(self, config: Any):
        self._config = config
        self._trace: Optional[TraceImpl] = None
        self._task: Optional[SpanImpl] = None
        self._own: tuple = ()
        self._scope: Optional[tuple] = None  # (the context variable, its token) of a caller's trace or span joined

    def __enter__(self) -> Optional[Span]:
        config = self._config
        if getattr(config, "tracing_disabled", False) or provider.tracing_disabled():
            return None
        parent = _current_span.get() or _current_trace.get()
        if isinstance(parent, (NoOpTrace, NoOpSpan)):
            return None
        inherited = provider.processors() if parent is None else getattr(parent, "_processors", ())
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
        if not task_and_turn_spans(config):  # the agents' spans hang from the trace (or the caller's span)
            if self._trace is None and (own or include != getattr(parent, "_include_data", True)):
                parent = self._joined(parent, inherited + own, include)
            return parent
        task = self._task = SpanImpl(TaskSpanData(getattr(config, "workflow_name", "Agent workflow")), parent)
        task._processors, task._include_data = inherited + own, include
        task.start(mark_as_current=True)
        return task

    def _joined(self, parent: Any, processors: tuple, include: bool) -> Any:
        """The caller's trace or span as this run's spans see it, made current for the run: its ids, with the run's
        own processors and sensitive-data rule (a run with no task span to carry them still keeps them)."""
        joined = copy.copy(parent)
        joined._processors, joined._include_data, joined._token = processors, include, None
        scope = _current_span if isinstance(parent, Span) else _current_trace
        self._scope = (scope, scope.set(joined))
        return joined

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._task is not None:
                self._task.__exit__(exc_type, exc, tb)
            if self._trace is not None:
                self._trace.finish(reset_current=True)
            if self._scope is not None:
                reset(*self._scope)
        finally:  # on every way out, also when nothing was recorded: a file opened for this run is closed
            for processor in self._own:
                try:
                    processor.shutdown()
                except Exception as error:
                    logger.warning("trace processor %s failed to shut down (%s)", type(processor).__name__,
                                   type(error).__name__)


class _TracedRun(run_trace):
    """`run_trace` for one run of the kernel: the task span also records the run's own token usage, counted here
    (`usage`): its model calls, and its agent tools' inner runs as each ends. Not the context's usage: an agent
    tool's inner run shares its caller's, so it would count the caller's calls too, and its change over the inner
    run the calls of agent tools running at once beside it. A resumed run counts from where it resumes. Its models'
    secrets (`secrets`, redaction.remember) are hidden from every trace until it ends; an agent tool's inner run then
    hands them to its caller's, which may still write them (the tool's output), unless that has ended
    (redaction.release)."""

    def __init__(self, run: Any):
        super().__init__(run.config)
        self.usage, self.outer, self._token, self.secrets, self.ended = Usage(), None, None, [], False

    def __enter__(self) -> Optional[Span]:
        task = super().__enter__()
        self.outer, self._token = _traced_run.get(), _traced_run.set(self)
        return task

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            reset(_traced_run, self._token)
            if self.outer is not None:
                self.outer.usage.add(self.usage)  # takes the lock agent tools ending at once, in threads, need
            if self._task is not None:
                self._task.span_data.usage = self.usage.to_json()
            super().__exit__(exc_type, exc, tb)
        finally:  # the last record is written
            release(self)


_traced_run: contextvars.ContextVar = contextvars.ContextVar("miniagents_traced_run", default=None)


class TracingPlugin(Plugin):
    """How a run is traced, through the kernel's seams: the run is a task span (in the caller's trace, or a
    trace of its own), holding a span for each agent's stretch, each turn, model call, tool call, handoff,
    guardrail and approval. Registered when this module is imported."""

    def run(self, run: Any) -> Any:
        return _TracedRun(run)

    def agent_started(self, run: Any, agent: Any) -> None:
        from ..agent_output import output_schema

        span = agent_span(agent.name, output_type=output_schema(agent.output_type).name())
        span.start(mark_as_current=True)  # its tools are named at its first model call (`model_call`)
        run.scratch[self] = span

    def agent_ended(self, run: Any, agent: Any, error: Optional[BaseException] = None) -> None:
        span = run.scratch.pop(self, None)
        if span is None:
            return
        if type(error).__name__ == "MaxTurnsExceeded":
            span.set_error({"message": "Max turns exceeded", "data": {"max_turns": run.state.max_turns}})
        span.finish(reset_current=True)

    def turn(self, run: Any, step: Any) -> Any:
        return turn_span(step.number, step.agent.name) if task_and_turn_spans(run.config) else None

    @contextlib.contextmanager
    def model_call(self, run: Any, step: Any) -> Iterator[None]:
        agent = run.scratch.get(self)
        if agent is not None and agent.span_data.tools is None:  # what its turn offers: is_enabled asked only there
            offered = run.turn.setup
            agent.span_data.tools = list(offered.tools)
            agent.span_data.handoffs = [handoff.agent_name for handoff in offered.handoffs.values()]
        with generation_span(model=getattr(step.model, "model", None), model_config=step.settings) as span:
            yield
            if recording():
                response = step.response
                span.span_data.input, span.span_data.output = step.input, response.output
                span.span_data.usage = response.usage.to_json()
                traced = _traced_run.get()
                if traced is not None:
                    traced.usage.add(response.usage, 1)
                    remember(step.model, traced.secrets)  # its API key is hidden from what the processors write

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


seams.register(TracingPlugin())
