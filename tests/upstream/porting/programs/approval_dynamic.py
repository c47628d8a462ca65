"""needs_approval as an async function of the arguments; always_approve is sticky for the tool."""
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


async def large_amounts(ctx, params, call_id) -> bool:
    return params["amount"] > 100


@function_tool(needs_approval=large_amounts)
def refund(amount: int) -> str:
    """Refund money."""
    return f"refunded {amount}"


model = ScriptedModel([
    [function_call("refund", {"amount": 50}, call_id="c1"), function_call("refund", {"amount": 500}, call_id="c2")],
    [function_call("refund", {"amount": 900}, call_id="c3")],
    [assistant_message("all refunded")],
])
agent = Agent(name="A", tools=[refund], model=model)
result = Runner.run_sync(agent, "refund")
assert [item.call_id for item in result.interruptions] == ["c2"]
state = result.to_state()
state.approve(result.interruptions[0], always_approve=True)
result = Runner.run_sync(agent, state)
assert result.interruptions == []
assert result.final_output == "all refunded"
outputs = [i.output for i in result.new_items if i.type == "tool_call_output_item"]
assert outputs == ["refunded 50", "refunded 500", "refunded 900"], outputs
print("ok")
