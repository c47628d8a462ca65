"""RunHooks see the run's lifecycle in order."""
from agents import Agent, RunContextWrapper, RunHooks, Runner, Tool, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

events = []


class Recorder(RunHooks):
    async def on_agent_start(self, context: RunContextWrapper, agent: Agent) -> None:
        events.append(f"agent_start:{agent.name}")

    async def on_llm_start(self, context, agent, system_prompt, input_items) -> None:
        events.append("llm_start")

    async def on_llm_end(self, context, agent, response) -> None:
        events.append("llm_end")

    async def on_tool_start(self, context: RunContextWrapper, agent: Agent, tool: Tool) -> None:
        events.append(f"tool_start:{tool.name}")

    async def on_tool_end(self, context: RunContextWrapper, agent: Agent, tool: Tool, result: str) -> None:
        events.append(f"tool_end:{result}")

    async def on_agent_end(self, context: RunContextWrapper, agent: Agent, output) -> None:
        events.append(f"agent_end:{output}")


@function_tool
def ping() -> str:
    """Ping."""
    return "pong"


model = ScriptedModel([[function_call("ping", {}, call_id="c1")], [assistant_message("done")]])
Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go", hooks=Recorder())
assert events == ["agent_start:A", "llm_start", "llm_end", "tool_start:ping", "tool_end:pong", "llm_start",
                  "llm_end", "agent_end:done"], events
print("ok")
