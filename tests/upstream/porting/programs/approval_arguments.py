"""An approval item's arguments are the call's JSON text, as a reviewer would show them."""
import json

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, function_call


@function_tool(needs_approval=True)
def pay(amount: int, to: str) -> str:
    """Pay someone."""
    return "paid"


model = ScriptedModel([[function_call("pay", {"amount": 5, "to": "ann"}, call_id="c1")]])
result = Runner.run_sync(Agent(name="A", tools=[pay], model=model), "pay ann 5")
item = result.interruptions[0]
assert isinstance(item.arguments, str)
assert json.loads(item.arguments) == {"amount": 5, "to": "ann"}
print("ok")
