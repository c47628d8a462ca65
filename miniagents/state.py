"""`RunState`: everything a run changes, in one object that becomes JSON and comes back.

The loop (run.py) reads and writes only this object, so a run paused for approval is this object
written out. Approve or reject its interruptions, then pass it back to `Runner.run_sync(agent, state)`.
Loading never executes code and does no I/O: agents, tools and handoffs are looked up by name in the
agent graph the caller passes, and every malformed part is a `UserError` that names it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .context import RunContextWrapper, Usage
from .errors import UserError
from .items import (HandoffCallItem, HandoffOutputItem, MessageOutputItem, ReasoningItem, ToolApprovalItem,
                    ToolCallItem, ToolCallOutputItem, drop_orphans, to_input_list)
from .models.interface import ModelResponse


@dataclass
class PendingTurn:
    """A turn whose model response is in but whose calls are not all settled (paused for approval).

    `output` is the response's items; `start` is where the turn's items begin in `generated_items`;
    `done` maps call ids that already have an output to `(python value, text)`.
    """

    agent_name: str
    output: list
    start: int
    done: dict = field(default_factory=dict)
    session_input: list = field(default_factory=list)
    nested: dict = field(default_factory=dict)  # call id -> paused RunState of an agent-as-tool


class RunState:
    def __init__(self, context: Any, original_input: Any, starting_agent: Any, max_turns: Optional[int] = 10,
                 *, conversation_id: Optional[str] = None, previous_response_id: Optional[str] = None,
                 auto_previous_response_id: bool = False):
        self.context_wrapper = context if isinstance(context, RunContextWrapper) else RunContextWrapper(context)
        self.original_input = original_input
        self.starting_agent = starting_agent
        self.current_agent = starting_agent
        self.max_turns = max_turns
        self.conversation_id = conversation_id
        self.previous_response_id = previous_response_id
        self.auto_previous_response_id = auto_previous_response_id
        self.current_turn = 0
        self.generated_items: list = []
        self.model_responses: list = []
        self.pending: Optional[PendingTurn] = None
        self.agents_that_used_tools: set = set()
        self.input_guardrail_results: list = []
        self.output_guardrail_results: list = []
        self.tool_input_guardrail_results: list = []
        self.tool_output_guardrail_results: list = []
        self.final_output: Any = None
        self.transcript: list = []
        self.unsaved_session_input: list = []  # the new input, saved with the first completed turn
        self.rebuild_transcript()

    def rebuild_transcript(self) -> None:
        """The model's view: the input, then every settled transcript item, checked for pairing."""
        generated = [i.raw_item for i in self.generated_items[: self._settled_end()]
                     if not isinstance(i, ToolApprovalItem)]
        self.transcript = drop_orphans(to_input_list(self.original_input) + generated)

    def _settled_end(self) -> int:
        return self.pending.start if self.pending is not None else len(self.generated_items)

    # --- Approvals -------------------------------------------------------------------------

    def get_interruptions(self) -> list:
        return [i for i in self.generated_items if isinstance(i, ToolApprovalItem)] if self.pending else []

    def approve(self, item: ToolApprovalItem, always_approve: bool = False) -> None:
        self.context_wrapper.approve_tool(item, always_approve=always_approve)

    def reject(self, item: ToolApprovalItem, always_reject: bool = False, *,
               rejection_message: Optional[str] = None) -> None:
        self.context_wrapper.reject_tool(item, always_reject=always_reject, rejection_message=rejection_message)

    # --- JSON --------------------------------------------------------------------------------

    def to_json(self, *, context_serializer: Optional[Callable] = None) -> dict:
        """The state as a JSON-ready dict (see `SCHEMA_VERSIONS` and `dump_state`)."""
        return dump_state(self, context_serializer)

    def to_string(self, *, context_serializer: Optional[Callable] = None) -> str:
        return json.dumps(self.to_json(context_serializer=context_serializer), ensure_ascii=False, indent=2)

    @staticmethod
    def from_json(initial_agent: Any, data: Any, *, context_override: Any = None,
                  context_deserializer: Optional[Callable] = None) -> "RunState":
        """Load a state; agents are re-bound by name from `initial_agent`'s graph. Synchronous here
        (upstream's is a coroutine); the returned state may also be awaited, for ported code."""
        return load_state(initial_agent, data, context_override, context_deserializer)

    @staticmethod
    def from_string(initial_agent: Any, text: str, *, context_override: Any = None,
                    context_deserializer: Optional[Callable] = None) -> "RunState":
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as e:
            raise UserError(f"Failed to parse run state JSON: {e}") from None
        return RunState.from_json(initial_agent, data, context_override=context_override,
                                  context_deserializer=context_deserializer)

    def __await__(self):
        """`await RunState.from_string(...)` works as upstream's coroutine did; it is already loaded."""
        if False:  # pragma: no cover - makes this a generator
            yield
        return self


# --- The JSON document ------------------------------------------------------------------------

SCHEMA_VERSION = 1
SCHEMA_VERSIONS = {
    1: "first release: agents by name, input, generated items, model responses, the paused turn "
       "(response, settled outputs, nested agent-tool states), approvals, usage, JSON context",
}
ITEM_CLASSES = {cls.__dataclass_fields__["type"].default: cls
                for cls in (MessageOutputItem, ReasoningItem, ToolCallItem, ToolCallOutputItem, HandoffCallItem,
                            HandoffOutputItem, ToolApprovalItem)}


def _json_path_error(value: Any, path: str = "context") -> Optional[str]:
    """The first key path in `value` that JSON cannot hold, or None."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            if not isinstance(key, str):
                return f"{path}[{key!r}] (non-string key)"
            found = _json_path_error(inner, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, inner in enumerate(value):
            found = _json_path_error(inner, f"{path}[{index}]")
            if found:
                return found
        return None
    return f"{path} ({type(value).__name__})"


def _dump_item(item: Any) -> dict:
    data = {"type": item.type, "agent": item.agent.name, "raw_item": dict(item.raw_item)}
    if isinstance(item, HandoffOutputItem):
        data["source_agent"], data["target_agent"] = item.source_agent.name, item.target_agent.name
    if isinstance(item, ToolApprovalItem):
        data["tool_name"] = item.tool_name
    return data


def dump_state(state: RunState, context_serializer: Optional[Callable]) -> dict:
    ctx = state.context_wrapper
    context = context_serializer(ctx.context) if context_serializer else ctx.context
    bad = _json_path_error(context)
    if bad:
        raise TypeError(f"run context is not JSON-serialisable at {bad}; pass context_serializer= "
                        "(and context_deserializer= when loading)")
    pending = state.pending
    return {
        "schema_version": SCHEMA_VERSION,
        "current_turn": state.current_turn,
        "max_turns": state.max_turns,
        "starting_agent": state.starting_agent.name,
        "current_agent": state.current_agent.name,
        "original_input": state.original_input,
        "generated_items": [_dump_item(i) for i in state.generated_items],
        "model_responses": [{"output": r.output, "usage": r.usage.to_json(), "response_id": r.response_id,
                             "request_id": r.request_id} for r in state.model_responses],
        "pending_turn": None if pending is None else {
            "agent": pending.agent_name, "output": pending.output, "start": pending.start,
            "done": {call_id: text for call_id, (_, text) in pending.done.items()},
            "session_input": pending.session_input,
            "nested": {call_id: dump_state(nested, context_serializer) for call_id, nested in pending.nested.items()},
        },
        "context": {"usage": ctx.usage.to_json(), "approvals": ctx.approvals, "context": context},
        "agents_that_used_tools": sorted(state.agents_that_used_tools),
        "unsaved_session_input": state.unsaved_session_input,
        "conversation_id": state.conversation_id,
        "previous_response_id": state.previous_response_id,
        "auto_previous_response_id": state.auto_previous_response_id,
    }


def agent_map(initial_agent: Any) -> dict:
    """Every agent reachable through handoffs and agents-as-tools, by name; two with one name is an error."""
    found, queue = {}, [initial_agent]
    while queue:
        agent = queue.pop(0)
        if agent.name in found:
            if found[agent.name] is not agent:
                raise UserError(f"two different agents are named {agent.name!r} in this agent graph; "
                                "RunState binds agents by name, so names must be unique")
            continue
        found[agent.name] = agent
        queue.extend(getattr(h, "_agent", h) for h in agent.handoffs)
        queue.extend(t._agent for t in agent.tools if getattr(t, "_agent", None) is not None)
    return found


class _Reader:
    """Typed access to the document: every missing or mistyped field is a UserError naming it."""

    def __init__(self, agents: dict):
        self.agents = agents

    def get(self, data: Any, key: str, types: Any, where: str = "run state") -> Any:
        if not isinstance(data, dict):
            raise UserError(f"{where} must be a JSON object, got {type(data).__name__}")
        if key not in data:
            raise UserError(f"{where} is missing field {key!r}")
        value = data[key]
        if not isinstance(value, types) or isinstance(value, bool) and bool not in _as_tuple(types):
            raise UserError(f"{where} field {key!r} has the wrong type: {type(value).__name__}")
        return value

    def agent(self, name: Any) -> Any:
        if name not in self.agents:
            raise UserError(f"Run state agent not found in agent map: {name!r}")
        return self.agents[name]

    def item(self, data: Any, index: int) -> Any:
        where = f"generated_items[{index}]"
        kind = self.get(data, "type", str, where)
        if kind not in ITEM_CLASSES:
            raise UserError(f"{where} has unknown item type {kind!r}")
        agent = self.agent(self.get(data, "agent", str, where))
        raw_item = self.get(data, "raw_item", dict, where)
        cls = ITEM_CLASSES[kind]
        if cls is HandoffOutputItem:
            return cls(agent=agent, raw_item=raw_item, source_agent=self.agent(data.get("source_agent")),
                       target_agent=self.agent(data.get("target_agent")))
        if cls is ToolApprovalItem:
            return cls(agent=agent, raw_item=raw_item, tool_name=self.get(data, "tool_name", str, where))
        if cls is ToolCallOutputItem:
            return cls(agent=agent, raw_item=raw_item, output=raw_item.get("output"))
        return cls(agent=agent, raw_item=raw_item)


def _as_tuple(types: Any) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def load_state(initial_agent: Any, data: Any, context_override: Any,
               context_deserializer: Optional[Callable]) -> RunState:
    read = _Reader(agent_map(initial_agent))
    version = read.get(data, "schema_version", int)
    if version not in SCHEMA_VERSIONS:
        raise UserError(f"Run state schema version {version} is not supported. Supported versions are: "
                        f"{sorted(SCHEMA_VERSIONS)}. New snapshots are written as version {SCHEMA_VERSION}.")
    context_doc = read.get(data, "context", dict)
    if context_override is not None:
        context = context_override
    elif context_deserializer is not None:
        context = context_deserializer(context_doc.get("context"))
    else:
        context = context_doc.get("context")
    wrapper = RunContextWrapper(context=context, usage=Usage.from_json(read.get(context_doc, "usage", dict,
                                                                                 "context"), requests=0),
                                approvals=read.get(context_doc, "approvals", dict, "context"))
    max_turns = data.get("max_turns")
    if max_turns is not None and not isinstance(max_turns, int):
        raise UserError(f"run state field 'max_turns' has the wrong type: {type(max_turns).__name__}")
    state = RunState(wrapper, read.get(data, "original_input", (str, list)),
                     read.agent(read.get(data, "starting_agent", str)), max_turns,
                     conversation_id=data.get("conversation_id"),
                     previous_response_id=data.get("previous_response_id"),
                     auto_previous_response_id=bool(data.get("auto_previous_response_id")))
    state.current_agent = read.agent(read.get(data, "current_agent", str))
    state.current_turn = read.get(data, "current_turn", int)
    state.generated_items = [read.item(i, n) for n, i in enumerate(read.get(data, "generated_items", list))]
    state.model_responses = [ModelResponse(output=read.get(r, "output", list, "model response"),
                                           usage=Usage.from_json(r.get("usage")),
                                           response_id=r.get("response_id"), request_id=r.get("request_id"))
                             for r in read.get(data, "model_responses", list)]
    state.agents_that_used_tools = set(read.get(data, "agents_that_used_tools", list))
    state.unsaved_session_input = read.get(data, "unsaved_session_input", list)
    pending = data.get("pending_turn")
    if pending is not None:
        where = "pending_turn"
        done = read.get(pending, "done", dict, where)
        nested_docs = read.get(pending, "nested", dict, where)
        state.pending = PendingTurn(
            agent_name=read.agent(read.get(pending, "agent", str, where)).name,
            output=read.get(pending, "output", list, where), start=read.get(pending, "start", int, where),
            done={call_id: (text, text) for call_id, text in done.items()},
            session_input=read.get(pending, "session_input", list, where),
            nested={call_id: load_state(_nested_agent(state, call_id, read), doc, context_override,
                                        context_deserializer) for call_id, doc in nested_docs.items()})
        if not 0 <= state.pending.start <= len(state.generated_items):
            raise UserError(f"pending_turn.start {state.pending.start} is outside generated_items")
    state.rebuild_transcript()
    return state


def _nested_agent(state: RunState, call_id: str, read: _Reader) -> Any:
    """The agent behind the agent-as-tool call `call_id` of the paused turn."""
    for item in state.generated_items:
        if isinstance(item, ToolCallItem) and item.call_id == call_id:
            for tool in item.agent.tools:
                if tool.name == item.tool_name and getattr(tool, "_agent", None) is not None:
                    return tool._agent
    raise UserError(f"pending_turn.nested names call {call_id!r}, which is not an agent-as-tool call")
