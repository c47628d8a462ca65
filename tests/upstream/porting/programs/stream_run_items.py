"""Streaming: the run item events a UI listens to, in order."""
import asyncio

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


model = ScriptedModel([[function_call("add", {"a": 2, "b": 3}, call_id="c1")], [assistant_message("5")]])
agent = Agent(name="Math", tools=[add], model=model)


async def main() -> None:
    result = Runner.run_streamed(agent, "2+3")
    names, kinds = [], []
    async for event in result.stream_events():
        kinds.append(event.type)
        if event.type == "run_item_stream_event":
            names.append(event.name)
    assert kinds[0] == "agent_updated_stream_event"
    assert names == ["tool_called", "tool_output", "message_output_created"], names
    assert "raw_response_event" in kinds
    assert result.is_complete and result.final_output == "5"
    assert model.calls[0].streamed is True


asyncio.run(main())
print("ok")
