"""to_input_list() continues a conversation by hand."""
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

model = ScriptedModel([[assistant_message("Paris")], [assistant_message("About 2 million")]])
agent = Agent(name="Geo", model=model)
first = Runner.run_sync(agent, "Capital of France?")
follow_up = first.to_input_list() + [{"role": "user", "content": "Population?"}]
second = Runner.run_sync(agent, follow_up)
assert second.final_output == "About 2 million"
assert len(model.calls[1].input) == 3
assert model.calls[1].input[1]["type"] == "message" and model.calls[1].input[1]["role"] == "assistant"
assert first.last_response_id is not None
print("ok")
