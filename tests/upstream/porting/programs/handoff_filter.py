"""handoff(input_filter=remove_all_tools): the next agent does not see the tool traffic."""
from agents import Agent, Runner, function_tool, handoff
from agents.extensions import handoff_filters
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def order_status(order_id: int) -> str:
    """Look up an order."""
    return "shipped"


billing_model = ScriptedModel([[assistant_message("Refund started.")]])
billing = Agent(name="Billing", model=billing_model)
triage_model = ScriptedModel([
    [function_call("order_status", {"order_id": 7}, call_id="c1")],
    [function_call("transfer_to_billing", {}, call_id="h1")],
])
triage = Agent(name="Triage", tools=[order_status], model=triage_model,
               handoffs=[handoff(billing, input_filter=handoff_filters.remove_all_tools)])
result = Runner.run_sync(triage, "Refund order 7")
assert result.final_output == "Refund started."
seen = billing_model.first_call.input
assert not [item for item in seen if item.get("type") in ("function_call", "function_call_output")], seen
assert seen[0]["content"] == "Refund order 7"
print("ok")
