"""Spans: one timed operation in a trace (upstream's `agents.tracing.spans`)."""
from __future__ import annotations

import abc
import time
from typing import Any, Generic, Optional, TypedDict, TypeVar

from ..errors import AgentsException
from . import provider
from .scope import Scoped, _current_span, reset
from .span_data import SpanData
from .util import gen_span_id, time_iso


class SpanError(TypedDict):
    """What went wrong in a span: a short `message` and optional `data` (upstream's shape)."""

    message: str
    data: Optional[dict]


def _error_for(exc: BaseException, include_data: bool) -> SpanError:
    """An exception as a span error: the type always; the message only for miniagents' own exceptions, and
    only when the run includes sensitive data (other messages may hold paths, secrets or user data)."""
    name = type(exc).__name__
    if include_data and isinstance(exc, AgentsException):
        return {"message": f"{name}: {exc}", "data": {"type": name}}
    return {"message": name, "data": {"type": name}}


TSpanData = TypeVar("TSpanData", bound=SpanData)  # what a span is about: `Span[AgentSpanData]`


class Span(Scoped, Generic[TSpanData]):
    """One timed operation in a trace. Use `with some_span(...) as span:` (it becomes the current span, so
    spans made inside nest under it) or `start()`/`finish()`; `span.span_data` holds what it is about."""

    __slots__ = ()

    @abc.abstractmethod
    def set_error(self, error: SpanError) -> None: ...

    @property
    def trace_metadata(self) -> None:
        return None


class NoOpSpan(Span[TSpanData]):
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
            reset(_current_span, self._token)
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


class SpanImpl(Span[TSpanData]):
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
        return time_iso(self._started)

    @property
    def ended_at(self) -> Optional[str]:
        return time_iso(self._ended)

    def _scrub(self) -> None:
        if not self._include_data:
            for name in self.span_data.sensitive:
                setattr(self.span_data, name, None)

    def start(self, mark_as_current: bool = False) -> None:
        if self._started is not None:
            return
        self._started = time.time()
        self._scrub()
        provider.notify(self._processors, "on_span_start", self)
        if mark_as_current:
            self._token = _current_span.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if self._ended is not None:
            return
        self._ended = time.time()
        self._scrub()
        provider.notify(self._processors, "on_span_end", self)
        if reset_current and self._token is not None:
            reset(_current_span, self._token)
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
