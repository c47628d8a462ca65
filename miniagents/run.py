"""The Runner and the loop: `loop` strings turns together until a final output, a pause or an error.

`Runner.run_sync` starts a run (`start_run`: the arguments checked, the state made, the steps of its turns
chosen once, steps.py) and drives it (`drive`); `await Runner.run` drives it in a worker thread, and
`Runner.run_streamed` hands each event to its reader as it happens, so there is exactly one loop. Everything a
run changes lives in its `RunState`; one turn is turn.py. What happens between turns is here: an error's
answer, pausing, the handoff switch and the final output.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
import threading
import weakref
from typing import Any, Callable, Iterator, NamedTuple, Optional

from . import caller, ledger, seams, steps
from .agent import Agent
from .config import RunConfig
from .errors import (AgentsException, MaxTurnsExceeded, ModelBehaviorError, RunErrorDetails,
                     ToolInputGuardrailTripwireTriggered, UserError)
from .handoffs import HandoffInputData
from .items import HandoffOutputItem, ToolCallOutputItem, cannot_copy, clean_json, copied, drop_orphans, \
    described, function_call_output, item_problem, preview, to_input_list
from .result import RawResponsesStreamEvent, RunItemStreamEvent, RunResult, RunResultStreaming
from .state import PendingTurn, RunState, reachable_agents
from .tool import NestedInterruption
from .turn import (NextStepError, NextStepFinalOutput, NextStepHandoff, NextStepInterruption, NextStepRunAgain, Run,
                   STOPPED_MIDWAY, Turn, call_model, classify, decide, invoke, offer, plan, run_calls, settle)

DEFAULT_MAX_TURNS = 10


class Runner:
    """Runs an agent until it produces a final output, hands off, or pauses for approval."""

    @classmethod
    def run_sync(cls, starting_agent: Agent, input: Any, **options: Any) -> RunResult:
        """Run to completion in the calling thread (works inside a running event loop too). The loop runs in a copy
        of the caller's context variables: what its callables set stays in the run, as under `await Runner.run`.

        `input`: a string, a list of input items, or a `RunState` to resume; `options` are `Options`' fields.
        """
        return contextvars.copy_context().run(drive, start_run(starting_agent, input, Options(**options)))

    @classmethod
    async def run(cls, starting_agent: Agent, input: Any, **options: Any) -> RunResult:
        """The same loop, run in a worker thread so the event loop stays free."""
        import asyncio

        run = start_run(starting_agent, input, Options(**options))
        try:
            return await asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, begin, run)
        except BaseException as stop:  # cancelled, or the executor refused the job (it was shut down)
            if isinstance(stop, asyncio.CancelledError) or not run.begun:
                abandon(run)
            raise

    @classmethod
    def run_streamed(cls, starting_agent: Agent, input: Any, **options: Any) -> RunResultStreaming:
        """Start a streamed run; iterate `result.stream_events()` to drive it."""
        run = start_run(starting_agent, input, Options(**options), streamed=True)
        result = RunResultStreaming(run.state, functools.partial(drive, run), functools.partial(cancel_streamed, run))
        result._release = weakref.finalize(result, release, run)  # a run that never starts leaves its state free
        return result


@dataclasses.dataclass(eq=False)
class Options:
    """The options of one run, as `Runner`'s methods take them: `context`, your object, handed to tools, guardrails
    and plugins, never sent to the model; `max_turns`, the model calls allowed (None: no limit); `plugins`,
    `seams.Plugin`s taking part in this run only (after the registered ones; a resumed run has the ones its resume
    is given, and an agent tool's inner run its own, `as_tool(plugins=...)`); `run_config`, a `RunConfig`; the
    server-managed conversation's ids; `session`, the conversation to load before the first turn and append each
    completed turn to."""

    context: Any = None
    max_turns: Optional[int] = DEFAULT_MAX_TURNS
    plugins: Any = ()
    run_config: Any = None
    previous_response_id: Optional[str] = None
    auto_previous_response_id: bool = False
    conversation_id: Optional[str] = None
    session: Any = None


# --- Starting and driving a run ------------------------------------------------------------------------


def start_run(starting_agent: Any, input: Any, options: Options, streamed: bool = False, ledger: Any = None) -> Run:
    """Check the arguments and build the run: a fresh `RunState` (with the session's history), or the given one;
    the agents it can reach, the plugins taking part, and the steps its turns take (steps.choose).

    The ledger of claimed calls is the session's when it keeps one, else `ledger` (an agent tool's inner run
    inherits its caller's)."""
    if not isinstance(starting_agent, Agent):
        raise TypeError(f"starting_agent must be an Agent, got {type(starting_agent).__name__}")
    if options.max_turns is not None and (type(options.max_turns) is not int or options.max_turns < 0):  # nan: no end
        raise UserError(f"max_turns must be a whole number >= 0 or None, got {described(options.max_turns)}")
    if options.run_config is not None and not isinstance(options.run_config, RunConfig):
        raise UserError(f"run_config must be a RunConfig, got {type(options.run_config).__name__}")
    if callable(getattr(options.session, "claim_call", None)):
        ledger = options.session
    run = Run(None, options.run_config or DEFAULT_CONFIG, session=options.session, ledger=ledger,
              agents=reachable_agents(starting_agent), plugins=plugins_of(options), streamed=streamed)
    run.state = given(run, input) if isinstance(input, RunState) else fresh_state(starting_agent, input, options, run)
    choose(run)
    for step in run.start:  # what cannot work is refused, what the run needs is made, before any model call
        try:
            step(run)
        except BaseException:  # refused: the state is left free (no loop runs, so no `run.after`)
            release(run)
            raise
    return run


def begin(run: Run) -> Optional[RunResult]:
    """An awaited run's worker thread: it drives the run, unless the run was abandoned before the thread began."""
    with _TAKING:
        if run.abandoned:
            return None
        run.begun = True
    return drive(run)


def abandon(run: Run) -> None:
    """An awaited run cancelled. Its thread cannot be interrupted: a run that began stops at its next step, and
    nobody gets its state (a pause it stops in stays journaled); one whose thread never began (the executor was
    busy, or refused the job) never will, and frees the state it took. A given state whose run ended is left alone:
    another run may hold it, or take it next."""
    with _TAKING:  # decided and done in one step: another run may take the state the moment this one ended
        run.abandoned = True
        if not run.begun:
            release(run)
        elif run.state.running is run or not run.shared:  # still going on (a fresh run's own state is not taken)
            run.state.cancel("immediate")


def cancel_streamed(run: Run, mode: str) -> None:
    """A streamed run's cancel: it reaches the state only while this run holds it (`take`); once the run ended, the
    state may be another run's."""
    with _TAKING:
        if run.state.running is run:
            run.state.cancel(mode)


DEFAULT_CONFIG = RunConfig()  # the run's configuration when none is given (never changed by a run)


def given(run: Run, state: RunState) -> RunState:
    """A state given to run on (any `RunState`: paused, stopped by a limit, made by hand): another run may be given
    it too, so this run takes it (`take`), whatever it holds."""
    run.shared = True
    return state


def fresh_state(starting_agent: Any, input: Any, options: Options, run: Run) -> RunState:
    """A new run's state: the input checked (`RunState` repairs a lone surrogate in it, a bad decode that would reach
    the model and fail every save), the session's history read once before it."""
    if not isinstance(input, str):
        if not isinstance(input, list) or not all(isinstance(i, dict) for i in input):
            raise UserError("input must be a string, a list of input items (dicts) or a RunState, "
                            f"got {type(input).__name__}: {input!r:.80}")
        problem = next(((n, p) for n, p in enumerate(map(item_problem, input)) if p), None)
        if problem is not None:
            raise UserError(f"input[{problem[0]}] {problem[1]}")
        server = options.conversation_id or options.previous_response_id or options.auto_previous_response_id
        if options.session is None and not server:  # a server-managed state drops its own (`RunState`)
            input = drop_orphans(to_input_list(input))
    state = RunState(options.context, input, starting_agent, options.max_turns, options.conversation_id,
                     options.previous_response_id, options.auto_previous_response_id)
    if options.session is not None:  # the new input is checked apart from the history it may answer
        state.original_input, state.unsaved_session_input = load_session_history(run, options.session,
                                                                                  state.original_input)
        state.history_unread = False
        state.rebuild_transcript()
    return state


def plugins_of(options: Options) -> tuple:
    """What takes part in this run through the seams: the registered shells (and the tracing shell, when the
    environment or a `trace_path` set after its RunConfig was made asks for it: the same error as at its making, in
    a copy without it), then the run's own plugins (`plugins=`) that are not registered already."""
    if any(name in os.environ for name in TRACE_VARIABLES) or getattr(options.run_config, "trace_path", None):
        seams.load_asked_for(options.run_config)  # a trace_path, set after its RunConfig was made: raises as there
        seams.ask_for("tracing", "MINIAGENTS_TRACE or MINIAGENTS_DEBUG")
    if isinstance(options.plugins, (list, tuple)) and not options.plugins:  # a plain run has no plugin to check
        return seams.plugins
    return seams.plugins + tuple(plugin for plugin in seams.checked(options.plugins) if plugin not in seams.plugins)


TRACE_VARIABLES = {"MINIAGENTS_TRACE", "MINIAGENTS_DEBUG"}


def prepare_run(run: Run) -> None:
    """The plugins refuse what cannot work and make what the run needs (the `prepare_run` seam)."""
    seams.emit(run.plugins, "prepare_run", run)


def take(run: Run) -> None:
    """A state given to run on, or a streamed run's own, is this run's until it ends (`held`, which surrounds such a
    run, releases it, whatever ends it): a second run of it meanwhile is refused, since both would run its calls
    and write its turns. A cancelled run is still going on until it finishes the step it was in; a streamed run,
    until its events are read, it is cancelled before they are, or its result is dropped unread."""
    with _TAKING:
        if run.state.running is not None:
            raise UserError("A run of this RunState is still going on (a cancelled run first finishes the step it "
                            "was in; a streamed run, once its events are read): resume the state once it has ended")
        run.state.running = run


def release(run: Run) -> None:
    """The state is free again, if this run took it (a run refused by `take` holds nothing)."""
    if run.state.running is run:
        run.state.running = None


def surround(run: Run) -> None:
    """A run with plugins, or one that took its state, is surrounded by `held` (a plain run, by nothing)."""
    run.around = held


@contextlib.contextmanager
def held(run: Run) -> Iterator[None]:
    """What surrounds a run with plugins or a state it took: the plugins' `run` seam, and the state released when
    the run ends, whatever ends it (a seam that raises as it is entered, a step of `run.after` that raises)."""
    try:
        with seams.around(run.plugins, "run", run) if run.plugins else seams.NOTHING:
            yield
    finally:
        release(run)


_TAKING = threading.Lock()  # a state's check and its taking are one step: two runs given it at once never both pass


def resume_cancelled(run: Run) -> None:
    """A state a cancel stopped runs on when it is given again: the cancel was for the run it stopped (that run has
    ended: `take` came first)."""
    run.state.cancel_mode, run.state.aborts.cancelled = None, False


def refuse_finished(run: Run) -> None:
    """A state whose run ended with a final output does not run again: the model would be asked once more with no
    new input, and a session would get a second answer to the same question."""
    raise UserError("This RunState's run already ended with a final output. To go on with the conversation, "
                    "run again with result.to_input_list() and the new input (or with the same session)")


def continue_unfinished(run: Run) -> None:
    """A session that keeps a journal may hold a turn in flight: a run with no new input continues it (its steps
    chosen again for the state it continues, which it holds as it held its own: a streamed run's), new input is
    refused (ledger.open_journal)."""
    own = run.state
    if ledger.open_journal(run):
        if own.running is run:
            own.running, run.state.running = None, run
        choose(run)


def read_history_of_a_made_state(run: Run) -> None:
    """A `RunState` made by hand with no turn yet, given with a session, reads the session's history and brings its
    input as new input, as that input given itself does (it ran without the conversation, and the session got an
    answer with no question), once: a state a run made with a session read it (`RunState.history_unread`), and one
    loaded is taken as it is."""
    state = run.state
    if state.history_unread and not (state.current_turn or state.generated_items):
        state.original_input, state.unsaved_session_input = load_session_history(run, run.session,
                                                                                  state.original_input)
        state.history_unread = False
        state.rebuild_transcript()


def refuse_with_server_history(run: Run) -> None:
    """What cannot work when the server keeps the conversation (`conversation_id`, `previous_response_id`) is
    refused before the run starts."""
    if run.session is not None:  # the server and the session would each hold a history of their own
        raise UserError("Session persistence cannot be combined with conversation_id, previous_response_id, or "
                        "auto_previous_response_id.")
    if run.config.output_guardrails or any(a.output_guardrails for a in run.agents):
        raise UserError("Output guardrails cannot be combined with conversation_id, previous_response_id, or "
                        "auto_previous_response_id because rejected output cannot be removed from server-managed "
                        "conversation history.")
    racing = [g for g in list(run.config.input_guardrails or ()) + list(run.state.starting_agent.input_guardrails)
              if g.run_in_parallel]  # a trip discards the response their model call made (steps.guard_input)
    if racing and run.state.conversation_id and not run.state.model_responses:
        raise UserError("Input guardrails that run in parallel with the model call (run_in_parallel=True) cannot be "
                        "combined with conversation_id: a tripwire cannot take the input, or the response the server "
                        "made meanwhile, out of the conversation it keeps. Let them block (run_in_parallel=False).")
    if run.config.handoff_input_filter or any(getattr(h, "input_filter", None) for a in run.agents for h in a.handoffs):
        raise UserError("Server-managed conversations do not support handoff input filters. Remove "
                        "Handoff.input_filter or RunConfig.handoff_input_filter, or disable conversation_id, "
                        "previous_response_id, and auto_previous_response_id.")


def load_session_history(run: Run, session: Any, input: Any) -> tuple:
    """(history + new input, the new input alone): history is read once, orphans dropped; the plugins may combine
    them otherwise (the `session_input` seam)."""
    from .session import SessionSettings

    check_session(session)
    settings = SessionSettings.coerce(run.config.session_settings)  # settings, or a dict as upstream takes them
    limit, limit_turns = settings.limit, settings.limit_turns
    if limit_turns is not None:  # only sessions that understand turns take it (SQLiteSession does)
        check_takes_turns(session)
        history = caller.call(session.get_items, limit, limit_turns=limit_turns)
    else:  # a session written for upstream may have coroutine methods: `caller` awaits them
        history = caller.call(session.get_items, limit) if limit is not None else caller.call(session.get_items)
    new_items = to_input_list(input)
    items = drop_orphans(session_items(history)) + new_items
    if run.plugins:
        items = seams.change(run.plugins, "session_input", run, history, new_items, items)
    try:  # a session of the program's own, or a plugin, may give a lone surrogate: repaired, as a run's input is
        return clean_json(items), new_items
    except Exception as error:
        raise cannot_copy("The session's history", error) from error


def session_items(history: Any) -> list:
    """What a session's `get_items` returned, as a list of items: a list (or tuple) of dicts; anything else is a
    `UserError` saying what it was (it was a bare error deep in the loop, or a dict's keys taken as no history)."""
    if not isinstance(history, (list, tuple)):
        raise UserError(f"The session's get_items returned {type(history).__name__}, not a list of items")
    items = list(history)
    for item in items:
        if not isinstance(item, dict):
            raise UserError(f"The session's get_items returned a list holding {type(item).__name__}, not only items")
    return items


def check_session(session: Any, given: str = "session") -> None:
    """A run's session (an agent tool's too, where the tool is made) is an object that reads and writes items."""
    if not all(callable(getattr(session, method, None)) for method in ("get_items", "add_items")):
        raise UserError(f"{given} must be a session (SQLiteSession, or an object with get_items and add_items), "
                        f"got {type(session).__name__}")


def check_takes_turns(session: Any) -> None:
    """`limit_turns` is for a session whose `get_items` takes it: another's is a `UserError`, before it is read."""
    import inspect

    params = inspect.signature(session.get_items).parameters.values()
    if not any(p.name == "limit_turns" or p.kind is p.VAR_KEYWORD for p in params):
        raise UserError(f"SessionSettings(limit_turns=...) needs a session whose get_items takes limit_turns "
                        f"(SQLiteSession, DBAPISession); {type(session).__name__}'s does not: use limit=... instead")


class Cancelled(Exception):
    """Raised inside a streamed run when its reader cancelled it ("immediate"), to stop where it is."""


def drive(run: Run, on_event: Optional[Callable] = None) -> RunResult:
    """Run the loop (a streamed run hands each event to `on_event`); an error carries the partial run as
    `run_data`. A cancelled run returns what it has done; its state can resume."""
    if on_event is not None:
        run.emit = lambda event: hand_over(run, on_event, event)
    with run.around(run):  # nothing, or the plugins' `run` seam and a taken state's release (`held`)
        state, aborts = run.state, caller.CANCEL_CALLBACKS.set(run.state.aborts)  # what is in flight registers here
        try:
            loop(run)
            return run.result
        except (Cancelled, caller.Cancelled) as stop:  # the reader's cancel, or what a cancel aborted (a request)
            try:
                steps.join_input_guardrails(run, None)  # racing input guardrails: a trip is raised, never lost
            except AgentsException as trip:
                raise failed(run, trip) from None
            lost = keep_what_ran(run, stop)  # a turn stopped midway after its calls ran (an async step cancelled)
            if lost is not stop:  # its session failed: the turn stays journaled
                raise failed(run, lost) from None
            if run.plugins and isinstance(stop, AgentsException):
                leave_agent(run, stop)
            return RunResult.from_state(state, None)
        except Exception as error:  # a tripwire or a failure (a custom model's too) is raised, a cancel or not
            raise failed(run, error)
        except BaseException as stop:  # Ctrl-C, an exit: the process is stopping, as in a crash (ledger.close_journal),
            if run.turn is not None and run.turn.calls and not run.turn.saved:  # when calls it interrupted may run on
                run.failure = stop
            raise
        finally:
            caller.CANCEL_CALLBACKS.reset(aborts)
            for step in run.after:  # the session's journal is closed; the plugins hear the agent's stretch end
                step(run)


def failed(run: Run, error: Exception) -> Exception:
    """`error`, to raise, carrying the partial run (`run_data`, when it is the kernel's), the plugins told; the
    trip of racing input guardrails that the failed turn never joined wins over it."""
    try:
        steps.join_input_guardrails(run, None)
    except AgentsException as trip:
        error = trip
    if not ledger.store_failed(run, error):  # else the turn stays journaled, as after a crash
        error = keep_what_ran(run, error)
    run.failure = error
    if run.plugins:
        leave_agent(run, error)
    state = run.state
    if isinstance(error, AgentsException):  # this run's, as upstream's: an inner run's is replaced
        error.run_data = RunErrorDetails(
            state.original_input, list(state.generated_items), list(state.model_responses), state.current_agent,
            state.context_wrapper, list(state.input_guardrail_results), list(state.output_guardrail_results),
            list(state.tool_input_guardrail_results), list(state.tool_output_guardrail_results))
    return error


def keep_what_ran(run: Run, error: BaseException) -> BaseException:
    """A turn stopped midway (a tool guardrail's tripwire, a tool's own error, a handoff that failed, a cancel)
    after some of its calls ran keeps them in the state and the session: a call that returned with its output, a
    call that raised, or whose agent tool's inner run was paused, with `STOPPED_MIDWAY`. Its calls that never
    started are dropped (an input guardrail's trip kept its call from starting), and so is a handoff that did not
    happen, unless the server keeps the conversation: it holds them, so each is answered `NEVER_STARTED`. So the
    history says what happened (a call a crash left unsure, whose question the failure cut short, too), and a model
    asked again does not run them again. A turn in the session already, or kept as a pause, is left as it is, as is
    a turn that ended in a run with no session (the state holds it whole). Returns the error to raise: the session's
    own when it cannot take the turn (a ledger-keeping session's turn then stays journaled, as after a crash), the
    run's as its context."""
    turn = run.turn
    run.turn = None  # kept once, whatever a failure while keeping it raises
    if turn is None or turn.saved or run.result is not None:
        return error
    if turn.next_step is not None and run.session is None:  # the state holds it whole
        if isinstance(turn.next_step, NextStepHandoff) and run.state.server_managed and \
                not any(isinstance(item, HandoffOutputItem) for item in turn.items):  # it failed; the server holds it
            output = function_call_output(turn.next_step.call.call_id, ledger.NEVER_STARTED)
            turn.items.append(ToolCallOutputItem(agent=turn.agent, raw_item=output, output=ledger.NEVER_STARTED))
            run.state.generated_items.append(turn.items[-1])
            run.state.transcript.append(output)
        announce_kept(run, turn)
        return error
    for call in turn.calls:  # started before a crash, paused inside an agent tool, or raised once started
        started = call.call_id in turn.unsure or call.paused is not None or call.raised is not None and \
            not isinstance(call.raised, ToolInputGuardrailTripwireTriggered)
        if call.output is None and started:
            call.output = (STOPPED_MIDWAY, STOPPED_MIDWAY)
        elif call.output is None and run.state.server_managed:  # the server holds the call: it is answered, not dropped
            call.output = (ledger.NEVER_STARTED, ledger.NEVER_STARTED)
    ran = {call.call_id for call in turn.calls if call.output is not None}
    if not ran:
        return error
    turn.items = [item for item in turn.items[:turn.said]
                  if "call_id" not in item.raw_item or item.raw_item["call_id"] in ran]
    turn.said = len(turn.items)  # the outputs settled after them are the ones a stream's reader hears
    turn.calls = [call for call in turn.calls if call.call_id in ran]
    settle(run, turn)
    run.state.record_turn(turn.items, turn.start)
    close_turn(run, turn)
    run.state.rebuild_transcript()  # a handoff that failed after its turn was closed left its call there
    try:
        steps.save(run, turn)
    except Exception as lost:
        return lost
    announce_kept(run, turn)
    return error


def announce_kept(run: Run, turn: Turn) -> None:
    """A streamed run's reader hears the outputs of a failed turn the state keeps, unless it was told them already
    or cancelled the run at once (a cancel heard meanwhile stops the telling, never the failure)."""
    if run.emit is not None and run.state.cancel_mode != "immediate" and not turn.announced:
        try:
            steps.announce_outputs(run, turn)
        except Cancelled:
            pass


def hand_over(run: Run, on_event: Callable, event: Any) -> None:
    """A streamed run's event to its reader, who has handled it when this returns: a cancel made then stops the
    run right there. The reader is given its own copy of the model's event or the item an event carries: one that
    edits it in place (a display redacting what it shows) never changes what the run does next (the arguments a
    tool runs with) nor the history the session keeps. A custom model's event nested deeper than Python copies is
    the model's fault (the HTTP adapters refuse such an answer as they read it)."""
    try:
        if isinstance(event, RawResponsesStreamEvent):
            event = RawResponsesStreamEvent(data=copied(event.data))
        elif isinstance(event, RunItemStreamEvent):
            event = RunItemStreamEvent(event.name, own_copy(event.item))
    except RecursionError:
        raise ModelBehaviorError("The model's stream sent an event nested too deeply to copy for the reader") from None
    on_event(event)
    if run.state.cancel_mode == "immediate":
        raise Cancelled()


# --- The loop ---------------------------------------------------------------------------------------


def loop(run: Run) -> None:
    """Turns until something ends the run (`run.result` is set). Each of the four ways a turn ends (and an error
    for the run's handlers) has its steps in `run.ends`, chosen when the run started: the loop dispatches on the
    turn's `NextStep` there, and nowhere else."""
    for step in run.entered:  # the starting agent takes the conversation (`ENTERED`: for a streamed run, the plugins)
        step(run, None)
    while run.result is None:
        if run.state.cancel_mode is not None and run.state.pending is None:  # cancelled between turns: it can resume
            run.result = RunResult.from_state(run.state, None)
            break
        turn = take_turn(run)
        for step in run.ends[type(turn.next_step)]:
            step(run, turn)


def take_turn(run: Run) -> Turn:
    """One turn: a fresh one calls the model; a paused one (`state.pending`) runs again on the response it kept,
    with the outputs it has. Its steps are the run's (`run.fresh`, `run.resumed`), until one decides what comes
    next; the turn's items are put in `state.generated_items` (a resumed turn's replace its paused attempt's)."""
    state, pending = run.state, run.state.pending
    if run.tools.get(id(state.current_agent)) != tuple(state.current_agent.tools):  # not what the steps were chosen for
        meet(run, state.current_agent)
    turn = run.turn = Turn(state.current_agent, pending.start if pending else len(state.generated_items))
    for step in () if pending else run.before:  # what may keep a fresh turn from starting
        step(run, turn)
        if turn.next_step is not None:
            return turn
    for step in run.resumed if pending else run.fresh:
        step(run, turn)
    state.record_turn(turn.items, turn.start)
    return turn


def check_max_turns(run: Run, turn: Turn) -> None:
    """No turn starts past `max_turns`: the run's error handlers answer, or `MaxTurnsExceeded` is raised."""
    if run.state.current_turn >= run.state.max_turns:
        turn.next_step = NextStepError("max_turns", MaxTurnsExceeded(f"Max turns ({run.state.max_turns}) exceeded"))


def start_turn(run: Run, turn: Turn) -> None:
    """A fresh turn begins: it is counted."""
    run.state.current_turn += 1


def carry_session_input(run: Run, turn: Turn) -> None:
    """The run's new input goes to the session with the first turn that is written (`steps.save` writes both); the
    state keeps it until then, or until the turn pauses with it, so a turn a cancel drops leaves it to the next."""
    turn.session_input = run.state.unsaved_session_input


def leave_agent(run: Run, error: Optional[BaseException] = None) -> None:
    """The current agent's stretch ends (a handoff, the end of the run, a pause or an error): the plugins hear."""
    agent, run.agent = run.agent, None
    if agent is not None:
        seams.emit(run.plugins, "agent_ended", run, agent, error)


def agent_started(run: Run, turn: Optional[Turn]) -> None:
    """The current agent's stretch begins (the last one's ends): the plugins hear."""
    leave_agent(run)
    run.agent = run.state.current_agent
    seams.emit(run.plugins, "agent_started", run, run.agent)


def close_turn(run: Run, turn: Turn) -> None:
    """The turn is settled: its items join the transcript."""
    state = run.state
    state.pending = None
    state.transcript += [i.raw_item for i in turn.items]
    if turn.calls:  # a handoff counts as using a tool, as upstream counts it: no "required" ping-pong
        state.agents_that_used_tools.add(turn.agent.name)


def pause(run: Run, turn: Turn) -> None:
    """Keep what the paused turn settled (its response, outputs, nested runs) as `state.pending`, and return its
    interruptions."""
    state, interruptions = run.state, turn.next_step.interruptions
    pauses = state.pending.pauses + 1 if state.pending is not None else 0  # a new pause: a new claim to resume it
    outputs = {c.call_id: c.output for c in turn.calls if c.output is not None}
    nested = {c.call_id: c.paused.state if isinstance(c.paused, NestedInterruption) else c.paused
              for c in turn.calls if c.paused is not None}
    state.pending = PendingTurn(turn.agent.name, turn.output, turn.start, outputs, turn.session_input, nested,
                                turn.replays, pauses, turn.unsure)
    state.unsaved_session_input = []  # the paused turn holds it
    steps.settle_claim(run, turn, "paused again")
    state.generated_items.extend(interruptions)
    run.result = RunResult.from_state(state, None, interruptions)


def finish(run: Run, turn: Turn) -> None:
    """The final result."""
    run.state.finished = True
    run.result = RunResult.from_state(run.state, turn.next_step.output)


def tell_final_output(run: Run, turn: Turn) -> None:
    """The plugins hear of the final output."""
    seams.emit(run.plugins, "final_output", run, run.state.current_agent, turn.next_step.output)


def answer_error(run: Run, turn: Turn) -> None:
    """An error the run may answer: its plugins first (the `answer_error` seam: upstream's `error_handlers` end the
    run with a final output), else another turn when the error allows it; a usage limit stops the run where it is
    (its state resumes with a higher limit: `error.state`); any other error is raised. Then the turn ends as the
    answer says."""
    error = turn.next_step
    if run.plugins:
        turn.next_step = seams.change(run.plugins, "answer_error", run, turn, error)
    if turn.next_step is error:
        if error.run_again:
            turn.next_step = NextStepRunAgain()
        elif error.kind != "usage_limit":
            raise error.error
        else:
            if turn.setup is not None:  # the calls of this turn did not run: they wait in the paused turn
                turn.next_step = NextStepInterruption()
                pause(run, turn)
            error.error.state = run.state
            raise error.error
    for step in run.ends[type(turn.next_step)]:
        step(run, turn)


def take_handoff(run: Run, turn: Turn) -> None:
    """Run the winning handoff: call it, record its output, filter the history, switch agents."""
    state, agent, call = run.state, run.state.current_agent, turn.next_step.call
    handoff, call_id = call.target, call.call_id
    record = seams.HandoffStep(agent, handoff)
    with seams.around(run.plugins, "handoff", run, record) if run.plugins else seams.NOTHING:
        new_agent = record.to_agent = caller.call(handoff.on_invoke_handoff, state.context_wrapper,
                                                  call.item.get("arguments") or "")
    if not isinstance(new_agent, Agent):
        raise UserError(f"Handoff {handoff.tool_name!r}: on_invoke_handoff must return an Agent, got "
                        f"{type(new_agent).__name__}")
    output = function_call_output(call_id, handoff.get_transfer_message(new_agent))
    item = HandoffOutputItem(agent=agent, raw_item=output, source_agent=agent, target_agent=new_agent)
    state.generated_items.append(item)
    state.transcript.append(output)
    turn.items.append(item)
    input_filter = handoff.input_filter or run.config.handoff_input_filter
    if input_filter is not None:
        filter_history(run, input_filter, turn.start)
    state.current_agent = new_agent


def meet(run: Run, agent: Any) -> None:
    """An agent, or an agent's tools, that the run's steps were not chosen for (a hand-built `Handoff` names its
    agent only when it is called, a state handed back may be at such an agent, a tool may join an agent's list
    during the run): it and the agents it reaches join `run.agents`, and the steps are chosen again, so its
    guardrails and its tools' are never skipped."""
    run.agents += [other for other in reachable_agents(agent) if not any(other is known for known in run.agents)]
    if run.state.server_managed:
        refuse_with_server_history(run)
    choose(run)


def filter_history(run: Run, input_filter: Callable, turn_start: int) -> None:
    """A handoff's input filter reshapes the history the next agent sees (its result checked whole): its
    `input_items`, when set, stand in for `new_items` (the run's items are what the model sees; the session keeps
    the turn's own items whatever a filter returns, `steps.save`). It is given copies (`items.copied`), so one
    that edits them in place (a redaction) never rewrites the input or the turn's items the session keeps."""
    state = run.state
    history = state.original_input
    data = HandoffInputData(
        input_history=history if isinstance(history, str) else tuple(copied(history)),
        pre_handoff_items=tuple(own_copy(item) for item in state.generated_items[:turn_start]),
        new_items=tuple(own_copy(item) for item in state.generated_items[turn_start:]),
        run_context=state.context_wrapper)
    filtered = caller.call(input_filter, data)
    problem = filter_problem(filtered)
    if problem:
        raise UserError(f"Invalid input filter result: the handoff input filter "
                        f"{getattr(input_filter, '__name__', input_filter)!r} returned "
                        f"{problem}: it must return a HandoffInputData whose input_history is a string or "
                        f"input items (dicts) and whose items are run items")
    history = filtered.input_history  # the filter's text, its lone surrogates repaired as in a run's input
    shown = filtered.new_items if filtered.input_items is None else filtered.input_items
    try:
        history = clean_json(history if isinstance(history, str) else list(history))
        items = [dataclasses.replace(item, raw_item=clean_json(item.raw_item))
                 for item in (*filtered.pre_handoff_items, *shown)]
    except Exception as error:
        raise cannot_copy("The handoff input filter's result", error) from error
    state.original_input, state.generated_items = history, items
    state.rebuild_transcript()


def own_copy(item: Any) -> Any:
    """A run item whose transcript item is a copy of `item`'s (an input filter's to change)."""
    return dataclasses.replace(item, raw_item=copied(item.raw_item))


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
    for field_name in ("pre_handoff_items", "new_items", "input_items"):
        items = getattr(filtered, field_name)
        if items is None and field_name == "input_items":  # not set: the next agent is given new_items
            continue
        if not isinstance(items, (list, tuple)):
            return f"{field_name} of type {type(items).__name__}"
        for n, item in enumerate(items):
            if not isinstance(getattr(item, "raw_item", None), dict) or item_problem(item.raw_item):
                return f"{field_name}[{n}] that is not a run item: {preview(repr(item))}"
    return None


# --- Which steps a run takes -------------------------------------------------------------------------------
# Every turn takes the steps of turn.py; each other step (steps.py) joins when its `wanted(run)` says the run needs
# it, asked once when the run starts (`choose`). A plain run never enters them; every rule still has one home.


class Step(NamedTuple):
    """A step, and what a run must use for it to join the run's turns: `needs` names parts of the run, any one of
    which set (not None, False or empty) is enough ("config.usage_limits"; "agents.input_guardrails", any agent's;
    "tools.tool_input_guardrails", any of their tools'). No `needs`: every run takes it."""

    do: Callable
    needs: str = ""


TOOL_GUARDRAILS = "run.plugins tools.tool_input_guardrails tools.tool_output_guardrails"
SERVER_MANAGED = "state.conversation_id state.previous_response_id state.auto_previous_response_id"
OUTPUT_GUARDRAILS = "config.output_guardrails agents.output_guardrails"

TAKEN = "run.shared run.streamed"  # a state another run may hold too: given, or a streamed run's (run.take)
START = (  # before the first turn, once per drive of the loop
    Step(take, TAKEN),  # first: a state another run still holds is left as it is
    Step(surround, TAKEN + " run.plugins"),
    Step(resume_cancelled, "state.cancel_mode"),
    Step(refuse_finished, "state.finished"),
    Step(steps.check_guardrail_lists, "config.input_guardrails config.output_guardrails agents.input_guardrails "
         "agents.output_guardrails tools.tool_input_guardrails tools.tool_output_guardrails"),
    Step(continue_unfinished, "run.ledger"),
    Step(read_history_of_a_made_state, "run.session"),
    Step(refuse_with_server_history, SERVER_MANAGED),
    Step(prepare_run, "run.plugins"),
)
BEFORE = (  # what may keep a fresh turn from starting, and what comes first
    Step(ledger.snapshot, "run.ledger"),  # the state between turns, journaled once the turn is claimed
    Step(check_max_turns, "state.max_turns"),
    Step(steps.check_request_limit, "config.usage_limits"),
    Step(steps.admit_input, "state.pending_input"),
    Step(start_turn),
    Step(carry_session_input, "run.session"),
    Step(ledger.claim_turn, "run.ledger"),
)
FRESH = (  # a fresh turn: one model call
    Step(offer),
    Step(steps.offer_to_plugins, "run.plugins"),
    Step(steps.guard_input, "config.input_guardrails agents.input_guardrails"),
    Step(steps.send_what_is_new, SERVER_MANAGED),
    Step(steps.filter_input, "run.plugins"),
    Step(call_model),  # or steps.stream_model, steps.observed_model (see `choose`)
    Step(steps.join_input_guardrails, "config.input_guardrails agents.input_guardrails"),
    Step(classify),
    Step(ledger.journal_response, "run.ledger"),
    Step(steps.chain_response, SERVER_MANAGED),
    Step(steps.announce, "run.streamed"),  # what the model said, before any tool runs
)
RESUMED = (  # a paused turn resumed: its response read again, no model call
    Step(offer),
    Step(steps.offer_to_plugins, "run.plugins"),
    Step(ledger.claim_pause, "run.ledger"),
    Step(steps.reread),
    Step(ledger.recall, "run.ledger"),
)
SETTLE = (  # both then plan, run and order the calls, and decide the next step
    Step(plan),
    Step(steps.check_tool_limit, "config.usage_limits"),
    Step(run_calls),
    Step(steps.gather_guardrail_results, TOOL_GUARDRAILS),
    Step(settle),
    Step(decide),
    Step(steps.tell_approvals, "run.plugins"),
)
ENTERED = (  # an agent takes the conversation: the starting one (see `loop`), or a handoff's (its turn's end)
    Step(steps.announce_agent, "run.streamed"),
    Step(agent_started, "run.plugins"),
)
ENDS = {  # what each way of ending a turn does, in order
    NextStepFinalOutput: (Step(steps.guard_output, OUTPUT_GUARDRAILS), Step(close_turn),
                          Step(steps.save, "run.session run.ledger"), Step(steps.announce_outputs, "run.streamed"),
                          Step(steps.raise_rejected, OUTPUT_GUARDRAILS), Step(tell_final_output, "run.plugins"),
                          Step(finish)),
    NextStepHandoff: (Step(close_turn), Step(take_handoff), Step(steps.save, "run.session run.ledger"),
                      Step(steps.announce_outputs, "run.streamed"), *ENTERED),
    NextStepRunAgain: (Step(close_turn), Step(steps.save, "run.session run.ledger"),
                       Step(steps.announce_outputs, "run.streamed")),
    NextStepInterruption: (Step(pause),),
    NextStepError: (Step(answer_error),),
}
AFTER = (  # when the run returns or raises: the journal closed first, whatever a plugin then raises
    Step(ledger.close_journal, "run.ledger"),
    Step(leave_agent, "run.plugins"),
)
INVOKE = (  # how a call is invoked: `turn.invoke` (the tool alone) wrapped, innermost first, in what the run needs
    Step(steps.guarded, TOOL_GUARDRAILS),
    Step(ledger.claimed, "run.ledger"),  # around the guardrails: what it records is what the model was told
    Step(steps.wrapped_by_plugins, "run.plugins"),
)


NEEDS = [(need, *need.split(".")) for need in {need for table in (START, BEFORE, FRESH, RESUMED, SETTLE,
         *ENDS.values(), ENTERED, AFTER, INVOKE) for step in table for need in step.needs.split()}]
# every part of a run some step needs: ("config.usage_limits", "config", "usage_limits")


def choose(run: Run) -> None:
    """The steps this run takes and how a call is invoked, asked when it starts (and again for an agent or tools it
    meets later: `meet`): `run.start`, `run.before`, `run.fresh`, `run.resumed`, `run.ends`, `run.entered`,
    `run.after`, `run.invoke`."""
    run.tools = {id(agent): tuple(agent.tools) for agent in run.agents}  # what they are chosen for (take_turn)
    parts = {"run": [run], "config": [run.config], "state": [run.state], "agents": run.agents,
             "tools": [tool for tools in run.tools.values() for tool in tools]}
    uses = frozenset(need for need, where, name in NEEDS for part in parts[where]  # set: not None, False or empty
                     if (value := getattr(part, name, None)) is not None and value is not False
                     and value not in ([], (), ""))
    run.start, run.before, run.fresh, run.resumed, run.ends, run.entered, run.after, run.invoke = chosen(uses)


@functools.lru_cache(maxsize=256)
def chosen(uses: frozenset) -> tuple:
    """The steps of every table a run takes when it uses these parts (see `choose`). The tables never change, so
    runs that use the same parts share the answer: tuples, a dict no run changes, and the way a call is invoked (the
    wrappers keep what they need per run in `run.scratch`)."""
    def wanted(table: tuple) -> tuple:
        return tuple(step.do for step in table if not step.needs or not uses.isdisjoint(step.needs.split()))

    model = steps.observed_model if "run.plugins" in uses else \
        steps.stream_model if "run.streamed" in uses else call_model
    turn = steps.observed_turn if "run.plugins" in uses else tuple  # with plugins, inside the `turn` seam
    fresh = turn(tuple(model if do is call_model else do for do in wanted(FRESH)) + wanted(SETTLE))
    invoker = functools.reduce(lambda inner, wrap: wrap(inner), wanted(INVOKE), invoke)  # wrapped innermost first
    return (wanted(START), wanted(BEFORE), fresh, turn(wanted(RESUMED) + wanted(SETTLE)),
            {kind: wanted(table) for kind, table in ENDS.items()}, wanted(ENTERED), wanted(AFTER), invoker)
