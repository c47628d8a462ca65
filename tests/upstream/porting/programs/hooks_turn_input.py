"""The context's turn_input holds the turn's input when an agent starts."""
from agents import Agent, RunHooks, Runner
from agents.testing import ScriptedModel, assistant_message

seen = []


class Hooks(RunHooks):
    async def on_agent_start(self, context, agent) -> None:
        seen.append(list(context.turn_input))


Runner.run_sync(Agent(name="A", model=ScriptedModel([[assistant_message("hi")]])), "hello", hooks=Hooks())
assert seen and seen[0] and seen[0][-1]["content"] == "hello", seen
print("ok")
