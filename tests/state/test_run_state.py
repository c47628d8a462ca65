"""Specification of `RunState` JSON: the document, loading it back, rejecting bad ones, and resuming identically.

A paused run becomes a JSON document (`to_json` / `to_string`) that loads back (`from_json` / `from_string`)
against the caller's agent graph, by name. A document this version cannot read, or a broken one, is a
`UserError` that names the problem, raised before anything runs. tests/golden/run_state_v1.json is a released
version-1 document (written by tests/golden/make_run_state_golden.py) that must keep loading and resuming.
"""
import asyncio
import copy
import datetime
import json
import os
import re
import sqlite3
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from miniagents import (Agent, AgentsException, Handoff, RunConfig, RunContextWrapper, Runner, RunState, UserError,
                        function_tool, handoff)
from miniagents.state import SCHEMA_VERSION, SCHEMA_VERSIONS
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import ROOT, TESTS, cannot_be_copied, outputs_sent

GOLDEN = os.path.join(TESTS, "golden", "run_state_v1.json")
REJECTED = "Tool execution was not approved."


def make_agent(model, log, name="Janitor"):
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(("delete_file", path))
        return f"deleted {path}"

    @function_tool
    def list_files(folder: str) -> str:
        """List a folder."""
        log.append(("list_files", folder))
        return "a.txt"

    return Agent(name, tools=[delete_file, list_files], model=model)


def paused_state(context=None, max_turns=10, log=None, model=None):
    """A run of agent 'Janitor' paused on one delete_file call (c1), after list_files (c2) ran."""
    log = [] if log is None else log
    model = model or ScriptedModel()
    model.enqueue([function_call("delete_file", {"path": "a.txt"}, call_id="c1"),
                   function_call("list_files", {"folder": "/"}, call_id="c2")])
    agent = make_agent(model, log)
    result = Runner.run_sync(agent, "tidy up", context=context, max_turns=max_turns)
    assert [i.call_id for i in result.interruptions] == ["c1"]
    return agent, result.to_state(), model, log


# --- The document -------------------------------------------------------------------------------------------


def test_to_json_is_a_dict_with_schema_version_6_and_to_string_is_its_json_text():
    _, state, _, _ = paused_state()
    data = state.to_json()
    assert isinstance(data, dict) and data["schema_version"] == 6 == SCHEMA_VERSION
    assert data["run_id"] == state.run_id and state.run_id.startswith("run_")
    assert json.loads(state.to_string()) == data


def test_a_version_1_document_gets_the_same_run_id_at_every_load_and_a_version_2_keeps_its_own():
    log, model = [], ScriptedModel()
    triage, _ = golden_agents(model, log)
    golden = json.loads(read_golden())
    first, again = RunState.from_json(triage, golden), RunState.from_json(triage, json.loads(read_golden()))
    assert first.run_id == again.run_id and first.run_id.startswith("v1_")
    assert RunState.from_json(triage, first.to_json()).run_id == first.run_id


def test_a_version_1_documents_run_id_is_derived_from_it_as_given_even_with_a_lone_surrogate():
    """The id the ledger's claims were made under before loading repaired a lone surrogate: deriving it from the
    repaired document gave another, and a resume claimed afresh what a resume of the same state had claimed."""
    triage, _ = golden_agents(ScriptedModel(), [])
    golden = json.loads(read_golden())
    golden["original_input"] = "Please tidy /tmp \ud800 and tell ops."
    assert RunState.from_json(triage, golden).run_id == "v1_997b6638c38e616960bed3ab"  # the id it always had

    inner = Agent("Inner", tools=[make_agent(ScriptedModel(), []).tools[0]],
                  model=ScriptedModel([[function_call("delete_file", {"path": "a"}, call_id="i1")]]))
    outer = Agent("Outer", tools=[inner.as_tool("inner", "Deletes.")],
                  model=ScriptedModel([[function_call("inner", {"input": "go \ud800"}, call_id="o1")]]))
    document = Runner.run_sync(outer, "go").to_state().to_json()
    nested = document["pending_turn"]["nested"]["o1"]
    document["schema_version"] = nested["schema_version"] = 1
    nested["original_input"] = "go \ud800"  # (run input is repaired as it enters today; a version 1 run kept it)
    alone = RunState.from_json(inner, nested).run_id
    assert RunState.from_json(outer, document).pending.nested["o1"].run_id == alone != RunState.from_json(
        inner, mutate(nested, ("original_input",), "go \ufffd")).run_id


def test_a_version_2_document_without_its_run_id_is_a_user_error():
    agent, state, _, _ = paused_state()
    data = state.to_json()
    del data["run_id"]
    with pytest.raises(UserError, match="run_id"):
        RunState.from_json(agent, data)


def test_to_json_returns_a_document_independent_of_the_state():
    _, state, _, _ = paused_state(context={"ids": [1]})
    before = state.to_string()
    data = state.to_json()
    data["pending_turn"]["output"][0]["arguments"] = "{}"
    data["model_responses"][0]["output"][0]["name"] = "other"
    data["generated_items"][0]["raw_item"]["name"] = "other"
    data["context"]["context"]["ids"].append(2)
    data["context"]["approvals"]["delete_file"] = {"approved": True, "rejected": []}
    assert state.to_string() == before


def test_every_released_schema_version_has_a_one_line_summary():
    assert SCHEMA_VERSION in SCHEMA_VERSIONS and max(SCHEMA_VERSIONS) == SCHEMA_VERSION
    for version, summary in SCHEMA_VERSIONS.items():
        assert isinstance(version, int) and isinstance(summary, str) and summary.strip() and "\n" not in summary


def test_the_porting_page_names_the_schema_version_written_today():
    with open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8") as page:
        named = re.findall(r"`schema_version` (\d+)", page.read())
    assert named == [str(SCHEMA_VERSION)]


def test_from_json_and_from_string_round_trip_the_document():
    agent, state, _, _ = paused_state(context={"user": "ann"})
    data = state.to_json()
    assert RunState.from_json(agent, data).to_json() == data
    assert RunState.from_string(agent, state.to_string()).to_json() == data


def test_loaded_state_holds_what_resuming_needs():
    agent, state, _, _ = paused_state(context={"user": "ann"}, max_turns=7)
    loaded = RunState.from_string(agent, state.to_string())
    assert loaded.current_agent is agent and loaded.starting_agent is agent
    assert loaded.current_turn == 1 and loaded.max_turns == 7
    assert loaded.original_input == "tidy up"
    assert [i.raw_item for i in loaded.generated_items] == [i.raw_item for i in state.generated_items]
    assert [(i.tool_name, i.call_id) for i in loaded.get_interruptions()] == [("delete_file", "c1")]
    assert loaded.context_wrapper.usage.requests == state.context_wrapper.usage.requests == 1


def test_max_turns_none_round_trips():
    agent, state, _, _ = paused_state(max_turns=None)
    assert state.to_json()["max_turns"] is None
    assert RunState.from_string(agent, state.to_string()).max_turns is None


def test_decisions_are_kept_in_the_document():
    agent, state, model, log = paused_state()
    [item] = state.get_interruptions()
    state.reject(item, rejection_message="keep it")
    loaded = RunState.from_string(agent, state.to_string())
    model.enqueue([assistant_message("ok")])
    Runner.run_sync(agent, loaded)
    assert outputs_sent(model.calls[1]) == {"c1": "keep it", "c2": "a.txt"}
    assert log == [("list_files", "/")]



def test_a_document_in_upstreams_forms_of_usage_details_and_undecided_approvals_loads_and_resumes():
    """Upstream writes usage details as one-element lists and a tool's undecided approvals as False."""
    agent, state, model, log = paused_state()
    document = state.to_json()
    document["context"]["usage"]["input_tokens_details"] = [{"cached_tokens": 7}]
    document["context"]["usage"]["output_tokens_details"] = [{"reasoning_tokens": 3}]
    document["context"]["approvals"] = {"delete_file": {"approved": False, "rejected": False}}
    loaded = RunState.from_json(agent, document)
    usage = loaded.context_wrapper.usage
    assert (usage.input_tokens_details.cached_tokens, usage.output_tokens_details.reasoning_tokens) == (7, 3)
    loaded.approve(loaded.get_interruptions()[0])
    model.enqueue([assistant_message("done")])
    assert Runner.run_sync(agent, loaded).final_output == "done"
    assert log == [("list_files", "/"), ("delete_file", "a.txt")]


MADE_BY_HAND = [([{"role": "user", "content": 7}], 10, r"^RunState's original_input\[0\] has content of type int"),
                ([7], 10, r"^RunState's original_input\[0\] is not an object \(got int\)"),
                (5, 10, "^RunState's original_input must be a string or a list of input items"),
                ({"role": "user", "content": "hi"}, 10, "^RunState's original_input must be a string or a list"),
                ("hi", "3", "^max_turns must be a whole number >= 0 or None, got '3'"),
                ("hi", float("nan"), "^max_turns must be a whole number >= 0 or None, got nan"),
                ("hi", -1, "^max_turns must be a whole number >= 0 or None, got -1")]


@pytest.mark.parametrize("original_input, max_turns, refused", MADE_BY_HAND)
def test_a_state_made_by_hand_is_refused_what_a_run_refuses_when_it_is_made(original_input, max_turns, refused):
    """Made by hand, such a state sent content 7 to the model, failed with a bare TypeError (max_turns "3" in the
    turn limit's check, input 5 in building the transcript), and wrote a document from_string refused."""
    model = ScriptedModel([[assistant_message("done")]])
    agent = make_agent(model, [])
    with pytest.raises(UserError, match=refused):
        RunState(None, original_input, agent, max_turns)
    with pytest.raises(UserError):  # as Runner.run_sync refuses the same arguments
        Runner.run_sync(agent, original_input, max_turns=max_turns)
    with pytest.raises(UserError, match="^RunState's starting_agent must be an Agent, got str$"):
        RunState(None, "hi", "Janitor")
    assert not model.calls


def test_a_state_made_by_hand_runs_as_its_input_given_to_a_run_would():
    """Its input items are a copy of its own, checked and kept as given; an orphan output is left out of what the
    model is sent (as the run's own input drops it)."""
    model = ScriptedModel([[assistant_message("done")]] * 2)
    agent = make_agent(model, [])
    items = [{"role": "user", "content": "tidy up"}, {"type": "function_call_output", "call_id": "x", "output": "?"}]
    state = RunState(None, items, agent, None)
    items[0]["content"] = "changed"
    assert Runner.run_sync(agent, state).final_output == "done"
    assert model.calls[0].input == [{"role": "user", "content": "tidy up"}] and state.max_turns is None
    assert RunState.from_string(agent, state.to_string()).original_input == state.original_input != items


@pytest.mark.parametrize("bad", [{"role": "user", "content": "and hurry"}, ("and hurry",), None, ["and hurry"], [5],
                                 [None], [("role", "user")]])
def test_add_input_of_neither_text_nor_a_list_of_items_is_a_user_error_and_adds_nothing(bad):
    """A list holding something other than items (dicts) was the bare ValueError or TypeError of making it dicts."""
    _, state, _, _ = paused_state()
    wrong = rf"^add_input takes a string or a list of input items \(dicts\), got {type(bad).__name__}: "
    with pytest.raises(UserError, match=wrong):
        state.add_input(bad)
    assert state.pending_input == []

def test_add_input_to_a_state_with_no_model_turn_left_is_a_user_error_and_adds_nothing():
    _, state, _, _ = paused_state(max_turns=1)
    with pytest.raises(UserError, match="^Cannot add input to a RunState with no remaining model turns$"):
        state.add_input("and hurry")
    assert state.pending_input == []


@pytest.mark.parametrize("kind", ["nested", "holds itself", "read-only", "refuses copies"])
def test_add_input_the_run_cannot_copy_is_a_user_error_and_adds_nothing(kind):
    """add_input takes what a run's input takes, copied the same way: an item nested deeper than Python copies, or
    holding itself, was json's bare RecursionError or ValueError."""
    _, state, _, _ = paused_state()
    with pytest.raises(UserError, match=r"^add_input's input holds an item (nested deeper|the run cannot copy)"):
        state.add_input([cannot_be_copied(kind)])
    assert state.pending_input == []


def test_add_input_keeps_a_value_json_cannot_hold_as_a_runs_input_does_and_writing_the_state_names_it():
    """A datetime in an added item was json's bare TypeError; as in a run's input, it is kept (a custom model may
    read it) and refused, named, where the state is written."""
    _, state, _, _ = paused_state()
    state.add_input([{"role": "user", "content": "by then", "when": datetime.date(2026, 12, 7)}])
    with pytest.raises(UserError, match=r"cannot be written as JSON.*pending_input\[0\]\['when'\]"):
        state.to_string()


# --- The context ---------------------------------------------------------------------------------------------


def test_json_serialisable_context_is_kept():
    context = {"user": "ann", "ids": [1, 2], "flags": {"dry": True}, "score": 0.5, "none": None}
    agent, state, _, _ = paused_state(context=context)
    loaded = RunState.from_string(agent, state.to_string())
    assert loaded.context_wrapper.context == context


def test_non_serialisable_context_is_a_user_error_naming_the_key():
    conn = sqlite3.connect(":memory:")
    try:
        _, state, _, _ = paused_state(context={"user": "ann", "conn": conn})
        with pytest.raises(UserError, match=r"context\['conn'\]"):
            state.to_json()
        with pytest.raises(UserError, match=r"context\['conn'\]"):
            state.to_string()
    finally:
        conn.close()


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_context_number_json_cannot_hold_is_a_user_error_naming_its_path_not_written_as_nan(number):
    """Python's json writes NaN and Infinity, which strict JSON parsers refuse: refused with its path instead."""
    _, state, _, _ = paused_state(context={"user": "ann", "scores": [1.5, number]})
    with pytest.raises(UserError, match=r"context\['scores'\]\[1\].*no such number"):
        state.to_string()
    with pytest.raises(UserError, match=r"context\['scores'\]\[1\]"):
        state.to_json()


JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5),
                        st.floats(allow_nan=False, allow_infinity=False))
NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])


def plant(tree, number, draw_path):
    """`tree` (JSON data) with `number` put at a place `draw_path` picks among its containers."""
    places = []

    def walk(node):
        if isinstance(node, (dict, list)):
            places.append(node)
            for inner in (node.values() if isinstance(node, dict) else node):
                walk(inner)
    walk(tree)
    where = places[draw_path(len(places))]
    if isinstance(where, dict):
        where["planted"] = number
    else:
        where.append(number)
    return tree


@settings(max_examples=40, deadline=None)
@given(context=st.recursive(st.dictionaries(st.text(max_size=3), JSON_LEAVES, max_size=3),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                            max_leaves=8),
       number=NON_FINITE, place=st.data(), where=st.sampled_from(["context", "raw_item", "custom_output"]))
def test_a_number_json_cannot_hold_anywhere_in_a_document_is_refused_at_load(context, number, place, where):
    """NaN or an infinity anywhere (the user's context at any depth, an item) is refused at load with the typed
    `UserError` the typed fields' NaNs get, naming its path, before the state can run and then never save again
    (issue 30)."""
    agent, state, _, _ = paused_state(context={"user": "ann"})
    document = state.to_json()
    pick = lambda n: place.draw(st.integers(0, n - 1))  # noqa: E731
    if where == "context":
        document["context"]["context"] = plant({"user": context}, number, pick)
    else:
        document["generated_items"][0]["raw_item"]["extra"] = plant([context], number, pick)
    text = json.dumps(document)  # Python's json writes NaN and Infinity; strict parsers refuse them
    with pytest.raises(UserError, match="no such number") as refused:
        RunState.from_string(agent, text)
    assert refused.value.message.startswith("malformed run state: ")
    with pytest.raises(UserError, match="no such number"):
        RunState.from_json(agent, document)


def test_a_nested_non_serialisable_value_is_named_by_its_path():
    _, state, _, _ = paused_state(context={"deps": {"clients": [1, object()]}})
    with pytest.raises(UserError, match=r"context\['deps'\]\['clients'\]\[1\]"):
        state.to_json()


def test_an_object_context_is_not_silently_stringified():
    class Deps:
        pass

    _, state, _, _ = paused_state(context=Deps())
    with pytest.raises(UserError, match="context"):
        state.to_string()


class Account:
    def __init__(self, owner, balance):
        self.owner, self.balance = owner, balance


def test_context_serializer_and_deserializer_pair():
    agent, state, model, log = paused_state(context=Account("ann", 10))
    text = state.to_string(context_serializer=lambda a: {"owner": a.owner, "balance": a.balance})
    assert json.loads(text)["context"]["context"] == {"owner": "ann", "balance": 10}
    loaded = RunState.from_string(agent, text, context_deserializer=lambda d: Account(d["owner"], d["balance"]))
    account = loaded.context_wrapper.context
    assert isinstance(account, Account) and (account.owner, account.balance) == ("ann", 10)


def test_context_override_replaces_the_stored_context():
    agent, state, model, log = paused_state(context={"user": "ann"})
    live = Account("bob", 3)
    loaded = RunState.from_string(agent, state.to_string(), context_override=live)
    assert loaded.context_wrapper.context is live


def test_the_restored_context_reaches_tools_on_resume():
    seen, model = [], ScriptedModel()

    @function_tool(needs_approval=True)
    def whoami(ctx: RunContextWrapper) -> str:
        """Who is asking."""
        seen.append(ctx.context.owner)
        return ctx.context.owner

    agent = Agent("A", tools=[whoami], model=model)
    model.enqueue([function_call("whoami", {}, call_id="c1")])
    state = Runner.run_sync(agent, "who", context=Account("ann", 1)).to_state()
    text = state.to_string(context_serializer=lambda a: {"owner": a.owner, "balance": a.balance})
    loaded = RunState.from_string(agent, text, context_deserializer=lambda d: Account(d["owner"], d["balance"]))
    loaded.approve(loaded.get_interruptions()[0])
    model.enqueue([assistant_message("done")])
    Runner.run_sync(agent, loaded)
    assert seen == ["ann"]


# --- Binding agents by name -----------------------------------------------------------------------------------


def test_two_agents_with_the_same_name_in_the_graph_is_a_user_error_at_load():
    agent, state, _, _ = paused_state()
    twin = Agent("Janitor")
    graph = agent.clone(handoffs=[Agent("Helper", handoffs=[twin])])
    with pytest.raises(UserError, match="Janitor"):
        RunState.from_string(graph, state.to_string())


@pytest.mark.parametrize("given", [None, "Janitor", "an agent tool"])
def test_loading_against_anything_but_an_agent_is_a_user_error_naming_what_was_given(given):
    """It was a bare AttributeError from walking the agent graph ('NoneType' object has no attribute 'handoffs')."""
    agent, state, _, _ = paused_state()
    given = agent.as_tool("janitor", "Tidies.") if given == "an agent tool" else given
    for load, document in ((RunState.from_json, state.to_json()), (RunState.from_string, state.to_string())):
        with pytest.raises(UserError, match=f"take the run's starting agent, an Agent, got {type(given).__name__}$"):
            load(given, document)


def test_from_json_given_text_says_it_takes_a_dict_and_from_string_reads_text():
    """Given to_string's text, from_json said the state was "missing schema version"."""
    agent, state, _, _ = paused_state()
    for given in (state.to_string(), state.to_string().encode(), [state.to_json()]):
        with pytest.raises(UserError, match=f"from_json takes to_json's dict, got {type(given).__name__}: for "
                                            "to_string's text use RunState.from_string$"):
            RunState.from_json(agent, given)
    with pytest.raises(UserError, match="missing schema version"):  # from_string's own text, a JSON array
        RunState.from_string(agent, "[]")


def test_unknown_current_agent_is_a_user_error():
    agent, state, _, _ = paused_state()
    data = state.to_json()
    data["current_agent"] = "Ghost"
    with pytest.raises(UserError, match="Ghost"):
        RunState.from_json(agent, data)


def test_agents_are_found_through_handoffs_and_agent_tools():
    log, model = [], ScriptedModel()
    worker = make_agent(model, log, name="Worker")
    triage = Agent("Triage", handoffs=[worker], tools=[Agent("Critic").as_tool("critic", "Critiques.")],
                   model=model)
    model.enqueue([function_call("transfer_to_worker", {}, call_id="h1")])
    model.enqueue([function_call("delete_file", {"path": "a.txt"}, call_id="c1")])
    result = Runner.run_sync(triage, "go")
    loaded = RunState.from_string(triage, result.to_state().to_string())
    assert loaded.current_agent is worker and loaded.starting_agent is triage
    loaded.approve(loaded.get_interruptions()[0])
    model.enqueue([assistant_message("done")])
    final = Runner.run_sync(triage, loaded)
    assert final.final_output == "done" and final.last_agent is worker and log == [("delete_file", "a.txt")]


def test_an_agent_behind_a_hand_built_handoff_missing_from_a_state_is_a_user_error_saying_what_to_do():
    """A `Handoff` made by hand holds only its function, which gives its agent when called: a state paused after
    it names an agent `from_string` cannot find from the starting agent; the error says to use `handoff(agent)`."""
    model = ScriptedModel()
    worker = make_agent(model, [], name="Worker")
    by_hand = Handoff(tool_name="transfer_to_worker", tool_description="To the worker", input_json_schema={},
                      on_invoke_handoff=lambda ctx, arguments: worker, agent_name="Worker")
    triage = Agent("Triage", handoffs=[by_hand], model=model)
    model.enqueue([function_call("transfer_to_worker", {}, call_id="h1")])
    model.enqueue([function_call("delete_file", {"path": "a.txt"}, call_id="c1")])
    text = Runner.run_sync(triage, "go").to_state().to_string()
    with pytest.raises(UserError, match=r"agent map: 'Worker'; pass .*: use handoff\(agent\)\)$"):
        RunState.from_string(triage, text)
    fixed = triage.clone(handoffs=[handoff(worker, tool_name_override="transfer_to_worker")])
    assert RunState.from_string(fixed, text).current_agent is worker


# --- Rejecting documents before anything runs ------------------------------------------------------------------


def test_a_newer_schema_version_is_a_user_error_and_nothing_runs():
    agent, state, model, log = paused_state()
    [item] = state.get_interruptions()
    state.approve(item)
    data = state.to_json()
    data["schema_version"] = SCHEMA_VERSION + 1
    model.enqueue([assistant_message("must not be used")])
    with pytest.raises(UserError, match=str(SCHEMA_VERSION + 1)):
        Runner.run_sync(agent, RunState.from_string(agent, json.dumps(data)))
    assert log == [("list_files", "/")]  # only what ran before the pause
    assert len(model.calls) == 1 and model.remaining_steps == 1


def test_truncated_json_is_a_user_error_saying_it_failed_to_parse():
    agent, state, _, _ = paused_state()
    text = state.to_string()
    with pytest.raises(UserError, match="^Failed to parse run state JSON"):
        RunState.from_string(agent, text[: len(text) // 2])


def mutate(data, path, value=KeyError):
    """A deep copy of `data` with the value at `path` replaced (or deleted when `value` is KeyError)."""
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


# (path, new value or KeyError to delete, text the message must contain)
BROKEN = [
    (("schema_version",), KeyError, "schema_version"),
    (("schema_version",), "1", "schema_version"),
    (("schema_version",), True, "schema_version"),
    (("schema_version",), 0, "0"),
    (("schema_version",), 99, "99"),
    (("generated_items",), "oops", "generated_items"),
    (("generated_items",), KeyError, "generated_items"),
    (("generated_items", 0, "raw_item"), KeyError, "raw_item"),
    (("generated_items", 0, "raw_item"), [], "raw_item"),
    (("generated_items", 0, "type"), "bogus_item", "bogus_item"),
    (("generated_items", 0, "agent"), "Ghost", "Ghost"),
    (("current_turn",), "1", "current_turn"),
    (("current_turn",), None, "current_turn"),
    (("max_turns",), "10", "max_turns"),
    (("current_agent",), 7, "current_agent"),
    (("starting_agent",), KeyError, "starting_agent"),
    (("original_input",), 5, "original_input"),
    (("model_responses",), {}, "model_responses"),
    (("model_responses", 0, "output"), KeyError, "output"),
    (("model_responses", 0), "x", "model_responses"),
    (("context",), KeyError, "context"),
    (("context",), None, "context"),
    (("context", "approvals"), [], "approvals"),
    (("context", "usage"), KeyError, "usage"),
    (("pending_turn",), "x", "pending_turn"),
    (("pending_turn", "start"), 99, "start"),
    (("pending_turn", "start"), "2", "start"),
    (("pending_turn", "done"), [], "done"),
    (("pending_turn", "output"), KeyError, "output"),
    (("pending_turn", "agent"), "Ghost", "Ghost"),
    (("pending_turn", "nested"), {"c2": {}}, "c2"),
    (("agents_that_used_tools",), "Janitor", "agents_that_used_tools"),
    (("unsaved_session_input",), KeyError, "unsaved_session_input"),
]


@pytest.mark.parametrize("path, value, named", BROKEN,
                         ids=[".".join(map(str, p)) + ("-deleted" if v is KeyError else f"={v!r}")
                              for p, v, _ in BROKEN])
def test_a_missing_or_mistyped_field_is_a_user_error_naming_it(path, value, named):
    agent, state, model, log = paused_state()
    data = mutate(state.to_json(), path, value)
    with pytest.raises(UserError) as caught:
        RunState.from_json(agent, data)
    assert named in str(caught.value)


def test_a_document_that_is_not_an_object_is_a_user_error():
    agent, _, _, _ = paused_state()
    for text in ("[]", "1", '"state"', "null"):
        with pytest.raises(UserError):
            RunState.from_string(agent, text)


# Mistyped values deeper in the document: each is a UserError at load, not a crash (at load or on resume).
NESTED = [
    pytest.param(("model_responses", 0, "usage"), "x", "usage", id="model_responses.0.usage='x'"),
    pytest.param(("context", "usage", "input_tokens"), "many", "input_tokens",
                 id="context.usage.input_tokens='many'"),
    pytest.param(("original_input",), [1], "original_input", id="original_input=[1]"),
    pytest.param(("agents_that_used_tools",), [[1]], "agents_that_used_tools", id="agents_that_used_tools=[[1]]"),
    pytest.param(("max_turns",), True, "max_turns", id="max_turns=True"),
    pytest.param(("pending_turn", "output"), ["oops"], "output", id="pending_turn.output=['oops']"),
    pytest.param(("context", "approvals"), {"delete_file": []}, "approvals", id="context.approvals.delete_file=[]"),
    pytest.param(("model_responses", 0, "usage", "input_tokens_details", "cached_tokens"), [None], "cached_tokens",
                 id="model_responses.0.usage.input_tokens_details.cached_tokens=[None]"),
    pytest.param(("context", "usage", "input_tokens_details"), [None], "input_tokens_details",
                 id="context.usage.input_tokens_details=[None]"),
    pytest.param(("pending_turn", "output", 0, "call_id"), [1], "call_id", id="pending_turn.output.0.call_id=[1]"),
    pytest.param(("pending_turn", "done", "c2"), [1, 2, None], "pending_turn.done['c2'] has output[0] = 1",
                 id="pending_turn.done.c2=[1, 2, None]"),  # it was sent to the model as the call's output
]


@pytest.mark.parametrize("path, value, named", NESTED)
def test_a_mistyped_nested_field_is_a_user_error_before_anything_runs(path, value, named):
    agent, state, model, log = paused_state()
    data = mutate(state.to_json(), path, value)
    model.enqueue([assistant_message("done")])
    with pytest.raises(UserError) as caught:
        loaded = RunState.from_json(agent, data)
        for item in loaded.get_interruptions():
            loaded.approve(item)
        Runner.run_sync(agent, loaded)
    assert named in str(caught.value)
    assert log == [("list_files", "/")] and len(model.calls) == 1


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 300) | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                       max_size=3),
                           max_leaves=6)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, prefix + (index,))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate], report_multiple_bugs=False)  # no slow shrinking
@given(data=st.data())
def test_any_corrupted_field_is_a_user_error_or_loads_and_resumes_without_a_crash(data):
    agent, state, model, log = paused_state()
    document = json.loads(state.to_string())  # the stored form: no dict shared between two places
    paths = [p for p in _paths(document) if p]
    path = data.draw(st.sampled_from(paths), label="path")
    value = data.draw(st.just(KeyError) | JSON_VALUES, label="value")
    broken = mutate(document, path, value)
    model.enqueue([assistant_message("done")])
    try:
        loaded = RunState.from_json(agent, broken)
    except UserError:
        return
    for item in loaded.get_interruptions():
        loaded.approve(item)
    try:
        Runner.run_sync(agent, loaded)
    except AgentsException:  # e.g. MaxTurnsExceeded after a changed max_turns: a run's own typed errors
        pass


# --- The golden version-1 document ------------------------------------------------------------------------------


def golden_agents(model, log):
    """The agents tests/golden/make_run_state_golden.py ran, defined again here on purpose."""
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(("delete_file", path))
        return f"deleted {path}"

    @function_tool(needs_approval=True)
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        log.append(("send_email", to))
        return f"sent to {to}"

    @function_tool
    def list_files(folder: str) -> list:
        """List a folder."""
        log.append(("list_files", folder))
        return ["report.txt", "old.log"]

    worker = Agent("Worker", instructions="Do the work.", tools=[delete_file, send_email, list_files], model=model)
    triage = Agent("Triage", instructions="Route the request.", handoffs=[worker], model=model)
    return triage, worker


def read_golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return f.read()


def test_golden_v1_document_loads_with_its_pending_approvals_and_context():
    log, model = [], ScriptedModel()
    triage, worker = golden_agents(model, log)
    state = RunState.from_string(triage, read_golden())
    assert state.current_agent is worker and state.starting_agent is triage
    assert state.current_turn == 2 and state.max_turns == 8
    assert [(i.tool_name, i.call_id, i.parsed_arguments) for i in state.get_interruptions()] == [
        ("delete_file", "call_delete", {"path": "/tmp/old.log"}),
        ("send_email", "call_email", {"to": "ops@example.com", "body": "Cleaned /tmp"})]
    assert state.context_wrapper.context == {"user": "ann", "ticket": 42}
    usage = state.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2, 240, 60, 300)
    assert (usage.input_tokens_details.cached_tokens, usage.output_tokens_details.reasoning_tokens) == (40, 10)
    assert log == [] and model.calls == ()


def test_golden_v1_document_resumes_to_the_expected_final_output():
    log, model = [], ScriptedModel([[assistant_message("Cleaned up and told ops.")]])
    triage, worker = golden_agents(model, log)
    state = RunState.from_string(triage, read_golden())
    delete, email = state.get_interruptions()
    state.approve(delete)
    state.reject(email, rejection_message="No email today.")
    result = Runner.run_sync(triage, state)
    assert result.final_output == "Cleaned up and told ops."
    assert result.last_agent is worker
    assert log == [("delete_file", "/tmp/old.log")]  # list_files ran before the pause, not again
    assert len(model.calls) == 1
    sent = model.calls[0]
    assert sent.system_instructions == "Do the work."
    expected = [
        {"content": "Please tidy /tmp and tell ops.", "role": "user"},
        ("function_call", "call_handoff"), ("function_call_output", "call_handoff"),
        ("reasoning", None), ("message", None),
        ("function_call", "call_list"), ("function_call", "call_delete"), ("function_call", "call_email"),
        ("function_call_output", "call_list"), ("function_call_output", "call_delete"),
        ("function_call_output", "call_email"),
    ]
    assert dict(sent.input[0]) == expected[0]
    assert [(i.get("type"), i.get("call_id")) for i in sent.input[1:]] == expected[1:]
    assert outputs_sent(sent) == {"call_handoff": '{"assistant": "Worker"}',
                                  "call_list": '["report.txt", "old.log"]',
                                  "call_delete": "deleted /tmp/old.log", "call_email": "No email today."}


def test_golden_v1_document_is_written_back_unchanged_while_v1_is_current():
    log, model = [], ScriptedModel()
    triage, _ = golden_agents(model, log)
    golden = json.loads(read_golden())
    written = RunState.from_json(triage, golden).to_json()
    if SCHEMA_VERSION == 1:
        assert written == golden
    else:  # a later version rewrites old documents at its own version, keeping what they held
        assert written["generated_items"] == golden["generated_items"]


# --- Round trip property -------------------------------------------------------------------------------------------

DECISIONS = ["approve", "reject", "reject_with_message", "always_approve", "always_reject"]
CALLS = st.tuples(st.sampled_from(["add", "danger", "maybe"]), st.integers(0, 9), st.sampled_from(DECISIONS))
TURNS = st.lists(st.fixed_dictionaries({"calls": st.lists(CALLS, max_size=3), "message": st.booleans(),
                                        "reasoning": st.booleans(), "handoff": st.booleans()}),
                 min_size=1, max_size=4)


def property_agents(model, log):
    @function_tool
    def add(x: int) -> int:
        """Add one."""
        log.append(("add", x))
        return x + 1

    @function_tool(needs_approval=True)
    def danger(x: int) -> str:
        """Always asks."""
        log.append(("danger", x))
        return f"danger {x}"

    @function_tool(needs_approval=lambda ctx, params, call_id: params["x"] % 2 == 0)
    def maybe(x: int) -> dict:
        """Asks for even x."""
        log.append(("maybe", x))
        return {"x": x, "context": ctx_marker}

    ctx_marker = "m"
    tools = [add, danger, maybe]
    main = Agent("Main", instructions="main", tools=tools, handoffs=[], model=model)
    helper = Agent("Helper", instructions="helper", tools=tools, handoffs=[main], model=model)
    main.handoffs.append(helper)
    return main


def build_script(turns):
    """Scripted responses for `turns`, then a final message; and the decision for every call id."""
    script, decisions, current = [], {}, "Main"
    for t, turn in enumerate(turns):
        output = []
        if turn["reasoning"]:
            output.append({"type": "reasoning", "id": f"rs_{t}", "summary": []})
        if turn["message"]:
            output.append(assistant_message(f"step {t}", item_id=f"msg_{t}"))
        for i, (name, x, decision) in enumerate(turn["calls"]):
            call_id = f"t{t}c{i}"
            output.append(function_call(name, {"x": x}, call_id=call_id))
            decisions[call_id] = decision
        if turn["handoff"] or not turn["calls"]:  # a turn without calls must not end the run: hand off
            current = "Helper" if current == "Main" else "Main"
            output.append(function_call(f"transfer_to_{current.lower()}", {}, call_id=f"t{t}h"))
        script.append(output)
    script.append([assistant_message("final", item_id="msg_final")])
    return script, decisions


def decide(state, items, decisions):
    for item in items:
        decision = decisions[item.call_id]
        if decision == "approve":
            state.approve(item)
        elif decision == "always_approve":
            state.approve(item, always_approve=True)
        elif decision == "reject":
            state.reject(item)
        elif decision == "always_reject":
            state.reject(item, always_reject=True)
        else:
            state.reject(item, rejection_message=f"no to {item.call_id}")


def snapshot(result):
    return {"final_output": result.final_output, "last_agent": result.last_agent.name,
            "new_items": [(i.type, dict(i.raw_item)) for i in result.new_items],
            "interruptions": [i.call_id for i in result.interruptions]}


def drive(turns, round_trip, decide_after_load):
    """Run the script to its end, deciding every pause; with `round_trip`, every paused state is replaced by
    `from_string(to_string(state))` (decided before or after the trip)."""
    log = []
    script, decisions = build_script(turns)
    model = ScriptedModel(script)
    main = property_agents(model, log)
    result = Runner.run_sync(main, "start", context={"k": [1, 2]}, max_turns=len(script) + 1)
    segments = [snapshot(result)]
    for _ in range(len(script) + 2):
        if not result.interruptions:
            break
        state = result.to_state()
        if not round_trip:
            decide(state, result.interruptions, decisions)
        elif decide_after_load:
            state = RunState.from_string(main, state.to_string())
            decide(state, state.get_interruptions(), decisions)
        else:
            decide(state, result.interruptions, decisions)
            state = RunState.from_string(main, state.to_string())
        result = Runner.run_sync(main, state)
        segments.append(snapshot(result))
    inputs = [[dict(i) for i in call.input] for call in model.calls]
    return segments, Counter(log), inputs, model.remaining_steps


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=TURNS, decide_after_load=st.booleans())
def test_from_string_of_to_string_resumes_identically(turns, decide_after_load):
    plain = drive(turns, round_trip=False, decide_after_load=False)
    tripped = drive(turns, round_trip=True, decide_after_load=decide_after_load)
    assert plain[0][-1]["final_output"] == "final" and plain[3] == 0  # the generated run reached its end
    assert tripped[0] == plain[0]  # final output, new items (raw), interruptions, at every pause and the end
    assert tripped[2] == plain[2]  # what the model received, on every call
    assert tripped[1] == plain[1]  # which tools ran, how often


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=TURNS)
def test_a_loaded_state_writes_back_the_same_document(turns):
    log = []
    script, decisions = build_script(turns)
    model = ScriptedModel(script)
    main = property_agents(model, log)
    result = Runner.run_sync(main, "start", context={"k": [1, 2]}, max_turns=len(script) + 1)
    for _ in range(len(script) + 2):
        if not result.interruptions:
            break
        state = result.to_state()
        decide(state, result.interruptions[:1], decisions)  # a partly decided state, too
        text = state.to_string()
        assert RunState.from_string(main, text).to_string() == text
        decide(state, result.interruptions, decisions)
        result = Runner.run_sync(main, state)


def paused_documents(turns):
    """(agent, document) at every pause of the generated run, each pause decided as the script says and resumed."""
    script, decisions = build_script(turns)
    main = property_agents(ScriptedModel(script), [])
    result = Runner.run_sync(main, "start", context={"k": [1, 2]}, max_turns=len(script) + 1)
    while result.interruptions:
        state = result.to_state()
        yield main, state.to_json()
        decide(state, result.interruptions, decisions)
        result = Runner.run_sync(main, state)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=TURNS, data=st.data())
def test_a_paused_turn_that_disagrees_with_itself_or_the_runs_items_is_refused_at_load(turns, data):
    """Loaded, a call id twice in the paused turn ran an approved call twice and sent the model both calls; a
    pending_turn.start moved gave the transcript items twice; a paused turn that is not current_agent's ran its
    calls with that agent's tools."""
    for main, document in paused_documents(turns):
        RunState.from_json(main, document)  # as written, it loads
        output, start = document["pending_turn"]["output"], document["pending_turn"]["start"]
        call = data.draw(st.sampled_from([i for i in output if i["type"] == "function_call"]), label="call")
        twice = mutate(document, ("pending_turn", "output"), output + [call])
        to = data.draw(st.sampled_from([start - 2, start - 1, start + 1, len(document["generated_items"])]), label="to")
        moved = mutate(document, ("pending_turn", "start"), to)  # (at the end: as a turn journaled before its items)
        other = mutate(document, ("current_agent",), "Helper" if document["current_agent"] == "Main" else "Main")
        for edited in (twice, moved, other):
            with pytest.raises(UserError, match="^malformed run state: "):
                RunState.from_json(main, edited)


COUNTS = [("current_turn",), ("max_turns",), ("server_known",), ("pending_turn", "start"), ("pending_turn", "replays"),
          ("pending_turn", "pauses"), ("context", "usage", "requests"), ("context", "usage", "tool_calls"),
          ("context", "usage", "input_tokens"), ("context", "usage", "output_tokens_details", "reasoning_tokens")]


@settings(max_examples=40, deadline=None)
@given(path=st.sampled_from(COUNTS), value=st.integers(max_value=-1))
def test_a_count_turn_or_index_below_zero_is_refused_at_load(path, value):
    """Each counts up from 0: one below loosened a limit (usage.requests -100 allowed 100 more model requests under
    request_limit, current_turn -50 50 more turns under max_turns)."""
    agent, state, _, _ = paused_state()
    document = state.to_json()
    with pytest.raises(UserError, match="^malformed run state: " + re.escape(".".join(map(str, path))).replace(
            r"\.0\.", r"\[0\]\.") + " is below 0$"):
        RunState.from_json(agent, mutate(document, path, value))
    if path[-1] != "start":  # (the paused turn's start is where its items begin)
        RunState.from_json(agent, mutate(document, path, 0))  # 0 is a count


LARGE = [("current_turn",), ("server_known",), ("pending_turn", "replays"), ("pending_turn", "pauses"),
         ("context", "usage", "requests"), ("context", "usage", "output_tokens_details", "reasoning_tokens"),
         ("model_responses", 0, "usage", "input_tokens")]


@pytest.mark.parametrize("path", LARGE)
def test_a_count_past_any_a_run_makes_is_refused_at_load(path):
    """current_turn int("9" * 4300) loaded, and the loop's next turn (one digit more) could not be written as text:
    to_string() failed with a bare ValueError, a run with a session inside the ledger's claim of the turn."""
    agent, state, _, _ = paused_state()
    document = state.to_json()
    where = re.escape(".".join(map(str, path))).replace(r"\.0\.", r"\[0\]\.")
    for value in (10 ** 400, int("9" * 4300)):
        with pytest.raises(UserError, match=f"^malformed run state: {where} is 10\\*\\*400 or more"):
            RunState.from_json(agent, mutate(document, path, value))
    if path[0] == "model_responses":  # a model's count is one a float holds (ModelResponse's rule, loaded or not)
        with pytest.raises(UserError, match="^ModelResponse.usage reports a token count past a float's largest"):
            RunState.from_json(agent, mutate(document, path, 10 ** 400 - 1))
        RunState.from_json(agent, mutate(document, path, 10 ** 308))
    else:
        RunState.from_json(agent, mutate(document, path, 10 ** 400 - 1))


def test_a_max_turns_of_any_whole_number_round_trips():
    """max_turns is the caller's limit, never counted on: any whole number a run takes is written and loads."""
    agent, state, _, _ = paused_state(max_turns=10 ** 500)
    assert RunState.from_string(agent, state.to_string()).max_turns == 10 ** 500


@pytest.mark.parametrize("key", ["output_tokens", "total_tokens", "requests"])
def test_a_model_responses_usage_below_zero_as_the_provider_reported_it_loads(key):
    """A provider's -1 is kept in model_responses (the run's usage counted it as 0) and is read for no limit: the
    paused state it is in loads and resumes."""
    from miniagents import ModelResponse, Usage

    model = ScriptedModel([ModelResponse(output=[function_call("delete_file", {"path": "a.txt"}, call_id="c1")],
                                         usage=Usage(**{key: -1}), response_id="r1"), [assistant_message("done")]])
    agent = make_agent(model, [])
    state = Runner.run_sync(agent, "tidy up").to_state()
    assert state.context_wrapper.usage.output_tokens == 0 and state.to_json()["model_responses"][0]["usage"][key] == -1
    loaded = RunState.from_string(agent, state.to_string())
    loaded.approve(loaded.get_interruptions()[0])
    assert Runner.run_sync(agent, loaded).final_output == "done"


IGNORED_ITEMS = [{"type": "custom_tool_call", "id": "ct1", "call_id": "ct1", "name": "foo", "input": "x"},
                 {"type": "local_shell_call", "id": "ls1", "call_id": "ls1", "status": "completed",
                  "action": {"type": "exec", "command": ["ls"], "env": {}}},
                 {"type": "computer_call", "id": "cu1", "call_id": "cu1", "action": {"type": "screenshot"}}]


@pytest.mark.parametrize("ignored", IGNORED_ITEMS)
def test_a_paused_response_holding_an_item_the_loop_skips_loads_and_resumes(ignored):
    """turn.classify warns about an output item of a type it does not read and skips it: the paused turn's items
    are the others, and the document the run wrote loads (it was refused as unknown, or as a turn disagreeing
    with its items)."""
    log = []
    model = ScriptedModel([[ignored, function_call("delete_file", {"path": "a.txt"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = make_agent(model, log)
    state = Runner.run_sync(agent, "tidy up").to_state()
    loaded = RunState.from_string(agent, state.to_string())
    assert loaded.to_json() == state.to_json()
    loaded.approve(loaded.get_interruptions()[0])
    assert Runner.run_sync(agent, loaded).final_output == "done" and log == [("delete_file", "a.txt")]


def test_an_item_whose_type_is_not_a_string_in_a_paused_response_is_still_refused():
    agent, state, _, _ = paused_state()
    document = state.to_json()
    document["pending_turn"]["output"].insert(0, {"type": ["custom_tool_call"]})
    with pytest.raises(UserError, match=re.escape("pending_turn.output[0] has a 'type' that is not a string")):
        RunState.from_json(agent, document)


WEB_SEARCH = {"type": "web_search_call", "id": "ws1", "status": "completed", "action": {"type": "search", "query": "q"}}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_version_1_or_2_paused_turn_without_the_hosted_tool_items_that_code_skipped_loads_and_resumes(version):
    """Versions 1 and 2 were written by code that skipped a hosted tool's output item (web_search_call) as it
    skips an unknown type today, or by code that kept it: both load. From version 3 on it is always kept."""
    log = []
    model = ScriptedModel([[WEB_SEARCH, function_call("delete_file", {"path": "a.txt"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = make_agent(model, log)
    document = Runner.run_sync(agent, "tidy up").to_state().to_json()
    start = document["pending_turn"]["start"]
    assert document["generated_items"][start]["raw_item"] == WEB_SEARCH
    RunState.from_json(agent, mutate(document, ("schema_version",), version))  # written by code that kept it
    skipped = mutate(document, ("schema_version",), version)
    del skipped["generated_items"][start]  # written by code that skipped it
    if version >= 3:
        with pytest.raises(UserError, match="not the paused turn's items"):
            RunState.from_json(agent, skipped)
        return
    loaded = RunState.from_json(agent, skipped)
    loaded = RunState.from_string(agent, loaded.to_string())  # written again as today's version, it loads
    loaded.approve(loaded.get_interruptions()[0])
    assert Runner.run_sync(agent, loaded).final_output == "done" and log == [("delete_file", "a.txt")]


def agent_tool_paused(ran):
    """An agent 'Boss' paused inside its agent tool: Sub's inner_delete call d1 waits for a person."""
    @function_tool(needs_approval=True)
    def inner_delete(path: str) -> str:
        """Delete."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel([[function_call("ask_sub", {"input": "go"}, call_id="s1")],
                           [function_call("inner_delete", {"path": "/a"}, call_id="d1")]])
    boss = Agent("Boss", model=model, tools=[Agent("Sub", model=model, tools=[inner_delete]).as_tool("ask_sub", "")])
    return boss, model, Runner.run_sync(boss, "hi").to_state().to_json()


def as_written_before_approval_scopes(document, version):
    """The document as version 1 or 2 code wrote it: no approval_scope, none of versions 3-6's fields."""
    document = copy.deepcopy(document)
    for doc in (document, *document["pending_turn"]["nested"].values()):
        doc["schema_version"] = version
        for key in ("pending_input", "finished", "server_known") + (("run_id",) if version == 1 else ()):
            del doc[key]
        for item in doc["generated_items"]:
            item.pop("approval_scope", None)
        for key in ("pauses", "unsure"):
            del doc["pending_turn"][key]
    return document


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("decided", ["on the loaded state", "approved in the document", "rejected in the document"])
def test_a_version_1_or_2_decision_about_an_agent_tools_inner_call_is_found_by_its_inner_run(version, decided):
    """Those versions kept no approval_scope: a loaded inner item was scoped to the outer run, so approving it
    recorded a decision the inner run never looked up (the first resume ran nothing and asked again). Loading scopes
    the item to its inner run. A decision saved in the document is dropped, and a person asked again: it may be
    about another call of that tool and id, and those versions kept no fingerprint of what it approved."""
    ran = []
    boss, model, document = agent_tool_paused(ran)
    old = as_written_before_approval_scopes(document, version)
    if decided != "on the loaded state":
        approved = decided == "approved in the document"
        old["context"]["approvals"]["inner_delete"] = {
            "approved": ["d1"] if approved else [], "rejected": [] if approved else ["d1"],
            **({} if approved else {"rejection_messages": {"d1": "Not today."}})}
    state = RunState.from_json(boss, old)
    assert state.context_wrapper.is_tool_approved("inner_delete", "d1") is None  # dropped: none left for Boss's calls
    if decided != "on the loaded state":
        result = Runner.run_sync(boss, state)
        assert ran == [] and [i.call_id for i in result.interruptions] == ["d1"]  # asked again, nothing ran
        return
    state.approve(state.get_interruptions()[0])
    model.enqueue([assistant_message("sub done")])
    model.enqueue([assistant_message("done")])
    result = Runner.run_sync(boss, state)
    assert result.final_output == "done" and not result.interruptions and ran == ["/a"]


ONE_AT_A_TIME = RunConfig(max_function_tool_concurrency=1)  # inner runs take their answers in order


def paused_twice_on_one_call_id(ran, own_call):
    """Boss paused on `pay` c0 twice: in its agent tool's two inner runs (s1 pays 1, s2 pays 2), or (`own_call`) in
    its own call (pays 1) and in its agent tool's one inner run, itself (pays 2): a server numbering calls per
    response gives each the same id. Returned as version 2 code wrote it."""
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return "paid"

    model = ScriptedModel()
    boss = Agent("Boss", model=model, tools=[pay])
    if own_call:
        boss.tools.append(boss.as_tool("ask_sub", ""))
        model.enqueue([function_call("pay", {"amount": 1}, call_id="c0"),
                       function_call("ask_sub", {"input": "a"}, call_id="s1")])
    else:
        boss = Agent("Boss", model=model, tools=[Agent("Sub", model=model, tools=[pay]).as_tool("ask_sub", "")])
        model.enqueue([function_call("ask_sub", {"input": "a"}, call_id="s1"),
                       function_call("ask_sub", {"input": "b"}, call_id="s2")])
        model.enqueue([function_call("pay", {"amount": 1}, call_id="c0")])
    model.enqueue([function_call("pay", {"amount": 2}, call_id="c0")])
    document = Runner.run_sync(boss, "go", run_config=ONE_AT_A_TIME).to_state().to_json()
    return boss, model, as_written_before_approval_scopes(document, 2)


@pytest.mark.parametrize("own_call", [False, True], ids=["two inner runs", "its own call and an inner run's"])
def test_a_version_2_approval_runs_the_call_it_was_given_for_when_another_has_its_tool_and_id(own_call):
    """Scoped by tool, call id and agent name, both items took one run's scope (the last inner run's, or the inner
    run's for the outer's own item): approving the payment of 1 ran the payment of 2, which no one approved."""
    ran = []
    boss, model, old = paused_twice_on_one_call_id(ran, own_call)
    state = RunState.from_json(boss, old)
    items = state.get_interruptions()
    assert [json.loads(i.arguments)["amount"] for i in items] == [1, 2]
    state.approve(items[0])
    model.enqueue([assistant_message("x")] if own_call else [assistant_message("x"), assistant_message("x")])
    result = Runner.run_sync(boss, state, run_config=ONE_AT_A_TIME)
    assert ran == [1] and [json.loads(i.arguments)["amount"] for i in result.interruptions] == [2]


@pytest.mark.parametrize("own_call", [False, True], ids=["two inner runs", "its own call and an inner run's"])
def test_a_version_2_decision_that_could_be_about_either_of_two_calls_is_dropped_and_asked_again(own_call):
    """The document says `pay` c0 was approved, and two calls are `pay` c0: which one the person approved cannot be
    told, so neither runs on it."""
    ran = []
    boss, model, old = paused_twice_on_one_call_id(ran, own_call)
    old["context"]["approvals"]["pay"] = {"approved": ["c0"], "rejected": []}
    state = RunState.from_json(boss, old)
    assert [state.context_wrapper.is_tool_approved("pay", "c0")] == [None]
    result = Runner.run_sync(boss, state, run_config=ONE_AT_A_TIME)
    assert ran == [] and len(result.interruptions) == 2


def test_a_version_2_approval_of_an_earlier_call_with_the_tool_and_id_never_runs_an_inner_call():
    """Boss's own `pay` c0 (1) was approved and ran; its agent tool's inner run then paused on `pay` c0 (2), the id
    numbered again. The approval moved to the inner call's scope, under a fingerprint of the inner call's arguments:
    the payment of 2 ran with no one deciding."""
    ran = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return "paid"

    model = ScriptedModel([[function_call("pay", {"amount": 1}, call_id="c0")]])
    boss = Agent("Boss", model=model, tools=[pay])
    boss.tools.append(Agent("Sub", model=model, tools=[pay]).as_tool("ask_sub", ""))
    state = Runner.run_sync(boss, "go").to_state()
    state.approve(state.get_interruptions()[0])
    model.enqueue([function_call("ask_sub", {"input": "a"}, call_id="s1")])
    model.enqueue([function_call("pay", {"amount": 2}, call_id="c0")])
    old = as_written_before_approval_scopes(Runner.run_sync(boss, state).to_state().to_json(), 2)
    result = Runner.run_sync(boss, RunState.from_json(boss, old))
    assert ran == [1] and [json.loads(i.arguments)["amount"] for i in result.interruptions] == [2]


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_a_call_id_repeated_in_a_paused_response_of_versions_1_to_5_is_dropped_as_that_code_dropped_it(version):
    """Versions 1-5 skipped a repeated call id as they read the response but kept the response whole in
    pending_turn.output: loading keeps the first call of each id, as that turn's items do. From version 6 on
    the repeat is dropped before the response is kept, so a document holding one was edited: refused."""
    log = []
    model = ScriptedModel([[function_call("delete_file", {"path": "a.txt"}, call_id="fc_a"),
                            function_call("list_files", {"folder": "/"}, call_id="fc_b")], [assistant_message("done")]])
    agent = make_agent(model, log)
    document = Runner.run_sync(agent, "tidy up").to_state().to_json()
    output = document["pending_turn"]["output"]
    repeat = function_call("delete_file", {"path": "b.txt"}, call_id="fc_a")  # as a version 1-5 run wrote it
    old = mutate(mutate(document, ("pending_turn", "output"), output[:1] + [repeat] + output[1:]),
                 ("schema_version",), version)
    if version == 6:
        with pytest.raises(UserError, match="holds call id 'fc_a' twice"):
            RunState.from_json(agent, old)
        return
    loaded = RunState.from_json(agent, old)
    assert loaded.to_json()["pending_turn"]["output"] == output
    loaded = RunState.from_string(agent, loaded.to_string())
    loaded.approve(loaded.get_interruptions()[0])
    assert Runner.run_sync(agent, loaded).final_output == "done"
    assert log == [("list_files", "/"), ("delete_file", "a.txt")]


@pytest.mark.parametrize("value, said", [(float("nan"), r"\['x'\] \(nan: JSON has no such number\)"),
                                         (b"x", r"\['x'\] \(bytes\)"), ({1}, r"\['x'\] \(set\)")],
                         ids=["nan", "bytes", "a set"])
def test_a_state_holding_a_value_json_cannot_hold_is_a_user_error_naming_where(value, said):
    """An input item holding it (a run without a session takes it) failed to_string with a bare ValueError or
    TypeError: the state could not be saved, and nothing said which value."""
    agent = Agent("A", model=ScriptedModel())
    state = RunState(None, [{"role": "user", "content": "hi", "x": value}], agent, None)
    with pytest.raises(UserError, match=said):
        state.to_string()
