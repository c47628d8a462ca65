"""Handoffs: a tool call that gives the conversation to another agent.

`handoff(agent, ...)` builds a `Handoff`, the data the loop needs: the tool name the model sees
(`transfer_to_<agent>`), its schema, what to call when the model takes it, and how to filter the
history the next agent sees (`HandoffInputData`). The switch itself happens in run.py.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Optional, Union

from . import caller
from .context import TContext
from .errors import ModelBehaviorError, UserError
from .items import described, preview
from .schema import (SpecReads, check_tool_name, ensure_strict_json_schema, tool_name_from, tool_spec,
                     type_schema)
from .validate import validate_value


@dataclass(frozen=True)
class HandoffInputData:
    """What an input filter receives and returns: the history before the run, the items generated
    before this turn, and this turn's items; `input_items`, when a filter sets them, are what the next agent is
    given in place of this turn's items (run.filter_history)."""

    input_history: Any
    pre_handoff_items: tuple
    new_items: tuple
    run_context: Any = None
    input_items: Optional[tuple] = None

    def clone(self, **kwargs: Any) -> "HandoffInputData":
        return dataclasses.replace(self, **kwargs)


HandoffInputFilter = Callable[[HandoffInputData], Union[HandoffInputData, Awaitable[HandoffInputData]]]


@dataclass(eq=False)
class Handoff(SpecReads, Generic[TContext]):
    """What `handoff()` builds: the function the model sees (`tool_name`, `tool_description`,
    `input_json_schema`) and `on_invoke_handoff(ctx, raw_args)`, which returns the agent to switch to."""

    tool_name: str
    tool_description: str
    input_json_schema: dict
    on_invoke_handoff: Callable[[Any, str], Any]
    agent_name: str
    input_filter: Optional[Callable] = None
    nest_handoff_history: Optional[bool] = None
    strict_json_schema: bool = True
    is_enabled: Union[bool, Callable] = True
    _agent: Any = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self):
        """A handoff built by hand is checked where it is made, as `handoff()`'s arguments are."""
        for name, plain, what in (("on_invoke_handoff", (), ""), ("is_enabled", bool, " or a bool"),
                                  ("input_filter", type(None), " or None")):
            if not callable(getattr(self, name)) and not isinstance(getattr(self, name), plain):
                raise UserError(f"Handoff {self.tool_name!r}: {name} must be a callable{what}, got "
                                f"{type(getattr(self, name)).__name__}")

    @property
    def name(self) -> str:
        """The tool name the model calls it by (as a function tool's `name`)."""
        return self.tool_name

    def get_transfer_message(self, agent: Any) -> str:
        return json.dumps({"assistant": agent.name})

    @classmethod
    def default_tool_name(cls, agent: Any) -> str:
        return "transfer_to_" + tool_name_from(agent.name)

    @classmethod
    def default_tool_description(cls, agent: Any) -> str:
        return f"Handoff to the {agent.name} agent to handle the request. {agent.handoff_description or ''}"

    def spec(self) -> dict:
        """The plain-data description a model adapter sends (a handoff is a function to the model)."""
        return tool_spec(self.tool_name, self.tool_description, self.input_json_schema, self.strict_json_schema)


def handoff(agent: Any, tool_name_override: Optional[str] = None,
            tool_description_override: Optional[str] = None, on_handoff: Optional[Callable] = None,
            input_type: Any = None, input_filter: Optional[Callable] = None,
            nest_handoff_history: Optional[bool] = None, is_enabled: Union[bool, Callable] = True) -> Handoff:
    """Describe a handoff to `agent`; `on_handoff(ctx[, input])` runs when the model takes it."""
    if not isinstance(getattr(agent, "name", None), str):  # not an Agent: else a bare AttributeError reading it
        raise UserError(f"handoff() takes the Agent to hand off to, got {type(agent).__name__}")
    if input_type is not None and on_handoff is None:
        raise UserError("You must provide on_handoff when input_type is provided")
    if on_handoff is not None:
        if not callable(on_handoff):
            raise UserError("on_handoff must be callable")
        if input_type is not None and caller.arity(on_handoff) != 2:
            raise UserError("on_handoff must take two arguments: context and input")
        if input_type is None and caller.arity(on_handoff) != 1:
            raise UserError("on_handoff must take one argument: context")
    if nest_handoff_history:
        raise UserError("nest_handoff_history=True is not supported by miniagents; use an input_filter to "
                        "reshape the history the next agent sees")
    if input_filter is not None and not callable(input_filter):
        raise UserError(f"Invalid input filter: {described(input_filter)}")

    if input_type is not None:
        schema, wrapped = type_schema(input_type, strict=True)
    else:
        schema, wrapped = ensure_strict_json_schema({}), False

    def on_invoke_handoff(ctx: Any, raw_args: str) -> Any:
        if input_type is not None:
            try:
                data = json.loads(raw_args or "null")
            except (ValueError, RecursionError):
                raise ModelBehaviorError(f"Invalid JSON input for handoff {name}: {preview(raw_args)!r}") from None
            if data is None:
                raise ModelBehaviorError("Handoff function expected non-null input, but got None")
            if wrapped:  # sent as {"response": value}: a bare value is the model's mistake, said as such
                if not isinstance(data, dict) or "response" not in data:
                    raise ModelBehaviorError(f"Invalid JSON input for handoff {name}: expected an object with a "
                                             f"'response' key, got {preview(raw_args)!r}")
                data = data["response"]
            caller.call(on_handoff, ctx, validate_value(input_type, data))
        elif on_handoff is not None:
            caller.call(on_handoff, ctx)
        return agent

    name = check_tool_name(tool_name_override or Handoff.default_tool_name(agent))
    return Handoff(tool_name=name,
                   tool_description=tool_description_override or Handoff.default_tool_description(agent),
                   input_json_schema=schema, on_invoke_handoff=on_invoke_handoff, agent_name=agent.name,
                   input_filter=input_filter, nest_handoff_history=nest_handoff_history,
                   is_enabled=is_enabled, _agent=agent)
