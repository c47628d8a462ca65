"""ToolContext.from_agent_context and the approval decision on RunContextWrapper (miniagents has no
`get_rejection_message`: docs/porting.md)."""
from agents import Agent, RunContextWrapper, Runner, function_tool
from agents.tool_context import ToolContext
from agents.testing import ScriptedModel, function_call

wrapper = RunContextWrapper(context={"user": "ann"})
tool_ctx = ToolContext.from_agent_context(wrapper, "call_1", tool_name="lookup", tool_arguments='{"q": 1}')
assert tool_ctx.context == {"user": "ann"} and tool_ctx.tool_name == "lookup" and tool_ctx.tool_call_id == "call_1"
assert tool_ctx.usage is wrapper.usage


@function_tool(needs_approval=True)
def wipe(disk: str) -> str:
    """Wipe a disk."""
    return "wiped"


model = ScriptedModel([[function_call("wipe", {"disk": "a"}, call_id="w1")]])
result = Runner.run_sync(Agent(name="Ops", tools=[wipe], model=model), "wipe a")
item = result.interruptions[0]
result.context_wrapper.reject_tool(item, rejection_message="not on a Friday")
assert result.context_wrapper.is_tool_approved("wipe", "w1") is False
print("ok")
