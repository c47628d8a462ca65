"""Traces: the root of a tree of spans (upstream's `agents.tracing.traces`)."""
from __future__ import annotations

import logging
from typing import Optional

from . import provider
from .scope import Scoped, _current_trace, reset
from .util import gen_trace_id

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named


class Trace(Scoped):
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
            reset(_current_trace, self._token)
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
        provider.notify(self._processors, "on_trace_start", self)
        if mark_as_current:
            self._token = _current_trace.set(self)

    def finish(self, reset_current: bool = False) -> None:
        if self._state != "started":
            return
        self._state = "finished"
        provider.notify(self._processors, "on_trace_end", self)
        if reset_current and self._token is not None:
            reset(_current_trace, self._token)
            self._token = None

    def export(self) -> dict:
        return {"object": "trace", "id": self.trace_id, "workflow_name": self.name, "group_id": self.group_id,
                "metadata": self.metadata}
