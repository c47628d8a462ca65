"""agents.testing streaming: one text delta per content part, and ModelStep.stream for exact events."""
import asyncio

from agents import Agent, Runner
from agents.testing import ModelStep, ScriptedModel, assistant_message


async def collect(agent):
    result = Runner.run_streamed(agent, "hi")
    deltas = [e.data.delta async for e in result.stream_events()
              if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"]
    return result, deltas


model = ScriptedModel([[assistant_message("Hello brave new world")]])
result, deltas = asyncio.run(collect(Agent(name="A", model=model)))
assert deltas == ["Hello brave new world"], deltas
assert result.final_output == "Hello brave new world"
assert model.last_call.streamed is True

step = ModelStep.stream([], output=[assistant_message("ignored")])
assert step.stream_events == () and step.response_id == "resp-789"
print("ok")
