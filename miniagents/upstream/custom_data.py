"""Upstream's custom tool data: `function_tool(custom_data_extractor=...)`.

An extractor gets a `FunctionToolCustomDataContext` once its tool's call has an output, and returns data for the
program (a chart, the rows behind a summary), kept on the call's `ToolCallOutputItem.custom_data` and in RunState
JSON, never sent to the model. The kernel only keeps what a plugin attached to a call; `CustomDataPlugin`, on the
kernel's `invoke` seam, runs the extractor once the call's outcome is recorded, so an extractor that raises fails
the run but never makes the call run again.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .. import caller, seams
from ..context import ToolContext
from ..errors import UserError
from ..items import function_call_output


@dataclass(frozen=True)
class FunctionToolCustomDataContext:
    """What a `custom_data_extractor` receives once its tool's call has an output: the call's `ToolContext`, the
    tool, the value it returned and `raw_item`, the `function_call_output` item the model will see."""

    tool_context: ToolContext
    tool: Any
    output: Any
    raw_item: dict


FunctionToolCustomDataExtractor = Callable[[FunctionToolCustomDataContext], Any]  # returns a mapping, None, or an
# awaitable of one


def with_extractor(tool: Any, extractor: Optional[FunctionToolCustomDataExtractor]) -> Any:
    """`tool` (a kernel `FunctionTool`) with its `custom_data_extractor` set (None: it has none). One that cannot
    be called is refused here: it was a bare TypeError when the tool's first call had run."""
    if extractor is not None and not callable(extractor):
        raise UserError(f"custom_data_extractor must be a callable or None, got {type(extractor).__name__}")
    tool.custom_data_extractor = extractor
    return tool


def extract_custom_data(tool: Any, tool_context: ToolContext, value: Any, raw_item: dict) -> Optional[dict]:
    """`custom_data_extractor`'s mapping for one call, as `ToolCallOutputItem.custom_data`. What it returns must be
    a mapping with string keys that JSON can hold (a copy is kept); None or an empty mapping: no custom data."""
    extractor = getattr(tool, "custom_data_extractor", None)
    if extractor is None:
        return None
    data = caller.call(extractor, FunctionToolCustomDataContext(tool_context, tool, value, dict(raw_item)))
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise UserError("custom_data_extractor must return a mapping or None.")
    if not all(isinstance(key, str) for key in data):
        raise UserError("custom_data_extractor must return a mapping with string keys.")
    try:
        return json.loads(json.dumps(dict(data), allow_nan=False)) or None
    except (TypeError, ValueError, RecursionError) as error:  # nested deeper than the encoder recurses: refused too
        raise UserError("custom_data_extractor must return JSON-compatible data.") from error


class CustomDataPlugin(seams.Plugin):
    """Runs a tool's `custom_data_extractor` on each output of a call that ran (see the module)."""

    def invoke(self, run: Any, invoke: Any) -> Any:
        def invoke_extracting(run: Any, turn: Any, call: Any, ctx: Any) -> tuple:
            value, text = invoke(run, turn, call, ctx)
            extractor = getattr(call.target, "custom_data_extractor", None)
            if text is not None and call.fate == "run" and extractor is not None:
                try:
                    call.custom_data = extract_custom_data(call.target, ctx, value,
                                                           function_call_output(call.call_id, text))
                except caller.Cancelled:  # the call ran: the run stops at its next step, its output kept
                    pass
            return value, text
        return invoke_extracting


PLUGIN = CustomDataPlugin()  # the one the package registers: importlib.reload of the package registers it again, once
