"""A paused run goes to JSON text and comes back (awaiting RunState.from_string, as upstream)."""
import asyncio

from agents import Agent, RunState, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    """Transfer money."""
    return f"transferred {amount}"


model = ScriptedModel([
    [function_call("transfer", {"amount": 100}, call_id="c1")],
    [assistant_message("Done.")],
])
agent = Agent(name="Bank", tools=[transfer], model=model)


async def main() -> None:
    result = await Runner.run(agent, "send 100")
    text = result.to_state().to_string()
    assert isinstance(text, str)
    state = await RunState.from_string(agent, text)
    interruptions = state.get_interruptions()
    assert [item.name for item in interruptions] == ["transfer"]
    state.approve(interruptions[0])
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == "Done."
    assert resumed.new_items[-2].output == "transferred 100"


asyncio.run(main())
print("ok")
