"""The Runner and the loop: one function, `_loop`, that reads like DESIGN.md's data-flow picture.

The loop is a generator: it yields stream events and returns the `RunResult`. `run_sync` drains it,
`run_streamed` hands its events to the caller and `await Runner.run(...)` drains it in a worker
thread, so there is exactly one loop. All run state lives in a `RunState`; the steps of a turn
are the verb-named functions of turn.py.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, Generator, Optional

from . import caller
from .config import CallModelData, ModelInputData, RunConfig
from .context import RunContextWrapper, Usage
from .errors import AgentsException, MaxTurnsExceeded, RunErrorDetails, UserError
from .handoffs import HandoffInputData
from .hooks import notify
from .items import HandoffOutputItem, drop_orphans, function_call_output, to_input_list
from .models.interface import ModelResponse, ModelSettings
from .result import (AgentUpdatedStreamEvent, RawResponsesStreamEvent, RunResult, RunResultStreaming,
                     stream_events_for)
from .state import PendingTurn, RunState
from .steps import NextStepFinalOutput, NextStepHandoff, NextStepInterruption, SingleStepResult
from .turn import (apply_error_handler, assign_call_ids, classify_output, decide_next_step, output_schema_for,
                   settle_turn)

DEFAULT_MAX_TURNS = 10
logger = logging.getLogger("miniagents")


@dataclass(eq=False)
class _Turn:
    """What the current agent offers the model this turn."""

    instructions: Optional[str]
    tools: dict
    handoffs: dict
    settings: ModelSettings
    output_schema: Optional[dict]
    wrapped: bool


# --- Preparing a turn ----------------------------------------------------------------------------

def prepare_turn(agent: Any, state: RunState, config: RunConfig) -> _Turn:
    ctx = state.context_wrapper
    tools: dict = {}
    for tool in agent.get_enabled_tools(ctx):
        if tool.name in tools:
            if config.tool_name_collision_policy == "error":
                raise UserError(f"agent {agent.name!r} has two tools named {tool.name!r}")
            logger.warning("agent %r has two tools named %r; the last one wins", agent.name, tool.name)
        tools[tool.name] = tool
    handoffs = {h.tool_name: h for h in agent.get_enabled_handoffs(ctx)}
    clash = set(tools) & set(handoffs)
    if clash:
        raise UserError(f"agent {agent.name!r}: {sorted(clash)} is both a tool and a handoff name; rename one")
    settings = agent.model_settings.resolve(config.model_settings)
    if agent.reset_tool_choice and agent.name in state.agents_that_used_tools and settings.tool_choice:
        settings = dataclasses.replace(settings, tool_choice=None)
    schema, wrapped = output_schema_for(agent.output_type)
    return _Turn(agent.get_system_prompt(ctx), tools, handoffs, settings, schema, wrapped)


_default_provider: list = []  # one OpenAIProvider per process, made on first use: it keeps connections


def get_model(agent: Any, config: RunConfig) -> Any:
    model = config.model or agent.model
    if model is not None and not isinstance(model, str):
        return model
    provider = config.model_provider
    if provider is None:
        if not _default_provider:
            from .models.provider import OpenAIProvider

            _default_provider.append(OpenAIProvider())
        provider = _default_provider[0]
    return provider.get_model(model)


def call_model(agent: Any, turn: _Turn, state: RunState, config: RunConfig, streaming: bool,
               hooks: Any) -> Generator[Any, None, ModelResponse]:
    model_input, instructions = list(state.transcript), turn.instructions
    if config.call_model_input_filter is not None:
        data = caller.call(config.call_model_input_filter, CallModelData(
            ModelInputData(model_input, instructions), agent, state.context_wrapper.context))
        model_input, instructions = drop_orphans(data.input), data.instructions
    if config.reasoning_item_id_policy == "omit":
        model_input = [{k: v for k, v in i.items() if k != "id"} if i.get("type") == "reasoning" else i
                       for i in model_input]
    state.context_wrapper.turn_input = model_input
    model = get_model(agent, config)
    tools = [t.spec() for t in turn.tools.values()]
    handoffs = [h.spec() for h in turn.handoffs.values()]
    args = (instructions, model_input, turn.settings, tools, turn.output_schema, handoffs, None)
    ids = {"previous_response_id": state.previous_response_id, "conversation_id": state.conversation_id}
    notify(hooks, "on_llm_start", state.context_wrapper, agent, instructions, model_input)
    if not streaming:
        response = model.get_response(*args, **ids)
    else:
        response = None
        for event in model.stream_response(*args, **ids):
            yield RawResponsesStreamEvent(data=event)
            if event.get("type") == "response.completed":
                final = event["response"]
                response = ModelResponse(output=list(final.get("output") or []),
                                         usage=Usage.from_json(final.get("usage")), response_id=final.get("id"))
        if response is None:
            raise AgentsException("the model's stream ended without a response.completed event")
    state.context_wrapper.usage.add(response.usage)
    state.model_responses.append(response)
    notify(hooks, "on_llm_end", state.context_wrapper, agent, response)
    if state.auto_previous_response_id and response.response_id:
        state.previous_response_id = response.response_id
    return response


# --- Error handlers, handoffs, sessions --------------------------------------------------------


def execute_handoff(agent: Any, call: Any, turn_start: int, state: RunState, config: RunConfig,
                    hooks: Any) -> Any:
    """Run the winning handoff: call it, record its output, filter the history, switch agents.
    Returns the handoff's output item."""
    handoff = call.target
    new_agent = caller.call(handoff.on_invoke_handoff, state.context_wrapper, call.raw.get("arguments") or "")
    output = function_call_output(call.raw["call_id"], handoff.get_transfer_message(new_agent))
    item = HandoffOutputItem(agent=agent, raw_item=output, source_agent=agent, target_agent=new_agent)
    state.generated_items.append(item)
    state.transcript.append(output)
    input_filter = handoff.input_filter or config.handoff_input_filter
    if input_filter is not None:
        if not callable(input_filter):
            raise UserError(f"Invalid input filter: {input_filter!r}")
        data = HandoffInputData(
            input_history=state.original_input if isinstance(state.original_input, str)
            else tuple(state.original_input),
            pre_handoff_items=tuple(state.generated_items[:turn_start]),
            new_items=tuple(state.generated_items[turn_start:]), run_context=state.context_wrapper)
        filtered = caller.call(input_filter, data)
        if not isinstance(filtered, HandoffInputData):
            raise UserError(f"Invalid input filter result: {filtered!r}")
        history = filtered.input_history
        state.original_input = history if isinstance(history, str) else list(history)
        state.generated_items = list(filtered.pre_handoff_items) + list(filtered.new_items)
        state.rebuild_transcript()
    if hooks is not None:
        caller.resolve(hooks.on_handoff(state.context_wrapper, agent, new_agent))
    if new_agent.hooks is not None:
        caller.resolve(new_agent.hooks.on_handoff(state.context_wrapper, new_agent, agent))
    state.current_agent = new_agent
    return item


def load_session_history(session: Any, input: Any, config: RunConfig) -> tuple:
    """(history + new input, the new input alone): history is read once, orphans dropped."""
    settings = config.session_settings
    limit, limit_turns = getattr(settings, "limit", None), getattr(settings, "limit_turns", None)
    if limit_turns is not None:  # only sessions that understand turns take it (SQLiteSession does)
        history = session.get_items(limit, limit_turns=limit_turns)
    else:
        history = session.get_items(limit) if limit is not None else session.get_items()
    new_items = to_input_list(input)
    if config.session_input_callback is not None:
        return list(caller.call(config.session_input_callback, history, new_items)), new_items
    return drop_orphans(list(history)) + new_items, new_items


def outputs_in_session(session: Any) -> dict:
    """Call id -> output text, for every call the session already settled (the exactly-once record)."""
    return {i["call_id"]: (i.get("output"), i.get("output")) for i in session.get_items()
            if i.get("type") == "function_call_output" and "call_id" in i}


# --- The loop ---------------------------------------------------------------------------------


def _loop(state: RunState, config: RunConfig, session: Any, handlers: dict, streaming: bool,
          hooks: Any) -> Generator[Any, None, RunResult]:
    ctx = state.context_wrapper
    yield AgentUpdatedStreamEvent(new_agent=state.current_agent)
    notify(hooks, "on_agent_start", ctx, state.current_agent)
    while True:
        agent = state.current_agent
        if state.cancel_mode == "after_turn" and state.pending is None:
            return RunResult.from_state(state, agent, None)
        turn = prepare_turn(agent, state, config)
        fresh = state.pending is None
        if fresh:  # a new turn: one model call
            if state.max_turns is not None and state.current_turn >= state.max_turns:
                return out_of_turns(state, agent, config, handlers, hooks)
            yield from start_turn(agent, turn, state, config, streaming, hooks)
            in_session: dict = {}
        else:  # resuming a paused turn: the session may already hold some of its outputs
            in_session = outputs_in_session(session) if session is not None else {}
        pending = state.pending
        processed = classify_output(agent, pending.output, turn.tools, turn.handoffs, config)
        if fresh:  # what the model said is announced before any tool runs
            yield from stream_events_for(processed.items)
        settled = settle_turn(agent, processed, ctx, config, {**pending.done, **in_session}, turn.tools,
                              pending.nested, hooks)
        step = decide_next_step(agent, processed, settled, ctx, turn.output_schema is not None, turn.wrapped,
                                lambda kind, error, items, results, run_again=False: apply_error_handler(
                                    handlers, kind, error, state, agent, items, results, run_again))
        state.record_turn(step.new_items, settled.guardrail_results)
        if isinstance(step.next_step, NextStepInterruption):
            return pause(state, agent, step, settled)
        state.pending = None
        new_items = step.new_items
        state.transcript.extend(i.raw_item for i in new_items)
        if processed.calls and any(c.kind != "handoff" for c in processed.calls):
            state.agents_that_used_tools.add(agent.name)
        if isinstance(step.next_step, NextStepHandoff):
            new_items = new_items + [execute_handoff(agent, step.next_step.call, pending.start, state, config,
                                                     hooks)]
        if session is not None and not any(i.raw_item.get("call_id") in in_session for i in new_items):
            session.add_items(pending.session_input + [i.raw_item for i in new_items])  # one transaction
        yield from stream_events_for(new_items[len(processed.items):])  # outputs, once settled
        if isinstance(step.next_step, NextStepHandoff):
            yield AgentUpdatedStreamEvent(new_agent=state.current_agent)
            notify(hooks, "on_agent_start", ctx, state.current_agent)
        elif isinstance(step.next_step, NextStepFinalOutput):
            return finish(state, agent, step.next_step.output, config, hooks)


def start_turn(agent: Any, turn: _Turn, state: RunState, config: RunConfig, streaming: bool,
               hooks: Any) -> Generator[Any, None, None]:
    """Count the turn, run the first turn's input guardrails, call the model, hold the response."""
    state.current_turn += 1
    join_guardrails: Callable[[], None] = lambda: None  # noqa: E731
    guardrails = list(agent.input_guardrails) + list(config.input_guardrails or ())
    if guardrails and state.current_turn == 1 and not state.model_responses:
        from .guardrails import run_input_guardrails  # loaded only when a run has guardrails

        check = (state.starting_agent, state.original_input, state.context_wrapper, state.input_guardrail_results)
        run_input_guardrails([g for g in guardrails if not g.run_in_parallel], *check)  # before the model
        racing = [g for g in guardrails if g.run_in_parallel]
        if racing:  # beside the first model call; a trip discards its response before any tool runs
            join_guardrails = caller.start_thread(lambda: run_input_guardrails(racing, *check), "input-guardrails")
    response = yield from call_model(agent, turn, state, config, streaming, hooks)
    join_guardrails()
    output = assign_call_ids(response.output, state.call_ids)
    state.pending = PendingTurn(agent.name, output, len(state.generated_items),
                                session_input=state.unsaved_session_input)
    state.unsaved_session_input = []


def out_of_turns(state: RunState, agent: Any, config: RunConfig, handlers: dict, hooks: Any) -> RunResult:
    error = MaxTurnsExceeded(f"Max turns ({state.max_turns}) exceeded")
    step = apply_error_handler(handlers, "max_turns", error, state, agent, [], [])
    state.generated_items.extend(step.new_items)
    return finish(state, agent, step.next_step.output, config, hooks)


def pause(state: RunState, agent: Any, step: SingleStepResult, settled: Any) -> RunResult:
    """Keep what the paused turn settled (outputs, nested runs) and return its interruptions."""
    pending = state.pending
    pending.done = {i.call_id: (i.output, i.raw_item["output"]) for i in step.new_items
                    if i.type == "tool_call_output_item"}
    pending.nested = settled.nested
    state.generated_items.extend(step.next_step.interruptions)
    return RunResult.from_state(state, agent, None, interruptions=step.next_step.interruptions)


def finish(state: RunState, agent: Any, output: Any, config: RunConfig, hooks: Any) -> RunResult:
    guardrails = list(agent.output_guardrails) + list(config.output_guardrails or ())
    if guardrails:
        from .guardrails import run_output_guardrails

        run_output_guardrails(guardrails, agent, output, state.context_wrapper, state.output_guardrail_results)
    notify(hooks, "on_agent_end", state.context_wrapper, agent, output)
    return RunResult.from_state(state, agent, output)


def _start(starting_agent: Any, input: Any, context: Any, max_turns: Optional[int], run_config: Any,
           session: Any, previous_response_id: Optional[str], auto_previous_response_id: bool,
           conversation_id: Optional[str]) -> tuple:
    config = RunConfig(**run_config) if isinstance(run_config, dict) else (run_config or RunConfig())
    from .agent import Agent

    if not isinstance(starting_agent, Agent):
        raise TypeError(f"starting_agent must be an Agent, got {type(starting_agent).__name__}")
    if isinstance(input, RunState):
        input.cancel_mode = None  # a cancelled streamed run can be resumed
        return input, config
    if not isinstance(input, (str, list)) or isinstance(input, list) and not all(isinstance(i, dict) for i in input):
        raise UserError("input must be a string, a list of input items (dicts) or a RunState, "
                        f"got {type(input).__name__}: {input!r:.80}")
    wrapper = context if isinstance(context, RunContextWrapper) else RunContextWrapper(context=context)
    session_input: list = []
    if session is not None:
        input, session_input = load_session_history(session, input, config)
    elif not isinstance(input, str):
        input = drop_orphans(to_input_list(input))
    state = RunState(wrapper, input, starting_agent, max_turns, conversation_id=conversation_id,
                     previous_response_id=previous_response_id,
                     auto_previous_response_id=auto_previous_response_id)
    state.unsaved_session_input = session_input
    return state, config


def _drive(state: RunState, config: RunConfig, session: Any, handlers: Any, streaming: bool, hooks: Any,
           on_event: Optional[Callable] = None) -> RunResult:
    loop = _loop(state, config, session, handlers or {}, streaming, hooks)
    try:
        while True:
            event = next(loop)
            if on_event is not None:
                on_event(event)
            if state.cancel_mode == "immediate":  # RunResultStreaming.cancel(): stop where we are
                loop.close()
                return RunResult.from_state(state, state.current_agent, None)
    except StopIteration as stop:
        return stop.value
    except AgentsException as error:
        if error.run_data is None:
            error.run_data = RunErrorDetails(state.original_input, list(state.generated_items),
                                             list(state.model_responses), state.current_agent,
                                             state.context_wrapper, list(state.input_guardrail_results),
                                             list(state.output_guardrail_results))
        raise


def run_streaming_to(on_event: Callable[[Any], None], starting_agent: Any, input: Any, *, context: Any = None,
                     max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                     session: Any = None, previous_response_id: Optional[str] = None,
                     conversation_id: Optional[str] = None) -> RunResult:
    """A streamed run in the calling thread, each event handed to `on_event` (an agent tool's `on_stream`)."""
    state, config = _start(starting_agent, input, context, max_turns, run_config, session, previous_response_id,
                           False, conversation_id)
    return _drive(state, config, session, None, True, hooks, on_event)


class Runner:
    """Runs an agent until it produces a final output, hands off, or pauses for approval."""

    @classmethod
    def run_sync(cls, starting_agent: Any, input: Any, *, context: Any = None,
                 max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                 error_handlers: Optional[dict] = None, previous_response_id: Optional[str] = None,
                 auto_previous_response_id: bool = False, conversation_id: Optional[str] = None,
                 session: Any = None) -> RunResult:
        """Run to completion in the calling thread (works inside a running event loop too)."""
        state, config = _start(starting_agent, input, context, max_turns, run_config, session,
                               previous_response_id, auto_previous_response_id, conversation_id)
        return _drive(state, config, session, error_handlers, False, hooks)

    @classmethod
    async def run(cls, starting_agent: Any, input: Any, *, context: Any = None,
                  max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                  error_handlers: Optional[dict] = None, previous_response_id: Optional[str] = None,
                  auto_previous_response_id: bool = False, conversation_id: Optional[str] = None,
                  session: Any = None) -> RunResult:
        """The same loop, run in a worker thread so the event loop stays free."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, lambda: cls.run_sync(
            starting_agent, input, context=context, max_turns=max_turns, hooks=hooks, run_config=run_config,
            error_handlers=error_handlers, previous_response_id=previous_response_id,
            auto_previous_response_id=auto_previous_response_id, conversation_id=conversation_id,
            session=session))

    @classmethod
    def run_streamed(cls, starting_agent: Any, input: Any, context: Any = None,
                     max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                     previous_response_id: Optional[str] = None, auto_previous_response_id: bool = False,
                     conversation_id: Optional[str] = None, session: Any = None, *,
                     error_handlers: Optional[dict] = None) -> RunResultStreaming:
        """Start a streamed run; iterate `result.stream_events()` to drive it."""
        state, config = _start(starting_agent, input, context, max_turns, run_config, session,
                               previous_response_id, auto_previous_response_id, conversation_id)
        return RunResultStreaming(state, lambda on_event: _drive(state, config, session, error_handlers, True,
                                                                 hooks, on_event))
