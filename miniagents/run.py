"""The Runner and the loop: `_loop` strings turns together until a final output, a pause or an error.

The loop is a generator: it yields stream events and returns the `RunResult`. `run_sync` drains it,
`run_streamed` hands its events to the caller and `await Runner.run(...)` drains it in a worker thread, so
there is exactly one loop. Everything a run changes lives in its `RunState`; one turn, whole, is turn.py.
What happens between turns is here: the error handlers' answer, pausing, the handoff switch, the session
(history read once at the start, each completed turn written in one transaction) and the final output.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Optional

from . import caller, seams
from .agent import Agent
from .agent_output import output_schema
# Upstream's agents.run exports these, so code importing them from there finds them here.
from .config import (CallModelData, ModelInputData, ReasoningItemIdPolicy, ToolErrorFormatter,  # noqa: F401
                     ToolErrorFormatterArgs, ToolExecutionConfig, ToolNameCollisionPolicy, ToolNotFoundBehavior)
from .config import RunConfig, RunErrorData, RunErrorHandlerInput, RunErrorHandlerResult
from .context import RunContextWrapper
from .errors import (AgentsException, MaxTurnsExceeded, ModelBehaviorError, OutputGuardrailTripwireTriggered,
                     RunErrorDetails, UsageLimitExceeded, UserError)
from .handoffs import HandoffInputData
from .hooks import AgentHooks, HookPlugin, RunHooks
from .items import (FAKE_ID, HandoffOutputItem, InputItem, MessageOutputItem, assistant_message, drop_orphans,
                    function_call_output, item_problem, preview, to_input_list)
from .result import AgentUpdatedStreamEvent, RunResult, RunResultStreaming, stream_events_for
from .state import PendingTurn, RunState, reachable_agents
from .tool import HostedTool
from .turn import (NextStepError, NextStepFinalOutput, NextStepHandoff, NextStepInterruption, NextStepRunAgain, Run,
                   TurnResult, around, get_model, run_turn)

DEFAULT_MAX_TURNS = 10


# --- The loop ---------------------------------------------------------------------------------------


def _loop(run: Run) -> Generator[Any, None, None]:
    """Turns until something ends the run (`run.result` is set); every `NextStep` is dispatched here and nowhere
    else. It yields the run's stream events."""
    state = run.state
    yield from enter_agent(run)
    while run.result is None:
        turn = None
        if state.pending is None and (state.cancel_mode is not None or state.pending_input or state.max_turns is not
                                      None and state.current_turn >= state.max_turns or run.config.usage_limits):
            turn = between_turns(run)  # cancelled, input added, no turns left, or usage limits to check
            if run.result is not None:
                continue
        if turn is None:
            turn = yield from run_turn(run)
        step = turn.next_step
        if isinstance(step, NextStepError):  # a refusal, an unparsable answer, no turns left: ask the handlers
            step = answer_error(run, turn, step)
        if isinstance(step, NextStepInterruption):
            run.result = pause(run, turn, step)
            continue
        rejected = check_final_output(run, turn, step.output) if isinstance(step, NextStepFinalOutput) else None
        close_turn(run, turn)
        if isinstance(step, NextStepHandoff):
            turn.new_items.append(take_handoff(run, step, turn.start))
        yield from save_turn(run, turn)
        if rejected is not None:
            raise rejected
        if isinstance(step, NextStepFinalOutput):
            run.result = finish(run, step.output)
        elif isinstance(step, NextStepHandoff):
            yield from enter_agent(run)
        # NextStepRunAgain: the same agent takes another turn


def between_turns(run: Run) -> Optional[TurnResult]:
    """What comes before a fresh turn when it may not start as usual: a cancelled run ends (the state can
    resume); no turns left, or a usage limit the next model call would pass, is an error turn; input added by
    `RunState.add_input` enters first (then None: the turn starts)."""
    state, limits = run.state, run.config.usage_limits
    if state.cancel_mode is not None:
        run.result = RunResult.from_state(state, None)
        return None
    if state.max_turns is not None and state.current_turn >= state.max_turns:
        return TurnResult(state.current_agent, [], NextStepError(
            "max_turns", MaxTurnsExceeded(f"Max turns ({state.max_turns}) exceeded")))
    limit = limits.exceeded(state.context_wrapper.usage, requests=1) if limits is not None else None
    if limit is not None:
        return TurnResult(state.current_agent, [], NextStepError("usage_limit", UsageLimitExceeded(*limit)))
    if state.pending_input:
        admit_input(run)
    return None


def enter_agent(run: Run) -> Generator[Any, None, None]:
    """The current agent takes the conversation (the run began, or a handoff made it current)."""
    agent = run.state.current_agent
    run.state.context_wrapper.turn_input = list(run.state.transcript)  # what the agent starts from, as hooks see it
    leave_agent(run)
    run.agent = agent
    yield AgentUpdatedStreamEvent(new_agent=agent)
    if run.plugins:
        seams.emit(run.plugins, "agent_started", run, agent)


def leave_agent(run: Run, error: Optional[BaseException] = None) -> None:
    """The current agent's stretch ends (a handoff, the end of the run, a pause or an error)."""
    agent, run.agent = run.agent, None
    if agent is not None and run.plugins:
        seams.emit(run.plugins, "agent_ended", run, agent, error)


def close_turn(run: Run, turn: TurnResult) -> None:
    """The turn is settled: its items join the transcript (and the run's items, for a turn an error handler
    answered without a model call)."""
    state = run.state
    if turn.settled is None:
        state.record_turn(turn.new_items)
    state.pending = None
    state.transcript.extend(i.raw_item for i in turn.new_items)
    if state.server_managed:  # the model's own items are the server's already
        state.server_known += len(turn.output.items)
    if turn.output.calls:  # a handoff counts as using a tool, as upstream counts it: no "required" ping-pong
        state.agents_that_used_tools.add(turn.agent.name)


def pause(run: Run, turn: TurnResult, step: NextStepInterruption) -> RunResult:
    """Keep what the paused turn settled (its response, outputs, nested runs) as `state.pending`, and return its
    interruptions."""
    state = run.state
    outputs = {i.call_id: (i.output, i.raw_item["output"]) for i in turn.new_items if i.type == "tool_call_output_item"}
    pauses = state.pending.pauses + 1 if turn.resumed else 0  # a new pause: a new claim for the next resume
    state.pending = PendingTurn(turn.agent.name, turn.output.raw, turn.start, outputs, turn.session_input,
                                turn.settled.nested, turn.output.replays, pauses)
    settle_claim(run, turn, "paused again")
    state.generated_items.extend(step.interruptions)
    return RunResult.from_state(state, None, interruptions=step.interruptions)


def check_final_output(run: Run, turn: TurnResult, output: Any) -> Optional[BaseException]:
    """The output guardrails, before the final turn is saved. What stops the run is returned, to raise once the
    turn is saved: a tripwire, after the turn's items lost the rejected output (`withhold_rejected_output`), or
    a guardrail's own exception or a cancel (no verdict: the turn is saved as it is)."""
    state, agent = run.state, run.state.current_agent
    if not (agent.output_guardrails or run.config.output_guardrails):
        return None
    from .guardrails import run_output_guardrails, withhold_rejected_output

    guardrails = list(agent.output_guardrails) + list(run.config.output_guardrails or ())
    try:
        run_output_guardrails(run, guardrails, agent, output, state.output_guardrail_results)
    except OutputGuardrailTripwireTriggered as trip:
        withhold_rejected_output(run, turn.new_items, turn.settled.guardrail_results if turn.settled else [], trip)
        return trip
    except BaseException as error:  # a crash or a cancel: no verdict, so nothing is withheld or lost
        return error
    return None


def finish(run: Run, output: Any) -> RunResult:
    """The final result."""
    state, agent = run.state, run.state.current_agent
    if run.plugins:
        seams.emit(run.plugins, "final_output", run, agent, output)
    state.finished = True
    return RunResult.from_state(state, output)


def admit_input(run: Run) -> None:
    """`RunState.add_input`'s items enter the run before the next model call: the input guardrails check them
    first, then they join the items and transcript (as `InputItem`s) and the session."""
    state, agent = run.state, run.state.current_agent
    guardrails = list(agent.input_guardrails) + list(run.config.input_guardrails or ())
    if guardrails:
        from .guardrails import run_input_guardrails

        run_input_guardrails(run, guardrails, agent, list(state.pending_input), state.input_guardrail_results)
    admitted = [InputItem(agent=agent, raw_item=item) for item in state.pending_input]
    state.pending_input = []
    state.generated_items.extend(admitted)
    state.transcript.extend(item.raw_item for item in admitted)
    # another resume of the same state may have admitted them already
    write_to_session(run, [item.raw_item for item in admitted], f"input-{state.current_turn}")


def answer_error(run: Run, turn: TurnResult, error: NextStepError) -> Any:
    """Let the run's `error_handlers` turn an error into a final output (validated against the output type),
    run again when no handler is set and the error allows it, else raise the error."""
    state, agent = run.state, run.state.current_agent
    handler = run.error_handlers.get(error.kind)
    if handler is None:
        if error.run_again:
            return NextStepRunAgain()
        if error.kind == "usage_limit":  # the run stops where it is, and its state resumes with a higher limit
            if turn.settled is not None:  # the calls of this turn did not run: they wait in the paused turn
                pause(run, turn, NextStepInterruption(turn.settled.approvals))
            error.error.state = state
        raise error.error
    data = RunErrorData(state.original_input, list(state.generated_items), list(state.transcript),
                        [i.raw_item for i in turn.new_items], state.model_responses, agent)
    verdict = caller.call(handler, RunErrorHandlerInput(error.error, state.context_wrapper, data))
    if verdict is None:
        raise error.error
    if isinstance(verdict, dict) and "final_output" in verdict:  # a RunErrorHandlerResult as a dict
        if set(verdict) - {"final_output", "include_in_history"}:
            raise UserError("Invalid run error handler result.")
        verdict = RunErrorHandlerResult(**verdict)
    if not isinstance(verdict, RunErrorHandlerResult):  # any other value (a dict too) is the final output
        verdict = RunErrorHandlerResult(verdict)
    output, schema = verdict.final_output, output_schema(agent.output_type)
    if not schema.is_plain_text():
        try:
            if isinstance(output, str):
                output = schema.validate_json(output)
            elif isinstance(output, (dict, list)):  # JSON data: build the output type
                output = schema.validate_data(output)
        except ModelBehaviorError:
            raise UserError("Invalid run error handler final_output for structured output.") from None
    if verdict.include_in_history:
        text = schema.model_text(output)
        turn.new_items.append(MessageOutputItem(agent=agent, raw_item=assistant_message(text, FAKE_ID)))
    return NextStepFinalOutput(output)


def take_handoff(run: Run, step: NextStepHandoff, turn_start: int) -> HandoffOutputItem:
    """Run the winning handoff: call it, record its output, filter the history, switch agents."""
    state, config, agent = run.state, run.config, run.state.current_agent
    handoff, call_id = step.call.target, step.call.call_id
    seam = seams.HandoffStep(agent, handoff)
    with around(run, "handoff", seam):
        new_agent = seam.to_agent = caller.call(handoff.on_invoke_handoff, state.context_wrapper,
                                                step.call.item.get("arguments") or "")
    output = function_call_output(call_id, handoff.get_transfer_message(new_agent))
    item = HandoffOutputItem(agent=agent, raw_item=output, source_agent=agent, target_agent=new_agent)
    state.generated_items.append(item)
    state.transcript.append(output)
    input_filter = handoff.input_filter or config.handoff_input_filter
    if input_filter is not None:
        if not callable(input_filter):
            raise UserError(f"Invalid input filter: {input_filter!r}")
        if state.server_managed:
            raise UserError("Server-managed conversations do not support handoff input filters. Remove "
                            "Handoff.input_filter or RunConfig.handoff_input_filter, or disable conversation_id, "
                            "previous_response_id, and auto_previous_response_id.")
        data = HandoffInputData(
            input_history=state.original_input if isinstance(state.original_input, str)
            else tuple(state.original_input),
            pre_handoff_items=tuple(state.generated_items[:turn_start]),
            new_items=tuple(state.generated_items[turn_start:]), run_context=state.context_wrapper)
        filtered = caller.call(input_filter, data)
        problem = filter_problem(filtered)
        if problem:
            raise UserError(f"Invalid input filter result: the handoff input filter "
                            f"{getattr(input_filter, '__name__', input_filter)!r} returned "
                            f"{problem}: it must return a HandoffInputData whose input_history is a string or "
                            f"input items (dicts) and whose items are run items")
        history = filtered.input_history
        state.original_input = history if isinstance(history, str) else list(history)
        state.generated_items = list(filtered.pre_handoff_items) + list(filtered.new_items)
        state.rebuild_transcript()
    state.current_agent = new_agent
    return item


def filter_problem(filtered: Any) -> Optional[str]:
    """What is wrong with a handoff input filter's result, or None."""
    if not isinstance(filtered, HandoffInputData):
        return f"{type(filtered).__name__} {preview(repr(filtered))}"
    history = filtered.input_history
    if not isinstance(history, str):
        if not isinstance(history, (list, tuple)):
            return f"input_history of type {type(history).__name__}"
        for n, item in enumerate(history):
            problem = item_problem(item)
            if problem:
                return f"input_history[{n}] that {problem}"
    for field_name in ("pre_handoff_items", "new_items"):
        items = getattr(filtered, field_name)
        if not isinstance(items, (list, tuple)):
            return f"{field_name} of type {type(items).__name__}"
        for n, item in enumerate(items):
            if not isinstance(getattr(item, "raw_item", None), dict) or item_problem(item.raw_item):
                return f"{field_name}[{n}] that is not a run item: {preview(repr(item))}"
    return None


# --- The session: read once at the start, written once per completed turn ----------------------------


def load_session_history(session: Any, input: Any, config: RunConfig) -> tuple:
    """(history + new input, the new input alone): history is read once, orphans dropped."""
    settings = config.session_settings
    limit, limit_turns = getattr(settings, "limit", None), getattr(settings, "limit_turns", None)
    if limit_turns is not None:  # only sessions that understand turns take it (SQLiteSession does)
        history = caller.call(session.get_items, limit, limit_turns=limit_turns)
    else:  # a session written for upstream may have coroutine methods: `caller` awaits them
        history = caller.call(session.get_items, limit) if limit is not None else caller.call(session.get_items)
    new_items = to_input_list(input)
    if config.session_input_callback is not None:
        return list(caller.call(config.session_input_callback, history, new_items)), new_items
    return drop_orphans(list(history)) + new_items, new_items


def save_turn(run: Run, turn: TurnResult) -> Generator[Any, None, None]:
    """Write the turn (and the run's new input, with its first turn) to the session in one transaction, then
    announce the turn's outputs. A resumed turn is written once per session: another resume of the same
    paused state may have written it already (the ledger's `once` key says so). A run with no session and no
    claim to settle writes nothing, and passes neither."""
    if run.session is not None or turn.claim is not None:
        items = turn.session_input + [i.raw_item for i in turn.new_items]
        write_to_session(run, items, f"turn-{run.state.current_turn}" if turn.resumed else None)
        settle_claim(run, turn, "completed")
    if run.streaming:  # the turn's outputs, once settled
        yield from stream_events_for(turn.new_items[len(turn.output.items):])


def settle_claim(run: Run, turn: TurnResult, outcome: str) -> None:
    """A resumed turn records in the ledger how its claim ended, for a later resume of the same pause to say."""
    if turn.claim is not None:
        caller.call(run.ledger.settle_call, run.state.run_id, turn.claim, outcome)


def write_to_session(run: Run, items: list, once: Optional[str]) -> None:
    """Append `items` to the session in one transaction. With `once` (what may already have been written by
    another resume of the same paused state) and a ledger-keeping session, the append happens once per run."""
    if run.session is None:
        return
    if once is not None and run.ledger is run.session:
        caller.call(run.session.add_items, items, once=f"{run.state.run_id}/{once}")
    else:  # a session written for upstream may have coroutine methods: `caller` awaits them
        caller.call(run.session.add_items, items)


# --- Starting and driving a run ------------------------------------------------------------------------


@dataclass(eq=False)
class RunOptions:
    """The options of one run, as `Runner`'s three methods take them (see `Runner.run_sync`)."""

    context: Any = None
    max_turns: Optional[int] = DEFAULT_MAX_TURNS
    hooks: Any = None
    run_config: Any = None
    error_handlers: Optional[dict] = None
    previous_response_id: Optional[str] = None
    auto_previous_response_id: bool = False
    conversation_id: Optional[str] = None
    session: Any = None


def start_run(starting_agent: Any, input: Any, options: RunOptions, streaming: bool, ledger: Any = None) -> Run:
    """Check the arguments and build the run: a fresh `RunState` (with the session's history), or the given one.

    The ledger of claimed calls is the session's when it keeps one, else `ledger` (an agent tool's inner run
    inherits its caller's)."""
    config = DEFAULT_CONFIG if options.run_config is None else run_config(options.run_config)
    check_arguments(starting_agent, options.hooks)
    session = options.session
    if session is not None and callable(getattr(session, "claim_call", None)):
        ledger = session
    agents = reachable_agents(starting_agent)
    run = Run(None, config, session, options.error_handlers or {}, streaming, ledger, agents,
              run_plugins(config, agents, options.hooks))
    if any(isinstance(tool, HostedTool) for agent in agents for tool in agent.tools):
        refuse_hosted_tools_on_chat(agents, config)
    if options.conversation_id or options.previous_response_id or options.auto_previous_response_id or (
            isinstance(input, RunState) and input.server_managed):
        refuse_with_server_history(starting_agent, config, session)
    if isinstance(input, RunState):
        input.cancel_mode = None  # a cancelled streamed run can be resumed
        run.state = input
    else:
        run.state = fresh_state(starting_agent, input, options, config)
    if run.plugins:  # a shell refuses what cannot work, and makes what the run needs, before any model call
        seams.emit(run.plugins, "prepare_run", run)
    return run


def fresh_state(starting_agent: Any, input: Any, options: RunOptions, config: RunConfig) -> RunState:
    """A new run's state: the input checked, the session's history read once before it."""
    if not isinstance(input, (str, list)) or isinstance(input, list) and not all(isinstance(i, dict) for i in input):
        raise UserError("input must be a string, a list of input items (dicts) or a RunState, "
                        f"got {type(input).__name__}: {input!r:.80}")
    for n, problem in enumerate(item_problem(i) for i in (input if isinstance(input, list) else ())):
        if problem:
            raise UserError(f"input[{n}] {problem}")
    context = options.context
    wrapper = context if isinstance(context, RunContextWrapper) else RunContextWrapper(context=context)
    session_input: list = []
    if options.session is not None:
        input, session_input = load_session_history(options.session, input, config)
    elif not isinstance(input, str):
        input = drop_orphans(to_input_list(input))
    state = RunState(wrapper, input, starting_agent, options.max_turns, conversation_id=options.conversation_id,
                     previous_response_id=options.previous_response_id,
                     auto_previous_response_id=options.auto_previous_response_id)
    state.unsaved_session_input = session_input
    return state


DEFAULT_CONFIG = RunConfig()  # the run's configuration when none is given (never changed by a run)


def run_config(given: Any) -> RunConfig:
    """`run_config=` given as a `RunConfig`, or as a dict of its fields (as upstream takes it)."""
    return RunConfig(**given) if isinstance(given, dict) else given


def check_arguments(starting_agent: Any, hooks: Any) -> None:
    """Refuse what cannot start a run: an agent that is not an `Agent`, hooks that are not `RunHooks`."""
    if not isinstance(starting_agent, Agent):
        raise TypeError(f"starting_agent must be an Agent, got {type(starting_agent).__name__}")
    if hooks is not None and not isinstance(hooks, RunHooks):
        if isinstance(hooks, AgentHooks):
            raise TypeError("Run hooks must be instances of RunHooks. Received agent-scoped hooks (AgentHooks). "
                            "Attach AgentHooks to an Agent via Agent(..., hooks=...).")
        raise TypeError(f"Run hooks must be instances of RunHooks, got {type(hooks).__name__}")


def run_plugins(config: RunConfig, agents: list, hooks: Any) -> tuple:
    """What takes part in this run through the seams: the registered shells (loading those the configuration asks
    for), and the run's hooks and its agents' own hooks (`HookPlugin`), when there are any."""
    seams.load_asked_for(config, agents)
    hooked = hooks is not None or any(agent.hooks is not None for agent in agents)
    return seams.registered() + ((HookPlugin(hooks),) if hooked else ())


def refuse_with_server_history(starting_agent: Any, config: RunConfig, session: Any) -> None:
    """What cannot work when the server keeps the conversation is refused before the run starts."""
    if session is not None:  # the server and the session would each hold a history of their own
        raise UserError("Session persistence cannot be combined with conversation_id, previous_response_id, or "
                        "auto_previous_response_id.")
    if config.output_guardrails or any(a.output_guardrails for a in reachable_agents(starting_agent)):
        raise UserError("Output guardrails cannot be combined with conversation_id, previous_response_id, or "
                        "auto_previous_response_id because rejected output cannot be removed from server-managed "
                        "conversation history.")


def refuse_hosted_tools_on_chat(agents: list, config: RunConfig) -> None:
    """A hosted tool runs on the Responses API's side: an agent that has one and a Chat Completions model is a
    `UserError` when the run starts, before any model call (the run's agents have at least one)."""
    for agent in agents:
        hosted = next((t for t in agent.tools if isinstance(t, HostedTool)), None)
        if hosted is None:
            continue
        model = get_model(agent, config)
        if any(cls.__name__ == "OpenAIChatCompletionsModel" for cls in type(model).__mro__):
            raise UserError(f"{type(hosted).__name__} ({hosted.name!r}) of agent {agent.name!r} is a hosted tool, "
                            "which only the Responses API runs, but the agent's model uses Chat Completions. Use an "
                            "OpenAIResponsesModel (OpenAIProvider(use_responses=True), or "
                            "set_default_openai_api('responses')), or remove the tool.")


def drive(run: Run, on_event: Optional[Callable] = None) -> RunResult:
    """Drain the loop, handing each event to `on_event`; an error carries the partial run as `run_data`."""
    state, loop = run.state, _loop(run)
    aborts = caller.CANCEL_CALLBACKS.set(state.aborts)  # what is in flight registers here; cancel() calls it
    with around(run, "run", None):
        try:
            for event in loop:
                if on_event is not None:
                    on_event(event)
                if state.cancel_mode == "immediate":  # cancelled: stop where we are (the state can resume)
                    loop.close()
                    return RunResult.from_state(state, None)
            return run.result
        except AgentsException as error:
            leave_agent(run, error)
            if state.cancel_mode == "immediate":  # what was in flight was aborted by the cancel: no error
                return RunResult.from_state(state, None)
            if error.run_data is None:
                error.run_data = RunErrorDetails(state.original_input, list(state.generated_items),
                                                 list(state.model_responses), state.current_agent,
                                                 state.context_wrapper, list(state.input_guardrail_results),
                                                 list(state.output_guardrail_results),
                                                 list(state.tool_input_guardrail_results),
                                                 list(state.tool_output_guardrail_results))
            raise
        finally:
            caller.CANCEL_CALLBACKS.reset(aborts)
            leave_agent(run)


class AgentRunner:
    """Runs an agent until it produces a final output, hands off, or pauses for approval. `Runner`'s class
    methods call the default instance (`get_default_agent_runner()`); subclass it and install yours with
    `set_default_agent_runner` to change how every run starts (upstream's extension point)."""

    def run_sync(self, starting_agent: Any, input: Any, *, context: Any = None,
                 max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                 error_handlers: Optional[dict] = None, previous_response_id: Optional[str] = None,
                 auto_previous_response_id: bool = False, conversation_id: Optional[str] = None,
                 session: Any = None) -> RunResult:
        """Run to completion in the calling thread (works inside a running event loop too).

        `input`: a string, a list of input items, or a `RunState` to resume. `context`: your object, handed
        to tools and hooks, never sent to the model. `max_turns`: model calls allowed (None: no limit).
        `error_handlers`: {"max_turns" | "model_refusal" | "invalid_final_output": handler}. `session`: the
        conversation to load before the first turn and append each completed turn to.
        """
        options = RunOptions(context, max_turns, hooks, run_config, error_handlers, previous_response_id,
                             auto_previous_response_id, conversation_id, session)
        return drive(start_run(starting_agent, input, options, streaming=False))

    async def run(self, starting_agent: Any, input: Any, *, context: Any = None,
                  max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                  error_handlers: Optional[dict] = None, previous_response_id: Optional[str] = None,
                  auto_previous_response_id: bool = False, conversation_id: Optional[str] = None,
                  session: Any = None) -> RunResult:
        """The same loop, run in a worker thread so the event loop stays free."""
        import asyncio
        import contextvars

        options = RunOptions(context, max_turns, hooks, run_config, error_handlers, previous_response_id,
                             auto_previous_response_id, conversation_id, session)
        run = start_run(starting_agent, input, options, streaming=False)
        worker = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, drive, run)
        try:
            return await worker
        except asyncio.CancelledError:  # the thread cannot be interrupted: the run stops at its next step
            run.state.cancel("immediate")
            raise

    def run_streamed(self, starting_agent: Any, input: Any, context: Any = None,
                     max_turns: Optional[int] = DEFAULT_MAX_TURNS, hooks: Any = None, run_config: Any = None,
                     previous_response_id: Optional[str] = None, auto_previous_response_id: bool = False,
                     conversation_id: Optional[str] = None, session: Any = None, *,
                     error_handlers: Optional[dict] = None) -> RunResultStreaming:
        """Start a streamed run; iterate `result.stream_events()` to drive it."""
        options = RunOptions(context, max_turns, hooks, run_config, error_handlers, previous_response_id,
                             auto_previous_response_id, conversation_id, session)
        run = start_run(starting_agent, input, options, streaming=True)
        return RunResultStreaming(run.state, lambda on_event: drive(run, on_event))


_default_runner = AgentRunner()


def set_default_agent_runner(runner: Optional[AgentRunner]) -> None:
    """Make `runner` the one `Runner.run_sync`/`run`/`run_streamed` use (None: back to a plain `AgentRunner`)."""
    global _default_runner
    _default_runner = runner if runner is not None else AgentRunner()


def get_default_agent_runner() -> AgentRunner:
    return _default_runner


def _same_signature(method: Callable) -> Callable:
    """Give a `Runner` class method the signature and help text of the `AgentRunner` method it calls."""
    import inspect

    def adopt(forward: Callable) -> Callable:
        forward.__signature__ = inspect.signature(method)  # its `self` stands for `cls`
        forward.__doc__ = method.__doc__
        return classmethod(forward)
    return adopt


class Runner:
    """Runs an agent until it produces a final output, hands off, or pauses for approval (each call goes to
    `get_default_agent_runner()`)."""

    @_same_signature(AgentRunner.run_sync)
    def run_sync(cls, starting_agent: Any, input: Any, **options: Any) -> RunResult:
        return get_default_agent_runner().run_sync(starting_agent, input, **options)

    @_same_signature(AgentRunner.run)
    async def run(cls, starting_agent: Any, input: Any, **options: Any) -> RunResult:
        return await get_default_agent_runner().run(starting_agent, input, **options)

    @_same_signature(AgentRunner.run_streamed)
    def run_streamed(cls, starting_agent: Any, input: Any, *args: Any, **options: Any) -> RunResultStreaming:
        return get_default_agent_runner().run_streamed(starting_agent, input, *args, **options)


_OWN_ENTRIES = {name: (Runner.__dict__[name], AgentRunner.__dict__[name]) for name in ("run", "run_streamed")}


def replaced_entry(streamed: bool) -> Optional[Callable]:
    """`Runner.run` (`Runner.run_streamed` when `streamed`) when it is not miniagents' own: replaced (a wrapper, a
    test double) or reaching a default agent runner that replaces it. Upstream's agent tools start their nested
    run through it, so an agent tool goes through it then; else it starts the nested run itself (None)."""
    name = "run_streamed" if streamed else "run"
    own_entry, own_method = _OWN_ENTRIES[name]
    if Runner.__dict__.get(name) is own_entry and getattr(type(_default_runner), name, None) is own_method:
        return None
    return getattr(Runner, name)


def run_through(entry: Callable, on_event: Optional[Callable], **options: Any) -> Any:
    """Call a replaced `Runner.run` (awaited) or `Runner.run_streamed` (its events drained into `on_event` with the
    agent then current, as `AgentUpdatedStreamEvent`s tell) with upstream's keywords; its result as it is."""
    if on_event is None:
        return caller.call(entry, **options)
    result = entry(**options)
    current = getattr(result, "current_agent", None) or options["starting_agent"]

    async def drain() -> None:
        nonlocal current
        async for event in result.stream_events():
            if getattr(event, "type", None) == "agent_updated_stream_event":
                current = event.new_agent
            on_event(event, current)
    caller.call(drain)
    return result
