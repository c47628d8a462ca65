"""tool_use_behavior: stop on the first tool, or stop at named tools."""
from agents import Agent, Runner, StopAtTools, function_tool
from agents.testing import ScriptedModel, function_call


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


@function_tool
def finish(answer: str) -> str:
    """Give the final answer."""
    return answer.upper()


first = ScriptedModel([[function_call("lookup", {"key": "a"}, call_id="c1")]])
agent = Agent(name="A", tools=[lookup], model=first, tool_use_behavior="stop_on_first_tool")
assert Runner.run_sync(agent, "go").final_output == "value-of-a"
assert len(first.calls) == 1

named = ScriptedModel([
    [function_call("lookup", {"key": "b"}, call_id="c1")],
    [function_call("finish", {"answer": "done"}, call_id="c2")],
])
agent = Agent(name="B", tools=[lookup, finish], model=named,
              tool_use_behavior=StopAtTools(stop_at_tool_names=["finish"]))
result = Runner.run_sync(agent, "go")
assert result.final_output == "DONE"
assert len(named.calls) == 2
print("ok")
