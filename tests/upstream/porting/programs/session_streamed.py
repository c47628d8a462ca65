"""Streamed runs write to the session too."""
import asyncio

from agents import Agent, Runner, SQLiteSession
from agents.testing import ScriptedModel, assistant_message


async def main() -> None:
    model = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
    agent = Agent(name="A", model=model)
    session = SQLiteSession("streamed")
    result = Runner.run_streamed(agent, "first", session=session)
    async for _ in result.stream_events():
        pass
    await Runner.run(agent, "second", session=session)
    contents = [item.get("content") for item in model.calls[1].input]
    assert contents[0] == "first" and contents[-1] == "second" and len(contents) == 3
    assert len(await session.get_items()) == 4


asyncio.run(main())
print("ok")
