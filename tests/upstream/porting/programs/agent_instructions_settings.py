"""Dynamic instructions, clone, model settings resolved with RunConfig's, get_all_tools."""
import asyncio

from agents import Agent, ModelSettings, RunConfig, RunContextWrapper, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message


@function_tool
def helper() -> str:
    """Help."""
    return "help"


def instructions(ctx: RunContextWrapper[dict], agent: Agent) -> str:
    return f"You are {agent.name}, helping {ctx.context['user']}."


model = ScriptedModel([[assistant_message("hi")]])
base = Agent(name="Base", instructions=instructions, tools=[helper], model=model,
             model_settings=ModelSettings(temperature=0.1, top_p=0.5))
agent = base.clone(name="Clone")
Runner.run_sync(agent, "hello", context={"user": "Ann"},
                run_config=RunConfig(model_settings=ModelSettings(temperature=0.9)))
call = model.first_call
assert call.system_instructions == "You are Clone, helping Ann."
assert (call.model_settings.temperature, call.model_settings.top_p) == (0.9, 0.5)
tools = asyncio.run(agent.get_all_tools(RunContextWrapper(context={"user": "Ann"})))
assert [t.name for t in tools] == ["helper"]
print("ok")
