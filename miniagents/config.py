"""What a run is configured with: `RunConfig`, and the plain data its callbacks receive and return.

Nothing here runs anything; the loop (run.py) reads these. Tracing stays in the process: spans go to the
processors you registered, or to `trace_path` (JSON lines); nothing is ever sent anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, List, Literal, Optional, TypedDict, Union

from .context import TContext
from .errors import UserError
from .items import TResponseInputItem
from .models.interface import ModelSettings

# Upstream's type names for RunConfig's choices and callbacks (a callback may also return an awaitable).
ToolNotFoundBehavior = Literal["raise_error", "return_error_to_model"]
ReasoningItemIdPolicy = Literal["preserve", "omit"]
ToolNameCollisionPolicy = Literal["warn", "error"]
ToolChoice = Union[Literal["auto", "required", "none"], str, None]


@dataclass
class ToolExecutionConfig:
    """Upstream's `RunConfig.tool_execution`; its limit becomes `RunConfig.max_function_tool_concurrency`.
    Pre-approval tool guardrails are refused: ours run after approval."""

    max_function_tool_concurrency: Optional[int] = None
    pre_approval_tool_input_guardrails: bool = False


@dataclass(eq=False)
class RunConfig:
    """Settings for one run. Tracing (`tracing_disabled`, `trace_include_sensitive_data`, `workflow_name`,
    `trace_id`, `group_id`, `trace_metadata`, `trace_path`) stays in the process: see miniagents.tracing."""

    model: Any = None
    model_provider: Any = None
    model_settings: Optional[ModelSettings] = None
    handoff_input_filter: Optional[Callable] = None
    input_guardrails: Optional[list] = None
    output_guardrails: Optional[list] = None
    session_input_callback: Optional[Callable] = None
    call_model_input_filter: Optional[Callable] = None
    tool_error_formatter: Optional[Callable] = None
    session_settings: Any = None
    reasoning_item_id_policy: Optional[str] = None
    tool_execution: Optional[ToolExecutionConfig] = None
    # Upstream raises by default; a model's typo should not end a run and lose its work, so the model is told.
    tool_not_found_behavior: str = "return_error_to_model"
    tool_name_collision_policy: str = "warn"
    max_function_tool_concurrency: Optional[int] = None
    workflow_name: str = "Agent workflow"
    trace_id: Optional[str] = None
    group_id: Optional[str] = None
    trace_metadata: Optional[dict] = None
    tracing_disabled: bool = False
    trace_include_sensitive_data: bool = True
    trace_path: Optional[str] = None  # write this run's trace as JSON lines (MINIAGENTS_TRACE does the same)

    def __post_init__(self):
        if isinstance(self.model_settings, dict):  # upstream takes the settings as a dict too
            self.model_settings = ModelSettings(**self.model_settings)
        if self.tool_not_found_behavior not in ("raise_error", "return_error_to_model"):
            raise UserError(f"Invalid tool_not_found_behavior: {self.tool_not_found_behavior!r}")
        if self.tool_name_collision_policy not in ("warn", "error"):
            raise UserError(f"Invalid tool_name_collision_policy: {self.tool_name_collision_policy!r}")
        if self.reasoning_item_id_policy not in (None, "preserve", "omit"):
            raise UserError(f"Invalid reasoning_item_id_policy: {self.reasoning_item_id_policy!r}")
        if self.tool_execution is not None and self.tool_execution.pre_approval_tool_input_guardrails:
            raise UserError("pre_approval_tool_input_guardrails=True is not supported: tool input guardrails "
                            "run after approval, just before the tool")
        if self.max_function_tool_concurrency is None and self.tool_execution is not None:
            self.max_function_tool_concurrency = self.tool_execution.max_function_tool_concurrency


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
class RunErrorData:
    """The run so far, as an error handler sees it: the original input, every item generated (this turn's
    included), the transcript, this turn's raw output items, the model responses and the failing agent."""

    input: Any
    new_items: list
    history: list
    output: list
    raw_responses: list
    last_agent: Any


@dataclass(eq=False)
class RunErrorHandlerInput(Generic[TContext]):
    """What a handler in `error_handlers={kind: handler}` receives; the kinds are "max_turns", "model_refusal"
    and "invalid_final_output". A handler that returns None lets `error` raise."""

    error: Exception
    context: Any
    run_data: RunErrorData


@dataclass
class RunErrorHandlerResult:
    """A handler's answer: `final_output` ends the run (parsed into the agent's `output_type`) and, with
    `include_in_history`, is also recorded as an assistant message. A bare value or such a dict also works."""

    final_output: Any
    include_in_history: bool = True


ToolErrorFormatter = Callable[[ToolErrorFormatterArgs], Union[Optional[str], Awaitable[Optional[str]]]]
CallModelInputFilter = Callable[[CallModelData], Union[ModelInputData, Awaitable[ModelInputData]]]
SessionInputCallback = Callable[[List[TResponseInputItem], List[TResponseInputItem]],
                                Union[List[TResponseInputItem], Awaitable[List[TResponseInputItem]]]]
# A handler returns a RunErrorHandlerResult, a dict of its fields, a raw final output, or None (re-raise).
RunErrorHandler = Callable[[RunErrorHandlerInput], Any]
RunErrorHandlers = TypedDict("RunErrorHandlers", {"max_turns": RunErrorHandler, "model_refusal": RunErrorHandler,
                                                  "invalid_final_output": RunErrorHandler}, total=False)
