"""A streamed result exposes the guardrail result lists, as a RunResult does."""
import asyncio

from agents import Agent, GuardrailFunctionOutput, Runner, input_guardrail
from agents.testing import ScriptedModel, assistant_message


@input_guardrail(run_in_parallel=False)
def fine(ctx, agent, user_input):
    return GuardrailFunctionOutput(output_info="fine", tripwire_triggered=False)


agent = Agent(name="A", input_guardrails=[fine], model=ScriptedModel([[assistant_message("hi")]]))


async def main() -> None:
    result = Runner.run_streamed(agent, "hello")
    async for _ in result.stream_events():
        pass
    assert [r.output.output_info for r in result.input_guardrail_results] == ["fine"]
    assert result.output_guardrail_results == []
    assert result.tool_input_guardrail_results == [] and result.tool_output_guardrail_results == []


asyncio.run(main())
print("ok")
