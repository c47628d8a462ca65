"""What a run returns: `RunResult`, `RunResultStreaming`, and the stream events.

A result is a read-only view of the run's `RunState` at the moment the loop returned; `to_state()`
hands back that state so a paused run can be approved, serialised and resumed.
"""
from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field, fields
from typing import Any, AsyncIterator, Callable, Optional, Union

from .errors import UserError
from .items import ToolApprovalItem, drop_orphans, to_input_list

EVENT_NAMES = {
    "message_output_item": "message_output_created",
    "handoff_call_item": "handoff_requested",
    "handoff_output_item": "handoff_occured",  # sic: upstream's spelling, kept for compatibility
    "tool_call_item": "tool_called",
    "tool_call_output_item": "tool_output",
    "reasoning_item": "reasoning_item_created",
}


@dataclass(eq=False)
class RawResponsesStreamEvent:
    """One streaming event from the model, passed through as it came (a Responses-shaped event dict)."""

    data: dict
    type: str = "raw_response_event"


@dataclass(eq=False)
class RunItemStreamEvent:
    """A run item as it enters the run, named with upstream's event name for its kind (`EVENT_NAMES`)."""

    name: str
    item: Any
    type: str = "run_item_stream_event"


@dataclass(eq=False)
class AgentUpdatedStreamEvent:
    """Emitted when the run starts and whenever a handoff makes another agent the current one."""

    new_agent: Any
    type: str = "agent_updated_stream_event"


def stream_events_for(items: list) -> list:
    return [RunItemStreamEvent(EVENT_NAMES[i.type], i) for i in items if i.type in EVENT_NAMES]


def replayable(input: Any, new_items: list, mode: str) -> list:
    if mode not in ("preserve_all", "normalized"):
        raise UserError(f"to_input_list mode must be 'preserve_all' or 'normalized', got {mode!r}")
    items = to_input_list(input) + [i.raw_item for i in new_items if not isinstance(i, ToolApprovalItem)]
    return drop_orphans(items) if mode == "normalized" else items


StreamEvent = Union[RawResponsesStreamEvent, RunItemStreamEvent, AgentUpdatedStreamEvent]


@dataclass(frozen=True)
class AgentToolInvocation:
    """Which call of an agent-as-tool produced a nested run's result: the tool's name, call id and arguments."""

    tool_name: str
    tool_call_id: str
    tool_arguments: str


class RunResultBase:
    """What `RunResult` and `RunResultStreaming` share (upstream's base class)."""

    context_wrapper: Any

    @property
    def agent_tool_invocation(self) -> Optional[AgentToolInvocation]:
        """For the result of an agent run as a tool (`Agent.as_tool`): the call that ran it; else None."""
        ctx = self.context_wrapper
        name = getattr(ctx, "tool_name", None)
        if not name:
            return None
        return AgentToolInvocation(name, ctx.tool_call_id, ctx.tool_arguments)


GUARDRAIL_RESULTS = ("input_guardrail_results", "output_guardrail_results", "tool_input_guardrail_results",
                     "tool_output_guardrail_results")  # what a state and a result both keep


@dataclass(eq=False)
class RunResult(RunResultBase):
    """What a finished or paused run returns: its input, the items it generated, the model responses, the
    final output (None while paused on `interruptions`), the last agent and the guardrail results."""

    input: Any
    new_items: list
    raw_responses: list
    final_output: Any
    last_agent: Any
    context_wrapper: Any
    max_turns: Optional[int] = None
    interruptions: list = field(default_factory=list)
    input_guardrail_results: list = field(default_factory=list)
    output_guardrail_results: list = field(default_factory=list)
    tool_input_guardrail_results: list = field(default_factory=list)
    tool_output_guardrail_results: list = field(default_factory=list)
    _state: Any = field(default=None, repr=False)

    @classmethod
    def from_state(cls, state: Any, output: Any, interruptions: Optional[list] = None) -> "RunResult":
        """The result as the state stands now (copies of its lists), the current agent being the last one."""
        return cls(state.original_input, list(state.generated_items), list(state.model_responses), output,
                   state.current_agent, state.context_wrapper, state.max_turns, list(interruptions or ()),
                   *[list(getattr(state, name)) for name in GUARDRAIL_RESULTS], _state=state)

    @property
    def last_response_id(self) -> Optional[str]:
        return self.raw_responses[-1].response_id if self.raw_responses else None

    def to_input_list(self, *, mode: str = "preserve_all") -> list:
        """The input, then every transcript item the run produced: feed it to the next run.
        `mode="normalized"` also drops calls still waiting for approval (they have no output yet)."""
        return replayable(self.input, self.new_items, mode)

    def final_output_as(self, cls: Any, raise_if_incorrect_type: bool = False) -> Any:
        if raise_if_incorrect_type and not isinstance(self.final_output, cls):
            raise TypeError(f"Final output is not of type {cls.__name__}")
        return self.final_output

    def to_state(self) -> Any:
        """The run's state, to approve/reject interruptions and resume (or serialise)."""
        return self._state


class RunResultStreaming(RunResult):
    """A `RunResult` filling in: iterate `stream_events()` to drive the run; its items, responses and last agent
    follow the run at each item or agent event, and when it ends, every field holds the finished (or paused) run's
    values."""

    def __init__(self, state: Any, drive: Callable[[Callable], RunResult], stop: Callable[[str], None]):
        super().__init__(input=state.original_input, new_items=[], raw_responses=[], final_output=None,
                         last_agent=None, context_wrapper=state.context_wrapper, max_turns=state.max_turns,
                         _state=state)
        self._drive, self._stop = drive, stop  # `stop` cancels the run, only while its state is the run's
        self._release: Callable = lambda: None  # frees the state when the run never starts (Runner.run_streamed)
        self._started, self._starting = False, threading.Lock()  # started by a read, or ended by a cancel first
        self._context = contextvars.copy_context()  # the run's context variables: where it was started, as upstream's
        self._ended = False  # the run's own end is in the fields: a cancel's account of it never replaces them
        self.is_complete = False

    @property
    def current_agent(self) -> Any:
        return self._state.current_agent

    def cancel(self, mode: str = "immediate") -> None:
        """Stop the run: "immediate" at the next event (`is_complete` is True at once, the fields holding what the
        run had done), "after_turn" once the current turn has settled."""
        if mode not in ("immediate", "after_turn"):
            raise UserError(f"cancel mode must be 'immediate' or 'after_turn', got {mode!r}")
        with self._starting:
            started, self._started = self._started, True
        if not started:  # its events will never be read: the run never starts, and its state is free now
            self._release()
            self._complete(RunResult.from_state(self._state, None))
            return
        self._stop(mode)
        if mode == "immediate":  # complete now, as upstream's: the run does no more
            self._complete(RunResult.from_state(self._state, None), cut=True)

    @property
    def current_turn(self) -> int:
        return self._state.current_turn

    async def stream_events(self) -> AsyncIterator[Any]:
        """Yield events as the loop (in a worker thread) produces them; raise the run's error at the end.

        The loop waits until each event has been handled before it goes on, so the run never gets ahead
        of its reader: a `cancel()` made while handling an event takes effect right there (and one made before
        the first read means no event at all). The run happens once: iterating again yields nothing. Whenever
        the run ends — finished, paused, cancelled, or failed (then with the items it had accepted) — the
        result's fields hold it and `is_complete` is True, even if the reader stopped early.
        """
        import asyncio

        with self._starting:
            started, self._started = self._started, True
        if started:  # read before, or cancelled before it was read
            return
        loop, queue, done, handled = asyncio.get_running_loop(), asyncio.Queue(), object(), threading.Semaphore(0)
        outcome: dict = {}

        def put(item: Any) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
                return True
            except RuntimeError:  # the reader's event loop is closed
                return False

        def hand_over(event: Any) -> None:
            """The event to the reader; wait until it was handled. A reader whose event loop closed without closing
            this stream is gone: the run stops at its next step instead of waiting forever."""
            if not isinstance(event, RawResponsesStreamEvent):  # not each token's: an item or an agent came
                self._follow()
            delivered = put(event)
            while delivered and not handled.acquire(timeout=1.0):
                delivered = not loop.is_closed()
            if not delivered:
                self._stop("immediate")

        def work() -> None:
            try:
                self._complete(self._drive(hand_over))
            except BaseException as e:
                outcome["error"] = e
                self._complete(RunResult.from_state(self._state, None))
            finally:
                put(done)

        # A thread of its own, not the event loop's executor: a reader that awaits other runs while it handles an
        # event must never wait behind the streams that wait for it.
        threading.Thread(target=self._context.run, args=(work,), name="miniagents-stream",
                         daemon=True).start()
        finished = False
        try:
            while not finished:
                event = await queue.get()
                finished = event is done
                if not finished:
                    yield event
                    handled.release()
        finally:
            if not finished:  # the reader stopped early (or its task was cancelled): stop at the next step, and
                self._stop("immediate")  # wait until the run has (its result is then complete)
                handled.release()
                while await queue.get() is not done:
                    handled.release()
        if "error" in outcome:
            raise outcome["error"]

    def _follow(self) -> None:
        """The fields upstream's streamed result fills as the run goes: the items and responses so far, and the
        current agent as the last one (the rest wait for the run's end, `_complete`)."""
        state = self._state
        self.new_items, self.raw_responses = list(state.generated_items), list(state.model_responses)
        self.last_agent = state.current_agent

    def _complete(self, result: RunResult, cut: bool = False) -> None:
        """The fields hold `result`: the run's end, or (`cut`) what it had done when cancelled, unless it has ended
        (a cancel from another thread racing the run's end never hides its final output or its interruptions)."""
        with self._starting:
            if cut and self._ended:
                return
            self._ended = not cut
            for f in fields(RunResult):
                setattr(self, f.name, getattr(result, f.name))
            self.is_complete = True
