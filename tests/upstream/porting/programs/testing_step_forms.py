"""agents.testing: every step form ScriptedModel accepts."""
from agents import Agent, ModelResponse, Runner, Usage, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call


@function_tool
def noop() -> str:
    """Do nothing."""
    return "nothing"


model = ScriptedModel([
    ModelStep(output=[function_call("noop", {}, call_id="c1")], usage=Usage(requests=1, input_tokens=3)),
    {"output": [function_call("noop", {}, call_id="c2")]},
    ModelResponse(output=[function_call("noop", {}, call_id="c3")], usage=Usage(requests=1), response_id="r3"),
    [assistant_message("finished")],
])
agent = Agent(name="A", tools=[noop], model=model)
result = Runner.run_sync(agent, "go")
assert result.final_output == "finished"
assert isinstance(model.calls, tuple) and len(model.calls) == 4
assert model.remaining_steps == 0
model.assert_complete()
assert result.context_wrapper.usage.input_tokens == 3
print("ok")
