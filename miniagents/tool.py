"""Tools: `FunctionTool`, `@function_tool`, `ToolError`, output conversion and the failure policy.

A function tool is data (name, description, JSON schema) plus `on_invoke_tool(tool_context, raw_json_args)`.
`invoke_tool` is the one place that turns whatever happens inside a tool into what the model sees:
the value as JSON text (content parts as they are), a `ToolError`'s message verbatim, a redacted
message for any other exception, or a timeout message. It never decides *whether* a call runs (that is
`turn.py`'s plan). A hosted tool runs on the model provider's side: the kernel only sends its configuration
(`spec()`, the Responses API's tool object) and keeps the items it produces (`agent.provider_tool` says what
one has; the upstream shell has upstream's, `WebSearchTool`, ...).
"""
from __future__ import annotations

import functools
import inspect
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from . import caller
from .context import RunContextWrapper, ToolContext
from .errors import (AlreadyResumedError, MissingFeatureError, ModelBehaviorError, SessionStoreError,
                     ToolTimeoutError, UnfinishedTurnError, UserError, warn)
from .items import clean_json, clean_text, described, preview
from .schema import SpecReads, check_tool_name, ensure_strict_json_schema, function_schema, tool_spec
from .validate import ArgumentsError, call_args, jsonable, parse_arguments

REDACTED_TOOL_ERROR = "An error occurred while running the tool. Please try again."
CANCEL_GRACE = 0.1  # seconds an async tool past its timeout gets for its cancellation to land


class ToolError(Exception):
    """Raise this inside a tool to tell the model what went wrong; the message reaches it verbatim."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


class NestedInterruption(Exception):
    """Raised by an agent-as-tool whose inner run paused for approval, or stopped at a usage limit (`limit`, the
    `UsageLimitExceeded`): the outer turn pauses too, and its resume continues the inner run where it stopped."""

    def __init__(self, state: Any, interruptions: list, limit: Any = None):
        super().__init__(f"{len(interruptions)} approval(s) pending inside an agent tool")
        self.state, self.interruptions, self.limit = state, interruptions, limit


# What a tool raising propagates, sync or async, never turned into a text for the model (`failure_text`): an exit, a
# cancel of the run, an agent tool paused inside, a feature this Python lacks, an inner run's session or ledger (no
# text for the model can fix those, and the call may have run).
PROPAGATES = (KeyboardInterrupt, SystemExit, caller.Cancelled, NestedInterruption, MissingFeatureError,
              SessionStoreError, AlreadyResumedError, UnfinishedTurnError)


@dataclass
class ToolsToFinalOutputResult:
    """What `tool_use_behavior` decides after a turn's tools ran: whether `final_output` ends the run. A
    callable `tool_use_behavior` must return one (upstream's shape)."""

    is_final_output: bool
    final_output: Any = None


@dataclass(eq=False)
class FunctionToolResult:
    """One function call's outcome, as a `tool_use_behavior` callable receives it: the tool, the value it
    returned, its output run item."""

    tool: Any
    output: Any
    run_item: Any


def default_tool_error_function(ctx: RunContextWrapper, error: Exception) -> str:
    """Upstream's redacted default: internal details (paths, secrets) never reach the prompt."""
    return REDACTED_TOOL_ERROR


@dataclass(eq=False)
class FunctionTool(SpecReads):
    """A tool the model can call. `name`, `description` and `params_json_schema` are what it sees (`spec()`);
    `on_invoke_tool(tool_context, raw_json_args)` runs one call. `needs_approval` pauses the run until a
    person decides; `timeout_*` and `failure_error_function` set what the model is told when a call fails
    (`failure_text`). Usually made by `@function_tool` or `Agent.as_tool`."""

    name: str
    description: str
    params_json_schema: dict
    on_invoke_tool: Callable[[ToolContext, str], Any]
    strict_json_schema: bool = True
    is_enabled: Union[bool, Callable] = True
    tool_input_guardrails: Optional[list] = None
    tool_output_guardrails: Optional[list] = None
    needs_approval: Union[bool, Callable] = False
    timeout_seconds: Optional[float] = None
    timeout_behavior: str = "error_as_result"
    timeout_error_function: Optional[Callable] = None
    failure_error_function: Optional[Callable] = default_tool_error_function
    # Safe to repeat: a call that started before its run's process died, with no recorded output, runs again when
    # the run is continued, instead of waiting for a person (docs/sessions.md, "After a crash").
    idempotent: bool = False
    # Set by Agent.as_tool: the agent run inside, so RunState can find it by name.
    _agent: Any = field(default=None, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        """How a call runs is composed from `on_invoke_tool` and `timeout_seconds` when the tool is made (`_invoke`,
        not a field: `on_invoke_tool`, or with its timeout), and again whenever either is set later, so a change
        made after the tool was made is never silently ignored. A timeout is a number (no bool) a thread can wait:
        past `threading.TIMEOUT_MAX` (about 292 years, inf) each call's wait raised OverflowError after the tool
        started, so it is refused here; no timeout is None."""
        object.__setattr__(self, name, value)
        if name in ("on_invoke_tool", "timeout_seconds") and "timeout_seconds" in self.__dict__:
            seconds = self.timeout_seconds
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                        or not 0 < seconds <= threading.TIMEOUT_MAX):
                raise UserError(f"tool '{self.name}': timeout must be a number of seconds > 0 and at most "
                                f"{threading.TIMEOUT_MAX:.0f} (None: no timeout), got {described(seconds)}")
            object.__setattr__(self, "_invoke", self.on_invoke_tool if self.timeout_seconds is None else
                               functools.partial(_call_with_timeout, self))

    def __post_init__(self):
        check_tool_name(self.name)
        if self.strict_json_schema:  # a hand-written schema too: what strict mode refuses fails here, not later
            self.params_json_schema = ensure_strict_json_schema(self.params_json_schema)
        if not isinstance(self.needs_approval, bool) and not callable(self.needs_approval):
            raise UserError(f"Invalid needs_approval value: expected a bool or callable, got "
                            f"{type(self.needs_approval).__name__}.")
        if self.tool_input_guardrails or self.tool_output_guardrails:  # (loaded only by runs that use guardrails)
            from .guardrails import check_guardrails
            check_guardrails(f"tool {self.name!r}", self, "tool_input_guardrails", "tool_output_guardrails")
        for name, plain, what in (("is_enabled", bool, "a bool"), ("failure_error_function", type(None), "None"),
                                  ("timeout_error_function", type(None), "None")):
            if not callable(getattr(self, name)) and not isinstance(getattr(self, name), plain):
                raise UserError(f"tool '{self.name}': {name} must be a callable or {what}, got "
                                f"{type(getattr(self, name)).__name__}")
        if not isinstance(self.idempotent, bool):
            raise UserError(f"tool '{self.name}': idempotent must be a bool, got {type(self.idempotent).__name__}")
        if self.timeout_behavior not in ("error_as_result", "raise_exception"):
            raise UserError(f"tool '{self.name}': timeout_behavior must be 'error_as_result' or "
                            f"'raise_exception', got {described(self.timeout_behavior)}")

    def spec(self) -> dict:
        """The plain-data description a model adapter sends."""
        return tool_spec(self.name, self.description, self.params_json_schema, self.strict_json_schema)


def function_tool(func: Optional[Callable] = None, *, name_override: Optional[str] = None,
                  description_override: Optional[str] = None, docstring_style: Optional[str] = None,
                  use_docstring_info: bool = True,
                  failure_error_function: Optional[Callable] = default_tool_error_function,
                  strict_mode: bool = True, is_enabled: Union[bool, Callable] = True,
                  needs_approval: Union[bool, Callable] = False, tool_input_guardrails: Optional[list] = None,
                  tool_output_guardrails: Optional[list] = None, timeout: Optional[float] = None,
                  timeout_behavior: str = "error_as_result", timeout_error_function: Optional[Callable] = None,
                  idempotent: bool = False):
    """Make a `FunctionTool` from a Python function; use bare (`@function_tool`) or called."""

    def make(fn: Callable) -> FunctionTool:
        schema = function_schema(fn, name_override=name_override, description_override=description_override,
                                 docstring_style=docstring_style, use_docstring_info=use_docstring_info,
                                 strict_json_schema=strict_mode)

        def on_invoke_tool(ctx: ToolContext, raw_args: str) -> Any:
            """The function called with the arguments read from the model's JSON (and the call's context, when its
            first parameter asks for it); an async function's failure comes back as the text the model sees."""
            args, kwargs = call_args(schema._params, parse_arguments(raw_args, schema.name), strict_mode)
            if schema.context_kind:  # a ToolContext is also the RunContextWrapper a tool asked for
                args.insert(0, ctx)
            result = fn(*args, **kwargs)
            return _guarded(tool, ctx, raw_args, result) if inspect.isawaitable(result) else result

        tool = FunctionTool(name=schema.name, description=schema.description,
                            params_json_schema=schema.params_json_schema, on_invoke_tool=on_invoke_tool,
                            strict_json_schema=strict_mode, is_enabled=is_enabled,
                            tool_input_guardrails=tool_input_guardrails,
                            tool_output_guardrails=tool_output_guardrails, needs_approval=needs_approval,
                            timeout_seconds=timeout, timeout_behavior=timeout_behavior,
                            timeout_error_function=timeout_error_function,
                            failure_error_function=failure_error_function, idempotent=idempotent)
        return tool

    return make(func) if func is not None else make


async def _guarded(tool: FunctionTool, ctx: ToolContext, raw_args: str, pending: Any) -> Any:
    """An async tool's coroutine, with its failure turned into the text the model sees (a cancel passes, and what
    `PROPAGATES`)."""
    try:
        return await pending
    except Exception as error:
        return failure_text(tool, ctx, raw_args, error)


CONTENT_PARTS = ("input_text", "input_image", "input_file")  # the Responses API's input content parts


def tool_output(value: Any, tool_name: str) -> Union[str, list]:
    """What the model sees for a tool's return value: content (text, images and files the model reads as such) when
    the value is content parts, or an object that knows its part (`content_part()`), or a list of only those;
    anything else as text (`output_text`). The tool has run: a value that cannot be shown is said to be so, never
    reported as the tool's failure (which would invite the model to run it again). A generator (sync or async), or
    a coroutine an async tool returned unawaited, is a `UserError`, the developer's mistake: the function that made
    it (perhaps behind a decorator, or the upstream shell's wrapper) never ran its body, and the model was told its
    repr; so is a task or future an async tool returned, cancelled with the tool's event loop. The value is checked,
    not the
    function: a decorator may consume a generator, and a `@types.coroutine` one is awaited, as a coroutine is."""
    if isinstance(value, str):  # the common cases
        return clean_text(value)
    if inspect.isgenerator(value) or inspect.isasyncgen(value) or inspect.iscoroutine(value):
        if inspect.iscoroutine(value):
            value.close()  # this error says it: no "never awaited" warning besides
        raise UserError(f"tool '{tool_name}' returned a {type(value).__name__} it never ran: a generator function "
                        "only makes a generator when called (return the values, a list), and a coroutine runs only "
                        "once awaited (await it in the tool)")
    if inspect.isawaitable(value) and not isinstance(value, caller.AlreadyDone):  # what resolve left: a task's
        raise UserError(f"tool '{tool_name}' returned a {type(value).__name__} it never awaited: an async tool's "
                        "event loop ends as it returns, cancelling what it left running (await it in the tool)")
    try:
        if type(value) is int:  # a whole number is its own JSON (a bool is not: it takes the general way)
            return str(value)
        parts = value if isinstance(value, list) else [value]
        if parts and all(callable(getattr(p, "content_part", None)) or isinstance(p, dict) and p.get("type") in
                         CONTENT_PARTS for p in parts):
            return clean_json([p if isinstance(p, dict) else p.content_part() for p in parts])
        return output_text(value)
    except Exception as error:  # an int beyond str()'s digits, a content_part() or __str__ that raises
        warn("a tool returned a %s that cannot be shown as text", type(value).__name__, exc_info=error)
        return f"The tool ran, but its result, of type {type(value).__name__}, cannot be shown as text."


# --- Output conversion ------------------------------------------------------------------------

TO_JSON = json.JSONEncoder(ensure_ascii=False).encode  # made once: `json.dumps` with an option makes one per call


def output_text(value: Any) -> str:
    """What the model sees for a tool's return value: strings as is, JSON for data, else str().

    Upstream sends `str(value)` (a dict becomes its Python repr); JSON is what a model can read back.
    """
    if isinstance(value, str):
        return clean_text(value)
    try:
        return clean_text(TO_JSON(jsonable(value)))
    except (TypeError, ValueError, RecursionError):  # not JSON, or a list or dict that holds itself
        return clean_text(str(value))


# --- Invocation -------------------------------------------------------------------------------


def _call_with_timeout(tool: FunctionTool, ctx: ToolContext, raw_args: str) -> Any:
    """Run the tool; past `timeout_seconds` stop waiting: an async tool is cancelled (its cancel gets a moment to
    land), a sync one is abandoned, still running: the error says so."""
    seconds = tool.timeout_seconds
    join = caller.start_thread(lambda: caller.resolve(tool.on_invoke_tool(ctx, raw_args), timeout=seconds),
                               f"tool-{tool.name}")
    try:
        try:
            return join(seconds)
        except caller.Deadline as late:
            if not late.still_running:
                raise
            return join(CANCEL_GRACE)  # an async tool's cancel lands now; a sync tool still going will not stop
    except caller.Deadline as late:
        raise ToolTimeoutError(tool.name, seconds, late.still_running) from None


def invoke_tool(tool: FunctionTool, ctx: ToolContext, raw_args: str) -> tuple:
    """Run one call and return `(python value, text for the model)`; see the module docstring.

    When the tool did not produce a value (bad arguments, an error, a timeout), the value is the text the model
    sees, so `tool_use_behavior` and run items see what the model saw. An agent tool whose inner run paused raises
    its `NestedInterruption`: the call has no output yet.
    """
    try:
        value = tool._invoke(ctx, raw_args)
        if inspect.isawaitable(value):  # an async tool's coroutine (a `@types.coroutine` generator's too)
            value = caller.resolve(value)
    except caller.Cancelled as stop:  # stopped by a cancel while it ran: it may have done what it does
        stop.started = True
        raise
    except BaseException as error:  # (what PROPAGATES, failure_text raises again)
        text = failure_text(tool, ctx, raw_args, error)
        return text, text
    return value, tool_output(value, tool.name)  # outside the try: a generator's UserError is raised, not told


def failure_text(tool: FunctionTool, ctx: ToolContext, raw_args: str, error: Exception) -> str:
    """The failure policy: the text the model sees for `error`, or `error` re-raised (what `PROPAGATES`, here for a
    sync and an async tool alike). The call's context keeps the error (`ToolContext.failure`), for the run's plugins
    (a trace records it)."""
    if isinstance(error, PROPAGATES):
        raise error
    if isinstance(ctx, ToolContext):
        ctx.failure = error
    if isinstance(error, ArgumentsError):  # the model's mistake: say what to fix
        text = error.message  # parse errors already name the tool and carry a preview
        if not text.startswith("Invalid JSON input for tool"):
            text = f"Invalid JSON input for tool {tool.name}: {text}. Received: {preview(raw_args)}"
        if tool.failure_error_function is None:  # every failure raises, the model's bad arguments too
            raise ModelBehaviorError(text) from error
        return f"{text}\nFix the arguments and call the tool again."
    if isinstance(error, ToolError):  # its message verbatim, as a return value is shown (a lone surrogate repaired)
        return output_text(error.message)
    if isinstance(error, ToolTimeoutError):
        if tool.timeout_behavior == "raise_exception":
            raise error
        if tool.timeout_error_function is not None:
            return output_text(caller.call(tool.timeout_error_function, ctx, error))
        return str(error)
    if tool.failure_error_function is None:
        raise error
    # The model gets the policy's (by default redacted) text; the developer gets the exception, with its trace.
    warn("tool %r failed with %s (the model is told failure_error_function's text)", tool.name,
                   type(error).__name__, exc_info=error)
    return output_text(caller.call(tool.failure_error_function, ctx, error))
