"""Streaming a handoff: handoff_requested, handoff_occured, then agent_updated for the new agent."""
import asyncio

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

helper = Agent(name="Helper", model=ScriptedModel([[assistant_message("helped")]]))
front = Agent(name="Front", handoffs=[helper],
              model=ScriptedModel([[function_call("transfer_to_helper", {}, call_id="h1")]]))


async def main() -> None:
    result = Runner.run_streamed(front, "help")
    seen = []
    async for event in result.stream_events():
        if event.type == "run_item_stream_event":
            seen.append(event.name)
        elif event.type == "agent_updated_stream_event":
            seen.append(f"agent:{event.new_agent.name}")
    assert seen == ["agent:Front", "handoff_requested", "handoff_occured", "agent:Helper",
                    "message_output_created"], seen
    assert result.current_agent is helper


asyncio.run(main())
print("ok")
