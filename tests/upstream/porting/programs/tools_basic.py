"""A function tool: the model calls it, sees its output, answers."""
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
    """
    return f"Sunny in {city}"


model = ScriptedModel([
    [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
    [assistant_message("It is sunny in Paris.")],
])
agent = Agent(name="Assistant", instructions="Be brief.", tools=[get_weather], model=model)
result = Runner.run_sync(agent, "Weather in Paris?")

assert result.final_output == "It is sunny in Paris."
assert [item.type for item in result.new_items] == ["tool_call_item", "tool_call_output_item", "message_output_item"]
assert result.new_items[1].output == "Sunny in Paris"
assert get_weather.name == "get_weather"
assert get_weather.description == "Get the current weather for a city."
assert get_weather.params_json_schema["properties"]["city"]["description"] == "The city to look up."
sent = model.calls[1].input
assert sent[-1]["type"] == "function_call_output" and sent[-1]["output"] == "Sunny in Paris"
assert model.calls[0].system_instructions == "Be brief."
model.assert_complete()
print("ok")
