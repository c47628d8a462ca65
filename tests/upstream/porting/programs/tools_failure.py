"""A tool that raises: by default the model sees an error message; a custom failure function wins."""
from agents import Agent, RunContextWrapper, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def polite(ctx: RunContextWrapper, error: Exception) -> str:
    return f"cannot do that: {type(error).__name__}"


@function_tool(failure_error_function=polite)
def divide_politely(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


model = ScriptedModel([
    [function_call("divide", {"a": 1, "b": 0}, call_id="c1"),
     function_call("divide_politely", {"a": 1, "b": 0}, call_id="c2")],
    [assistant_message("Division by zero.")],
])
agent = Agent(name="Calc", tools=[divide, divide_politely], model=model)
result = Runner.run_sync(agent, "1/0?")

outputs = {item["call_id"]: item["output"] for item in model.calls[1].input
           if item.get("type") == "function_call_output"}
assert outputs["c1"].startswith("An error occurred while running the tool."), outputs["c1"]
assert outputs["c2"] == "cannot do that: ZeroDivisionError"
assert result.final_output == "Division by zero."
print("ok")
