"""An offline model for tests, the demo and teaching: `ScriptedModel` plays back scripted responses.

Each step is a list of output items (build them with `function_call()` and `assistant_message()`),
a `ModelResponse`, an exception to raise, or a callable that receives the `ModelCall` and returns
one of those. Every request is recorded in `.calls`, so a test can assert on exactly what the model
was sent. Streaming splits text into word deltas and synthesises Responses-shaped events.
"""
from __future__ import annotations

import copy
import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Union

from . import items
from .context import Usage
from .errors import AgentsException
from .models.interface import ModelResponse, ModelSettings


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
    """The script and the run disagree."""


class UnexpectedModelCall(ModelScriptError):
    pass


class UnconsumedModelSteps(ModelScriptError):
    pass


class InvalidModelStep(ModelScriptError):
    pass


@dataclass
class ModelCall:
    """One request as the model received it."""

    system_instructions: Optional[str]
    input: list
    model_settings: ModelSettings
    tools: list
    output_schema: Optional[dict]
    handoffs: list
    previous_response_id: Optional[str] = None
    conversation_id: Optional[str] = None
    streamed: bool = False

    @property
    def tool_names(self) -> list:
        return [t["name"] for t in self.tools] + [h["name"] for h in self.handoffs]


class ScriptedModel:
    def __init__(self, steps: Any = (), *, default_usage: Optional[Usage] = None):
        self._steps = list(steps)
        self._default_usage = default_usage
        self._lock = threading.Lock()
        self.calls: list = []

    @property
    def first_call(self) -> Optional[ModelCall]:
        return self.calls[0] if self.calls else None

    @property
    def last_call(self) -> Optional[ModelCall]:
        return self.calls[-1] if self.calls else None

    @property
    def remaining_steps(self) -> int:
        return len(self._steps)

    def enqueue(self, step: Any) -> None:
        self._steps.append(step)

    def extend(self, steps: Any) -> None:
        self._steps.extend(steps)

    def set_default_usage(self, usage: Optional[Usage]) -> None:
        self._default_usage = usage

    def assert_complete(self) -> None:
        if self._steps:
            raise UnconsumedModelSteps(f"{len(self._steps)} scripted model step(s) were not consumed.")

    def _respond(self, call: ModelCall) -> ModelResponse:
        with self._lock:
            self.calls.append(call)
            number = len(self.calls)
            if not self._steps:
                kind = "streaming" if call.streamed else "non-streaming"
                raise UnexpectedModelCall(f"Unexpected {kind} model call #{number}: no scripted steps remain.")
            step = self._steps.pop(0)
        if callable(step) and not isinstance(step, type):
            step = step(call)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResponse):
            return step
        if isinstance(step, dict):
            step = [step]
        if not isinstance(step, list) or not all(isinstance(i, dict) for i in step):
            raise InvalidModelStep(f"step #{number} must be a list of output-item dicts, a ModelResponse, "
                                   f"an exception or a callable; got {type(step).__name__}")
        usage = copy.deepcopy(self._default_usage) if self._default_usage else Usage(requests=1)
        return ModelResponse(output=copy.deepcopy(step), usage=usage, response_id=f"resp-{number}")

    def get_response(self, system_instructions: Optional[str], input: list, model_settings: ModelSettings,
                     tools: list, output_schema: Optional[dict], handoffs: list, tracing: Any = None, *,
                     previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                     prompt: Any = None) -> ModelResponse:
        return self._respond(ModelCall(system_instructions, list(input), model_settings, list(tools),
                                       output_schema, list(handoffs), previous_response_id, conversation_id))

    def stream_response(self, system_instructions: Optional[str], input: list, model_settings: ModelSettings,
                        tools: list, output_schema: Optional[dict], handoffs: list, tracing: Any = None, *,
                        previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                        prompt: Any = None) -> Iterator[dict]:
        response = self._respond(ModelCall(system_instructions, list(input), model_settings, list(tools),
                                           output_schema, list(handoffs), previous_response_id,
                                           conversation_id, streamed=True))
        return stream_events(response)


def stream_events(response: ModelResponse) -> Iterator[dict]:
    """Responses-shaped events for a finished response, text split into word deltas."""
    snapshot = {"id": response.response_id, "status": "in_progress", "output": []}
    yield {"type": "response.created", "response": snapshot}
    yield {"type": "response.in_progress", "response": snapshot}
    for index, item in enumerate(response.output):
        ids = {"item_id": item.get("id"), "output_index": index}
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
        if item.get("type") == "message":
            for part_index, part in enumerate(item.get("content") or []):
                text = part.get("text", "")
                yield {"type": "response.content_part.added", **ids, "content_index": part_index, "part": part}
                for delta in re.findall(r"\S*\s*", text)[:-1] or [text]:
                    yield {"type": "response.output_text.delta", **ids, "content_index": part_index,
                           "delta": delta}
                yield {"type": "response.output_text.done", **ids, "content_index": part_index, "text": text}
                yield {"type": "response.content_part.done", **ids, "content_index": part_index, "part": part}
        elif item.get("type") == "function_call":
            yield {"type": "response.function_call_arguments.delta", **ids, "delta": item.get("arguments", "")}
            yield {"type": "response.function_call_arguments.done", **ids, "arguments": item.get("arguments", "")}
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {"type": "response.completed", "response": {"id": response.response_id, "status": "completed",
                                                      "output": response.output,
                                                      "usage": response.usage.to_json()}}
