"""Items and stream events readable by attribute, as upstream's typed objects are (`RawItem`).

Code written for upstream reads what a model gave by attribute: `result.new_items[0].raw_item.name`,
`result.raw_responses[0].output[0].content[0].text`, an interruption's `raw_item.arguments`, `event.data.delta`.
The kernel's items are plain dicts, read by key. In a run of a program that uses this shell, `UpstreamPlugin` hands
the turn's model to `ReadableModel` (the `model` seam): each response's output items, and each streamed event, become
`RawItem`s, dicts that also answer attribute reads, so everything else still sees JSON-ready dicts. A `RunState`
loaded through the shell's `RunState`, or by the kernel (a turn continued from a session's journal), gets the same
for the items a model gave (`readable_state`). The items the kernel makes (tool and handoff outputs, input) are
dicts in upstream too (its TypedDicts) and stay plain.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..items import HandoffCallItem, MessageOutputItem, ReasoningItem, ToolApprovalItem, ToolCallItem
from ..models.interface import ModelResponse

# The run items whose raw item a model gave (upstream's typed objects); the others hold what the kernel made.
MODEL_ITEMS = (MessageOutputItem, ReasoningItem, ToolCallItem, HandoffCallItem, ToolApprovalItem)


class RawItem(dict):
    """A JSON-ready dict whose keys can also be read as attributes, nested ones too
    (`item.raw_item.content[0].text`, `event.data.response.output`), as upstream's typed objects allow."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            value = self[name]
        except KeyError:
            raise AttributeError(f"item of type {self.get('type', 'message')!r} has no field {name!r}") from None
        if type(value) is dict:  # made readable the first time it is read, in place, so it stays one object
            value = self[name] = RawItem(value)
        elif type(value) is list:
            for n, element in enumerate(value):
                if type(element) is dict:
                    value[n] = RawItem(element)
        return value


def as_raw_item(item: Any) -> Any:
    """`item` as a `RawItem`: itself when it already is one, or is not a dict (left for the kernel to judge)."""
    return RawItem(item) if isinstance(item, dict) and not isinstance(item, RawItem) else item


def readable(items: list) -> list:
    return [as_raw_item(item) for item in items]


class ReadableModel:
    """A turn's model whose output items and streamed events are `RawItem`s; every other attribute is the wrapped
    model's."""

    def __init__(self, model: Any):
        self.wrapped = model  # not `model`: a tracing span reads a model's name from `model.model`

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        response = self.wrapped.get_response(*args, **kwargs)
        if isinstance(response, ModelResponse):  # anything else is left for the kernel to refuse
            response.output = readable(response.output)
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        events = self.wrapped.stream_response(*args, **kwargs)
        return readable_events(events) if isinstance(events, Iterable) else events  # else left for the kernel to refuse


def readable_events(events: Iterable) -> Iterator[Any]:
    """A stream's events as `RawItem`s, and the items of the response the run keeps."""
    for event in events:
        event = as_raw_item(event)
        if isinstance(event, dict) and event.get("type") == "response.completed" and \
                isinstance(event.get("response"), dict):  # the response the run keeps: its items readable too
            response = event["response"] = as_raw_item(event["response"])
            if isinstance(response.get("output"), list):
                response["output"] = readable(response["output"])
        yield event


def readable_state(state: Any) -> Any:
    """A loaded `RunState` whose model-given items are `RawItem`s, as a run of the shell holds them (the run
    items, the responses, a paused turn's response, an agent tool's paused inner run)."""
    for item in state.generated_items:
        if isinstance(item, MODEL_ITEMS):
            item.raw_item = as_raw_item(item.raw_item)
    for response in state.model_responses:
        response.output = readable(response.output)
    if state.pending is not None:
        state.pending.output = readable(state.pending.output)
        for nested in state.pending.nested.values():
            readable_state(nested)
    state.rebuild_transcript()
    return state
