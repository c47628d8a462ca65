"""A SQLite session carries the conversation from one run to the next."""
import asyncio

from agents import Agent, Runner
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message

model = ScriptedModel([[assistant_message("Hi Ann!")], [assistant_message("Your name is Ann.")]])
agent = Agent(name="A", model=model)
session = SQLiteSession("user-1")

Runner.run_sync(agent, "I am Ann", session=session)
result = Runner.run_sync(agent, "What is my name?", session=session)
assert result.final_output == "Your name is Ann."
second_input = model.calls[1].input
assert second_input[0]["content"] == "I am Ann" and second_input[0]["role"] == "user"
assert second_input[-1]["content"] == "What is my name?"
assert len(second_input) == 3

items = asyncio.run(session.get_items())
assert [item.get("role") for item in items] == ["user", "assistant", "user", "assistant"]
print("ok")
