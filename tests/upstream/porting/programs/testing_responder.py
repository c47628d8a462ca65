"""ModelStep.respond and {"responder": fn}: the step is computed from the recorded call."""
import asyncio

from agents import Agent, Runner
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message


def echo_last_user(call: ModelCall):
    last = call.input[-1]["content"] if isinstance(call.input, list) else call.input
    return [assistant_message(f"you said {last}")]


async def async_responder(call: ModelCall):
    await asyncio.sleep(0)
    return {"output": [assistant_message("async reply")]}


model = ScriptedModel([ModelStep.respond(echo_last_user), {"responder": async_responder}])
agent = Agent(name="A", model=model)
assert Runner.run_sync(agent, "hello").final_output == "you said hello"
assert Runner.run_sync(agent, "again").final_output == "async reply"
print("ok")
