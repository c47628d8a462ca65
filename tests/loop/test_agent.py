"""Specification of `Agent` (miniagents/agent.py): field checks, clone, instructions, tool_use_behavior,
reset_tool_choice and `as_tool`. Issue 2, behaviours 10, 12 (tool_use_behavior, reset_tool_choice) and 13.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

import pytest

from miniagents import (Agent, FunctionToolResult, MaxTurnsExceeded, ModelSettings, RunContextWrapper, Runner,
                        StopAtTools,
                        ToolError, ToolsToFinalOutputResult, UserError, function_tool)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import REDACTED, make_agent, outputs_sent

@function_tool
def weather(city: str) -> str:
    return f"sunny in {city}"


@function_tool
def news(topic: str) -> str:
    return f"nothing new about {topic}"


# --- Fields ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"name": 1}, "Agent name must be a string, got int"),
    ({"name": "a", "tools": weather}, "Agent tools must be a list"),
    ({"name": "a", "handoffs": ["not an agent"]}, "handoffs"),
    ({"name": "a", "model_settings": "hot"}, "model_settings"),
    ({"name": "a", "instructions": 42}, "instructions"),
    ({"name": "a", "handoff_description": 3}, "handoff_description"),
])
def test_agent_fields_are_type_checked_on_construction(kwargs, message):
    with pytest.raises(TypeError, match=message):
        Agent(**kwargs)


@pytest.mark.parametrize("field, value, message", [
    ("name", 1, "Agent name must be a string, got int"),
    ("handoff_description", 3, "Agent handoff_description must be a string or None, got int"),
    ("tools", "weather", "Agent tools must be a list, got str"),
    ("handoffs", "billing", "Agent handoffs must be a list, got str"),
    ("mcp_servers", (), "Agent mcp_servers must be a list, got tuple"),
    ("mcp_config", [], "Agent mcp_config must be a dict, got list"),
    ("input_guardrails", (), "Agent input_guardrails must be a list, got tuple"),
    ("output_guardrails", None, "Agent output_guardrails must be a list, got NoneType"),
    ("capabilities", {}, "Agent capabilities must be a list, got dict"),
    ("model_settings", "hot", "Agent model_settings must be a ModelSettings instance or a dict, got str"),
    ("reset_tool_choice", 1, "Agent reset_tool_choice must be a bool, got int"),
    ("model", 5, "Agent model must be a string, a Model or None, got int"),
    ("instructions", 42, "Agent instructions must be a string, a callable or None, got int"),
])
def test_each_fields_type_error_says_what_the_field_takes(field, value, message):
    """Every field's refusal says in words what it takes, not only that it was refused (a sampled mutant blanking
    the words for `handoffs` passed the loose match above)."""
    kwargs = {"name": "a", field: value}
    with pytest.raises(TypeError) as refused:
        Agent(**kwargs)
    assert str(refused.value) == message


def test_model_settings_may_be_given_as_a_dict_as_upstream_allows():
    from miniagents import ModelSettings, RunConfig

    agent = Agent(name="a", model_settings={"temperature": 0.5})
    assert agent.model_settings == ModelSettings(temperature=0.5)
    assert RunConfig(model_settings={"top_p": 0.9}).model_settings == ModelSettings(top_p=0.9)
    assert ModelSettings(temperature=0.1).resolve({"temperature": 0.2}).temperature == 0.2
    with pytest.raises(UserError, match="ModelSettings has no field 'temprature'"):
        Agent(name="a", model_settings={"temprature": 0.5})  # a misspelt setting is still an error


@pytest.mark.parametrize("field, value, kind", [
    ("response_include", "reasoning.encrypted_content", "a list"), ("extra_headers", "X-Team: a", "a dict"),
    ("extra_query", [("api-version", "1")], "a dict"), ("extra_body", 5, "a dict"), ("extra_args", "x", "a dict"),
    ("metadata", ["a"], "a dict"), ("temperature", "0.5", "a number"), ("temperature", True, "a number"),
    ("max_tokens", 10.5, "a whole number"), ("max_tokens", False, "a whole number"),
    ("top_logprobs", "3", "a whole number"),
    ("parallel_tool_calls", "no", "a bool"), ("store", 1, "a bool"), ("truncation", {"a": 1}, "a string"),
    ("verbosity", 3, "a string"), ("timeout", {"s": 1}, "a number"),
])
def test_model_settings_of_the_wrong_kind_are_refused_where_they_are_made(field, value, kind):
    """Upstream's settings refuse another kind as they are made. Here a string of includes was sent one letter an
    entry, a header, query or body that is no dict was a bare TypeError or ValueError deep in the request, and a
    number given as text, or a bool, was sent for the server to refuse."""
    from miniagents import ModelSettings, RunConfig

    message = rf"^ModelSettings {field} must be {kind} or None, got {type(value).__name__}$"
    with pytest.raises(TypeError, match=message):
        ModelSettings(**{field: value})
    with pytest.raises(TypeError, match=message):
        Agent(name="a", model_settings={field: value})
    with pytest.raises(TypeError, match=message):
        ModelSettings().resolve(RunConfig(model_settings={"temperature": 0.5}).model_settings).resolve({field: value})


def test_model_settings_of_the_right_kind_are_kept_as_given():
    from miniagents import ModelSettings

    given = dict(temperature=1, top_p=0.5, max_tokens=64, parallel_tool_calls=False, truncation="auto",
                 response_include=("reasoning.encrypted_content",), metadata={"a": "b"}, extra_query={"v": 1},
                 extra_body={}, extra_headers={"X": "y"}, extra_args={"seed": 3}, timeout=2, tool_choice={"x": 1})
    assert {name: getattr(ModelSettings(**given), name) for name in given} == given


def test_an_instructions_callable_must_take_context_and_agent():
    with pytest.raises(TypeError, match=r"'instructions' callable must accept exactly 2 arguments \(context, agent\)"):
        Agent(name="a", instructions=lambda ctx: "x")


@pytest.mark.parametrize("behavior", ["stop_sometimes", {"stop_at_tool_names": "search_all"},
                                      {"stop_at_tool_names": None}, {"stop_at_tool_names": [1]}, {}])
def test_an_invalid_tool_use_behavior_is_a_user_error(behavior):
    with pytest.raises(UserError, match="Invalid tool_use_behavior: .* or a function"):
        Agent(name="a", tool_use_behavior=behavior)  # a string of names would match by substring


def test_clone_replaces_fields_and_shares_the_rest():
    original = Agent(name="a", instructions="one", tools=[weather])
    copy = original.clone(instructions="two")
    assert (copy.name, copy.instructions) == ("a", "two")
    assert copy.tools is original.tools
    assert original.instructions == "one"


def test_one_agent_serves_concurrent_runs_without_sharing_state():
    model = ScriptedModel([lambda call: [assistant_message(call.input[0]["content"].upper())] for _ in range(8)])
    agent = Agent(name="a", model=model)
    results = {}

    def run(text):
        results[text] = Runner.run_sync(agent, text).final_output

    threads = [threading.Thread(target=run, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {f"t{i}": f"T{i}" for i in range(8)}


# --- Instructions ---------------------------------------------------------------------------------------------


def test_string_instructions_are_the_system_prompt_of_every_turn():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")], [assistant_message("ok")]],
                              instructions="You are terse.", tools=[weather])
    Runner.run_sync(agent, "hi")
    assert [c.system_instructions for c in model.calls] == ["You are terse.", "You are terse."]


def test_async_instructions_are_awaited_every_turn():
    count = []

    async def instructions(ctx, agent):
        count.append(1)
        return f"{agent.name} turn {len(count)}"

    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")], [assistant_message("ok")]],
                              instructions=instructions, tools=[weather])
    Runner.run_sync(agent, "hi")
    assert [c.system_instructions for c in model.calls] == ["Assistant turn 1", "Assistant turn 2"]


def test_no_instructions_means_no_system_prompt():
    agent, model = make_agent([[assistant_message("ok")]])
    Runner.run_sync(agent, "hi")
    assert model.calls[0].system_instructions is None


def test_system_prompt_of_text_instructions_or_none_is_that_value_as_it_is():
    ctx = RunContextWrapper(None)
    assert Agent(name="A", instructions="You are terse.").system_prompt(ctx) == "You are terse."
    assert Agent(name="A").system_prompt(ctx) is None


# --- tool_use_behavior ------------------------------------------------------------------------------------------


def test_run_llm_again_is_the_default_and_calls_the_model_after_tools():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")],
                               [assistant_message("It is sunny.")]], tools=[weather])
    assert agent.tool_use_behavior == "run_llm_again"
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "It is sunny."
    assert len(model.calls) == 2


def test_stop_on_first_tool_makes_the_first_tool_output_final():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1"),
                                function_call("news", {"topic": "x"}, call_id="c2")]],
                              tools=[weather, news], tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "sunny in Oslo"
    assert len(model.calls) == 1
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_item", "tool_call_output_item",
                                                  "tool_call_output_item"]


def test_stop_at_tools_stops_only_on_a_listed_tool():
    behavior: StopAtTools = {"stop_at_tool_names": ["weather"]}
    agent, model = make_agent([[function_call("news", {"topic": "x"}, call_id="c1")],
                               [function_call("news", {"topic": "y"}, call_id="c2"),
                                function_call("weather", {"city": "Rome"}, call_id="c3")]],
                              tools=[weather, news], tool_use_behavior=behavior)
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "sunny in Rome"
    assert len(model.calls) == 2


@pytest.mark.parametrize("behavior", [
    "stop_on_first_tool", {"stop_at_tool_names": ["lookup"]},
    lambda ctx, results: ToolsToFinalOutputResult(True, {"k": "a", "n": 1}),
], ids=["first", "names", "callable"])
def test_a_tool_use_behavior_final_output_of_data_is_json_text_for_an_agent_without_an_output_type(behavior):
    """The final output of an agent without an output type is text: data as JSON, the text the model was given for
    the call (it was `str(value)`, a Python repr no reader could parse back)."""
    @function_tool
    def lookup(k: str) -> dict:
        return {"k": k, "n": 1}

    agent, _ = make_agent([[function_call("lookup", {"k": "a"}, call_id="c1")]], tools=[lookup],
                          tool_use_behavior=behavior)
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == '{"k": "a", "n": 1}' == result.new_items[-1].raw_item["output"]
    assert result.new_items[-1].output == {"k": "a", "n": 1}  # the tool's own value stays on its output item


class Unshowable:
    def __str__(self):
        raise RuntimeError("no text")


@dataclass
class Picture:
    url: str

    def content_part(self):
        return {"type": "input_image", "image_url": self.url}


@pytest.mark.parametrize("value, expected", [
    (10 ** 5000, "The tool ran, but its result, of type int, cannot be shown as text."),
    (Unshowable(), "The tool ran, but its result, of type Unshowable, cannot be shown as text."),
    (Picture("https://example.com/a.png"), '[{"type": "input_image", "image_url": "https://example.com/a.png"}]'),
    ([{"type": "input_text", "text": "seen"}], '[{"type": "input_text", "text": "seen"}]'),
], ids=["big-int", "str-raises", "content-part-object", "content-parts"])
@pytest.mark.parametrize("behavior", [
    "stop_on_first_tool", {"stop_at_tool_names": ["lookup"]},
    lambda ctx, results: ToolsToFinalOutputResult(True, results[0].output),
], ids=["first", "names", "callable"])
def test_a_tool_use_behavior_final_output_is_the_text_the_model_was_given_for_the_call(value, expected, behavior):
    """A value no text shows (an int past str()'s digits, a __str__ that raises) ended the run with a bare
    ValueError or RuntimeError after the tool ran; content parts ended it with their object's fields, not what the
    model got."""
    @function_tool
    def lookup() -> object:
        return value

    agent, _ = make_agent([[function_call("lookup", {}, call_id="c1")]], tools=[lookup], tool_use_behavior=behavior)
    result = Runner.run_sync(agent, "hi")
    given = result.new_items[-1].raw_item["output"]
    assert result.final_output == expected == (given if isinstance(given, str) else json.dumps(given))


def test_a_tool_use_behavior_final_output_is_the_text_given_not_the_value_shown_again():
    """The value is not shown a second time (its text may differ: a __str__ that counts, a dict the callable
    changed): the final output is what the model read for the call."""
    class Ticket:
        shown = 0

        def __str__(self):
            Ticket.shown += 1
            return f"ticket {Ticket.shown}"

    @function_tool
    def issue() -> object:
        return Ticket()

    agent, _ = make_agent([[function_call("issue", {}, call_id="c1")]], tools=[issue],
                          tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "ticket 1" == result.new_items[-1].raw_item["output"] and Ticket.shown == 1


@pytest.mark.parametrize("behavior, expected", [
    ("stop_on_first_tool", '["a"]'), ({"stop_at_tool_names": ["finish"]}, '["a", "b"]'),
    (lambda ctx, results: ToolsToFinalOutputResult(True, results[1].output), '["a", "b"]'),
], ids=["first", "names", "callable"])
def test_a_tool_use_behavior_final_output_of_one_object_two_tools_returned_is_the_chosen_calls_text(behavior, expected):
    """Two tools return one shared list: the final output was the text of the first call whose value `is` the
    chosen one (["a"], the list before finish added "b"). A named tool's result is the one chosen; a callable's value
    that several results hold is given as a tool's would be, as it is now."""
    todo = []

    @function_tool
    def add(item: str) -> list:
        todo.append(item)
        return todo

    @function_tool
    def finish(item: str) -> list:
        todo.append(item)
        return todo

    agent, _ = make_agent([[function_call("add", {"item": "a"}, call_id="c1"),
                            function_call("finish", {"item": "b"}, call_id="c2")]], tools=[add, finish],
                          tool_use_behavior=behavior)
    result = Runner.run_sync(agent, "hi")
    assert [i.raw_item["output"] for i in result.new_items[-2:]] == ['["a"]', '["a", "b"]']
    assert result.final_output == expected


def test_a_tool_use_behavior_callables_own_value_is_text_as_a_tools_would_be():
    """A value the callable made itself (no tool's) is given as a tool's would be: never a bare error."""
    agent, _ = make_agent([[function_call("weather", {"city": "Rome"}, call_id="c1")]], tools=[weather],
                          tool_use_behavior=lambda ctx, results: ToolsToFinalOutputResult(True, 10 ** 5000))
    assert Runner.run_sync(agent, "hi").final_output == \
        "The tool ran, but its result, of type int, cannot be shown as text."


def test_a_tool_use_behavior_callable_decides_from_the_tool_results():
    seen = []

    def decide(ctx, results):
        seen.append([(type(r).__name__, r.tool.name, r.output) for r in results])
        if any(r.tool.name == "weather" for r in results):
            return ToolsToFinalOutputResult(is_final_output=True, final_output="decided: " + results[-1].output)
        return ToolsToFinalOutputResult(is_final_output=False)

    agent, model = make_agent([[function_call("news", {"topic": "x"}, call_id="c1")],
                               [function_call("weather", {"city": "Rome"}, call_id="c2")]],
                              tools=[weather, news], tool_use_behavior=decide)
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "decided: sunny in Rome"
    assert seen == [[("FunctionToolResult", "news", "nothing new about x")],
                    [("FunctionToolResult", "weather", "sunny in Rome")]]
    assert len(model.calls) == 2


def test_a_tool_use_behavior_callable_returning_anything_else_is_a_user_error_saying_what_it_returned():
    agent, model = make_agent([[function_call("weather", {"city": "Rome"}, call_id="c1")]], tools=[weather],
                              tool_use_behavior=lambda ctx, results: True)
    with pytest.raises(UserError, match="^tool_use_behavior callable must return ToolsToFinalOutputResult, got True$"):
        Runner.run_sync(agent, "hi")
    assert len(model.calls) == 1


def test_an_async_tool_use_behavior_callable_is_awaited():
    async def decide(ctx, results):
        return ToolsToFinalOutputResult(True, "async final")

    agent, model = make_agent([[function_call("weather", {"city": "Rome"}, call_id="c1")]], tools=[weather],
                              tool_use_behavior=decide)
    assert Runner.run_sync(agent, "hi").final_output == "async final"


def test_tool_use_behavior_is_not_consulted_when_no_tool_ran():
    consulted = []

    def decide(ctx, results):
        consulted.append(results)
        return ToolsToFinalOutputResult(True, "from tools")

    agent, _ = make_agent([[assistant_message("plain")]], tools=[weather], tool_use_behavior=decide)
    assert Runner.run_sync(agent, "hi").final_output == "plain"
    assert consulted == []


def test_stop_on_first_tool_with_a_failing_tool_ends_with_the_error_text():
    @function_tool
    def book() -> str:
        raise ToolError("No slots left; try tomorrow.")

    agent, model = make_agent([[function_call("book", "{}", call_id="c1")]], tools=[book],
                              tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "hi")
    assert result.final_output == "No slots left; try tomorrow."


def test_a_tool_use_behavior_callable_sees_the_error_text_of_a_failed_tool():
    seen = []

    def decide(ctx, results):
        seen.extend(r.output for r in results)
        return ToolsToFinalOutputResult(False)

    @function_tool
    def book() -> str:
        raise ToolError("No slots left; try tomorrow.")

    agent, _ = make_agent([[function_call("book", "{}", call_id="c1")], [assistant_message("ok")]], tools=[book],
                          tool_use_behavior=decide)
    Runner.run_sync(agent, "hi")
    assert seen == ["No slots left; try tomorrow."]


# --- reset_tool_choice -------------------------------------------------------------------------------------------


def test_a_required_tool_choice_is_not_sent_on_the_turn_after_a_tool_ran():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[weather], model_settings=ModelSettings(tool_choice="required"))
    Runner.run_sync(agent, "hi")
    assert [c.model_settings.tool_choice for c in model.calls] == ["required", None]
    assert agent.model_settings.tool_choice == "required"  # the agent itself is untouched



def test_a_handoff_counts_as_using_a_tool_so_a_forced_choice_is_not_sent_again_when_control_comes_back():
    from miniagents import handoff

    back = ScriptedModel([[function_call("transfer_to_triage", {}, call_id="h2")]])
    billing = Agent(name="Billing", model=back)
    model = ScriptedModel([[function_call("transfer_to_billing", {}, call_id="h1")], [assistant_message("done")]])
    triage = Agent(name="Triage", model=model, handoffs=[billing], model_settings=ModelSettings(tool_choice="required"))
    billing.handoffs.append(handoff(triage))
    assert Runner.run_sync(triage, "refund").final_output == "done"
    assert [c.model_settings.tool_choice for c in model.calls] == ["required", None]

def test_reset_tool_choice_false_keeps_the_forced_tool_choice():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")],
                               [function_call("weather", {"city": "Rome"}, call_id="c2")],
                               [assistant_message("ok")]],
                              tools=[weather], model_settings=ModelSettings(tool_choice="required"),
                              reset_tool_choice=False)
    Runner.run_sync(agent, "hi")
    assert [c.model_settings.tool_choice for c in model.calls] == ["required"] * 3


def test_the_next_run_starts_with_the_forced_tool_choice_again():
    agent, model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c1")], [assistant_message("ok")],
                               [assistant_message("again")]],
                              tools=[weather], model_settings=ModelSettings(tool_choice="required"))
    Runner.run_sync(agent, "hi")
    Runner.run_sync(agent, "hi again")
    assert [c.model_settings.tool_choice for c in model.calls] == ["required", None, "required"]


def test_reset_tool_choice_applies_per_agent():
    target, target_model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="c2")],
                                       [assistant_message("ok")]], name="Target", tools=[weather],
                                      model_settings=ModelSettings(tool_choice="required"))
    agent, model = make_agent([[function_call("weather", {"city": "Rome"}, call_id="c1")],
                               [function_call("transfer_to_target", "{}", call_id="h1")]],
                              tools=[weather], handoffs=[target], model_settings=ModelSettings(tool_choice="required"))
    Runner.run_sync(agent, "hi")
    assert [c.model_settings.tool_choice for c in model.calls] == ["required", None]
    assert [c.model_settings.tool_choice for c in target_model.calls] == ["required", None]


# --- as_tool ---------------------------------------------------------------------------------------------------------


def test_as_tool_reaches_the_model_as_a_function_with_an_input_string():
    translator = Agent(name="Translator")
    agent, model = make_agent([[assistant_message("ok")]],
                              tools=[translator.as_tool("translate", "Translate text to French.")])
    Runner.run_sync(agent, "hi")
    (spec,) = model.calls[0].tools
    assert (spec["name"], spec["description"]) == ("translate", "Translate text to French.")
    assert spec["parameters"] == {  # the default input schema, word for word (its title and description too)
        "type": "object", "title": "AgentAsToolInput", "description": "Default input schema for agent-as-tool calls.",
        "properties": {"input": {"type": "string", "title": "Input"}}, "required": ["input"],
        "additionalProperties": False}


def test_as_tool_defaults_its_name_from_the_agent_name_and_its_description_to_empty():
    tool = Agent(name="French Translator").as_tool(None, None)
    assert (tool.name, tool.description) == ("french_translator", "")


def test_as_tool_warns_when_it_renames_an_agent_whose_name_is_no_tool_name(caplog):
    with caplog.at_level("WARNING", logger="miniagents"):
        assert Agent(name="Billing (EU)").as_tool(None, None).name == "billing__eu_"
        Agent(name="Billing EU").as_tool(None, None)  # spaces alone become underscores, as every reader expects
        Agent(name="Billing (EU)").as_tool("billing", None)  # a name given: nothing renamed
    assert [r.getMessage() for r in caplog.records] == [
        "agent name 'Billing (EU)' was changed to tool name 'billing__eu_'"]


def test_the_nested_run_receives_only_the_tool_input_and_the_parent_keeps_control():
    translator, sub_model = make_agent([[assistant_message("Bonjour")]], name="Translator",
                                       instructions="Translate to French.")
    agent, model = make_agent([
        [assistant_message("Let me ask the translator."),
         function_call("translate", {"input": "Hello"}, call_id="c1")],
        [assistant_message("The translation is Bonjour.")],
    ], tools=[translator.as_tool("translate", "Translate.")])
    result = Runner.run_sync(agent, "Say hello in French, and remember my name is Ada.")
    assert sub_model.calls[0].input == [{"role": "user", "content": "Hello"}]
    assert sub_model.calls[0].system_instructions == "Translate to French."
    assert outputs_sent(model.calls[1]) == {"c1": "Bonjour"}
    assert result.final_output == "The translation is Bonjour."
    assert result.last_agent is agent
    assert [i.type for i in result.new_items] == ["message_output_item", "tool_call_item", "tool_call_output_item",
                                                  "message_output_item"]
    assert all(i.agent is agent for i in result.new_items)


def test_the_nested_run_shares_usage_with_the_parent():
    helper, sub_model = make_agent([[function_call("weather", {"city": "Oslo"}, call_id="s1")],
                                    [assistant_message("sunny")]], name="Helper", tools=[weather])
    agent, model = make_agent([[function_call("helper", {"input": "weather?"}, call_id="c1")],
                               [assistant_message("It is sunny.")]], tools=[helper.as_tool("helper", "Ask.")])
    result = Runner.run_sync(agent, "hi")
    assert (len(model.calls), len(sub_model.calls)) == (2, 2)
    assert result.context_wrapper.usage.requests == 4


def test_the_nested_run_has_its_own_max_turns():
    looping = [[function_call("weather", {"city": str(i)}, call_id=f"s{i}")] for i in range(5)]
    helper, sub_model = make_agent(looping, name="Helper", tools=[weather])
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")],
                               [assistant_message("the helper gave up")]],
                              tools=[helper.as_tool("helper", "Ask.", max_turns=2)])
    result = Runner.run_sync(agent, "hi", max_turns=5)
    assert len(sub_model.calls) == 2
    assert outputs_sent(model.calls[1])["c1"] == REDACTED  # MaxTurnsExceeded inside the tool, redacted
    assert result.final_output == "the helper gave up"


def test_nested_model_calls_do_not_count_against_the_parents_max_turns():
    helper, sub_model = make_agent([[function_call("weather", {"city": "a"}, call_id="s1")],
                                    [function_call("weather", {"city": "b"}, call_id="s2")],
                                    [assistant_message("sunny twice")]], name="Helper", tools=[weather])
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")],
                               [assistant_message("done")]], tools=[helper.as_tool("helper", "Ask.")])
    result = Runner.run_sync(agent, "hi", max_turns=2)
    assert result.final_output == "done"
    assert len(sub_model.calls) == 3


def test_as_tool_output_falls_back_to_the_last_non_empty_message_when_final_output_is_empty():
    @function_tool
    def count() -> int:
        return 42

    helper, _ = make_agent([[assistant_message("the answer is 42"), function_call("count", "{}", call_id="s1")],
                            [assistant_message("")]], name="Helper", tools=[count])
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.")])
    Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": "the answer is 42"}


def test_as_tool_output_falls_back_to_the_latest_string_tool_output_after_an_earlier_message():
    @function_tool
    def look_up() -> str:
        return "found it"

    helper, _ = make_agent([[assistant_message("let me look"), function_call("look_up", "{}", call_id="s1")],
                            [assistant_message("")]], name="Helper", tools=[look_up])
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.")])
    Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": "found it"}


def test_as_tool_output_is_empty_text_when_the_nested_run_said_nothing_at_all():
    helper, _ = make_agent([[assistant_message("")]], name="Helper")
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.")])
    Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": ""}


def test_as_tool_output_of_a_structured_agent_is_its_final_output_as_json():
    @dataclass
    class Verdict:
        ok: bool
        reason: str

    judge, _ = make_agent([[assistant_message('{"response": {"ok": true, "reason": "fine"}}')]], name="Judge",
                          output_type=Verdict)
    agent, model = make_agent([[function_call("judge", {"input": "check"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[judge.as_tool("judge", "Judge.")])
    result = Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": '{"ok": true, "reason": "fine"}'}
    (output_item,) = [i for i in result.new_items if i.type == "tool_call_output_item"]
    assert output_item.output == Verdict(True, "fine")


def test_a_custom_output_extractor_shapes_the_tool_output():
    helper, _ = make_agent([[assistant_message("raw answer")]], name="Helper")
    seen = []

    def extract(run_result):
        seen.append(run_result.last_agent.name)
        return f"extracted: {run_result.final_output}"

    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.", custom_output_extractor=extract)])
    Runner.run_sync(agent, "hi")
    assert seen == ["Helper"]
    assert outputs_sent(model.calls[1]) == {"c1": "extracted: raw answer"}


def test_an_agent_tool_runs_in_parallel_with_a_function_tool():
    barrier = threading.Barrier(2, timeout=2)

    def sub_step(call):
        barrier.wait()
        return [assistant_message("sub done")]

    @function_tool
    def local() -> str:
        barrier.wait()
        return "local done"

    helper, _ = make_agent([sub_step], name="Helper")
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1"),
                                function_call("local", "{}", call_id="c2")],
                               [assistant_message("both done")]],
                              tools=[helper.as_tool("helper", "Ask."), local])
    Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": "sub done", "c2": "local done"}


def test_a_disabled_agent_tool_is_not_offered():
    helper = Agent(name="Helper")
    agent, model = make_agent([[assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.", is_enabled=False), weather])
    Runner.run_sync(agent, "hi")
    assert [t["name"] for t in model.calls[0].tools] == ["weather"]


def test_bad_agent_tool_arguments_go_back_to_the_model():
    helper, sub_model = make_agent([], name="Helper")
    agent, model = make_agent([[function_call("helper", {"input": 5}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.")])
    Runner.run_sync(agent, "hi")
    assert sub_model.calls == ()
    assert "input" in outputs_sent(model.calls[1])["c1"]


@dataclass
class TranslationRequest:
    text: str
    language: str


def test_as_tool_with_dataclass_parameters_sends_their_schema_and_the_nested_run_gets_them():
    translator, sub_model = make_agent([[assistant_message("Hola")]], name="Translator")
    tool = translator.as_tool("translate", "Translate.", parameters=TranslationRequest)
    agent, model = make_agent([[function_call("translate", {"text": "Hello", "language": "es"}, call_id="c1")],
                               [assistant_message("ok")]], tools=[tool])
    Runner.run_sync(agent, "hi")
    params = model.calls[0].tools[0]["parameters"]
    assert sorted(params["properties"]) == ["language", "text"]
    assert params["additionalProperties"] is False
    (message,) = sub_model.calls[0].input
    assert message["role"] == "user"
    assert "Hello" in message["content"] and "es" in message["content"]


def test_as_tool_parameters_must_be_a_dataclass_or_pydantic_model():
    with pytest.raises(TypeError, match="Agent tool parameters must be a dataclass or Pydantic model type."):
        Agent(name="x").as_tool("x", "x", parameters=dict)


@pytest.mark.parametrize("option, value, refused", [
    ("run_config", {"max_turns": 3}, "as_tool run_config must be a RunConfig, got dict"),
    ("session", "conversations.db", r"as_tool session must be a session \(SQLiteSession, or an object with get_items "
                                    r"and add_items\), got str"),
    ("custom_output_extractor", "final_output", "as_tool custom_output_extractor must be callable or None, got str"),
    ("on_stream", [], "as_tool on_stream must be callable or None, got list"),
    ("input_builder", 5, "as_tool input_builder must be callable or None, got int"),
])
def test_an_agent_tools_options_are_refused_when_the_tool_is_made(option, value, refused):
    """They were taken, and each call of the tool failed, told to the model as the tool's failure (the program's
    mistake, met only when the model first called the tool)."""
    with pytest.raises(UserError, match=f"^{refused}$"):
        Agent(name="x").as_tool("x", "x", **{option: value})


def test_the_nested_run_sees_the_parents_context_object():
    seen = []

    @function_tool
    def read_ctx(ctx: RunContextWrapper) -> str:
        seen.append(ctx.context)
        return "read"

    ctx_obj = object()
    helper, _ = make_agent([[function_call("read_ctx", "{}", call_id="s1")], [assistant_message("done")]],
                           name="Helper", tools=[read_ctx])
    agent, _ = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                          tools=[helper.as_tool("helper", "Ask.")])
    Runner.run_sync(agent, "hi", context=ctx_obj)
    assert seen == [ctx_obj]


def test_an_async_custom_output_extractor_is_awaited():
    async def extract(run_result):
        return "async extracted"

    helper, _ = make_agent([[assistant_message("raw")]], name="Helper")
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("ok")]],
                              tools=[helper.as_tool("helper", "Ask.", custom_output_extractor=extract)])
    Runner.run_sync(agent, "hi")
    assert outputs_sent(model.calls[1]) == {"c1": "async extracted"}


def test_an_agent_tool_resolves_model_names_with_the_callers_model_provider():
    from miniagents import RunConfig

    class Provider:
        def __init__(self, models):
            self.models, self.asked = models, []

        def get_model(self, name):
            self.asked.append(name)
            return self.models[name]

    inner = ScriptedModel([[assistant_message("inner answer")]])
    outer = ScriptedModel([[function_call("ask_expert", {"input": "q"}, call_id="c1")], [assistant_message("ok")]])
    expert = Agent(name="Expert", model="expert-model")
    boss = Agent(name="Boss", model="boss-model", tools=[expert.as_tool("ask_expert", "Ask the expert.")])
    provider = Provider({"boss-model": outer, "expert-model": inner})
    result = Runner.run_sync(boss, "go", run_config=RunConfig(model_provider=provider))
    assert result.final_output == "ok" and "expert-model" in provider.asked
    assert outer.calls[1].input[-1]["output"] == "inner answer"


def test_on_stream_gets_every_event_since_the_inner_run_waits_for_it():
    """A handler slower than the inner run still sees every event: the inner run waits for it."""
    seen = []
    inner = ScriptedModel([[function_call("pause", "{}", call_id="i1")], [assistant_message("inner done")]])

    @function_tool
    def pause() -> str:
        return "paused"

    expert = Agent(name="Expert", model=inner, tools=[pause])
    tool = expert.as_tool("ask_expert", "Ask.", on_stream=lambda p: (time.sleep(0.01), seen.append(p["event"])))
    outer = ScriptedModel([[function_call("ask_expert", {"input": "q"}, call_id="c1")], [assistant_message("ok")]])
    assert Runner.run_sync(Agent(name="Boss", tools=[tool], model=outer), "go").final_output == "ok"
    names = [getattr(e, "name", e.type) for e in seen]
    assert names.count("tool_called") == 1 and names.count("tool_output") == 1
    assert names[-1] == "message_output_created" and len(names) > 4


def test_an_agent_tools_on_stream_receives_the_inner_runs_events_with_the_agent_and_the_call():
    seen = []
    inner = ScriptedModel([[assistant_message("inner says hi")]])
    expert = Agent(name="Expert", model=inner)
    tool = expert.as_tool("ask_expert", "Ask the expert.", on_stream=lambda payload: seen.append(payload))
    outer = ScriptedModel([[function_call("ask_expert", {"input": "q"}, call_id="c1")], [assistant_message("ok")]])
    result = Runner.run_sync(Agent(name="Boss", tools=[tool], model=outer), "go")
    assert result.final_output == "ok"
    assert {p["agent"].name for p in seen} == {"Expert"} and {p["tool_call"]["call_id"] for p in seen} == {"c1"}
    types = [p["event"].type for p in seen]
    assert types[0] == "agent_updated_stream_event" and "raw_response_event" in types
    assert seen[-1]["event"].name == "message_output_created" and inner.calls[0].streamed


def edit_in_place(event):
    """A reader that redacts what it shows in place: the model's arguments, then every item's text."""
    if event.type == "raw_response_event" and event.data.get("type") == "response.completed":
        for item in event.data["response"]["output"]:
            if item.get("type") == "function_call":
                item["arguments"] = '{"amount": 999}'
    if event.type == "run_item_stream_event":
        event.item.raw_item.update(output="EDITED", content="EDITED", arguments='{"amount": 999}')


@pytest.mark.parametrize("reader", ["a streamed run's reader", "an agent tool's on_stream"])
def test_a_stream_reader_editing_the_events_in_place_never_changes_what_runs_or_what_the_session_keeps(tmp_path,
                                                                                                         reader):
    """The reader was handed the run's own response and items, and the run waits for it: one that edited them in
    place changed the arguments the tool ran with (it paid 999, not the 5 the model asked for) and the history the
    session kept."""
    import asyncio

    from miniagents import SQLiteSession

    paid = []

    @function_tool
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    payer = Agent(name="Payer", tools=[pay], model=ScriptedModel(
        [[function_call("pay", {"amount": 5}, call_id="c1")], [assistant_message("done")]]))
    session = SQLiteSession("s", str(tmp_path / "s.db"))
    if reader == "an agent tool's on_stream":
        tool = payer.as_tool("ask_payer", "Pay.", session=session, on_stream=lambda p: edit_in_place(p["event"]))
        boss = Agent(name="Boss", tools=[tool], model=ScriptedModel(
            [[function_call("ask_payer", {"input": "pay 5"}, call_id="o1")], [assistant_message("ok")]]))
        assert Runner.run_sync(boss, "go").final_output == "ok"
        assert outputs_sent(boss.model.calls[1]) == {"o1": "done"}
    else:
        async def read():
            result = Runner.run_streamed(payer, "pay 5", session=session)
            async for event in result.stream_events():
                edit_in_place(event)
            return result

        assert asyncio.run(read()).final_output == "done"
    assert paid == [5] and outputs_sent(payer.model.calls[1]) == {"c1": "paid 5"}
    assert session.get_items()[1:] == [function_call("pay", {"amount": 5}, call_id="c1"),
                                       {"call_id": "c1", "output": "paid 5", "type": "function_call_output"},
                                       assistant_message("done")]


class DeepEventModel:
    """A custom model whose stream sends an event, then a response item, nested `depth` levels deep."""

    def __init__(self, depth: int):
        self.depth = depth

    def get_response(self, *args, **kwargs):
        raise AssertionError("only streamed here")

    def stream_response(self, *args, **kwargs):
        nested = "x"
        for _ in range(self.depth):
            nested = {"a": nested}
        yield {"type": "response.in_progress", "extra": nested}
        yield {"type": "response.completed", "response": {"id": "r1", "usage": {}, "output": [
            {**assistant_message("hi"), "extra": nested}]}}


@pytest.mark.parametrize("depth", [10, 300, 2_000, 20_000])
@pytest.mark.parametrize("reader", ["a streamed run's reader", "an agent tool's on_stream"])
def test_a_custom_models_stream_event_nested_past_what_python_copies_is_a_model_behavior_error(reader, depth):
    """The reader is handed a copy of each event; an event a custom model nested deeper than Python copies (the
    HTTP adapters refuse such an answer when they read it) made that copy raise a bare RecursionError out of the
    run (or, in an agent tool, told its model a RecursionError). It is the model's fault, said as one; an event
    the copy takes reaches the reader whole."""
    import asyncio

    from miniagents import ModelBehaviorError

    seen = []
    inner = Agent(name="Deep", model=DeepEventModel(depth))
    if reader == "an agent tool's on_stream":  # the inner run's failure is told to the model that called it
        tool = inner.as_tool("ask", "Ask.", on_stream=lambda p: seen.append(p["event"]))
        boss = Agent(name="Boss", tools=[tool], model=ScriptedModel(
            [[function_call("ask", {"input": "hi"}, call_id="o1")], [assistant_message("ok")]]))
        assert Runner.run_sync(boss, "go").final_output == "ok"
        told = outputs_sent(boss.model.calls[1])["o1"]
    else:
        async def read():
            result = Runner.run_streamed(inner, "hi")
            async for event in result.stream_events():
                seen.append(event)
            return result.final_output

        try:
            told = asyncio.run(read())
        except ModelBehaviorError as error:
            told = f"The agent 'Deep' could not finish: {error}"
    if depth >= 2_000:
        assert told == "The agent 'Deep' could not finish: The model's stream sent an event nested too deeply to " \
                       "copy for the reader"
        return
    assert told == "hi"
    first = next(event for event in seen if event.type == "raw_response_event")
    depth_seen, value = 0, first.data["extra"]
    while isinstance(value, dict):
        depth_seen, value = depth_seen + 1, value["a"]
    assert depth_seen == depth


# --- What an attack found: an agent that is its own tool nested until the stack ran out ---------------------------


def test_an_agent_tools_calls_one_after_another_in_one_context_never_add_up_to_its_nesting_bound():
    """A run gives each call a context of its own, but a program may call a tool's `on_invoke_tool` itself, one
    call after another in one context (as a test of its tools does): each call's nesting is undone when its inner
    run ends, so the call past MAX_NESTING runs as the first did, never refused as nested too deep."""
    from miniagents import ToolContext
    from miniagents.agent import MAX_NESTING

    helper = Agent(name="Helper", model=ScriptedModel([[assistant_message("done")]] * (MAX_NESTING + 2)))
    tool = helper.as_tool("ask", "Ask.")
    ctx = ToolContext(context=None, tool_name="ask", tool_call_id="c1", tool_arguments='{"input": "hi"}')
    assert [tool.on_invoke_tool(ctx, '{"input": "hi"}') for _ in range(MAX_NESTING + 2)] == ["done"] * (MAX_NESTING + 2)


def test_agent_tools_nested_past_max_nesting_are_not_run_and_the_model_is_told_so():
    """An agent that is its own tool, whose model always calls it: each call was a run nested one deeper, until a
    RecursionError deep in the kernel was told to the model as a failure (and a run paused past about 65 levels
    wrote a state, and a session journal, no load could read). The call past MAX_NESTING is not run; its model is
    told why, answers, and every nested run ends; a pause at the deepest level allowed loads from JSON."""
    from miniagents.agent import MAX_NESTING

    told = []

    def respond(call):
        outputs = [item["output"] for item in call.input if item.get("type") == "function_call_output"]
        told.extend(outputs)
        return [assistant_message("done")] if outputs else [function_call("me", {"input": "again"}, call_id="c")]

    model = ScriptedModel([respond] * (2 * MAX_NESTING + 2))
    agent = Agent(name="Recursive", model=model)
    agent.tools.append(agent.as_tool("me", "Asks myself."))
    assert Runner.run_sync(agent, "go").final_output == "done"
    assert told[0] == f"The agent 'Recursive' was not run: agent tools nest at most {MAX_NESTING} deep"
    assert told[1:] == ["done"] * MAX_NESTING and model.remaining_steps == 0


@pytest.mark.parametrize("bound_after", ["the same", "lowered"])
def test_a_run_paused_at_the_deepest_nesting_allowed_is_saved_loaded_and_resumed(bound_after, monkeypatch):
    """A paused inner run goes on however deep it is (a state saved under a larger bound): only a new call past
    the bound is refused, never a call whose inner calls ran."""
    from miniagents import RunState, agent as agent_module
    from miniagents.agent import MAX_NESTING

    paid = []

    @function_tool(needs_approval=True)
    def pay(x: str) -> str:
        paid.append(x)
        return "paid"

    def make(level):
        def respond(call):
            if any(item.get("type") == "function_call_output" for item in call.input):
                return [assistant_message(f"done {level}")]
            if level == MAX_NESTING:
                return [function_call("pay", {"x": "1"}, call_id="p")]
            return [function_call("deeper", {"input": "go"}, call_id=f"c{level}")]

        tools = [pay] if level == MAX_NESTING else [make(level + 1).as_tool("deeper", "")]
        return Agent(name=f"A{level}", model=ScriptedModel([respond] * 2), tools=tools)

    top = make(0)
    paused = Runner.run_sync(top, "go")
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    if bound_after == "lowered":
        monkeypatch.setattr(agent_module, "MAX_NESTING", 10)
    result = Runner.run_sync(top, RunState.from_string(top, state.to_string()))
    assert result.final_output == "done 0" and paid == ["1"]


def test_agent_tools_called_one_after_another_never_add_up_to_the_nesting_bound():
    from miniagents.agent import MAX_NESTING

    helper, helper_model = make_agent([[assistant_message("helped")]] * (MAX_NESTING + 1), name="Helper")
    agent, model = make_agent([[function_call("helper", {"input": "go"}, call_id=f"c{n}")]
                               for n in range(MAX_NESTING + 1)] + [[assistant_message("done")]],
                              tools=[helper.as_tool("helper", "Ask.")])
    assert Runner.run_sync(agent, "hi", max_turns=None).final_output == "done"
    assert outputs_sent(model.calls[-1])[f"c{MAX_NESTING}"] == "helped" and helper_model.remaining_steps == 0


def test_an_agent_tool_with_a_session_called_twice_at_once_raises_unfinished_turn_out_of_its_caller():
    """docs/sessions.md: an agent tool's session is one conversation; the first call's inner run paused after a call
    of its turn ran, so its turn stays journaled and the second call's new input is refused, out of the caller's run."""
    from miniagents import RunConfig, SQLiteSession
    from miniagents.errors import UnfinishedTurnError

    @function_tool
    def note(x: str) -> str:
        return "noted"

    @function_tool(needs_approval=True)
    def pay(x: str) -> str:
        return "paid"

    def inner_respond(call):
        return [function_call("note", {"x": "1"}, call_id="n"), function_call("pay", {"x": "1"}, call_id="p")]

    inner = Agent("Inner", model=ScriptedModel([inner_respond] * 2), tools=[note, pay])
    outer, _ = make_agent([[function_call("sub", {"input": "A"}, call_id="c1"),
                            function_call("sub", {"input": "B"}, call_id="c2")]],
                          tools=[inner.as_tool("sub", "", session=SQLiteSession("inner", ":memory:"))])
    with pytest.raises(UnfinishedTurnError):
        Runner.run_sync(outer, "go", run_config=RunConfig(max_function_tool_concurrency=1))
