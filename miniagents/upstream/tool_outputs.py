"""Upstream's structured tool outputs, and its `function_tool`, which reads their dict forms.

A tool written for upstream may return `ToolOutputText`, `ToolOutputImage`, `ToolOutputFileContent` (or a dict
of one, with its `type`), or a list of them; the model then reads text, images and files as content. The kernel
sends a value that knows its content part (`content_part()`) as content, so these classes have one, and this
shell's `function_tool` makes the dict forms these objects. `invoke_function_tool` runs one call as a run does.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, TypedDict

from .. import caller
from ..tool import function_tool as kernel_function_tool, invoke_tool
from . import refuse_left_out_keywords
from .custom_data import with_extractor


@dataclass
class ToolOutputText:
    """Return it from a tool to send the model text as a content part."""

    text: str
    type: Literal["text"] = "text"

    def content_part(self) -> dict:
        return {"type": "input_text", "text": self.text}


@dataclass
class ToolOutputImage:
    """Return it from a tool to show the model an image: `image_url` (a URL or data URL) or `file_id`."""

    image_url: Optional[str] = None
    file_id: Optional[str] = None
    detail: Optional[Literal["low", "high", "auto"]] = None
    type: Literal["image"] = "image"

    def __post_init__(self):
        if self.image_url is None and self.file_id is None:
            raise ValueError("At least one of image_url or file_id must be provided")

    def content_part(self) -> dict:
        return _part("input_image", self)


@dataclass
class ToolOutputFileContent:
    """Return it from a tool to give the model a file: `file_data` (base64), `file_url` or `file_id`."""

    file_data: Optional[str] = None
    file_url: Optional[str] = None
    file_id: Optional[str] = None
    filename: Optional[str] = None
    type: Literal["file"] = "file"

    def __post_init__(self):
        if self.file_data is None and self.file_url is None and self.file_id is None:
            raise ValueError("At least one of file_data, file_url, or file_id must be provided")

    def content_part(self) -> dict:
        return _part("input_file", self)


def _part(kind: str, output: Any) -> dict:
    """One structured output as the Responses API's content part (only the fields that are set)."""
    return {"type": kind, **{n: getattr(output, n) for n in _FIELDS[output.type] if getattr(output, n) is not None}}


class ToolOutputTextDict(TypedDict, total=False):
    type: Literal["text"]
    text: str


class ToolOutputImageDict(TypedDict, total=False):
    type: Literal["image"]
    image_url: str
    file_id: str
    detail: Literal["low", "high", "auto"]


class ToolOutputFileContentDict(TypedDict, total=False):
    type: Literal["file"]
    file_data: str
    file_url: str
    file_id: str
    filename: str


_CLASSES = {"text": ToolOutputText, "image": ToolOutputImage, "file": ToolOutputFileContent}
_FIELDS = {"text": ("text",), "image": ("image_url", "file_id", "detail"),
           "file": ("file_data", "file_url", "file_id", "filename")}


def _structured(value: Any) -> Optional[Any]:
    """`value` as a ToolOutput* object: itself, or a dict of one (with its `type`), else None."""
    if isinstance(value, tuple(_CLASSES.values())):
        return value
    if not isinstance(value, dict) or value.get("type") not in _CLASSES:
        return None
    fields = {name: value.get(name) for name in _FIELDS[value["type"]]}
    if any(v is not None and not isinstance(v, str) for v in fields.values()):
        return None
    try:
        return _CLASSES[value["type"]](**fields)
    except (TypeError, ValueError):  # a missing text, or none of its sources given
        return None


def structured(value: Any) -> Any:
    """A structured output's dict form (or a list of only structured outputs) as their objects; anything else as
    it is."""
    values = value if isinstance(value, (list, tuple)) else [value]
    found = [_structured(v) for v in values]
    if not found or any(s is None for s in found):
        return value
    return found if isinstance(value, (list, tuple)) else found[0]


def function_tool(func: Optional[Callable] = None, **options: Any) -> Any:
    """The kernel's `function_tool` (same options), for a function whose structured outputs the model reads as
    content, with upstream's `custom_data_extractor` (custom_data.py). `defer_loading=True` (upstream: load the tool
    through the Responses API's tool search, which miniagents leaves out) warns, and the tool is sent with every
    request like any other. Upstream's options of a left-out feature (`allowed_callers`) are refused, named."""
    refuse_left_out_keywords("function_tool", options)
    extractor = options.pop("custom_data_extractor", None)
    if options.pop("defer_loading", False):
        warnings.warn("function_tool(defer_loading=True): miniagents has no tool search, so the tool is sent with "
                      "every request", UserWarning, stacklevel=2)

    def make(fn: Callable) -> Any:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def reading(*args: Any, **kwargs: Any) -> Any:
                return structured(await fn(*args, **kwargs))
        else:
            @functools.wraps(fn)
            def reading(*args: Any, **kwargs: Any) -> Any:
                return structured(fn(*args, **kwargs))
        return with_extractor(kernel_function_tool(reading, **options), extractor)

    return make(func) if func is not None else make


tool = function_tool  # upstream's `agents.decorators.tool`


def invoke_function_tool(*, function_tool: Any, context: Any, arguments: str) -> Any:
    """Run one call of `function_tool` as a run does (its timeout and failure policy included), as something to
    await, as upstream's: its `.value` for synchronous code."""
    value, _ = invoke_tool(function_tool, context, arguments)
    return caller.Ready(value)
