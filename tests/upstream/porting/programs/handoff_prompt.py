"""The recommended handoff prompt prefix reaches the model as the system prompt."""
from agents import Agent, Runner
from agents.extensions.handoff_prompt import RECOMMENDED_PROMPT_PREFIX, prompt_with_handoff_instructions
from agents.testing import ScriptedModel, assistant_message

model = ScriptedModel([[assistant_message("hi")]])
agent = Agent(name="Triage", instructions=prompt_with_handoff_instructions("Route the user."), model=model)
Runner.run_sync(agent, "hello")
assert model.first_call.system_instructions == f"{RECOMMENDED_PROMPT_PREFIX}\n\nRoute the user."
assert "transfer_to_" in RECOMMENDED_PROMPT_PREFIX
print("ok")
