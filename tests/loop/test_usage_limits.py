"""Usage limits (issue 22): `RunConfig(usage_limits=UsageLimits(...))` stops a runaway run before it passes a limit.

Requests are checked before each model call and tool calls before each turn's calls run, so neither limit is
ever passed; token limits are checked at the same points. Exceeding one raises `UsageLimitExceeded` naming the
limit and the count, with the partial run and a state that resumes with a higher limit; the "usage_limit"
error handler may answer instead. Nested runs of agents used as tools count toward their caller's limits.
"""
from __future__ import annotations

import asyncio

import pytest

from miniagents import (Agent, RunConfig, RunState, Runner, SQLiteSession, UsageLimitExceeded, UserError,
                        UsageLimits, function_tool)
from miniagents.context import Usage
from miniagents.items import ModelResponse
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call


def looping_agent(calls_per_turn=1, turns=50, answer="done", tokens=0):
    """An agent whose model calls `count` (calls_per_turn times) every turn, `turns` times, then answers."""
    ran = []

    @function_tool
    def count(n: int) -> str:
        ran.append(n)
        return f"counted {n}"

    steps = [ModelStep(output=[function_call("count", {"n": t * 10 + k}, call_id=f"t{t}c{k}")
                               for k in range(calls_per_turn)],
                       usage=Usage(requests=1, input_tokens=tokens, output_tokens=tokens, total_tokens=2 * tokens))
             for t in range(turns)]
    model = ScriptedModel(steps + [[assistant_message(answer)]])
    return Agent(name="Looper", tools=[count], model=model), model, ran


def limited(**limits):
    return RunConfig(usage_limits=UsageLimits(**limits))


def test_the_request_limit_stops_before_the_call_that_would_pass_it_and_the_state_resumes_with_a_higher_one():
    agent, model, ran = looping_agent(turns=3)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent, "go", run_config=limited(request_limit=2), max_turns=None)
    error = stopped.value
    assert (error.limit, error.value, error.count) == ("request_limit", 2, 3) and "request_limit=2" in str(error)
    assert len(model.calls) == 2 and ran == [0, 10]  # two model calls, their tools ran; the third never sent
    assert [i.type for i in error.run_data.new_items].count("tool_call_output_item") == 2
    result = Runner.run_sync(agent, error.state, run_config=limited(request_limit=10), max_turns=None)
    assert result.final_output == "done" and ran == [0, 10, 20] and len(model.calls) == 4


def test_the_tool_call_limit_stops_before_a_batch_that_would_pass_it_and_no_call_of_it_runs():
    agent, model, ran = looping_agent(calls_per_turn=3, turns=1)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent, "go", run_config=limited(tool_calls_limit=2))
    assert (stopped.value.limit, stopped.value.count) == ("tool_calls_limit", 3)
    assert ran == [] and len(model.calls) == 1  # the response came in; none of its three calls ran
    state = RunState.from_string(agent, stopped.value.state.to_string())  # resumable through JSON too
    result = Runner.run_sync(agent, state, run_config=limited(tool_calls_limit=3))
    assert result.final_output == "done" and ran == [0, 1, 2] and len(model.calls) == 2  # no model call repeated


@pytest.mark.parametrize("name", ["input_tokens_limit", "output_tokens_limit", "total_tokens_limit"])
def test_a_token_limit_is_passed_by_at_most_the_response_that_crossed_it_never_by_its_tools(name):
    agent, model, ran = looping_agent(turns=5, tokens=40)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent, "go", run_config=limited(**{name: 100}))
    per_response = 80 if name == "total_tokens_limit" else 40
    crossed = -(-101 // per_response)  # the response that took the count past 100
    assert stopped.value.limit == name and len(model.calls) == crossed
    assert ran == [10 * t for t in range(crossed - 1)]  # the crossing response's call never ran


@pytest.mark.with_shells  # upstream's error_handlers: the upstream shell's plugin
def test_the_usage_limit_error_handler_answers_instead_of_raising():
    from miniagents.upstream import RunErrorHandlerInput, Runner  # upstream's error_handlers
    agent, model, ran = looping_agent(turns=5)
    seen = []

    def handler(data: RunErrorHandlerInput):
        seen.append(data.error.limit)
        return "stopped early"

    result = Runner.run_sync(agent, "go", run_config=limited(request_limit=1),
                             error_handlers={"usage_limit": handler})
    assert result.final_output == "stopped early" and seen == ["request_limit"] and len(model.calls) == 1


def test_a_nested_agent_tools_calls_count_toward_its_callers_limits_and_its_run_resumes_where_it_stopped():
    inner, inner_model, ran = looping_agent(turns=4, answer="inner done")
    outer_model = ScriptedModel([[function_call("looper", {"input": "count"}, call_id="o1")],
                                 [assistant_message("outer done")]])
    outer = Agent(name="Boss", tools=[inner.as_tool("looper", "Counts.")], model=outer_model)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(outer, "go", run_config=limited(request_limit=3))
    assert stopped.value.limit == "request_limit"
    assert len(outer_model.calls) + len(inner_model.calls) == 3 and ran == [0, 10]
    result = Runner.run_sync(outer, stopped.value.state, run_config=limited(request_limit=20))
    assert result.final_output == "outer done"
    assert ran == [0, 10, 20, 30] and len(inner_model.calls) == 5  # the inner run went on; nothing ran twice


def test_a_limit_applies_after_a_resume_of_a_paused_approval(tmp_path):
    paid = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return "paid"

    model = ScriptedModel([[function_call("pay", {"amount": 1}, call_id="c1"), function_call("pay", {"amount": 2},
                                                                                            call_id="c2")],
                           [assistant_message("done")]])
    agent = Agent(name="Payer", tools=[pay], model=model)
    session = SQLiteSession("s", str(tmp_path / "db"))
    state = Runner.run_sync(agent, "pay", session=session).to_state()
    for item in state.get_interruptions():
        state.approve(item)
    with pytest.raises(UsageLimitExceeded) as stopped:  # one model call made already: none left
        Runner.run_sync(agent, state, session=session, run_config=limited(tool_calls_limit=1))
    assert paid == [] and stopped.value.limit == "tool_calls_limit"
    result = Runner.run_sync(agent, stopped.value.state, session=session, run_config=limited(tool_calls_limit=2))
    assert result.final_output == "done" and paid == [1, 2]


def test_a_streamed_run_stops_at_the_limit_too():
    agent, model, ran = looping_agent(turns=5)

    async def drain():
        result = Runner.run_streamed(agent, "go", run_config=limited(request_limit=2))
        async for _ in result.stream_events():
            pass

    with pytest.raises(UsageLimitExceeded):
        asyncio.run(drain())
    assert len(model.calls) == 2


def test_limits_are_whole_numbers_and_a_dict_is_accepted():
    with pytest.raises(UserError, match="request_limit"):
        UsageLimits(request_limit=-1)
    with pytest.raises(UserError, match="tool_calls_limit"):
        UsageLimits(tool_calls_limit=1.5)
    assert RunConfig(usage_limits={"request_limit": 3}).usage_limits == UsageLimits(request_limit=3)


def test_a_model_that_reports_no_requests_is_still_counted():
    """A model whose usage says 0 requests: the kernel counts each call as one, so the limit still holds."""
    class Silent:
        calls = 0

        def get_response(self, *args, **kwargs):
            self.calls += 1
            return ModelResponse(output=[function_call("again", {}, call_id=f"c{self.calls}")], usage=Usage())

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    @function_tool
    def again() -> str:
        return "ok"

    silent = Silent()
    with pytest.raises(UsageLimitExceeded):
        Runner.run_sync(Agent(name="Loop", tools=[again], model=silent), "go", max_turns=None,
                        run_config=limited(request_limit=3))
    assert silent.calls == 3


# --- Limits are never loosened: not by a model's numbers, not through nesting or concurrency (issue 30) ---------

from hypothesis import given, settings, strategies as st  # noqa: E402

from miniagents import handoff  # noqa: E402

NUMBERS = st.one_of(st.integers(-10**9, 10**9), st.sampled_from([-1, 0, 1, 2**63]))


@settings(max_examples=40, deadline=None)
@given(reported=st.lists(st.fixed_dictionaries({"requests": NUMBERS, "input_tokens": NUMBERS,
                                                "output_tokens": NUMBERS, "total_tokens": NUMBERS,
                                                "tool_calls": NUMBERS}), min_size=1, max_size=4),
       streamed=st.booleans())
def test_a_models_reported_usage_never_loosens_a_limit(reported, streamed):
    """Whatever counts a model reports (negative, absurd, from a stream's usage dict): one request per model call,
    tool calls as the kernel ran them, and token counts that never go down."""
    ran = []

    @function_tool
    def count(n: int) -> str:
        ran.append(n)
        return "ok"

    class Reporting:
        calls = 0

        def response(self):
            numbers = reported[self.calls % len(reported)]
            self.calls += 1
            return [function_call("count", {"n": self.calls}, call_id=f"c{self.calls}")], numbers

        def get_response(self, *args, **kwargs):
            output, numbers = self.response()
            return ModelResponse(output=output, usage=Usage(**numbers))

        def stream_response(self, *args, **kwargs):
            output, numbers = self.response()
            yield {"type": "response.completed", "response": {"output": output, "usage": numbers}}

    model = Reporting()
    agent = Agent(name="Counter", tools=[count], model=model)
    config = limited(request_limit=4, tool_calls_limit=3)
    with pytest.raises(UsageLimitExceeded) as stopped:
        if streamed:
            async def drain():
                async for _ in Runner.run_streamed(agent, "go", run_config=config, max_turns=None).stream_events():
                    pass
            asyncio.run(drain())
        else:
            Runner.run_sync(agent, "go", run_config=config, max_turns=None)
    usage = stopped.value.state.context_wrapper.usage
    assert model.calls <= 4 and len(ran) <= 3
    assert usage.requests == model.calls and usage.tool_calls == len(ran)
    assert min(usage.input_tokens, usage.output_tokens, usage.total_tokens) >= 0


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("reported", [{"input_tokens": 0, "output_tokens": 100, "total_tokens": 1},
                                      {"input_tokens": -1000, "output_tokens": 100}], ids=["total too small",
                                                                                         "negative input"])
def test_a_models_total_under_its_own_parts_never_loosens_the_total_token_limit(reported, streamed):
    """A total counted as the model gave it: 1 for 100 output tokens, or -900 (from -1000 in, a stream's usage with no
    total) added as 0, so total_tokens_limit never tripped however many tokens the run spent."""
    class Reporting:
        calls = 0

        def response(self):
            self.calls += 1
            return [function_call("count", {"n": self.calls}, call_id=f"c{self.calls}")]

        def get_response(self, *args, **kwargs):
            return ModelResponse(output=self.response(), usage=Usage(**reported))

        def stream_response(self, *args, **kwargs):
            yield {"type": "response.completed", "response": {"output": self.response(), "usage": reported}}

    @function_tool
    def count(n: int) -> str:
        return "ok"

    model = Reporting()
    agent = Agent(name="Counter", tools=[count], model=model)
    with pytest.raises(UsageLimitExceeded) as stopped:
        if streamed:
            async def drain():
                async for _ in Runner.run_streamed(agent, "go", run_config=limited(total_tokens_limit=150),
                                                   max_turns=5).stream_events():
                    pass
            asyncio.run(drain())
        else:
            Runner.run_sync(agent, "go", run_config=limited(total_tokens_limit=150), max_turns=5)
    assert stopped.value.limit == "total_tokens_limit" and model.calls == 2
    assert stopped.value.state.context_wrapper.usage.total_tokens == 200


def test_a_handoff_is_held_back_at_a_crossed_token_limit_as_a_function_call_is():
    handed, ran = [], []

    @function_tool
    def count(n: int) -> str:
        ran.append(n)
        return "ok"

    for with_tool in (False, True):
        billing = Agent(name="Billing", model=ScriptedModel([[assistant_message("billing here")]]))
        calls = [function_call("transfer_to_billing", {}, call_id="h1")]
        calls += [function_call("count", {"n": 1}, call_id="c1")] if with_tool else []
        model = ScriptedModel([ModelStep(output=calls, usage=Usage(requests=1, total_tokens=200))])
        agent = Agent(name="Triage", tools=[count], model=model,
                      handoffs=[handoff(billing, on_handoff=lambda ctx: handed.append(1))])
        with pytest.raises(UsageLimitExceeded) as stopped:
            Runner.run_sync(agent, "go", run_config=limited(total_tokens_limit=50))
        assert handed == [] and ran == [] and stopped.value.state.current_agent is agent
        result = Runner.run_sync(agent, stopped.value.state, run_config=limited(total_tokens_limit=500))
        assert result.final_output == "billing here" and handed == [1] and ran == ([1] if with_tool else [])
        handed.clear(), ran.clear()


def nest(tools_per_turn, inner_calls, concurrent):
    """An outer agent whose one turn calls `tools_per_turn` agent tools (at once or one by one), each running an
    inner agent that makes `inner_calls` tool calls in one turn, then answers."""
    ran, models = [], []

    @function_tool
    def count(n: int) -> str:
        ran.append(n)
        return "ok"

    tools = []
    for t in range(tools_per_turn):
        model = ScriptedModel([[function_call("count", {"n": 10 * t + k}, call_id=f"i{t}{k}")
                                for k in range(inner_calls)], [assistant_message(f"inner {t}")]])
        models.append(model)
        tools.append(Agent(name=f"Inner{t}", tools=[count], model=model).as_tool(f"inner{t}", "Counts."))
    outer_model = ScriptedModel([[function_call(f"inner{t}", {"input": "go"}, call_id=f"o{t}")
                                  for t in range(tools_per_turn)], [assistant_message("outer done")]])
    models.append(outer_model)
    outer = Agent(name="Outer", tools=tools, model=outer_model)
    config = RunConfig(max_function_tool_concurrency=None if concurrent else 1)
    return outer, config, ran, models


@settings(max_examples=30, deadline=None)
@given(tools_per_turn=st.integers(1, 3), inner_calls=st.integers(1, 3), concurrent=st.booleans(),
       request_limit=st.one_of(st.none(), st.integers(1, 6)), tool_calls_limit=st.one_of(st.none(), st.integers(1, 6)))
def test_no_limit_is_passed_through_agents_used_as_tools_one_by_one_or_at_once(tools_per_turn, inner_calls,
                                                                                concurrent, request_limit,
                                                                                tool_calls_limit):
    """Each model call and each tool call (an agent tool's own call included) is counted before it starts, so
    nested runs, concurrent or not, never see room their siblings or their caller already took."""
    outer, config, ran, models = nest(tools_per_turn, inner_calls, concurrent)
    limits = UsageLimits(request_limit=request_limit, tool_calls_limit=tool_calls_limit)
    try:
        result = Runner.run_sync(outer, "go", run_config=RunConfig(
            usage_limits=limits, max_function_tool_concurrency=config.max_function_tool_concurrency))
        usage = result.context_wrapper.usage
    except UsageLimitExceeded as stopped:
        usage = stopped.state.context_wrapper.usage
    requests = sum(len(m.calls) for m in models)
    tool_calls = len(ran) + sum(1 for m in models[:-1] if m.calls)  # the inner tools' calls, and each agent tool's
    assert request_limit is None or requests <= request_limit, (requests, request_limit)
    assert tool_calls_limit is None or tool_calls <= tool_calls_limit, (tool_calls, tool_calls_limit)
    assert usage.requests == requests and usage.tool_calls >= tool_calls


# --- Every state a limit stop returns resumes once (issue 30) ------------------------------------------------

from miniagents.errors import AlreadyResumedError  # noqa: E402
from miniagents.models.interface import Model  # noqa: E402


class Counting(Model):
    """A model that calls `count` once a turn until `turns` outputs are in its input, then answers: any resume of
    any state gets the answer an uninterrupted run gets at that point."""

    def __init__(self, turns):
        self.turns, self.calls = turns, 0

    def get_response(self, instructions, input, *args, **kwargs):
        self.calls += 1
        done = sum(1 for i in input if i.get("type") == "function_call_output")
        if done >= self.turns:
            return ModelResponse(output=[assistant_message("done")], usage=Usage(requests=1))
        return ModelResponse(output=[function_call("count", {"n": done}, call_id=f"c{done}")], usage=Usage(requests=1))


@settings(max_examples=25, deadline=None)
@given(request_limit=st.integers(1, 3), resumes=st.integers(2, 3), at_once=st.booleans(),
       tool_calls_limit=st.one_of(st.none(), st.integers(1, 3)), added=st.booleans())
def test_a_state_a_limit_stopped_resumes_once_with_a_session_that_keeps_the_ledger(tmp_path_factory, request_limit,
                                                                                    resumes, at_once,
                                                                                    tool_calls_limit, added):
    """A stop between turns (request_limit) or inside one (tool_calls_limit), resumed by several workers (one after
    another, or at once), with input added to the state or not: one proceeds, the others raise
    `AlreadyResumedError` before any model call, tool or write; the tool runs once per turn and the session holds
    each turn, and the added input, once (a refused worker admits that input before its turn's claim refuses it)."""
    import threading

    ran, session = [], SQLiteSession("s", str(tmp_path_factory.mktemp("db") / "db"))

    @function_tool
    def count(n: int) -> str:
        ran.append(n)
        return f"counted {n}"

    def agent():
        return Agent(name="Looper", tools=[count], model=Counting(3))

    first = limited(request_limit=request_limit, tool_calls_limit=tool_calls_limit)
    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent(), "go", session=session, run_config=first, max_turns=None)
    state = stopped.value.state
    if added:
        state.add_input("and then stop")
    text, outcomes = state.to_string(), []

    def worker():
        try:
            result = Runner.run_sync(agent(), RunState.from_string(agent(), text), session=session, max_turns=None)
            outcomes.append(result.final_output)
        except AlreadyResumedError:
            outcomes.append("refused")

    if at_once:
        threads = [threading.Thread(target=worker) for _ in range(resumes)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    else:
        for _ in range(resumes):
            worker()
    assert sorted(outcomes) == ["done"] + ["refused"] * (resumes - 1)
    assert sorted(ran) == [0, 1, 2]
    items = session.get_items()
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == ["c0", "c1", "c2"]
    assert sum(1 for i in items if i.get("content") == "and then stop") == added


def test_a_second_resume_of_a_limit_stop_while_the_first_runs_is_refused_before_its_model_call(tmp_path):
    """The first resume claimed turn 2, journaled the state it starts from and waits in its model call. A second
    resume of the same state reads that entry, which is not its own: the claim with no outcome refuses it before it
    calls the model (it never takes over the turn of a resume that runs), and the first finishes alone."""
    import threading

    entered, release, session = threading.Event(), threading.Event(), SQLiteSession("s", str(tmp_path / "db"))

    class Waits(Counting):
        def get_response(self, *args, **kwargs):
            if not self.calls:  # its first call waits
                entered.set()
                assert release.wait(30)
            return super().get_response(*args, **kwargs)

    @function_tool
    def count(n: int) -> str:
        return f"counted {n}"

    def agent(model):
        return Agent(name="Looper", tools=[count], model=model)

    with pytest.raises(UsageLimitExceeded) as stopped:
        Runner.run_sync(agent(Counting(1)), "go", session=session, run_config=limited(request_limit=1))
    text, seen, waiting = stopped.value.state.to_string(), [], agent(Waits(1))
    first = threading.Thread(target=lambda: seen.append(
        Runner.run_sync(waiting, RunState.from_string(waiting, text), session=session)))
    first.start()
    assert entered.wait(30)
    second = agent(Counting(1))
    try:
        with pytest.raises(AlreadyResumedError) as refused:
            Runner.run_sync(second, RunState.from_string(second, text), session=session)
    finally:
        release.set()
        first.join(30)
    assert refused.value.outcome is None and second.model.calls == 0 and seen[0].final_output == "done"
    assert [i.get("call_id") for i in session.get_items() if i.get("type") == "function_call_output"] == ["c0"]
    assert not session.read_journal()


# --- What an attack found: a paused agent-tool call counted twice, an agent tool's own limits escaping the caller's -


def approval_inside_an_agent_tool(ran):
    @function_tool(needs_approval=True)
    def danger(n: int) -> str:
        ran.append(n)
        return "done"

    inner = Agent(name="I", tools=[danger], model=ScriptedModel(
        [[function_call("danger", {"n": 1}, call_id="d1")], [assistant_message("inner done")]]))
    return Agent(name="O", tools=[inner.as_tool("sub", "s")], model=ScriptedModel(
        [[function_call("sub", {"input": "x"}, call_id="o1")], [assistant_message("outer done")]]))


@pytest.mark.parametrize("limits", [None, UsageLimits(tool_calls_limit=2)])
@pytest.mark.parametrize("through_json", [False, True])
def test_an_agent_tool_call_whose_inner_run_paused_is_counted_once_when_it_goes_on(limits, through_json):
    ran = []
    outer = approval_inside_an_agent_tool(ran)
    config = RunConfig(usage_limits=limits)
    first = Runner.run_sync(outer, "go", run_config=config)
    assert first.context_wrapper.usage.tool_calls == 1  # "sub" began; "danger" waits for a person
    state = first.to_state()
    if through_json:
        state = RunState.from_string(outer, state.to_string())
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(outer, state, run_config=config)
    assert (result.final_output, ran, result.context_wrapper.usage.tool_calls) == ("outer done", [1], 2)


@pytest.mark.parametrize("own, callers, stop, inner_calls", [
    (UsageLimits(request_limit=50), UsageLimits(request_limit=2), ("request_limit", 2), 1),  # the caller's holds
    # and its own, counted from where the inner run started (the call itself was counted then): one more call
    (UsageLimits(tool_calls_limit=1), UsageLimits(request_limit=20), ("tool_calls_limit", 2), 2),
])
def test_an_agent_tools_own_limits_keep_within_the_callers(own, callers, stop, inner_calls):
    @function_tool
    def work(n: int) -> str:
        return "ok"

    inner_model = ScriptedModel([[function_call("work", {"n": n}, call_id=f"w{n}")] for n in range(6)]
                                + [[assistant_message("inner done")]])
    tool = Agent(name="I", tools=[work], model=inner_model).as_tool("sub", "s", run_config=RunConfig(usage_limits=own))
    outer = Agent(name="O", tools=[tool], model=ScriptedModel(
        [[function_call("sub", {"input": "x"}, call_id="o1")], [assistant_message("outer done")]]))
    with pytest.raises(UsageLimitExceeded) as info:
        Runner.run_sync(outer, "go", run_config=RunConfig(usage_limits=callers))
    assert (info.value.limit, info.value.value) == stop and len(inner_model.calls) == inner_calls


def test_an_agent_tools_own_limits_bound_what_its_inner_run_spends_not_what_its_caller_spent_before():
    @function_tool
    def work(n: int) -> str:
        return "ok"

    inner_model = ScriptedModel([[function_call("work", {"n": n}, call_id=f"w{n}")] for n in range(3)]
                                + [[assistant_message("inner done")]])
    own = RunConfig(usage_limits=UsageLimits(request_limit=2))
    tool = Agent(name="I", tools=[work], model=inner_model).as_tool("sub", "s", run_config=own)
    outer_model = ScriptedModel([[function_call("work", {"n": n}, call_id=f"o{n}")] for n in range(3)]
                                + [[function_call("sub", {"input": "x"}, call_id="s1")], [assistant_message("done")]])
    outer = Agent(name="O", tools=[work, tool], model=outer_model)
    with pytest.raises(UsageLimitExceeded) as info:  # the caller spent 4 requests before; its tool may spend 2 more
        Runner.run_sync(outer, "go")
    assert (info.value.limit, info.value.value, len(inner_model.calls)) == ("request_limit", 6, 2)
    # the caller's state resumes: the inner run goes on with its own limit counted from there
    result = Runner.run_sync(outer, RunState.from_string(outer, info.value.state.to_string()))
    assert result.final_output == "done" and len(inner_model.calls) == 4 and len(outer_model.calls) == 5


def test_an_agent_tools_max_turns_is_a_whole_number_refused_when_the_tool_is_made_and_zero_allows_none():
    inner_model = ScriptedModel([[assistant_message("inner done")]])
    for refused in (2.5, -1):
        with pytest.raises(UserError, match=f"as_tool max_turns must be a whole number >= 0 or None, got {refused}"):
            Agent(name="I", model=inner_model).as_tool("sub", "s", max_turns=refused)
    tool = Agent(name="I", model=inner_model).as_tool("sub", "s", max_turns=0)
    outer = Agent(name="O", tools=[tool], model=ScriptedModel(
        [[function_call("sub", {"input": "x"}, call_id="s1")], [assistant_message("done")]]))
    assert Runner.run_sync(outer, "go").final_output == "done" and len(inner_model.calls) == 0


def test_usage_limits_within_others_take_the_smaller_of_each():
    mine, theirs = UsageLimits(request_limit=5, tool_calls_limit=None, total_tokens_limit=9), \
        UsageLimits(request_limit=7, tool_calls_limit=3)
    assert mine.within(theirs) == UsageLimits(request_limit=5, tool_calls_limit=3, total_tokens_limit=9)
    assert theirs.within(mine) == mine.within(theirs) and UsageLimits().within(UsageLimits()) == UsageLimits()


def test_a_limit_reached_inside_an_inner_run_that_went_on_keeps_the_count_true_and_resumes():
    ran = []
    outer = approval_inside_an_agent_tool(ran)
    first = Runner.run_sync(outer, "go")
    state = first.to_state()
    state.approve(state.get_interruptions()[0])
    tight = RunConfig(usage_limits=UsageLimits(tool_calls_limit=1))  # "sub" took it: "danger" may not run
    with pytest.raises(UsageLimitExceeded) as info:
        Runner.run_sync(outer, state, run_config=tight)
    assert ran == [] and info.value.state.context_wrapper.usage.tool_calls == 1
    roomy = RunConfig(usage_limits=UsageLimits(tool_calls_limit=2))
    result = Runner.run_sync(outer, info.value.state, run_config=roomy)
    assert (result.final_output, ran, result.context_wrapper.usage.tool_calls) == ("outer done", [1], 2)


def test_a_batch_a_limit_holds_back_with_an_inner_run_going_on_keeps_the_count_true_and_resumes():
    ran = []

    @function_tool(needs_approval=True)
    def act(n: int) -> str:
        ran.append(f"act {n}")
        return "acted"

    outer = approval_inside_an_agent_tool(ran)
    outer = outer.clone(tools=outer.tools + [act], model=ScriptedModel(
        [[function_call("sub", {"input": "x"}, call_id="o1"), function_call("act", {"n": 2}, call_id="o2")],
         [assistant_message("outer done")]]))
    state = Runner.run_sync(outer, "go").to_state()
    assert state.context_wrapper.usage.tool_calls == 1  # "sub" began; "danger" and "act" wait for a person
    for item in state.get_interruptions():
        state.approve(item)
    with pytest.raises(UsageLimitExceeded) as info:  # "act" would be the second: the whole batch waits
        Runner.run_sync(outer, state, run_config=RunConfig(usage_limits=UsageLimits(tool_calls_limit=1)))
    assert ran == [] and info.value.state.context_wrapper.usage.tool_calls == 1
    roomy = RunConfig(usage_limits=UsageLimits(tool_calls_limit=3))
    result = Runner.run_sync(outer, info.value.state, run_config=roomy)
    assert (result.final_output, sorted(map(str, ran)), result.context_wrapper.usage.tool_calls) == \
        ("outer done", ["1", "act 2"], 3)


def test_an_agent_tool_removed_while_its_inner_run_waited_is_answered_and_its_call_stays_counted():
    ran = []

    @function_tool
    def other() -> str:
        ran.append("other")
        return "x"

    outer = approval_inside_an_agent_tool(ran)
    outer = outer.clone(tools=outer.tools + [other], model=ScriptedModel(
        [[function_call("sub", {"input": "x"}, call_id="o1")], [function_call("other", {}, call_id="o2")],
         [assistant_message("done")]]))
    one = RunConfig(usage_limits=UsageLimits(tool_calls_limit=1))
    state = Runner.run_sync(outer, "go", run_config=one).to_state()
    assert state.context_wrapper.usage.tool_calls == 1  # "sub" began
    outer.tools.remove(outer.tools[0])  # the agent tool is gone when the run resumes
    with pytest.raises(UsageLimitExceeded):  # "sub" still counts: "other" would be the second call
        Runner.run_sync(outer, state, run_config=one)
    assert ran == []
