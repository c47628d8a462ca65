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


@pytest.mark.parametrize("settings, mode", [
    ({}, "ENABLED"),
    ({"trace_include_sensitive_data": False}, "ENABLED_WITHOUT_DATA"),
    ({"tracing_disabled": True}, "DISABLED"),
    ({"tracing_disabled": True, "trace_include_sensitive_data": False}, "DISABLED"),
    (None, "ENABLED"),  # no RunConfig at all
])
def test_a_model_is_told_the_runs_tracing_mode_and_by_default_may_record_data(settings, mode):
    """What a model may record in its own traces (`tracing`, a ModelTracing) follows the run's configuration:
    the data by default, as upstream's; without it when the run says so; nothing when tracing is off."""
    from miniagents.models.interface import ModelTracing

    model = ScriptedModel([[assistant_message("ok")]])
    config = None if settings is None else RunConfig(**settings)
    Runner.run_sync(Agent(name="A", model=model), "hi", run_config=config)
    assert model.last_call.tracing is ModelTracing[mode]
