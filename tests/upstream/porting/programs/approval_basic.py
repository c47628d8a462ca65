"""needs_approval pauses the run; approving through RunState resumes it."""
from agents import Agent, Runner, ToolApprovalItem, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

sent = []


@function_tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    sent.append(to)
    return f"sent to {to}"


model = ScriptedModel([
    [function_call("send_email", {"to": "bob@example.com", "body": "hi"}, call_id="c1")],
    [assistant_message("Email sent.")],
])
agent = Agent(name="Mailer", tools=[send_email], model=model)
result = Runner.run_sync(agent, "email bob")
assert sent == [] and result.final_output is None
assert len(result.interruptions) == 1
item = result.interruptions[0]
assert isinstance(item, ToolApprovalItem)
assert item.name == "send_email" and item.call_id == "c1" and item.tool_name == "send_email"

state = result.to_state()
state.approve(item)
resumed = Runner.run_sync(agent, state)
assert sent == ["bob@example.com"]
assert resumed.final_output == "Email sent."
assert len(model.calls) == 2
print("ok")
