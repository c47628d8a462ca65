"""Streaming text: raw events carry Responses events with attribute access (event.data.delta)."""
import asyncio

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

agent = Agent(name="A", model=ScriptedModel([[assistant_message("Hello brave new world")]]))


async def main() -> None:
    result = Runner.run_streamed(agent, "hi")
    text = ""
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            text += event.data.delta
    assert text == "Hello brave new world", text


asyncio.run(main())
print("ok")
