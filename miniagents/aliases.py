"""Upstream's type aliases, for code that annotates with them: each names what miniagents passes there.

Transcript items, output items and raw stream events are plain JSON-ready dicts in miniagents, so the
three `TResponse…` aliases are `Dict[str, Any]` (upstream: the openai package's typed dicts and models).
Callback aliases accept a value or an awaitable of it, as upstream's do. Nothing here is used by the
kernel; the package serves these names lazily (miniagents/compat.py), so `import miniagents` never
loads this module.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Literal, Optional, TypedDict, TypeVar, Union

from . import (AgentUpdatedStreamEvent, CallModelData, FunctionTool, FunctionToolResult, HandoffInputData,
               ModelInputData, RawResponsesStreamEvent, RunContextWrapper, RunErrorHandlerInput, RunItemStreamEvent,
               ToolErrorFormatterArgs, ToolsToFinalOutputResult)

_T = TypeVar("_T")
MaybeAwaitable = Union[_T, Awaitable[_T]]

TResponseInputItem = Dict[str, Any]
TResponseOutputItem = Dict[str, Any]
TResponseStreamEvent = Dict[str, Any]
TContext = RunContextWrapper.__parameters__[0]  # the one type variable RunContextWrapper[...] takes

Tool = FunctionTool  # upstream: the union of every tool class; FunctionTool is the one miniagents runs
StreamEvent = Union[RawResponsesStreamEvent, RunItemStreamEvent, AgentUpdatedStreamEvent]
ToolsToFinalOutputFunction = Callable[[RunContextWrapper, List[FunctionToolResult]],
                                      MaybeAwaitable[ToolsToFinalOutputResult]]
HandoffInputFilter = Callable[[HandoffInputData], MaybeAwaitable[HandoffInputData]]
CallModelInputFilter = Callable[[CallModelData], MaybeAwaitable[ModelInputData]]
SessionInputCallback = Callable[[List[TResponseInputItem], List[TResponseInputItem]],
                                MaybeAwaitable[List[TResponseInputItem]]]
ToolErrorFormatter = Callable[[ToolErrorFormatterArgs], MaybeAwaitable[Optional[str]]]
# A handler returns a RunErrorHandlerResult, a dict of its fields, a raw final output, or None (re-raise).
RunErrorHandler = Callable[[RunErrorHandlerInput], MaybeAwaitable[Any]]
RunErrorHandlers = TypedDict("RunErrorHandlers", {"max_turns": RunErrorHandler, "model_refusal": RunErrorHandler,
                                                  "invalid_final_output": RunErrorHandler}, total=False)

ToolNotFoundBehavior = Literal["raise_error", "return_error_to_model"]
ReasoningItemIdPolicy = Literal["preserve", "omit"]
ToolNameCollisionPolicy = Literal["warn", "error"]
ToolChoice = Union[Literal["auto", "required", "none"], str, None]
