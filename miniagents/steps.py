"""The steps a turn takes only when its run needs them.

pytest's core is built-in plugins on its own hookspec; a run here is the same idea on a smaller scale. Every
turn takes the steps in turn.py; each step below joins when a run's data asks for it — usage limits set, a
guardrail configured, a streamed run, a session that keeps the exactly-once ledger, a server-managed
conversation, a paused turn to resume, a plugin on the seams (miniagents/seams.py). The table of which step
joins when is in run.py (`choose`, asked once when a run starts): a plain run never enters these, and every
rule still has one home, for fresh and resumed turns alike.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from . import caller, ledger, seams
from .context import COUNTING
from .errors import AgentsException, ModelBehaviorError, UsageLimitExceeded, UserError
from .items import InputItem
from .result import AgentUpdatedStreamEvent, RawResponsesStreamEvent, stream_events_for
from .turn import (WITHHELD, Call, NextStepError, NextStepInterruption, Run, Turn, classify, get_model, model_arguments,
                   take_response)



def check_guardrail_lists(run: Run) -> None:
    """Each guardrail list of the run's configuration, agents and tools holds guardrails of its kind: one added to
    after its owner checked it (when made) is refused before the run starts, not by a bare `AttributeError` or
    `TypeError` when the run reaches it."""
    from .guardrails import KINDS, check_guardrails

    for made in [run.config, *run.agents, *(tool for tools in run.tools.values() for tool in tools)]:
        owner = type(made).__name__ + (f" {made.name!r}" if made is not run.config else "")
        check_guardrails(owner, made, *(name for name in KINDS if getattr(made, name, None)))


def check_request_limit(run: Run, turn: Turn) -> None:
    """A model call that would pass a usage limit (`UsageLimits`) is not made: the run stops where it is. One that
    may be made is counted now, before it is made, so a run sharing this usage (an agent tool's inner run, its
    siblings running at once) never sees the room this call takes."""
    usage = run.state.context_wrapper.usage
    with COUNTING:
        limit = run.config.usage_limits.exceeded(usage, requests=1)
        if limit is None:
            usage.requests, turn.requests = usage.requests + 1, 0
    if limit is not None:
        turn.next_step = NextStepError("usage_limit", UsageLimitExceeded(*limit))


def admit_input(run: Run, turn: Turn) -> None:
    """`RunState.add_input`'s items enter the run before the next model call: the input guardrails check them
    first, then they join the items (as `InputItem`s), the transcript and the session. The transcript is rebuilt
    (`RunState.rebuild_transcript`, the one home of its pairing rule) and what it drops (an output that answers no
    open call) leaves the items too, as a run's input does: a state reloaded later, when a response id may make such
    an output the server's, rebuilds this same transcript, so the index `server_known` it keeps stays right."""
    state, agent = run.state, turn.agent
    if not state.pending_input:
        return
    guardrails = list(agent.input_guardrails) + list(run.config.input_guardrails or ())
    if guardrails:
        from .guardrails import run_input_guardrails

        run_input_guardrails(run, guardrails, agent, list(state.pending_input), state.input_guardrail_results)
    admitted = [InputItem(agent=agent, raw_item=item) for item in state.pending_input]
    state.pending_input = []
    state.generated_items.extend(admitted)
    state.rebuild_transcript()
    kept = {id(item) for item in state.transcript}
    state.generated_items[turn.start:] = admitted = [item for item in admitted if id(item.raw_item) in kept]
    turn.start = len(state.generated_items)
    # another resume of the same state may have admitted them already
    write_to_session(run, [item.raw_item for item in admitted], f"input-{state.current_turn}")


def guard_input(run: Run, turn: Turn) -> None:
    """The first turn's input guardrails: the blocking ones now, before the model; the parallel ones beside the
    model call (`join_input_guardrails`: a trip discards the response before any tool runs)."""
    if run.state.current_turn != 1 or run.state.model_responses:
        return
    from .guardrails import run_input_guardrails

    state, agent = run.state, turn.agent
    guardrails = list(agent.input_guardrails) + list(run.config.input_guardrails or ())
    check = (state.starting_agent, state.original_input, state.input_guardrail_results)
    run_input_guardrails(run, [g for g in guardrails if not g.run_in_parallel], *check)
    racing = [g for g in guardrails if g.run_in_parallel]
    if racing:
        run.scratch[guard_input] = caller.start_thread(lambda: run_input_guardrails(run, racing, *check),
                                                       "input-guardrails")


def join_input_guardrails(run: Run, turn: Turn) -> None:
    join = run.scratch.pop(guard_input, None)
    if join is not None:
        join()


def offer_to_plugins(run: Run, turn: Turn) -> None:
    """The plugins may change what the agent offers this turn (the `offer` seam: a capability's tools)."""
    turn.setup = seams.change(run.plugins, "offer", run, turn.setup)


def send_what_is_new(run: Run, turn: Turn) -> None:
    """A server-managed conversation (`conversation_id`, `previous_response_id`): the server holds the history,
    so a request names it and carries only the transcript items it has not seen."""
    state = run.state
    turn.input = state.transcript[state.server_known:]
    turn.ids.update(previous_response_id=state.previous_response_id, conversation_id=state.conversation_id)


def filter_input(run: Run, turn: Turn) -> None:
    """The model input, and the instructions, after the plugins' `model_input` seam (capabilities'
    `process_context`, upstream's `call_model_input_filter`)."""
    setup = turn.setup
    items = turn.input if turn.input is not None else list(run.state.transcript)
    for plugin in run.plugins:
        items = seams.returned(plugin, "model_input", plugin.model_input(run, setup, items), items)
        if isinstance(items, tuple):  # the instructions changed too
            instructions, items = items
            setup = dataclasses.replace(setup, instructions=instructions)
    turn.input, turn.setup = items, setup


# --- The model call, streamed or observed ----------------------------------------------------------------


def stream_model(run: Run, turn: Turn) -> None:
    """A streamed run's model call: every event is handed to the reader; the response is `response.completed`'s."""
    model = get_model(turn.agent, run.config)
    take_response(run, turn, stream_response(run, model, turn))


def stream_response(run: Run, model: Any, turn: Turn) -> Any:
    """The model's stream, each event handed on; the response is its `response.completed` event's. A stream that
    sends what no event is (any model may be a custom one) is a `ModelBehaviorError` saying what came."""
    response = None
    for event in model_events(model.stream_response(*model_arguments(run, turn), **turn.ids)):
        if not isinstance(event, dict):
            raise ModelBehaviorError(f"The model's stream sent a {type(event).__name__}, not an event (a dict).")
        run.emit(RawResponsesStreamEvent(data=event))
        if event.get("type") == "response.completed":
            response = completed(event.get("response"))
    if response is None:
        raise AgentsException("the model's stream ended without a response.completed event")
    return response


def model_events(events: Any) -> Iterable:
    """What a model's `stream_response` returned, to iterate: no iterable at all (None, a coroutine: the kernel's
    `Model` is synchronous) is a `UserError` saying what it returned, as a `get_response` that returns no
    `ModelResponse` is (the shells that iterate a stream themselves, retries and recording, ask here too)."""
    if not isinstance(events, Iterable):
        raise UserError(f"A Model's stream_response must return an iterable of events, not {type(events).__name__}")
    return events


def completed(final: Any) -> Any:
    """A `response.completed` event's response as a `ModelResponse`: output items (dicts), usage, id."""
    from .context import Usage
    from .models.interface import ModelResponse

    output = final.get("output") or [] if isinstance(final, dict) else None
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        raise ModelBehaviorError("The model's response.completed event holds no response with a list of output "
                                 "items (dicts).")
    try:
        usage = Usage.from_json(final.get("usage"))
    except (AttributeError, TypeError, ValueError, OverflowError):  # inf
        raise ModelBehaviorError("The model's response.completed event holds a usage that is not token "
                                 "counts.") from None
    return ModelResponse(output=list(output), usage=usage, response_id=final.get("id"))


def observed_model(run: Run, turn: Turn) -> None:
    """The model call with the plugins around it: the `model` seam may wrap the model (retries the run manages),
    the `model_call` seam surrounds the call (a trace span, upstream's hooks' on_llm_start/on_llm_end)."""
    setup = turn.setup
    model = seams.change(run.plugins, "model", run, setup, get_model(turn.agent, run.config))
    arguments = model_arguments(run, turn)
    record = seams.ModelStep(setup.agent, model, setup.instructions, turn.input, setup.settings)
    with seams.around(run.plugins, "model_call", run, record):
        if run.emit is not None:
            response = stream_response(run, model, turn)
        else:
            response = model.get_response(*arguments, **turn.ids)
        record.response = response
        take_response(run, turn, response)


def observed_turn(turn_steps: tuple) -> tuple:
    """A turn's steps as one step inside the plugins' `turn` seam (a trace span holds what the turn did)."""
    def observed(run: Run, turn: Turn) -> None:
        state = run.state
        with seams.around(run.plugins, "turn", run, seams.TurnStep(turn.agent, state.current_turn,
                                                                   state.pending is not None)):
            for step in turn_steps:
                step(run, turn)
    return (observed,)


def chain_response(run: Run, turn: Turn) -> None:
    """A server-managed conversation: the next request chains to this response (with `auto_previous_response_id`,
    or once a `previous_response_id` was given). What was sent, and the model's own items, are the server's now
    only if the next request names a state that holds them (this response, or the conversation): a response with
    no id leaves the next request naming what this one named (or nothing), so it carries them again."""
    state, response = run.state, run.state.model_responses[-1]
    if response.response_id or state.conversation_id:
        state.server_known = len(state.transcript) + turn.said
    if (state.auto_previous_response_id or state.previous_response_id) and response.response_id:
        state.previous_response_id = response.response_id


def announce(run: Run, turn: Turn) -> None:
    """A streamed run: what the model said is announced before any tool runs."""
    for event in stream_events_for(turn.items):
        run.emit(event)


# --- A paused turn resumed -----------------------------------------------------------------------------


def reread(run: Run, turn: Turn) -> None:
    """The paused turn's response, read again as it was (no model call): the calls that have an output keep it,
    an agent tool's paused inner run continues where it stopped."""
    pending = run.state.pending
    turn.output, turn.replays, turn.session_input = pending.output, pending.replays, pending.session_input
    classify(run, turn)
    for call in turn.calls:
        if call.call_id in pending.outputs:
            call.fate, call.output = "done", pending.outputs[call.call_id]
        call.paused = pending.nested.get(call.call_id)
        if call.paused is not None and call.target is None:  # its tool switched off (is_enabled) since: it goes on
            call.target = next((t for t in turn.agent.tools if getattr(t, "name", None) == call.item["name"]), None)
            call.kind = "function" if call.target else "unknown"
    turn.reserved = sum(call.paused is not None and call.kind == "function" for call in turn.calls)  # counted when
    # they began (run_calls); a call whose tool is gone is answered, not run


# --- Around the calls ------------------------------------------------------------------------------------


def check_tool_limit(run: Run, turn: Turn) -> None:
    """A batch of calls that would pass `tool_calls_limit` (or follows a response that crossed a token limit)
    does not run, nor does its handoff: the run stops with them waiting, to resume with a higher limit. A batch
    that may run is counted now, before it runs, so an agent tool's inner run (and its siblings running at once)
    never sees the room its own call takes."""
    usage, held = run.state.context_wrapper.usage, [c for c in turn.calls if c.fate == "run" or
                                                    c.kind == "handoff" and not c.fate]
    if not held:
        return
    calls = sum(call.kind != "handoff" and call.paused is None for call in held)  # an inner run going on: counted
    with COUNTING:
        limit = run.config.usage_limits.exceeded(usage, tool_calls=calls)
        if limit is None:
            usage.tool_calls, turn.reserved = usage.tool_calls + calls, turn.reserved + calls
            return
    turn.limit, turn.reserved = UsageLimitExceeded(*limit), 0  # none of them runs
    for call in held:
        call.fate = "held"


def guarded(invoke: Callable) -> Callable:
    """`invoke` with what surrounds a call when a run has tool guardrails or plugins: approval (done) -> the
    tool's input guardrails -> the call (inside the `tool_call` seam) -> its output guardrails. A rejection is
    the call's output; the verdicts are kept on the turn, in call order (`gather_guardrail_results`)."""
    def invoke_guarded(run: Run, turn: Turn, call: Call, ctx: Any) -> tuple:
        from .guardrails import check_tool_input, check_tool_output

        tool, results = call.target, run.scratch.setdefault((guarded, turn, call.call_id), [])
        started = call.paused is not None  # an agent tool's paused inner run going on: its guardrails ran then
        rejected = check_tool_input(run, tool, ctx, turn.agent, results) if tool.tool_input_guardrails and \
            not started else None
        if rejected is not None:
            return rejected, rejected
        if run.state.cancel_mode == "immediate":  # cancelled while its input guardrails ran: it never starts (it
            raise caller.Cancelled()  # runs on resume), as a call the cancel found waiting to start
        record = seams.ToolStep(turn.agent, tool, ctx, ctx.tool_arguments)
        try:
            with seams.around(run.plugins, "tool_call", run, record):
                value, text = invoke(run, turn, call, ctx)
                if text is None:
                    return value, text
                record.value, record.text, record.error = value, text, ctx.failure
        except caller.Cancelled:  # heard by a plugin once the call returned: the run stops at its next step
            if record.text is None:
                raise
        if tool.tool_output_guardrails:
            try:
                rejected = check_tool_output(run, tool, ctx, turn.agent, value, results)
            except caller.Cancelled:  # the tool ran: a cancel now must not leave it to run again on resume
                return WITHHELD, WITHHELD
            if rejected is not None:
                return rejected, rejected
        return value, text
    return invoke_guarded


def wrapped_by_plugins(invoke: Callable) -> Callable:
    """`invoke` as the plugins wrap it (the `invoke` seam), outermost: what a wrapper does once the call returned
    happens after the ledger recorded its outcome, so it never makes the call run again. The plugins wrap it once
    per run (and chosen chain), at its first call; two calls at once may both wrap it, alike."""
    def invoke_wrapped(run: Run, turn: Turn, call: Call, ctx: Any) -> tuple:
        wrapped = run.scratch.get((wrapped_by_plugins, invoke))
        if wrapped is None:
            wrapped = run.scratch[wrapped_by_plugins, invoke] = seams.change(run.plugins, "invoke", run, invoke)
        return wrapped(run, turn, call, ctx)
    return invoke_wrapped


def gather_guardrail_results(run: Run, turn: Turn) -> None:
    """The tool guardrails' verdicts of the turn's calls, in call order, kept with the turn and the run."""
    state = run.state
    for call in turn.calls:
        turn.guardrail_results.extend(run.scratch.pop((guarded, turn, call.call_id), ()))
    for result in turn.guardrail_results:
        getattr(state, f"tool_{result.stage}_guardrail_results").append(result)


def tell_approvals(run: Run, turn: Turn) -> None:
    """The plugins hear of each call left waiting for a person."""
    for item in turn.next_step.interruptions if isinstance(turn.next_step, NextStepInterruption) else ():
        seams.emit(run.plugins, "approval", run, item.tool_name, item.call_id, "pending")


# --- After the decision: the final output's guardrails, the session, the stream -------------------------------


def guard_output(run: Run, turn: Turn) -> None:
    """The output guardrails, before the final turn is saved. What stops the run is kept to raise once the turn
    is saved (`raise_rejected`): a tripwire, after the turn's items lost the rejected output
    (`withhold_rejected_output`), or a guardrail's own exception or a cancel (no verdict: saved as it is)."""
    agent = run.state.current_agent
    guardrails = list(agent.output_guardrails) + list(run.config.output_guardrails or ())
    if not guardrails:
        return
    from .errors import OutputGuardrailTripwireTriggered
    from .guardrails import run_output_guardrails, withhold_rejected_output

    try:
        run_output_guardrails(run, guardrails, agent, turn.next_step.output, run.state.output_guardrail_results)
    except OutputGuardrailTripwireTriggered as trip:
        withhold_rejected_output(run, turn.items, turn.guardrail_results, trip)
        run.scratch[guard_output] = trip
    except BaseException as error:  # a crash or a cancel: no verdict, so nothing is withheld or lost
        run.scratch[guard_output] = error


def raise_rejected(run: Run, turn: Turn) -> None:
    """What stopped the run at its output guardrails, raised once the turn is saved."""
    if guard_output in run.scratch:
        raise run.scratch.pop(guard_output)


def save(run: Run, turn: Turn) -> None:
    """Write the turn (and the run's new input, with its first turn) to the session in one transaction. A resumed
    turn is written once per session: another resume of the same paused state may have written it already (the
    ledger's `once` key says so); its claim records that it completed."""
    items = turn.session_input + [i.raw_item for i in turn.items]
    turn.saved = True  # asked once: a session that raises after it stored the items is never asked again
    write_to_session(run, items, f"turn-{run.state.current_turn}" if turn.claim is not None else None)
    run.state.unsaved_session_input = []
    settle_claim(run, turn, "completed")


def settle_claim(run: Run, turn: Turn, outcome: str) -> None:
    """A resumed turn records in the ledger how its claim ended, for a later resume of the same pause to say."""
    if turn.claim is not None:
        ledger.stored(run, run.ledger.settle_call, *turn.claim, outcome)


def write_to_session(run: Run, items: list, once: Any) -> None:
    """Append `items` to the session in one transaction. With `once` (what may already have been written by
    another resume of the same paused state) and a ledger-keeping session, the append happens once per run."""
    if run.session is None:
        return
    if once is not None and run.ledger is run.session:
        ledger.stored(run, run.session.add_items, items, once=f"{run.state.run_id}/{once}")
    else:  # a session written for upstream may have coroutine methods: `caller` awaits them
        caller.call(run.session.add_items, items)


def announce_outputs(run: Run, turn: Turn) -> None:
    """A streamed run: the turn's outputs, once settled."""
    turn.announced = True
    for event in stream_events_for(turn.items[turn.said:]):
        run.emit(event)


def announce_agent(run: Run, turn: Optional[Turn]) -> None:
    """A streamed run: the current agent (the starting one, or a handoff's) takes the conversation."""
    run.emit(AgentUpdatedStreamEvent(new_agent=run.state.current_agent))
