"""Upstream's lifecycle hooks (the upstream shell's `RunHooks`, `AgentHooks`, a plugin of the run its `Runner`
starts) fire at the points of the loop, in order, for run hooks and agent hooks."""
import pytest

from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.upstream import Agent, AgentHooks, Handoff, RunHooks, Runner, function_tool, handoff


class Recorder(RunHooks):
    def __init__(self):
        self.events = []

    def on_agent_start(self, context, agent):
        self.events.append(("agent_start", agent.name))

    def on_agent_end(self, context, agent, output):
        self.events.append(("agent_end", agent.name, output))

    def on_llm_start(self, context, agent, system_prompt, input_items):
        self.events.append(("llm_start", agent.name, len(input_items)))

    def on_llm_end(self, context, agent, response):
        self.events.append(("llm_end", agent.name))

    async def on_tool_start(self, context, agent, tool):  # async hooks are awaited too
        self.events.append(("tool_start", tool.name))

    def on_tool_end(self, context, agent, tool, result):
        self.events.append(("tool_end", tool.name, result))

    def on_handoff(self, context, from_agent, to_agent):
        self.events.append(("handoff", from_agent.name, to_agent.name))


@function_tool
def double(x: int) -> int:
    """Double a number."""
    return 2 * x


def test_run_hooks_fire_in_loop_order():
    expert = Agent(name="Expert", model=ScriptedModel([[assistant_message("42")]]))
    model = ScriptedModel([[function_call("double", {"x": 21}, call_id="c1")],
                           [function_call("transfer_to_expert", "{}", call_id="h1")]])
    agent = Agent(name="Main", tools=[double], handoffs=[expert], model=model)
    hooks = Recorder()
    Runner.run_sync(agent, "go", hooks=hooks)
    assert hooks.events == [
        ("agent_start", "Main"), ("llm_start", "Main", 1), ("llm_end", "Main"),
        ("tool_start", "double"), ("tool_end", "double", 42),
        ("llm_start", "Main", 3), ("llm_end", "Main"), ("handoff", "Main", "Expert"),
        ("agent_start", "Expert"), ("llm_start", "Expert", 5), ("llm_end", "Expert"),
        ("agent_end", "Expert", "42"),
    ]


class StartAndEnd(AgentHooks):
    """An agent's hooks that note when it starts and what it ends with."""

    def __init__(self):
        self.seen = []

    def on_start(self, context, agent):
        self.seen.append(("start", agent.name))

    def on_end(self, context, agent, output):
        self.seen.append(("end", output))


def test_agent_hooks_see_their_own_agent_only():
    hooks = StartAndEnd()
    agent = Agent(name="Solo", hooks=hooks, model=ScriptedModel([[assistant_message("hi")]]))
    Runner.run_sync(agent, "hello")
    assert hooks.seen == [("start", "Solo"), ("end", "hi")]



@pytest.mark.parametrize("by_hand", [False, True], ids=["handoff", "hand-built-Handoff"])
def test_the_hooks_of_an_agent_met_during_the_run_fire(by_hand):
    """An agent only a hand-built `Handoff` reaches, with hooks of its own, in a run given no `RunHooks`: it is
    met when it is handed to, and its hooks fire as if the run had found it when it started."""
    hooks = StartAndEnd()
    b = Agent(name="B", hooks=hooks, model=ScriptedModel([[assistant_message("B done")]]))
    to_b = Handoff(tool_name="to_b", tool_description="Go to B.", input_json_schema={}, agent_name="B",
                   on_invoke_handoff=lambda ctx, arguments: b) if by_hand else handoff(b, tool_name_override="to_b")
    a = Agent(name="A", handoffs=[to_b], model=ScriptedModel([[function_call("to_b", "{}", call_id="h")]]))
    assert Runner.run_sync(a, "go").final_output == "B done" and hooks.seen == [("start", "B"), ("end", "B done")]


def test_the_hooks_of_the_agent_a_resumed_state_is_at_fire_whatever_starting_agent_is_given():
    """The state paused at B, which only a hand-built `Handoff` reaches; it is resumed with an agent that reaches
    neither B nor such a handoff: B's hooks are found from the agent the state is at."""
    @function_tool(needs_approval=True)
    def pay() -> str:
        return "paid"

    hooks = StartAndEnd()
    b = Agent(name="B", hooks=hooks, tools=[pay],
              model=ScriptedModel([[function_call("pay", {}, call_id="p")], [assistant_message("B done")]]))
    to_b = Handoff(tool_name="to_b", tool_description="Go to B.", input_json_schema={}, agent_name="B",
                   on_invoke_handoff=lambda ctx, arguments: b)
    a = Agent(name="A", handoffs=[to_b], model=ScriptedModel([[function_call("to_b", "{}", call_id="h")]]))
    state = Runner.run_sync(a, "go").to_state()
    state.approve(state.get_interruptions()[0])
    hooks.seen.clear()
    other = Agent(name="Other", model=ScriptedModel([]))
    assert Runner.run_sync(other, state).final_output == "B done" and hooks.seen == [("start", "B"), ("end", "B done")]


def test_agent_hooks_hear_every_event_the_run_hooks_hear_on_their_agent():
    seen = []

    class Mine(AgentHooks):
        def on_start(self, context, agent):
            seen.append("start")

        def on_llm_start(self, context, agent, system_prompt, input_items):
            seen.append("llm_start")

        def on_llm_end(self, context, agent, response):
            seen.append("llm_end")

        def on_tool_start(self, context, agent, tool):
            seen.append(f"tool_start {tool.name}")

        def on_tool_end(self, context, agent, tool, result):
            seen.append(f"tool_end {result}")

        def on_end(self, context, agent, output):
            seen.append(f"end {output}")

    @function_tool
    def double(n: int) -> int:
        return n * 2

    model = ScriptedModel([[function_call("double", {"n": 2}, call_id="c1")], [assistant_message("4")]])
    Runner.run_sync(Agent(name="Solo", hooks=Mine(), tools=[double], model=model), "double 2")
    assert seen == ["start", "llm_start", "llm_end", "tool_start double", "tool_end 4", "llm_start", "llm_end",
                    "end 4"]


def test_as_tool_hooks_observe_the_nested_run_and_its_agents_own_hooks_fire_without_them():
    helper_seen = []

    class Own(AgentHooks):
        def on_start(self, context, agent):
            helper_seen.append(("start", agent.name))

        def on_end(self, context, agent, output):
            helper_seen.append(("end", output))

    helper = Agent(name="Helper", hooks=Own(), model=ScriptedModel([[assistant_message("helped")]] * 2))
    for hooks in (Recorder(), None):
        tool = helper.as_tool("ask_helper", "Ask the helper.", hooks=hooks)
        main = Agent(name="Main", tools=[tool], model=ScriptedModel([
            [function_call("ask_helper", {"input": "hi"}, call_id="a1")], [assistant_message("done")]]))
        caller_hooks = Recorder()
        assert Runner.run_sync(main, "go", hooks=caller_hooks).final_output == "done"
        assert ("agent_start", "Helper") not in caller_hooks.events  # the caller's hooks see their own run only
        if hooks is not None:
            assert hooks.events == [("agent_start", "Helper"), ("llm_start", "Helper", 1), ("llm_end", "Helper"),
                                    ("agent_end", "Helper", "helped")]
    assert helper_seen == [("start", "Helper"), ("end", "helped")] * 2


def test_streamed_runs_call_the_hooks_too():
    import asyncio

    hooks = Recorder()
    agent = Agent(name="Solo", model=ScriptedModel([[assistant_message("hi")]]))

    async def read():
        result = Runner.run_streamed(agent, "hello", hooks=hooks)
        return [event async for event in result.stream_events()]

    assert asyncio.run(read())
    assert hooks.events == [("agent_start", "Solo"), ("llm_start", "Solo", 1), ("llm_end", "Solo"),
                            ("agent_end", "Solo", "hi")]


def test_agent_hooks_that_are_not_agent_hooks_are_refused_as_upstream_refuses_them():
    import pytest

    with pytest.raises(TypeError, match="Agent hooks must be an AgentHooks instance or None, got Recorder"):
        Agent(name="A", hooks=Recorder())


def test_a_kernel_agent_handed_to_from_a_shell_agent_has_no_hooks_of_its_own():
    from miniagents import Agent as KernelAgent

    hooks = Recorder()
    target = KernelAgent(name="Kernel", model=ScriptedModel([[function_call("transfer_to_shell", "{}",
                                                                             call_id="h2")]]))
    last = Agent(name="Shell", model=ScriptedModel([[assistant_message("back")]]))
    target = target.clone(handoffs=[last])
    first = Agent(name="First", handoffs=[target], model=ScriptedModel([[function_call("transfer_to_kernel", "{}",
                                                                                       call_id="h1")]]))
    assert Runner.run_sync(first, "go", hooks=hooks).final_output == "back"
    assert [e for e in hooks.events if e[0] == "handoff"] == [("handoff", "First", "Kernel"),
                                                              ("handoff", "Kernel", "Shell")]


def test_the_hooks_context_holds_what_the_model_is_sent_each_turn():
    seen = []

    class Turns(RunHooks):
        def on_llm_start(self, context, agent, system_prompt, input_items):
            seen.append((len(context.turn_input), context.turn_input == input_items))

    model = ScriptedModel([[function_call("double", {"x": 1}, call_id="c1")], [assistant_message("2")]])
    Runner.run_sync(Agent(name="Solo", tools=[double], model=model), "double 1", hooks=Turns())
    assert seen == [(1, True), (3, True)]  # the second turn: the input, the call, its output


def test_agent_hooks_on_handoff_is_called_on_the_source_agent_with_the_new_agent_and_the_source():
    calls = []

    class Record(AgentHooks):
        def __init__(self, owner):
            self.owner = owner

        def on_handoff(self, context, agent, source):
            calls.append((self.owner, agent.name, source.name))

    target = Agent(name="Target", model=ScriptedModel([[assistant_message("hi")]]))
    target = target.clone(hooks=Record("Target"))
    agent = Agent(name="Source", model=ScriptedModel([[function_call("transfer_to_target", "{}", call_id="h1")]]),
                  handoffs=[target], hooks=Record("Source"))  # the shell's Agent: hooks are upstream's
    Runner.run_sync(agent, "go")
    assert calls == [("Source", "Target", "Source")]


@pytest.mark.parametrize("kind", ["run", "agent"])
def test_an_async_hook_written_for_upstream_may_await_its_default_through_super(kind):
    """Upstream's hooks are coroutines, so an override may `await super().on_tool_start(...)`: the shell's defaults
    returned None, and that await was a bare TypeError out of the run."""
    seen = []

    class Run(RunHooks):
        async def on_tool_start(self, context, agent, tool):
            await super().on_tool_start(context, agent, tool)
            seen.append(tool.name)

    class Own(AgentHooks):
        async def on_tool_start(self, context, agent, tool):
            await super().on_tool_start(context, agent, tool)
            seen.append(tool.name)

    model = ScriptedModel([[function_call("double", {"x": 2}, call_id="c1")], [assistant_message("4")]])
    agent = Agent(name="A", model=model, tools=[double], hooks=Own() if kind == "agent" else None)
    result = Runner.run_sync(agent, "go", hooks=Run() if kind == "run" else None)
    assert result.final_output == "4" and seen == ["double"]
