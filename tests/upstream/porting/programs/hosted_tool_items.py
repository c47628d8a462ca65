"""A hosted tool's output item stays in the run's items and in the history sent back."""
from agents import Agent, Runner, WebSearchTool
from agents.testing import ScriptedModel, assistant_message

search_call = {"type": "web_search_call", "id": "ws_1", "status": "completed",
               "action": {"type": "search", "query": "weather Oslo"}}
model = ScriptedModel([[search_call, assistant_message("It is sunny in Oslo.")], [assistant_message("You're welcome")]])
agent = Agent(name="Searcher", tools=[WebSearchTool(search_context_size="low")], model=model)
result = Runner.run_sync(agent, "Weather in Oslo?")
assert [item.type for item in result.new_items] == ["tool_call_item", "message_output_item"]
assert result.final_output == "It is sunny in Oslo."
history = result.to_input_list()
assert [item.get("type") for item in history][1] == "web_search_call"
Runner.run_sync(agent, history + [{"role": "user", "content": "thanks"}])
assert model.last_call.input[1]["type"] == "web_search_call" and model.last_call.input[1]["id"] == "ws_1"
assert WebSearchTool().name == "web_search"
print("ok")
