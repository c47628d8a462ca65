"""One turn, whole: what the agent offers, the model call, and everything until the next step is decided.

A turn is one model call. `run_turn` reads like the turn itself, one verb per step:

    prepare_turn      the agent's instructions, enabled tools and handoffs, settings and output schema
    start_turn        the first turn's input guardrails, the model call, call ids made unique where they collide
    classify_output   the response's items -> run items; its function calls -> `Call`s
    settle_turn       plan the calls, run them, and order every output after its call:
      plan_tool_calls   each call's fate: already settled, unknown tool, waiting for approval, rejected, run
      run_tools         the runnable calls, one after the other or concurrently, in call order
    decide_next_step  one of the four `NextStep` variants (or an error for the run's handlers)

Nothing runs until the plan says so. A paused turn (`state.pending`) is resumed by running these steps again
with the outputs it already has (`resumed_turn`), so the model is called only for a fresh turn and no call runs
twice. Optional parts take part through the seams (`around`, `seams.change`, `seams.emit`: miniagents/seams.py),
each one check when no plugin is active. The loop that strings turns together, and what happens after the
decision, is `_loop` in run.py.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Optional

from . import caller, seams
from .agent_output import AgentOutputSchemaBase, InvalidFinalOutput, output_schema
from .config import CallModelData, ModelInputData, RunConfig, ToolErrorFormatterArgs
from .context import ToolContext, Usage
from .errors import (AgentsException, AlreadyResumedError, ModelBehaviorError, ModelRefusalError, UsageLimitExceeded,
                     UserError, warn)
from .items import (HOSTED_ITEM_TYPES, HandoffCallItem, MessageOutputItem, RawItem, ReasoningItem, ToolApprovalItem,
                    ToolCallItem, ToolCallOutputItem, drop_orphans, function_call_output, message_refusal,
                    message_text, new_call_id)
from .handoffs import Handoff
from .models.interface import ModelResponse, ModelSettings, ModelTracing
from .result import RawResponsesStreamEvent, stream_events_for
from .schema import tool_name_from
from .state import RunState
from .tool import (FunctionToolResult, HostedTool, NestedInterruption, ToolsToFinalOutputResult,
                   extract_custom_data, failure_text, invoke_tool)
from .validate import ArgumentsError, parse_arguments

MULTIPLE_HANDOFFS = "Multiple handoffs detected, ignoring this one."
REJECTED = "Tool execution was not approved."
NOT_RUN_AGAIN = ("This call was not run again: an earlier resume of this run already started it, and its result "
                 "was not recorded.")


# --- The records a turn passes along ----------------------------------------------------------------


@dataclass(eq=False)
class Run:
    """One run in progress: its `RunState` (the part that becomes JSON) and what the caller passed beside it."""

    state: RunState
    config: RunConfig
    session: Any = None
    error_handlers: dict = field(default_factory=dict)
    streaming: bool = False
    ledger: Any = None  # a session with claim_call/settle_call: the exactly-once record of a resumed turn's calls
    agents: list = field(default_factory=list)  # every agent the run can reach (handoffs, agent tools)
    plugins: tuple = ()  # what takes part through the seams (miniagents/seams.py): shells, the run's hooks
    scratch: dict = field(default_factory=dict)  # plugin -> what it keeps for this run
    agent: Any = None  # the agent whose stretch of the run is going on (between agent_started and agent_ended)
    result: Any = None  # the RunResult, once the loop has one (final output, pause, cancel)


@dataclass(eq=False)
class TurnSetup:
    """What the current agent offers the model this turn (evaluated every turn: tools can switch on and off)."""

    agent: Any
    instructions: Optional[str]
    tools: dict  # name -> FunctionTool
    handoffs: dict  # tool name -> Handoff
    settings: ModelSettings
    output: Optional[AgentOutputSchemaBase]  # None: plain text
    hosted: list = field(default_factory=list)  # hosted tools (run by the provider): sent, never called here
    prompt: Optional[dict] = None  # the agent's stored prompt for this turn


@dataclass(eq=False)
class Call:
    """One function call of the response and what the agent has under its name (`target` None: unknown)."""

    item: RawItem
    call_id: str
    target: Any
    kind: str  # "function" | "handoff" | "unknown"
    paused: Any = None  # an agent tool's paused inner run, continued when this call runs again on resume


@dataclass(eq=False)
class ModelOutput:
    """`classify_output`'s reading of one response: its run items in model order, and its function calls."""

    items: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    replays: int = 0  # calls dropped as exact replays of calls that already ran (see assign_call_ids)
    raw: list = field(default_factory=list)  # the response's items as read (what a pause keeps)


@dataclass(eq=False)
class SettledCalls:
    """`settle_turn`'s outcome: the turn's items with every output after its call, in call order, and what
    `decide_next_step` weighs (function results, calls waiting for a person, the winning handoff)."""

    items: list
    results: list  # FunctionToolResult per function call that has an output
    approvals: list  # ToolApprovalItem per call waiting for a person
    handoff: Optional[Call]
    guardrail_results: list
    nested: dict  # call id -> paused RunState of an agent-as-tool call
    unstarted: list = field(default_factory=list)  # runnable calls the run was cancelled before it started
    limit: Any = None  # the UsageLimitExceeded that kept the calls from running (here, or inside an agent tool)


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
    """Not a way to end, a question for the run's `error_handlers`: `kind` ("model_refusal",
    "invalid_final_output", "max_turns") and the `error` raised if no handler answers. With `run_again`, no
    handler means another turn instead (a structured answer that has not come yet)."""

    kind: str
    error: Exception
    run_again: bool = False


@dataclass(eq=False)
class TurnResult:
    """One turn's outcome: the agent whose turn it was, its items (model order, outputs after their calls), the
    step the loop takes next, and the response as classified and settled."""

    agent: Any
    new_items: list
    next_step: Any
    output: ModelOutput = field(default_factory=ModelOutput)
    settled: Optional[SettledCalls] = None
    resumed: bool = False  # a paused turn run again: another resume of the same state may have saved it
    start: int = 0  # where the turn's items begin in `state.generated_items`
    session_input: list = field(default_factory=list)  # the run's new input, saved with its first completed turn
    claim: Optional[str] = None  # a resumed turn's key in the session's ledger (see resumed_turn)


# --- The turn, top to bottom ---------------------------------------------------------------------------


def run_turn(run: Run) -> Generator[Any, None, TurnResult]:
    """One turn: a fresh one calls the model; a paused one (`state.pending`) re-runs its response with the outputs
    it has, and never calls the model (`resumed_turn`: a fresh turn never passes through it).

    Yields stream events; returns the `TurnResult` with `state.generated_items` already holding its items.
    """
    if run.state.pending is not None:
        return resumed_turn(run)
    state = run.state
    setup = prepare_turn(run)
    state.current_turn += 1
    with around(run, "turn", seams.TurnStep(setup.agent, state.current_turn, False)):
        items, replays = yield from start_turn(run, setup)
        turn = TurnResult(setup.agent, [], None, start=len(state.generated_items),
                          session_input=state.unsaved_session_input)
        state.unsaved_session_input = []
        turn.output = output = classify_output(setup, items, run.config)
        output.replays = replays
        if run.streaming:  # what the model said is announced before any tool runs
            yield from stream_events_for(output.items)
        decide_turn(run, setup, turn, {})
    state.record_turn(turn.new_items, turn.settled.guardrail_results, turn.start)
    return turn


def resumed_turn(run: Run) -> TurnResult:
    """A paused turn (`state.pending`) run again from its response's items, the replays it dropped, where its items
    start, the session input it carries, and the outputs its calls already have; no model call.

    Exactly once, for the whole turn: with a session that keeps the ledger, the resume first claims this pause
    of the turn there (`claim_call` on a key of its own). Only one resume of one paused state proceeds: another
    (a retry, a second worker, at once or later) raises `AlreadyResumedError` before it runs or writes anything,
    so the session holds the winner's turn alone."""
    state, pending = run.state, run.state.pending
    setup = prepare_turn(run)
    with around(run, "turn", seams.TurnStep(setup.agent, state.current_turn, True)):
        turn = TurnResult(setup.agent, [], None, resumed=True, start=pending.start,
                          session_input=pending.session_input)
        if run.ledger is not None:
            turn.claim = f"resume:turn-{state.current_turn}:pause-{pending.pauses}"
            won, outcome = caller.call(run.ledger.claim_call, state.run_id, turn.claim)
            if not won:
                raise AlreadyResumedError(state.run_id, state.current_turn, outcome)
        turn.output = output = classify_output(setup, pending.output, run.config)
        output.replays = pending.replays
        for call in output.calls if pending.nested else ():
            call.paused = pending.nested.get(call.call_id)  # an agent tool's inner run continues where it paused
        decide_turn(run, setup, turn, dict(pending.outputs))
    state.record_turn(turn.new_items, turn.settled.guardrail_results, turn.start)
    return turn


def decide_turn(run: Run, setup: TurnSetup, turn: TurnResult, done: dict) -> None:
    """Settle the turn's calls (`done`: the outputs a paused turn already has) and decide its next step."""
    turn.settled = settle_turn(run, setup, turn.output, done, turn.resumed)
    turn.new_items = turn.settled.items
    turn.next_step = decide_next_step(setup, turn.output, turn.settled, run.state.context_wrapper)
    if run.plugins and isinstance(turn.next_step, NextStepInterruption):
        for item in turn.next_step.interruptions:
            seams.emit(run.plugins, "approval", run, item.tool_name, item.call_id, "pending")


def around(run: Run, seam: str, record: Any) -> Any:
    """The active plugins' context around a step (miniagents/seams.py), or nothing when there is none."""
    if not run.plugins:
        return seams.NOTHING
    return seams.around(run.plugins, seam, run, *(() if record is None else (record,)))


def prepare_turn(run: Run) -> TurnSetup:
    """Resolve the current agent for this turn: instructions, enabled tools and handoffs, settings."""
    agent, ctx, config = run.state.current_agent, run.state.context_wrapper, run.config
    tools, hosted = {}, []
    for tool in agent.get_enabled_tools(ctx):
        if isinstance(tool, HostedTool):  # run by the provider: sent, never called here
            hosted.append(tool)
        else:
            if tool.name in tools:
                name_clash(config, "tools", tool.name, tools[tool.name], tool)  # the last one wins
            tools[tool.name] = tool
    handoffs = offered_handoffs(agent, ctx, config, tools) if agent.handoffs else {}
    settings = agent.model_settings
    if config.model_settings is not None:  # the run's settings laid over the agent's
        settings = settings.resolve(config.model_settings)
    if agent.reset_tool_choice and settings.tool_choice and agent.name in run.state.agents_that_used_tools:
        settings = dataclasses.replace(settings, tool_choice=None)
    output = None if agent.output_type in (None, str) else output_schema(agent.output_type)
    setup = TurnSetup(agent, agent.system_prompt(ctx), tools, handoffs, settings,
                      None if output is None or output.is_plain_text() else output, hosted, agent.get_prompt(ctx))
    return seams.change(run.plugins, "offer", run, setup) if run.plugins else setup


def offered_handoffs(agent: Any, ctx: Any, config: RunConfig, tools: dict) -> dict:
    """tool name -> Handoff for the agent's enabled handoffs (the first one declared wins a name)."""
    handoffs: dict = {}
    for handoff in agent.get_enabled_handoffs(ctx):
        if handoff.tool_name in handoffs:  # never silently the last: the first one wins
            name_clash(config, "handoffs", handoff.tool_name, handoffs[handoff.tool_name], handoff)
        else:
            handoffs[handoff.tool_name] = handoff
    for name in sorted(set(tools) & set(handoffs)):
        name_clash(config, "a tool and a handoff", name, tools[name], handoffs[name])
        del tools[name]  # the handoff wins, as upstream's does
    return handoffs


COLLISIONS = {  # upstream's texts word for word: programs and tests match on them
    "tools": "Ambiguous function tool configuration: the tool name `{}` is used by multiple tools. Assign a unique "
             "routed name to every colliding function tool with `name_override=`, `tool_name=`, or a namespace.",
    "handoffs": "Ambiguous handoff configuration: the handoff tool name `{}` is used by multiple handoffs. Pass a "
                "unique `tool_name_override=` to each handoff.",
    "a tool and a handoff": "Ambiguous tool routing configuration: the tool name `{}` is used by both a function "
                            "tool and a handoff. Assign a unique routed name to every colliding function tool and "
                            "handoff with `name_override=`, `tool_name=`, `tool_name_override=`, or a namespace.",
}


DERIVED = ("Ambiguous {} configuration: agents {!r} and {!r} both derive the {} `{}`. Pass an explicit {} to one "
           "of them.")  # upstream's text when both names were made from agents' names


def derived_from(entry: Any) -> Optional[str]:
    """The name of the agent whose name `entry` (an agent tool, a handoff) took its tool name from, else None."""
    agent = getattr(entry, "_agent", None)
    if agent is None or getattr(entry, "tool_name", getattr(entry, "name", None)) != (
            Handoff.default_tool_name(agent) if isinstance(entry, Handoff) else tool_name_from(agent.name)):
        return None
    return agent.name


def name_clash(config: RunConfig, kind: str, name: str, first: Any, second: Any) -> None:
    """Two tools, two handoffs, or a tool and a handoff with one name: a `UserError` under the "error" policy,
    else a warning, and the last tool, the first handoff, or the handoff over the tool is offered. Two agents
    whose names both became it are named, as upstream does."""
    message = COLLISIONS[kind].format(name)
    owners = (derived_from(first), derived_from(second))
    if None not in owners and owners[0] != owners[1]:
        overrides = ("`tool_name=`", "`tool_name_override=`", "`tool_name=` or `tool_name_override=`")
        surface, label, override = {"tools": ("agent tool", "tool name", overrides[0]),
                                    "handoffs": ("handoff", "handoff tool name", overrides[1])}.get(
            kind, ("agent routing", "tool name", overrides[2]))
        message = DERIVED.format(surface, *owners, label, name, override)
    if config.tool_name_collision_policy == "error":
        raise UserError(message)
    warn(message)


def start_turn(run: Run, setup: TurnSetup) -> Generator[Any, None, tuple]:
    """Run the first turn's input guardrails, call the model; return the response's items (every call with an id
    of its own) and how many calls it repeated from earlier turns (dropped)."""
    state = run.state
    if (setup.agent.input_guardrails or run.config.input_guardrails) and state.current_turn == 1 \
            and not state.model_responses:
        response = yield from guarded_model_call(run, setup)
    else:
        response = yield from call_model(run, setup)
    if state.server_managed or not any(needs_call_id(item, state.call_ids) for item in response.output):
        return response.output, 0
    return assign_call_ids(response.output, state)


def guarded_model_call(run: Run, setup: TurnSetup) -> Generator[Any, None, ModelResponse]:
    """The first turn's model call with the input guardrails around it (`check_input`): a trip raises, and a
    parallel one's trip discards the response before any tool runs."""
    racing = check_input(run, list(setup.agent.input_guardrails) + list(run.config.input_guardrails or ()))
    response = yield from call_model(run, setup)
    racing()
    return response


def check_input(run: Run, guardrails: list) -> Callable[[], None]:
    """The first turn's input guardrails: the blocking ones now, before the model; the parallel ones beside the
    first model call (returns the join; a trip discards the response before any tool runs)."""
    from .guardrails import run_input_guardrails  # loaded only when a run has guardrails

    state = run.state
    check = (state.starting_agent, state.original_input, state.input_guardrail_results)
    run_input_guardrails(run, [g for g in guardrails if not g.run_in_parallel], *check)
    racing = [g for g in guardrails if g.run_in_parallel]
    if not racing:
        return lambda: None
    return caller.start_thread(lambda: run_input_guardrails(run, racing, *check), "input-guardrails")


def call_model(run: Run, setup: TurnSetup) -> Generator[Any, None, ModelResponse]:
    """Send the transcript to the agent's model (streamed: each event is yielded) and record the response."""
    state, config, agent = run.state, run.config, setup.agent
    model_input, instructions = state.transcript[state.server_known:], setup.instructions  # a copy: the model's own
    if config.call_model_input_filter is not None or config.reasoning_item_id_policy == "omit" or run.plugins:
        model_input, instructions = adjusted_input(run, setup, model_input)
    state.context_wrapper.turn_input = model_input
    model = get_model(agent, config)
    if run.plugins:  # a shell may wrap it (retries the run manages: miniagents/retry/)
        model = seams.change(run.plugins, "model", run, setup, model)
    # As upstream, the model gets the objects the agent offers; adapters send their `spec()`s.
    args = (instructions, model_input, setup.settings, list(setup.tools.values()) + setup.hosted, setup.output,
            list(setup.handoffs.values()), model_tracing(config))
    ids = {"previous_response_id": state.previous_response_id, "conversation_id": state.conversation_id}
    if setup.prompt is not None:
        ids["prompt"] = setup.prompt
    record = seams.ModelStep(agent, model, instructions, model_input, setup.settings)
    with around(run, "model_call", record):
        if run.streaming:
            response = yield from stream_response(model, args, ids)
        else:
            response = model.get_response(*args, **ids)
            if not isinstance(response, ModelResponse):  # a model written for upstream's async `Model`: awaited
                response = caller.resolve(response)
        record.response = response
        # A model call is one request, whatever the model reported: usage limits must not trust the model.
        state.context_wrapper.usage.add(response.usage if response.usage.requests else
                                        dataclasses.replace(response.usage, requests=1))
        state.model_responses.append(response)
    if state.server_managed:  # what was sent is the server's now; the next request chains to this response
        state.server_known = len(state.transcript)
        if (state.auto_previous_response_id or state.previous_response_id) and response.response_id:
            state.previous_response_id = response.response_id
    return response


def adjusted_input(run: Run, setup: TurnSetup, model_input: list) -> tuple:
    """The model input and instructions after `RunConfig.call_model_input_filter`, the reasoning-id policy and the
    plugins' `model_input` seam (capabilities' `process_context`)."""
    config, instructions = run.config, setup.instructions
    if config.call_model_input_filter is not None:
        data = caller.call(config.call_model_input_filter, CallModelData(
            ModelInputData(model_input, instructions), setup.agent, run.state.context_wrapper.context))
        if not isinstance(data, ModelInputData):
            raise UserError("call_model_input_filter must return a ModelInputData instance")
        model_input, instructions = drop_orphans(data.input), data.instructions
    if config.reasoning_item_id_policy == "omit":
        model_input = [{k: v for k, v in i.items() if k != "id"} if i.get("type") == "reasoning" else i
                       for i in model_input]
    if run.plugins:
        model_input = seams.change(run.plugins, "model_input", run, setup, model_input)
    return model_input, instructions


def model_tracing(config: RunConfig) -> ModelTracing:
    """What the model may record in its own traces, from the run's tracing settings."""
    if config.tracing_disabled:
        return ModelTracing.DISABLED
    return ModelTracing.ENABLED if config.trace_include_sensitive_data else ModelTracing.ENABLED_WITHOUT_DATA


def stream_response(model: Any, args: tuple, ids: dict) -> Generator[Any, None, ModelResponse]:
    """A streamed model call: every event is yielded; the response is the `response.completed` one."""
    response = None
    for event in caller.iterate(model.stream_response(*args, **ids)):
        yield RawResponsesStreamEvent(data=event)
        if event.get("type") == "response.completed":
            final = event["response"]
            response = ModelResponse(output=list(final.get("output") or []),
                                     usage=Usage.from_json(final.get("usage")), response_id=final.get("id"))
    if response is None:
        raise AgentsException("the model's stream ended without a response.completed event")
    return response


_default_provider = None  # made on first use and kept for the process: it reuses connections across runs


def get_model(agent: Any, config: RunConfig) -> Any:
    """The `Model` to call: the run's or the agent's, a name resolved by the run's (or the default) provider."""
    global _default_provider
    model = config.model or agent.model
    if model is not None and not isinstance(model, str):
        return model
    provider = config.model_provider
    if provider is None:
        if _default_provider is None:  # upstream's default: prefixes route ("openai/gpt-4.1"), the rest is OpenAI
            from .models.provider import MultiProvider

            _default_provider = MultiProvider()
        provider = _default_provider
    return provider.get_model(model)


NUMBERED_ID = re.compile(r"([A-Za-z]+[_-])?\d+")  # "0", "call_1", "tool-3": numbered per response, not unique


def needs_call_id(item: dict, known: set) -> bool:
    """A function call with no id, or an id the run or its history already used (see `assign_call_ids`)."""
    return item.get("type") == "function_call" and (not item.get("call_id") or item.get("call_id") in known)


def assign_call_ids(output: list, state: RunState) -> tuple:
    """Fix every function call's id once per response (so a resumed turn sees the same ids); returns (output,
    how many calls were dropped as replays). A call id must never answer two different calls, and a call must
    never run twice, for servers that number ids per response ("call_0" in every response) and for servers
    whose ids are unique alike. A call with no id, or with an id used earlier in the run or its history:
    - a numbered id is the server's count: it is a new call, and gets a fresh id;
    - a unique id with the same name and arguments as the earlier call is a replay: it is dropped (the earlier
      output stands; nothing runs again);
    - a unique id on a different call gets a fresh id: it is a new call.
    The server-managed conversation keeps the ids it gave (the caller skips this)."""
    fixed, replays, earlier = [], 0, None
    for item in output:
        call_id = item.get("call_id")
        if needs_call_id(item, state.call_ids):
            if call_id and not NUMBERED_ID.fullmatch(call_id):
                earlier = earlier if earlier is not None else _calls_by_id(state)
                if earlier.get(call_id) == _invocation(item):
                    replays += 1
                    continue
            item = {**item, "call_id": new_call_id()}
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
    except (TypeError, ValueError):
        arguments = text
    return call.get("name"), arguments


def classify_output(setup: TurnSetup, output: list, config: RunConfig) -> ModelOutput:
    """Turn output items into run items and calls (a call id repeated within the response is dropped)."""
    agent = setup.agent
    classified, seen = ModelOutput(items=[], raw=output), set()
    for item in output:
        kind = item.get("type", "message" if item.get("role") == "assistant" else None)
        if kind == "function_call":
            call = RawItem(item)
            if call["call_id"] in seen:
                warn("ignoring repeated call id %r in one response", call["call_id"])
                continue
            seen.add(call["call_id"])
            classified.items.append(classified_call(call, setup, config, classified.calls))
        elif kind == "message":
            classified.items.append(MessageOutputItem(agent=agent, raw_item=item))
        elif kind == "reasoning":
            if config.reasoning_item_id_policy == "omit":  # kept without its id everywhere it goes next
                item = {k: v for k, v in item.items() if k != "id"}
            classified.items.append(ReasoningItem(agent=agent, raw_item=item))
        elif kind in HOSTED_ITEM_TYPES:  # a hosted tool ran on the provider's side: kept, sent back as it came
            classified.items.append(ToolCallItem(agent=agent, raw_item=item))
        else:
            warn("ignoring output item of unsupported type %r", kind)
    return classified


def classified_call(call: RawItem, setup: TurnSetup, config: RunConfig, calls: list) -> Any:
    """One function call: its run item, and its `Call` added to `calls` (a handoff, a known tool, or unknown)."""
    name = call.get("name") or ""
    if name in setup.handoffs:
        calls.append(Call(call, call["call_id"], setup.handoffs[name], "handoff"))
        return HandoffCallItem(agent=setup.agent, raw_item=call)
    tool = setup.tools.get(name)
    if tool is None and config.tool_not_found_behavior == "raise_error":
        raise ModelBehaviorError(f"Tool {name} not found in agent {setup.agent.name}")
    calls.append(Call(call, call["call_id"], tool, "function" if tool else "unknown"))
    return ToolCallItem(agent=setup.agent, raw_item=call, description=getattr(tool, "description", None))


def plan_tool_calls(run: Run, setup: TurnSetup, calls: list, settled: dict) -> tuple:
    """Decide each function call's fate; return (to_run, answered {call_id: text}, waiting for approval).

    `settled` holds the calls that already have an output: they are skipped, never run again.
    """
    ctx, to_run, answered, approvals = run.state.context_wrapper, [], {}, []
    for call in calls:
        if call.kind == "handoff" or call.call_id in settled:
            continue
        if call.kind == "unknown":
            default = f"Tool '{call.item.get('name') or ''}' not found. Available tools: " \
                      f"{', '.join(sorted(setup.tools)) or 'none'}."
            answered[call.call_id] = _format_error(run.config, ctx, "tool_not_found", call.item, default)
        elif call.target.needs_approval is False and not ctx.approvals:  # no person is asked
            to_run.append(call)
        else:
            decide_approval(run, call, to_run, answered, approvals)
    return to_run, answered, approvals


def decide_approval(run: Run, call: Call, to_run: list, answered: dict, approvals: list) -> None:
    """A call a person may have to approve: run it (approved, or its tool's policy asks no one), answer it
    (rejected; arguments its policy cannot read), or keep it waiting for a person."""
    ctx, name = run.state.context_wrapper, call.item.get("name") or ""
    decision = ctx.is_tool_approved(name, call.call_id)
    if decision is True and not ctx.approves_arguments(name, call.call_id, call.item.get("arguments")):
        decision = None  # approved for other arguments (the RunState document was edited): a person decides again
    if decision is not None and run.plugins:  # a person decided (this call, or every call of the tool)
        seams.emit(run.plugins, "approval", run, name, call.call_id, "approved" if decision else "rejected")
    if decision is None:
        try:
            decision = True if not _needs_approval(call.target, ctx, call.item) else None
        except ArgumentsError as error:  # not a JSON object: the model fixes it, no person is asked
            answered[call.call_id] = failure_text(call.target, ctx, call.item.get("arguments") or "", error)
            return
    if decision is True:
        to_run.append(call)
    elif decision is False:
        answered[call.call_id] = ctx.rejection_message(name, call.call_id) or _format_error(
            run.config, ctx, "approval_rejected", call.item, REJECTED)
    else:
        approvals.append(call)
def _format_error(config: RunConfig, ctx: Any, kind: str, call: RawItem, default: str) -> str:
    if config.tool_error_formatter is None:
        return default
    args = ToolErrorFormatterArgs(kind, "function", call.get("name", ""), call["call_id"], default, ctx)
    return caller.call(config.tool_error_formatter, args) or default


def _needs_approval(tool: Any, ctx: Any, call: RawItem) -> bool:
    """The tool's approval policy for this call. A policy sees only arguments that are a JSON object
    (`ArgumentsError` otherwise); one that raises asks a person, the safe answer."""
    flag = tool.needs_approval
    if not callable(flag):
        return bool(flag)
    params = parse_arguments(call.get("arguments"), tool.name)
    try:
        return bool(caller.call(flag, ctx, params, call["call_id"]))
    except Exception:
        warn("needs_approval of tool %r raised; call %s waits for a person", tool.name,
                       call["call_id"], exc_info=True)
        return True


def run_tools(run: Run, setup: TurnSetup, to_run: list, record: bool) -> dict:
    """Run calls, concurrently when there are several (daemon threads, bounded by the config); returns {call id:
    (value, text, guardrail results)} for the calls that ran. With `record`, each output is recorded in the
    ledger as soon as its call finished.

    A call that raises (a propagating failure or tripwire) does not stop its siblings; after all have finished,
    the first such exception in call order is raised. Once the run is cancelled no further call starts (the
    ones running finish). Ctrl-C interrupts the wait at once: a tool's thread cannot be stopped, so it is left
    to finish on its own, and nothing of the turn is recorded.
    """
    concurrent = len(to_run) > 1 and run.config.max_function_tool_concurrency != 1
    joins = start_tools(run, setup, to_run, record) if concurrent else {}
    ran, failure = {}, None
    for call in to_run:
        if (call.call_id not in joins) if concurrent else run.state.cancel_mode == "immediate":
            break  # cancelled: what has not started never does
        try:
            ran[call.call_id] = joins[call.call_id]() if concurrent else _run_one(run, setup.agent, call, record)
        except caller.Cancelled:  # its async task was stopped by a cancel: like a call that never started
            continue
        except Exception as error:
            failure = failure or error
    if failure is not None:
        raise failure
    return ran


def start_tools(run: Run, setup: TurnSetup, to_run: list, record: bool) -> dict:
    """Start each call in a thread of its own, at most `max_function_tool_concurrency` at once: {call id: join}
    for the calls that started before the run was cancelled."""
    import threading

    slots, joins = threading.BoundedSemaphore(run.config.max_function_tool_concurrency or len(to_run)), {}

    def job(call: Call) -> tuple:
        try:
            return _run_one(run, setup.agent, call, record)
        finally:
            slots.release()

    for call in to_run:
        slots.acquire()
        if run.state.cancel_mode == "immediate":
            slots.release()
            break
        joins[call.call_id] = caller.start_thread(lambda c=call: job(c), f"tool-{call.target.name}")
    return joins


def _run_one(run: Run, agent: Any, call: Call, record: bool) -> tuple:
    """One call. With `record` (a resumed turn, a session with a ledger) it is claimed in the ledger just before
    it starts, so a call a cancel kept from starting stays unclaimed (runnable on the next resume), and its
    outcome is recorded the moment it is known. A call claimed before is not run again: it gets the output
    recorded then, or (that claimant is still running, or it crashed mid-call) a message saying so.
    Continuing an agent tool's paused inner run is not claimed here: its own calls are claimed inside it."""
    if record and call.paused is None:
        won, recorded = caller.call(run.ledger.claim_call, run.state.run_id, call.call_id)
        if not won:
            text = recorded if recorded is not None else NOT_RUN_AGAIN
            return text, text, [], None
    tool, item, arguments = call.target, call.item, call.item.get("arguments") or ""
    tool_ctx = ToolContext.from_agent_context(run.state.context_wrapper, call.call_id, item, agent,
                                              tool_name=tool.name, tool_arguments=arguments, run_config=run.config)
    tool_ctx.resume_state, tool_ctx.ledger = call.paused, run.ledger
    if tool.tool_input_guardrails or tool.tool_output_guardrails or run.plugins:
        value, text, results = _invoke_guarded(run, agent, tool, tool_ctx, arguments)
    else:  # nothing around the call: just the call
        (value, text), results = invoke_tool(tool, tool_ctx, arguments), []
    if text is None:  # an agent tool paused inside; it is recorded when it completes
        return value, text, results, None
    if record:
        caller.call(run.ledger.settle_call, run.state.run_id, call.call_id, text)
    if tool.custom_data_extractor is None:
        return value, text, results, None
    return value, text, results, extract_custom_data(tool, tool_ctx, value, function_call_output(call.call_id, text))


def _invoke_guarded(run: Run, agent: Any, tool: Any, tool_ctx: ToolContext, arguments: str) -> tuple:
    """The call with what surrounds it: approval (done) -> input guardrails -> invoke (inside the `tool_call`
    seam) -> output guardrails; returns (value, text, guardrail results). An agent tool whose inner run paused
    returns its `NestedInterruption` as the value, text None."""
    results: list = []
    if tool.tool_input_guardrails:
        from .guardrails import check_tool_input  # loaded only once some tool has guardrails

        rejected = check_tool_input(run, tool, tool_ctx, agent, results)
        if rejected is not None:
            return rejected, rejected, results
    record = seams.ToolStep(agent, tool, tool_ctx, arguments)
    with around(run, "tool_call", record):
        value, text = invoke_tool(tool, tool_ctx, arguments)
        if text is None:
            return value, text, results
        record.value, record.text, record.error = value, text, tool_ctx.failure
    if tool.tool_output_guardrails:
        from .guardrails import check_tool_output

        rejected = check_tool_output(run, tool, tool_ctx, agent, value, results)
        if rejected is not None:
            return rejected, rejected, results
    return value, text, results


def settle_turn(run: Run, setup: TurnSetup, output: ModelOutput, settled: dict, resumed: bool) -> SettledCalls:
    """Plan, run and order one response's calls.

    `settled` (call id -> (value, text)) holds the calls a paused turn settled before it paused: they are never
    run again. A resumed turn's calls are claimed in the ledger as they start (`_run_one`).
    """
    agent = setup.agent
    to_run, answered, approvals = plan_tool_calls(run, setup, output.calls, settled)
    limits, usage = run.config.usage_limits, run.state.context_wrapper.usage
    limit = limits.exceeded(usage, tool_calls=len(to_run)) if limits is not None and to_run else None
    ran = {} if limit else run_tools(run, setup, to_run, resumed and run.ledger is not None)
    usage.tool_calls += len(ran)
    still_paused = {i: ran[i][0].state for i in ran if isinstance(ran[i][0], NestedInterruption)}
    approval_items = []
    if approvals or still_paused:
        approval_items, limit = waiting_for_a_person(run, agent, approvals, ran, still_paused, limit)
    results, outputs, guardrail_results, handoff = [], [], [], None
    for call in output.calls:
        call_id = call.call_id
        if call.kind == "handoff":
            if handoff is not None:  # the first handoff wins; the others are answered
                outputs.append(ToolCallOutputItem(agent=agent, raw_item=function_call_output(
                    call_id, MULTIPLE_HANDOFFS), output=MULTIPLE_HANDOFFS))
            handoff = handoff or call
            continue
        custom_data = None
        if call_id in ran and call_id not in still_paused:
            value, text, found, custom_data = ran[call_id]
            guardrail_results.extend(found)
        elif call_id in settled:
            value, text = settled[call_id]
        elif call_id in answered:
            value = text = answered[call_id]
        else:
            continue  # waiting for a person (or its inner run is), or never started: no output yet
        item = ToolCallOutputItem(agent=agent, raw_item=function_call_output(call_id, text), output=value,
                                  custom_data=custom_data)
        outputs.append(item)
        if call.kind == "function":
            results.append(FunctionToolResult(tool=call.target, output=value, run_item=item))
    unstarted = [c for c in to_run if c.call_id not in ran]  # the run was cancelled before they started
    return SettledCalls(output.items + outputs, results, approval_items, handoff, guardrail_results, still_paused,
                        unstarted, UsageLimitExceeded(*limit) if isinstance(limit, tuple) else limit)


def waiting_for_a_person(run: Run, agent: Any, approvals: list, ran: dict, still_paused: dict, limit: Any) -> tuple:
    """(the turn's `ToolApprovalItem`s, the limit that stopped it): its own calls waiting for approval, then those
    of each agent tool whose inner run waits for a person (or stopped at the run's usage limits)."""
    scope = run.state.context_wrapper.approval_scope
    approval_items = [ToolApprovalItem(agent=agent, raw_item=c.item, tool_name=c.item.get("name", ""),
                                       approval_scope=scope) for c in approvals]
    for call_id in still_paused:  # an agent tool whose inner run waits for a person: its approvals surface here
        approval_items.extend(ran[call_id][0].interruptions)
        limit = limit or ran[call_id][0].limit  # or stopped at the run's usage limits
    return approval_items, limit


def decide_next_step(setup: TurnSetup, output: ModelOutput, settled: SettledCalls, ctx: Any) -> Any:
    """Approval pending (or calls left unstarted by a cancel) > handoff > tool_use_behavior > run again (calls
    were made) > final output."""
    if settled.approvals or settled.unstarted or settled.limit:  # a pause: the turn resumes with the outputs it has
        return NextStepError("usage_limit", settled.limit) if settled.limit else NextStepInterruption(settled.approvals)
    if settled.handoff is not None:
        return NextStepHandoff(settled.handoff)
    if settled.results and setup.agent.tool_use_behavior != "run_llm_again":  # the default: the model goes on
        verdict = tools_final_output(setup.agent, settled.results, ctx)
        if verdict.is_final_output:
            value = verdict.final_output
            return NextStepFinalOutput(str(value) if setup.output is None and not isinstance(value, str) else value)
    if output.calls or output.replays:
        return NextStepRunAgain()
    last = next((i.raw_item for i in reversed(output.items) if isinstance(i, MessageOutputItem)), None)
    refusal = message_refusal(last) if last is not None else None
    if refusal is not None:
        return NextStepError("model_refusal", ModelRefusalError(refusal))
    text = message_text(last) if last is not None else ""
    if setup.output is None:
        return NextStepFinalOutput(text)
    if not text:  # nothing yet for a structured output type: run again, unless an error handler answers
        error = ModelBehaviorError("Model returned no final output for the structured output type.")
        return NextStepError("invalid_final_output", error, run_again=True)
    try:
        return NextStepFinalOutput(setup.output.validate_json(text))
    except InvalidFinalOutput as e:
        return NextStepError("invalid_final_output", e)


def tools_final_output(agent: Any, results: list, ctx: Any) -> ToolsToFinalOutputResult:
    """Ask `tool_use_behavior` whether the tool results end the run."""
    behavior = agent.tool_use_behavior
    if behavior == "run_llm_again":
        return ToolsToFinalOutputResult(False)
    if behavior == "stop_on_first_tool":
        return ToolsToFinalOutputResult(True, results[0].output)
    if isinstance(behavior, dict):
        names = behavior["stop_at_tool_names"]
        for result in results:
            if result.tool.name in names:
                return ToolsToFinalOutputResult(True, result.output)
        return ToolsToFinalOutputResult(False)
    if callable(behavior):
        verdict = caller.call(behavior, ctx, results)
        if not isinstance(verdict, ToolsToFinalOutputResult):
            raise UserError(f"tool_use_behavior callable must return ToolsToFinalOutputResult, got {verdict!r}")
        return verdict
    raise UserError(f"Invalid tool_use_behavior: {behavior!r}")
