"""`agents.decorators.tool` is an alias of function_tool; tools show up in the model call as tool objects."""
from agents import Agent, Runner
from agents.decorators import tool
from agents.testing import ScriptedModel, assistant_message


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(name_override="echo_text", description_override="Echo the text back.")
def echo(text: str) -> str:
    return text


model = ScriptedModel([[assistant_message("hi")]])
agent = Agent(name="A", tools=[ping, echo], model=model)
Runner.run_sync(agent, "hi")
call = model.first_call
assert [t.name for t in call.tools] == ["ping", "echo_text"]
assert call.tools[1].description == "Echo the text back."
print("ok")
