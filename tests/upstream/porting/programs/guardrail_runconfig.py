"""Guardrails given in RunConfig apply like the agent's own."""
from agents import (Agent, GuardrailFunctionOutput, InputGuardrail, InputGuardrailTripwireTriggered, RunConfig,
                    Runner)
from agents.testing import ScriptedModel, assistant_message


def always(ctx, agent, user_input):
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)


model = ScriptedModel([[assistant_message("never")]])
agent = Agent(name="A", model=model)
config = RunConfig(input_guardrails=[InputGuardrail(guardrail_function=always, name="always",
                                                     run_in_parallel=False)])
try:
    Runner.run_sync(agent, "hi", run_config=config)
except InputGuardrailTripwireTriggered as error:
    assert error.guardrail_result.guardrail.name == "always"
else:
    raise AssertionError("expected a tripwire")
assert model.calls == () or len(model.calls) == 0
print("ok")
