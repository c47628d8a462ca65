"""Which trace and span are current, through context variables, so nesting follows the code (upstream's
`agents.tracing.scope`); and what traces and spans share as scopes."""
from __future__ import annotations

import abc
import contextvars
from typing import Any, Optional

_current_trace: contextvars.ContextVar = contextvars.ContextVar("miniagents_current_trace", default=None)
_current_span: contextvars.ContextVar = contextvars.ContextVar("miniagents_current_span", default=None)


class Scope:
    """Upstream's accessors of the current trace and span."""

    @classmethod
    def get_current_span(cls) -> Any:
        return _current_span.get()

    @classmethod
    def set_current_span(cls, span: Any) -> Any:
        return _current_span.set(span)

    @classmethod
    def reset_current_span(cls, token: Any) -> None:
        reset(_current_span, token)

    @classmethod
    def get_current_trace(cls) -> Any:
        return _current_trace.get()

    @classmethod
    def set_current_trace(cls, trace: Any) -> Any:
        return _current_trace.set(trace)

    @classmethod
    def reset_current_trace(cls, token: Any) -> None:
        reset(_current_trace, token)


def reset(var: contextvars.ContextVar, token: Any) -> None:
    try:
        var.reset(token)
    except ValueError:  # ended from another context (a generator closed elsewhere): nothing to restore here
        pass


class Scoped(abc.ABC):
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
