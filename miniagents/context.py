"""Per-run mutable data: the token `Usage` and the `RunContextWrapper` handed to tools and plugins.

The wrapper carries the user's context object, which never reaches the model. `Usage` reads the
Responses API usage shape (the kernel's one format) with every detail optional.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Generic, Optional, TypeVar

from .errors import UserError

TContext = TypeVar("TContext")


def overlay(base: Any, override: Any) -> Any:
    """A settings dataclass (model or session settings) with every non-None field of `override` laid over it:
    settings are layered (agent, then run), and None always means "not set here"."""
    if override is None:
        return base
    return dataclasses.replace(base, **{f.name: getattr(override, f.name) for f in dataclasses.fields(base)
                                        if getattr(override, f.name) is not None})


def from_fields(kind: type, value: dict, where: str) -> Any:
    """`kind` (a settings dataclass) made from a dict of its fields; a key it does not have is a `UserError` naming
    it and the fields (a typo, or a key that is no string, was a bare TypeError, at times raised turns later)."""
    unknown = sorted(map(repr, set(value) - {f.name for f in dataclasses.fields(kind)}))
    if unknown:
        raise UserError(f"{where} has no field {', '.join(unknown)} (the fields of {kind.__name__}: "
                        f"{', '.join(f.name for f in dataclasses.fields(kind))})")
    return kind(**value)


def _arguments_of(item: Any) -> Any:
    raw = getattr(item, "raw_item", None)
    return raw.get("arguments") if isinstance(raw, dict) else getattr(item, "arguments", None)


def arguments_fingerprint(arguments: Any) -> str:
    """What an approval binds to: the call's arguments as canonical JSON (spacing and key order do not matter),
    hashed, so the RunState document does not repeat them."""
    import hashlib
    import json

    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        canonical = str(arguments)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class InputTokensDetails:
    """Upstream's `input_tokens_details`: how many of the input tokens were served from the prompt cache."""

    cached_tokens: int = 0


@dataclass
class OutputTokensDetails:
    """Upstream's `output_tokens_details`: how many of the output tokens the model spent reasoning."""

    reasoning_tokens: int = 0


# A check of a limit and the count it allows, or a count added, are one step for every run sharing a usage (an
# agent tool's inner run, its siblings running at once).
COUNTING = threading.Lock()


@dataclass
class Usage:
    """Token counts of one request or a whole run (requests are summed with `add`), in the Responses usage
    shape."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_details: InputTokensDetails = field(default_factory=InputTokensDetails)
    output_tokens_details: OutputTokensDetails = field(default_factory=OutputTokensDetails)
    tool_calls: int = 0  # function calls run (for `UsageLimits.tool_calls_limit`)

    def add(self, other: "Usage", requests: Optional[int] = None) -> None:
        """Add another usage to this one, in place: a run's (its requests and tool calls), or one model call's,
        given the `requests` the kernel counts for it (1; 0 when it was counted before it was made). A model's own
        counts of requests and tool calls are not read, a negative token count adds nothing, and a total adds at least
        its parts: usage limits must never be loosened by a model's numbers. Agent tools running at once add to one
        usage: under `COUNTING`."""
        with COUNTING:
            inp, out = max(0, other.input_tokens), max(0, other.output_tokens)
            self.input_tokens, self.output_tokens = self.input_tokens + inp, self.output_tokens + out
            self.total_tokens += max(other.total_tokens, inp + out)
            self.input_tokens_details.cached_tokens += max(0, other.input_tokens_details.cached_tokens)
            self.output_tokens_details.reasoning_tokens += max(0, other.output_tokens_details.reasoning_tokens)
            self.requests += other.requests if requests is None else requests
            self.tool_calls += other.tool_calls if requests is None else 0

    def counts(self) -> list:
        """The token counts, details included (what a custom model must give as whole numbers)."""
        return [self.input_tokens, self.output_tokens, self.total_tokens, self.input_tokens_details.cached_tokens,
                self.output_tokens_details.reasoning_tokens]

    @classmethod
    def from_json(cls, data: Optional[dict], requests: int = 1) -> "Usage":
        """Read a Responses-shaped usage dict (`input_tokens`, `*_details`); missing parts count 0."""
        data = data or {}
        in_details = data.get("input_tokens_details") or {}
        out_details = data.get("output_tokens_details") or {}
        if isinstance(in_details, list):  # upstream RunState writes details as one-element lists ([] is {} by now)
            in_details = in_details[0]
        if isinstance(out_details, list):
            out_details = out_details[0]
        inp, out = int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0)  # None-safe
        return cls(
            requests=int(data.get("requests", requests) or 0),
            input_tokens=inp,
            output_tokens=out,
            total_tokens=int(data.get("total_tokens") or (inp + out)),
            input_tokens_details=InputTokensDetails(int(in_details.get("cached_tokens") or 0)),
            output_tokens_details=OutputTokensDetails(int(out_details.get("reasoning_tokens") or 0)),
            tool_calls=int(data.get("tool_calls") or 0),
        )

    def to_json(self) -> dict:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "input_tokens_details": {"cached_tokens": self.input_tokens_details.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": self.output_tokens_details.reasoning_tokens},
        }


class CallIds(list):
    """A decision's call ids: a list, as the document holds them, whose `in` looks in a set kept beside it (finding
    each of n calls among n decided ones read every one: n² steps). A change through the list's methods keeps the
    set true (`append` adds to it, any other drops it, to be made again at the next look); a plain list put in its
    place is read as a list."""

    ids: Optional[set] = None

    def __contains__(self, call_id: Any) -> bool:
        if self.ids is None:
            self.ids = set(self)
        return call_id in self.ids

    def append(self, call_id: Any) -> None:
        super().append(call_id)
        if self.ids is not None:
            self.ids.add(call_id)


def _dropping_ids(change: Callable) -> Callable:
    def changed(self: CallIds, *args: Any, **kwargs: Any) -> Any:
        self.ids = None
        return change(self, *args, **kwargs)
    return changed


for _change in (list.extend, list.insert, list.remove, list.pop, list.clear, list.sort, list.reverse,
                list.__setitem__, list.__delitem__, list.__iadd__, list.__imul__):
    setattr(CallIds, _change.__name__, _dropping_ids(_change))


def call_ids_of(approvals: dict) -> dict:
    """A document's approvals with each decision's list of call ids a `CallIds` (a resume looks up every call)."""
    return {tool: {key: CallIds(value) if key in ("approved", "rejected") and isinstance(value, list) else value
                   for key, value in record.items()} for tool, record in approvals.items()}


@dataclass(eq=False)
class RunContextWrapper(Generic[TContext]):
    """What tools, guardrails, plugins and instruction callables receive: your context plus usage."""

    context: TContext = None  # type: ignore[assignment]
    usage: Usage = field(default_factory=Usage)
    turn_input: list = field(default_factory=list)  # what the model is sent this turn (upstream's hooks set it)
    # Approval decisions: {tool_name: {"approved": [ids] | True, "rejected": [ids] | True,
    # "rejection_messages": {call_id: message}}} -- the layout upstream stores in RunState.
    approvals: dict = field(default_factory=dict, repr=False)
    # Whose approvals these are: "" for a run's own calls; an agent tool's inner run keeps its records under its
    # run id (in the approvals it shares with its caller), so a decision about the caller's call with the same
    # tool name and call id never authorises the inner one.
    approval_scope: str = field(default="", repr=False)

    def _key(self, tool_name: str, scope: Optional[str] = None) -> str:
        scope = self.approval_scope if scope is None else scope
        return f"{tool_name}@{scope}" if scope else tool_name

    def _decide(self, item: Any, decision: str, always: bool, rejection_message: Optional[str] = None) -> dict:
        """Record `decision` ("approved" or "rejected") for the item's call, or with `always` for every call of
        its tool; returns the tool's record. A decision about a call replaces the last one about it, its rejection
        message included; an exact decision about a call outranks one for every call (see `is_tool_approved`)."""
        if not isinstance(getattr(item, "tool_name", None), str) or not isinstance(getattr(item, "call_id", None), str):
            raise UserError("approve and reject take an interruption of the run (a ToolApprovalItem from "
                            f"result.interruptions), got {type(item).__name__}")
        key = self._key(item.tool_name, getattr(item, "approval_scope", None))
        record = self.approvals.setdefault(key, {"approved": CallIds(), "rejected": CallIds()})
        other = "rejected" if decision == "approved" else "approved"
        if always:
            record[decision], record[other] = True, CallIds()
        else:
            if isinstance(record[other], list) and item.call_id in record[other]:
                record[other].remove(item.call_id)
            if record[decision] is not True:  # every call of the tool has this decision already
                if not isinstance(record[decision], list):  # False, in upstream's documents
                    record[decision] = CallIds()
                if item.call_id not in record[decision]:
                    record[decision].append(item.call_id)
        messages = record.setdefault("rejection_messages", {})
        if always and decision == "approved":
            messages.clear()
        elif rejection_message is not None:
            messages[item.call_id] = rejection_message
        else:
            messages.pop(item.call_id, None)
        if not messages:
            del record["rejection_messages"]
        approved_arguments = record.pop("arguments", {})  # re-recorded by approve_tool for an exact approval
        approved_arguments.pop(item.call_id, None)
        if approved_arguments and not always:
            record["arguments"] = approved_arguments
        return record

    def approve_tool(self, item: Any, always_approve: bool = False) -> None:
        """Approve the item's call (or, with `always_approve`, every call of its tool). A call's approval covers
        the arguments it was given for: the call with other arguments waits for a person again."""
        record = self._decide(item, "approved", always_approve)
        if not always_approve:
            record.setdefault("arguments", {})[item.call_id] = arguments_fingerprint(_arguments_of(item))

    def approves_arguments(self, tool_name: str, call_id: str, arguments: Any) -> bool:
        """Whether the approval of this call (if it was approved with its arguments) covers `arguments`."""
        approved = (self.approvals.get(self._key(tool_name)) or {}).get("arguments", {}).get(call_id)
        return approved is None or approved == arguments_fingerprint(arguments)

    def reject_tool(self, item: Any, always_reject: bool = False,
                    rejection_message: Optional[str] = None) -> None:
        """Reject the item's call (or, with `always_reject`, every call of its tool); the model is told
        `rejection_message`, a text, checked now: anything else failed only when the run resumed."""
        if rejection_message is not None and not isinstance(rejection_message, str):
            raise UserError(f"rejection_message must be a str or None, got {type(rejection_message).__name__}")
        self._decide(item, "rejected", always_reject, rejection_message)

    def forget(self, tool_name: str, call_id: str) -> None:
        """Drop what was decided about the call `call_id` of `tool_name` (not what was decided for every call of
        it): a server that keeps the conversation and numbers its calls per response gave that id again, to a new
        call, which a person decides anew."""
        record = self.approvals.get(self._key(tool_name)) or {}
        for decision in ("approved", "rejected"):
            if isinstance(record.get(decision), list) and call_id in record[decision]:
                record[decision].remove(call_id)
        for part in ("rejection_messages", "arguments"):
            record.get(part, {}).pop(call_id, None)

    def is_tool_approved(self, tool_name: str, call_id: str) -> Optional[bool]:
        """True / False once decided, None while the call still waits for a person. A decision about this very
        call wins over one about every call of its tool."""
        record = self.approvals.get(self._key(tool_name))
        if not record:
            return None
        approved, rejected = record["approved"], record["rejected"]
        if isinstance(approved, list) and call_id in approved:
            return True
        if isinstance(rejected, list) and call_id in rejected:
            return False
        if approved is True:
            return True
        if rejected is True:
            return False
        return None

    def rejection_message(self, tool_name: str, call_id: str) -> Optional[str]:
        return (self.approvals.get(self._key(tool_name)) or {}).get("rejection_messages", {}).get(call_id)

    def for_call(self, item: dict, agent: Any, run_config: Any, resume_state: Any = None,
                 run: Any = None) -> "ToolContext":
        """The context a tool receives for one call (`item`, its `function_call`): this one's context object,
        usage and approval decisions (shared, not copied), with the call, its agent and the run's config; and,
        when a run (turn.Run) makes it, that run's ledger and id."""
        return ToolContext(**{name: getattr(self, name) for name in _SHARED_FIELDS}, tool_name=item["name"],
                           tool_call_id=item["call_id"], tool_arguments=item.get("arguments") or "", tool_call=item,
                           agent=agent, run_config=run_config, resume_state=resume_state,
                           ledger=run and run.ledger, run_id=run.state.run_id if run else "")


@dataclass(eq=False)
class ToolContext(RunContextWrapper[TContext]):
    """The wrapper a tool receives when its first parameter is annotated `ToolContext`: the run's, with the call."""

    tool_name: str = ""
    tool_call_id: str = ""
    tool_arguments: str = ""
    tool_call: Any = None
    agent: Any = None
    run_config: Any = None
    # The paused inner run of an agent-as-tool call being resumed, and the run's exactly-once ledger (both set by
    # the turn, read by as_tool: an inner run without a session of its own claims its calls there).
    resume_state: Any = field(default=None, repr=False)
    ledger: Any = field(default=None, repr=False)
    # The exception the tool raised when the model was told a failure text instead (set by tool.failure_text).
    failure: Any = field(default=None, repr=False)
    run_id: str = ""  # the run's `RunState.run_id`, shared by every resume and continuation of the run

    @property
    def idempotency_key(self) -> str:
        """"<run id>/<call id>": the same for every attempt at this call (a second resume, a run continued after
        its process died) and different for every other call. Pass it to an outside system that deduplicates (a
        payment API's idempotency key): that closes the gap a crash leaves between its side effect and the
        session's record of it."""
        return f"{self.run_id}/{self.tool_call_id}"


_SHARED_FIELDS = tuple(f.name for f in fields(RunContextWrapper) if f.init)  # what a tool's context shares with a run
