"""A custom input filter receives HandoffInputData and returns a clone."""
from agents import Agent, HandoffInputData, Runner, handoff
from agents.testing import ScriptedModel, assistant_message, function_call

seen = {}


def keep_last_user_message(data: HandoffInputData) -> HandoffInputData:
    seen["history"] = data.input_history
    seen["new"] = [item.type for item in data.new_items]
    return data.clone(input_history=(data.input_history[-1],), pre_handoff_items=(), new_items=())


target_model = ScriptedModel([[assistant_message("ok")]])
target = Agent(name="Target", model=target_model)
source_model = ScriptedModel([[function_call("transfer_to_target", {}, call_id="h1")]])
source = Agent(name="Source", model=source_model, handoffs=[handoff(target, input_filter=keep_last_user_message)])
history = [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}]
Runner.run_sync(source, history)
assert seen["history"] == tuple(history)
assert seen["new"] == ["handoff_call_item", "handoff_output_item"]
assert [item.get("content") for item in target_model.first_call.input] == ["second"]
print("ok")
