"""Rejecting a call: the model sees the rejection message instead of an output."""
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("must not run")


model = ScriptedModel([
    [function_call("delete_file", {"path": "/etc/passwd"}, call_id="c1")],
    [assistant_message("I will not delete it.")],
])
agent = Agent(name="A", tools=[delete_file], model=model)
result = Runner.run_sync(agent, "delete passwd")
state = result.to_state()
state.reject(result.interruptions[0], rejection_message="Not allowed: system file.")
resumed = Runner.run_sync(agent, state)
assert resumed.final_output == "I will not delete it."
outputs = [item["output"] for item in model.calls[1].input if item.get("type") == "function_call_output"]
assert outputs == ["Not allowed: system file."]
print("ok")
