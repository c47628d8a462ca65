"""AgentOutputSchema: the schema object the model receives, non-strict on request."""
import json

from agents import Agent, AgentOutputSchema, Runner
from agents.testing import ScriptedModel, assistant_message

schema = AgentOutputSchema(dict, strict_json_schema=False)
assert schema.is_strict_json_schema() is False
assert schema.name() == "dict"
model = ScriptedModel([[assistant_message(json.dumps({"anything": [1, 2]}))]])
agent = Agent(name="Loose", output_type=schema, model=model)
result = Runner.run_sync(agent, "anything")
assert result.final_output == {"anything": [1, 2]}
assert model.first_call.output_schema.is_strict_json_schema() is False
print("ok")
