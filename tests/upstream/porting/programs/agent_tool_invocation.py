"""A nested agent-tool run knows the call that started it (result.agent_tool_invocation)."""
import json

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

seen = []


def extract(result):
    seen.append(result.agent_tool_invocation)
    return str(result.final_output)


translator = Agent(name="Translator", model=ScriptedModel([[assistant_message("Hola")]]))
model = ScriptedModel([[function_call("translate", {"input": "Hello"}, call_id="t1")], [assistant_message("Hola!")]])
agent = Agent(name="Main", model=model,
              tools=[translator.as_tool("translate", "Translate to Spanish.", custom_output_extractor=extract)])
result = Runner.run_sync(agent, "Say hello in Spanish")
assert result.final_output == "Hola!"
assert result.agent_tool_invocation is None
(invocation,) = seen
assert invocation.tool_name == "translate" and invocation.tool_call_id == "t1"
assert json.loads(invocation.tool_arguments) == {"input": "Hello"}
print("ok")
