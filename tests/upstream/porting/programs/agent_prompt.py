"""Agent(prompt=...): a stored prompt, or a function making one per turn, reaches the model call."""
from agents import Agent, GenerateDynamicPromptData, Runner
from agents.testing import ScriptedModel, assistant_message

model = ScriptedModel([[assistant_message("a")], [assistant_message("b")]])
agent = Agent(name="Prompted", model=model, prompt={"id": "pmpt_123", "version": "2"})
Runner.run_sync(agent, "hi")
assert model.last_call.prompt["id"] == "pmpt_123" and model.last_call.prompt["version"] == "2"


def dynamic(data: GenerateDynamicPromptData):
    return {"id": "pmpt_456", "variables": {"name": data.context.context["name"], "agent": data.agent.name}}


Runner.run_sync(agent.clone(prompt=dynamic), "hi", context={"name": "Ann"})
assert model.last_call.prompt["id"] == "pmpt_456"
assert model.last_call.prompt["variables"] == {"name": "Ann", "agent": "Prompted"}
print("ok")
