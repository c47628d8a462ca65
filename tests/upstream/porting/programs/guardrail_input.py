"""A blocking input guardrail trips: no model call, the exception carries the result."""
from agents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, RunContextWrapper, Runner,
                    input_guardrail)
from agents.testing import ScriptedModel, assistant_message


@input_guardrail(run_in_parallel=False)
def no_homework(ctx: RunContextWrapper, agent: Agent, user_input) -> GuardrailFunctionOutput:
    text = user_input if isinstance(user_input, str) else str(user_input)
    return GuardrailFunctionOutput(output_info={"checked": text}, tripwire_triggered="homework" in text)


model = ScriptedModel([[assistant_message("sure")]])
agent = Agent(name="Tutor", input_guardrails=[no_homework], model=model)
try:
    Runner.run_sync(agent, "do my homework")
except InputGuardrailTripwireTriggered as error:
    assert error.guardrail_result.output.output_info == {"checked": "do my homework"}
    assert error.guardrail_result.guardrail.get_name() == "no_homework"
else:
    raise AssertionError("expected a tripwire")
assert len(model.calls) == 0

result = Runner.run_sync(agent, "explain fractions")
assert result.final_output == "sure"
assert result.input_guardrail_results[0].output.tripwire_triggered is False
print("ok")
