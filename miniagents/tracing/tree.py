"""Reading a trace file back: `python -m miniagents.tracing FILE.jsonl` prints each trace in it as a tree.

Holds `read` (the JSON lines `tracing.JsonlTraceProcessor` writes: a span's end record replaces its start
record; a span that never ended is shown as unfinished; lines that are not records, or not of the shapes the
tree reads, or longer than `MAX_LINE`, are reported and skipped, not fatal), `render` (the trees as text),
`describe` (one span as one line, shared with the live stderr view; a control character the file holds is shown
escaped) and `main`, the command line (which refuses what is not a regular file, or is larger than `MAX_BYTES`).
It only reads: it never changes the file and never sends anything.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable, Iterator, Optional

from ..errors import UserError
from ..models.protocol import shown
from .util import open_regular

CONTAINERS = ("task", "agent", "turn")  # spans that hold others; the live view prints them when they start
SHELL = __name__.rpartition(".")[0]  # miniagents.tracing, or the name a vendored copy gives it
WIDTH = 80  # characters of arguments, outputs and data shown on a line unless full=True
MAX_LINE = 16 * 2 ** 20  # characters of one line of a file that are read; a longer line is skipped
MAX_BYTES = 256 * 2 ** 20  # a larger file is refused before it is read (all of it is held to sort the spans)
# Levels of the tree drawn: a deeper span is drawn at this one's indent (a file's chain of a million spans, each
# inside the last, drew each line as many levels deep: terabytes of indent from a file of 256 MiB).
MAX_INDENT = 64
SPAN_TEXTS = ("id", "parent_id", "started_at", "ended_at")  # what the tree compares and sorts: strings or null
_BRANCHES = {True: ("├─ ", "└─ ", "│  ", "   "), False: ("|- ", "`- ", "|  ", "   ")}


def kind_of(record: dict) -> str:
    """The span's kind: its span_data type, with upstream's custom task/turn spans and miniagents' approval
    span recognised."""
    data = record.get("span_data") or {}
    kind = data.get("type") or "?"
    if kind == "custom":
        inner = data.get("data") or {}
        if inner.get("sdk_span_type") in ("task", "turn"):
            return inner["sdk_span_type"]
        if data.get("name") == "approval":
            return "approval"
    return kind


def _short(value: Any, full: bool) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except RecursionError:  # a value some Pythons decode deeper than they encode
        text = "(nested too deep to show)"
    text = " ".join(text.split())
    return text if full or len(text) <= WIDTH else text[:WIDTH - 3] + "..."


def _tokens(usage: Any, calls: bool = False) -> str:
    """'120 in / 35 out tokens', led by the number of model calls for a run or a turn."""
    if not isinstance(usage, dict):
        return ""
    text = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens"
    requests = usage.get("requests")
    return f"{requests} model call{'s' * (requests != 1)}, {text}" if calls and isinstance(requests, int) else text


def _seconds(record: dict) -> Optional[float]:
    from datetime import datetime

    try:
        start = datetime.fromisoformat(record["started_at"])
        return (datetime.fromisoformat(record["ended_at"]) - start).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _duration(record: dict) -> str:
    if not record.get("ended_at"):
        return "unfinished"
    seconds = _seconds(record)
    if seconds is None:
        return "?"
    if seconds < 0.001:
        return "<1 ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _model_output(output: Any, full: bool) -> str:
    """A model's output items in a few words: the calls it made and the start of what it said."""
    parts = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            parts.append(f"call {item.get('name')}")
        elif item.get("type") == "message" or item.get("role") == "assistant":
            content = item.get("content")
            pieces = content if isinstance(content, list) else []
            text = content if isinstance(content, str) else "".join(
                str(c.get("text") or c.get("refusal") or "") for c in pieces if isinstance(c, dict))
            parts.append(json.dumps(_short(text, full), ensure_ascii=False))
        elif item.get("type"):
            parts.append(str(item["type"]))
    return ", ".join(parts)


def describe(record: dict, full: bool = False, timing: bool = True) -> str:
    """One line for one span record: `what [duration] details  !! error`, ASCII apart from the data itself."""
    data, kind = record.get("span_data") or {}, kind_of(record)
    inner, details = data.get("data") or {}, ""
    if kind == "task":
        head, details = f"run {inner.get('name')!r}", _tokens(inner.get("usage"), calls=True)
    elif kind == "turn":
        head, details = f"turn {inner.get('turn')} ({inner.get('agent_name')})", _tokens(inner.get("usage"))
    elif kind == "agent":
        head = f"agent {data.get('name')}"
        parts = [f"{key}: {', '.join(map(str, data[key]))}" for key in ("tools", "handoffs")
                 if data.get(key) and isinstance(data[key], list)]
        if data.get("output_type") not in (None, "str"):
            parts.append(f"output: {data['output_type']}")
        details = "; ".join(parts)
    elif kind == "generation":
        head, details = f"model {data.get('model') or '?'}", _tokens(data.get("usage"))
        if data.get("output") is not None:
            details += f" -> {_model_output(data['output'], full)}"
    elif kind == "function":
        arguments = f"({_short(data['input'], full)})" if data.get("input") is not None else ""
        head = f"tool {data.get('name')}{arguments}"
        if data.get("output") is not None:
            details = f"-> {_short(data['output'], full)}"
    elif kind == "handoff":
        head = f"handoff {data.get('from_agent')} -> {data.get('to_agent') or '?'}"
    elif kind == "guardrail":
        head, details = f"guardrail {data.get('name')}", "TRIPPED" if data.get("triggered") else "passed"
    elif kind == "approval":
        head, details = f"approval {inner.get('tool_name')} (call {inner.get('call_id')})", f"{inner.get('decision')}"
    elif kind == "custom":
        head, details = f"{data.get('name')}", _short(inner, full) if inner else ""
    else:
        head = kind
    line = head + (f" [{_duration(record)}]" if timing else "") + (f" {details.strip()}" if details.strip() else "")
    error = record.get("error")
    if isinstance(error, dict):
        line += f"  !! {error.get('message')}" + (f" {_short(error['data'], full)}" if error.get("data") else "")
    return shown(line)  # what the file says: no newline, escape or bidirectional override of its own


def well_formed(record: dict) -> bool:
    """Whether a span record has the shapes the tree reads: its ids and times strings or null, `span_data` an
    object (or null) whose `type` is a string or null and whose `data` is an object or null."""
    data = {} if record.get("span_data") is None else record["span_data"]
    return all(isinstance(record.get(name), (str, type(None))) for name in SPAN_TEXTS) and isinstance(data, dict) \
        and isinstance(data.get("type"), (str, type(None))) and isinstance(data.get("data"), (dict, type(None)))


def read(lines: Iterable[str]) -> tuple:
    """JSON lines -> ([(trace_id, {"trace": record or None, "spans": {span_id: record}})], problems)."""
    traces: dict = {}
    problems = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line) - line.endswith("\n") > MAX_LINE:  # its newline is no character of the line
            problems.append(f"line {number} is longer than {MAX_LINE} characters; skipped")
            continue
        try:
            record = json.loads(line)
        except ValueError:
            problems.append(f"line {number} is not JSON; skipped")
            continue
        except RecursionError:
            problems.append(f"line {number} nests deeper than Python reads; skipped")
            continue
        kind = record.get("object") if isinstance(record, dict) else None
        trace_id = record.get("id" if kind == "trace" else "trace_id") if kind else None
        if kind not in ("trace", "trace.span") or not isinstance(trace_id, str):
            problems.append(f"line {number} is not a trace or span record; skipped")
            continue
        if kind == "trace.span" and not well_formed(record):
            problems.append(f"line {number} is a span record of a shape the tree cannot read; skipped")
            continue
        entry = traces.setdefault(trace_id, {"trace": None, "spans": {}})
        if kind == "trace":
            entry["trace"] = record
        else:
            spans, before = entry["spans"], entry["spans"].get(record.get("id"))
            if before is None or record.get("event") != "span_start":  # a span's start never hides its end
                spans[record.get("id")] = record
    return list(traces.items()), problems


def capped_lines(file: Any) -> Iterator[str]:
    """The lines of a text file, none held longer than `MAX_LINE` + 1 characters: the rest of a longer one is read
    in pieces and dropped (`read` skips what is left of it)."""
    while True:
        line = file.readline(MAX_LINE + 1)
        if not line:
            return
        piece = line
        while len(piece) > MAX_LINE and not piece.endswith("\n"):
            piece = file.readline(MAX_LINE + 1)
        yield line


def _header(trace_id: str, entry: dict) -> str:
    record = entry["trace"] or {}
    line = f"trace {record['workflow_name']!r} {trace_id}" if record.get("workflow_name") else f"trace {trace_id}"
    if record.get("group_id"):
        line += f" (group {record['group_id']})"
    starts = [s["started_at"] for s in entry["spans"].values() if s.get("started_at")]
    ends = [s["ended_at"] for s in entry["spans"].values() if s.get("ended_at")]
    if starts and ends:
        line += f" [{_duration({'started_at': min(starts), 'ended_at': max(ends)})}]"
    return shown(line)


def render(traces: list, full: bool = False, unicode: bool = True) -> str:
    """The trees of `read(...)`'s traces: children in start order; a span whose parent is not in the file is
    shown at the top of its trace."""
    tee, last, bar, blank = _BRANCHES[unicode]
    out = []
    for trace_id, entry in traces:
        out.append(_header(trace_id, entry))
        spans = entry["spans"]
        children: dict = {}
        for record in spans.values():
            parent = record.get("parent_id")
            children.setdefault(parent if parent in spans and parent != record.get("id") else None, []).append(record)
        for group in children.values():
            group.sort(key=lambda r: r.get("started_at") or "")
        shown: set = set()
        roots = children.get(None, [])
        reached = {r.get("id") for r in roots}  # once: rebuilt for each span, a file of many roots took hours
        orphans = [r for r in reversed(list(spans.values())) if r.get("id") not in reached]  # popped from the end
        stack = [(r, "", i == len(roots) - 1) for i, r in reversed(list(enumerate(roots)))]
        while stack or orphans:
            if not stack:  # a parent chain that loops: show what was not reached, once
                record = orphans.pop()
                if record.get("id") not in shown:
                    stack.append((record, "", True))
                continue
            record, prefix, is_last = stack.pop()
            if record.get("id") in shown:
                continue
            shown.add(record.get("id"))
            out.append(prefix + (last if is_last else tee) + describe(record, full))
            below = children.get(record.get("id"), [])
            inner = prefix + (blank if is_last else bar) if len(prefix) < len(bar) * MAX_INDENT else prefix
            stack.extend((r, inner, i == len(below) - 1) for i, r in reversed(list(enumerate(below))))
    return "\n".join(out)


def _unicode_ok(stream: Any) -> bool:
    try:
        "".join(_BRANCHES[True]).encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def main(argv: Optional[list] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {SHELL}",
                                     description="Print a miniagents trace file (JSON lines) as a tree.")
    parser.add_argument("file", help="a file written with RunConfig(trace_path=...) or MINIAGENTS_TRACE")
    parser.add_argument("--full", action="store_true", help="show arguments, outputs and data in full")
    args = parser.parse_args(argv)
    try:
        with open(open_regular(args.file, os.O_RDONLY, "reading"), encoding="utf-8", errors="replace") as lines:
            if os.fstat(lines.fileno()).st_size > MAX_BYTES:
                raise UserError(f"the trace file {args.file!r} is larger than {MAX_BYTES // 2 ** 20} MiB; "
                                "it is not read")
            traces, problems = read(capped_lines(lines))
    except UserError as error:
        print(f"{SHELL}: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"{SHELL}: cannot read {args.file!r}: {error.strerror}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{SHELL}: {args.file}: {problem}", file=sys.stderr)
    if not traces:
        print(f"{SHELL}: no traces in {args.file}", file=sys.stderr)
        return 1
    if hasattr(sys.stdout, "reconfigure"):  # text the terminal's encoding lacks is shown escaped, not a traceback
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        print(render(traces, full=args.full, unicode=_unicode_ok(sys.stdout)), flush=True)
    except BrokenPipeError:  # the reader left (`| head`): no traceback, and none at exit when Python flushes again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
