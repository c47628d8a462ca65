"""A handoff with input_type: on_handoff receives the parsed input."""
from dataclasses import dataclass

from agents import Agent, RunContextWrapper, Runner, handoff
from agents.testing import ScriptedModel, assistant_message, function_call


@dataclass
class Escalation:
    reason: str
    priority: int


received = []


def on_escalate(ctx: RunContextWrapper, data: Escalation) -> None:
    received.append(data)


manager = Agent(name="Manager", model=ScriptedModel([[assistant_message("I'm the manager.")]]))
desk_model = ScriptedModel([[function_call("escalate", {"reason": "angry", "priority": 1}, call_id="h1")]])
desk = Agent(name="Desk", model=desk_model, handoffs=[
    handoff(manager, tool_name_override="escalate", on_handoff=on_escalate, input_type=Escalation)])
result = Runner.run_sync(desk, "I want a manager")
assert received == [Escalation(reason="angry", priority=1)]
assert result.last_agent is manager
schema = desk_model.first_call.handoffs[0].input_json_schema
assert set(schema["required"]) == {"reason", "priority"}
print("ok")
