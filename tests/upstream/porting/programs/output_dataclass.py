"""A dataclass output type: upstream wraps non-object types in {"response": ...}; a dataclass counts."""
import json
from dataclasses import dataclass

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message


@dataclass
class Forecast:
    city: str
    celsius: int


model = ScriptedModel([[assistant_message(json.dumps({"response": {"city": "Oslo", "celsius": 3}}))]])
agent = Agent(name="Forecaster", output_type=Forecast, model=model)
result = Runner.run_sync(agent, "Forecast for Oslo")
assert result.final_output == Forecast(city="Oslo", celsius=3)
assert result.final_output_as(Forecast, raise_if_incorrect_type=True).celsius == 3
print("ok")
