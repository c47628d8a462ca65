"""An offline model for tests, the demo and teaching: `ScriptedModel`, with upstream's `agents.testing` contract.

`ScriptedModel(steps)` answers each model call with the next step and records the call (`.calls`, a tuple of
`ModelCall`s holding what the agent offered: tool and handoff objects, the output schema object, settings).
A step is a `ModelStep`, its dict form (`ModelStepSpec`: `{"output": [...], "usage": ..., "responder": fn,
"error": e, ...}`), a `ModelResponse`, a list of output items (build them with `function_call()` and
`assistant_message()`), or an exception to raise. `ModelStep.respond(fn)` computes the step from the
recorded call (`fn` may be `async def` and may return any step form). miniagents also takes a bare callable
as a responder step (upstream refuses it). Steps are checked when they are added: a bad one is
`InvalidModelStep` with upstream's `reason` and `input_index`, never silently ignored.

Streaming replays a step as Responses events (one text delta per content part, as upstream); events are
dicts that also answer attribute reads. `emit_traces` is accepted for upstream's signature: the run records a
generation span for every model call already.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, TypedDict, Union

from . import caller, items
from .context import Usage
from .errors import AgentsException
from .models.interface import ModelResponse, ModelSettings
from .models.retry_advice import ModelRetryAdvice, ModelRetryAdviceRequest

DEFAULT_RESPONSE_ID = "resp-789"  # upstream's id for every scripted response that does not set one


def function_call(name: str, arguments: Union[str, Mapping] = "{}", *, call_id: str, item_id: Optional[str] = None,
                  namespace: Optional[str] = None) -> dict:
    """A `function_call` output item; `arguments` may be a dict (sent as compact JSON) or the JSON text."""
    if not isinstance(arguments, str):
        arguments = json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False)
    item = {"type": "function_call", "id": item_id or call_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}
    if namespace is not None:
        item["namespace"] = namespace
    return item


def assistant_message(text: str, *, item_id: str = "scripted-message") -> dict:
    """An assistant `message` output item holding `text`."""
    return items.assistant_message(text, item_id)


# --- Errors: upstream's classes and attributes ------------------------------------------------------------


class ModelScriptError(AgentsException):
    """The script and the run disagree."""


class InvalidModelStep(ModelScriptError):
    """A step cannot be used; `reason` says why ("invalid_input", "unsupported_field", "invalid_error",
    "invalid_responder", "invalid_stream_events", "conflicting_outcomes", "invalid_retry_advice") and
    `input_index` which step (0-based) of the list it came in."""

    def __init__(self, message: str, *, reason: str, input_index: int):
        super().__init__(message)
        self.reason, self.input_index = reason, input_index


class UnexpectedModelCall(ModelScriptError):
    """The model was called with no step left; `call` is that call, `call_index` its 0-based number."""

    def __init__(self, message: str, *, call: "ModelCall", call_index: int):
        super().__init__(message)
        self.call, self.call_index = call, call_index


class UnconsumedModelSteps(ModelScriptError):
    """`assert_complete()` found `remaining_steps` steps no call used."""

    def __init__(self, message: str, *, remaining_steps: int):
        super().__init__(message)
        self.remaining_steps = remaining_steps


# --- What a call was, and what a step is ------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCall:
    """One model call as the model received it: the tools, handoffs and output schema are the objects the
    agent offered (`FunctionTool`/hosted tools, `Handoff`s, an `AgentOutputSchemaBase` or None)."""

    system_instructions: Optional[str]
    input: Any
    model_settings: ModelSettings
    tools: list
    output_schema: Any
    handoffs: list
    tracing: Any
    previous_response_id: Optional[str]
    conversation_id: Optional[str]
    prompt: Any
    streamed: bool

    @property
    def tool_names(self) -> list:
        """miniagents' shortcut: the names the model could call, tools then handoffs."""
        return [t.name for t in self.tools] + [h.tool_name for h in self.handoffs]


@dataclass
class ModelStep:
    """One scripted model call: its output items and usage, or an `error` to raise, a `responder` computing
    the step from the `ModelCall`, or exact `stream_events` (a list of events, or a function of the call
    returning an iterator of them) for a streamed call."""

    output: Sequence[Any] = field(default_factory=tuple)
    usage: Usage = field(default_factory=Usage)
    response_id: Optional[str] = DEFAULT_RESPONSE_ID
    request_id: Optional[str] = None
    raw_usage: Optional[dict] = None
    error: Optional[Exception] = None
    responder: Optional[Callable[..., Any]] = None
    stream_events: Any = None
    retry_advice: Optional[ModelRetryAdvice] = None

    @classmethod
    def raise_error(cls, error: Exception, *, retry_advice: Optional[ModelRetryAdvice] = None) -> "ModelStep":
        """A step that raises `error`; `retry_advice` is what `get_retry_advice` reports for it."""
        return cls(error=error, retry_advice=retry_advice)

    @classmethod
    def respond(cls, responder: Callable[..., Any]) -> "ModelStep":
        """A step computed from the recorded `ModelCall` by `responder` (sync or async; any step form)."""
        return cls(responder=responder)

    @classmethod
    def stream(cls, events: Any, *, output: Sequence[Any] = (), usage: Optional[Usage] = None,
               response_id: Optional[str] = DEFAULT_RESPONSE_ID) -> "ModelStep":
        """A streamed step with exactly these events (or a function of the call that yields them)."""
        return cls(output=output, usage=usage or Usage(), response_id=response_id,
                   stream_events=events if callable(events) else tuple(events))


class ModelStepSpec(TypedDict, total=False):
    """The dict form of `ModelStep`: any of its fields, nothing else."""

    output: Sequence[Any]
    usage: Usage
    response_id: Optional[str]
    request_id: Optional[str]
    raw_usage: Optional[dict]
    error: Optional[Exception]
    responder: Optional[Callable[..., Any]]
    stream_events: Any
    retry_advice: Optional[ModelRetryAdvice]


STEP_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelStep))


def _invalid(index: int, reason: str, detail: str) -> InvalidModelStep:
    return InvalidModelStep(f"Scripted model step #{index + 1} {detail}.", reason=reason, input_index=index)


def _as_item(item: Any) -> Any:
    """An output item as a dict: dicts as given, typed objects (the openai package's) through `model_dump`."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) and not isinstance(item, dict) else item


def coerce_step(step: Any, index: int) -> ModelStep:
    """Any accepted step form -> a checked, detached `ModelStep` (`InvalidModelStep` otherwise)."""
    if isinstance(step, ModelStep):
        normalized = step
    elif isinstance(step, ModelResponse):
        normalized = ModelStep(output=step.output, usage=step.usage, response_id=step.response_id,
                               request_id=step.request_id)
    elif isinstance(step, Exception):
        normalized = ModelStep.raise_error(step)
    elif isinstance(step, Mapping):
        if set(step) - STEP_FIELDS:
            raise _invalid(index, "unsupported_field", "contains unsupported fields")
        normalized = ModelStep(**dict(step))
    elif callable(step) and not isinstance(step, type):
        normalized = ModelStep.respond(step)
    else:
        normalized = ModelStep(output=step)
    _check(normalized, index)
    events = normalized.stream_events
    return dataclasses.replace(
        normalized, output=[_as_item(copy.deepcopy(i)) for i in normalized.output],
        usage=copy.deepcopy(normalized.usage),
        raw_usage=copy.deepcopy(normalized.raw_usage), retry_advice=copy.deepcopy(normalized.retry_advice),
        stream_events=events if events is None or callable(events) else copy.deepcopy(events))


def _check(step: ModelStep, index: int) -> None:
    """Upstream's rules for a step, plus: every output item is an object with a string `type`."""
    if not isinstance(step.output, Sequence) or isinstance(step.output, (str, bytes)):
        raise _invalid(index, "invalid_input", "must use a sequence for output")
    for item in map(_as_item, step.output):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise _invalid(index, "invalid_input", "must use output items that are objects with a string 'type'")
    if not isinstance(step.usage, Usage):
        raise _invalid(index, "invalid_input", "must use Usage for usage")
    for name in ("response_id", "request_id"):
        if getattr(step, name) is not None and not isinstance(getattr(step, name), str):
            raise _invalid(index, "invalid_input", f"must use a string or None for {name}")
    if step.raw_usage is not None and not isinstance(step.raw_usage, dict):
        raise _invalid(index, "invalid_input", "must use a dictionary or None for raw_usage")
    if step.error is not None and not isinstance(step.error, Exception):
        raise _invalid(index, "invalid_error", "must use an Exception for error")
    if step.responder is not None and not callable(step.responder):
        raise _invalid(index, "invalid_responder", "must use a callable responder")
    events = step.stream_events
    if events is not None and not callable(events) and (not isinstance(events, Sequence)
                                                        or isinstance(events, (str, bytes))):
        raise _invalid(index, "invalid_stream_events", "must use a sequence or callable stream_events value")
    if sum(v is not None for v in (step.error, step.responder, step.stream_events)) > 1:
        raise _invalid(index, "conflicting_outcomes", "cannot combine error, responder, and stream_events outcomes")
    if step.retry_advice is not None and (not isinstance(step.retry_advice, ModelRetryAdvice) or step.error is None):
        raise _invalid(index, "invalid_retry_advice", "requires an error and a ModelRetryAdvice value")


# --- The model --------------------------------------------------------------------------------------------


class RecordedCalls(tuple):
    """`ScriptedModel.calls`: a tuple (upstream's type) that also equals a list of the same calls, as
    miniagents' `calls` was a list (`model.calls == []` keeps meaning "never called")."""

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


class ScriptedModel:
    """A model that plays back `steps` in order and records every call (see the module docstring)."""

    def __init__(self, steps: Any = (), *, emit_traces: bool = False, default_usage: Optional[Usage] = None):
        self._steps: List[ModelStep] = [coerce_step(step, n) for n, step in enumerate(steps)]
        self._emit_traces = emit_traces
        self._default_usage = copy.deepcopy(default_usage)
        self._calls: List[ModelCall] = []
        self._advice: dict = {}  # id(error) -> (error, advice) of the scripted errors raised
        self._lock = threading.Lock()  # agents-as-tools may call one model from several threads

    def __deepcopy__(self, memo: dict) -> "ScriptedModel":
        """A model is a shared service, not data: copying an agent (or a tool holding one) keeps its model."""
        return self

    @property
    def calls(self) -> "RecordedCalls":
        """Detached copies of the recorded calls, in order (a tuple, as upstream)."""
        return RecordedCalls(_detached(call) for call in self._calls)

    @property
    def first_call(self) -> Optional[ModelCall]:
        return _detached(self._calls[0]) if self._calls else None

    @property
    def last_call(self) -> Optional[ModelCall]:
        return _detached(self._calls[-1]) if self._calls else None

    @property
    def remaining_steps(self) -> int:
        return len(self._steps)

    def enqueue(self, step: Any) -> None:
        self._steps.append(coerce_step(step, 0))

    def extend(self, steps: Any) -> None:
        self._steps.extend([coerce_step(step, n) for n, step in enumerate(steps)])

    def set_default_usage(self, usage: Optional[Usage]) -> None:
        """The usage of steps that give none (`Usage()`); None: `Usage(requests=1)`."""
        self._default_usage = copy.deepcopy(usage)

    def assert_complete(self) -> None:
        if self._steps:
            raise UnconsumedModelSteps(f"{len(self._steps)} scripted model step(s) were not consumed.",
                                       remaining_steps=len(self._steps))

    def get_retry_advice(self, request: ModelRetryAdviceRequest) -> Optional[ModelRetryAdvice]:
        """The `retry_advice` scripted with the very error that was raised, if any."""
        error, advice = self._advice.get(id(request.error), (None, None))
        return copy.deepcopy(advice) if error is request.error else None

    def get_response(self, system_instructions: Optional[str], input: Any, model_settings: ModelSettings,
                     tools: list, output_schema: Any, handoffs: list, tracing: Any = None, *,
                     previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                     prompt: Any = None) -> ModelResponse:
        call, step = self._next(ModelCall(system_instructions, _recorded(input), copy.deepcopy(model_settings),
                                          list(tools), output_schema, list(handoffs), tracing, previous_response_id,
                                          conversation_id, copy.deepcopy(prompt), False))
        return self._response(self._resolve(call, step))

    def stream_response(self, system_instructions: Optional[str], input: Any, model_settings: ModelSettings,
                        tools: list, output_schema: Any, handoffs: list, tracing: Any = None, *,
                        previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                        prompt: Any = None) -> Iterator[dict]:
        call, step = self._next(ModelCall(system_instructions, _recorded(input), copy.deepcopy(model_settings),
                                          list(tools), output_schema, list(handoffs), tracing, previous_response_id,
                                          conversation_id, copy.deepcopy(prompt), True))
        step = self._resolve(call, step)
        if callable(step.stream_events):
            return ScriptedStream(_drained(step.stream_events(call)))
        if step.stream_events is not None:
            return ScriptedStream([_as_item(e) for e in step.stream_events])
        return ScriptedStream(response_events(self._response(step)))

    # --- inside a call

    def _next(self, call: ModelCall) -> tuple:
        """Record `call` and take the next step for it; returns (a detached copy of the call, the step)."""
        with self._lock:
            self._calls.append(call)
            index = len(self._calls) - 1
            if not self._steps:
                kind = "streaming" if call.streamed else "non-streaming"
                raise UnexpectedModelCall(f"Unexpected {kind} model call #{index + 1}: no scripted steps remain.",
                                          call=_detached(call), call_index=index)
            return _detached(call), self._steps.pop(0)

    def _resolve(self, call: ModelCall, step: ModelStep) -> ModelStep:
        """The step for `call`: responders run (until one gives a plain step), errors raised, usage defaulted."""
        while step.responder is not None:
            step = coerce_step(caller.call(step.responder, call), 0)
        if step.error is not None:
            if step.retry_advice is not None:
                self._advice[id(step.error)] = (step.error, step.retry_advice)
            raise step.error
        if step.usage == Usage():
            usage = self._default_usage if self._default_usage is not None else Usage(requests=1)
            step = dataclasses.replace(step, usage=copy.deepcopy(usage))
        return step

    @staticmethod
    def _response(step: ModelStep) -> ModelResponse:
        return ModelResponse(output=copy.deepcopy(list(step.output)), usage=copy.deepcopy(step.usage),
                             response_id=step.response_id, request_id=step.request_id)


class ScriptedStream:
    """A scripted stream's events: the loop iterates them, and code written for upstream's async `Model` can
    `async for` over them."""

    def __init__(self, events: Any):
        self._events = iter(events)

    def __iter__(self) -> Iterator[Any]:
        return self._events

    def __aiter__(self) -> "ScriptedStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


def _recorded(items: Any) -> list:
    """The input a call got, as a list of its own: the items themselves are the run's, which it never changes once
    made, so recording a call costs the same whatever the history's length (a callback that edits an item in
    place shows in the record)."""
    return list(items)


def _detached(call: ModelCall) -> ModelCall:
    return dataclasses.replace(call, input=list(call.input), model_settings=copy.deepcopy(call.model_settings),
                               tools=list(call.tools), handoffs=list(call.handoffs), prompt=copy.deepcopy(call.prompt))


def _drained(events: Any) -> list:
    """A scripted stream factory's events, from a plain or an async iterator (drained on one event loop)."""
    if hasattr(events, "__anext__"):
        async def collect() -> list:
            return [event async for event in events]
        events = caller.resolve(collect())
    return [_as_item(event) for event in events]


# --- A finished response replayed as Responses stream events (upstream's layout) --------------------------


def _in_progress(item: dict) -> dict:
    """An output item as `response.output_item.added` shows it: nothing generated yet."""
    kind = item.get("type")
    if kind == "message":
        return {**item, "content": [], "status": "in_progress"}
    if kind == "function_call":
        return {**item, "arguments": "", "status": "in_progress"}
    if kind == "reasoning":
        return {**item, "summary": [], "content": [] if item.get("content") is not None else None,
                "encrypted_content": None, "status": "in_progress"}
    return item


def _item_events(item: dict, ids: dict) -> list:
    """The events between an item's `added` and `done`: one delta per text part, as upstream streams them."""
    kind, events = item.get("type"), []
    if kind == "reasoning":
        for n, part in enumerate(item.get("summary") or []):
            at = {**ids, "summary_index": n}
            events += [{"type": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}},
                       {"type": "response.reasoning_summary_text.delta", **at, "delta": part.get("text", "")},
                       {"type": "response.reasoning_summary_text.done", **at, "text": part.get("text", "")},
                       {"type": "response.reasoning_summary_part.done", **at, "part": part}]
        for n, part in enumerate(item.get("content") or []):
            at = {**ids, "content_index": n}
            events += [{"type": "response.reasoning_text.delta", **at, "delta": part.get("text", "")},
                       {"type": "response.reasoning_text.done", **at, "text": part.get("text", "")}]
    elif kind == "function_call":
        at = {**ids, "item_id": item.get("id") or item.get("call_id")}
        events += [{"type": "response.function_call_arguments.delta", **at, "delta": item.get("arguments", "")},
                   {"type": "response.function_call_arguments.done", **at, "arguments": item.get("arguments", ""),
                    "name": item.get("name")}]
    elif kind == "message":
        for n, part in enumerate(item.get("content") or []):
            at = {**ids, "content_index": n}
            if part.get("type") == "output_text":
                text = part.get("text", "")
                events += [{"type": "response.content_part.added", **at,
                            "part": {**part, "text": "", "annotations": [], "logprobs": []}},
                           {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []}]
                events += [{"type": "response.output_text.annotation.added", **at, "annotation_index": i,
                            "annotation": a} for i, a in enumerate(part.get("annotations") or [])]
                events += [{"type": "response.output_text.done", **at, "text": text, "logprobs": []},
                           {"type": "response.content_part.done", **at, "part": part}]
            elif part.get("type") == "refusal":
                refusal = part.get("refusal", "")
                events += [{"type": "response.content_part.added", **at, "part": {**part, "refusal": ""}},
                           {"type": "response.refusal.delta", **at, "delta": refusal},
                           {"type": "response.refusal.done", **at, "refusal": refusal},
                           {"type": "response.content_part.done", **at, "part": part}]
    return events


def response_events(response: ModelResponse) -> list:
    """The Responses stream of a finished response: created, in_progress, each item's events, completed."""
    head = {"id": response.response_id, "object": "response", "created_at": 0, "model": "scripted-model",
            "status": "in_progress", "output": [], "usage": None}
    events: list = [{"type": "response.created", "response": head},
                    {"type": "response.in_progress", "response": dict(head)}]
    for index, item in enumerate(response.output):
        ids = {"item_id": item.get("id"), "output_index": index}
        events.append({"type": "response.output_item.added", "output_index": index, "item": _in_progress(item)})
        events += _item_events(item, ids)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": {
        **head, "status": "completed", "output": response.output, "usage": response.usage.to_json()}})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events
