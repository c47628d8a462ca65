"""An output guardrail sees the final output and can trip."""
from agents import (Agent, GuardrailFunctionOutput, OutputGuardrailTripwireTriggered, RunContextWrapper, Runner,
                    output_guardrail)
from agents.testing import ScriptedModel, assistant_message


@output_guardrail
async def no_secrets(ctx: RunContextWrapper, agent: Agent, output: str) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=len(output), tripwire_triggered="password" in output)


agent = Agent(name="A", output_guardrails=[no_secrets],
              model=ScriptedModel([[assistant_message("the password is 1234")]]))
try:
    Runner.run_sync(agent, "tell me")
except OutputGuardrailTripwireTriggered as error:
    assert error.guardrail_result.agent_output == "the password is 1234"
    assert error.guardrail_result.output.output_info == 20
else:
    raise AssertionError("expected a tripwire")

agent = agent.clone(model=ScriptedModel([[assistant_message("fine")]]))
result = Runner.run_sync(agent, "tell me")
assert [r.output.tripwire_triggered for r in result.output_guardrail_results] == [False]
print("ok")
