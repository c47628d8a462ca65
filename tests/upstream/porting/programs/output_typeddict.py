"""A TypedDict output type is an object: sent unwrapped, final_output is a dict."""
import json
try:
    from typing_extensions import TypedDict  # pydantic wants it before Python 3.12
except ImportError:
    from typing import TypedDict

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message


class Person(TypedDict):
    name: str
    age: int


model = ScriptedModel([[assistant_message(json.dumps({"name": "Ada", "age": 36}))]])
agent = Agent(name="Extractor", output_type=Person, model=model)
result = Runner.run_sync(agent, "Ada is 36")
assert result.final_output == {"name": "Ada", "age": 36}
print("ok")
