"""Upstream's rules, turned on by its shell (miniagents.upstream): its RunConfig fields, a run_config dict,
ItemHelpers, the reasoning-id policy, and what miniagents refuses of upstream's policies."""
import pytest

from miniagents.upstream import ModelBehaviorError
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.upstream import Agent, ItemHelpers, RunConfig, Runner, ToolExecutionConfig, UserError, function_tool


@pytest.mark.parametrize("options", [
    {"tool_not_found_behavior": "ignore"},
    {"tool_not_found_behavior": "raise_error"},
    {"tool_name_collision_policy": "quietly"},
    {"reasoning_item_id_policy": "drop"},
    {"tool_execution": ToolExecutionConfig(pre_approval_tool_input_guardrails=True)},
])
def test_an_unknown_or_unsupported_option_is_a_user_error(options):
    with pytest.raises(UserError):
        RunConfig(**options)


def test_tool_execution_sets_the_concurrency_limit():
    assert RunConfig(tool_execution=ToolExecutionConfig(max_function_tool_concurrency=3)) \
        .max_function_tool_concurrency == 3


def reasoning_then_answer():
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]}
    return ScriptedModel([[reasoning, function_call("noop", "{}", call_id="c1")], [assistant_message("ok")]])


@function_tool
def noop() -> str:
    """Nothing."""
    return "done"


@pytest.mark.parametrize("policy, has_id", [(None, True), ("preserve", True), ("omit", False)])
def test_reasoning_item_id_policy_decides_whether_reasoning_ids_are_sent_back(policy, has_id):
    model = reasoning_then_answer()
    Runner.run_sync(Agent(name="A", tools=[noop], model=model), "go",
                    run_config=RunConfig(reasoning_item_id_policy=policy))
    sent = [i for i in model.calls[1].input if i.get("type") == "reasoning"]
    assert len(sent) == 1 and ("id" in sent[0]) is has_id


@pytest.mark.parametrize("event", [None, 5, {"type": "response.completed"},
                                   {"type": "response.completed", "response": None},
                                   {"type": "response.completed", "response": {"output": "x"}},
                                   {"type": "response.completed", "response": {"output": [None]}}])
def test_a_malformed_streamed_event_with_reasoning_ids_omitted_is_the_kernels_model_behavior_error(event):
    """A hostile model's stream under `reasoning_item_id_policy="omit"`: a bare KeyError or AttributeError came out
    of the policy's rewrite of the completed response."""
    import asyncio

    from miniagents import Model

    class Streams(Model):
        def get_response(self, *args, **kwargs):
            raise AssertionError("the run is streamed")

        def stream_response(self, *args, **kwargs):
            yield event

    async def main():
        result = Runner.run_streamed(Agent(name="A", model=Streams()), "go",
                                     run_config=RunConfig(reasoning_item_id_policy="omit"))
        async for _ in result.stream_events():
            pass

    with pytest.raises(ModelBehaviorError):
        asyncio.run(main())



def test_a_completed_event_with_output_null_reads_alike_with_reasoning_ids_omitted():
    """A server may complete a stream with output null (its items were streamed): the kernel reads it so, and the
    policy's rewrite must leave it be, not iterate it (a bare TypeError)."""
    import asyncio

    from miniagents import Model

    class Streams(Model):
        def get_response(self, *args, **kwargs):
            raise AssertionError("the run is streamed")

        def stream_response(self, *args, **kwargs):
            yield {"type": "response.completed", "response": {"output": None}}

    async def final_output(policy):
        result = Runner.run_streamed(Agent(name="A", model=Streams()), "go",
                                     run_config=RunConfig(reasoning_item_id_policy=policy))
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert asyncio.run(final_output("omit")) == asyncio.run(final_output(None))


def test_run_config_may_be_a_dict_and_its_model_overrides_the_agents():
    agent_model = ScriptedModel([])
    run_model = ScriptedModel([[assistant_message("from run config model")]])
    agent = Agent(name="A", model=agent_model)
    result = Runner.run_sync(agent, "hi", run_config={"model": run_model})
    assert result.final_output == "from run config model"
    assert agent_model.calls == () and len(run_model.calls) == 1


def test_an_unknown_tool_is_told_to_the_model_not_raised():
    model = ScriptedModel([[function_call("nope", "{}", call_id="c1")], [assistant_message("sorry")]])
    result = Runner.run_sync(Agent(name="A", model=model), "go")
    assert result.final_output == "sorry" and "not found" in model.calls[1].input[-1]["output"]
    assert ModelBehaviorError  # the kernel's rule (upstream raises): the model can correct itself


def test_the_shells_run_sync_works_inside_a_running_event_loop_and_a_failing_tool_tells_no_exception_text():
    """Two differences docs/porting.md names: upstream's run_sync raises RuntimeError inside a running event loop,
    and its default tool failure text ends with "Error: " and the exception's text."""
    import asyncio

    @function_tool
    async def charge(amount: int) -> str:
        await asyncio.sleep(0)
        raise ValueError("card 4242 declined at /srv/billing.py")

    model = ScriptedModel([[function_call("charge", {"amount": 5}, call_id="c1")], [assistant_message("ok")]])

    async def main():
        return Runner.run_sync(Agent(name="A", model=model, tools=[charge]), "hi")

    assert asyncio.run(main()).final_output == "ok"
    assert model.calls[1].input[-1]["output"] == "An error occurred while running the tool. Please try again."
