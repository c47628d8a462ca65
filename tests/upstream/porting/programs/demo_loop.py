"""run_demo_loop: the terminal loop, fed by a patched input() (exit ends it)."""
import asyncio
import builtins

from agents import Agent, run_demo_loop
from agents.testing import ScriptedModel, assistant_message

lines = iter(["hello", "", "again", "exit"])
builtins.input = lambda prompt="": next(lines)
model = ScriptedModel([[assistant_message("Hi there!")], [assistant_message("Hello again!")]])
asyncio.run(run_demo_loop(Agent(name="Greeter", model=model), stream=False))
assert len(model.calls) == 2
users = [item["content"] for item in model.last_call.input if item.get("role") == "user"]
assert users == ["hello", "again"], users
print("ok")
