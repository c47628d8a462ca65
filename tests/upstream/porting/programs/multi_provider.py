"""MultiProvider routes model names by prefix to the providers in its map."""
from agents import Agent, Model, ModelProvider, MultiProvider, RunConfig, Runner
from agents.models.multi_provider import MultiProviderMap
from agents.testing import ScriptedModel, assistant_message

scripted = ScriptedModel([[assistant_message("from the local provider")]])
asked = []


class LocalProvider(ModelProvider):
    def get_model(self, model_name):
        asked.append(model_name)
        return scripted


routes = MultiProviderMap()
routes.add_provider("local", LocalProvider())
provider = MultiProvider(provider_map=routes)
result = Runner.run_sync(Agent(name="A", model="local/tiny-llm"), "hi", run_config=RunConfig(model_provider=provider))
assert result.final_output == "from the local provider"
assert asked == ["tiny-llm"]
try:
    provider.get_model("nowhere/model")
except Exception as error:
    assert "Unknown prefix" in str(error)
else:
    raise AssertionError("an unknown prefix must be refused")
print("ok")
