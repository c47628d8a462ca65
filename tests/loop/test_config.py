"""RunConfig and what an agent offers: every option is honoured or refused, never silently dropped."""
import pytest

from miniagents import Agent, RunConfig, Runner, UserError, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call


def twin_tools():
    @function_tool(name_override="dup")
    def first() -> str:
        """First."""
        return "first"

    @function_tool(name_override="dup")
    def second() -> str:
        """Second."""
        return "second"

    return [first, second]


def test_two_tools_with_one_name_are_a_user_error_before_the_model_is_called():
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(UserError, match="offers two tools named 'dup'"):
        Runner.run_sync(Agent(name="A", tools=twin_tools(), model=model), "go")
    assert model.calls == ()


def test_a_tool_and_a_handoff_with_one_name_are_a_user_error_too():
    model = ScriptedModel([[assistant_message("never")]])

    @function_tool(name_override="transfer_to_b")
    def clash() -> str:
        """A tool named like the handoff."""
        return "x"

    with pytest.raises(UserError, match="offers two tools named 'transfer_to_b'"):
        Runner.run_sync(Agent(name="A", tools=[clash], handoffs=[Agent(name="B")], model=model), "go")
    assert model.calls == ()
