"""The model call receives an output schema object with upstream's methods."""
import json
from dataclasses import dataclass

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message


@dataclass
class Answer:
    text: str


model = ScriptedModel([[assistant_message(json.dumps({"response": {"text": "yes"}}))]])
agent = Agent(name="A", output_type=Answer, model=model)
Runner.run_sync(agent, "?")
schema = model.first_call.output_schema
assert schema.is_plain_text() is False
assert schema.is_strict_json_schema() is True
assert schema.json_schema()["required"] == ["response"]
assert schema.validate_json(json.dumps({"response": {"text": "no"}})) == Answer(text="no")
print("ok")
