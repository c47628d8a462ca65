"""Usage adds up across model calls; default_usage applies to steps without their own."""
from agents import Agent, Runner, Usage, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def noop() -> str:
    """Nothing."""
    return "x"


model = ScriptedModel([[function_call("noop", {}, call_id="c1")], [assistant_message("ok")]],
                      default_usage=Usage(requests=1, input_tokens=10, output_tokens=2, total_tokens=12))
result = Runner.run_sync(Agent(name="A", tools=[noop], model=model), "go")
usage = result.context_wrapper.usage
assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2, 20, 4, 24)
assert [r.usage.total_tokens for r in result.raw_responses] == [12, 12]
print("ok")
