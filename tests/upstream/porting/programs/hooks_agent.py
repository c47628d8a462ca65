"""AgentHooks on each agent: start, end, and on_handoff (upstream calls it on the handing-off agent's hooks,
with agent=the new agent and source=the handing-off agent)."""
from agents import Agent, AgentHooks, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

events = []


class Hooks(AgentHooks):
    def __init__(self, label: str) -> None:
        self.label = label

    async def on_start(self, context, agent) -> None:
        events.append(f"{self.label}:start")

    async def on_end(self, context, agent, output) -> None:
        events.append(f"{self.label}:end:{output}")

    async def on_handoff(self, context, agent, source) -> None:
        events.append(f"{self.label}:handoff:{source.name}->{agent.name}")


second = Agent(name="Second", hooks=Hooks("second"), model=ScriptedModel([[assistant_message("bye")]]))
first = Agent(name="First", hooks=Hooks("first"), handoffs=[second],
              model=ScriptedModel([[function_call("transfer_to_second", {}, call_id="h1")]]))
Runner.run_sync(first, "hi")
assert events == ["first:start", "first:handoff:First->Second", "second:start", "second:end:bye"], events
print("ok")
