"""`RunState`: everything a run changes, in one object that becomes JSON and comes back.

The loop (run.py) reads and writes only this object, so a run paused for approval is this object
written out. Approve or reject its interruptions, then pass it back to `Runner.run_sync(agent, state)`.
Loading never executes code and does no I/O: agents, tools and handoffs are looked up by name in the
agent graph the caller passes, and every malformed part is a `UserError` that names it.
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import InitVar, dataclass, field
from typing import Any, Callable, Dict, Generic, List, Optional, TypedDict, Union

from .agent import Agent
from .caller import Aborts
from .context import RunContextWrapper, TContext, Usage, call_ids_of
from .errors import UserError
from .handoffs import Handoff
from .items import (HOSTED_ITEM_TYPES, HandoffCallItem, HandoffOutputItem, InputItem, MessageOutputItem, ReasoningItem,
                    ToolApprovalItem, ToolCallItem, ToolCallOutputItem, cannot_copy, clean_json, clean_text, derived_id,
                    drop_orphans, function_call_output, item_problem, keyable, preview, to_input_list)
from .models.interface import ModelResponse
from .validate import ArgumentsError, validate_value


@dataclass(eq=False)
class PendingTurn:
    """A turn whose model response is in but whose calls are not all settled (paused for approval).

    `output` is the response's items; `start` is where the turn's items begin in `generated_items`;
    `outputs` maps call ids that already have an output to `(python value, text)`.
    """

    agent_name: str
    output: list
    start: int
    outputs: dict = field(default_factory=dict)
    session_input: list = field(default_factory=list)
    nested: dict = field(default_factory=dict)  # call id -> paused RunState of an agent-as-tool
    replays: int = 0  # calls the response repeated exactly from earlier turns: dropped, never run again
    pauses: int = 0  # how often the turn paused before this pause: a resume claims (turn, pauses) in the ledger
    unsure: list = field(default_factory=list)  # calls started before a crash with no output: a person decides


@dataclass(eq=False, repr=False)
class RunState(Generic[TContext]):
    """Everything a run changes: input, items, responses, the paused turn, approvals, usage (see the module).

    Made with upstream's arguments (`RunState(context, original_input, starting_agent, max_turns)`); every other
    field starts empty and is the loop's to change."""

    context: InitVar[Any]  # a RunContextWrapper, or the object it wraps: kept as `context_wrapper`
    original_input: Any
    starting_agent: Any
    max_turns: Optional[int] = 10
    conversation_id: Optional[str] = None
    previous_response_id: Optional[str] = None
    auto_previous_response_id: bool = False
    context_wrapper: RunContextWrapper = field(init=False)
    current_agent: Any = field(init=False)
    # Names this run in a session's ledger of claimed calls: every resume of one paused state shares it, so an
    # approved call claimed by one resume is never run by another.
    run_id: str = field(init=False)
    # With a server-managed conversation (a response id or conversation id) the server holds the history: only
    # transcript items from this index on are sent.
    server_known: int = field(default=0, init=False)
    current_turn: int = field(default=0, init=False)
    generated_items: list = field(default_factory=list, init=False)
    model_responses: list = field(default_factory=list, init=False)
    pending: Optional[PendingTurn] = field(default=None, init=False)  # the turn that paused, until it completes
    agents_that_used_tools: set = field(default_factory=set, init=False)
    input_guardrail_results: list = field(default_factory=list, init=False)
    output_guardrail_results: list = field(default_factory=list, init=False)
    tool_input_guardrail_results: list = field(default_factory=list, init=False)
    tool_output_guardrail_results: list = field(default_factory=list, init=False)
    transcript: list = field(default_factory=list, init=False)  # what the model sees (see rebuild_transcript)
    call_ids: set = field(default_factory=set, init=False)  # every call id the run and its history used
    unsaved_session_input: list = field(default_factory=list, init=False)  # saved with the first completed turn
    pending_input: list = field(default_factory=list, init=False)  # add_input's items, before the next model call
    finished: bool = field(default=False, init=False)  # a final output ended the run: no input may be added
    history_unread: bool = field(default=True, init=False)  # no session's history read into it yet, and not loaded
    # (run.read_history_of_a_made_state); never saved
    cancel_mode: Optional[str] = field(default=None, init=False)  # set by cancel(); like `aborts`, never saved
    running: Any = field(default=None, init=False)  # the run going on with it (run.take), never saved
    aborts: Aborts = field(default_factory=Aborts, init=False)  # what aborts what is in flight (an HTTP request)

    def __post_init__(self, context: Any) -> None:
        """A state made by hand is checked as `Runner.run_sync` checks its arguments (the input repaired and copied,
        what a run refuses a `UserError`), so it runs as that input would; a run's own state and a loaded one are
        made of values checked already."""
        if not isinstance(self.starting_agent, Agent):
            raise UserError(f"RunState's starting_agent must be an Agent, got {type(self.starting_agent).__name__}")
        if self.max_turns is not None and (type(self.max_turns) is not int or self.max_turns < 0):  # nan: no end
            raise UserError(f"max_turns must be a whole number >= 0 or None, got {self.max_turns!r:.80}")
        self.context_wrapper = context if isinstance(context, RunContextWrapper) else RunContextWrapper(context)
        self.current_agent, self.run_id = self.starting_agent, "run_" + os.urandom(12).hex()
        if isinstance(self.original_input, str):  # one message: no orphan to drop, no call id
            self.original_input = clean_text(self.original_input)  # a lone surrogate, as in a run's input
            self.transcript = to_input_list(self.original_input)
        else:
            self.original_input = input_items(self.original_input)
            self.rebuild_transcript()
            if self.server_managed:  # no session's history comes before it: an orphan now stays one when reloaded
                self.original_input = list(self.transcript)

    def rebuild_transcript(self) -> None:
        """The model's view: the input, then every settled transcript item, checked for pairing."""
        settled = self.generated_items[:self.pending.start] if self.pending is not None else self.generated_items
        generated = [i.raw_item for i in settled if not isinstance(i, ToolApprovalItem)]
        items = to_input_list(self.original_input) + generated
        self.transcript = drop_orphans(items, self.server_managed, items if self.names_state else None)
        # Call ids already in the history (the session's included) or used by this run: a model that reuses one
        # (servers that number calls per response) gets a fresh id, so no output can answer the wrong call. Only ids
        # a session keys: the turn looks up no other (assign_call_ids), and an item that is no call may hold
        # anything there (a message's list, put in the set, was a bare TypeError).
        used = self.transcript + [i.raw_item for i in self.generated_items]
        self.call_ids = set(filter(keyable, (i.get("call_id") for i in used)))

    def record_turn(self, items: list, start: int) -> None:
        """Put the current turn's items from `start` on (replacing a paused attempt's)."""
        self.generated_items[start:] = items
        self.call_ids.update(filter(keyable, (i.raw_item.get("call_id") for i in items)))

    @property
    def server_managed(self) -> bool:
        """Whether the server keeps the conversation (so each request carries only what it has not seen)."""
        return bool(self.conversation_id or self.previous_response_id or self.auto_previous_response_id)

    @property
    def names_state(self) -> bool:
        """Whether the next request names a state the server keeps (the conversation, or a response to chain to):
        only then can an output in it answer a call the server holds (`auto_previous_response_id` names none
        before a response with an id)."""
        return bool(self.conversation_id or self.previous_response_id)

    def take_over(self) -> None:
        """Resume this paused state although another resume of it has claimed it in the session's ledger, when that
        resume stopped before it finished (a crash: `AlreadyResumedError` with `outcome` None that stays None).
        What it did stays done: a call it ran gets the output it recorded, a call it started and never recorded is
        answered "not run again", its turn is written once; the calls it never started run. A resume that in fact
        completed (or wrote its turn and died before it recorded so) is told from one that stopped before: taking
        it over raises `AlreadyResumedError` ("completed") before the model is asked. If that resume is in fact
        still running, its calls still run once, and only the one that claims the next turn first asks the model."""
        if self.pending is None:
            raise UserError("take_over() is for a paused state (one with interruptions)")
        self.pending.pauses += 1  # a pause of its own: the next resume claims it afresh
        for nested in self.pending.nested.values():  # an agent tool's paused inner run is taken over with it
            nested.take_over()

    def cancel(self, mode: str = "immediate") -> None:
        """Ask the run to stop (from any thread): "immediate" at its next step boundary, what is in flight
        aborted (a running tool finishes; one not started never starts); "after_turn" once the turn settled. A
        later, milder cancel never softens an "immediate" one."""
        if self.cancel_mode != "immediate":
            self.cancel_mode = mode
        if mode == "immediate":
            self.aborts.cancelled = True
            for abort in list(self.aborts):
                abort()

    # --- Approvals -------------------------------------------------------------------------

    def get_interruptions(self) -> list:
        return [i for i in self.generated_items if isinstance(i, ToolApprovalItem)] if self.pending else []

    def add_input(self, input: Any) -> None:
        """Add input (a string or input items) to a paused or cancelled run: it enters the transcript, after the
        paused turn's outputs and the input guardrails, before the next model call. `UserError` when the run
        ended with a final output, has no model turn left, or is paused on calls whose result may end it."""
        if self.finished:
            raise UserError("Cannot add input to a terminal RunState")
        if self.max_turns is not None and self.current_turn >= self.max_turns:
            raise UserError("Cannot add input to a RunState with no remaining model turns")
        if self.pending is not None:
            behavior = self.current_agent.tool_use_behavior
            names = {i.get("name") for i in self.pending.output if i.get("type") == "function_call"}
            if behavior == "stop_on_first_tool" or callable(behavior) or (
                    isinstance(behavior, dict) and names & set(behavior.get("stop_at_tool_names", ()))):
                raise UserError("Cannot add input to an interrupted RunState whose tool result may end the run")
        if not isinstance(input, str) and not (isinstance(input, list) and all(isinstance(i, dict) for i in input)):
            raise UserError("add_input takes a string or a list of input items (dicts), got "
                            f"{type(input).__name__}: {preview(input, 80)}")
        self.pending_input.extend(input_items(to_input_list(input), "add_input's input"))

    def approve(self, item: ToolApprovalItem, always_approve: bool = False) -> None:
        self.context_wrapper.approve_tool(item, always_approve=always_approve)

    def reject(self, item: ToolApprovalItem, always_reject: bool = False, *,
               rejection_message: Optional[str] = None) -> None:
        """Reject the item's call: the model is told `rejection_message` (repaired as every text that reaches a
        request), or the run's text for a rejection."""
        if isinstance(rejection_message, str):
            rejection_message = clean_text(rejection_message)
        self.context_wrapper.reject_tool(item, always_reject=always_reject, rejection_message=rejection_message)

    # --- JSON --------------------------------------------------------------------------------

    def to_json(self, *, context_serializer: Optional[Callable] = None) -> dict:
        """The state as a JSON-ready dict (see `SCHEMA_VERSIONS` and `dump_state`)."""
        return dump_state(self, context_serializer)

    def to_string(self, *, context_serializer: Optional[Callable] = None) -> str:
        text = json.dumps(self.to_json(context_serializer=context_serializer), ensure_ascii=False, indent=2,
                          allow_nan=False)  # strict JSON: every parser reads it
        if len(text) > MAX_TEXT:  # refused now, not when it is read back
            raise UserError(f"This RunState's JSON is {len(text):,} characters, over the {MAX_TEXT:,} a state may "
                            "have when it is read back (RunState.from_string): it could not be loaded again")
        return text

    @staticmethod
    def from_json(initial_agent: Any, data: Any, *, context_override: Any = None,
                  context_deserializer: Optional[Callable] = None) -> "RunState":
        """Load a state from `to_json`'s dict; agents are re-bound by name from `initial_agent`'s graph."""
        if not isinstance(data, dict):  # to_string's text given here was told it lacked a schema version
            raise UserError(f"RunState.from_json takes to_json's dict, got {type(data).__name__}: for to_string's "
                            "text use RunState.from_string")
        return load_state(initial_agent, data, context_override, context_deserializer)

    @staticmethod
    def from_string(initial_agent: Any, text: str, *, context_override: Any = None,
                    context_deserializer: Optional[Callable] = None) -> "RunState":
        """Load a state from `to_string`'s text. A text of over MAX_TEXT characters is refused before it is parsed;
        so are bytes over 4 * MAX_TEXT, the most that many characters take in UTF-8 (4 bytes each)."""
        limit, unit = (MAX_TEXT, "characters") if isinstance(text, str) else (4 * MAX_TEXT, "bytes")
        if isinstance(text, (str, bytes, bytearray)) and len(text) > limit:  # before it is parsed into memory
            raise UserError(f"Run state JSON of {len(text):,} {unit} is over the {limit:,} a state may have")
        try:
            data = json.loads(text)
        except (TypeError, ValueError, RecursionError) as e:
            raise UserError(f"Failed to parse run state JSON: {e or 'nested too deeply'}") from None
        return load_state(initial_agent, data, context_override, context_deserializer)


# --- The JSON document ------------------------------------------------------------------------

SCHEMA_VERSION = 6
SCHEMA_VERSIONS = {
    1: "first release: agents by name, input, generated items, model responses, the paused turn "
       "(response, settled outputs, nested agent-tool states), approvals, usage, JSON context",
    2: "adds run_id, the key of the run's calls in a session's exactly-once ledger (a version 1 document gets "
       "one derived from its content, the same at every load)",
    3: "adds pending_input (RunState.add_input's items, not yet in the transcript), input_item generated items, "
       "and finished (a final output ended the run)",
    4: "adds pending_turn.pauses (how often the turn paused before: a resume claims that pause in the session's "
       "ledger, so only one resume of one paused state proceeds)",
    5: "adds generated_items[].custom_data (what a tool's custom_data_extractor returned for its output)",
    6: "adds pending_turn.unsure (calls a run continued after a crash found started with no output: each waits "
       "for a person, who approves running it again or tells the model it may or may not have happened)",
}
ITEM_CLASSES = {cls.__dataclass_fields__["type"].default: cls
                for cls in (MessageOutputItem, ReasoningItem, ToolCallItem, ToolCallOutputItem, HandoffCallItem,
                            HandoffOutputItem, ToolApprovalItem, InputItem)}


MAX_DEPTH = 200  # levels of nesting a state's values may have: deeper, it could load and never be saved again
MAX_TEXT = 256 * 1024 * 1024  # characters of a state's JSON: a document from outside is read only below it
# A count a document may hold is below it: past any a run makes (a provider reports at most a float's largest,
# 1.8e308, each time), far short of the 4300 digits Python writes an integer with.
MAX_COUNT = 10 ** 400


def _json_path_error(value: Any, path: str = "context", depth: int = 0) -> Optional[str]:
    """The first key path in `value` that JSON cannot hold (NaN and infinities included), or None."""
    if depth > MAX_DEPTH:
        return f"{path} (nested deeper than {MAX_DEPTH} levels)"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} ({value!r}: JSON has no such number)"
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            if not isinstance(key, str):  # (every key is quoted cut short: the path names where, not what)
                return f"{path}[{preview(key, 40)}] (non-string key)"
            found = _json_path_error(inner, f"{path}[{preview(key, 40)!r}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, inner in enumerate(value):
            found = _json_path_error(inner, f"{path}[{index}]", depth + 1)
            if found:
                return found
        return None
    return f"{path} ({preview(type(value).__name__, 60)})"


def _deeper(value: Any, levels: int) -> bool:
    """Whether `value` nests more than `levels` levels of objects and arrays (without recursion, level by level)."""
    level, todo = 0, [value]
    while todo:
        level += 1
        if level > levels:
            return True
        todo = [inner for v in todo for inner in (v.values() if isinstance(v, dict) else v)
                if isinstance(inner, (dict, list))]
    return False


def _dump_item(item: Any) -> dict:
    data = {"type": item.type, "agent": item.agent.name, "raw_item": dict(item.raw_item)}
    if isinstance(item, HandoffOutputItem):
        data["source_agent"], data["target_agent"] = item.source_agent.name, item.target_agent.name
    if isinstance(item, ToolCallOutputItem) and item.custom_data:
        data["custom_data"] = item.custom_data
    if isinstance(item, ToolApprovalItem):
        data["tool_name"] = item.tool_name
        if item.approval_scope:
            data["approval_scope"] = item.approval_scope
    return data


def dump_state(state: RunState, context_serializer: Optional[Callable]) -> dict:
    ctx = state.context_wrapper
    context = context_serializer(ctx.context) if context_serializer else ctx.context
    bad = _json_path_error(context)
    if bad:
        raise UserError(f"run context is not JSON-serialisable at {bad}; pass context_serializer= "
                        "(and context_deserializer= when loading)")
    pending = state.pending
    document = {
        "schema_version": SCHEMA_VERSION,
        "run_id": state.run_id,
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
            "done": {call_id: text for call_id, (_, text) in pending.outputs.items()},
            "session_input": pending.session_input,
            "nested": {call_id: dump_state(nested, context_serializer) for call_id, nested in pending.nested.items()},
            "replays": pending.replays, "pauses": pending.pauses, "unsure": pending.unsure,
        },
        "context": {"usage": {**ctx.usage.to_json(), "tool_calls": ctx.usage.tool_calls}, "approvals": ctx.approvals,
                    "context": context},
        "agents_that_used_tools": sorted(state.agents_that_used_tools),
        "unsaved_session_input": state.unsaved_session_input,
        "pending_input": state.pending_input,
        "finished": state.finished,
        "conversation_id": state.conversation_id,
        "previous_response_id": state.previous_response_id,
        "auto_previous_response_id": state.auto_previous_response_id,
        "server_known": state.server_known,
    }
    # An input item, or an item a custom model or tool gave, may hold what a load refuses: a value JSON cannot hold (a
    # datetime, nan, an int of 4,300 digits), or one nested deeper than MAX_DEPTH, which json writes (a paused run
    # was saved and never loaded again: the person's decision lost; deeper still, a bare RecursionError). Said here,
    # for to_string and the journal, with the path load_state would name.
    try:
        document = json.loads(json.dumps(document, allow_nan=False))  # its own: editing it never edits the state
        where = _not_json(document) if _deeper(document, MAX_DEPTH) else None  # (a walk per level, not per value)
    except (TypeError, ValueError, RecursionError) as error:
        where = _not_json(document) or str(error)
    if where:
        raise UserError(f"This RunState cannot be written as JSON that loads again (by to_string, or to a session's "
                        f"journal before its turn runs a call): {where}") from None
    # The caller's context, decisions (a rejection message) and a plugin's custom data are the strings no entry point
    # cleaned: a lone surrogate is repaired as in input and tool outputs, or the text could not be written as UTF-8.
    document = clean_json(document)
    return document


def input_items(input: Any, given: str = "RunState's original_input") -> list:
    """A run's input items as a run takes them (`run.fresh_state`, `RunState.add_input`): a list of whole items
    (`items.item_problem`), copied, lone surrogates repaired; anything else is a `UserError` naming it."""
    if not isinstance(input, list):
        raise UserError(f"{given} must be a string or a list of input items (dicts), "
                        f"got {type(input).__name__}: {preview(input, 80)}")
    try:
        input = clean_json(input)
    except Exception as error:
        raise cannot_copy(given, error) from error
    problem = next(((n, p) for n, p in enumerate(map(item_problem, input)) if p), None)
    if problem is not None:
        raise UserError(f"{given}[{problem[0]}] {problem[1]}")
    return input


def reachable_agents(initial_agent: Any) -> list:
    """Every agent reachable through handoffs and agents-as-tools, each once, starting with `initial_agent`."""
    found = [initial_agent]
    for agent in found:  # the list grows as it is walked
        # a handoff's agent (a Handoff built by hand names none: its on_invoke_handoff gives one); an agent tool's
        others = [_handed_to(agent, h) for h in agent.handoffs] + [getattr(t, "_agent", None) for t in agent.tools]
        for other in others:
            if other is not None and not any(other is seen for seen in found):
                found.append(other)
    return found


def _handed_to(agent: Any, entry: Any) -> Any:
    """The agent an entry of `agent.handoffs` names: an Agent, or a Handoff's (None when built by hand). Anything
    else was put in the list after the agent was made (its own check passed then): a `UserError` naming it."""
    if isinstance(entry, (Agent, Handoff)):
        return getattr(entry, "_agent", entry)
    raise UserError(f"Agent {agent.name!r} has an object of type {type(entry).__name__} among its handoffs, which is "
                    "neither an Agent nor a Handoff: hand off to an Agent, or to handoff(agent)")


def agent_map(initial_agent: Any) -> dict:
    """The reachable agents by name; two different agents with one name is an error (states bind by name)."""
    found: dict = {}
    for agent in reachable_agents(initial_agent):
        if found.setdefault(agent.name, agent) is not agent:
            raise UserError(f"two different agents are named {agent.name!r} in this agent graph; "
                            "RunState binds agents by name, so names must be unique")
    return found


# The document's shape, declared as types and checked whole by `validate_value` before anything is built, so
# a malformed document is one `UserError` naming the field, never a crash halfway through loading. bool never
# passes for int; unknown fields are refused.
class _Cached(TypedDict, total=False):
    cached_tokens: Optional[int]


class _Reasoning(TypedDict, total=False):
    reasoning_tokens: Optional[int]


class UsageDocument(TypedDict, total=False):
    requests: int
    input_tokens: Optional[int]
    output_tokens: Optional[int]
    total_tokens: Optional[int]
    input_tokens_details: Union[None, _Cached, List[_Cached]]
    output_tokens_details: Union[None, _Reasoning, List[_Reasoning]]
    tool_calls: int


class _Decision(TypedDict):
    approved: Union[bool, List[str]]
    rejected: Union[bool, List[str]]


class DecisionDocument(_Decision, total=False):
    rejection_messages: Dict[str, str]
    arguments: Dict[str, str]  # call id -> the fingerprint of the arguments its approval covers


class _Item(TypedDict):
    type: str
    agent: str
    raw_item: Dict[str, Any]


class ItemDocument(_Item, total=False):
    source_agent: str
    target_agent: str
    tool_name: str
    approval_scope: str
    custom_data: Dict[str, Any]


class _Response(TypedDict):
    output: List[Dict[str, Any]]


class ResponseDocument(_Response, total=False):
    usage: Optional[UsageDocument]
    response_id: Optional[str]
    request_id: Optional[str]


class _PendingTurn(TypedDict):
    agent: str
    output: List[Dict[str, Any]]
    start: int
    done: Dict[str, Union[str, List[Any]]]
    session_input: List[Dict[str, Any]]
    nested: Dict[str, Dict[str, Any]]


class PendingTurnDocument(_PendingTurn, total=False):
    replays: int
    pauses: int
    unsure: List[str]


class _Context(TypedDict):
    usage: UsageDocument
    approvals: Dict[str, DecisionDocument]


class ContextDocument(_Context, total=False):
    context: Any


class _Document(TypedDict):
    schema_version: int
    current_turn: int
    max_turns: Optional[int]
    starting_agent: str
    current_agent: str
    original_input: Union[str, List[Dict[str, Any]]]
    generated_items: List[ItemDocument]
    model_responses: List[ResponseDocument]
    pending_turn: Optional[PendingTurnDocument]
    context: ContextDocument
    agents_that_used_tools: List[str]
    unsaved_session_input: List[Dict[str, Any]]


class RunStateDocument(_Document, total=False):
    """The document `RunState.to_json` writes (`run_id` is required from version 2 on)."""

    run_id: str
    pending_input: List[Dict[str, Any]]
    finished: bool
    server_known: int
    conversation_id: Optional[str]
    previous_response_id: Optional[str]
    auto_previous_response_id: bool


def _checked(shape: Any, value: Any) -> tuple:
    """(the document as the validator reads it, None) if `value` fits `shape`, else (None, what is wrong and where).
    As everywhere JSON is read, null for an optional field that cannot be null means "not given": the read
    document leaves that field out, so its default applies."""
    try:
        return validate_value(shape, value), None
    except ArgumentsError as e:
        return None, f"{e.path or 'the document'}: {e.problem}"


def _bad_item(data: dict) -> Optional[str]:
    """The first transcript item of the document that would fail later (see `items.item_problem`), named."""
    pending = data["pending_turn"] or {"output": [], "session_input": []}
    original = data["original_input"] if isinstance(data["original_input"], list) else []
    places = [(f"original_input[{n}]", i) for n, i in enumerate(original)]
    places += [(f"generated_items[{n}].raw_item", i["raw_item"]) for n, i in enumerate(data["generated_items"])]
    places += [(f"pending_turn.output[{n}]", i) for n, i in enumerate(pending["output"]) if not _ignored(i)]
    places += [(f"pending_turn.done[{preview(call_id, 60)!r}]", function_call_output(call_id, text))
               for call_id, text in pending.get("done", {}).items()]  # a settled call's output, as the model gets it
    places += [(f"pending_turn.session_input[{n}]", i) for n, i in enumerate(pending["session_input"])]
    places += [(f"unsaved_session_input[{n}]", i) for n, i in enumerate(data["unsaved_session_input"])]
    places += [(f"pending_input[{n}]", i) for n, i in enumerate(data.get("pending_input", ()))]
    for where, item in places:
        problem = item_problem(item)
        if problem:
            return f"{where} {problem}"
    return None


# The kinds of output item `turn.classify` keeps as the turn's items (a message may come with no type): it warns
# about any other and skips it, so a paused response may hold one (custom_tool_call, local_shell_call).
KEPT_KINDS = frozenset({"message", "reasoning", "function_call"}) | HOSTED_ITEM_TYPES


def _kind(item: dict) -> Any:
    return item.get("type", "message" if item.get("role") == "assistant" else None)


def _ignored(item: dict) -> bool:
    """Whether `turn.classify` skips this output item: it is never run, sent or kept, so never refused here (a
    type that is not a string is: classify could not read it)."""
    kind = _kind(item)
    return (kind is None or isinstance(kind, str)) and kind not in KEPT_KINDS


def _pending_problem(data: dict) -> Optional[str]:
    """Where the paused turn disagrees with itself or with the run's items, or None. A resume runs the calls of
    `pending_turn.output` with current_agent's tools and puts the turn's items back in `generated_items` from
    `pending_turn.start` on, so: the turn is current_agent's; each of its calls has an id of its own; none of them
    is in the items before `start` (unless the server keeps the conversation: it may number calls per response);
    and from `start` on are the turn's own items as it paused (the output's items `turn.classify` reads, in order,
    then the outputs and approval items), or none yet (a turn the ledger journaled as its response came). Else an
    approved call ran twice, the model was sent items twice, or another agent's tool of the same name ran without
    the approval the paused call waits for."""
    pending, items = data["pending_turn"], data["generated_items"]
    if pending is None:
        return None
    if pending["agent"] != data["current_agent"]:
        return (f"pending_turn.agent {preview(pending['agent'], 60)!r} is not current_agent "
                f"{preview(data['current_agent'], 60)!r}: a paused turn resumes with the agent that made its calls")
    output, start = pending["output"], pending["start"]
    calls = [i["call_id"] for i in output if i.get("type") == "function_call"]
    twice = next((call_id for call_id, count in Counter(calls).items() if count > 1), None)
    if twice is not None:
        return f"pending_turn.output holds call id {preview(twice, 60)!r} twice: each call has an id of its own"
    if not 0 <= start <= len(items):
        return f"pending_turn.start {preview(start, 40)} is outside generated_items"
    earlier = {i["raw_item"]["call_id"] for i in items[:start]
               if i["raw_item"].get("type") in ("function_call", "function_call_output")}
    server_managed = any(data.get(f) for f in ("conversation_id", "previous_response_id", "auto_previous_response_id"))
    if not server_managed and not earlier.isdisjoint(calls):  # a server keeping the conversation may number ids anew
        return f"a call of pending_turn.output is in generated_items before pending_turn.start {start}"
    read, turn = [i for i in output if not _ignored(i)], items[start:]
    if turn and ([i["raw_item"] for i in turn[:len(read)]] != read or
                 any(i["type"] not in ("tool_call_output_item", "tool_approval_item") for i in turn[len(read):])):
        return f"generated_items from pending_turn.start {start} on are not the paused turn's items"
    return None


def _repaired(data: dict) -> dict:
    """`data` with an older version's paused response read as that code read it, so the turn agrees with its
    items as the loop writes them today: versions 1-5 kept a call id the response repeated (their classify
    skipped the repeat; today it is dropped as the response comes in), and versions 1 and 2 were written by
    code that may have skipped a hosted tool's item (web_search_call; kept today). Each is dropped from
    pending_turn.output as that code dropped it; a version 6 document never holds either."""
    pending, version = data["pending_turn"], data["schema_version"]
    if pending is None or version >= 6:
        return data
    output, seen = [], set()
    for item in pending["output"]:
        if item.get("type") == "function_call":
            if item["call_id"] in seen:
                continue  # the first call of each id stands
            seen.add(item["call_id"])
        output.append(item)
    pending["output"] = output
    turn = [i["raw_item"].get("type") for i in data["generated_items"][pending["start"]:]]
    if version < 3 and turn and HOSTED_ITEM_TYPES.isdisjoint(turn):
        pending["output"] = [i for i in pending["output"] if i.get("type") not in HOSTED_ITEM_TYPES]
    return data


def _out_of_range(data: dict) -> Optional[str]:
    """The first count, turn or index of the document below 0, or at MAX_COUNT or over, named, or None. Each counts
    up from 0, and one below loosened a limit (usage.requests -100 allowed 100 more requests, current_turn -50 50
    more turns); one that large no run reaches, and the loop counting on from one far larger failed as text
    (int("9" * 4300) + 1 has more digits than Python writes: the next turn could not be saved or claimed).
    max_turns is the caller's limit, never counted on (any whole number a run takes); model_responses[].usage is the
    provider's report as it came (a -1 is kept, Usage.add counts it as 0 in the run's usage), never read for a
    limit."""
    pending = data["pending_turn"] or {}
    counts = [("max_turns", data.get("max_turns"), 0, math.inf)]
    counts += [(key, data.get(key), 0, MAX_COUNT) for key in ("current_turn", "server_known")]
    counts += [(f"pending_turn.{key}", pending.get(key), 0, MAX_COUNT) for key in ("start", "replays", "pauses")]
    counts += [("context.usage", data["context"]["usage"], 0, MAX_COUNT)]  # a usage holds nothing but counts
    counts += [(f"model_responses[{n}].usage", r.get("usage"), -math.inf, MAX_COUNT)
               for n, r in enumerate(data["model_responses"])]
    return next(filter(None, (_outside(*count) for count in counts)), None)


def _outside(where: str, value: Any, low: Any, top: Any) -> Optional[str]:
    """`where` (and the path inside) of the first integer in `value` below `low` or at `top` or over, said so, or
    None."""
    if isinstance(value, int) and value < low:
        return f"{where} is below 0"
    if isinstance(value, int) and value >= top:
        return f"{where} is 10**400 or more (no run counts that far)"
    inner = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next(filter(None, (_outside(f"{where}.{k}", v, low, top) for k, v in inner)), None)


def _not_json(data: dict) -> Optional[str]:
    """Where the document holds what JSON cannot (NaN, an infinity: Python's json reads them), anywhere (the
    user's context, an item): such a state would load and run, then fail every save, so it is refused here as
    the typed fields' NaNs are."""
    return next(filter(None, (_json_path_error(value, key) for key, value in data.items())), None)


def _agent(agents: dict, name: str) -> Any:
    if name not in agents:
        raise UserError(f"Run state agent not found in agent map: {preview(name, 60)!r}; pass the run's starting "
                        "agent (one behind a Handoff built by hand is known only once called: use handoff(agent))")
    return agents[name]


def _load_item(data: dict, index: int, agents: dict) -> Any:
    cls = ITEM_CLASSES.get(data["type"])
    if cls is None:
        raise UserError(f"run state generated_items[{index}] has unknown item type {preview(data['type'], 60)!r}")
    agent, raw_item = _agent(agents, data["agent"]), data["raw_item"]
    if cls is HandoffOutputItem:
        return cls(agent=agent, raw_item=raw_item, source_agent=_agent(agents, data.get("source_agent")),
                   target_agent=_agent(agents, data.get("target_agent")))
    if cls is ToolApprovalItem:
        return cls(agent=agent, raw_item=raw_item, tool_name=data.get("tool_name") or raw_item.get("name", ""),
                   approval_scope=data.get("approval_scope", ""))
    if cls is ToolCallOutputItem:
        return cls(agent=agent, raw_item=raw_item, output=raw_item.get("output"), custom_data=data.get("custom_data"))
    return cls(agent=agent, raw_item=raw_item)


def load_state(initial_agent: Any, data: Any, context_override: Any,
               context_deserializer: Optional[Callable]) -> RunState:
    """Check the whole document's shape, then build the state; nothing runs, nothing is read."""
    if not isinstance(initial_agent, Agent):  # its graph holds the agents the document names
        raise UserError(f"RunState.from_json and from_string take the run's starting agent, an Agent, got "
                        f"{type(initial_agent).__name__}")
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UserError("Run state is missing schema version (field 'schema_version')")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserError("Run state schema version has an invalid type (field 'schema_version')")
    if version not in SCHEMA_VERSIONS:
        raise UserError(f"Run state schema version {preview(version, 40)} is not supported. Supported versions are: "
                        f"{sorted(SCHEMA_VERSIONS)}. New snapshots are written as version {SCHEMA_VERSION}.")
    given = data  # a version 1 document's run id is derived from it as given (see _derived_run_id)
    try:
        data, problem = _checked(RunStateDocument, clean_json(data))  # a lone surrogate: as where input enters
        problem = problem or _not_json(data) or _bad_item(data) or _out_of_range(data)
        problem = problem or _pending_problem(_repaired(data))
    except RecursionError:  # deeper than the interpreter can walk (the cap above is met before, at any stack)
        problem = f"the document: nested deeper than {MAX_DEPTH} levels"
    if problem is None and version >= 2 and "run_id" not in data:
        problem = "the document: missing required field 'run_id'"
    if problem:
        raise UserError(f"malformed run state: {problem}")
    agents = agent_map(initial_agent)
    context_doc = data["context"]
    if context_override is not None:
        context = context_override
    elif context_deserializer is not None:
        context = context_deserializer(context_doc.get("context"))
    else:
        context = context_doc.get("context")
    wrapper = RunContextWrapper(context=context, usage=Usage.from_json(context_doc["usage"], requests=0),
                                approvals=call_ids_of(context_doc["approvals"]))
    state = RunState(wrapper, "", _agent(agents, data["starting_agent"]), data["max_turns"],  # the input below
                     conversation_id=data.get("conversation_id"),
                     previous_response_id=data.get("previous_response_id"),
                     auto_previous_response_id=bool(data.get("auto_previous_response_id")))
    state.run_id, state.history_unread = data["run_id"] if version >= 2 else _derived_run_id(given), False
    state.server_known = data.get("server_known", 0)
    state.current_agent = _agent(agents, data["current_agent"])
    state.original_input, state.current_turn = data["original_input"], data["current_turn"]  # checked above
    state.generated_items = [_load_item(item, n, agents) for n, item in enumerate(data["generated_items"])]
    state.model_responses = [ModelResponse(output=r["output"], usage=Usage.from_json(r.get("usage")),
                                           response_id=r.get("response_id"), request_id=r.get("request_id"))
                             for r in data["model_responses"]]
    state.agents_that_used_tools = set(data["agents_that_used_tools"])
    state.unsaved_session_input = data["unsaved_session_input"]
    state.pending_input, state.finished = data.get("pending_input", []), data.get("finished", False)
    pending = data["pending_turn"]
    if pending is not None:
        state.pending = PendingTurn(agent_name=_agent(agents, pending["agent"]).name, output=pending["output"],
                                    start=pending["start"],
                                    outputs={call_id: (text, text) for call_id, text in pending["done"].items()},
                                    session_input=pending["session_input"], replays=pending.get("replays", 0),
                                    pauses=pending.get("pauses", 0), unsure=pending.get("unsure", []))
        given_nested = {clean_text(key): doc for key, doc in given["pending_turn"]["nested"].items()}  # as given
        state.pending.nested = {call_id: _load_nested(state, call_id, given_nested[call_id], context_override,
                                                      context_deserializer) for call_id in pending["nested"]}
        if version < 3:
            _scope_approvals(state)
    state.rebuild_transcript()
    return state


def _load_nested(state: RunState, call_id: str, doc: dict, context_override: Any,
                 context_deserializer: Optional[Callable]) -> RunState:
    """The paused inner run of an agent-tool call, checked as a whole document like the outer one."""
    try:
        nested = load_state(_nested_agent(state, call_id), doc, context_override, context_deserializer)
        nested.context_wrapper.approval_scope = nested.run_id  # its approvals are its own (see as_tool)
        return nested
    except UserError as e:
        raise UserError(f"pending_turn.nested[{preview(call_id, 60)!r}]: {e.message}") from None


def _scope_approvals(state: RunState) -> None:
    """Versions 1 and 2 were written before an agent tool's inner run kept its approvals apart (under its run id,
    `approval_scope`): each approval item of a paused inner run gets that run's scope, as the inner run looks its
    decision up, and so does its copy among the outer run's interruptions (they follow its own calls', in the
    order of the inner runs: matched by place, as two inner runs, or an inner run and the outer, may hold calls
    of one tool with one id). A decision the document holds about such a tool and id is dropped, and a person
    asked again: it may be about another call (the outer's own, or an earlier one that had the id), and those
    versions kept no fingerprint of the arguments it approved to tell."""
    inner = [(n.run_id, item) for n in state.pending.nested.values() for item in n.get_interruptions()]
    outer = state.get_interruptions()
    copies = outer[len(outer) - len(inner):] if inner else []
    if len(copies) != len(inner) or any((a.agent.name, a.call_id, a.tool_name) != (b.agent.name, b.call_id,
                                                                                   b.tool_name)
                                        for a, (_, b) in zip(copies, inner)):
        return  # not as a version 1-2 run wrote it: its inner runs ask again
    for copy, (run_id, item) in zip(copies, inner):
        item.approval_scope = item.approval_scope or run_id  # (one of its own inner runs' has theirs by now)
        copy.approval_scope = item.approval_scope
        state.context_wrapper.forget(copy.tool_name, copy.call_id)


def _derived_run_id(data: dict) -> str:
    """A version 1 document has no run id: one from what never changes between its loads (input, responses), as
    given: the same id before and after loading learnt to repair a lone surrogate (the ledger's claims keep it)."""
    text = json.dumps([data["original_input"], [r["output"] for r in data["model_responses"]]], sort_keys=True)
    return derived_id("v1_", text)


def _nested_agent(state: RunState, call_id: str) -> Any:
    """The agent behind the agent-as-tool call `call_id` of the paused turn: the tool its response names, of
    current_agent (the turn's agent). An earlier turn's call may have had the id (a server that numbers calls)."""
    output = state.pending.output
    names = [i.get("name") for i in output if i.get("type") == "function_call" and i["call_id"] == call_id]
    for tool in state.current_agent.tools if names else ():
        if tool.name == names[0] and getattr(tool, "_agent", None) is not None:
            return tool._agent
    raise UserError(f"pending_turn.nested names call {preview(call_id, 60)!r}, which is not an agent-as-tool call")
