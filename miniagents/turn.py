"""One turn: the records its steps fill in, and the steps every turn takes.

A turn is one model call and everything until the next step is decided. Its steps are plain functions
`step(run, turn)`, listed once per run (`steps.choose`); the ones every turn takes are here, in order:

    offer       the agent's instructions, enabled tools and handoffs, settings and output schema
    call_model  the transcript to the agent's model; call ids made unique where they collide
    classify    the response's items -> run items; its function calls -> `Call`s
    plan        each call's fate: unknown tool, waiting for a person, rejected, or run
    run_calls   the runnable calls, one after another or concurrently
    settle      every output after the turn's calls, in the model's call order
    decide      one of the four `NextStep` variants (or an error for the run's handlers)

What a run needs beyond these (usage limits, guardrails, streaming, a session's ledger, a resumed pause, the
seams' plugins) are steps of their own, in steps.py, chosen only by runs that use them. Nothing runs until the
plan says so, and a paused turn resumes by running the same plan, settle and decide on the response it kept.
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import caller
from .agent_output import AgentOutputSchemaBase
from .config import RunConfig
from .context import ToolContext, Usage
from .errors import ModelBehaviorError, ModelRefusalError, UserError, warn
from .handoffs import Handoff
from .items import (HOSTED_ITEM_TYPES, HandoffCallItem, MessageOutputItem, ReasoningItem, ToolApprovalItem,
                    ToolCallItem, ToolCallOutputItem, derived_id, function_call_output, keyable,
                    message_refusal, message_text, new_call_id, preview)
from .models.interface import ModelResponse, ModelSettings
from .state import RunState
from .tool import (FunctionToolResult, NestedInterruption, ToolsToFinalOutputResult, failure_text, invoke_tool,
                   output_text, tool_output)
from .validate import ArgumentsError, parse_arguments

MULTIPLE_HANDOFFS = "Multiple handoffs detected, ignoring this one."
REJECTED = "Tool execution was not approved."


# --- The records a turn fills in -----------------------------------------------------------------------


@dataclass(eq=False)
class Run:
    """One run in progress: its `RunState` (the part that becomes JSON), and the machinery chosen for it once,
    when it started (`start_run`): the steps of its turns, the session, the plugins, how a call is invoked."""

    state: RunState
    config: RunConfig
    start: tuple = ()  # the steps before the first turn (chosen once: run.choose)
    before: tuple = ()  # what may keep a fresh turn from starting
    fresh: tuple = ()  # the steps of a fresh turn
    resumed: tuple = ()  # the steps of a paused turn resumed
    ends: dict = field(default_factory=dict)  # NextStep class -> the steps of a turn that ends so
    entered: tuple = ()  # the steps when an agent takes the conversation
    invoke: Callable = None  # how one call runs: `invoke_tool`, or with guardrails and the seams around it
    session: Any = None
    ledger: Any = None  # a session with claim_call/settle_call: the exactly-once record of claimed calls
    journal: Optional[str] = None  # the session's journal entry as this run last saw it (None: no journal kept)
    after: tuple = ()  # the steps when the run returns or raises
    around: Callable = contextlib.nullcontext  # what surrounds the whole run: nothing, or `run.held`
    streamed: bool = False
    shared: bool = False  # its state was given (run.given): another run may be given it too
    emit: Optional[Callable] = None  # a streamed run: hands each event to its reader (set by `drive`)
    agents: list = field(default_factory=list)  # every agent the run can reach (handoffs, agent tools)
    tools: dict = field(default_factory=dict)  # id(agent) -> its tools, as the steps were chosen for them
    plugins: tuple = ()  # what takes part through the seams (miniagents/seams.py): shells, the run's own plugins
    scratch: dict = field(default_factory=dict)  # plugin -> what it keeps for this run
    turn: Any = None  # the turn in progress, or the last one: what a failure keeps of it (run.keep_what_ran)
    abandoned: bool = False  # its awaited `Runner.run` was cancelled: no one will get the state it returns
    begun: bool = False  # its awaited `Runner.run`'s worker thread began driving it
    agent: Any = None  # the agent whose stretch of the run is going on (between agent_started and agent_ended)
    result: Any = None  # the RunResult, once the loop has one (final output, pause, cancel)
    failure: Optional[Exception] = None  # what the run raises, once it fails (run.failed)


@dataclass(eq=False)
class TurnSetup:
    """What the current agent offers the model this turn (evaluated every turn: tools can switch on and off)."""

    agent: Any
    instructions: Optional[str]
    tools: dict  # name -> FunctionTool
    handoffs: dict  # tool name -> Handoff
    settings: ModelSettings
    output: Optional[AgentOutputSchemaBase]  # None: plain text


@dataclass(eq=False)
class Call:
    """One function call of the response, what the agent has under its name (`target` None: unknown), and what
    became of it: `fate` ("run", "answer", "wait" for a person, "done" before a pause) and `output`."""

    item: dict
    call_id: str
    target: Any
    kind: str  # "function" | "handoff" | "unknown"
    fate: str = ""
    output: Optional[tuple] = None  # (python value, text the model sees) once it has one
    paused: Any = None  # an agent tool's inner run: paused before (continued on resume), or pausing now
    custom_data: Optional[dict] = None
    raised: Optional[Exception] = None  # what it raised, stopping the run: it may have run (run.keep_what_ran)


STOPPED_MIDWAY = ("This call was started, and the run stopped before it returned a result: it may or may not have "
                  "happened.")  # what the history says of a call that raised, or ran on when the run stopped
WITHHELD = "This call ran, and the run was cancelled while its output was checked: the output is withheld."
CUT_SHORT = (STOPPED_MIDWAY, WITHHELD)  # no result: a turn with one of these never ends through tool_use_behavior
HALTED = "This call was not run: its input guardrail stopped the run."  # what the ledger records of a call so stopped


@dataclass(eq=False)
class Turn:
    """One turn as its steps fill it in: the agent's offer, the response's items as read (`output`, what a pause
    keeps), its run items (model order; after `settle`, the outputs after the calls), its calls, and the
    step the loop takes next. `start` is where its items begin in `state.generated_items`."""

    agent: Any
    start: int
    setup: Optional[TurnSetup] = None
    input: Optional[list] = None  # what the model is sent, when not the whole transcript (steps.filter_input)
    ids: dict = field(default_factory=dict)  # the model call's keywords: a server-side conversation's ids
    output: list = field(default_factory=list)
    replays: int = 0  # calls dropped as exact replays of calls that already ran (see assign_call_ids)
    items: list = field(default_factory=list)
    said: int = 0  # how many of `items` are the model's own (the rest are outputs)
    calls: list = field(default_factory=list)
    next_step: Any = None
    session_input: list = field(default_factory=list)  # the run's new input, saved with its first completed turn
    guardrail_results: list = field(default_factory=list)  # the tool guardrails' verdicts
    claim: Optional[tuple] = None  # the turn's claim in the ledger, (run id, key): ledger.claim_turn, claim_pause
    limit: Any = None  # the UsageLimitExceeded that kept its calls from running
    requests: int = 1  # what taking the response adds to the run's requests (0: counted before the call was made)
    reserved: int = 0  # tool calls counted before they ran (steps.check_tool_limit), or began (steps.reread)
    unsure: list = field(default_factory=list)  # ids of calls started before a crash, with no output recorded
    reruns: set = field(default_factory=set)  # of those, the ones that run again (approved, or idempotent)
    saved: bool = False  # the session was asked to write it (steps.save): a failure after that keeps nothing again
    announced: bool = False  # a streamed run's reader was told its outputs (steps.announce_outputs)


# --- The four ways a turn ends: the loop dispatches on these and nothing else ------------------------
# A new reason to stop is a new variant here, never a flag inside the loop; they are plain data, so a paused
# run is data too.


@dataclass(eq=False)
class NextStepRunAgain:
    """Call the same agent's model again."""


@dataclass(eq=False)
class NextStepHandoff:
    """Give the conversation to the agent behind `call` (the response's first handoff call)."""

    call: Call


@dataclass(eq=False)
class NextStepFinalOutput:
    """End the run with `output` (the output guardrails still run before it is returned)."""

    output: Any


@dataclass(eq=False)
class NextStepInterruption:
    """Pause the run: `interruptions` are the `ToolApprovalItem`s waiting for a person's decision."""

    interruptions: list = field(default_factory=list)


@dataclass(eq=False)
class NextStepError:
    """Not a way to end, a question for the run's plugins (the `answer_error` seam: upstream's `error_handlers`):
    `kind` ("model_refusal", "invalid_final_output", "max_turns", "usage_limit") and the `error` raised if none
    answers. With `run_again`, no answer means another turn instead (a structured answer that has not come yet)."""

    kind: str
    error: Exception
    run_again: bool = False


# --- The steps every turn takes ---------------------------------------------------------------------------


def offer(run: Run, turn: Turn) -> None:
    """What the current agent offers the model this turn: instructions, enabled tools and handoffs (two with one
    name is a `UserError`), settings (the run's laid over the agent's), the output schema."""
    agent, ctx = turn.agent, run.state.context_wrapper
    tools: dict = {}
    handoffs = [h if isinstance(h, Handoff) else h.default_handoff for h in agent.handoffs]
    for tool in agent.tools + handoffs:  # a hosted tool too: sent, never called (the provider runs it)
        if getattr(tool, "is_enabled", None) is True or enabled(tool, ctx, agent):
            if tools.setdefault(tool.name, tool) is not tool:
                raise UserError(f"Agent {agent.name!r} offers two tools named {tool.name!r}: give one another name "
                                "(function_tool(name_override=...), handoff(tool_name_override=...))")
    settings = agent.model_settings if run.config.model_settings is None else \
        agent.model_settings.resolve(run.config.model_settings)
    if settings.tool_choice and agent.reset_tool_choice and agent.name in run.state.agents_that_used_tools:
        settings = dataclasses.replace(settings, tool_choice=None)  # forced once: the model may now answer
    instructions = agent.system_prompt(ctx) if callable(agent.instructions) else agent.instructions
    turn.setup = TurnSetup(agent, instructions, {n: t for n, t in tools.items() if not isinstance(t, Handoff)},
                           {n: h for n, h in tools.items() if isinstance(h, Handoff)}, settings, agent.output_schema)


def enabled(tool: Any, ctx: Any, agent: Any) -> bool:
    """A tool's or handoff's `is_enabled`: a bool, or a callable asked with the run's context and the agent."""
    flag = getattr(tool, "is_enabled", None)
    if flag is None:  # not a tool: put in the agent's list after the agent was made (its checks were passed then)
        raise UserError(f"Agent {agent.name!r} offers an object of type {type(tool).__name__}, which is not a tool: "
                        "decorate a function with @function_tool before adding it to agent.tools")
    return bool(caller.call(flag, ctx, agent)) if callable(flag) else bool(flag)


def call_model(run: Run, turn: Turn) -> None:
    """Send the transcript to the agent's model and take its response (a streamed run: steps.stream_model)."""
    model = get_model(turn.agent, run.config)
    take_response(run, turn, model.get_response(*model_arguments(run, turn), **turn.ids))


def model_arguments(run: Run, turn: Turn) -> tuple:
    """What a model is called with (upstream's `Model` protocol): the instructions, the input items, the
    settings, the tools, the output schema, the handoffs and the tracing setting. As upstream, the model gets
    the objects the agent offers; adapters send their `spec()`s."""
    turn.input = list(run.state.transcript) if turn.input is None else turn.input  # a copy: the model's own
    return (turn.setup.instructions, turn.input, turn.setup.settings, list(turn.setup.tools.values()),
            turn.setup.output, list(turn.setup.handoffs.values()), run.config.model_tracing)


def take_response(run: Run, turn: Turn, response: Any) -> None:
    """Count the response's usage (one request per call, whatever the model reported: usage limits must not
    trust the model; none when the call was counted before it was made), keep it, and read its items, every call
    with an id of its own. A custom model that returns anything else is told so here, before anything reads it."""
    if not isinstance(response, ModelResponse):
        raise UserError(f"A Model's get_response must return a ModelResponse, not {type(response).__name__}")
    run.state.context_wrapper.usage.add(response.usage, requests=turn.requests)
    run.state.model_responses.append(response)
    turn.output = response.output
    ids = [item.get("call_id") for item in turn.output if item.get("type") == "function_call"]
    if len(set(filter(keyable, ids)) - run.state.call_ids) < len(ids):  # not each its own, or one no session keys
        turn.output, turn.replays = assign_call_ids(turn.output, run.state)


_default_provider = None  # made on first use and kept for the process: it reuses connections across runs


def get_model(agent: Any, config: RunConfig) -> Any:
    """The `Model` to call: the run's or the agent's, a name resolved by the run's (or the default) provider."""
    global _default_provider
    model = config.model or agent.model
    if model is not None and not isinstance(model, str):
        return model
    provider = config.model_provider
    if provider is None:
        if _default_provider is None:  # the name is sent as written; upstream's runs route prefixes (its shell)
            from .models.provider import DefaultProvider

            _default_provider = DefaultProvider()
        provider = _default_provider
    found = provider.get_model(model)
    if not callable(getattr(found, "get_response", None)):  # a provider of the program's own
        raise UserError(f"The model provider's get_model({model!r}) returned {type(found).__name__}, not a Model")
    return found


NUMBERED_ID = re.compile(r"([A-Za-z]+[_-])?\d+")  # "0", "call_1", "tool-3": numbered per response, not unique


def assign_call_ids(output: list, state: RunState) -> tuple:
    """Fix every function call's id once per response (so a resumed turn sees the same ids); returns (output,
    how many calls were dropped as replays). A call id must never answer two different calls, and a call must
    never run twice, for servers that number ids per response ("call_0" in every response) and for servers
    whose ids are unique alike. A call id the response repeats is dropped (the first call with it stands). A
    call id no session can key (NUL; a lone surrogate was repaired as the response was made) is first replaced
    by one derived from it, the same each time the server gives it. A call with no id, or with an id used earlier
    in the run or its history:
    - a numbered id is the server's count: it is a new call, and gets a fresh id;
    - a unique id with the same name and arguments as the earlier call is a replay: it is dropped (the earlier
      output stands; nothing runs again);
    - a unique id on a different call gets a fresh id: it is a new call.
    A conversation the server keeps holds its calls under the ids it gave (numbered per response, by some): they
    are kept (a person decides anew about a call whose id an earlier call had), and a response whose calls do not
    each have an id of their own is the server's mistake (`ModelBehaviorError`), never two calls answered as one."""
    if state.server_managed:
        ids = [item.get("call_id") for item in output if item.get("type") == "function_call"]
        if len(set(ids)) < len(ids) or not all(map(keyable, ids)):
            raise ModelBehaviorError("The server gave two calls of one response the same call id, or a call none (or "
                                     "one holding NUL or a lone surrogate, which no session can key): a "
                                     "conversation the server keeps (conversation_id, previous_response_id) needs "
                                     "an id of its own for each call")
        for item in output:  # an id given again (numbered per response) is a new call: earlier decisions are not its
            if item.get("type") == "function_call" and item["call_id"] in state.call_ids:
                state.context_wrapper.forget(item.get("name") or "", item["call_id"])
        return output, 0
    fixed, replays, earlier, seen = [], 0, None, set()
    for item in output:
        if item.get("type") == "function_call":
            call_id = item.get("call_id")
            if call_id and not keyable(call_id):  # the same id each time given: a repeat or a replay is seen as one
                item = copy.copy(item)
                item["call_id"] = call_id = derived_id("call_", call_id)
            if not call_id or call_id in state.call_ids:
                if call_id and not NUMBERED_ID.fullmatch(call_id):
                    earlier = earlier if earlier is not None else _calls_by_id(state)
                    if earlier.get(call_id) == _invocation(item):
                        replays += 1
                        continue
                item = copy.copy(item)  # the response's item stays as the model gave it; the copy keeps its type
                item["call_id"] = new_call_id()
            elif call_id in seen:
                warn("ignoring repeated call id %s in one response", preview(repr(call_id), 80))  # the server's, capped
                continue
            seen.add(item["call_id"])
        fixed.append(item)
    return fixed, replays


def _calls_by_id(state: RunState) -> dict:
    """call id -> (name, arguments) of every function call in the run's history."""
    items = list(state.transcript) + [i.raw_item for i in state.generated_items]
    return {i.get("call_id"): _invocation(i) for i in items if i.get("type") == "function_call"}


def _invocation(call: dict) -> tuple:
    """What a call asks for, with its arguments compared as JSON (spacing and key order do not matter)."""
    text = call.get("arguments") or "{}"
    try:
        arguments = json.dumps(json.loads(text), sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        arguments = text
    return call.get("name"), arguments


def classify(run: Run, turn: Turn) -> None:
    """The response's items as run items, and its function calls as `Call`s (a call id repeated within the
    response is dropped); a hosted tool's item (it ran on the provider's side) is kept and sent back as it came."""
    agent, setup = turn.agent, turn.setup
    for item in turn.output:
        kind = item.get("type", "message" if item.get("role") == "assistant" else None)
        if kind == "function_call":
            name = item.get("name") or ""
            if name in setup.handoffs:  # the first handoff wins; another in the same response is answered
                first = not any(c.kind == "handoff" for c in turn.calls)
                turn.calls.append(Call(item, item["call_id"], setup.handoffs[name], "handoff", "" if first else
                                       "answer", None if first else (MULTIPLE_HANDOFFS, MULTIPLE_HANDOFFS)))
                turn.items.append(HandoffCallItem(agent=agent, raw_item=item))
                continue
            tool = setup.tools.get(name)
            turn.calls.append(Call(item, item["call_id"], tool, "function" if tool else "unknown"))
            turn.items.append(ToolCallItem(agent=agent, raw_item=item, description=getattr(tool, "description", None)))
        elif kind == "message":
            turn.items.append(MessageOutputItem(agent=agent, raw_item=item))
        elif kind == "reasoning":
            turn.items.append(ReasoningItem(agent=agent, raw_item=item))
        elif kind in HOSTED_ITEM_TYPES:
            turn.items.append(ToolCallItem(agent=agent, raw_item=item))
        else:
            # the server's words, capped (the API key they might echo is the model's, unknown here: not redacted)
            warn("ignoring output item of unsupported type %s", preview(repr(kind), 80))
    turn.said = len(turn.items)


def plan(run: Run, turn: Turn) -> None:
    """Decide each function call's fate before any runs: a call with an output already (a resumed turn) keeps
    it; an unknown tool is answered; a call a person must approve waits, or is answered when rejected; the rest
    run. A call that needs a person never runs before a person approved it."""
    for call in turn.calls:
        if call.kind == "handoff" or call.fate:
            continue
        if call.kind == "unknown":
            text = error_text(run, call, "tool_not_found", f"Tool '{call.item.get('name') or ''}' not found. "
                              f"Available tools: {', '.join(sorted(turn.setup.tools)) or 'none'}.")
            call.fate, call.output = "answer", (text, text)
        elif call.target.needs_approval is False and not run.state.context_wrapper.approvals:  # no person is asked
            call.fate = "run"
        else:
            decide_approval(run, call)


def decide_approval(run: Run, call: Call) -> None:
    """A call a person may have to approve: run it (approved, or its tool's policy asks no one), answer it
    (rejected; arguments its policy cannot read), or keep it waiting for a person."""
    ctx, name = run.state.context_wrapper, call.item.get("name") or ""
    decision = ctx.is_tool_approved(name, call.call_id)
    if decision is True and not ctx.approves_arguments(name, call.call_id, call.item.get("arguments")):
        decision = None  # approved for other arguments (the RunState document was edited): a person decides again
    if decision is not None and run.plugins:  # a person decided (this call, or every call of the tool)
        from . import seams

        seams.emit(run.plugins, "approval", run, name, call.call_id, "approved" if decision else "rejected")
    if decision is None:
        try:
            decision = True if not needs_approval(call.target, ctx, call.item) else None
        except ArgumentsError as error:  # not a JSON object: the model fixes it, no person is asked
            text = failure_text(call.target, ctx, call.item.get("arguments") or "", error)
            call.fate, call.output = "answer", (text, text)
            return
    if decision is False:
        text = ctx.rejection_message(name, call.call_id) or error_text(run, call, "approval_rejected", REJECTED)
        call.fate, call.output = "answer", (text, text)
    else:
        call.fate = "run" if decision else "wait"


def error_text(run: Run, call: Call, kind: str, default: str) -> str:
    """What the model is told when a call cannot run ("tool_not_found", "approval_rejected"): `default`, or what
    the plugins' `error_text` seam makes of it (upstream's `tool_error_formatter`)."""
    if not run.plugins:
        return default
    from . import seams

    return seams.change(run.plugins, "error_text", run, call, kind, default)


def needs_approval(tool: Any, ctx: Any, call: dict) -> bool:
    """The tool's approval policy for this call. A policy sees only arguments that are a JSON object
    (`ArgumentsError` otherwise); one that raises asks a person, the safe answer."""
    flag = tool.needs_approval
    if not callable(flag):
        return bool(flag)
    params = parse_arguments(call.get("arguments"), tool.name)
    try:
        return bool(caller.call(flag, ctx, params, call["call_id"]))
    except Exception:
        warn("needs_approval of tool %r raised; call %s waits for a person", tool.name, preview(call["call_id"], 80),
             exc_info=True)
        return True


def run_calls(run: Run, turn: Turn) -> None:
    """Run the calls the plan says to run, concurrently when there are several (daemon threads, bounded by the
    config), each output kept on its call (`run_one`).

    A call that raises (a propagating failure or tripwire) does not stop its siblings; after all have finished,
    the first such exception in call order is raised. Once the run is cancelled no further call starts (the
    ones running finish): a call that never started has no output, and the turn pauses to run it on resume.
    Ctrl-C interrupts the wait at once: a tool's thread cannot be stopped, so it is left to finish on its own.
    """
    to_run = [call for call in turn.calls if call.fate == "run"]
    if len(to_run) > 1 and run.config.max_function_tool_concurrency != 1:
        run_concurrently(run, turn, to_run)
    else:
        for call in to_run:
            if run.state.cancel_mode == "immediate":
                break  # cancelled: what has not started never does
            contextvars.copy_context().run(run_one, run, turn, call)  # what it sets is its own, as in a thread
    ran = [call for call in to_run if call.output or call.paused is not None]  # an inner run paused, or going on
    run.state.context_wrapper.usage.add(Usage(tool_calls=len(ran) - turn.reserved))  # those counted before are not


def run_concurrently(run: Run, turn: Turn, to_run: list) -> None:
    """Start each call in a thread of its own, at most `max_function_tool_concurrency` at once, then wait for
    every one that started."""
    import threading

    slots, joins = threading.BoundedSemaphore(run.config.max_function_tool_concurrency or len(to_run)), []

    def job(call: Call) -> None:
        try:
            run_one(run, turn, call)
        finally:
            slots.release()

    for call in to_run:
        slots.acquire()
        if run.state.cancel_mode == "immediate":
            slots.release()
            break
        joins.append(caller.start_thread(lambda c=call: job(c), f"tool-{call.target.name}"))
    failure = None
    for join in joins:
        try:
            join()
        except Exception as error:
            failure = failure or error
    if failure is not None:
        raise failure


def run_one(run: Run, turn: Turn, call: Call) -> None:
    """One call, through the run's way of invoking a tool; its output (value, text) is kept on the call. An agent
    tool whose inner run paused has none yet (`call.paused`: the turn pauses on its approvals). A cancel that kept
    the call from starting leaves it to run on resume; one that stopped it running leaves `STOPPED_MIDWAY`. Its
    context's `tool_call` is a copy of the call (deep: a custom model's call may hold nested fields), so a tool or a
    tool guardrail that edits it never rewrites the call the session keeps, a state saves and the next request
    sends."""
    ctx = run.state.context_wrapper.for_call(copy.deepcopy(call.item), turn.agent, run.config, call.paused, run)
    try:
        call.output = run.invoke(run, turn, call, ctx)
    except NestedInterruption as paused:
        call.paused = paused
    except caller.Cancelled as stop:
        if stop.started:
            call.output = (STOPPED_MIDWAY, STOPPED_MIDWAY)
    except Exception as error:  # it stops the run; what the call may have done is kept (run.keep_what_ran)
        call.raised = error
        raise


def invoke(run: Run, turn: Turn, call: Call, ctx: ToolContext) -> tuple:
    """A run's plain way to invoke a call: the tool, with its failure policy (tool.py)."""
    return invoke_tool(call.target, ctx, ctx.tool_arguments)


def settle(run: Run, turn: Turn) -> None:
    """Every output after the turn's calls, in the model's call order, whatever order the calls finished in (a
    handoff's output comes when the handoff is taken, last)."""
    turn.items += [ToolCallOutputItem(agent=turn.agent, raw_item=function_call_output(call.call_id, call.output[1]),
                                      output=call.output[0], custom_data=call.custom_data)
                   for call in turn.calls if call.output is not None]


def decide(run: Run, turn: Turn) -> None:
    """Approval pending (or calls left unstarted by a cancel or a usage limit) > handoff > tool_use_behavior > run
    again (calls were made) > final output. A cancelled awaited run's pause would reach no one (its state is its
    own, and no ledger journals it): its turn stops midway instead, what ran kept in the session."""
    calls = turn.calls
    waiting = [c for c in calls if c.fate in ("wait", "held") or c.fate == "run" and not c.output]
    if waiting and run.abandoned and run.ledger is None and not run.shared:
        raise caller.Cancelled()  # run.keep_what_ran writes the calls that ran, and drops those that never started
    handoff = next((c for c in calls if c.kind == "handoff" and c.output is None), None)
    if waiting:  # a pause: the turn resumes with the outputs it has
        turn.next_step = waiting_for_a_person(run, turn, waiting)
    elif handoff is not None:
        turn.next_step = NextStepHandoff(handoff)
    else:
        final = tools_final_output(run, turn) if calls and turn.agent.tool_use_behavior != "run_llm_again" else None
        turn.next_step = final or (NextStepRunAgain() if calls or turn.replays else final_answer(turn))


def waiting_for_a_person(run: Run, turn: Turn, waiting: list) -> Any:
    """A paused turn's next step: the usage limit that stopped it (here, or inside an agent tool), else its
    `ToolApprovalItem`s: its own calls waiting for a person, then those of each agent tool whose inner run waits
    for one. A call a cancel kept from starting waits too, with no approval to ask."""
    scope, nested = run.state.context_wrapper.approval_scope, [c.paused for c in waiting
                                                              if isinstance(c.paused, NestedInterruption)]
    limit = turn.limit or next((n.limit for n in nested if n.limit is not None), None)
    if limit is not None:
        return NextStepError("usage_limit", limit)
    own = [ToolApprovalItem(agent=turn.agent, raw_item=c.item, approval_scope=scope) for c in waiting
           if c.fate == "wait"]
    return NextStepInterruption(own + [item for n in nested for item in n.interruptions])


def final_answer(turn: Turn) -> Any:
    """The last message as the final output (text, or parsed into the output type), a refusal, or, for a
    structured output type still waiting for its answer, another turn unless an error handler answers."""
    last = next((i.raw_item for i in reversed(turn.items) if isinstance(i, MessageOutputItem)), None)
    refusal = message_refusal(last) if last is not None else None
    if refusal is not None:
        return NextStepError("model_refusal", ModelRefusalError(refusal))
    text = message_text(last) if last is not None else ""
    if turn.setup.output is None:
        return NextStepFinalOutput(text)
    if not text:
        error = ModelBehaviorError("Model returned no final output for the structured output type.")
        return NextStepError("invalid_final_output", error, run_again=True)
    try:
        return NextStepFinalOutput(turn.setup.output.validate_json(text))
    except ModelBehaviorError as e:  # InvalidFinalOutput, or what a custom schema raises, as its contract says
        return NextStepError("invalid_final_output", e)


def tools_final_output(run: Run, turn: Turn) -> Optional[NextStepFinalOutput]:
    """Ask `tool_use_behavior` whether the turn's function results end the run: the final output, or None. An
    agent without an output type ends with text: for a tool's value, the text the model was given for it (content
    parts as JSON); another value as a tool's would be given (`tool.tool_output`: data as JSON, never a Python
    repr, never a bare error for one no text can show). A turn a cancel cut short (a call stopped midway, an
    output withheld) has no result to end with: the model is asked when the run resumes."""
    items = {i.call_id: i for i in turn.items if isinstance(i, ToolCallOutputItem)}
    results = [FunctionToolResult(tool=c.target, output=c.output[0], run_item=items[c.call_id]) for c in turn.calls
               if c.kind == "function" and c.call_id in items]
    behavior = turn.agent.tool_use_behavior
    if not results or any(result.output in CUT_SHORT for result in results):
        return None
    if callable(behavior):
        verdict = caller.call(behavior, run.state.context_wrapper, results)
        if not isinstance(verdict, ToolsToFinalOutputResult):
            raise UserError(f"tool_use_behavior callable must return ToolsToFinalOutputResult, got {verdict!r}")
        chosen = [r for r in results if r.output is verdict.final_output]  # a result's value (but which, if several?)
    else:  # stop_on_first_tool, or the first result of a tool stop_at_tool_names names
        named = results if behavior == "stop_on_first_tool" else [
            r for r in results if r.tool.name in behavior["stop_at_tool_names"]]
        chosen = named[:1]
        verdict = ToolsToFinalOutputResult(bool(chosen), chosen[0].output if chosen else None)
    if not verdict.is_final_output:
        return None
    if turn.setup.output is not None:
        return NextStepFinalOutput(verdict.final_output)
    # the chosen result's value: the text the model was given for it; a value of the callable's own, or one several
    # results hold (one list two tools returned), as a tool's would be given (the tools ran)
    given = chosen[0].run_item.raw_item["output"] if len(chosen) == 1 else None
    given = tool_output(verdict.final_output, "tool_use_behavior") if given is None else given
    return NextStepFinalOutput(given if isinstance(given, str) else output_text(given))  # content parts as JSON


ALWAYS = (offer, call_model, classify, plan, run_calls, settle, decide)  # a plain run's turn, in order
