"""A triage agent hands off; the run ends on the other agent."""
from agents import Agent, HandoffOutputItem, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

spanish_model = ScriptedModel([[assistant_message("¡Hola!")]])
spanish = Agent(name="Spanish Agent", handoff_description="Speaks Spanish.", model=spanish_model)
triage_model = ScriptedModel([[function_call("transfer_to_spanish_agent", {}, call_id="h1")]])
triage = Agent(name="Triage", handoffs=[spanish], model=triage_model)

result = Runner.run_sync(triage, "Hola")
assert result.final_output == "¡Hola!"
assert result.last_agent is spanish
assert [item.type for item in result.new_items] == ["handoff_call_item", "handoff_output_item",
                                                    "message_output_item"]
output = result.new_items[1]
assert isinstance(output, HandoffOutputItem)
assert output.source_agent is triage and output.target_agent is spanish
assert output.raw_item["output"] == '{"assistant": "Spanish Agent"}'
handoff_seen = triage_model.first_call.handoffs[0]
assert handoff_seen.tool_name == "transfer_to_spanish_agent"
assert handoff_seen.tool_description == "Handoff to the Spanish Agent agent to handle the request. Speaks Spanish."
print("ok")
