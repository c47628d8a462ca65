"""Lifecycle hooks fire at the points of the loop, in order, for run hooks and agent hooks."""
from miniagents import Agent, AgentHooks, RunHooks, Runner, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call


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


def test_agent_hooks_see_their_own_agent_only():
    seen = []

    class Mine(AgentHooks):
        def on_start(self, context, agent):
            seen.append(("start", agent.name))

        def on_end(self, context, agent, output):
            seen.append(("end", output))

    agent = Agent(name="Solo", hooks=Mine(), model=ScriptedModel([[assistant_message("hi")]]))
    Runner.run_sync(agent, "hello")
    assert seen == [("start", "Solo"), ("end", "hi")]

