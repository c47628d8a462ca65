"""Upstream's `agents.testing` (in the upstream shell): miniagents' offline model with the rest of the contract
that programs written for the OpenAI Agents SDK rely on.

The testing shell's `miniagents.testing` plays back steps for miniagents' own tests, demo and docs. Upstream's module
adds: steps as dicts (`ModelStepSpec`); `ModelStep.respond`, `.raise_error` and `.stream`; `raw_usage`
(checked and carried; the run reads the usage); typed output items and events (the openai package's, through
`model_dump`); upstream's checks of ids, responders, conflicting outcomes and retry advice; `default_usage` and
`set_default_usage`; `emit_traces` (accepted: the run traces every model call already); `calls` as a tuple of
detached copies; streams in upstream's whole event layout (content parts, text done, annotations, refusals,
reasoning, sequence numbers) that code written for upstream's async `Model` can `async for` over, from
`stream_events` factories that may be async generators; and `function_call(..., namespace=)`.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, TypedDict, Union

from .. import caller
from .. import testing as offline
from ..context import Usage
from ..models.interface import ModelResponse
from ..testing import InvalidModelStep, ModelCall, ModelScriptError, UnconsumedModelSteps, UnexpectedModelCall
from ..testing import assistant_message

__all__ = ["InvalidModelStep", "ModelCall", "ModelScriptError", "ModelStep", "ModelStepSpec", "ScriptedModel",
           "UnconsumedModelSteps", "UnexpectedModelCall", "assistant_message", "function_call"]

DEFAULT_RESPONSE_ID = "resp-789"  # upstream's id for every scripted response that does not set one


def function_call(name: str, arguments: Union[str, Mapping] = "{}", *, call_id: str, item_id: Optional[str] = None,
                  namespace: Optional[str] = None) -> dict:
    """A `function_call` output item (`miniagents.testing.function_call`), with upstream's `namespace`."""
    item = offline.function_call(name, arguments, call_id=call_id, item_id=item_id)
    if namespace is not None:
        item["namespace"] = namespace
    return item


@dataclass
class ModelStep(offline.ModelStep):
    """Upstream's step: the offline model's fields, `raw_usage`, and upstream's constructors."""

    raw_usage: Optional[dict] = None

    @classmethod
    def raise_error(cls, error: Exception, *, retry_advice: Any = None) -> "ModelStep":
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
    error: Optional[Exception]
    responder: Optional[Callable[..., Any]]
    stream_events: Any
    retry_advice: Any  # a ModelRetryAdvice (the retry shell's)
    raw_usage: Optional[dict]


STEP_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelStep))


def _as_item(item: Any) -> Any:
    """An output item or event as a dict: dicts as given, typed objects (the openai package's) through `model_dump`."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) and not isinstance(item, dict) else item


def _as_dicts(step: Any) -> Any:
    """A step whose output items are typed objects, or any sequence, as the offline model takes it: a list of dicts."""
    if isinstance(step, Sequence) and not isinstance(step, (str, bytes)):
        return [_as_item(item) for item in step]
    output = getattr(step, "output", None)
    if isinstance(step, (offline.ModelStep, ModelResponse)) and isinstance(output, Sequence) \
            and not isinstance(output, (str, bytes)):
        return dataclasses.replace(step, output=[_as_item(item) for item in output])
    return step


def _problem(step: offline.ModelStep) -> Optional[tuple]:
    """Upstream's checks beyond the offline model's (which checks output, usage, ids, error and stream_events)."""
    if getattr(step, "raw_usage", None) is not None and not isinstance(step.raw_usage, dict):
        return "invalid_input", "must use a dictionary or None for raw_usage"
    if step.responder is not None and not callable(step.responder):
        return "invalid_responder", "must use a callable responder"
    if sum(v is not None for v in (step.error, step.responder, step.stream_events)) > 1:
        return "conflicting_outcomes", "cannot combine error, responder, and stream_events outcomes"
    if step.retry_advice is not None:  # advice is the retry shell's: a step that has some needs that shell
        from ..retry.advice import ModelRetryAdvice

        if not isinstance(step.retry_advice, ModelRetryAdvice) or step.error is None:
            return "invalid_retry_advice", "requires an error and a ModelRetryAdvice value"
    return None


class ScriptedModel(offline.ScriptedModel):
    """`miniagents.testing.ScriptedModel` with upstream's arguments, step forms, checks and streams."""

    def __init__(self, steps: Any = (), *, emit_traces: bool = False, default_usage: Optional[Usage] = None):
        super().__init__(steps)
        self.emit_traces = emit_traces
        self.set_default_usage(default_usage)

    def set_default_usage(self, usage: Optional[Usage]) -> None:
        """The usage of steps that give none (`Usage()`); None: `Usage(requests=1)`."""
        self.default_usage = copy.deepcopy(usage) if usage is not None else Usage(requests=1)

    @property
    def calls(self) -> tuple:
        """Detached copies of the recorded calls, in order."""
        return tuple(_detached(call) for call in self._calls)

    @property
    def first_call(self) -> Optional[ModelCall]:
        return _detached(self._calls[0]) if self._calls else None

    @property
    def last_call(self) -> Optional[ModelCall]:
        return _detached(self._calls[-1]) if self._calls else None

    def get_retry_advice(self, request: Any) -> Any:
        return copy.deepcopy(super().get_retry_advice(request))

    def stream_response(self, *args: Any, **kwargs: Any) -> "ScriptedStream":
        call, step = self._take(True, *args, **kwargs)
        if callable(step.stream_events):
            return ScriptedStream(_drained(offline.played(step.stream_events(_detached(call)), True)))
        if step.stream_events is not None:
            return ScriptedStream([_as_item(event) for event in step.stream_events])
        return ScriptedStream(response_events(self._response(step)))

    def _step(self, step: Any, index: int, call_index: Optional[int] = None) -> offline.ModelStep:
        """A dict step (`ModelStepSpec`) and typed items are taken here; the offline model checks the rest, then
        upstream's own checks run."""
        if isinstance(step, Mapping):
            if set(step) - STEP_FIELDS:
                raise offline.invalid(index, "unsupported_field", "contains unsupported fields", call_index)
            step = ModelStep(**dict(step))
        step = super()._step(_as_dicts(step), index, call_index)
        wrong = _problem(step)
        if wrong is not None:
            raise offline.invalid(index, *wrong, call_index=call_index)
        step = dataclasses.replace(step, retry_advice=copy.deepcopy(step.retry_advice))
        if isinstance(step, ModelStep):
            step = dataclasses.replace(step, raw_usage=copy.deepcopy(step.raw_usage))
        return step


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


def _detached(call: ModelCall) -> ModelCall:
    """A copy of the call down to its input's items (`offline.own`): editing one changes neither run nor record."""
    return dataclasses.replace(call, input=offline.own(call.input), model_settings=copy.deepcopy(call.model_settings),
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
    """The Responses stream of a finished response, as upstream's `ScriptedModel` streams it: created,
    in_progress, each item's events, completed, numbered in order."""
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
