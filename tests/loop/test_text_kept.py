"""Text and objects a run keeps: attacks on what enters a run and what it hands out.

The rule (docs/porting.md, "What differs, and why"): every string a run keeps is text UTF-8 can write. A lone UTF-16
surrogate is replaced by U+FFFD (`items.clean_text`) where the string enters the run: a run's input, a model's
response (`ModelResponse`, whoever made it), a tool's output or error, a decision's message, a handoff input
filter's result, a session's history, a loaded state. NUL and long strings are text like any other: kept as given.
What the run hands to code that may edit it (a model's input, a `model_input` plugin's, a tool's
`ToolContext.tool_call`) is its own copy, so no edit reaches the history, the session or the saved state (a stream's
reader, a guardrail and a handoff's input filter are given copies too: test_agent, test_guardrails, test_handoffs).
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from miniagents import (Agent, HandoffInputData, Model, ModelResponse, RunState, Runner, SQLiteSession, ToolContext,
                        ToolError, UserError, function_tool, handoff)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.turn import REJECTED
from strategies import FAST_TMP
from support import outputs_sent

LONE = "a\ud800b"
REPAIRED = "a\ufffdb"


def writable(value) -> bytes:
    """`value` as UTF-8 JSON: what a request body, a session row or a state file needs."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


class Custom(Model):
    """A model of the program's own (no ScriptedModel, no adapter): it answers with the items it is given."""

    def __init__(self, *answers):
        self.answers, self.inputs = list(answers), []

    def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                     tracing=None, **kwargs):
        self.inputs.append(copy.deepcopy(input))  # each request as it was sent
        return ModelResponse(output=self.answers.pop(0))


# --- A custom model's answer: a lone surrogate is repaired where the response is made --------------------------


def test_a_custom_models_lone_surrogate_is_repaired_in_the_output_the_state_and_the_next_request(tmp_path):
    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    model = Custom([assistant_message(LONE), function_call("p\ud800y", '{"\ud800": 1}', call_id="c1")],
                   [function_call("pay", "{}", call_id="c2")], [assistant_message("done " + LONE)])
    agent = Agent(name="a", model=model, tools=[pay])
    session = SQLiteSession("s", str(tmp_path / "db.sqlite"))
    result = Runner.run_sync(agent, "go", session=session)
    text = result.to_state().to_string()
    text.encode("utf-8")  # a state file can be written
    state = RunState.from_string(agent, text)
    state.approve(result.interruptions[0])
    result = Runner.run_sync(agent, state, session=session)
    assert result.final_output == "done " + REPAIRED
    for request in model.inputs[1:]:
        writable(request)
    assert model.inputs[1][1]["content"][0]["text"] == REPAIRED
    assert model.inputs[1][2]["name"] == "p\ufffdy" and model.inputs[1][2]["arguments"] == '{"\ufffd": 1}'
    writable(result.to_input_list())
    writable(session.get_items())


# --- Text the program's code gives the run: a tool's failure, a handoff's input filter ---------------------------


def test_a_tool_errors_message_with_a_lone_surrogate_reaches_the_model_and_the_session_repaired(tmp_path):
    """A `ToolError`'s message was sent as it was raised: the next request and the session's write failed with a
    bare UnicodeEncodeError, though a tool's return value is repaired."""
    def refuse() -> str:
        raise ToolError("no " + LONE)

    model = ScriptedModel([[function_call("refuse", "{}", call_id="c1")], [assistant_message("done")]])
    session = SQLiteSession("s", str(tmp_path / "db.sqlite"))
    agent = Agent(name="a", model=model, tools=[function_tool(refuse)])
    result = Runner.run_sync(agent, "go", session=session)
    assert outputs_sent(model.calls[1]) == {"c1": "no " + REPAIRED}
    assert result.new_items[1].output == "no " + REPAIRED
    assert [i["output"] for i in session.get_items() if i.get("type") == "function_call_output"] == ["no " + REPAIRED]


def test_a_handoff_input_filters_lone_surrogates_are_repaired_before_the_next_agent_or_the_state_gets_them():
    """What a handoff's input filter returns became the history as given: the next request, and a state paused
    after it, held a lone surrogate."""
    def redact(data: HandoffInputData) -> HandoffInputData:
        shown = [dataclasses.replace(item, raw_item={**item.raw_item, "output": LONE})
                 if item.raw_item.get("type") == "function_call_output" else item for item in data.new_items]
        return dataclasses.replace(data, input_history=[{"role": "user", "content": LONE}], new_items=tuple(shown))

    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    second = ScriptedModel([[function_call("pay", "{}", call_id="c2")], [assistant_message("done")]])
    b = Agent(name="b", model=second, tools=[pay])
    first = ScriptedModel([[function_call("transfer_to_b", "{}", call_id="c1")]])
    a = Agent(name="a", model=first, handoffs=[handoff(b, input_filter=redact)])
    result = Runner.run_sync(a, "go")
    writable(second.calls[0].input)
    assert [second.calls[0].input[0]["content"], second.calls[0].input[-1]["output"]] == [REPAIRED, REPAIRED]
    result.to_state().to_string().encode("utf-8")


def test_a_custom_sessions_lone_surrogate_is_repaired_as_the_run_reads_its_history():
    """A session of the program's own (any object with get_items and add_items) gave back a lone surrogate: it
    went to the model and into a paused state's text as given, where a run's own input is repaired."""
    class Remembers:
        def __init__(self):
            self.items = [{"role": "user", "content": LONE}, assistant_message(LONE)]

        def get_items(self, limit=None):
            return [dict(item) for item in self.items]

        def add_items(self, items):
            self.items += items

    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    model = ScriptedModel([[function_call("pay", "{}", call_id="c1")]])
    result = Runner.run_sync(Agent(name="a", model=model, tools=[pay]), "go", session=Remembers())
    assert [model.calls[0].input[0]["content"], model.calls[0].input[1]["content"][0]["text"]] == [REPAIRED] * 2
    result.to_state().to_string().encode("utf-8")


def test_a_custom_models_response_and_request_ids_with_a_lone_surrogate_are_repaired_where_made():
    """The ids were kept as given: a state paused after the response held them, and its text could not be written
    as UTF-8 (nor sent as the next request's previous_response_id)."""
    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)

    class Ids(Custom):
        def get_response(self, *args, **kwargs):
            return ModelResponse(output=[function_call("pay", "{}", call_id="c1")], response_id="resp_" + LONE,
                                 request_id="req_" + LONE)

    result = Runner.run_sync(Agent(name="a", model=Ids(), tools=[pay]), "go")
    assert (result.last_response_id, result.raw_responses[0].request_id) == ("resp_" + REPAIRED, "req_" + REPAIRED)
    result.to_state().to_string().encode("utf-8")


def test_a_plugins_custom_data_with_a_lone_surrogate_is_repaired_where_the_state_is_written():
    """What a plugin attaches to a call (upstream's custom_data_extractor) is kept in the state as given: a lone
    surrogate in it made the state's text one UTF-8 cannot write. Repaired as the state is written, as the caller's
    context is."""
    from miniagents.seams import Plugin

    class Tags(Plugin):
        def invoke(self, run, invoke):
            def tagged(run, turn, call, ctx):
                answer = invoke(run, turn, call, ctx)
                call.custom_data = {LONE: LONE}
                return answer
            return tagged

    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    model = ScriptedModel([[function_call("look", "{}", call_id="c1"), function_call("pay", "{}", call_id="c2")]])
    agent = Agent(name="a", model=model, tools=[function_tool(lambda: "seen", name_override="look"), pay])
    text = Runner.run_sync(agent, "go", plugins=[Tags()]).to_state().to_string()
    state = RunState.from_string(agent, text.encode("utf-8"))
    assert [item.custom_data for item in state.generated_items if item.type == "tool_call_output_item"] == \
        [{REPAIRED: REPAIRED}]


def test_an_agent_named_with_a_lone_surrogate_is_refused_where_it_is_made():
    """Its name is how a state names it: kept, the state's text could not be written as UTF-8; repaired, the state
    could not find the agent again when loaded."""
    with pytest.raises(UserError, match=r"^Agent name 'a\\ud800b' holds a lone surrogate"):
        Agent(name=LONE)


# --- What the run hands to code that may edit it ----------------------------------------------------------------


def test_a_tool_that_edits_its_tool_calls_nested_fields_changes_neither_the_history_nor_the_state(tmp_path):
    """`ToolContext.tool_call` was a shallow copy: a tool appending to a nested field of its call (a custom model's
    item may hold any) rewrote the call the next request sent, the session kept and a paused state saved."""
    def look(ctx: ToolContext) -> str:
        ctx.tool_call["extra"]["tags"].append("EDITED")
        ctx.tool_call["extra"]["note"] = "EDITED"
        return "seen"

    call = {**function_call("look", "{}", call_id="c1"), "extra": {"tags": ["given"]}}
    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    model = ScriptedModel([[call], [function_call("pay", "{}", call_id="c2")]])
    session = SQLiteSession("s", str(tmp_path / "db.sqlite"))
    agent = Agent(name="a", model=model, tools=[function_tool(look), pay])
    result = Runner.run_sync(agent, "go", session=session)
    kept = [json.dumps(model.calls[1].input), json.dumps(session.get_items()), result.to_state().to_string()]
    assert not any("EDITED" in text for text in kept)


# --- The rule, as properties: any text, through every way text enters a run, is kept as UTF-8 can write it ---------

# Any text: lone surrogates of both halves, pairs, NUL and the other control characters, astral characters.
ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)


def repaired(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@settings(max_examples=40, deadline=None)
@given(said=ANY_TEXT, returned=ANY_TEXT, raised=ANY_TEXT, key=ANY_TEXT)
def test_any_text_a_model_or_a_tool_gives_is_kept_repaired_and_loads_back_as_kept(said, returned, raised, key):
    """Whatever a custom model answers (in a message, a call's name and arguments, a key) and whatever a tool returns
    or raises: the session, the paused state's text, the next request and the final output hold it with each lone
    surrogate replaced by U+FFFD (a pair joined) and nothing else changed; the state loads back to the same text."""
    def look() -> str:
        return returned

    def fail() -> str:
        raise ToolError(raised)

    pay = function_tool(lambda: "paid", name_override="pay", needs_approval=True)
    model = Custom([assistant_message(said), function_call("look", "{}", call_id="c1"),
                    function_call("fail", "{}", call_id="c2"), function_call("pay", json.dumps({key: 1}, ensure_ascii=False), call_id="c3")],
                   [assistant_message(said)])
    agent = Agent(name="a", model=model, tools=[function_tool(look), function_tool(fail), pay])
    with tempfile.TemporaryDirectory(dir=FAST_TMP) as folder:
        session = SQLiteSession("s", os.path.join(folder, "db.sqlite"))
        paused = Runner.run_sync(agent, said, session=session)
        text = paused.to_state().to_string()
        state = RunState.from_string(agent, text.encode("utf-8"))
        assert state.to_string() == text
        state.reject(paused.interruptions[0], rejection_message=said)
        result = Runner.run_sync(agent, state, session=session)
        history = session.get_items()
    assert result.final_output == repaired(said)
    writable(model.inputs[1])
    outputs = {i["call_id"]: i["output"] for i in history if i.get("type") == "function_call_output"}
    assert outputs == {"c1": repaired(returned), "c2": repaired(raised), "c3": repaired(said) or REJECTED}
    assert [json.loads(i["arguments"]) for i in history if i.get("call_id") == "c3" and "arguments" in i] == \
        [{repaired(key): 1}]
    writable(history)


@settings(max_examples=40, deadline=None)
@given(value=st.recursive(ANY_TEXT | st.integers() | st.none(),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
                          max_leaves=8))
def test_a_models_item_is_kept_as_its_own_repaired_copy(value):
    """`ModelResponse` keeps its own copy of each item, every string in it (keys too) repaired: the model's later
    edits of what it returned never reach the run, and what is kept is `json`-writable as UTF-8."""
    item = {**function_call("look", "{}", call_id="c1"), "extra": value}
    response = ModelResponse(output=[item])
    kept = response.output[0]["extra"]
    assert kept == repaired_json(value)
    writable(kept)
    item["extra"] = "changed"
    assert response.output[0]["extra"] is kept


def repaired_json(value):
    if isinstance(value, str):
        return repaired(value)
    if isinstance(value, list):
        return [repaired_json(v) for v in value]
    if isinstance(value, dict):
        return {repaired(k): repaired_json(v) for k, v in value.items()}
    return value
