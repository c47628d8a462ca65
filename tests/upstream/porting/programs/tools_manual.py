"""A FunctionTool built by hand with its own schema and an async on_invoke_tool."""
import json

from agents import Agent, FunctionTool, Runner
from agents.testing import ScriptedModel, assistant_message, function_call


async def invoke(ctx, raw_arguments: str) -> str:
    args = json.loads(raw_arguments)
    return str(args["x"] * 2)


schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
          "additionalProperties": False}
double = FunctionTool(name="double", description="Double x.", params_json_schema=schema, on_invoke_tool=invoke)

model = ScriptedModel([[function_call("double", {"x": 21}, call_id="c1")], [assistant_message("42")]])
agent = Agent(name="A", tools=[double], model=model)
result = Runner.run_sync(agent, "double 21")
assert result.new_items[1].output == "42"
assert result.final_output == "42"
print("ok")
