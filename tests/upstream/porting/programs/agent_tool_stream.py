"""as_tool(on_stream=...) receives AgentToolStreamEvent dicts: the nested event, the agent and the tool call."""
import asyncio

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

received = []


async def on_stream(event):
    received.append(event)


expert = Agent(name="Expert", model=ScriptedModel([[assistant_message("42")]]))
model = ScriptedModel([[function_call("ask_expert", {"input": "meaning of life?"}, call_id="e1")],
                       [assistant_message("It is 42.")]])
agent = Agent(name="Main", model=model, tools=[expert.as_tool("ask_expert", "Ask the expert.", on_stream=on_stream)])


async def main():
    result = Runner.run_streamed(agent, "ask")
    async for _ in result.stream_events():
        pass
    return result


assert asyncio.run(main()).final_output == "It is 42."
assert received, "no nested events"
assert all(set(event) == {"event", "agent", "tool_call"} for event in received)
assert received[0]["agent"] is expert and received[0]["tool_call"].call_id == "e1"
types = {event["event"].type for event in received}
assert "agent_updated_stream_event" in types and "raw_response_event" in types
print("ok")
