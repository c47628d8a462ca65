"""The process-wide tracing settings: the registered processors and whether tracing is disabled (upstream's
trace provider, which here never sends anything anywhere)."""
from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any, Optional

from .processor_interface import TracingProcessor
from .util import TRUE

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named
_processors: tuple = ()  # the global processors, replaced (never mutated) under _lock
_lock = threading.Lock()
_disabled: Optional[bool] = None  # None until first read: set_tracing_disabled, else OPENAI_AGENTS_DISABLE_TRACING


def notify(processors: tuple, method: str, item: Any) -> None:
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
    _call_each("force_flush", "flush")


def _shut_down() -> None:
    """At interpreter exit, as upstream's provider does: each registered processor is shut down, so what a batch
    still holds is exported, not lost with the process."""
    _call_each("shutdown", "shut down")


def _call_each(method: str, doing: str) -> None:
    for processor in _processors:
        try:
            getattr(processor, method)()
        except Exception as error:
            logger.warning("trace processor %s failed to %s (%s)", type(processor).__name__, doing,
                           type(error).__name__)


atexit.register(_shut_down)


def tracing_disabled() -> bool:
    global _disabled
    if _disabled is None:
        _disabled = os.environ.get("OPENAI_AGENTS_DISABLE_TRACING", "").strip().lower() in TRUE
    return _disabled


def processors() -> tuple:
    """The processors registered now (a trace made now goes to these)."""
    return _processors
