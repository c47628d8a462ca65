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


def test_two_tools_with_one_name_warn_and_the_last_wins(caplog):
    model = ScriptedModel([[function_call("dup", "{}", call_id="c1")], [assistant_message("ok")]])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        Runner.run_sync(Agent(name="A", tools=twin_tools(), model=model), "go")
    assert model.calls[1].input[-1]["output"] == "second"
    assert set(caplog.messages) == {"Ambiguous function tool configuration: the tool name `dup` is used by multiple tools. "
                                    "Assign a unique routed name to every colliding function tool with `name_override=`, "
                                    "`tool_name=`, or a namespace."}  # upstream's words, each turn


def test_two_tools_with_one_name_are_an_error_under_the_error_policy():
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(UserError, match="the tool name `dup` is used by multiple tools"):
        Runner.run_sync(Agent(name="A", tools=twin_tools(), model=model), "go",
                        run_config=RunConfig(tool_name_collision_policy="error"))
    assert model.calls == ()
