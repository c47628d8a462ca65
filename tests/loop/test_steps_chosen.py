"""The steps a run takes are chosen once, by data (`choose` in run.py): an optional step joins a run's turns exactly
when one of the parts it needs is set (not None, False or empty) on any of its parts (the run, its config, its state,
any agent, any agent's tool). The answer is cached per set of parts used, so runs chosen one after another in any
order must each get their own answer, never a neighbour's, and no run can change what another is given."""
from types import SimpleNamespace

import pytest
from hypothesis import given, strategies as st

from miniagents import (Agent, GuardrailFunctionOutput, Handoff, OutputGuardrailTripwireTriggered, Runner,
                        ToolGuardrailFunctionOutput, UserError, function_tool, output_guardrail, run as kernel, steps,
                        tool_input_guardrail)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.turn import Run, call_model

TABLES = {"start": kernel.START, "before": kernel.BEFORE, "entered": kernel.ENTERED, "after": kernel.AFTER}
NEEDS = sorted(need for need, _, _ in kernel.NEEDS)
SET = st.sampled_from([True, 1, 0, "x", [None], (0,), {"k": 1}, object()])  # 0 and "x" are set: only four are not
UNSET = st.sampled_from([None, False, [], (), "missing"])


@st.composite
def a_run(draw):
    """A run whose parts set exactly the needs drawn (for agents and tools: on one of several), and its uses."""
    uses = draw(st.sets(st.sampled_from(NEEDS)))
    owners = {"agents": [SimpleNamespace(tools=[]) for _ in range(draw(st.integers(1, 3)))]}
    owners["tools"] = [SimpleNamespace() for _ in range(draw(st.integers(1, 3)))]
    for n, tool in enumerate(owners["tools"]):
        owners["agents"][n % len(owners["agents"])].tools.append(tool)
    run = Run(SimpleNamespace(), SimpleNamespace(), agents=owners["agents"])
    owners.update(run=[run], config=[run.config], state=[run.state])
    for need in NEEDS:
        where, name = need.split(".")
        chosen = draw(st.sampled_from(owners[where])) if need in uses else None
        for part in owners[where]:
            value = draw(SET) if part is chosen else draw(UNSET)
            if value != "missing":
                setattr(part, name, value)
    return run, uses


def expected(table: tuple, uses: set) -> tuple:
    return tuple(step.do for step in table if not step.needs or uses & set(step.needs.split()))


def in_turn(turn_steps: tuple, uses: set) -> tuple:
    """A turn's steps; with plugins, those inside the one step that holds them in the `turn` seam."""
    if "run.plugins" not in uses:
        return turn_steps
    (observed,) = turn_steps
    assert observed.__qualname__.split(".")[0] == steps.observed_turn.__name__
    return observed.__closure__[observed.__code__.co_freevars.index("turn_steps")].cell_contents


def check(run: Run, uses: set) -> None:
    for name, table in TABLES.items():
        assert getattr(run, name) == expected(table, uses), name
    model = steps.observed_model if "run.plugins" in uses else steps.stream_model if "run.streamed" in uses \
        else call_model
    fresh = tuple(model if do is call_model else do for do in expected(kernel.FRESH, uses))
    assert in_turn(run.fresh, uses) == fresh + expected(kernel.SETTLE, uses)
    assert in_turn(run.resumed, uses) == expected(kernel.RESUMED, uses) + expected(kernel.SETTLE, uses)
    assert {kind: run.ends[kind] for kind in kernel.ENDS} == {kind: expected(table, uses)
                                                             for kind, table in kernel.ENDS.items()}
    invoke = run.invoke  # the tool alone, wrapped innermost first in what the run needs
    for wrap in reversed(expected(kernel.INVOKE, uses)):
        assert invoke.__qualname__.split(".")[0] == wrap.__name__
        invoke = invoke.__closure__[invoke.__code__.co_freevars.index("invoke")].cell_contents
    assert invoke is kernel.invoke

@given(st.lists(a_run(), min_size=1, max_size=6))
def test_each_run_takes_exactly_the_steps_its_parts_ask_for_in_any_order_of_runs(runs):
    for run, uses in runs:
        kernel.choose(run)
    for run, uses in runs:  # chosen one after another, read afterwards: no run was given a neighbour's answer
        check(run, uses)
        for steps_ in (run.start, run.before, run.fresh, run.resumed, run.entered, run.after, *run.ends.values()):
            assert isinstance(steps_, tuple)  # shared between runs that use the same parts: no run can change them


def test_a_plain_run_takes_no_optional_step():
    run = Run(SimpleNamespace(), SimpleNamespace(), agents=[SimpleNamespace(tools=[SimpleNamespace()])])
    kernel.choose(run)
    optional = {step.do for table in (*TABLES.values(), kernel.FRESH, kernel.RESUMED, kernel.SETTLE,
                                      *kernel.ENDS.values()) for step in table if step.needs}
    taken = set(run.start + run.before + run.fresh + run.resumed + run.entered + run.after) | {
        do for ends in run.ends.values() for do in ends}
    assert not taken & optional and run.invoke is kernel.invoke and run.fresh[0] is kernel.offer


# --- an agent the run meets only when a hand-built handoff is called ----------------------------------------------


@output_guardrail
def block(ctx, agent, output):
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)


@tool_input_guardrail
def keep_it_secret(data):
    return ToolGuardrailFunctionOutput.reject_content("Not for you.")


def guarded_secret(**options):
    """A tool whose input guardrail refuses every call."""
    @function_tool(tool_input_guardrails=[keep_it_secret], **options)
    def secret() -> str:
        """The secret."""
        return "SECRET"
    return secret


def hidden_agent(**options):
    """Agent A hands off through a hand-built `Handoff`, which names its agent, B, only when it is called: B is not
    among the agents the run reaches when it starts, so what B needs is chosen when the run meets it."""
    b = Agent(name="B", output_guardrails=[block], tools=[guarded_secret(**options)],
              model=ScriptedModel([[function_call("secret", {}, call_id="s1")], [assistant_message("B's answer")]]))
    to_b = Handoff(tool_name="to_b", tool_description="Go to B.", input_json_schema={}, agent_name="B",
                   on_invoke_handoff=lambda ctx, args: b)
    return Agent(name="A", handoffs=[to_b], model=ScriptedModel([[function_call("to_b", "{}", call_id="c1")]]))


def test_an_agent_met_through_a_hand_built_handoff_keeps_its_tool_and_output_guardrails():
    with pytest.raises(OutputGuardrailTripwireTriggered) as trip:
        Runner.run_sync(hidden_agent(), "go")
    outputs = [i.raw_item["output"] for i in trip.value.run_data.new_items if i.type == "tool_call_output_item"]
    assert outputs == ["Not for you."]  # B's tool guardrail ran too: the secret never left the tool


def test_a_paused_state_of_an_agent_met_late_resumes_with_its_guardrails():
    """The state is handed back in process, its current agent B still unknown to the starting agent's graph."""
    agent = hidden_agent(needs_approval=True)
    paused = Runner.run_sync(agent, "go")
    assert paused.interruptions and paused.last_agent.name == "B"
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    with pytest.raises(OutputGuardrailTripwireTriggered) as trip:
        Runner.run_sync(agent, state)
    outputs = [i.raw_item["output"] for i in trip.value.run_data.new_items if i.type == "tool_call_output_item"]
    assert outputs == ["Not for you."]


@pytest.mark.parametrize("change", ["append", "replace"])
def test_a_tool_that_joins_an_agents_list_during_the_run_keeps_its_guardrails(change):
    """A tool may add another to its agent's list (a skill loaded mid-run): the next turn offers it, and the steps
    are chosen again for it, so its input guardrail runs."""
    guarded = guarded_secret()

    @function_tool
    def load_skill() -> str:
        """Load a skill."""
        if change == "append":
            agent.tools.append(guarded)
        else:
            agent.tools[0] = guarded
        return "loaded"

    agent = Agent(name="A", tools=[load_skill], model=ScriptedModel([
        [function_call("load_skill", {}, call_id="c1")], [function_call("secret", {}, call_id="c2")],
        [assistant_message("done")]]))
    result = Runner.run_sync(agent, "go")
    assert [i.raw_item["output"] for i in result.new_items if i.type == "tool_call_output_item"] == \
        ["loaded", "Not for you."]

def test_a_hand_built_handoff_that_gives_no_agent_is_a_user_error():
    to_nowhere = Handoff(tool_name="to_b", tool_description="Go.", input_json_schema={}, agent_name="B",
                         on_invoke_handoff=lambda ctx, args: "B")
    agent = Agent(name="A", handoffs=[to_nowhere], model=ScriptedModel([[function_call("to_b", "{}", call_id="c")]]))
    with pytest.raises(UserError, match="on_invoke_handoff must return an Agent, got str"):
        Runner.run_sync(agent, "go")


def test_an_agent_met_late_is_held_to_the_rules_checked_when_a_run_starts():
    """Output guardrails cannot work when the server keeps the conversation: refused for an agent met late too."""
    with pytest.raises(UserError, match="Output guardrails cannot be combined with conversation_id"):
        Runner.run_sync(hidden_agent(), "go", previous_response_id="resp_1")


@given(chain=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=4), guarded_end=st.booleans(),
       streamed=st.booleans())
def test_guardrails_hold_along_any_chain_of_handoffs_built_by_hand_or_not(chain, guarded_end, streamed):
    """A chain of agents, each reached by a hand-built handoff or by `handoff(agent)` (drawn), each perhaps calling a
    guarded tool first: every guarded call is refused and the last agent's output guardrail trips, however late the
    run meets the agent, streamed or not."""
    import asyncio

    from miniagents import handoff

    secret = guarded_secret()
    following = None  # built from the end of the chain back to its start
    for n, (by_hand, calls_secret) in reversed(list(enumerate(chain))):
        steps = [[function_call("secret", {}, call_id=f"s{n}")]] if calls_secret else []
        steps.append([function_call(f"to_{n + 1}", "{}", call_id=f"h{n}")] if following else [assistant_message("end")])
        options = {} if following else {"output_guardrails": [block] if guarded_end else []}
        onward = [] if following is None else [handoff(following, tool_name_override=f"to_{n + 1}")] if not by_hand \
            else [Handoff(tool_name=f"to_{n + 1}", tool_description="Next.", input_json_schema={},
                          agent_name=following.name, on_invoke_handoff=lambda ctx, args, a=following: a)]
        following = Agent(name=f"A{n}", tools=[secret], handoffs=onward, model=ScriptedModel(steps), **options)

    def run():
        if not streamed:
            return Runner.run_sync(following, "go")

        async def consume():
            result = Runner.run_streamed(following, "go")
            async for _ in result.stream_events():
                pass
            return result
        return asyncio.run(consume())

    expected = ["Not for you."] * sum(calls for _, calls in chain)
    if guarded_end:
        with pytest.raises(OutputGuardrailTripwireTriggered) as trip:
            run()
        items = trip.value.run_data.new_items
    else:
        result = run()
        assert result.final_output == "end"
        items = result.new_items
    assert [i.raw_item["output"] for i in items if i.type == "tool_call_output_item"] == expected
