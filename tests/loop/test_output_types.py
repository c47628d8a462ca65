"""Specification of structured final outputs (`Agent.output_type`). Issue 2, behaviour 12."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, List, Optional, TypedDict

import pytest

try:
    from typing import Literal
except ImportError:  # pragma: no cover
    from typing_extensions import Literal

from miniagents import Agent, ModelBehaviorError, Runner, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent


def all_objects(node):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for v in node.values():
            yield from all_objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from all_objects(v)


def assert_strict(schema):
    objects = list(all_objects(schema))
    assert objects
    for obj in objects:
        assert obj.get("additionalProperties") is False, obj
        assert sorted(obj.get("required", [])) == sorted(obj.get("properties", {})), obj


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


@dataclass
class Location:
    city: str
    country: str


@dataclass
class WeatherReport:
    """A weather report."""

    location: Location
    temperature: float
    mood: Mood
    unit: Literal["c", "f"]
    notes: Optional[str] = None


class Movie(TypedDict):
    title: str
    year: int


def test_a_dataclass_output_type_is_wrapped_as_response_as_upstream_does_and_the_final_output_is_an_instance():
    agent, model = make_agent([[assistant_message(
        '{"response": {"location": {"city": "Oslo", "country": "NO"}, "temperature": 21.5, "mood": "happy", '
        '"unit": "c", "notes": null}}')]], output_type=WeatherReport)
    result = Runner.run_sync(agent, "weather?")
    spec = model.calls[0].output_schema
    assert spec["name"] == "final_output" and spec["strict"] is True
    assert spec["schema"]["type"] == "object" and spec["schema"]["required"] == ["response"]
    inner = spec["schema"]["$defs"]["WeatherReport"]
    assert sorted(inner["properties"]) == ["location", "mood", "notes", "temperature", "unit"]
    assert_strict(spec["schema"])
    assert result.final_output == WeatherReport(Location("Oslo", "NO"), 21.5, Mood.HAPPY, "c", None)
    assert isinstance(result.final_output.location, Location)
    assert result.final_output.mood is Mood.HAPPY
    assert result.final_output_as(WeatherReport, raise_if_incorrect_type=True) is result.final_output


def test_a_typeddict_output_type_gives_a_dict():
    agent, model = make_agent([[assistant_message('{"title": "Alien", "year": 1979}')]], output_type=Movie)
    result = Runner.run_sync(agent, "a film")
    assert result.final_output == {"title": "Alien", "year": 1979}
    assert sorted(model.calls[0].output_schema["schema"]["properties"]) == ["title", "year"]
    assert_strict(model.calls[0].output_schema["schema"])


def test_a_non_object_output_type_is_wrapped_as_response_and_unwrapped_after_parsing():
    agent, model = make_agent([[assistant_message('{"response": [3, 1, 2]}')]], output_type=List[int])
    result = Runner.run_sync(agent, "numbers")
    schema = model.calls[0].output_schema["schema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["response"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["response"]["type"] == "array"
    assert schema["properties"]["response"]["items"]["type"] == "integer"
    assert result.final_output == [3, 1, 2]


@pytest.mark.parametrize("output_type, text, expected", [
    (int, '{"response": 42}', 42),
    (bool, '{"response": false}', False),
    (float, '{"response": 2}', 2.0),
    (List[Location], '{"response": [{"city": "Rome", "country": "IT"}]}', [Location("Rome", "IT")]),
])
def test_primitive_and_list_output_types_are_wrapped(output_type, text, expected):
    agent, model = make_agent([[assistant_message(text)]], output_type=output_type)
    result = Runner.run_sync(agent, "x")
    assert result.final_output == expected
    assert type(result.final_output) is type(expected)
    assert list(model.calls[0].output_schema["schema"]["properties"]) == ["response"]



def test_an_unhashable_output_type_is_built_each_run_instead_of_cached():
    output_type = Annotated[int, {"unit": "items"}]  # metadata that is a dict makes the annotation unhashable
    for answer in (3, 4):
        agent, model = make_agent([[assistant_message(f'{{"response": {answer}}}')]], output_type=output_type)
        assert Runner.run_sync(agent, "how many?").final_output == answer
        assert model.calls[0].output_schema["schema"]["properties"]["response"] == {"type": "integer"}


def test_a_plain_text_output_schema_has_no_json_schema_to_give():
    from miniagents import AgentOutputSchema, UserError

    with pytest.raises(UserError, match="Output type is plain text, so no JSON schema is available"):
        AgentOutputSchema(str).json_schema()

@pytest.mark.parametrize("output_type", [None, str])
def test_a_text_agent_sends_no_output_schema(output_type):
    agent, model = make_agent([[assistant_message('{"not": "parsed"}')]], output_type=output_type)
    result = Runner.run_sync(agent, "x")
    assert model.calls[0].output_schema is None
    assert result.final_output == '{"not": "parsed"}'


def test_output_that_is_not_json_is_a_model_behavior_error_carrying_the_raw_text():
    agent, model = make_agent([[assistant_message("Sure! The weather is nice.")]], output_type=Location)
    with pytest.raises(ModelBehaviorError, match="Sure! The weather is nice.") as info:
        Runner.run_sync(agent, "x")
    assert info.value.run_data is not None
    assert len(model.calls) == 1


def test_json_of_the_wrong_shape_is_a_model_behavior_error_naming_the_problem_and_carrying_the_raw_text():
    agent, _ = make_agent([[assistant_message('{"response": {"city": "Oslo"}}')]], output_type=Location)
    with pytest.raises(ModelBehaviorError) as info:
        Runner.run_sync(agent, "x")
    assert "country" in str(info.value)
    assert '{"response": {"city": "Oslo"}}' in str(info.value)
    assert info.value.raw_text == '{"response": {"city": "Oslo"}}'  # kept whole for a caller's re-prompt


def test_a_bug_in_an_output_types_post_init_is_raised_as_it_is_and_a_check_there_is_the_models_mistake():
    """A TypeError from a bug in __post_init__ was an InvalidFinalOutput (a ModelBehaviorError), as if the model's
    answer were wrong; a ValueError there is a check on the value, the model's mistake, as before."""
    @dataclass
    class Quote:
        qty: int

        def __post_init__(self):
            if self.qty <= 0:
                raise ValueError("qty must be positive")
            self.total = None * self.qty

    agent, _ = make_agent([[assistant_message('{"response": {"qty": 0}}')]], output_type=Quote)
    with pytest.raises(ModelBehaviorError, match="invalid Quote: qty must be positive"):
        Runner.run_sync(agent, "x")
    agent, _ = make_agent([[assistant_message('{"response": {"qty": 2}}')]], output_type=Quote)
    with pytest.raises(TypeError, match="unsupported operand"):
        Runner.run_sync(agent, "x")


def test_a_wrapped_output_without_the_response_key_is_a_model_behavior_error():
    agent, _ = make_agent([[assistant_message("[1, 2]")]], output_type=List[int])
    with pytest.raises(ModelBehaviorError, match=r"\[1, 2\]"):
        Runner.run_sync(agent, "x")


def test_a_message_that_arrives_with_a_tool_call_does_not_end_a_structured_run():
    @function_tool
    def lookup(city: str) -> str:
        return "NO"

    agent, model = make_agent([
        [assistant_message('{"response": {"city": "Early", "country": "XX"}}'),
         function_call("lookup", {"city": "Oslo"}, call_id="c1")],
        [assistant_message('{"response": {"city": "Oslo", "country": "NO"}}')],
    ], output_type=Location, tools=[lookup])
    result = Runner.run_sync(agent, "x")
    assert result.final_output == Location("Oslo", "NO")
    assert len(model.calls) == 2


def test_a_structured_agent_that_returns_no_text_is_asked_again():
    agent, model = make_agent([[], [assistant_message('{"response": {"city": "Oslo", "country": "NO"}}')]],
                              output_type=Location)
    result = Runner.run_sync(agent, "x")
    assert result.final_output == Location("Oslo", "NO")
    assert len(model.calls) == 2


@pytest.mark.with_shells  # upstream's error_handlers: the upstream shell's plugin
def test_a_structured_agent_with_no_text_goes_to_the_invalid_final_output_handler_when_there_is_one():
    from miniagents.upstream import Runner  # upstream's error_handlers
    errors = []

    def on_invalid(data):
        errors.append(str(data.error))
        return '{"response": {"city": "Nowhere", "country": "XX"}}'

    agent, model = make_agent([[]], output_type=Location)
    result = Runner.run_sync(agent, "x", error_handlers={"invalid_final_output": on_invalid})
    assert errors == ["Model returned no final output for the structured output type."]
    assert result.final_output == Location("Nowhere", "XX")
    assert len(model.calls) == 1


def test_stop_on_first_tool_gives_a_structured_agent_the_tools_value():
    @function_tool
    def locate() -> Location:
        return Location("Paris", "FR")

    agent, _ = make_agent([[function_call("locate", "{}", call_id="c1")]], output_type=Location, tools=[locate],
                          tool_use_behavior="stop_on_first_tool")
    assert Runner.run_sync(agent, "x").final_output == Location("Paris", "FR")


def test_the_output_schema_follows_the_current_agent_after_a_handoff():
    target, target_model = make_agent([[assistant_message('{"title": "Heat", "year": 1995}')]], name="Critic",
                                      output_type=Movie)
    agent, model = make_agent([[function_call("transfer_to_critic", "{}", call_id="h1")]], handoffs=[target])
    result = Runner.run_sync(agent, "x")
    assert model.calls[0].output_schema is None
    assert target_model.calls[0].output_schema["name"] == "final_output"
    assert result.final_output == {"title": "Heat", "year": 1995}


def test_a_dict_type_stands_as_the_root_and_a_pydantic_free_typeddict_too():
    """Upstream's rule: only pydantic models and dict types (TypedDicts, dict[str, T]) are not wrapped."""
    from miniagents import AgentOutputSchema

    assert AgentOutputSchema(Movie).json_schema()["required"] == ["title", "year"]
    loose = AgentOutputSchema(dict, strict_json_schema=False)
    assert loose.json_schema()["type"] == "object" and "response" not in loose.json_schema().get("properties", {})
    assert loose.validate_json('{"any": [1]}') == {"any": [1]}
    for wrapped in (Location, List[str], int):
        assert AgentOutputSchema(wrapped).json_schema()["required"] == ["response"]


def test_a_type_strict_mode_cannot_express_says_how_to_send_it_non_strict():
    from miniagents import AgentOutputSchema, UserError

    with pytest.raises(UserError, match=r"AgentOutputSchema\(YourType, strict_json_schema=False\)"):
        AgentOutputSchema(dict)


def test_output_schema_names_follow_upstream():
    from typing import Dict

    from miniagents import AgentOutputSchema

    assert [AgentOutputSchema(t).name() for t in (Location, List[str])] == ["Location", "list[str]"]
    assert AgentOutputSchema(Dict[str, int], strict_json_schema=False).name() == "dict[str, int]"
    assert AgentOutputSchema(None).name() == "str"


def test_a_union_output_type_reads_its_arms_in_its_own_order_whatever_agent_was_made_first():
    """`Union[int, float] == Union[float, int]`, but the first arm that fits wins: each order keeps its own schema."""
    from typing import Union

    from miniagents.agent_output import output_schema

    first, second = output_schema(Union[int, float]), output_schema(Union[float, int])
    assert type(first.validate_json('{"response": 2}')) is int
    assert type(second.validate_json('{"response": 2}')) is float
    assert output_schema(Union[int, float]) is first  # still built once


def test_a_non_strict_output_type_ignores_the_keys_its_schema_let_the_model_add():
    from miniagents import AgentOutputSchema

    @dataclass
    class Loc:
        city: str

    text = '{"response": {"city": "Paris", "country": "FR"}}'
    assert AgentOutputSchema(List[Loc], strict_json_schema=False).validate_json(text.replace(
        '{"city"', '[{"city"').replace('}}', '}]}')) == [Loc("Paris")]
    with pytest.raises(ModelBehaviorError, match="unexpected field 'country'"):  # strict: the schema forbade it
        AgentOutputSchema(List[Loc]).validate_json(text.replace('{"city"', '[{"city"').replace('}}', '}]}'))


def test_a_named_tuple_is_written_as_the_object_its_schema_describes():
    from typing import NamedTuple

    from miniagents import AgentOutputSchema
    from miniagents.validate import jsonable

    class Point(NamedTuple):
        x: int
        y: int

    schema = AgentOutputSchema(Point)
    assert jsonable(Point(1, 2)) == {"x": 1, "y": 2} and jsonable((1, 2)) == [1, 2]
    assert schema.validate_json(schema.model_text(Point(1, 2))) == Point(1, 2)


@pytest.mark.with_shells  # upstream's error_handlers: the upstream shell's plugin
def test_a_custom_schema_that_raises_the_models_mistake_is_answered_by_the_error_handler():
    """`AgentOutputSchemaBase.validate_json` raises `ModelBehaviorError` when an answer does not fit (its contract):
    the run treats that as the built-in schema's `InvalidFinalOutput`, so the handler is asked."""
    import json

    from miniagents import AgentOutputSchemaBase
    from miniagents.upstream import Runner as UpstreamRunner

    class Shouted(AgentOutputSchemaBase):
        def is_plain_text(self):
            return False

        def name(self):
            return "shouted"

        def json_schema(self):
            return {"type": "object", "properties": {}, "additionalProperties": False}

        def is_strict_json_schema(self):
            return True

        def validate_json(self, json_str):
            try:
                return json.loads(json_str)
            except ValueError as e:
                raise ModelBehaviorError(f"not JSON: {e}") from None

    seen = []
    agent = Agent(name="a", output_type=Shouted(), model=ScriptedModel([[assistant_message("not json")]]))
    result = UpstreamRunner.run_sync(agent, "hi", error_handlers={
        "invalid_final_output": lambda data: seen.append(str(data.error)) or {"fallback": True}})
    assert result.final_output == {"fallback": True} and seen == ["not JSON: Expecting value: line 1 column 1 (char 0)"]
    with pytest.raises(ModelBehaviorError, match="not JSON"):  # no handler: the schema's own error
        Runner.run_sync(agent.clone(model=ScriptedModel([[assistant_message("not json")]])), "hi")


@pytest.mark.with_shells  # upstream's error_handlers: the upstream shell's plugin
def test_an_error_handlers_output_that_json_cannot_write_is_refused_naming_it():
    import datetime
    from typing import Any

    from miniagents import AgentOutputSchema, UserError
    from miniagents.upstream import Runner as UpstreamRunner

    agent = Agent(name="a", model=ScriptedModel([[assistant_message("not json")]]),
                  output_type=AgentOutputSchema(Any, strict_json_schema=False))
    with pytest.raises(UserError, match="final_output: date is not JSON"):
        UpstreamRunner.run_sync(agent, "x", error_handlers={
            "invalid_final_output": lambda data: datetime.date(2020, 1, 1)})
