"""Upstream's `RunConfig` callbacks, each answered on a kernel seam by `UpstreamPlugin` (runner.py):

- `session_input_callback(history, new_items)`: how a session's history and a run's new input combine (the
  `session_input` seam); it returns the list of input items the run starts from.
- `call_model_input_filter(CallModelData)`: the items and instructions each model call is sent (`model_input`); it
  returns a `ModelInputData`.
- `tool_error_formatter(ToolErrorFormatterArgs)`: the text a call that gets an error instead of running is answered
  with (`error_text`); it returns a text, or None for the kernel's (as upstream, the kernel's too, logged, when it
  raises or returns anything else).
- `output_guardrail_blocked_message`: a text, or a synchronous formatter given `OutputGuardrailBlockedMessageArgs`,
  kept in place of a tool output an output guardrail rejected as the final output (`blocked_output`).

The fields are the shell's `RunConfig`'s, checked when it is made (`check`); a run whose configuration has none of
them gets the kernel's texts and input, unchanged. Each callable may be a coroutine function, except the blocked
message's formatter: the rejected output must not wait for it.
"""
from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Any, Generic, Optional

from .. import caller
from ..context import TContext
from ..errors import UserError, warn
from ..items import drop_orphans, item_problem


@dataclass(eq=False)
class CallModelData(Generic[TContext]):
    """What `RunConfig.call_model_input_filter` receives just before each model call: `model_data` (a
    `ModelInputData`), the agent, and your context object. The filter returns the `ModelInputData` to send."""

    model_data: Any
    agent: Any
    context: Any


@dataclass(eq=False)
class ModelInputData:
    """The model input a `call_model_input_filter` sees and returns: the transcript items and the system
    instructions. Unpaired calls or outputs in what it returns are dropped before the request."""

    input: list
    instructions: Optional[str]


@dataclass(eq=False)
class ToolErrorFormatterArgs(Generic[TContext]):
    """What `RunConfig.tool_error_formatter` receives when a call gets an error instead of running: `kind` is
    "tool_not_found" or "approval_rejected"; return text to replace `default_message`."""

    kind: str
    tool_type: str
    tool_name: str
    call_id: str
    default_message: str
    run_context: Any


@dataclass(eq=False)
class OutputGuardrailBlockedMessageArgs(Generic[TContext]):
    """What a `RunConfig.output_guardrail_blocked_message` formatter receives: never the rejected output."""

    default_message: str
    guardrail_name: str
    agent: Any
    run_context: Any


CALLABLES = ("session_input_callback", "call_model_input_filter", "tool_error_formatter")


def check(config: Any) -> None:
    """The shell's `RunConfig` refuses, when it is made, a callback that is not callable and a blocked message that
    is neither a text nor a synchronous callable (an async formatter would keep the rejected output waiting)."""
    for name in CALLABLES:
        value = getattr(config, name)
        if value is not None and not callable(value):
            raise UserError(f"RunConfig.{name} must be a callable or None, got {value!r:.60}")
    blocked = config.output_guardrail_blocked_message
    if blocked is not None and not (isinstance(blocked, str) and blocked or callable(blocked)
                                    and not inspect.iscoroutinefunction(blocked)):
        raise UserError("output_guardrail_blocked_message must be a non-empty text, a synchronous callable, or "
                        f"None, got {blocked!r:.60}")


def session_input(run: Any, history: list, new_items: list, items: list) -> list:
    """The input a run with a session starts from: what `session_input_callback` makes of copies of the history and
    the new input (the new input alone is saved, whatever it returns), else `items` (the kernel's)."""
    callback = getattr(run.config, "session_input_callback", None)
    if callback is None:
        return items
    combined = caller.call(callback, copy.deepcopy(list(history)), copy.deepcopy(list(new_items)))
    if not isinstance(combined, list):
        raise UserError("Session input callback must return a list of input items.")
    problem = next(((n, p) for n, p in enumerate(map(item_problem, combined)) if p), None)
    if problem is not None:
        raise UserError(f"Session input callback returned an input item [{problem[0]}] that {problem[1]}")
    return combined


def filter_model_input(run: Any, setup: Any, items: list) -> tuple:
    """(instructions, items) a model call is sent, as `call_model_input_filter` returns them (unpaired calls or
    outputs dropped, as the transcript drops them: an output whose call the filter took out is no answer to a call
    the server holds; only one whose call `items` lacks is, and only where the request names a state)."""
    given = list(items) if run.state.names_state else None  # as given, whatever the filter does to the list
    data = caller.call(run.config.call_model_input_filter, CallModelData(
        ModelInputData(items, setup.instructions), setup.agent, run.state.context_wrapper.context))
    if not isinstance(data, ModelInputData):
        raise UserError("call_model_input_filter must return a ModelInputData instance")
    if not isinstance(data.input, list) or not (data.instructions is None or isinstance(data.instructions, str)):
        raise UserError("call_model_input_filter must return a ModelInputData whose input is a list of input items "
                        f"and whose instructions are a text or None, got input of type {type(data.input).__name__} "
                        f"and instructions of type {type(data.instructions).__name__}")
    problem = next(((n, p) for n, p in enumerate(map(item_problem, data.input)) if p), None)
    if problem is not None:
        raise UserError(f"call_model_input_filter returned an input item [{problem[0]}] that {problem[1]}")
    return data.instructions, drop_orphans(data.input, run.state.server_managed, given)


def error_text(run: Any, call: Any, kind: str, text: str) -> str:
    """What the model is told for a call that gets an error instead of running: `tool_error_formatter`'s text, or
    `text` (the kernel's) when it returns None or an empty text. As upstream, a formatter that raises or returns
    something else than a text leaves `text` too, logged (its type only: the value may hold the tool's data). The
    run's cancel, stopping an async formatter, is no failure of it: the run stops, the call left unanswered."""
    formatter = getattr(run.config, "tool_error_formatter", None)
    if formatter is None:
        return text
    try:
        message = caller.call(formatter, ToolErrorFormatterArgs(kind, "function", call.item.get("name", ""),
                                                                call.call_id, text, run.state.context_wrapper))
    except caller.Cancelled:
        raise
    except Exception:
        warn("tool_error_formatter raised; the model is told %r", text, exc_info=True)
        return text
    if message is not None and not isinstance(message, str):
        warn("tool_error_formatter returned %s, not a text; the model is told %r", type(message).__name__, text)
        return text
    return message or text


def blocked_output(run: Any, trip: Any, text: str) -> str:
    """The text kept in place of a rejected tool output: `output_guardrail_blocked_message`, or what its formatter
    returns; `text` (the kernel's) when the formatter raises (logged) or gives no text. The formatter is never
    awaited: a coroutine it returns is closed, unrun."""
    configured = getattr(run.config, "output_guardrail_blocked_message", None)
    if configured is None or isinstance(configured, str):
        return configured or text
    result = trip.guardrail_result
    try:
        message = configured(OutputGuardrailBlockedMessageArgs(text, result.guardrail.get_name(), result.agent,
                                                               run.state.context_wrapper))
    except Exception:
        warn("output_guardrail_blocked_message raised; the rejected output is replaced by %r", text, exc_info=True)
        return text
    if inspect.iscoroutine(message):
        message.close()
    return message if isinstance(message, str) and message else text
