"""max_turns ends a looping run; an error handler can supply the final output instead."""
from agents import Agent, MaxTurnsExceeded, RunErrorHandlerInput, RunErrorHandlerResult, Runner, function_tool
from agents.testing import ScriptedModel, function_call


@function_tool
def again() -> str:
    """Go again."""
    return "again"


def looping_model():
    return ScriptedModel([[function_call("again", {}, call_id=f"c{n}")] for n in range(3)])


model = looping_model()
try:
    Runner.run_sync(Agent(name="Loop", tools=[again], model=model), "go", max_turns=2)
except MaxTurnsExceeded as error:
    assert str(error) == "Max turns (2) exceeded"
    assert error.run_data is not None and len(error.run_data.raw_responses) == 2
else:
    raise AssertionError("expected MaxTurnsExceeded")
assert len(model.calls) == 2


def give_up(data: RunErrorHandlerInput) -> RunErrorHandlerResult:
    assert isinstance(data.error, MaxTurnsExceeded)
    return RunErrorHandlerResult(final_output="gave up", include_in_history=False)


result = Runner.run_sync(Agent(name="Loop", tools=[again], model=looping_model()), "go", max_turns=2,
                         error_handlers={"max_turns": give_up})
assert result.final_output == "gave up"
print("ok")
