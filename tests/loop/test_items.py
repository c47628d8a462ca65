"""Specification of run items (miniagents/items.py): `.type` strings, `.agent`, JSON-ready `.raw_item`
that also answers attribute reads (issue 5), the upstream shell's `ItemHelpers`, and the pairing check.
"""
from __future__ import annotations

import json

import pytest

from miniagents import (Agent, HandoffCallItem, HandoffOutputItem, MessageOutputItem, ReasoningItem, Runner,
                        ToolCallItem, ToolCallOutputItem, function_tool)
from miniagents.upstream import ItemHelpers
from miniagents.items import drop_orphans
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent


@function_tool
def lookup(q: str) -> dict:
    return {"q": q, "hits": 2}


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}


@pytest.fixture
def full_run():
    target, _ = make_agent([[assistant_message("final answer")]], name="Target")
    agent, model = make_agent([
        [REASONING, assistant_message("checking"), function_call("lookup", {"q": "x"}, call_id="c1")],
        [function_call("transfer_to_target", "{}", call_id="h1")],
    ], tools=[lookup], handoffs=[target])
    return Runner.run_sync(agent, "hi"), agent, target


def test_run_items_carry_upstreams_type_strings_and_classes(full_run):
    result, agent, target = full_run
    assert [i.type for i in result.new_items] == [
        "reasoning_item", "message_output_item", "tool_call_item", "tool_call_output_item", "handoff_call_item",
        "handoff_output_item", "message_output_item"]
    assert [type(i) for i in result.new_items] == [ReasoningItem, MessageOutputItem, ToolCallItem, ToolCallOutputItem,
                                                   HandoffCallItem, HandoffOutputItem, MessageOutputItem]


def test_each_item_names_the_agent_that_produced_it(full_run):
    result, agent, target = full_run
    assert [i.agent.name for i in result.new_items] == ["Assistant"] * 6 + ["Target"]


def test_raw_items_are_json_ready_dicts(full_run):
    result, _, _ = full_run
    for item in result.new_items:
        assert isinstance(item.raw_item, dict)
        assert json.loads(json.dumps(item.raw_item)) == item.raw_item
    assert json.loads(json.dumps(result.to_input_list())) == result.to_input_list()


def test_raw_items_answer_attribute_reads_like_upstreams_typed_objects(full_run):
    result, _, _ = full_run
    call = next(i for i in result.new_items if i.type == "tool_call_item")
    assert call.raw_item.name == "lookup" == call.raw_item["name"]
    assert call.raw_item.call_id == "c1"
    assert json.loads(call.raw_item.arguments) == {"q": "x"}
    assert call.raw_item.type == "function_call"
    assert getattr(call.raw_item, "namespace", None) is None
    assert not hasattr(call.raw_item, "no_such_field")
    output = next(i for i in result.new_items if i.type == "tool_call_output_item")
    assert output.raw_item.call_id == "c1"
    assert output.raw_item.output == '{"q": "x", "hits": 2}'
    assert output.output == {"q": "x", "hits": 2}
    message = next(i for i in result.new_items if i.type == "message_output_item")
    assert message.raw_item.content[0]["text"] == "checking"
    assert message.raw_item.role == "assistant"
    handoff_call = next(i for i in result.new_items if i.type == "handoff_call_item")
    assert handoff_call.raw_item.name == "transfer_to_target"


def test_a_missing_attribute_on_a_raw_item_is_an_attribute_error_naming_the_field(full_run):
    result, _, _ = full_run
    with pytest.raises(AttributeError, match="no_such_field"):
        result.new_items[2].raw_item.no_such_field


def test_handoff_output_items_name_both_agents(full_run):
    result, agent, target = full_run
    item = next(i for i in result.new_items if i.type == "handoff_output_item")
    assert item.source_agent is agent and item.target_agent is target


def test_a_tool_call_item_knows_the_tool_description():
    @function_tool
    def documented() -> str:
        """Documented tool."""
        return "x"

    agent, _ = make_agent([[function_call("documented", "{}", call_id="c1")], [assistant_message("ok")]],
                          tools=[documented])
    result = Runner.run_sync(agent, "go")
    assert result.new_items[0].description == "Documented tool."


def test_item_helpers_read_message_text():
    message = assistant_message("hello")
    assert ItemHelpers.extract_last_text(message) == "hello"
    assert ItemHelpers.extract_last_content(message) == "hello"
    assert ItemHelpers.extract_text(message) == "hello"
    refusal = {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}
    assert ItemHelpers.extract_refusal(refusal) == "no"
    assert ItemHelpers.extract_last_text(refusal) is None
    assert ItemHelpers.extract_last_content(refusal) == "no"


def test_item_helpers_text_message_outputs_joins_the_message_items():
    agent, _ = make_agent([[assistant_message("a"), function_call("lookup", {"q": "x"}, call_id="c1")],
                           [assistant_message("b")]], tools=[lookup])
    result = Runner.run_sync(agent, "go")
    assert ItemHelpers.text_message_outputs(result.new_items) == "ab"


def test_input_to_new_input_list_makes_a_user_message_without_a_type():
    assert ItemHelpers.input_to_new_input_list("hi") == [{"content": "hi", "role": "user"}]
    items = [{"role": "user", "content": "x"}]
    copied = ItemHelpers.input_to_new_input_list(items)
    assert copied == items and copied[0] is not items[0]


def test_tool_call_output_item_helper_builds_upstreams_shape():
    out = ItemHelpers.tool_call_output_item({"call_id": "c9", "name": "x"}, "result")
    assert dict(out) == {"call_id": "c9", "output": "result", "type": "function_call_output"}


# --- The pairing check ------------------------------------------------------------------------------------------


def _call(cid):
    return {"type": "function_call", "call_id": cid, "name": "t", "arguments": "{}"}


def _out(cid):
    return {"type": "function_call_output", "call_id": cid, "output": "x"}


def test_drop_orphans_keeps_paired_calls_and_drops_orphans_on_either_side():
    user = {"role": "user", "content": "hi"}
    items = [user, _call("a"), _out("a"), _call("lonely"), _out("stray"), _out("a")]
    assert drop_orphans(items) == [user, _call("a"), _out("a")]


def test_drop_orphans_drops_an_output_that_precedes_its_call():
    assert drop_orphans([_out("a"), _call("a")]) == []


def test_drop_orphans_leaves_a_well_paired_history_unchanged():
    items = [{"role": "user", "content": "hi"}, _call("a"), _call("b"), _out("b"), _out("a"), assistant_message("ok")]
    assert drop_orphans(items) == items
