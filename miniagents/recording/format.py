"""The recording file: plain, versioned JSON lines that read the same on every Python from 3.9 to 3.13.

    {"version": 1, "kind": "miniagents recording"}
    {"n": 1, "model": "llama3.2", "stream": false, "request": {...}, "response": {...}}
    {"n": 2, ...}

The first line names the format's version (`VERSIONS`). Each further line is one model call: `n` counts them
from 1, `model` is the wrapped model's name (for the reader; a replay does not compare it), `stream` says
whether it was streamed. `request` is what the model received, as plain data: `instructions`, `input` (the
items), `tools` and `handoffs` (each one's `spec()`, the wire form the adapters send), `output_schema` (its
`spec()`, or null for plain text), `settings` (`ModelSettings.to_json_dict()`: the fields that were set),
`previous_response_id`, `conversation_id` and `prompt`. `response` is `{"output", "usage", "response_id",
"request_id"}` for a plain call and `{"events": [...]}` for a streamed one (every event, in order; the last is
`response.completed`). Keys keep the order they were written in; text is UTF-8, not escaped.
"""
from __future__ import annotations

import dataclasses
import enum
import errno
import json
import math
import os
import stat
from typing import Any

from ..context import Usage
from ..errors import ModelBehaviorError, file_name
from ..items import ModelResponse, preview
from ..models import shapes
from .errors import RecordingError

VERSION = 1
VERSIONS = {1: "a header line, then one line per model call: its request and its response (or stream events)"}
KIND = "miniagents recording"
MAX_BYTES = 256 * 2 ** 20  # a recording that weighs more (`weight`) is refused before it is read
CONTAINER_BYTES = 16  # what each object and array weighs besides its text (see `weight`)
# One line larger than this is refused before it is decoded (decoded JSON can take 50 times its text's memory). A
# real line stays far below it: it holds a request and its answer, each bounded by a model's context window (2M
# tokens are about 8 MB of text; a stream repeats its text in a few events), and 64 MiB is twice the largest
# answer the HTTP adapters take by default (max_response_bytes).
MAX_LINE_BYTES = 64 * 2 ** 20
MAX_DEPTH = 100  # levels of objects and arrays one line may nest: a replay copies and compares them recursively
NOT_REGULAR = "it is not a regular file (a folder, a FIFO, a device or a socket)"
REQUEST_FIELDS = ("instructions", "input", "tools", "handoffs", "output_schema", "settings", "previous_response_id",
                  "conversation_id", "prompt")


def path_name(path: Any) -> Any:
    """`path` as the file system takes it; `RecordingError` for what is no file name (errors.file_name)."""
    return file_name(path, "a recording's path", RecordingError)


def open_regular(name: Any, flags: int, doing: str) -> int:
    """The file `name` opened with `flags`, if it is a regular file: opened without waiting (a FIFO's open waits for
    its other end, for ever), checked, then made blocking; `RecordingError` saying what it was opened to do
    (`"read"`, `"write"`) otherwise."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    flags |= nonblocking | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(name, flags, 0o600)
    except OSError as error:  # ENXIO: a FIFO no one reads
        why = NOT_REGULAR if error.errno == errno.ENXIO else error.strerror or error
        raise RecordingError(f"cannot {doing} the recording {name!r}: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RecordingError(f"cannot {doing} the recording {name!r}: {NOT_REGULAR}")
    if nonblocking:
        os.set_blocking(fd, True)
    return fd


def header() -> dict:
    return {"version": VERSION, "kind": KIND}


def _as_json(value: Any) -> Any:
    """What `json` is given for a value it cannot write itself: the object's own plain form, else its type's name
    (never its repr, which can hold an address and would differ from run to run)."""
    for method in ("to_json_dict", "model_dump", "to_json"):
        convert = getattr(value, method, None)
        if callable(convert):
            return convert()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return f"<{type(value).__name__}>"


def json_text(value: Any, ascii_only: bool = False) -> str:
    try:
        return json.dumps(value, ensure_ascii=ascii_only, allow_nan=False, default=_as_json)
    except (ValueError, TypeError, RecursionError) as error:
        raise RecordingError(f"this cannot be written as JSON: {error}") from None


def plain(value: Any) -> Any:
    """`value` as the file holds it: JSON data only (tuples are lists, objects their plain form)."""
    return json.loads(json_text(value))


def spec(value: Any) -> Any:
    """A tool's, handoff's or output schema's wire form: its `spec()` (what the adapters send), or the value."""
    make = getattr(value, "spec", None)
    return make() if callable(make) else value


def request_record(instructions: Any, input: Any, settings: Any, tools: Any, output_schema: Any, handoffs: Any,
                   previous_response_id: Any, conversation_id: Any, prompt: Any) -> dict:
    """The `request` of a line: what the model was given, as plain data."""
    return plain({
        "instructions": instructions,
        "input": list(input),
        "tools": [spec(tool) for tool in tools or ()],
        "handoffs": [spec(handoff) for handoff in handoffs or ()],
        "output_schema": None if output_schema is None else spec(output_schema),
        "settings": settings.to_json_dict() if hasattr(settings, "to_json_dict") else settings,
        "previous_response_id": previous_response_id,
        "conversation_id": conversation_id,
        "prompt": prompt,
    })


def response_record(response: ModelResponse) -> dict:
    return plain({"output": response.output, "usage": response.usage.to_json(), "response_id": response.response_id,
                  "request_id": response.request_id})


def model_response(record: dict) -> ModelResponse:
    """A line's response as the run receives it; a streamed one as the run builds it from `response.completed`."""
    if "events" in record:
        final = completed(record["events"])
        return ModelResponse(output=list(final.get("output") or []), usage=Usage.from_json(final.get("usage")),
                             response_id=final.get("id"))
    return ModelResponse(output=record["output"], usage=Usage.from_json(record.get("usage")),
                         response_id=record.get("response_id"), request_id=record.get("request_id"))


def completed(events: list) -> dict:
    """The response of a stream's last response.completed event (the one a run keeps)."""
    return [e["response"] for e in events if e.get("type") == "response.completed"][-1]


def encode(line: dict) -> bytes:
    """One line of the file. Text stays readable (not \\u-escaped) unless it holds a lone surrogate, which UTF-8
    cannot carry: then that line is written escaped, and reads back the same."""
    text = json_text(line)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json_text(line, ascii_only=True) + "\n").encode("ascii")


def weight(data: bytes) -> int:
    """What a recording's bytes weigh against `MAX_BYTES`: their number, and `CONTAINER_BYTES` more for each `{` and
    `[` (also one inside a string: counted without decoding). Decoded, an array or object takes 20 to 40 times the
    memory of its text (`[]` 64 bytes, `{"a":0}` 190), a string at most 12 (`"ab"` 59 bytes); so weighed, nothing
    takes more than 12, and loading a recording holds at most about 14 times `MAX_BYTES` (its bytes too)."""
    return len(data) + CONTAINER_BYTES * (data.count(b"{") + data.count(b"["))


def encode_call(line: dict) -> bytes:
    """A call's line as written, once it is one `load` reads back (its size, `check_call`; its nesting the recorder
    checks first, before redaction walks it); a `ValueError` saying why not: a recording is never written that its
    replay would refuse."""
    data = encode(line)
    if len(data) > MAX_LINE_BYTES:
        raise ValueError(f"it is larger than {MAX_LINE_BYTES // 2 ** 20} MiB")
    check_call(line, line["n"])
    return data


# --- Reading a recording back, checked whole before a replay serves any of it ----------------------------------


def load(path: Any) -> list:
    """The calls a recording holds (each line's dict, `n` in order); `RecordingError` naming the file and the line
    for anything that is not a recording this miniagents reads."""
    name = path_name(path)
    fd = open_regular(name, os.O_RDONLY, "read")
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as error:
        raise RecordingError(f"cannot read the recording {name!r}: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise RecordingError(f"the recording {name!r} is larger than {MAX_BYTES // 2 ** 20} MiB; it is not read")
    if weight(data) > MAX_BYTES:  # checked before any line is decoded
        raise RecordingError(f"the recording {name!r} holds too many objects and arrays to read: counting each as "
                             f"{CONTAINER_BYTES} bytes, it weighs more than {MAX_BYTES // 2 ** 20} MiB; it is not read")
    lines = data.split(b"\n")
    if not lines[0].strip():
        raise RecordingError(f"{name!r} is empty: a recording starts with a line that names its version")
    last = len(lines) if lines[-1].strip() else 0  # a last line without its newline: cut off, if it does not read
    first = _line(name, 1, lines[0], last == 1)
    if first.get("kind") != KIND or "version" not in first:
        raise RecordingError(f"{name!r} line 1 does not start a miniagents recording (expected "
                             f'{{"version": {VERSION}, "kind": "{KIND}"}})')
    if type(first["version"]) is not int or first["version"] not in VERSIONS:
        raise RecordingError(f"{name!r} is a recording of version {preview(repr(first['version']))}; this miniagents "
                             f"reads version(s) {sorted(VERSIONS)}")
    calls = []
    for number, raw in enumerate(lines[1:], 2):
        if raw.strip():
            calls.append(_call(name, number, _line(name, number, raw, number == last), len(calls) + 1))
    return calls


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a finite number")


def _finite(number: str) -> float:
    """A JSON number as a float; one past the largest float (1e400, which float() reads as inf) is refused, as the
    constants NaN and Infinity are: the run would write it nowhere (a session, a RunState, a trace)."""
    value = float(number)
    return _not_a_number(preview(number)) if math.isinf(value) else value  # a line may hold a number of 64 MiB


def _line(name: str, number: int, raw: bytes, unended: bool) -> dict:
    """Line `number`, decoded; `unended`: the file's last, without the newline every written line ends with."""
    if len(raw) > MAX_LINE_BYTES:
        raise RecordingError(f"{name!r} line {number} is larger than {MAX_LINE_BYTES // 2 ** 20} MiB; it is not read")
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_not_a_number, parse_float=_finite)
    except (UnicodeDecodeError, ValueError) as error:
        if unended:  # a write that stopped part-way (a full disk, a killed process)
            raise RecordingError(f"{name!r} is truncated at line {number}: the line ends part-way, without its "
                                 "newline (the recording stopped while writing it)") from None
        raise RecordingError(f"{name!r} line {number} is not JSON: {error}") from None
    except RecursionError:
        raise RecordingError(f"{name!r} line {number} is nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(value, dict):
        raise RecordingError(f"{name!r} line {number} is not a JSON object")
    if depth(value) > MAX_DEPTH:
        raise RecordingError(f"{name!r} line {number} is nested more than {MAX_DEPTH} levels deep")
    return value


def depth(value: Any) -> int:
    """How many levels of objects and arrays `value` nests (counted without recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            todo.extend((inner, level + 1) for inner in value if isinstance(inner, (dict, list)))
    return deepest


USAGE_COUNTS = ("requests", "tool_calls")  # what Usage.from_json reads besides the Responses-shaped counts


def _response(response: dict, where: str) -> None:
    """A response as the run reads it (a plain call's, or a stream's response.completed): its output items, usage
    counts and id, each checked for what the run reads from it (the adapters' own checks, models/shapes.py)."""
    try:
        for i, item in enumerate(shapes.output_items(response.get("output"), f"{where}.output")):
            for j, part in enumerate(item.get("content") or [] if item["type"] == "message" else []):
                if part.get("type") == "output_text":  # a streamed replay of a plain call makes events of them
                    shapes.arr(part.get("annotations"), f"{where}.output[{i}].content[{j}].annotations")
        usage = response.get("usage")
        shapes.usage(usage, f"{where}.usage")
        for field in USAGE_COUNTS:
            shapes.count((usage or {}).get(field), f"{where}.usage.{field}")
    except ModelBehaviorError as error:
        raise ValueError(str(error).replace("The model's answer is malformed: ", "")) from None


def _call(name: str, number: int, line: dict, expected: int) -> dict:
    try:
        check_call(line, expected)
    except ValueError as error:
        raise RecordingError(f"{name!r} line {number}: {error}") from None
    return line


def check_call(line: dict, expected: int) -> None:
    """A `ValueError` saying what a replay could not read in a call's line (numbered `expected`): load's rules,
    which the recorder keeps before it writes a line."""
    if line.get("n") != expected or type(line.get("n")) is not int:
        raise ValueError(f"expected call number {expected} (\"n\"), found {preview(repr(line.get('n')))}")
    request, response = line.get("request"), line.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise ValueError('a call needs a "request" and a "response" object')
    missing = [field for field in REQUEST_FIELDS if field not in request]
    if missing:
        raise ValueError(f"the request lacks {', '.join(missing)}")
    if not isinstance(request["input"], list) or not isinstance(request["tools"], list) \
            or not isinstance(request["handoffs"], list):
        raise ValueError("the request's input, tools and handoffs must be lists")
    if "events" in response:
        events = response["events"]
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise ValueError('"events" must be a list of objects')
        final = [(i, e) for i, e in enumerate(events) if e.get("type") == "response.completed"]
        if not final or not all(isinstance(e.get("response"), dict) for _, e in final):
            raise ValueError("a streamed response needs a response.completed event with its response")
        for index, event in final:
            _response(event["response"], f"events[{index}].response")
            if not isinstance(event["response"].get("id"), (str, type(None))):
                raise ValueError(f'the response\'s "events[{index}].response.id" must be a string or null')
    elif not isinstance(response.get("output"), list) or not isinstance(response.get("usage"), (dict, type(None))):
        raise ValueError('a response needs "output" (a list) and "usage", or "events"')
    else:
        _response(response, "response")
        for field in ("response_id", "request_id"):
            if not isinstance(response.get(field), (str, type(None))):
                raise ValueError(f'the response\'s "{field}" must be a string or null')
