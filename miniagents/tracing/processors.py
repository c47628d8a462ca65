"""Ready processors: `JsonlTraceProcessor` (JSON lines in a file), `ConsoleTraceProcessor` (a live view on
stderr) and `BatchTraceProcessor` (batches for a `TracingExporter` of your own)."""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, Optional

from ..errors import UserError, file_name
from ..models.protocol import shown
from .processor_interface import TracingExporter, TracingProcessor
from .redaction import known_secrets, redacted
from .spans import Span
from .traces import Trace
from .util import open_regular

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named


def trace_file_name(path: Any) -> Any:
    """`path` as a file name; `UserError` for what is no file name (errors.file_name)."""
    return file_name(path, "a trace file's path")


class JsonlTraceProcessor(TracingProcessor):
    """Appends one JSON object per line to `path`: `{"event": "trace_start"|"trace_end"|"span_start"|
    "span_end", ...}` plus the trace's or span's `export()`. Each line is one write to a file opened for
    appending, so several runs can share a file; the file is created readable by its owner only (it may
    hold model inputs and tool arguments). Every line is strict JSON without credentials (redaction.py). Read it
    back with `python -m miniagents.tracing FILE`."""

    def __init__(self, path: Any):
        import json

        self._dumps = json.dumps
        self.path = os.path.abspath(trace_file_name(path))
        self._fd: Optional[int] = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "appending")
        self._lock = threading.Lock()
        self._torn = ends_inside_a_line(self.path, os.fstat(self._fd).st_size)  # the last write stopped in a line

    def _write(self, event: str, item: Any) -> None:
        record = item.export()
        if record is None:
            return
        try:
            shown = redacted(record, known_secrets())
            line = self._dumps({"event": event, **shown}, ensure_ascii=False, allow_nan=False) + "\n"
        except Exception as error:  # what no JSON holds (a number of 5,000 digits, a str() that raises): said, not lost
            line = self._dumps({"event": event, **redacted(unwritable(record, error), known_secrets())}) + "\n"
        data = line.encode("utf-8", "backslashreplace")  # a lone surrogate becomes a valid JSON escape
        with self._lock:
            data = b"\n" + data if self._torn else data  # ends the line a failed write (a full disk) left half written
            while data and self._fd is not None:
                written = os.write(self._fd, data)
                data, self._torn = data[written:], data[written - 1:written] != b"\n"

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


def ends_inside_a_line(path: str, size: int) -> bool:
    """Whether the file's last byte ends no line: a write a full disk (or a killed process) cut short, in an earlier
    run, which the next record must not join. A file this process may not read is taken as ending its lines."""
    if not size:
        return False
    try:
        fd = open_regular(path, os.O_RDONLY, "reading")
    except UserError:
        return False
    try:
        os.lseek(fd, size - 1, os.SEEK_SET)
        return os.read(fd, 1) != b"\n"
    finally:
        os.close(fd)


def unwritable(record: dict, error: Exception) -> dict:
    """A record whose data cannot be written: its ids and times, so the tree keeps the span, and what went wrong."""
    kept = {key: value for key, value in record.items() if key in ("object", "id", "trace_id", "parent_id",
                                                                     "started_at", "ended_at")}
    data = record.get("span_data")
    if isinstance(data, dict):  # what kind of span it is, and its name
        kept["span_data"] = {key: data[key] for key in ("type", "name") if isinstance(data.get(key), str)}
    return {**kept, "error": {"message": f"this record's data could not be written ({type(error).__name__})",
                              "data": None}}


class ConsoleTraceProcessor(TracingProcessor):
    """A compact live view on stderr (or `stream`): one indented line when a run, agent or turn starts and one
    when any other span ends, with its duration and error. Lines are the tree printer's (`tree.describe`), of the
    records the file would hold (redaction.py)."""

    def __init__(self, stream: Any = None):
        self._stream = stream
        self._depth: dict = {}
        self._lock = threading.Lock()

    def _line(self, depth: int, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(f"[miniagents] {'  ' * depth}{text}\n")
        stream.flush()

    def on_trace_start(self, trace: Trace) -> None:
        record = redacted(trace.export(), known_secrets())
        self._line(0, f"trace {record['workflow_name']!r} {shown(record['id'])}")

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span) -> None:
        from .tree import CONTAINERS, describe, kind_of

        record = redacted(span.export(), known_secrets())
        with self._lock:
            depth = self._depth[span.span_id] = self._depth.get(span.parent_id, 0) + 1
        if kind_of(record) in CONTAINERS:
            self._line(depth, describe(record, timing=False))

    def on_span_end(self, span: Span) -> None:
        from .tree import CONTAINERS, describe, kind_of

        record = redacted(span.export(), known_secrets())
        with self._lock:
            depth = self._depth.pop(span.span_id, 0)
        if kind_of(record) not in CONTAINERS or record.get("error"):
            self._line(depth, describe(record))


class BatchTraceProcessor(TracingProcessor):
    """Hands traces (when they start) and spans (when they end) to `exporter` in batches of `max_batch_size`,
    and what is left at `force_flush` and `shutdown`. Unlike upstream's, it keeps no background thread: a batch
    is exported in the thread that filled it, so `schedule_delay` and `export_trigger_ratio` are accepted and
    change nothing. An exporter that raises loses that batch (logged), never the run."""

    def __init__(self, exporter: TracingExporter, max_queue_size: int = 8192, max_batch_size: int = 128,
                 schedule_delay: float = 5.0, export_trigger_ratio: float = 0.7):
        if not callable(getattr(exporter, "export", None)):
            raise UserError(f"BatchTraceProcessor needs a TracingExporter, got {type(exporter).__name__}")
        if any(isinstance(size, bool) or not isinstance(size, int) for size in (max_queue_size, max_batch_size)):
            raise UserError("max_queue_size and max_batch_size must be whole numbers, got "
                            f"{type(max_queue_size).__name__} and {type(max_batch_size).__name__}")
        if max_batch_size < 1:
            raise UserError(f"max_batch_size must be at least 1, got {max_batch_size!r}")
        self._exporter = exporter
        self._max_batch_size = min(max_batch_size, max(1, max_queue_size))
        self._pending: list = []
        self._lock = threading.Lock()
        self._closed = False

    def _add(self, item: Any) -> None:
        with self._lock:
            if self._closed:
                return
            self._pending.append(item)
            batch = self._take() if len(self._pending) >= self._max_batch_size else []
        self._export(batch)

    def _take(self) -> list:
        batch, self._pending = self._pending, []
        return batch

    def _export(self, batch: list) -> None:
        if not batch:
            return
        try:
            self._exporter.export(batch)
        except Exception as error:  # a broken exporter must not fail the traced run
            logger.warning("trace exporter %s failed; %d items dropped (%s)", type(self._exporter).__name__,
                           len(batch), type(error).__name__)

    def on_trace_start(self, trace: Trace) -> None:
        self._add(trace)

    def on_trace_end(self, trace: Trace) -> None:
        return None

    def on_span_start(self, span: Span) -> None:
        return None

    def on_span_end(self, span: Span) -> None:
        self._add(span)

    def force_flush(self) -> None:
        with self._lock:
            batch = self._take()
        self._export(batch)

    def shutdown(self) -> None:
        with self._lock:
            batch, self._closed = self._take(), True
        self._export(batch)
