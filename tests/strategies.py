"""Generated whole runs for the loop's property tests (tests/test_loop_properties.py).

A `Scenario` is a conversation: one or more runs on one agent graph, each run a list of scripted model
responses (messages, reasoning, 0-5 function calls with valid or invalid arguments, unknown tools, call ids
repeated within a response, handoffs, tools that fail, time out or need approval), the decisions a person takes
at each pause, how each paused state travels (the object, or JSON before or after deciding), an optional
SQLiteSession with an optional history window, and an optional max_turns. `play` runs a scenario through the
public API only (Agent, Runner, function_tool, RunState, SQLiteSession, SessionSettings, ScriptedModel) and
returns everything an observer can see: the model's requests, the tools' own log, the results, the stream
events, the session.

The agent graph: "Alpha" (add, pay, check, fail, slow; hands off to Beta) and "Beta" (add, check, fail; hands
off to Alpha), sharing one ScriptedModel, so the script is the sequence of model calls whoever makes them.
`pay` always needs approval, `check` needs it for an odd `x`; `fail` raises (a ToolError for odd `x`, a
redacted RuntimeError otherwise); `slow` blocks past its 0.05 s timeout for odd `x`.
"""
import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional, Tuple

from hypothesis import strategies as st

from miniagents import (Agent, MaxTurnsExceeded, RunConfig, RunContextWrapper, Runner, RunState, ToolError,
                        function_tool)
from miniagents import SessionSettings, SQLiteSession
from miniagents.testing import ScriptedModel, assistant_message, function_call

SECRET = "ctx-secret-5b1e-never-sent"
TOOL_PARAMS = {"add": ("a", "b"), "pay": ("amount",), "check": ("x",), "fail": ("x",), "slow": ("x",)}
HANDOFF_NAMES = ("transfer_to_beta", "transfer_to_alpha")
CALL_NAMES = tuple(TOOL_PARAMS) + ("nope",) + HANDOFF_NAMES
DECISIONS = ("approve", "reject", "reject_message", "always_approve", "always_reject", "later")
PLAIN_DECISIONS = ("approve", "reject", "reject_message", "later")
# How a paused state reaches the resume: the state object itself; to_string/from_string, then the decisions;
# the decisions, then to_string/from_string.
TRAVEL = ("object", "json_then_decide", "decide_then_json")
SLOW_TIMEOUT = 0.05
# Session files live in memory where the system offers it: SQLite's fsync on every turn would otherwise be most
# of a play's time.
FAST_TMP = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


# ----------------------------------------------------------------------------- what a scenario is


@dataclass
class Call:
    name: str
    arguments: str  # the raw JSON text the model sends
    call_id: str
    valid: bool  # arguments that the tool's schema accepts


@dataclass
class Response:
    reasoning: bool
    message: Optional[str]
    calls: List[Call]

    def output(self, index: int) -> list:
        items: list = []
        if self.reasoning:
            items.append({"type": "reasoning", "id": f"rs_{index}", "summary": []})
        if self.message is not None:
            items.append(assistant_message(self.message, item_id=f"msg_{index}"))
        items += [function_call(c.name, c.arguments, call_id=c.call_id) for c in self.calls]
        return items


@dataclass
class Scenario:
    runs: List[List[Response]]  # per run: the responses, the last one without calls
    decisions: List[str]  # taken in order, one per interruption met (the last one repeats)
    travel: List[str]  # per pause (the last repeats): one of TRAVEL
    session: bool = False
    window: Optional[Tuple[str, int]] = None  # ("limit" | "limit_turns", n) in RunConfig.session_settings
    max_turns: Optional[int] = None
    reopen_session: bool = False  # a new SQLiteSession object on the same file for every resume

    def needs_approval(self, name: str, params: Any) -> bool:
        return name == "pay" or (name == "check" and _check_needs_approval(params))


def _check_needs_approval(params: Any) -> bool:
    """`check`'s policy: an odd x needs a person (and so does anything that is not a valid x)."""
    x = params.get("x") if isinstance(params, dict) else None
    return not isinstance(x, int) or isinstance(x, bool) or x % 2 == 1


# ----------------------------------------------------------------------------- strategies


ints = st.integers(min_value=-3, max_value=9)
INVALID_ARGUMENTS = st.sampled_from(["{", "[1]", "null", "{}"])


@st.composite
def arguments(draw, name: str) -> Tuple[str, bool]:
    """(raw JSON arguments, valid?) for a call to `name`."""
    params = TOOL_PARAMS.get(name)
    if params is None:  # handoffs take no arguments; an unknown tool's are never read
        return "{}", True
    values = {p: draw(ints) for p in params}
    kind = draw(st.sampled_from(["valid"] * 4 + ["string", "bool", "extra", "missing", "raw"]))
    if kind == "string":
        values[params[0]] = str(values[params[0]])
    elif kind == "bool":
        values[params[-1]] = True
    elif kind == "extra":
        values["extra"] = 1
    elif kind == "missing":
        del values[params[-1]]
    elif kind == "raw":
        return draw(INVALID_ARGUMENTS), False
    return json.dumps(values), kind == "valid"


@st.composite
def responses(draw, run: int, count: int, names: Tuple[str, ...] = CALL_NAMES) -> List[Response]:
    """`count` responses with 1-5 calls each, then a final response with none; call ids unique across the
    conversation (`r<run>t<turn>c<n>`), except that a call may repeat the previous call's id in its response."""
    out = []
    for turn in range(count + 1):
        final = turn == count
        calls: List[Call] = []
        for n in range(0 if final else draw(st.integers(1, 5))):
            name = draw(st.sampled_from(names))
            raw, valid = draw(arguments(name))
            repeat = calls and draw(st.integers(0, 5)) == 0
            calls.append(Call(name, raw, calls[-1].call_id if repeat else f"r{run}t{turn}c{n}", valid))
        message = draw(st.one_of(st.none(), st.sampled_from(["ok", "on it", "done: all good", ""])))
        out.append(Response(draw(st.booleans()), message, calls))
    return out


@st.composite
def scenarios(draw, *, max_runs: int = 3, decisions: Tuple[str, ...] = DECISIONS, limits: bool = True,
              session: Optional[bool] = None, travel: Tuple[str, ...] = TRAVEL) -> Scenario:
    with_session = draw(st.booleans()) if session is None else session
    run_count = draw(st.integers(1, max_runs)) if with_session else 1
    runs = [draw(responses(r, draw(st.integers(0, 4)))) for r in range(run_count)]
    window = None
    if with_session and limits:
        window = draw(st.one_of(st.none(), st.tuples(st.just("limit"), st.integers(1, 6)),
                                st.tuples(st.just("limit_turns"), st.integers(1, 2))))
    longest = max(len(r) for r in runs)
    max_turns = draw(st.one_of(st.none(), st.integers(1, longest))) if limits else None
    return Scenario(runs=runs, decisions=draw(st.lists(st.sampled_from(decisions), min_size=1, max_size=12)),
                    travel=draw(st.lists(st.sampled_from(travel), min_size=1, max_size=12)), session=with_session,
                    window=window, max_turns=max_turns,
                    reopen_session=with_session and draw(st.booleans()))


# ----------------------------------------------------------------------------- playing a scenario


@contextlib.contextmanager
def database_file() -> Iterator[str]:
    """A path for a fresh SQLite database in a folder of its own, removed afterwards."""
    folder = tempfile.mkdtemp(prefix="loop_props_", dir=FAST_TMP)
    try:
        yield os.path.join(folder, "conversation.db")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Played:
    """What an observer saw of one played scenario."""

    requests: list  # every ModelCall, in order
    tool_runs: list  # (tool, call id, arguments) per started tool call, in start order
    bad_runs: list  # tool runs whose arguments were not what the signature promises
    outcomes: list  # per run: its final RunResult / RunResultStreaming, or the exception it raised
    decided: list  # (call id, tool name, decision) in the order they were taken
    approval_items: list  # (ToolApprovalItem, decision) in the order decided (for replaying the decisions)
    approved_before_run: list  # tool runs of approval-needing calls with no approval taken before them
    events: list  # stream events, per run, all segments (streamed plays only)
    session_items: Optional[list]
    paused: int  # how many times a run paused


class World:
    """Fresh tools, agents, model and session for one play; the tools log what they are called with."""

    def __init__(self, scenario: Scenario, db: str):
        self.scenario = scenario
        self.lock = threading.Lock()
        self.release = threading.Event()  # lets timed-out `slow` calls finish once the play is over
        self.tool_runs: list = []
        self.bad_runs: list = []
        self.approved: set = set()  # call ids approved so far, and tool names approved for good
        self.approved_before_run: list = []
        self.model = ScriptedModel([r.output(i) for run in scenario.runs for i, r in enumerate(run)])
        self.db = db
        self.session = self.new_session() if scenario.session else None
        tools = self.make_tools()
        self.alpha = Agent("Alpha", instructions="You are Alpha.", model=self.model,
                           tools=[tools[n] for n in ("add", "pay", "check", "fail", "slow")])
        self.beta = Agent("Beta", instructions="You are Beta.", model=self.model,
                          tools=[tools[n] for n in ("add", "check", "fail")], handoffs=[self.alpha])
        self.alpha.handoffs.append(self.beta)

    def new_session(self) -> Any:
        return SQLiteSession("conversation", self.db)

    def ran(self, ctx: Any, tool: str, **args: Any) -> None:
        with self.lock:
            self.tool_runs.append((tool, ctx.tool_call_id, args))
            if any(not isinstance(v, int) or isinstance(v, bool) for v in args.values()):
                self.bad_runs.append((tool, ctx.tool_call_id, args))
            if self.scenario.needs_approval(tool, args) and not (
                    ctx.tool_call_id in self.approved or tool in self.approved):
                self.approved_before_run.append((tool, ctx.tool_call_id, args))

    def make_tools(self) -> dict:
        world = self

        @function_tool
        def add(ctx: RunContextWrapper, a: int, b: int) -> int:
            """Add two numbers."""
            world.ran(ctx, "add", a=a, b=b)
            return a + b

        @function_tool(needs_approval=True)
        def pay(ctx: RunContextWrapper, amount: int) -> str:
            """Pay an amount."""
            world.ran(ctx, "pay", amount=amount)
            return f"paid {amount}"

        @function_tool(needs_approval=lambda ctx, params, call_id: _check_needs_approval(params))
        def check(ctx: RunContextWrapper, x: int) -> str:
            """Check a number."""
            world.ran(ctx, "check", x=x)
            return f"checked {x}"

        @function_tool
        def fail(ctx: RunContextWrapper, x: int) -> str:
            """Always fails."""
            world.ran(ctx, "fail", x=x)
            if x % 2:
                raise ToolError(f"fail {x}: try another number")
            raise RuntimeError("internal detail the model must not see")

        @function_tool(timeout=SLOW_TIMEOUT)
        def slow(ctx: RunContextWrapper, x: int) -> str:
            """Slow for odd numbers."""
            world.ran(ctx, "slow", x=x)
            if x % 2:
                world.release.wait(10)
            return f"slow {x}"

        return {"add": add, "pay": pay, "check": check, "fail": fail, "slow": slow}


def _drain(result: Any, events: list) -> None:
    """Read a streamed run to its end, keeping every event (also when the run raises)."""
    async def read() -> None:
        async for event in result.stream_events():
            events.append(event)

    asyncio.run(read())


def _decide(world: World, state: Any, items: list, decisions: List[str], asked: set, played: dict) -> None:
    """Take the next decisions for `items` (pending interruptions of `state`)."""
    for item in items:
        code = decisions[min(played["next"], len(decisions) - 1)]
        played["next"] += 1
        if code == "later" and item.call_id not in asked:
            asked.add(item.call_id)
            continue
        if code == "later":
            code = "approve"
        with world.lock:
            if code == "approve":
                state.approve(item)
                world.approved.add(item.call_id)
            elif code == "always_approve":
                state.approve(item, always_approve=True)
                world.approved.update((item.call_id, item.tool_name))
            elif code == "reject":
                state.reject(item)
            elif code == "reject_message":
                state.reject(item, rejection_message=f"no {item.call_id}")
            else:
                state.reject(item, always_reject=True)
                world.approved.discard(item.tool_name)
        played["decided"].append((item.call_id, item.tool_name, code))
        played["items"].append((item, code))


def play(scenario: Scenario, *, streamed: bool = False, context: Any = None) -> Played:
    """Run every run of the conversation to its end, deciding at every pause; see `Played`."""
    with database_file() as db:
        return _play(World(scenario, db), scenario, streamed, context)


def _play(world: World, scenario: Scenario, streamed: bool, context: Any) -> Played:
    config = RunConfig(session_settings=SessionSettings(**{scenario.window[0]: scenario.window[1]})
                       if scenario.window else None)
    kwargs = {"run_config": config}
    if scenario.max_turns is not None:
        kwargs["max_turns"] = scenario.max_turns
    played = {"next": 0, "decided": [], "items": []}
    outcomes, events, pauses = [], [], 0
    try:
        for number in range(len(scenario.runs)):
            run_events: list = []
            run_context = context if context is not None else {"user": "ann", "secret": SECRET}
            item_input: Any = f"request {number}"
            asked: set = set()
            while True:
                try:
                    result = start(world, item_input, run_context, streamed, run_events, kwargs)
                except MaxTurnsExceeded as error:
                    outcomes.append(error)
                    break
                if not result.interruptions:
                    outcomes.append(result)
                    break
                pauses += 1
                state = result.to_state()
                travel = scenario.travel[min(pauses - 1, len(scenario.travel) - 1)]
                if travel == "json_then_decide":
                    state = RunState.from_string(world.alpha, state.to_string())
                _decide(world, state, state.get_interruptions(), scenario.decisions, asked, played)
                if travel == "decide_then_json":
                    state = RunState.from_string(world.alpha, state.to_string())
                item_input = state
                if scenario.reopen_session and world.session is not None:
                    world.session.close()
                    world.session = world.new_session()
            events.append(run_events)
            if isinstance(outcomes[-1], Exception):
                break
        session_items = list(world.session.get_items()) if world.session is not None else None
    finally:
        world.release.set()
        if world.session is not None:
            world.session.close()
    return Played(requests=list(world.model.calls), tool_runs=list(world.tool_runs), bad_runs=world.bad_runs,
                  outcomes=outcomes, decided=played["decided"], approval_items=played["items"],
                  approved_before_run=world.approved_before_run, events=events, session_items=session_items,
                  paused=pauses)


def start(world: World, input: Any, context: Any, streamed: bool, events: list, kwargs: dict) -> Any:
    """One Runner call (a fresh run or a resume), streamed or not."""
    if isinstance(input, RunState):
        kwargs = {k: v for k, v in kwargs.items() if k != "max_turns"}  # the state carries it
        context = None
    if not streamed:
        return Runner.run_sync(world.alpha, input, context=context, session=world.session, **kwargs)
    result = Runner.run_streamed(world.alpha, input, context=context, session=world.session, **kwargs)
    _drain(result, events)
    return result


# ----------------------------------------------------------------------------- reading what was played


def transcript_view(items: list) -> list:
    """Raw items without ephemeral keys, for comparing two plays."""
    return [json.loads(json.dumps(i)) for i in items]


def run_items(outcome: Any) -> list:
    """The raw items a run produced (a MaxTurnsExceeded carries them in run_data)."""
    items = outcome.run_data.new_items if isinstance(outcome, Exception) else outcome.new_items
    return [i.raw_item for i in items if i.type != "tool_approval_item"]


def final_output(outcome: Any) -> Any:
    return ("error", type(outcome).__name__) if isinstance(outcome, Exception) else outcome.final_output
