"""Specification of handoffs (miniagents/handoffs.py and the switch in run.py). Issue 2, behaviour 9."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from miniagents import (Agent, Handoff, HandoffInputData, ModelBehaviorError, RunConfig, Runner, RunState, UserError,
                        function_tool, handoff)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import kinds, outputs_sent

MULTIPLE = "Multiple handoffs detected, ignoring this one."
EMPTY_STRICT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def make_agent(steps, name="Triage", **kw):
    model = ScriptedModel(steps)
    return Agent(name=name, model=model, **kw), model


ran: list = []


@pytest.fixture(autouse=True)
def _reset():
    ran.clear()


@function_tool
def lookup(q: str) -> str:
    ran.append(q)
    return f"result for {q}"


def test_an_agent_in_handoffs_reaches_the_model_with_upstreams_default_name_description_and_schema():
    spanish = Agent(name="Spanish Agent", handoff_description="Speaks Spanish.")
    plain = Agent(name="Billing")
    agent, model = make_agent([[assistant_message("ok")]], handoffs=[spanish, plain])
    Runner.run_sync(agent, "hola")
    specs = {h["name"]: h for h in model.calls[0].handoffs}
    assert set(specs) == {"transfer_to_spanish_agent", "transfer_to_billing"}
    assert specs["transfer_to_spanish_agent"]["description"] == \
        "Handoff to the Spanish Agent agent to handle the request. Speaks Spanish."
    assert specs["transfer_to_billing"]["description"] == "Handoff to the Billing agent to handle the request. "
    assert specs["transfer_to_billing"]["parameters"] == EMPTY_STRICT
    assert specs["transfer_to_billing"]["strict"] is True
    assert model.calls[0].tools == []


def test_default_names_replace_every_character_outside_letters_digits_and_underscore():
    agent = Agent(name="Agent-X 2.0!")
    assert Handoff.default_tool_name(agent) == "transfer_to_agent_x_2_0_"
    assert Handoff.default_tool_description(agent) == "Handoff to the Agent-X 2.0! agent to handle the request. "


def test_a_handoff_switches_agents_records_upstreams_output_and_the_new_agent_answers():
    spanish, spanish_model = make_agent([[assistant_message("¡Hola!")]], name="Spanish Agent",
                                        instructions="Habla español.")
    agent, model = make_agent([[function_call("transfer_to_spanish_agent", "{}", call_id="h1")]],
                              handoffs=[spanish], instructions="Triage.")
    result = Runner.run_sync(agent, "hola")
    assert result.final_output == "¡Hola!"
    assert result.last_agent is spanish
    assert [i.type for i in result.new_items] == ["handoff_call_item", "handoff_output_item", "message_output_item"]
    handoff_output = result.new_items[1]
    assert handoff_output.raw_item["output"] == '{"assistant": "Spanish Agent"}'
    assert handoff_output.source_agent is agent and handoff_output.target_agent is spanish
    assert result.new_items[2].agent is spanish
    assert spanish_model.calls[0].system_instructions == "Habla español."
    assert outputs_sent(spanish_model.calls[0]) == {"h1": '{"assistant": "Spanish Agent"}'}
    assert len(result.raw_responses) == 2


def test_the_new_agent_sees_the_whole_transcript():
    specialist, specialist_model = make_agent([[assistant_message("answer")]], name="Specialist")
    agent, model = make_agent([
        [function_call("lookup", {"q": "a"}, call_id="c1")],
        [assistant_message("handing off"), function_call("transfer_to_specialist", "{}", call_id="h1")],
    ], tools=[lookup], handoffs=[specialist])
    result = Runner.run_sync(agent, "question")
    assert kinds(specialist_model.calls[0].input) == ["user", "call:c1", "out:c1", "msg", "call:h1", "out:h1"]
    # upstream: tool -> msg + handoff -> answer gives 3 responses and 7 items
    assert len(result.raw_responses) == 3
    assert len(result.to_input_list()) == 7
    assert result.last_agent is specialist
    assert specialist_model.calls[0].tools == []  # the specialist's own tools, not the triage agent's


def test_only_the_first_handoff_runs_and_the_others_are_told_so():
    first, first_model = make_agent([[assistant_message("first here")]], name="First")
    second, second_model = make_agent([], name="Second")
    agent, model = make_agent([[function_call("transfer_to_first", "{}", call_id="h1"),
                                function_call("transfer_to_second", "{}", call_id="h2")]],
                              handoffs=[first, second])
    result = Runner.run_sync(agent, "go")
    assert result.last_agent is first
    assert second_model.calls == ()
    sent = first_model.calls[0].input
    assert kinds(sent) == ["user", "call:h1", "call:h2", "out:h2", "out:h1"]  # upstream's order
    assert outputs_sent(first_model.calls[0]) == {"h2": MULTIPLE, "h1": '{"assistant": "First"}'}


def test_other_function_calls_in_a_handoff_response_still_run():
    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, model = make_agent([[function_call("lookup", {"q": "x"}, call_id="c1"),
                                function_call("transfer_to_specialist", "{}", call_id="h1"),
                                function_call("lookup", {"q": "y"}, call_id="c2")]],
                              tools=[lookup], handoffs=[specialist])
    Runner.run_sync(agent, "go")
    assert sorted(ran) == ["x", "y"]
    sent = outputs_sent(specialist_model.calls[0])
    assert sent["c1"] == "result for x" and sent["c2"] == "result for y"
    assert sent["h1"] == '{"assistant": "Specialist"}'


def test_an_input_filter_changes_what_the_new_agent_sees():
    seen = []

    def drop_tool_items(data: HandoffInputData) -> HandoffInputData:
        seen.append(data)
        keep = tuple(i for i in data.new_items if i.type not in ("tool_call_item", "tool_call_output_item"))
        return data.clone(pre_handoff_items=(), new_items=keep)

    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, model = make_agent([
        [function_call("lookup", {"q": "a"}, call_id="c1")],
        [function_call("lookup", {"q": "b"}, call_id="c2"), function_call("transfer_to_specialist", "{}", call_id="h1")],
    ], tools=[lookup], handoffs=[handoff(specialist, input_filter=drop_tool_items)])
    result = Runner.run_sync(agent, "question")
    assert kinds(specialist_model.calls[0].input) == ["user", "call:h1", "out:h1"]
    (data,) = seen
    assert data.input_history == "question"
    assert [i.type for i in data.pre_handoff_items] == ["tool_call_item", "tool_call_output_item"]
    assert [i.type for i in data.new_items] == ["tool_call_item", "handoff_call_item", "tool_call_output_item",
                                                "handoff_output_item"]
    assert result.final_output == "done"


def test_the_run_configs_handoff_input_filter_applies_when_the_handoff_has_none():
    def forget_everything(data):
        return data.clone(input_history="only this", pre_handoff_items=(), new_items=())

    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, _ = make_agent([[function_call("transfer_to_specialist", "{}", call_id="h1")]], handoffs=[specialist])
    result = Runner.run_sync(agent, "secret question", run_config=RunConfig(handoff_input_filter=forget_everything))
    assert specialist_model.calls[0].input == [{"content": "only this", "role": "user"}]
    assert result.input == "only this"


def test_an_input_filter_that_leaves_orphans_still_gives_the_model_a_well_paired_history():
    def drop_outputs(data):
        return data.clone(new_items=tuple(i for i in data.new_items if i.type != "tool_call_output_item"))

    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, _ = make_agent([[function_call("lookup", {"q": "a"}, call_id="c1"),
                            function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          tools=[lookup], handoffs=[handoff(specialist, input_filter=drop_outputs)])
    Runner.run_sync(agent, "go")
    assert kinds(specialist_model.calls[0].input) == ["user", "call:h1", "out:h1"]


def test_an_input_filter_returning_the_wrong_type_is_a_user_error():
    specialist, _ = make_agent([[assistant_message("never")]], name="Specialist")
    agent, _ = make_agent([[function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          handoffs=[handoff(specialist, input_filter=lambda data: ["not", "handoff", "data"])])
    with pytest.raises(UserError, match="Invalid input filter result"):
        Runner.run_sync(agent, "go")


def test_an_input_filters_input_items_are_what_the_next_agent_is_given_and_the_session_keeps_the_turn(tmp_path):
    """Upstream: a filter's input_items stand in for new_items in the next agent's input (they were ignored, and
    the next agent saw the tool traffic the filter meant to hide); the session keeps the turn as it happened."""
    from miniagents import SQLiteSession

    def conversation_only(data):
        return data.clone(input_items=tuple(i for i in data.new_items if i.type == "message_output_item"))

    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, _ = make_agent([[assistant_message("checking"), function_call("lookup", {"q": "a"}, call_id="c1"),
                            function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          tools=[lookup], handoffs=[handoff(specialist, input_filter=conversation_only)])
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    result = Runner.run_sync(agent, "go", session=session)
    assert kinds(specialist_model.calls[0].input) == ["user", "msg"]
    assert [i.type for i in result.new_items] == ["message_output_item", "message_output_item"]
    assert kinds(session.get_items()) == ["user", "msg", "call:c1", "call:h1", "out:c1", "out:h1", "msg"]


def test_an_input_filter_that_redacts_the_history_in_place_never_rewrites_what_the_session_keeps(tmp_path):
    """A filter that edits the items it is given in place (a redaction) changed the turn's own items: the session
    kept the tool's output and the user's words as the filter rewrote them, not as they were."""
    from miniagents import SQLiteSession

    def redact_in_place(data):
        for item in data.input_history:
            item["content"] = "REDACTED"
        for item in data.new_items:
            if item.type == "tool_call_output_item":
                item.raw_item["output"] = "REDACTED"
        return data

    specialist, specialist_model = make_agent([[assistant_message("done")]], name="Specialist")
    agent, _ = make_agent([[function_call("lookup", {"q": "b"}, call_id="c1"),
                            function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          tools=[lookup], handoffs=[handoff(specialist, input_filter=redact_in_place)])
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    given = [{"role": "user", "content": "my card is 4242"}]
    result = Runner.run_sync(agent, given, session=session)
    assert given == [{"role": "user", "content": "my card is 4242"}]  # the caller's own list, as it gave it
    seen = specialist_model.calls[0].input
    assert seen[0]["content"] == "REDACTED" and outputs_sent(specialist_model.calls[0])["c1"] == "REDACTED"
    kept = session.get_items()
    assert kept[0]["content"] == "my card is 4242"
    assert {i["call_id"]: i["output"] for i in kept if i.get("type") == "function_call_output"} == {
        "c1": "result for b", "h1": json.dumps({"assistant": "Specialist"})}
    assert result.final_output == "done" and ran == ["b"]


@pytest.mark.parametrize("input_items, problem", [
    ("not items", "input_items of type str"),
    (({"role": "user", "content": "x"},), r"input_items\[0\] that is not a run item"),
])
def test_an_input_filters_input_items_are_checked_as_its_other_items_are(input_items, problem):
    specialist, specialist_model = make_agent([[assistant_message("never")]], name="Specialist")
    agent, _ = make_agent([[function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          handoffs=[handoff(specialist, input_filter=lambda data: data.clone(input_items=input_items))])
    with pytest.raises(UserError, match=f"Invalid input filter result: .* returned {problem}"):
        Runner.run_sync(agent, "go")
    assert specialist_model.calls == ()


def test_a_non_callable_input_filter_is_a_user_error():
    with pytest.raises(UserError, match="Invalid input filter"):
        handoff(Agent(name="X"), input_filter="not callable")


def test_name_and_description_overrides_are_what_the_model_sees():
    target, target_model = make_agent([[assistant_message("refunded")]], name="Refunds")
    agent, model = make_agent([[function_call("escalate", "{}", call_id="h1")]],
                              handoffs=[handoff(target, tool_name_override="escalate",
                                                tool_description_override="Escalate to refunds.")])
    result = Runner.run_sync(agent, "go")
    assert [(h["name"], h["description"]) for h in model.calls[0].handoffs] == [("escalate", "Escalate to refunds.")]
    assert result.last_agent is target
    assert outputs_sent(target_model.calls[0]) == {"h1": '{"assistant": "Refunds"}'}


@dataclass
class EscalationData:
    reason: str
    priority: int


def test_on_handoff_with_input_type_receives_the_parsed_input():
    received = []

    def on_handoff(ctx, data: EscalationData):
        received.append((ctx.context, data))

    target, target_model = make_agent([[assistant_message("escalated")]], name="Manager")
    agent, model = make_agent([[function_call("transfer_to_manager", {"reason": "angry", "priority": 2},
                                              call_id="h1")]],
                              handoffs=[handoff(target, on_handoff=on_handoff, input_type=EscalationData)])
    result = Runner.run_sync(agent, "go", context="ctx")
    assert received == [("ctx", EscalationData("angry", 2))]
    schema = model.calls[0].handoffs[0]["parameters"]
    assert schema["additionalProperties"] is False and sorted(schema["required"]) == ["priority", "reason"]
    assert result.final_output == "escalated"


def test_on_handoff_without_input_type_receives_the_context():
    received = []
    target, _ = make_agent([[assistant_message("hi")]], name="Manager")
    agent, _ = make_agent([[function_call("transfer_to_manager", "{}", call_id="h1")]],
                          handoffs=[handoff(target, on_handoff=lambda ctx: received.append(ctx.context))])
    Runner.run_sync(agent, "go", context={"k": 1})
    assert received == [{"k": 1}]


def test_an_async_on_handoff_is_awaited():
    received = []

    async def on_handoff(ctx):
        received.append("awaited")

    target, _ = make_agent([[assistant_message("hi")]], name="Manager")
    agent, _ = make_agent([[function_call("transfer_to_manager", "{}", call_id="h1")]],
                          handoffs=[handoff(target, on_handoff=on_handoff)])
    Runner.run_sync(agent, "go")
    assert received == ["awaited"]


def test_handoff_arguments_that_do_not_fit_the_input_type_are_a_model_behavior_error():
    target, target_model = make_agent([], name="Manager")
    agent, _ = make_agent([[function_call("transfer_to_manager", {"reason": "x", "priority": "25"},
                                          call_id="h1")]],
                          handoffs=[handoff(target, on_handoff=lambda ctx, data: None, input_type=EscalationData)])
    with pytest.raises(ModelBehaviorError):
        Runner.run_sync(agent, "go")
    assert target_model.calls == ()


@pytest.mark.parametrize("arguments, handed", [('{"response": 5}', [5]), ("5", None), ("[5]", None),
                                                ('{"value": 5}', None)])
def test_a_handoff_input_of_a_type_that_is_no_object_comes_wrapped_in_response_and_is_refused_otherwise(
        arguments, handed):
    """An int input type is sent as {"response": <int>}: the bare value is not what the schema asked for, and the
    model is told the wrapper is missing (not "expected integer, got null")."""
    got = []
    target, target_model = make_agent([[assistant_message("billing here")]], name="Manager")
    agent, _ = make_agent([[function_call("transfer_to_manager", arguments, call_id="h1")]],
                          handoffs=[handoff(target, on_handoff=lambda ctx, n: got.append(n), input_type=int)])
    if handed is None:
        with pytest.raises(ModelBehaviorError, match="expected an object with a 'response' key, got "):
            Runner.run_sync(agent, "go")
        assert got == [] and target_model.calls == ()
    else:
        assert Runner.run_sync(agent, "go").final_output == "billing here" and got == handed


def test_handoff_arguments_that_are_not_json_are_a_model_behavior_error():
    target, _ = make_agent([], name="Manager")
    agent, _ = make_agent([[function_call("transfer_to_manager", "{bad", call_id="h1")]],
                          handoffs=[handoff(target, on_handoff=lambda ctx, data: None, input_type=EscalationData)])
    with pytest.raises(ModelBehaviorError, match="Invalid JSON"):
        Runner.run_sync(agent, "go")


@pytest.mark.parametrize("kwargs, message", [
    ({"input_type": int}, "You must provide on_handoff when input_type is provided"),
    ({"on_handoff": "nope"}, "on_handoff must be callable"),
    ({"on_handoff": lambda ctx: None, "input_type": int}, "on_handoff must take two arguments: context and input"),
    ({"on_handoff": lambda ctx, data: None}, "on_handoff must take one argument: context"),
])
def test_handoff_configuration_mistakes_are_user_errors(kwargs, message):
    with pytest.raises(UserError, match=message):
        handoff(Agent(name="X"), **kwargs)


@pytest.mark.parametrize("target", ["Billing", None])
def test_a_handoff_to_something_other_than_an_agent_is_a_user_error(target):
    with pytest.raises(UserError, match=f"handoff\\(\\) takes the Agent to hand off to, got {type(target).__name__}"):
        handoff(target)


def test_a_disabled_handoff_is_not_offered():
    agent, model = make_agent([[assistant_message("ok")]],
                              handoffs=[handoff(Agent(name="Hidden"), is_enabled=False), Agent(name="Shown")])
    Runner.run_sync(agent, "go")
    assert [h["name"] for h in model.calls[0].handoffs] == ["transfer_to_shown"]


def test_a_handoff_is_enabled_callable_is_evaluated_every_turn():
    turns = []

    def enabled(ctx, agent):
        turns.append(agent.name)
        return len(turns) > 1  # offered from the second turn on

    target, target_model = make_agent([[assistant_message("late")]], name="Late")
    agent, model = make_agent([[function_call("lookup", {"q": "a"}, call_id="c1")],
                               [function_call("transfer_to_late", "{}", call_id="h1")]],
                              tools=[lookup], handoffs=[handoff(target, is_enabled=enabled)])
    result = Runner.run_sync(agent, "go")
    assert model.calls[0].handoffs == []
    assert [h["name"] for h in model.calls[1].handoffs] == ["transfer_to_late"]
    assert result.last_agent is target


def test_handing_off_back_and_forth_keeps_one_transcript():
    a_model = ScriptedModel([[function_call("transfer_to_b", "{}", call_id="h1")], [assistant_message("A again")]])
    b_model = ScriptedModel([[function_call("transfer_to_a", "{}", call_id="h2")]])
    a = Agent(name="A", model=a_model)
    b = Agent(name="B", model=b_model, handoffs=[a])
    a = a.clone(handoffs=[b])
    b.handoffs[:] = [a]
    result = Runner.run_sync(a, "go")
    assert result.final_output == "A again"
    assert result.last_agent is a
    assert kinds(a_model.calls[1].input) == ["user", "call:h1", "out:h1", "call:h2", "out:h2"]


@pytest.mark.parametrize("filtered, named", [
    (lambda data: HandoffInputData(input_history=[("role", "user")], pre_handoff_items=(), new_items=()),
     "input_history[0] that is not an object"),
    (lambda data: HandoffInputData(input_history=[{"role": "robot", "content": "x"}], pre_handoff_items=(),
                                   new_items=()), "input_history[0] that has role"),
    (lambda data: HandoffInputData(input_history=7, pre_handoff_items=(), new_items=()), "input_history of type int"),
    (lambda data: HandoffInputData(input_history="hi", pre_handoff_items=({"role": "user"},), new_items=()),
     "pre_handoff_items[0] that is not a run item"),
    (lambda data: HandoffInputData(input_history="hi", pre_handoff_items=(), new_items=None),
     "new_items of type NoneType"),
], ids=["tuple item", "bad role", "not a list", "dict instead of run item", "None items"])
def test_an_input_filter_returning_malformed_history_is_a_user_error_naming_the_filter_and_the_part(filtered, named):
    """It once raised a raw ValueError ("dictionary update sequence...") from deep inside."""
    def tidy(data):
        return filtered(data)

    specialist, _ = make_agent([[assistant_message("never")]], name="Specialist")
    agent, _ = make_agent([[function_call("transfer_to_specialist", "{}", call_id="h1")]],
                          handoffs=[handoff(specialist, input_filter=tidy)])
    with pytest.raises(UserError) as refused:
        Runner.run_sync(agent, "go")
    assert "'tidy'" in str(refused.value) and named in str(refused.value)


@pytest.mark.parametrize("json_between", [False, True])
def test_a_failed_transfer_where_the_server_keeps_the_conversation_is_answered_as_not_run(json_between):
    """The server holds the transfer's call: it is answered (it was left with no output, so the next request had
    none for it, and after JSON none at all: the other call's output went missing too)."""
    def refuse(ctx):
        raise RuntimeError("no transfer today")

    @function_tool
    def lookup() -> str:
        return "found"

    model = ScriptedModel([[function_call("lookup", {}, call_id="c0"),
                            function_call("transfer_to_b", {}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="A", tools=[lookup], handoffs=[handoff(Agent(name="B", model=model), on_handoff=refuse)],
                  model=model)
    state = RunState(None, "go", agent, 10, conversation_id="conv-1")
    with pytest.raises(RuntimeError, match="no transfer today"):
        Runner.run_sync(agent, state)
    if json_between:
        state = RunState.from_string(agent, state.to_string())
    result = Runner.run_sync(agent, state)
    assert (result.final_output, result.last_agent.name) == ("done", "A")
    said = outputs_sent(model.calls[1])
    assert said == {"c0": "found", "c1": "This call was not run: the run stopped before it started."}


def test_a_transfer_that_happened_before_a_later_step_failed_is_answered_once_where_the_server_keeps_it():
    from miniagents import seams

    class RefusesB(seams.Plugin):
        def agent_started(self, run, agent):
            if agent.name == "B":
                raise RuntimeError("B may not start")

    model = ScriptedModel([[function_call("transfer_to_b", {}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="A", handoffs=[Agent(name="B", model=model)], model=model)
    state = RunState(None, "go", agent, 10, conversation_id="conv-1")
    with pytest.raises(RuntimeError, match="B may not start"):
        Runner.run_sync(agent, state, plugins=[RefusesB()])
    assert Runner.run_sync(agent, state).final_output == "done"
    sent = [i for i in model.calls[1].input if i.get("type") == "function_call_output"]
    assert [(i["call_id"], i["output"]) for i in sent] == [("c1", '{"assistant": "B"}')]


def test_a_typed_handoff_given_null_arguments_is_the_models_mistake_and_never_calls_on_handoff():
    from dataclasses import dataclass

    @dataclass
    class Why:
        reason: str

    seen = []
    target = Agent(name="B", model=ScriptedModel([[assistant_message("hi")]]))
    model = ScriptedModel([[function_call("transfer_to_b", "null", call_id="h1")]])
    agent = Agent(name="A", model=model,
                  handoffs=[handoff(target, on_handoff=lambda ctx, why: seen.append(why), input_type=Why)])
    with pytest.raises(ModelBehaviorError, match="^Handoff function expected non-null input, but got None$"):
        Runner.run_sync(agent, "go")
    assert seen == []

