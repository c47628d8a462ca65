"""ModelCall records what the model was offered: tools and handoffs as objects, settings, tracing."""
from agents import Agent, ModelSettings, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message


@function_tool
def search(query: str) -> str:
    """Search."""
    return ""


helper = Agent(name="Helper")
model = ScriptedModel([[assistant_message("hi")]])
agent = Agent(name="A", instructions="Be kind.", tools=[search], handoffs=[helper], model=model,
              model_settings=ModelSettings(temperature=0.2))
Runner.run_sync(agent, "hello")
call = model.last_call
assert call.system_instructions == "Be kind."
assert call.tools[0].name == "search" and call.tools[0].params_json_schema["required"] == ["query"]
assert call.handoffs[0].tool_name == "transfer_to_helper"
assert call.model_settings.temperature == 0.2
assert call.output_schema is None
assert call.streamed is False and call.previous_response_id is None and call.conversation_id is None
assert hasattr(call, "tracing") and hasattr(call, "prompt")
print("ok")
