"""A call id never executes twice: ids are fixed once per response, before anything runs."""
import json

import pytest

from miniagents import Agent, ModelBehaviorError, Runner, RunState, function_tool
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call

runs = []


@function_tool
def ping(n: int) -> str:
    """Ping."""
    runs.append(n)
    return f"pong {n}"


@function_tool(needs_approval=True)
def guarded(n: int) -> str:
    """Needs a person."""
    runs.append(("guarded", n))
    return f"guarded {n}"


def call_ids(items):
    return [i["call_id"] for i in items if i.get("type") == "function_call"]


def test_a_call_id_reused_in_a_later_turn_gets_a_fresh_id_and_the_history_stays_unique():
    runs.clear()
    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_0")],
                           [function_call("ping", {"n": 2}, call_id="call_0")],  # a server numbering per response
                           [assistant_message("done")]])
    result = Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go")
    sent = model.calls[2].input
    ids = call_ids(sent)
    assert runs == [1, 2] and result.final_output == "done"
    assert ids[0] == "call_0" and ids[1] != "call_0" and len(set(ids)) == 2
    outputs = [i for i in sent if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ids and [o["output"] for o in outputs] == ["pong 1", "pong 2"]


def test_a_server_managed_conversation_keeps_the_ids_the_server_gave_even_repeated():
    runs.clear()
    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_0")],
                           [function_call("ping", {"n": 2}, call_id="call_0")],  # the server knows its own ids
                           [assistant_message("done")]])
    result = Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go", conversation_id="conv-1")
    assert runs == [1, 2] and result.final_output == "done"
    sent = [[(i["type"], i["call_id"]) for i in call.input if i.get("type") == "function_call_output"]
            for call in model.calls[1:]]
    assert sent == [[("function_call_output", "call_0")], [("function_call_output", "call_0")]]


@pytest.mark.parametrize("second_id", ["call_0", "", "call_\x00"])  # (a lone surrogate is repaired: test_text_kept)
def test_a_server_managed_response_whose_calls_do_not_each_have_an_id_is_the_servers_mistake(second_id):
    runs.clear()
    second = function_call("ping", {"n": 2}, call_id="x")
    second["call_id"] = second_id
    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_0"), second]])
    with pytest.raises(ModelBehaviorError, match=r"\(or one holding NUL or a lone surrogate, which no session can key\).*needs an id of its own for each call"):
        Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go", previous_response_id="resp_0")
    assert runs == []  # neither ran: two calls are never answered as one


@pytest.mark.parametrize("given", ["call_\x00", "call_\ud800"], ids=["NUL", "lone surrogate"])
def test_a_call_id_no_session_can_key_gets_a_fresh_id_so_its_approval_resumes_and_it_runs_once(given, tmp_path):
    """A server's `\\u0000` escape in a call id: a session's ledger cannot claim it, so the resume failed, and every
    continue of its turn in flight failed alike (the session was stuck). It gets a fresh id where it enters."""
    from miniagents import SQLiteSession

    runs.clear()
    model = ScriptedModel([[function_call("guarded", {"n": 1}, call_id=given)], [assistant_message("done")]])
    agent, session = Agent(name="A", tools=[guarded], model=model), SQLiteSession("s", str(tmp_path / "s.db"))
    state = Runner.run_sync(agent, "go", session=session).to_state()
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state, session=session).final_output == "done" and runs == [("guarded", 1)]
    history = session.get_items()
    (fresh,) = call_ids(history)
    assert fresh.startswith("call_") and fresh != given
    assert [i["call_id"] for i in history if i.get("type") == "function_call_output"] == [fresh]


@pytest.mark.parametrize("given", ["call_\x00", "call_\ud800"], ids=["NUL", "lone surrogate"])
def test_a_call_id_no_session_can_key_repeated_or_replayed_still_runs_once(given):
    """Its fresh id is derived from it: a repeat in one response is dropped and a replay in a later turn is one,
    as for any id (a random fresh id each time ran both)."""
    def call(n):
        item = function_call("ping", {"n": n}, call_id="x")
        item["call_id"] = given
        return item

    runs.clear()
    model = ScriptedModel([[call(1), call(1)], [call(1)], [call(2)], [assistant_message("done")]])
    assert Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go").final_output == "done"
    assert runs == [1, 2]  # the same call given again ran once; a different call under the same id ran
    ids = call_ids(model.calls[-1].input)
    assert len(ids) == len(set(ids)) == 2 and all(i.startswith("call_") and i != given for i in ids)


def test_a_missing_call_id_keeps_the_same_generated_id_across_a_pause_and_resume():
    runs.clear()
    no_id = function_call("ping", {"n": 7}, call_id="x")
    no_id["call_id"] = ""
    model = ScriptedModel([[no_id, function_call("guarded", {"n": 8}, call_id="g1")], [assistant_message("ok")]])
    agent = Agent(name="A", tools=[ping, guarded], model=model)
    paused = Runner.run_sync(agent, "go")
    state = RunState.from_string(agent, paused.to_state().to_string())
    state.approve(state.get_interruptions()[0])
    result = Runner.run_sync(agent, state)
    assert result.final_output == "ok"
    assert runs == [7, ("guarded", 8)]  # the sibling that ran before the pause did not run again
    ids = call_ids(model.calls[1].input)
    assert ids[0].startswith("call_") and len(set(ids)) == 2


# --- One rule for a call id repeated in a later turn, safe for both kinds of server -------------------------------
# (upstream: test_tool_approval_call_id_reuse.py::test_non_approval_completed_replay_does_not_execute_again,
#  ::test_changed_arguments_under_reused_call_id_fail_before_second_side_effect)


def test_a_unique_call_id_replayed_with_the_same_call_does_not_run_again():
    runs.clear()
    call = function_call("ping", {"n": 1}, call_id="call_Xk3fQ9aLm2")
    model = ScriptedModel([[call], [dict(call, arguments='{"n": 1}')], [assistant_message("done")]])
    result = Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go")
    assert runs == [1] and result.final_output == "done" and len(model.calls) == 3
    sent = model.calls[2].input
    assert call_ids(sent) == ["call_Xk3fQ9aLm2"]  # one call/output pair: the replay added nothing
    assert [i["output"] for i in sent if i.get("type") == "function_call_output"] == ["pong 1"]


def test_a_numbered_call_id_repeated_with_the_same_call_is_a_new_call():
    runs.clear()
    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_0")],
                           [function_call("ping", {"n": 1}, call_id="call_0")],  # polled again, same server count
                           [assistant_message("done")]])
    Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go")
    assert runs == [1, 1]
    assert len(set(call_ids(model.calls[2].input))) == 2


def test_a_unique_call_id_reused_for_a_different_call_gets_a_fresh_id_and_runs():
    runs.clear()
    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_Xk3fQ9aLm2")],
                           [function_call("ping", {"n": 2}, call_id="call_Xk3fQ9aLm2")],
                           [assistant_message("done")]])
    Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go")
    assert runs == [1, 2]
    ids = call_ids(model.calls[2].input)
    assert ids[0] == "call_Xk3fQ9aLm2" and ids[1] != ids[0]


@pytest.mark.parametrize("decide", ["approve", "reject"])
def test_a_server_managed_call_given_an_earlier_calls_id_waits_for_a_person_of_its_own_and_survives_json(decide):
    """A server keeping the conversation numbers calls per response: the decision about the first "call_0" is not
    one about the second, whatever its arguments; a state paused at the second loads and resumes."""
    runs.clear()
    model = ScriptedModel([[function_call("guarded", {"n": 1}, call_id="call_0")],
                           [function_call("guarded", {"n": 1}, call_id="call_0")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    result = Runner.run_sync(agent, "go", conversation_id="conv-1")
    for expected in (["call_0"], ["call_0"]):
        state = RunState.from_string(agent, result.to_state().to_string())
        assert [i.call_id for i in state.get_interruptions()] == expected
        getattr(state, decide)(state.get_interruptions()[0])
        result = Runner.run_sync(agent, state)
    assert result.final_output == "done"
    assert runs == ([("guarded", 1), ("guarded", 1)] if decide == "approve" else [])
    sent = [[i["call_id"] for i in call.input if i.get("type") == "function_call_output"] for call in model.calls[1:]]
    assert sent == [["call_0"], ["call_0"]]


@pytest.mark.parametrize("always", ["approve", "reject"])
def test_what_was_said_of_an_earlier_call_with_the_id_never_reaches_the_new_call_through_a_decision_for_every_call(
        always):
    """The first "call_0" was rejected with a message, or approved for its arguments; a person then decides for
    every call of the tool: the new "call_0" gets that decision, not the earlier call's message or arguments."""
    runs.clear()
    model = ScriptedModel([[function_call("guarded", {"n": 1}, call_id="call_0")],
                           [function_call("guarded", {"n": 2}, call_id="call_0"),
                            function_call("guarded", {"n": 3}, call_id="call_1")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    state = Runner.run_sync(agent, "go", previous_response_id="resp_0").to_state()
    first = state.get_interruptions()[0]
    if always == "approve":
        state.approve(first)
    else:
        state.reject(first, rejection_message="not that one")
    state = Runner.run_sync(agent, state).to_state()
    assert [i.call_id for i in state.get_interruptions()] == ["call_0", "call_1"]
    getattr(state, always)(state.get_interruptions()[1], True)
    result = Runner.run_sync(agent, state)
    outputs = [i["output"] for i in model.calls[2].input if i.get("type") == "function_call_output"]
    if always == "approve":
        assert result.final_output == "done" and runs == [("guarded", 1), ("guarded", 2), ("guarded", 3)]
    else:
        assert outputs == ["Tool execution was not approved."] * 2 and runs == []


@pytest.mark.parametrize("order", ["always first", "exact first"])
def test_the_arguments_an_earlier_call_with_the_id_was_approved_for_never_hold_back_the_new_call(order):
    """Every call of the tool is approved, and the first "call_0" was approved for its own arguments too (a person
    clicked both): the server's new "call_0", with other arguments, runs under the decision for every call; the
    earlier call's arguments are forgotten with its id, not taken for an edited document's."""
    runs.clear()
    model = ScriptedModel([[function_call("guarded", {"n": 1}, call_id="call_0"),
                            function_call("guarded", {"n": 9}, call_id="call_1")],
                           [function_call("guarded", {"n": 2}, call_id="call_0")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    state = Runner.run_sync(agent, "go", conversation_id="conv-1").to_state()
    first, second = state.get_interruptions()
    decisions = [(first, False), (second, True)]
    for item, always in decisions if order == "exact first" else decisions[::-1]:
        state.approve(item, always_approve=always)
    state = RunState.from_string(agent, state.to_string())
    result = Runner.run_sync(agent, state)
    assert result.interruptions == [] and result.final_output == "done"
    assert runs == [("guarded", 1), ("guarded", 9), ("guarded", 2)]


class Boom(Exception):
    pass


@pytest.mark.parametrize("way", ["json", "a tool that raised"])
def test_a_server_managed_history_reusing_ids_keeps_every_pair_so_each_request_carries_what_the_server_lacks(way):
    """Finished turns that reused "call_0" were merged into one pair when the history was rebuilt (a state loaded
    from JSON, a turn that failed after a call ran): the server's count of what it holds then pointed past the
    end, and the approved call's output was never sent."""
    runs.clear()
    raises = [way != "json"]  # the first run of the call raises, out of the run (no failure_error_function)

    @function_tool(needs_approval=True, failure_error_function=None)
    def fragile(n: int) -> str:
        runs.append(("fragile", n))
        if raises.pop():
            raise Boom("boom")
        return f"fragile {n}"

    model = ScriptedModel([[function_call("ping", {"n": 1}, call_id="call_0")],
                           [function_call("ping", {"n": 2}, call_id="call_0")],
                           [function_call("fragile", {"n": 3}, call_id="call_0"),
                            function_call("ping", {"n": 4}, call_id="call_1")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[ping, fragile], model=model)
    state = Runner.run_sync(agent, "go", conversation_id="conv-1").to_state()
    state.approve(state.get_interruptions()[0])
    if way == "json":
        state = RunState.from_string(agent, state.to_string())
    else:
        with pytest.raises(Boom):
            Runner.run_sync(agent, state)
    # the input and two pairs (then the failed turn's two pairs, kept), against the server's count: those, the calls
    assert (len(state.transcript), state.server_known) == ((5, 7) if way == "json" else (9, 7))
    result = Runner.run_sync(agent, state)
    assert result.final_output == "done"
    sent = [(i["call_id"], i["output"]) for i in model.calls[3].input if i.get("type") == "function_call_output"]
    if way == "json":
        assert sent == [("call_0", "fragile 3"), ("call_1", "pong 4")]
    else:
        assert sent[1] == ("call_1", "pong 4") and sent[0][0] == "call_0" and "may or may not" in sent[0][1]


@pytest.mark.parametrize("given", [dict(auto_previous_response_id=True), dict(previous_response_id="resp_0"),
                                   dict(conversation_id="conv-1")])
def test_a_response_with_no_id_leaves_what_it_saw_to_be_sent_again_unless_the_conversation_holds_it(given):
    """A server that answers with no response id (a minimal one) keeps no state the next request can name: that
    request names what the first named (or nothing), so it carries the input, the call and its output again; it
    sent the output alone, which no state it named held the call of. A conversation holds them whatever the id."""
    runs.clear()
    model = ScriptedModel([ModelStep(output=[function_call("ping", {"n": 1}, call_id="c1")], response_id=None),
                           ModelStep(output=[function_call("ping", {"n": 2}, call_id="c2")], response_id="resp_2"),
                           [assistant_message("done")]])
    assert Runner.run_sync(Agent(name="A", tools=[ping], model=model), "go", **given).final_output == "done"
    sent = [[(i.get("type") or i["role"], i.get("call_id")) for i in call.input] for call in model.calls]
    kept = "conversation_id" in given
    assert sent[1] == ([] if kept else [("user", None), ("function_call", "c1")]) + [("function_call_output", "c1")]
    assert sent[2] == [("function_call_output", "c2")]  # the second response has an id: it holds the rest
    first = given.get("previous_response_id")
    assert [c.previous_response_id for c in model.calls] == [first, first, None if kept else "resp_2"]


@pytest.mark.parametrize("given", [dict(previous_response_id="resp_0"), dict(conversation_id="conv-1")])
@pytest.mark.parametrize("how", ["input", "a state from JSON"])
def test_an_output_answering_a_call_the_server_holds_is_sent_not_dropped_as_an_orphan(given, how):
    """An earlier run left call c9 unanswered on the server (it ended on `stop_on_first_tool`, say): this run's input
    answers it. Dropped as an orphan, it left the server refusing this request and every later one."""
    answer = [{"type": "function_call_output", "call_id": "c9", "output": "42"}, {"role": "user", "content": "and?"}]
    model = ScriptedModel([[assistant_message("thanks")]])
    agent = Agent(name="A", model=model)
    if how == "input":
        result = Runner.run_sync(agent, answer, **given)
    else:
        state = RunState.from_string(agent, RunState(None, answer, agent, 10, **given).to_string())
        result = Runner.run_sync(agent, state)
    assert model.calls[0].input == answer and result.to_input_list()[:2] == answer
    plain = Agent(name="A", model=ScriptedModel([[assistant_message("thanks")]]))
    assert Runner.run_sync(plain, answer).to_input_list()[0] == answer[1]  # with no server, an orphan as ever


@pytest.mark.parametrize("how", ["input", "a state made by hand"])
def test_with_auto_previous_response_id_alone_an_output_no_call_before_it_has_is_an_orphan(how):
    """auto_previous_response_id names no state before a response with an id: the first request sent the output
    alone, naming nothing that held its call (the API refuses it), and so did every later one while responses had
    no id. Dropped, it stays dropped: a state paused after a response with an id and loaded again sent the call that
    response holds once more (the rebuilt transcript took the output back, one item longer than what it held)."""
    runs.clear()
    orphan = {"type": "function_call_output", "call_id": "c9", "output": "42"}
    model = ScriptedModel([ModelStep([function_call("guarded", {"n": 1}, call_id="c1")], response_id="resp_1"),
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    given = [{"role": "user", "content": "hi"}, orphan, {"role": "user", "content": "go"}]
    start = given if how == "input" else RunState(None, given, agent, 10, auto_previous_response_id=True)
    state = Runner.run_sync(agent, start, auto_previous_response_id=True).to_state()
    state = RunState.from_string(agent, state.to_string())
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state).final_output == "done" and runs == [("guarded", 1)]
    sent = [[(i.get("type") or i["role"], i.get("call_id")) for i in call.input] for call in model.calls]
    assert sent == [[("user", None), ("user", None)], [("function_call_output", "c1")]]
    assert [c.previous_response_id for c in model.calls] == [None, "resp_1"]


def test_a_state_loaded_with_an_orphan_in_its_input_drops_it_while_auto_previous_response_id_names_no_state():
    """A state saved with the output in its input (as runs kept it with auto_previous_response_id alone), paused
    after a response with no id: the next request names no state, so it carries the whole history, the output
    no longer in it (it went out alone: the API refuses it)."""
    runs.clear()
    orphan = {"type": "function_call_output", "call_id": "c9", "output": "42"}
    model = ScriptedModel([ModelStep([function_call("guarded", {"n": 1}, call_id="c1")], response_id=None),
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    saved = json.loads(Runner.run_sync(agent, "go", auto_previous_response_id=True).to_state().to_string())
    saved["original_input"] = [orphan, {"role": "user", "content": "go"}]
    state = RunState.from_string(agent, json.dumps(saved))
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state).final_output == "done" and runs == [("guarded", 1)]
    assert [(i.get("type") or i["role"], i.get("call_id")) for i in model.calls[1].input] == [
        ("user", None), ("function_call", "c1"), ("function_call_output", "c1")]
    assert model.calls[1].previous_response_id is None


@pytest.mark.parametrize("given", [{}, dict(auto_previous_response_id=True), dict(conversation_id="conv-1")])
def test_added_input_enters_the_transcript_a_reloaded_state_rebuilds_so_no_orphan_is_sent_and_none_is_skipped(given):
    """add_input's items joined the live transcript unpaired: an output for no open call (c9) went out with no
    state named to hold its call (the API refuses it), and a second output for the answered c1 stayed there while
    a reload dropped it: the transcript one item shorter than the saved `server_known` counted, the next request
    skipped c2's output (it went out empty). An output the conversation may hold (c9) is the server's, as in a
    run's input."""
    runs.clear()
    model = ScriptedModel([ModelStep([function_call("guarded", {"n": 1}, call_id="c1")], response_id=None),
                           ModelStep([function_call("guarded", {"n": 2}, call_id="c2")], response_id="resp_2"),
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[guarded], model=model)
    state = Runner.run_sync(agent, "go", **given).to_state()
    state.approve(state.get_interruptions()[0])
    state.add_input([{"type": "function_call_output", "call_id": "c1", "output": "again"},
                     {"type": "function_call_output", "call_id": "c9", "output": "42"},
                     {"role": "user", "content": "more"}])
    state = Runner.run_sync(agent, state).to_state()
    loaded = RunState.from_string(agent, state.to_string())
    assert (loaded.transcript, loaded.server_known) == (state.transcript, state.server_known)
    loaded.approve(loaded.get_interruptions()[0])
    assert Runner.run_sync(agent, loaded).final_output == "done" and runs == [("guarded", 1), ("guarded", 2)]
    sent = [[(i.get("type") or i["role"], i.get("call_id")) for i in call.input] for call in model.calls[1:]]
    if "conversation_id" in given:
        assert sent == [[("function_call_output", "c1"), ("function_call_output", "c9"), ("user", None)],
                        [("function_call_output", "c2")]]
    else:
        history = [("user", None), ("function_call", "c1"), ("function_call_output", "c1"), ("user", None)]
        last = [("function_call_output", "c2")] if given else history + [("function_call", "c2"),
                                                                         ("function_call_output", "c2")]
        assert sent == [history, last]  # auto_previous_response_id: the second response's id holds the rest


def test_a_paused_agent_tool_is_found_by_the_paused_turns_call_not_an_earlier_call_with_its_id():
    runs.clear()
    inner1 = Agent(name="Inner1", model=ScriptedModel([[assistant_message("one")]]))
    inner2 = Agent(name="Inner2", tools=[guarded], model=ScriptedModel(
        [[function_call("guarded", {"n": 5}, call_id="i0")], [assistant_message("two")]]))
    model = ScriptedModel([[function_call("sub1", {"input": "x"}, call_id="call_0")],
                           [function_call("sub2", {"input": "y"}, call_id="call_0")],
                           [assistant_message("done")]])
    agent = Agent(name="A", tools=[inner1.as_tool("sub1", "s1"), inner2.as_tool("sub2", "s2")], model=model)
    state = RunState.from_string(agent, Runner.run_sync(agent, "go", conversation_id="c").to_state().to_string())
    state.approve(state.get_interruptions()[0])
    assert Runner.run_sync(agent, state).final_output == "done" and runs == [("guarded", 5)]


@pytest.mark.parametrize("call_id", [["x"], {"id": "x"}])
def test_an_item_that_is_no_call_may_hold_any_call_id_in_input_or_a_models_answer(call_id):
    """Every item's call_id went into the set of ids the run used: a message's (or a reasoning or hosted tool item's)
    that is a list or an object, from the input, a session or a model's answer, was a bare TypeError ("unhashable
    type"). Only a string can be a call's id."""
    model = ScriptedModel([[{**assistant_message("hi"), "call_id": call_id}],
                           [{"type": "reasoning", "summary": [], "call_id": call_id}, assistant_message("again")]])
    agent = Agent(name="A", model=model)
    assert Runner.run_sync(agent, "hi").final_output == "hi"
    assert Runner.run_sync(agent, [{"role": "user", "content": "hi", "call_id": call_id}]).final_output == "again"
