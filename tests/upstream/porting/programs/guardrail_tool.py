"""Tool input and output guardrails: reject content replaces what the model sees."""
from agents import (Agent, Runner, ToolGuardrailFunctionOutput, ToolInputGuardrailData, ToolOutputGuardrailData,
                    function_tool, tool_input_guardrail, tool_output_guardrail)
from agents.testing import ScriptedModel, assistant_message, function_call

ran = []


@tool_input_guardrail
def no_rm(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "rm" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("refused: destructive command")
    return ToolGuardrailFunctionOutput.allow()


@tool_output_guardrail
def redact(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "secret" in str(data.output):
        return ToolGuardrailFunctionOutput.reject_content("[redacted]")
    return ToolGuardrailFunctionOutput.allow()


@function_tool(tool_input_guardrails=[no_rm], tool_output_guardrails=[redact])
def shell(command: str) -> str:
    """Run a command."""
    ran.append(command)
    return "the secret is 42" if command == "cat key" else "done"


model = ScriptedModel([
    [function_call("shell", {"command": "rm -rf /"}, call_id="c1"),
     function_call("shell", {"command": "cat key"}, call_id="c2")],
    [assistant_message("ok")],
])
result = Runner.run_sync(Agent(name="Ops", tools=[shell], model=model), "clean up")
outputs = {item["call_id"]: item["output"] for item in model.calls[1].input if item.get("type") == "function_call_output"}
assert ran == ["cat key"]
assert outputs == {"c1": "refused: destructive command", "c2": "[redacted]"}
assert len(result.tool_input_guardrail_results) == 2
assert len(result.tool_output_guardrail_results) == 1
print("ok")
