"""Session methods are coroutines: add, read with a limit, pop, clear."""
import asyncio

from agents import SessionSettings
from agents.memory import SQLiteSession
from agents.memory.session import Session


async def main() -> None:
    session = SQLiteSession("s", session_settings=SessionSettings(limit=2))
    assert isinstance(session, Session)
    await session.add_items([{"role": "user", "content": str(n)} for n in range(4)])
    assert [item["content"] for item in await session.get_items()] == ["2", "3"]
    assert [item["content"] for item in await session.get_items(limit=3)] == ["1", "2", "3"]
    popped = await session.pop_item()
    assert popped["content"] == "3"
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    session.close()


asyncio.run(main())
print("ok")
