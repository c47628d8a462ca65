"""Transcript items: constructors, the `RunItem` kinds, and the pairing check.

Every item is a Responses API input-item dict: model input, run items, session rows and RunState all hold the
same items, so nothing is translated inside the kernel (the adapters translate at the edge). An item is a plain
dict, as a model or the caller gave it or as the kernel made it, and the kernel reads it by key; reading items by
attribute, as code written for upstream's typed objects does (`item.raw_item.name`), is the upstream shell's
(`miniagents.upstream`).
This module does no I/O and knows nothing of agents beyond holding a reference.
"""
from __future__ import annotations

import copy
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from .context import Usage
from .errors import UserError


@dataclass
class ModelResponse:
    """One model call's result: output items (Responses-shaped dicts), usage and ids."""

    output: list
    usage: Usage = field(default_factory=Usage)
    response_id: Optional[str] = None
    request_id: Optional[str] = None

    def __post_init__(self) -> None:
        """A custom model's malformed response is refused where it is made, not met later deep in the loop."""
        if isinstance(self.output, tuple):
            self.output = list(self.output)
        if not isinstance(self.output, list):
            raise UserError(f"ModelResponse.output must be a list of items, not {type(self.output).__name__}")
        for n, item in enumerate(self.output):
            problem = answer_problem(item)
            if problem is not None:
                raise UserError(f"ModelResponse.output[{n}] {problem}")
        try:  # the run's own copy, lone surrogates repaired: no later edit of the given items, or UTF-8, breaks it
            self.output = [as_kept(clean_json(item)) for item in self.output]
        except Exception as error:
            raise cannot_copy("ModelResponse.output", error) from error
        if not isinstance(self.usage, Usage):
            raise UserError(f"ModelResponse.usage must be a Usage, not {type(self.usage).__name__}")
        if not all(type(count) is int for count in self.usage.counts()):  # inf or "5" would fail the run later
            raise UserError(f"ModelResponse.usage's token counts must be whole numbers, got {self.usage.counts()}")
        if max(self.usage.counts()) > sys.float_info.max:  # what an adapter refuses a server (models/shapes.count):
            # summed into the run's usage, a paused state would be written that no load reads (10**400 or more)
            raise UserError("ModelResponse.usage reports a token count past a float's largest "
                            f"({sys.float_info.max:.1e})")
        for name in ("response_id", "request_id"):  # another kind would be kept in a state that then cannot load
            value = getattr(self, name)
            if not isinstance(value, (str, type(None))):
                raise UserError(f"ModelResponse.{name} must be a string or None, not {type(value).__name__}")
            setattr(self, name, value and clean_text(value))  # a lone surrogate repaired, as in the output

    def to_input_items(self) -> list:
        """The output as items to send back to a model: copies, without the output-only `created_by`."""
        return [{k: v for k, v in dict(item).items() if k != "created_by"} for item in self.output]


def as_kept(item: dict) -> dict:
    """A model's output item as a run keeps it (its history, a session's, a paused state): a message, read as
    `turn.classify` reads one, is the assistant's whatever role it claims, and holds a list of typed parts (none for
    null; a part with no type, which no reader takes and no API is sent, left out). A server's message with no role,
    role "tool", content null or an untyped part runs (`answer_problem`), but kept as given it stood in a session's
    history as words of whoever its role named ("user", "developer": words nobody wrote, sent as theirs every later
    turn), and a state holding it failed to load (the decision a person was asked for lost)."""
    kind = item.get("type", "message" if item.get("role") == "assistant" else None)
    content = item.get("content") if kind == "message" else None  # another item's parts may be anything: unread
    typed = [part for part in content if isinstance(part.get("type"), str)] if isinstance(content, list) else content
    if kind != "message" or (item.get("role") == "assistant" and content is not None and len(typed) == len(content)):
        return item
    return {**item, "role": "assistant", "content": [] if content is None else typed}


def answer_problem(item: Any) -> Optional[str]:
    """What in one item of a model's answer would fail the run where it is read, or None: a `type` that is no string
    (a list broke `turn.classify`), and in a message (an item of type "message", or of no type and role "assistant",
    as `turn.classify` reads them) or a function call, what `_answer_problem` and the string fields say."""
    if not isinstance(item, dict):
        return f"must be an item (a Responses-shaped dict), not {type(item).__name__}"
    kind = item.get("type", "message" if item.get("role") == "assistant" else None)
    if not isinstance(kind, (str, type(None))):
        return f"has a 'type' that is not a string: {preview(kind, 40)}"
    if kind == "message":
        return _answer_problem(item.get("content"))
    # (a call with no id gets one from the run; one with null arguments ran, and a state paused beside it was refused
    # when loaded: `item_problem` takes arguments that are absent or a string of JSON)
    strings = isinstance(item.get("name"), str) and isinstance(item.get("arguments", ""), str)
    if kind == "function_call" and not (strings and isinstance(item.get("call_id"), (str, type(None)))):
        return "is a function_call whose name, call_id or arguments is not a string"
    return None


def _answer_problem(content: Any) -> Optional[str]:
    """What in a model's message would fail the run where its text is read, or None. Only that: a server's message
    without a role, with no content or with parts of its own kinds ran before and still does."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list) or not all(isinstance(part, dict) for part in content):
        return "has content that is no text or list of parts (objects)"
    if any(part.get("type") == "output_text" and not isinstance(part.get("text"), str) for part in content):
        return "has an output_text part whose text is no string"
    return None


FAKE_ID = "__fake_id__"  # the id of items the kernel or an adapter makes up (upstream's literal): never resent


def new_call_id() -> str:
    return "call_" + os.urandom(12).hex()


def preview(text: Any, limit: int = 200) -> str:
    """At most `limit` characters of `text` (a non-string is shown as `described` shows it), "…" marking a cut.

    What a model sent back to it, or a body quoted in an error, must stay readable and bounded.
    """
    text = text if isinstance(text, str) else described(text, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def described(value: Any, limit: int = 80) -> str:
    """`value`'s repr for a message, at most `limit` characters; a value Python cannot print (nested past its
    recursion limit, an int of more than 4,300 digits) is named by its type, so the message about a wrong value
    does not fail in turn (a bare RecursionError or ValueError where a UserError was meant)."""
    try:
        return preview(repr(value), limit)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__}>"


def clean_text(text: str) -> str:
    """`text` with every lone UTF-16 surrogate replaced by U+FFFD (a valid pair is joined into one character).

    A `\\ud800` escape in a model's JSON, or a surrogate pair split across two stream chunks, decodes to a
    string that UTF-8 cannot encode: every later request and database write would fail. Repairing it where
    it enters keeps one bad character from killing a run.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def keyable(value: Any) -> bool:
    """Whether `value` can key a row on every database: a non-empty text with no NUL and no lone surrogate. A
    call id that is not (a server's `\\u0000` escape) could never be claimed in a session's ledger."""
    return isinstance(value, str) and bool(value) and "\x00" not in value and clean_text(value) is value


def derived_id(prefix: str, text: str) -> str:
    """An id made from `text`, the same each time it is made (so a store keys it alike across loads and retries),
    that any store can key. hashlib is imported here, when one is needed: not with the package."""
    import hashlib

    return prefix + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]

def clean_json(value: Any) -> Any:
    """A copy of a JSON-shaped value with `clean_text` applied to every string (keys included); each dict stays its
    own type, as `copied` keeps it (a shell's readable `RawItem`)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, dict):
        twin = copy.copy(value)
        twin.clear()
        twin.update((clean_text(k) if isinstance(k, str) else k, clean_json(v)) for k, v in value.items())
        return twin
    return value


def cannot_copy(given: str, error: Exception) -> UserError:
    """The error for what a run was given and cannot copy as it enters (`clean_json` raised `error`): nested past
    Python's recursion limit, holding itself, or a dict subclass whose copy or edit raises (a read-only mapping).
    Taken as it was, it would fail later, in a guardrail's, input filter's or tool's copy, a request or a store."""
    if isinstance(error, RecursionError):
        return UserError(f"{given} holds an item nested deeper than Python copies, or one that holds itself")
    return UserError(f"{given} holds an item the run cannot copy (copying it raised {type(error).__name__}): give "
                     "plain dicts and lists")


def copied(value: Any) -> Any:
    """`value` with each list and dict in it copied, a dict as its own type (a shell's readable `RawItem` stays
    one): what the run hands to code that may edit it in place, so the history it keeps is never changed."""
    if isinstance(value, list):
        return [copied(v) for v in value]
    if isinstance(value, dict):
        twin = copy.copy(value)
        twin.update((key, copied(v)) for key, v in value.items())
        return twin
    return value


def assistant_message(text: str, item_id: str = "msg_") -> dict:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [part]}


def function_call_output(call_id: str, output: Any) -> dict:
    return {"call_id": call_id, "output": output, "type": "function_call_output"}


def to_input_list(input: Any) -> list:
    """A string becomes one user message; a list is copied item by item (the caller's stays untouched)."""
    if isinstance(input, str):
        return [{"content": input, "role": "user"}]
    return [dict(item) for item in input]


def message_text(item: dict) -> str:
    """All output_text parts of an assistant message, concatenated."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or () if p.get("type") == "output_text")


def message_refusal(item: dict) -> Optional[str]:
    for part in item.get("content") or ():
        if isinstance(part, dict) and part.get("type") == "refusal":
            return part.get("refusal", "")
    return None


# Item types of the tools the provider runs (Responses API): carried as they are, never run here.
HOSTED_ITEM_TYPES = frozenset({"web_search_call", "file_search_call", "code_interpreter_call",
                               "image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request",
                               "mcp_approval_response"})
MESSAGE_ROLES = ("user", "assistant", "system", "developer")


def item_problem(item: Any) -> Optional[str]:
    """What is wrong with a transcript item, or None. Checked where items enter (run input, RunState
    documents), so a malformed item is refused there, not by a server several turns later."""
    if not isinstance(item, dict):
        return f"is not an object (got {type(item).__name__})"
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        return f"has a 'type' that is not a string: {preview(kind, 40)}"
    if kind == "message":
        role, content = item.get("role"), item.get("content")
        if role not in MESSAGE_ROLES:
            return f"has role {preview(role, 40)}; a message's role is one of {', '.join(MESSAGE_ROLES)}"
        if isinstance(content, str):
            return None
        if not isinstance(content, list):
            return f"has content of type {type(content).__name__}; content is a string or a list of parts"
        return _parts_problem(content, "content")
    if kind in ("function_call", "function_call_output"):
        needs = ("call_id", "name") if kind == "function_call" else ("call_id",)
        for key in needs:  # a call's name may be empty: the model was told no tool has it
            if not isinstance(item.get(key), str) or key == "call_id" and not item[key]:
                return f"is a {kind} without a string {key!r}"
        if kind == "function_call" and not isinstance(item.get("arguments", ""), str):
            return "is a function_call whose 'arguments' is not a string of JSON"
        if kind == "function_call_output" and not isinstance(item.get("output"), (str, list)):
            return "is a function_call_output whose 'output' is not text (or a list of content parts)"
        return _parts_problem(item["output"], "output") if kind == "function_call_output" else None
    if kind == "reasoning" or kind in HOSTED_ITEM_TYPES:
        return None
    return f"has unknown type {preview(kind, 40)}"


def _parts_problem(parts: Any, where: str) -> Optional[str]:
    """What is wrong with the first of a message's content or a tool's output parts that is no content part, or
    None (a tool's output may be text)."""
    for n, part in enumerate(parts if isinstance(parts, list) else ()):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            return f"has {where}[{n}] = {preview(part, 60)}; a content part is an object with a 'type'"
        if part["type"] in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            return f"has {where}[{n}] of type {part['type']!r} whose 'text' is not a string"
    return None


def drop_orphans(items: Iterable[dict], ids_repeat: bool = False, sent: Optional[list] = None) -> list:
    """Keep the first call of each call id that has an output after it, and the first output after that call.

    An interrupted run, a crash between writes or an input filter can leave a `function_call` with no
    output (or an output with no call), and an edited history a call id twice; every API rejects such a
    history, so it is dropped here before a request instead of failing every later request. Where the server
    keeps the conversation (`ids_repeat`), an id once answered may be given again, to a new call (servers that
    number calls per response): that call and its output are kept too. `sent`, given only where the request names
    a state the server keeps (a conversation_id or previous_response_id), is what the request is made of (before
    a filter): an output there whose call id no call before it has answers a call the server holds (one an
    earlier run left unanswered), and is kept, or the server would refuse every later request for want of it.
    """
    items, held, called = list(items), set(), set()
    for item in sent or ():
        if item.get("type") == "function_call":
            called.add(item.get("call_id"))
        elif item.get("type") == "function_call_output" and item.get("call_id") not in called:
            held.add(item.get("call_id"))
    pairs, unanswered, called, kept = {}, {}, set(), {}  # call's index -> its output's; id -> first call's (output's)
    for n, item in enumerate(items):
        kind, call_id = item.get("type"), item.get("call_id")
        if kind == "function_call" and (ids_repeat or call_id not in called):
            unanswered.setdefault(call_id, n)
            called.add(call_id)
        elif kind == "function_call_output" and call_id in unanswered:
            pairs[unanswered.pop(call_id)] = n
        elif kind == "function_call_output" and call_id in held:  # its first output only
            kept.setdefault(call_id, n)
    outputs = set(pairs.values()) | set(kept.values())
    return [item for n, item in enumerate(items)
            if n in pairs or n in outputs or item.get("type") not in ("function_call", "function_call_output")]


# --- Run items: what a run produced, each tied to the agent that produced it -------------------


@dataclass
class RunItem:
    """Base of the run items: one transcript item (`raw_item`) and the agent that produced it. `type` is
    upstream's name for the kind; `to_input_item()` gives the transcript item back."""

    agent: Any
    raw_item: dict
    type: str = field(init=False, default="")

    @property
    def call_id(self) -> str:
        """The call id a call or output item carries ("" for the others)."""
        return self.raw_item.get("call_id", "")

    def to_input_item(self) -> dict:
        return self.raw_item


@dataclass
class MessageOutputItem(RunItem):
    """An assistant message the model produced."""

    type: str = field(init=False, default="message_output_item")


@dataclass
class ReasoningItem(RunItem):
    """A reasoning item the model produced; it stays in the transcript for the next turns."""

    type: str = field(init=False, default="reasoning_item")


@dataclass
class ToolCallItem(RunItem):
    """A function tool's `function_call` (or a call of an unknown name); `description` is the tool's."""

    description: Optional[str] = None
    type: str = field(init=False, default="tool_call_item")

    @property
    def tool_name(self) -> str:
        return self.raw_item.get("name", "")


@dataclass
class ToolCallOutputItem(RunItem):
    """The `function_call_output` answering one call; `output` keeps the Python value behind its text, and
    `custom_data` what a plugin attached to the call (the `invoke` seam: the upstream shell's
    `custom_data_extractor`), kept in RunState JSON, never sent to the model."""

    output: Any = None  # the Python value the tool returned; raw_item["output"] holds its text
    custom_data: Optional[dict] = None
    type: str = field(init=False, default="tool_call_output_item")


@dataclass
class HandoffCallItem(RunItem):
    """A `function_call` that takes a handoff (`transfer_to_<agent>`)."""

    type: str = field(init=False, default="handoff_call_item")


@dataclass
class HandoffOutputItem(RunItem):
    """The output answering the winning handoff call, recording which agent handed over to which."""

    source_agent: Any = None
    target_agent: Any = None
    type: str = field(init=False, default="handoff_output_item")


@dataclass
class InputItem(RunItem):
    """Input added to a paused run (`RunState.add_input`), as it entered the transcript before the next model
    call; `input_id` names this occurrence."""

    input_id: str = field(default_factory=lambda: os.urandom(16).hex())
    type: str = field(init=False, default="input_item")


@dataclass
class ToolApprovalItem(RunItem):
    """A call that waits for a person's decision. It is not part of the transcript."""

    tool_name: str = ""
    approval_scope: str = ""  # "" for the run's own calls; an agent tool's inner run id for its calls
    type: str = field(init=False, default="tool_approval_item")

    def __post_init__(self):
        if not self.tool_name:  # built from a raw call alone: its name is the tool's
            self.tool_name = self.raw_item.get("name", "")

    @property
    def name(self) -> str:
        return self.raw_item.get("name", "")

    @property
    def arguments(self) -> Optional[str]:
        """The call's arguments as the model sent them: JSON text (upstream's type)."""
        return self.raw_item.get("arguments")

    @property
    def parsed_arguments(self) -> Any:
        """The arguments decoded: a dict for a JSON object ({} when there are none), else the text as sent."""
        text = self.raw_item.get("arguments") or "{}"
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return text

    def to_input_item(self) -> dict:
        raise TypeError("a ToolApprovalItem is not a transcript item; approve or reject it instead")
