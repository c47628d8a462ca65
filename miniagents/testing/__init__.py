"""An offline model for tests, the demo and teaching: `ScriptedModel` plays back scripted steps and records calls.

`ScriptedModel(steps)` answers each model call with the next step and records the call (`.calls`, a tuple of
`ModelCall`s holding what the agent offered: tool and handoff objects, the output schema object, settings).
A step is a list of output items (build them with `function_call()` and `assistant_message()`), a
`ModelResponse`, an exception to raise, a `ModelStep`, or a callable: a responder that computes the step from
the recorded `ModelCall` (it may be `async def` and may return any step form; it gets a copy of the request, so
an edit of it changes neither the run nor the record). Steps are checked when they are added, so a bad one is an
`InvalidModelStep` naming the step (a responder's result: the call it answered), not a puzzling failure turns
later; a step is checked against the rules of a model's response and kept as the run keeps a model's items, so
a value no store takes is refused, with its path, where the run writes it. A streamed call replays its step as
the Responses events a streamed run reads (`response_events`). One model may serve runs on several threads at
once: each step is taken by exactly one call, in the order the calls reach the model.

Upstream's `agents.testing` contract (dict steps, `ModelStep.respond`, `default_usage`, typed items, its whole
stream layout, async streams) is `miniagents.upstream.testing`.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .. import caller, items
from ..context import Usage
from ..errors import AgentsException
from ..models.interface import ModelResponse, ModelSettings


def function_call(name: str, arguments: Union[str, Mapping] = "{}", *, call_id: str,
                  item_id: Optional[str] = None) -> dict:
    """A `function_call` output item; `arguments` may be a dict (sent as compact JSON) or the JSON text."""
    if not isinstance(arguments, str):
        arguments = json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False)
    return {"type": "function_call", "id": item_id or call_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}


def assistant_message(text: str, *, item_id: str = "scripted-message") -> dict:
    """An assistant `message` output item holding `text`."""
    return items.assistant_message(text, item_id)


class ModelScriptError(AgentsException):
    """The script and the run disagree; the keyword arguments are attributes that say how."""

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.__dict__.update(details)


class InvalidModelStep(ModelScriptError):
    """A step cannot be used: `reason` says why ("invalid_input", "invalid_error", "invalid_stream_events"),
    `input_index` which step (0-based) of those added together (None: steps that are no list of steps, or a
    `stream_events` function's or a responder's result, found bad when the call plays it; a responder's names the
    call's 0-based number, `call_index`)."""


class UnexpectedModelCall(ModelScriptError):
    """The model was called with no step left; `call` is that call, `call_index` its 0-based number."""


class UnconsumedModelSteps(ModelScriptError):
    """`assert_complete()` found `remaining_steps` steps no call used."""


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
        """The names the model could call, tools then handoffs."""
        return [t.name for t in self.tools] + [h.tool_name for h in self.handoffs]


@dataclass
class ModelStep:
    """One scripted model call: its output items and usage, or an `error` to raise (`retry_advice`: what the
    model advises about it, for the retry shell), a `responder` computing the step from the `ModelCall`, or the
    exact `stream_events` of a streamed call (a list, or a function of the call returning them)."""

    output: Sequence[Any] = field(default_factory=tuple)
    usage: Usage = field(default_factory=Usage)
    response_id: Optional[str] = "resp-789"  # upstream's id for a scripted response that does not set one
    request_id: Optional[str] = None
    error: Optional[Exception] = None
    responder: Optional[Callable[..., Any]] = None
    stream_events: Any = None
    retry_advice: Any = None  # a ModelRetryAdvice (the retry shell's)


def _problem(step: ModelStep) -> Optional[Tuple[str, str]]:
    """(reason, what is wrong) when `step` cannot be used, else None."""
    events = step.stream_events
    if not isinstance(step.output, (list, tuple)) or not all(isinstance(i, dict) and isinstance(i.get("type"), str)
                                                             for i in step.output):
        return "invalid_input", "must use a list of output items that are objects with a string 'type'"
    if not isinstance(step.usage, Usage):
        return "invalid_input", "must use Usage for usage"
    try:  # what a model's response must be: the kernel's own rules
        ModelResponse(list(step.output), step.usage, step.response_id, step.request_id)
    except AgentsException as error:
        return "invalid_input", f"holds what no response may: {error.message}"
    if step.error is not None and not isinstance(step.error, Exception):
        return "invalid_error", "must use an Exception for error"
    if events is not None and not callable(events) and (not isinstance(events, (list, tuple)) or not all(
            isinstance(event, dict) for event in events)):
        return "invalid_stream_events", "must use a list of events (dicts) or a callable for stream_events"
    return None


def invalid(index: Optional[int], reason: str, detail: str, call_index: Optional[int] = None) -> InvalidModelStep:
    """The error for a step that cannot be used: step `index` of those added together, or what a responder returned
    for call `call_index` (both 0-based)."""
    where = (f"Scripted model step #{index + 1}" if call_index is None
             else f"The step a responder returned for model call #{call_index + 1}")
    return InvalidModelStep(f"{where} {detail}.", reason=reason, input_index=None if call_index is not None else index,
                            call_index=call_index)


def listed(steps: Any) -> list:
    """`steps` as the list of steps it is; a string, a lone item (a mapping) or no iterable at all is refused whole,
    not taken apart into steps each refused as "step #1"."""
    if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Iterable):
        raise InvalidModelStep(f"Scripted model steps must be a list of steps, not {type(steps).__name__}.",
                               reason="invalid_input", input_index=None)
    return list(steps)


def own(values: Any) -> list:
    """A copy of each list and dict in `values`, as the run copies a model's items: later edits by whoever gave them
    change nothing here; a value that deepcopy refuses (a lock) is shared, and one nested past the recursion limit
    kept as given, as a model's answer is, rather than a bare error when the step is added."""
    try:
        return items.copied(list(values))
    except RecursionError:
        return list(values)


class ScriptedModel:
    """A model that plays back `steps` in order and records every call (see the module docstring)."""

    def __init__(self, steps: Any = ()):
        self._steps: List[ModelStep] = [self._step(step, n) for n, step in enumerate(listed(steps))]
        self._calls: List[ModelCall] = []
        self._advice: dict = {}  # id(error) -> (error, advice) of the scripted errors raised
        self._lock = threading.Lock()  # agents-as-tools may call one model from several threads
        self.default_usage = Usage(requests=1)  # the usage of a step that gives none

    def __deepcopy__(self, memo: dict) -> "ScriptedModel":
        """A model is a shared service, not data: copying an agent (or a tool holding one) keeps its model."""
        return self

    @property
    def calls(self) -> Tuple[ModelCall, ...]:
        return tuple(self._calls)

    @property
    def first_call(self) -> Optional[ModelCall]:
        return self._calls[0] if self._calls else None

    @property
    def last_call(self) -> Optional[ModelCall]:
        return self._calls[-1] if self._calls else None

    @property
    def remaining_steps(self) -> int:
        return len(self._steps)

    def enqueue(self, step: Any) -> None:
        self._steps.append(self._step(step, 0))

    def extend(self, steps: Any) -> None:
        self._steps.extend([self._step(step, n) for n, step in enumerate(listed(steps))])

    def assert_complete(self) -> None:
        if self._steps:
            raise UnconsumedModelSteps(f"{len(self._steps)} scripted model step(s) were not consumed.",
                                       remaining_steps=len(self._steps))

    def get_retry_advice(self, request: Any) -> Any:
        """The `retry_advice` scripted with the very error that was raised, if any (the retry shell asks)."""
        error, advice = self._advice.get(id(request.error), (None, None))
        return advice if error is request.error else None

    def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """A `Model` call (models/interface.py names its arguments): the next step's response."""
        return self._response(self._take(False, *args, **kwargs)[1])

    def stream_response(self, *args: Any, **kwargs: Any) -> Iterator[dict]:
        """A streamed `Model` call: the step's own `stream_events`, or its response as Responses events."""
        call, step = self._take(True, *args, **kwargs)
        if step.stream_events is None:
            return iter(response_events(self._response(step)))
        return iter(played(step.stream_events(_detached(call))) if callable(step.stream_events)
                    else step.stream_events)

    def _step(self, step: Any, index: int, call_index: Optional[int] = None) -> ModelStep:
        """Any step form -> a checked `ModelStep` with output of its own (`InvalidModelStep` otherwise); step `index`
        of those added together, or (`call_index`) what a responder returned for that call."""
        if isinstance(step, ModelResponse):
            step = ModelStep(output=step.output, usage=step.usage, response_id=step.response_id,
                             request_id=step.request_id)
        elif isinstance(step, Exception):
            step = ModelStep(error=step)
        elif callable(step) and not isinstance(step, (type, ModelStep)):
            step = ModelStep(responder=step)
        elif not isinstance(step, ModelStep):
            step = ModelStep(output=step)
        wrong = _problem(step)
        if wrong is not None:
            raise invalid(index, *wrong, call_index=call_index)
        events = step.stream_events
        return dataclasses.replace(step, output=own(step.output), usage=copy.deepcopy(step.usage),
                                   stream_events=events if callable(events) or events is None else own(events))

    def _take(self, streamed: bool, system_instructions: Optional[str], input: list, model_settings: ModelSettings,
              tools: list, output_schema: Any, handoffs: list, tracing: Any = None, *,
              previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
              prompt: Any = None) -> Tuple[ModelCall, ModelStep]:
        """Record a call and take its step: responders run (until one gives a plain step), an error is raised, a
        step without usage gets `default_usage`. The input is recorded as a list of its own sharing the run's
        items (it never changes one once made), so a record costs the same whatever the history's length."""
        call = ModelCall(system_instructions, list(input), copy.deepcopy(model_settings), list(tools), output_schema,
                         list(handoffs), tracing, previous_response_id, conversation_id, copy.deepcopy(prompt),
                         streamed)
        with self._lock:
            self._calls.append(call)
            if not self._steps:
                kind = "streaming" if streamed else "non-streaming"
                raise UnexpectedModelCall(f"Unexpected {kind} model call #{len(self._calls)}: no scripted steps "
                                          "remain.", call=call, call_index=len(self._calls) - 1)
            step, number = self._steps.pop(0), len(self._calls) - 1
        while step.responder is not None:
            step = self._step(caller.call(step.responder, _detached(call)), 0, number)
        if step.error is not None:
            if step.retry_advice is not None:
                self._advice[id(step.error)] = (step.error, step.retry_advice)
            raise step.error
        if step.usage == Usage():
            step = dataclasses.replace(step, usage=copy.deepcopy(self.default_usage))
        return call, step

    @staticmethod
    def _response(step: ModelStep) -> ModelResponse:
        return ModelResponse(output=list(step.output), usage=step.usage, response_id=step.response_id,
                             request_id=step.request_id)


def _detached(call: ModelCall) -> ModelCall:
    """The call as a responder gets it: its input a copy (`own`), so editing it changes neither the run's items nor
    the record (whose input shares them, at a cost that does not grow with the history)."""
    return dataclasses.replace(call, input=own(call.input))


def played(events: Any, asynchronous: bool = False) -> Any:
    """What a step's `stream_events` function returned, when it is events (an iterable, or an async iterator for
    the upstream shell: `asynchronous`); one that returned none (a forgotten `return`, an async generator here) is
    an `InvalidModelStep`, found when the call plays it, never a bare TypeError out of the run."""
    if not isinstance(events, Iterable) and not (asynchronous and hasattr(events, "__anext__")):
        raise InvalidModelStep(f"A scripted step's stream_events function returned a {type(events).__name__}, "
                               "not the events.", reason="invalid_stream_events", input_index=None)
    return events


def response_events(response: ModelResponse) -> list:
    """A finished response as the Responses stream events a streamed run reads: each item added (still empty),
    its text or arguments as one delta, the item done, then `response.completed` with the output and usage."""
    events: list = [{"type": "response.created", "response": {"id": response.response_id, "output": []}}]
    for index, item in enumerate(response.output):
        kind, at = item.get("type"), {"item_id": item.get("id"), "output_index": index}
        empty = {"message": {"content": []}, "function_call": {"arguments": ""}}.get(kind, {})
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, **empty, "status": "in_progress"}})
        if kind == "function_call":
            events.append({"type": "response.function_call_arguments.delta", **at,
                           "delta": item.get("arguments") or ""})
        for n, part in enumerate(item.get("content") or [] if kind == "message" else []):
            if part.get("type") == "output_text":
                events.append({"type": "response.output_text.delta", **at, "content_index": n,
                               "delta": part["text"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": {
        "id": response.response_id, "status": "completed", "output": response.output,
        "usage": response.usage.to_json()}})
    return events
