"""RunState.add_input: input added to a paused run reaches the model after the approved tool's output."""
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool(needs_approval=True)
def refund(amount: int) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


model = ScriptedModel([[function_call("refund", {"amount": 5}, call_id="c1")], [assistant_message("Done.")]])
agent = Agent(name="Support", tools=[refund], model=model)
result = Runner.run_sync(agent, "refund me")
state = result.to_state()
state.approve(state.get_interruptions()[0])
state.add_input("and send a receipt")
final = Runner.run_sync(agent, state)
assert final.final_output == "Done."
last_input = model.last_call.input
assert last_input[-2]["type"] == "function_call_output" and last_input[-2]["output"] == "refunded 5"
assert last_input[-1] == {"content": "and send a receipt", "role": "user"}
try:
    final.to_state().add_input("more")
except Exception as error:
    assert "terminal" in str(error)
else:
    raise AssertionError("a finished run takes no input")
print("ok")
