"""What receives traces and spans: `TracingProcessor` (upstream's `agents.tracing.processor_interface`)."""
from __future__ import annotations

import abc


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


class TracingExporter(abc.ABC):
    """Sends batches of finished traces and spans somewhere (a `BatchTraceProcessor` calls it); miniagents
    ships none that leaves the process: write your own, and choose what each `item.export()` keeps."""

    @abc.abstractmethod
    def export(self, items: list) -> None:
        """Export `items`, a list of `Trace` and `Span` objects."""
