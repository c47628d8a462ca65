"""RunConfig: every option it accepts is either honoured or refused, never silently dropped."""
import logging

import pytest

from miniagents import Agent, RunConfig, Runner, ToolExecutionConfig, UserError, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call


@pytest.mark.parametrize("options", [
    {"tool_not_found_behavior": "ignore"},
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
