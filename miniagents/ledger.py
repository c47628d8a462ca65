"""The steps a run takes with a session that keeps the exactly-once ledger: each resume of a state and each fresh
turn claimed once, each call claimed as it starts and its output recorded as it returns, and the journal, so a
run whose process died continues from its session and no call runs twice unasked.

With a session that keeps the ledger and a journal (SQLiteSession, DBAPISession: `read_journal`,
`write_journal`), a run writes down what it is about to do before it does it, each in one short transaction: the
state a fresh turn starts from (`snapshot`, written once the turn is claimed: steps.claim_turn), the model's
response the moment it is read (`journal_response`: the turn as a paused turn with no outputs yet), each call
claimed as it starts and its output recorded as it returns (`claimed`), the turn's write (steps.save). The
entry is emptied when the run returns or raises (`close_journal`), so only a process that died leaves one (and a
run paused to ask a person about a call that may have happened: the question stays until a resume answers it).

Running the agent on that session again with no new input continues it (`open_journal`, when the run starts):
the journaled state is the run's, a journaled response is resumed like a pause (the model is not asked again),
and `recall` tells the calls apart: recorded outputs are used, calls that never started run, and a call that
started with no output recorded waits for a person unless its tool is idempotent. Every write replaces the entry
the writer last saw, or nothing: one of two workers continuing at once wins, and a stale worker stops before it
can overwrite a newer turn. These steps are chosen by data (run.py): a run without such a session never enters
them.
"""
from __future__ import annotations

import json
import os

from typing import Any, Callable

from . import caller
from .errors import (AlreadyResumedError, MissingFeatureError, SessionStoreError, ToolInputGuardrailTripwireTriggered,
                     UnfinishedTurnError, UserError)
from .state import MAX_TEXT, PendingTurn, RunState
from .tool import NestedInterruption
from .turn import HALTED, STOPPED_MIDWAY, Call, Run, Turn

NOT_RUN_AGAIN = ("This call was not run again: an earlier resume of this run already started it, and its result "
                 "was not recorded.")
NEVER_STARTED = "This call was not run: the run stopped before it started."
MAY_HAVE_HAPPENED = ("This call was started before the run stopped (its process died) and no result was recorded: it "
                     "may or may not have happened. It was not run again.")


def stored(run: Run, method: Callable, *args: Any, **options: Any) -> Any:
    """A method of the session's store (the ledger, the journal, a turn's write), called in a run. Whatever it
    raises is the store failing, noted for the run (`store_failed`), Ctrl-C in a write too: a driver's error, a
    trigger of your own or a custom session's exception (a `UserError` too) is raised as a `SessionStoreError` (the
    session's error its `__cause__`, its text not copied), so an agent tool's inner run stops its caller too, never
    told to the model as the tool's failure; a `SessionStoreError` or `MissingFeatureError` as it is."""
    try:
        return caller.call(method, *args, **options)
    except caller.Cancelled:  # the run's cancel, no failure of the store's: but whether the store call it stopped
        run.scratch[stored] = True  # (an async write) did its part is unknown, so the turn stays journaled too
        raise
    except BaseException as error:
        run.scratch[stored] = True
        if isinstance(error, (SessionStoreError, MissingFeatureError)) or not isinstance(error, Exception):
            raise
        raise SessionStoreError(f"{getattr(method, '__qualname__', 'The session')} raised {type(error).__name__} "
                                "(the __cause__): whether it stored anything is unknown. Once the store works again, "
                                "run the agent on the session with [] to finish the turn in flight") from error


def store_failed(run: Run, error: BaseException) -> bool:
    """Whether the run stops because its session's store failed: a method of it raised in this run (`stored`; in a
    call's thread too, whatever the run then raises) or in an agent tool's inner run (its `SessionStoreError`).
    Then nothing more of the turn is written: it stays journaled, as after a crash, and the ledger says what ran."""
    return isinstance(error, SessionStoreError) or stored in run.scratch


def recall(run: Run, turn: Turn) -> None:
    """A resumed turn's calls that started before a crash and recorded no output (found by a continued run, kept
    in `PendingTurn.unsure` across a pause) are never silently repeated: an idempotent tool's runs again; any
    other waits for a person, whose approval runs it again and whose rejection tells the model it may or may not
    have happened. A continued run finds them in the ledger; the calls it finds settled keep their outputs. An
    agent tool whose inner run the process that died had resumed is answered `MAY_HAVE_HAPPENED`."""
    pending, ctx, found = run.state.pending, run.state.context_wrapper, set()
    continued = run.scratch.get(open_journal)
    looked_up = {call.call_id: stored(run, run.ledger.lookup_call, run.state.run_id, call.call_id)
                 for call in turn.calls if continued and call.kind == "function" and not call.fate}
    stopped = any(recorded in (STOPPED_MIDWAY, HALTED) for _, recorded in looked_up.values())  # a call of it stopped
    kept = continued and (written(run) or stopped)  # the run (which may have written what ran): the turn ended there
    for call in turn.calls:
        if call.paused is not None and call.call_id in looked_up:  # an agent tool whose inner run was paused
            recorded = looked_up[call.call_id][1]
            if recorded is not None:  # it returned before the process died
                call.fate, call.output, call.paused = "done", (recorded, recorded), None
            elif inner_resumed(run, call.paused):  # the process that died had resumed its inner run: what that did
                # may have happened, and that resume (its claim) cannot be taken over
                call.fate, call.output, call.paused = "answer", (MAY_HAVE_HAPPENED, MAY_HAVE_HAPPENED), None
            continue  # else its inner run goes on, claiming its own calls
        if call.call_id in looked_up:
            claimed, recorded = looked_up[call.call_id]
            if recorded is not None:
                call.fate, call.output = "done", (recorded, recorded)
            elif kept:  # the history says what the turn did: nothing more of it runs, no person is asked
                text = MAY_HAVE_HAPPENED if claimed else NEVER_STARTED
                call.fate, call.output = "answer", (text, text)
            elif claimed:
                found.add(call.call_id)
        if call.call_id not in found and call.call_id not in pending.unsure or call.fate:
            continue
        name = call.item.get("name") or ""  # a decision made before the person was asked about a repeat is none
        decision = True if getattr(call.target, "idempotent", False) else None if call.call_id in found else \
            ctx.is_tool_approved(name, call.call_id)
        if decision is False:
            text = ctx.rejection_message(name, call.call_id) or MAY_HAVE_HAPPENED
            call.fate, call.output = "answer", (text, text)
            continue
        call.fate = "run" if decision else "wait"
        turn.reruns.update([call.call_id] if decision else [])
        turn.unsure.append(call.call_id)


def inner_resumed(run: Run, nested: RunState) -> bool:
    """Whether an agent tool's paused inner run was resumed already (its pause claimed: `claim_pause`), or went on
    to its end (a cancelled resume kept it, finished, though the call's outcome never reached the ledger)."""
    return getattr(nested, "finished", False) or getattr(nested, "pending", None) is not None and stored(
        run, run.ledger.lookup_call, *pause_claim(nested))[0]


# --- The journal: a run whose process died continues from its session ----------------------------------------


def snapshot(run: Run, turn: Turn) -> None:
    """The state between turns, before a fresh turn's first step, kept for the journal (written once the turn is
    claimed: `claim_turn`)."""
    if run.journal is not None or run.scratch.get(set_aside):
        run.scratch[snapshot] = journaled(run.state)


def journal_response(run: Run, turn: Turn) -> None:
    """The model's response, journaled the moment it is read and before any call runs: the turn as a paused turn
    with no outputs yet, which a continued run resumes (the model is not asked again)."""
    if run.journal is None:
        return
    state, unsaved = run.state, run.state.unsaved_session_input
    state.pending = PendingTurn(turn.agent.name, turn.output, turn.start, {}, turn.session_input, {}, turn.replays)
    state.unsaved_session_input = []  # the journaled turn holds it
    try:
        write_journal(run, journaled(state), state.current_turn)
    finally:
        state.pending, state.unsaved_session_input = None, unsaved


def write_journal(run: Run, document: dict, turn: int) -> None:
    """Replace the session's journal entry with `document` (a state), if it is still the entry this run last saw:
    one short transaction. Another worker wrote it since: one continuing this run (this one stops here, before it
    runs or writes anything more), or another run, whose turn in flight is never written over: a run bringing new
    input stops as if it had found it at its start; a resumed one, whose pause or turn is claimed, goes on
    unjournaled (stopping would leave its claim held by nobody), unless the entry it replaced was its own. Only a
    worker of this run replaces that (a continue, a take-over), which may have taken its turn over and ended since:
    it stops then, whoever wrote last."""
    if replace_journal(run, document, turn):
        return
    replaced = bool(run.journal) and run.journal == run.scratch.get(write_journal)  # its own entry
    run.journal = stored(run, run.session.read_journal)  # what the other worker wrote
    other, run.journal = journal_entry(run) if run.journal else None, None  # not this run's to close
    if other is None or other["run_id"] == run.state.run_id or replaced:
        raise AlreadyResumedError(run.state.run_id, turn, None)
    if run.state.unsaved_session_input:
        raise UnfinishedTurnError(run.session.session_id, other["run_id"], other["turn"])
    set_aside(run)


def set_aside(run: Run) -> None:
    """This run journals nothing while another run's turn is in flight in its session; each fresh turn of it looks
    again (`claim_turn`), and journals once that turn is gone."""
    run.journal, run.scratch[set_aside] = None, True


def replace_journal(run: Run, document: Any, turn: int, paused: bool = False) -> bool:
    """Replace the entry this run last saw with `document` (a state; "" empties it; `paused`: at a pause no resume
    has claimed), in one short transaction; False, changing nothing, when another worker wrote it since."""
    state = run.state
    epoch = journal_entry(run)["epoch"] + 1 if run.journal else 0
    entry = document if document == "" else json.dumps(
        {"run_id": state.run_id, "turn": turn, "epoch": epoch, "writer": os.urandom(8).hex(), "state": document,
         **({"paused": True} if paused else {})}, ensure_ascii=False, allow_nan=False)  # each entry its own text:
    # two workers writing the same state at once cannot both see their own entry in place
    if not stored(run, run.session.write_journal, run.journal, entry):
        return False
    run.journal = run.scratch[write_journal] = entry  # this run's own entry: it closes it when it ends
    return True


def journaled(state: RunState) -> dict:
    """`state` as the journal holds it (its context left out: a continue is given its own); one JSON cannot hold
    is a `UserError` (`dump_state`), before the turn it is in runs a call (the state is journaled first)."""
    return state.to_json(context_serializer=lambda context: None)


def journal_entry(run: Run) -> dict:
    """The session's journal entry as this run last saw it, read; one this library did not write (edited by hand,
    corrupt, or longer than a state may be: `state.MAX_TEXT`, checked before it is parsed) is a `SessionStoreError`
    naming the session, before anything runs."""
    text = run.journal  # the session's entry (whatever it returned), or this run's own: never refused for its size
    readable = isinstance(text, str) and (len(text) <= MAX_TEXT or text is run.scratch.get(write_journal))
    try:
        entry = json.loads(text) if readable else None
    except (ValueError, RecursionError):
        entry = None
    kinds = {"run_id": str, "turn": int, "epoch": int, "state": dict}
    if isinstance(entry, dict) and all(isinstance(entry.get(key), kind) for key, kind in kinds.items()) and \
            entry["state"].get("run_id", entry["run_id"]) == entry["run_id"]:  # its state's run id edited: its calls
        # would run again, as another run's
        return entry
    what = f"of over the {MAX_TEXT:,} characters a state may have" if isinstance(text, str) and not readable else \
        "miniagents did not write (edited, or corrupt)"
    raise SessionStoreError(f"The journal of session {run.session.session_id!r} holds an entry {what}, so its turn "
                            "in flight cannot be continued: empty it with "
                            "session.write_journal(session.read_journal(), '') to go on without that turn")


def open_journal(run: Run) -> bool:
    """Before the first turn, with a session that keeps a journal: read it. A turn in flight there (a run whose
    process died mid-turn, or a run going on now) is continued when this run has no new input (`[]`): this run
    takes it over (one worker wins; another raises `AlreadyResumedError`) and finishes that turn first; new input
    raises `UnfinishedTurnError` (nothing runs). A resumed state goes on from where it is. True when the run's
    state was replaced by the journal's."""
    if run.ledger is not run.session or not callable(getattr(run.session, "read_journal", None)):
        return False
    run.journal, state = stored(run, run.session.read_journal), run.state
    if run.journal and (state.current_turn or state.generated_items) and journal_entry(run)["run_id"] != state.run_id:
        set_aside(run)  # a resumed state, with another run's turn in flight: it journals nothing over that one
    if not run.journal or state.current_turn or state.generated_items:  # nothing in flight, or a resumed state
        return False
    entry = journal_entry(run)
    if state.unsaved_session_input or run.shared:  # new input, or a state given with its own (made by hand)
        raise UnfinishedTurnError(run.session.session_id, entry["run_id"], entry["turn"])
    try:  # the run's context, for the agent tools' paused inner runs too
        found = RunState.from_json(state.starting_agent, entry["state"], context_override=state.context_wrapper.context)
    except UserError as error:  # not a state this agent can continue (corrupt, or another agent's)
        raise SessionStoreError(f"The journal of session {run.session.session_id!r} holds a turn in flight this agent "
                                f"cannot continue ({error}): continue it with the agent that ran it, or empty it with "
                                "session.write_journal(session.read_journal(), '') to go on without that turn") \
            from None
    if found.pending is not None and not entry.get("paused"):
        found.pending.pauses += 1  # a turn in flight: a claim of its own, so a continue that died too can be
        # continued again; a pause keeps its own, where this run and the state the paused run returned meet (one
        # resume of it wins)
    while found.pending is not None and stored(run, run.ledger.lookup_call, *pause_claim(found)) == (True, None):
        found.pending.pauses += 1  # past a pause a resume or a take-over claimed and died in before it journaled
        # its turn: the claim, held by no one, refused every continue and left the run without its answer (were
        # that resume still running, its journal write fails first)
    run.state, run.scratch[open_journal] = found, True  # this run continues a turn its session's journal held
    write_journal(run, journaled(found), entry["turn"])
    return True


def close_journal(run: Run) -> None:
    """The run returned or raised: no turn of it is in flight, so the session's journal holds none. Only an entry
    this run wrote (or took over with the pause it resumed, `claim_pause`) is closed: a stale worker, whose entry
    another one replaced, leaves the newer one alone. A run that paused to ask a person about a call that may
    already have happened (`recall`) journals that pause instead: a crash while the person decides leaves the
    question to continue, not a session with neither the question nor the turn. A run the session itself failed
    (`store_failed`: a full disk, a lock held too long, a trigger of your own, whatever a write or claim raised)
    leaves its turn there, as a crash does: what its calls did is not in the history, and a continue finds it. So
    does a run stopped by Ctrl-C or an exit (`KeyboardInterrupt`, `SystemExit`) while calls of its turn ran, before
    the turn was written: the process is stopping, its calls may still be running in their threads, and the ledger,
    not this run, will know what they did. A run whose awaited `Runner.run` was cancelled journals the pause it
    stopped in, as it journals a question to a person: no one gets the state it returns, and its calls that ran are
    only in that state. So does a run that paused for approval after calls of its turn ran (or an agent tool's inner
    run paused): until the state is saved and resumed, what they did is only in it, and a process that dies first
    would start the run over."""
    pending = run.state.pending
    as_a_crash = store_failed(run, run.failure) or not isinstance(run.failure, (Exception, type(None)))
    if run.journal and run.journal == run.scratch.get(write_journal) and not as_a_crash:
        asking = run.result is not None and pending is not None and (
            pending.unsure or run.abandoned or pending.outputs or pending.nested)
        fresh = asking and not stored(run, run.ledger.lookup_call, *pause_claim(run.state))[0]  # no resume's yet
        replace_journal(run, journaled(run.state) if asking else "", run.state.current_turn, fresh)
    run.journal = None


def claim_turn(run: Run, turn: Turn) -> None:
    """Exactly once, for a fresh turn too: with a session that keeps the ledger, a fresh turn claims its number
    in the run before the model is called. A state a usage limit stopped between turns has no pause to claim: a
    second resume of it (a retried worker) raises `AlreadyResumedError` here, before it calls the model, runs a
    tool or writes. The claim also makes the turn's calls claimed and its write once-guarded, as a resume's.
    A claim with no outcome is taken over by the run whose own entry the journal holds: a continue (its dead worker
    claimed the turn) or a resume that took the run over (a stale worker claimed the turn, and stopped at its
    journal write): the journal write below decides between them, one compare and swap. A claimant that journals
    nothing (set aside: another run's turn was in flight) has no journal write to stop it, so it says so in the
    ledger before it claims, and its claim is never taken over."""
    state = run.state
    if run.scratch.get(set_aside) and not stored(run, run.session.read_journal):  # the other run's turn is gone
        run.journal, run.scratch[set_aside] = "", False
    turn.claim = (own_claims(state), f"turn-{state.current_turn}")
    unjournaled = (own_claims(state), f"unjournaled:turn-{state.current_turn}")
    if run.scratch.get(set_aside):
        stored(run, run.ledger.claim_call, *unjournaled)
    won, outcome = stored(run, run.ledger.claim_call, *turn.claim)
    if not won and (outcome is not None or not run.journal or run.journal != run.scratch.get(write_journal)
                    or stored(run, run.ledger.lookup_call, *unjournaled)[0]):
        raise AlreadyResumedError(state.run_id, state.current_turn, outcome)  # another resume started this turn
    if run.journal is not None:  # the state this turn starts from, for a continue to start it again
        over_empty = won and not run.journal and not state.unsaved_session_input  # (new input: no turn to take)
        write_journal(run, run.scratch.pop(snapshot), state.current_turn - 1)
        outcome = stored(run, run.ledger.lookup_call, *turn.claim)[1] if over_empty else None
        if outcome is not None:  # "empty" may be "empty again": a take-over ran this turn and ended meanwhile
            raise AlreadyResumedError(state.run_id, state.current_turn, outcome)


def claim_pause(run: Run, turn: Turn) -> None:
    """Exactly once, for the whole turn: a resume first claims this pause of the turn in the session's ledger.
    Only one resume of one paused state proceeds: another (a retry, a second worker, at once or later) raises
    `AlreadyResumedError` before it runs or writes anything, so the session holds the winner's turn alone."""
    state = run.state
    turn.claim = pause_claim(state)
    resumed = not run.scratch.get(open_journal)  # a state given to the run, not a continue of the session's journal
    won, outcome = stored(run, run.ledger.claim_call, *turn.claim)
    if won and resumed and written(run):  # its turn is written: a take-over of this state, or the resume one took
        won, outcome = False, "completed"  # over, completed it (a claim this leaves, a continue passes over)
    if not won:
        raise AlreadyResumedError(state.run_id, state.current_turn, outcome)
    if run.journal is not None:  # the resumed turn is in flight: a process that dies in it leaves it to continue
        write_journal(run, journaled(state), state.current_turn)


def pause_claim(state: RunState) -> tuple:
    """The ledger's key for resuming this pause of the state's turn, which one resume claims (`claim_pause`)."""
    return own_claims(state), f"resume:turn-{state.current_turn}:pause-{state.pending.pauses}"


def own_claims(state: RunState) -> str:
    """The ledger's run id for the run's own claims (its turns and resumes): `<run id>#`, beside the run id its
    calls are claimed under, so no call id a model chooses ("turn-1") can ever be one of them."""
    return state.run_id + "#"


def written(run: Run) -> bool:
    """Whether the current turn is in the session's history (its once-key is used): a resume that wrote it and
    died before it recorded "completed" did complete, and a take-over must not ask the model again."""
    lookup = getattr(run.ledger, "lookup_call", None)
    key = f"{run.state.run_id}/turn-{run.state.current_turn}"
    return run.ledger is run.session and lookup is not None and stored(run, lookup, "", key)[0]


def claimed(invoke: Callable) -> Callable:
    """`invoke` with the ledger around it, for a resumed turn (`turn.claim` set): each call is claimed just before
    it starts, so a call a cancel kept from starting stays unclaimed (the next resume runs it), or, stopped in its
    input guardrails once claimed, is recorded `NEVER_STARTED` (the next resume tells the model so: a claim is never
    taken twice). Its outcome is recorded the moment it is known. A call claimed before is not run again: it gets
    the output recorded then, or (that claimant is still running, or it crashed mid-call) a message saying so.
    An agent tool's paused inner run goes on unclaimed (its call was claimed when it started): its own calls are
    claimed inside it, and the call's outcome is recorded here."""
    def invoke_claimed(run: Run, turn: Turn, call: Call, ctx: Any) -> tuple:
        if turn.claim is None:
            return invoke(run, turn, call, ctx)
        if call.paused is None:  # (an agent tool's paused inner run goes on: its call was claimed when it started)
            rerun = call.call_id in turn.reruns  # started before a crash: a person approved running it again, or its
            # tool is idempotent (`recall`)
            won, recorded = (True, None) if rerun else stored(run, run.ledger.claim_call, run.state.run_id,
                                                              call.call_id)
            if not won:  # it ran before, or was stopped before it started: it does not run now
                text, call.fate = recorded if recorded is not None else NOT_RUN_AGAIN, "done"
                return text, text
        try:
            value, text = invoke(run, turn, call, ctx)
        except NestedInterruption:  # paused inside: no outcome yet
            raise
        except Exception as error:  # it stops the run: a continue is told what the history says (keep_what_ran)
            if isinstance(error, caller.Cancelled) and not error.started:  # stopped before it started (in its input
                stopped = NEVER_STARTED  # guardrails): the resume tells the model so
            else:
                stopped = HALTED if isinstance(error, ToolInputGuardrailTripwireTriggered) else STOPPED_MIDWAY
            stored(run, run.ledger.settle_call, run.state.run_id, call.call_id, stopped)
            raise
        if text is not None:
            stored(run, run.ledger.settle_call, run.state.run_id, call.call_id, text)
        return value, text
    return invoke_claimed
