"""A scripted model records the tools (hosted ones too), handoffs and output schema as the agent's objects."""
from agents import Agent, AgentOutputSchemaBase, FunctionTool, Handoff, Runner, WebSearchTool, function_tool
from agents.models.interface import ModelTracing
from agents.testing import ScriptedModel, assistant_message


@function_tool
def lookup(order: str) -> str:
    """Look up an order."""
    return "shipped"


model = ScriptedModel([[assistant_message('{"response": 7}')]])
agent = Agent(name="A", tools=[lookup, WebSearchTool()], handoffs=[Agent(name="Billing")], output_type=int,
              model=model)
assert Runner.run_sync(agent, "how many?").final_output == 7
call = model.last_call
assert isinstance(call.tools[0], FunctionTool) and isinstance(call.tools[1], WebSearchTool)
assert isinstance(call.handoffs[0], Handoff) and call.handoffs[0].agent_name == "Billing"
assert isinstance(call.output_schema, AgentOutputSchemaBase) and call.output_schema.name() == "int"
assert isinstance(call.tracing, ModelTracing)
print("ok")
