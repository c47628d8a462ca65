"""Output that does not match the type raises ModelBehaviorError."""
from dataclasses import dataclass

from agents import Agent, ModelBehaviorError, Runner
from agents.testing import ScriptedModel, assistant_message


@dataclass
class Score:
    value: int


model = ScriptedModel([[assistant_message("not json at all")]])
agent = Agent(name="Scorer", output_type=Score, model=model)
try:
    Runner.run_sync(agent, "score it")
except ModelBehaviorError as error:
    assert "Invalid JSON" in str(error), str(error)
else:
    raise AssertionError("expected ModelBehaviorError")
print("ok")
