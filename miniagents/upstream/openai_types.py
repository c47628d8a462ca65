"""Stand-ins for the openai package's response types, for upstream programs run where openai is not installed.

Streaming code written for upstream tests events with `isinstance(event.data, ResponseTextDeltaEvent)`, and
tests build items with `ResponseOutputMessage(...)`. miniagents' events and items are dicts, so each
stand-in class answers `isinstance` by the dict's `type` field (`"response.output_text.delta"`), and
calling one builds such a dict (a `RawItem`, readable by attribute), with its `type` filled in.

`install()` (called by `python -m miniagents.upstream`) serves `openai.types` and every module below it
from these classes, and only when the real package cannot be imported: where openai is installed, its own
pydantic classes are used and an `isinstance` test against them is False for miniagents' dict events (test
`event.data.type` instead). The stand-in `openai` holds nothing but `types`, and says so where feature detection
looks: `hasattr(openai, "AsyncOpenAI")` is False, and `from openai import AsyncOpenAI` or any `openai.<path>` but
`openai.types` raises the `ModuleNotFoundError` (name `"openai"`) that a missing openai package raises, saying a
client still needs the real package.
"""
from __future__ import annotations

import importlib.util
import sys
import types
from importlib.machinery import ModuleSpec

from .raw_items import RawItem

MISSING = "only miniagents' stand-in for openai.types is here: install the openai package for its client"

# Class name -> the `type` value of the dicts it stands for. The `...Param` forms have the same type.
TYPE_OF = {
    "ResponseTextDeltaEvent": "response.output_text.delta", "ResponseTextDoneEvent": "response.output_text.done",
    "ResponseContentPartAddedEvent": "response.content_part.added",
    "ResponseContentPartDoneEvent": "response.content_part.done",
    "ResponseOutputItemAddedEvent": "response.output_item.added",
    "ResponseOutputItemDoneEvent": "response.output_item.done",
    "ResponseCreatedEvent": "response.created", "ResponseInProgressEvent": "response.in_progress",
    "ResponseCompletedEvent": "response.completed", "ResponseFailedEvent": "response.failed",
    "ResponseIncompleteEvent": "response.incomplete", "ResponseErrorEvent": "error",
    "ResponseFunctionCallArgumentsDeltaEvent": "response.function_call_arguments.delta",
    "ResponseFunctionCallArgumentsDoneEvent": "response.function_call_arguments.done",
    "ResponseRefusalDeltaEvent": "response.refusal.delta", "ResponseRefusalDoneEvent": "response.refusal.done",
    "ResponseOutputTextAnnotationAddedEvent": "response.output_text.annotation.added",
    "ResponseReasoningSummaryPartAddedEvent": "response.reasoning_summary_part.added",
    "ResponseReasoningSummaryPartDoneEvent": "response.reasoning_summary_part.done",
    "ResponseReasoningSummaryTextDeltaEvent": "response.reasoning_summary_text.delta",
    "ResponseReasoningSummaryTextDoneEvent": "response.reasoning_summary_text.done",
    "ResponseReasoningTextDeltaEvent": "response.reasoning_text.delta",
    "ResponseReasoningTextDoneEvent": "response.reasoning_text.done",
    "ResponseOutputMessage": "message", "ResponseOutputText": "output_text", "ResponseOutputRefusal": "refusal",
    "ResponseInputText": "input_text", "ResponseInputImage": "input_image", "ResponseInputFile": "input_file",
    "ResponseFunctionToolCall": "function_call", "FunctionCallOutput": "function_call_output",
    "ResponseFunctionToolCallOutputItem": "function_call_output",
    "ResponseReasoningItem": "reasoning", "Summary": "summary_text", "Content": "reasoning_text",
    "ResponseFunctionWebSearch": "web_search_call", "ResponseFileSearchToolCall": "file_search_call",
    "ResponseCodeInterpreterToolCall": "code_interpreter_call", "ImageGenerationCall": "image_generation_call",
    "McpCall": "mcp_call", "McpListTools": "mcp_list_tools", "McpApprovalRequest": "mcp_approval_request",
    "ResponseComputerToolCall": "computer_call", "ResponseCustomToolCall": "custom_tool_call",
    "EasyInputMessage": "message",
}


class _StandInType(type):
    """`isinstance(value, Cls)`: value is one of Cls's dicts, or any mapping whose `type` is Cls's type."""

    def __instancecheck__(cls, value):
        if type.__instancecheck__(cls, value):
            return True
        kind = cls.__dict__.get("TYPE")
        return kind is not None and isinstance(value, dict) and value.get("type") == kind


class StandIn(RawItem, metaclass=_StandInType):
    """Base of the stand-in classes: a dict built from keyword arguments, its `type` filled in."""

    __slots__ = ()
    TYPE = None

    def __init__(self, *args, **fields):
        super().__init__(*args, **fields)
        if self.TYPE is not None:
            self.setdefault("type", self.TYPE)

    def model_dump(self, **options) -> dict:
        """A plain copy (pydantic's name, which miniagents also reads)."""
        return dict(self)

    @classmethod
    def model_validate(cls, data: dict) -> "StandIn":
        """One of these dicts from `data` (pydantic's name; nothing is checked)."""
        return cls(data)

    @classmethod
    def model_construct(cls, **fields) -> "StandIn":
        return cls(**fields)


_classes: dict = {}


def stand_in(name: str) -> type:
    """The stand-in class called `name` (one per name, made when first asked for)."""
    if name not in _classes:
        base = name[:-len("Param")] if name.endswith("Param") else name
        _classes[name] = _StandInType(name, (StandIn,), {"__slots__": (), "TYPE": TYPE_OF.get(base),
                                                          "__module__": "openai.types"})
    return _classes[name]


class _StandInModule(types.ModuleType):
    """`openai.types` and the modules below it: any capitalised name is a stand-in class."""

    def __getattr__(self, name: str):
        if name[:1].isupper():
            return stand_in(name)
        raise AttributeError(f"module {self.__name__!r} (miniagents' stand-in for the openai package) "
                             f"has no attribute {name!r}")


class _OpenAIModule(types.ModuleType):
    """The stand-in `openai`: `types` (imported on first read, as the real package imports it), nothing else."""

    def __getattr__(self, name: str):
        if name == "types":
            return importlib.import_module("openai.types")
        raise AttributeError(f"module 'openai' has no attribute {name!r} ({MISSING})")


class _StandInFinder:
    """Serves `openai` and `openai.types[.<path>]`; any other `openai.<path>` is refused with the reason.

    The refusal is raised here, not left to the import system: `from openai import AsyncOpenAI` imports
    `openai.AsyncOpenAI` and would otherwise end in "cannot import name ... (unknown location)".
    """

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if fullname == "openai" or fullname == "openai.types" or fullname.startswith("openai.types."):
            return ModuleSpec(fullname, _StandInFinder, is_package=True)
        if fullname.startswith("openai."):
            raise ModuleNotFoundError(f"cannot import {fullname!r} ({MISSING})", name="openai")
        return None

    @staticmethod
    def create_module(spec):
        return (_OpenAIModule if spec.name == "openai" else _StandInModule)(spec.name, "miniagents' stand-in")

    @staticmethod
    def exec_module(module):
        return None


def installed() -> bool:
    """True when the stand-ins serve `openai` (it was not importable when `install` ran)."""
    return _StandInFinder in sys.meta_path


def install(check: bool = True) -> None:
    """Serve `openai.types...` from the stand-ins, unless (with `check`) the real openai package can be imported.

    The finder goes first on `sys.meta_path`. A process started by a program the runner runs, where the runner
    served the stand-ins, calls this with no check: a check would find the `openai` module the runner put on its
    `sys.path` for it, which the finder, being first, hides from then on.
    """
    if not installed() and not (check and ("openai" in sys.modules or importlib.util.find_spec("openai"))):
        sys.meta_path.insert(0, _StandInFinder)
