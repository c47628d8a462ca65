"""An agent used as a tool by another agent."""
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

translator_model = ScriptedModel([[assistant_message("Bonjour")]])
translator = Agent(name="French Translator", instructions="Translate to French.", model=translator_model)
tool = translator.as_tool(tool_name="translate_to_french", tool_description="Translate text to French.")

boss_model = ScriptedModel([
    [function_call("translate_to_french", {"input": "Hello"}, call_id="c1")],
    [assistant_message("It is 'Bonjour'.")],
])
boss = Agent(name="Boss", tools=[tool], model=boss_model)
result = Runner.run_sync(boss, "Say hello in French")
assert result.final_output == "It is 'Bonjour'."
assert translator_model.first_call.input == [{"content": "Hello", "role": "user"}]
assert result.new_items[1].output == "Bonjour"
assert tool.name == "translate_to_french"
print("ok")
