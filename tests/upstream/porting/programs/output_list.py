"""A list output type is wrapped as {"response": [...]} and unwrapped in final_output."""
import json

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

model = ScriptedModel([[assistant_message(json.dumps({"response": ["a", "b"]}))]])
agent = Agent(name="Lister", output_type=list[str], model=model)
result = Runner.run_sync(agent, "two letters")
assert result.final_output == ["a", "b"]
print("ok")
