"""Specification of issue 5: classes following pydantic v2's model protocol work wherever a type is accepted,
recognised by duck typing, and miniagents never imports pydantic.

The suite does not depend on pydantic: `ProtoModel` below implements the protocol's methods over a
dataclass. Every test runs against it, and once more against real pydantic models when pydantic happens
to be importable (skipped otherwise).

No `from __future__ import annotations` here: the tools below are defined inside tests with annotations
that name fixture classes, which must be real objects when the schema is built.
"""
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import typing
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import List, Optional

import pytest

from miniagents import Agent, ModelBehaviorError, Runner, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call
from support import make_agent, outputs_sent

from support import ROOT  # noqa: E402


# --- A pydantic-v2-protocol model class, standard library only ------------------------------------------


class ProtoValidationError(ValueError):
    pass


class ProtoModel:
    """model_json_schema / model_validate / model_validate_json / model_dump / model_dump_json over a dataclass.

    The schema is pydantic-shaped (titles, `$defs` + `$ref` for nested models, `anyOf` with null for
    Optional, defaults kept, no `additionalProperties`). Field descriptions come from
    `field(metadata={"description": ...})`. A subclass may define `check()` to reject values, like a
    pydantic validator. Every class records the objects it validated in `validated`.
    """

    validated: typing.ClassVar[list]

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.validated = []

    # schema
    @classmethod
    def _type_schema(cls, tp, defs):
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Union:
            return {"anyOf": [cls._type_schema(a, defs) for a in args]}
        if origin in (list, List):
            return {"type": "array", "items": cls._type_schema(args[0], defs)}
        if isinstance(tp, type) and issubclass(tp, ProtoModel):
            if tp.__name__ not in defs:
                defs[tp.__name__] = {}
                defs[tp.__name__] = tp._object_schema(defs)
            return {"$ref": f"#/$defs/{tp.__name__}"}
        if tp is datetime.date:
            return {"type": "string", "format": "date"}
        if tp is type(None):
            return {"type": "null"}
        return {"type": {str: "string", int: "integer", float: "number", bool: "boolean"}[tp]}

    @classmethod
    def _object_schema(cls, defs):
        hints = typing.get_type_hints(cls)
        props, required = {}, []
        for f in dataclasses.fields(cls):
            prop = cls._type_schema(hints[f.name], defs)
            if "$ref" not in prop:
                prop["title"] = f.name.replace("_", " ").title()
            if "description" in f.metadata:
                prop["description"] = f.metadata["description"]
            if f.default is not dataclasses.MISSING:
                prop["default"] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                prop["default"] = f.default_factory()
            else:
                required.append(f.name)
            props[f.name] = prop
        return {"properties": props, "required": required, "title": cls.__name__, "type": "object"}

    @classmethod
    def model_json_schema(cls):
        defs = {}
        schema = cls._object_schema(defs)
        defs.pop(cls.__name__, None)
        if defs:
            schema["$defs"] = defs
        return schema

    # validation
    @classmethod
    def _validate_value(cls, tp, value, where):
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Union:
            if value is None and type(None) in args:
                return None
            (inner,) = [a for a in args if a is not type(None)]
            return cls._validate_value(inner, value, where)
        if origin in (list, List):
            if not isinstance(value, list):
                raise ProtoValidationError(f"{where}: Input should be a valid list")
            return [cls._validate_value(args[0], v, f"{where}.{i}") for i, v in enumerate(value)]
        if isinstance(tp, type) and issubclass(tp, ProtoModel):
            return tp.model_validate(value)
        if tp is datetime.date:
            try:
                return datetime.date.fromisoformat(value)
            except (TypeError, ValueError):
                raise ProtoValidationError(f"{where}: Input should be a valid date") from None
        ok = isinstance(value, tp) and not (tp is int and isinstance(value, bool))
        if tp is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            raise ProtoValidationError(f"{where}: Input should be a valid {tp.__name__}")
        return value

    @classmethod
    def model_validate(cls, obj):
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, dict):
            raise ProtoValidationError(f"{cls.__name__}: Input should be an object")
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in obj:
                kwargs[f.name] = cls._validate_value(hints[f.name], obj[f.name], f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProtoValidationError(f"{f.name}: Field required")
        instance = cls(**kwargs)
        instance.check()
        cls.validated.append(instance)
        return instance

    @classmethod
    def model_validate_json(cls, data):
        return cls.model_validate(json.loads(data))

    def check(self):
        pass

    # dumping
    def model_dump(self, mode="python"):
        def dump(value):
            if isinstance(value, ProtoModel):
                return value.model_dump(mode=mode)
            if isinstance(value, list):
                return [dump(v) for v in value]
            if isinstance(value, datetime.date) and mode == "json":
                return value.isoformat()
            return value

        return {f.name: dump(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def model_dump_json(self):
        return json.dumps(self.model_dump(mode="json"))


@dataclass
class ProtoAddress(ProtoModel):
    city: str = field(metadata={"description": "The city."})
    zip_code: str


@dataclass
class ProtoPerson(ProtoModel):
    name: str = field(metadata={"description": "Full name."})
    age: int
    address: ProtoAddress
    nicknames: List[str] = field(default_factory=list)
    born: Optional[datetime.date] = None

    def check(self):
        if self.age < 0:
            raise ProtoValidationError("age: Value error, age must be non-negative")


@dataclass
class ProtoTeam(ProtoModel):
    name: str
    members: List[ProtoPerson]
    lead: Optional[ProtoPerson] = None


def _protocol_family():
    for cls in (ProtoAddress, ProtoPerson, ProtoTeam):
        cls.validated.clear()
    return SimpleNamespace(kind="protocol", Address=ProtoAddress, Person=ProtoPerson, Team=ProtoTeam)


def _pydantic_family():
    pydantic = pytest.importorskip("pydantic")
    if not hasattr(pydantic, "field_validator"):
        pytest.skip("pydantic v1 does not follow the v2 model protocol")
    from pydantic import BaseModel, Field, field_validator

    class Address(BaseModel):
        city: str = Field(description="The city.")
        zip_code: str

    class Person(BaseModel):
        name: str = Field(description="Full name.")
        age: int
        address: Address
        nicknames: List[str] = []
        born: Optional[datetime.date] = None

        @field_validator("age")
        @classmethod
        def _non_negative(cls, value):
            if value < 0:
                raise ValueError("age must be non-negative")
            return value

    class Team(BaseModel):
        name: str
        members: List[Person]
        lead: Optional[Person] = None

    return SimpleNamespace(kind="pydantic", Address=Address, Person=Person, Team=Team)


@pytest.fixture(params=["protocol", "pydantic"])
def models(request):
    return _protocol_family() if request.param == "protocol" else _pydantic_family()


ADA = {"name": "Ada Lovelace", "age": 36, "address": {"city": "London", "zip_code": "W1"},
       "nicknames": ["Enchantress of Numbers"], "born": None}
BAD_ADA = dict(ADA, age=-1)


def assert_strict_and_resolvable(schema):
    """Every object closed with every property required; every $ref points into the root's $defs."""
    defs = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object" or "properties" in node:
                assert node.get("additionalProperties") is False, node
                assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), node
            if "$ref" in node:
                assert node["$ref"].startswith("#/$defs/"), node
                assert node["$ref"].rsplit("/", 1)[-1] in defs, node
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)


def descriptions(schema):
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                found.append(node["description"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return found


# --- output_type ---------------------------------------------------------------------------------------------


def test_an_output_type_model_sends_the_classs_own_schema_in_strict_form(models):
    agent, model = make_agent([[assistant_message(json.dumps(ADA))]], output_type=models.Person)
    Runner.run_sync(agent, "who?")
    spec = model.calls[0].output_schema
    assert spec["name"] == "final_output" and spec["strict"] is True
    schema = spec["schema"]
    assert sorted(schema["properties"]) == ["address", "age", "born", "name", "nicknames"]
    assert_strict_and_resolvable(schema)
    assert "Full name." in descriptions(schema) and "The city." in descriptions(schema)


def test_an_output_type_model_makes_the_final_output_a_model_instance(models):
    agent, _ = make_agent([[assistant_message(json.dumps(ADA))]], output_type=models.Person)
    result = Runner.run_sync(agent, "who?")
    person = result.final_output
    assert isinstance(person, models.Person)
    assert isinstance(person.address, models.Address)
    assert person.model_dump(mode="json") == ADA
    if models.kind == "protocol":
        assert models.Person.validated == [person]  # built by the class's own validator


def test_an_output_type_model_with_nested_lists_of_models_and_optional_models(models):
    team = {"name": "Analytical", "members": [ADA, dict(ADA, name="Charles Babbage", age=79)], "lead": ADA}
    agent, model = make_agent([[assistant_message(json.dumps(team))]], output_type=models.Team)
    result = Runner.run_sync(agent, "team?")
    assert_strict_and_resolvable(model.calls[0].output_schema["schema"])
    assert all(isinstance(m, models.Person) for m in result.final_output.members)
    assert isinstance(result.final_output.lead, models.Person)
    assert result.final_output.model_dump(mode="json") == team


def test_a_model_validation_failure_is_a_model_behavior_error_with_the_raw_text_and_the_validators_message(models):
    raw = json.dumps(BAD_ADA)
    agent, _ = make_agent([[assistant_message(raw)]], output_type=models.Person)
    with pytest.raises(ModelBehaviorError) as info:
        Runner.run_sync(agent, "who?")
    assert raw in str(info.value)
    assert "age must be non-negative" in str(info.value)


# --- tool parameters -------------------------------------------------------------------------------------------


def test_a_tool_parameter_annotated_with_a_model_gets_its_schema_and_a_built_instance(models):
    received = []

    def register(person: models.Person) -> str:
        received.append(person)
        return f"registered {person.name}"

    tool = function_tool(register)
    agent, model = make_agent([[function_call("register", {"person": ADA}, call_id="c1")], [assistant_message("ok")]],
                              tools=[tool])
    Runner.run_sync(agent, "go")
    params = model.calls[0].tools[0]["parameters"]
    assert_strict_and_resolvable(params)
    assert "Full name." in descriptions(params)
    assert outputs_sent(model.calls[1]) == {"c1": "registered Ada Lovelace"}
    (person,) = received
    assert isinstance(person, models.Person) and isinstance(person.address, models.Address)
    assert person.model_dump(mode="json") == ADA
    if models.kind == "protocol":
        assert models.Person.validated == [person]


def test_a_model_parameter_that_fails_validation_goes_back_to_the_model_as_a_fixable_error(models):
    received = []

    def register(person: models.Person) -> str:
        received.append(person)
        return "registered"

    agent, model = make_agent([[function_call("register", {"person": BAD_ADA}, call_id="c1")],
                               [function_call("register", {"person": ADA}, call_id="c2")],
                               [assistant_message("ok")]], tools=[function_tool(register)])
    result = Runner.run_sync(agent, "go")
    error = outputs_sent(model.calls[1])["c1"]
    assert "age must be non-negative" in error
    assert "person" in error
    assert [p.name for p in received] == ["Ada Lovelace"]  # only the corrected call ran
    assert result.final_output == "ok"


def test_a_list_of_models_parameter_is_built_item_by_item(models):
    received = []

    def register_all(people: List[models.Person]) -> int:
        received.extend(people)
        return len(people)

    agent, model = make_agent([[function_call("register_all", {"people": [ADA, ADA]}, call_id="c1")],
                               [assistant_message("ok")]], tools=[function_tool(register_all)])
    Runner.run_sync(agent, "go")
    assert_strict_and_resolvable(model.calls[0].tools[0]["parameters"])
    assert outputs_sent(model.calls[1]) == {"c1": "2"}
    assert len(received) == 2 and all(isinstance(p, models.Person) for p in received)


def test_an_optional_model_parameter_accepts_null_and_an_object(models):
    received = []

    def maybe(person: Optional[models.Person]) -> str:
        received.append(person)
        return "none" if person is None else person.name

    agent, model = make_agent([[function_call("maybe", {"person": None}, call_id="c1"),
                                function_call("maybe", {"person": ADA}, call_id="c2")],
                               [assistant_message("ok")]], tools=[function_tool(maybe)])
    Runner.run_sync(agent, "go")
    assert_strict_and_resolvable(model.calls[0].tools[0]["parameters"])
    assert outputs_sent(model.calls[1]) == {"c1": "none", "c2": "Ada Lovelace"}
    assert sorted(received, key=lambda p: p is not None)[0] is None
    assert any(isinstance(p, models.Person) for p in received)


# --- tool results -----------------------------------------------------------------------------------------------


def _born_ada(models):
    return models.Person.model_validate(dict(ADA, born="1815-12-10"))


def test_a_tool_returning_a_model_instance_shows_the_model_its_json_dump(models):
    # a date field: the dataclass fields alone are not JSON, only model_dump(mode="json") is
    person = _born_ada(models)

    def find() -> models.Person:
        return person

    agent, model = make_agent([[function_call("find", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[function_tool(find)])
    result = Runner.run_sync(agent, "go")
    text = outputs_sent(model.calls[1])["c1"]
    assert json.loads(text) == json.loads(person.model_dump_json())
    assert json.loads(text)["born"] == "1815-12-10"
    (item,) = [i for i in result.new_items if i.type == "tool_call_output_item"]
    assert item.output is person


def test_a_tool_returning_a_list_of_model_instances_shows_the_model_json(models):
    people = [models.Person.model_validate(ADA), models.Person.model_validate(dict(ADA, name="B"))]

    def find_all() -> list:
        return people

    agent, model = make_agent([[function_call("find_all", "{}", call_id="c1")], [assistant_message("ok")]],
                              tools=[function_tool(find_all)])
    Runner.run_sync(agent, "go")
    assert json.loads(outputs_sent(model.calls[1])["c1"]) == [p.model_dump(mode="json") for p in people]


# --- Agent.as_tool(parameters=Model) --------------------------------------------------------------------------


def test_as_tool_with_model_parameters_sends_the_models_strict_schema_and_passes_its_json(models):
    profiler, sub_model = make_agent([[assistant_message("profile done")]], name="Profiler")
    tool = profiler.as_tool("profile", "Profile a person.", parameters=models.Person)
    agent, model = make_agent([[function_call("profile", ADA, call_id="c1")], [assistant_message("ok")]],
                              tools=[tool])
    Runner.run_sync(agent, "go")
    params = model.calls[0].tools[0]["parameters"]
    assert sorted(params["properties"]) == ["address", "age", "born", "name", "nicknames"]
    assert_strict_and_resolvable(params)
    (message,) = sub_model.calls[0].input
    assert message["role"] == "user"
    assert json.loads(message["content"]) == ADA
    assert outputs_sent(model.calls[1]) == {"c1": "profile done"}


def test_as_tool_model_parameters_that_fail_validation_go_back_to_the_model(models):
    profiler, sub_model = make_agent([], name="Profiler")
    tool = profiler.as_tool("profile", "Profile a person.", parameters=models.Person)
    agent, model = make_agent([[function_call("profile", BAD_ADA, call_id="c1")], [assistant_message("ok")]],
                              tools=[tool])
    Runner.run_sync(agent, "go")
    assert sub_model.calls == ()
    assert "age must be non-negative" in outputs_sent(model.calls[1])["c1"]


# --- miniagents never imports pydantic -------------------------------------------------------------------------


_FULL_RUN = '''
import json, sys
from dataclasses import dataclass
before = set(sys.modules)
from miniagents import Agent, Runner, function_tool
from miniagents.testing import ScriptedModel, assistant_message, function_call

@dataclass
class Point:
    x: int
    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "title": "Point", "properties": {"x": {"type": "integer", "title": "X"}},
                "required": ["x"]}
    @classmethod
    def model_validate(cls, obj):
        return cls(**obj)
    @classmethod
    def model_validate_json(cls, data):
        return cls.model_validate(json.loads(data))
    def model_dump(self, mode="python"):
        return {"x": self.x}
    def model_dump_json(self):
        return json.dumps(self.model_dump())

@function_tool
def double(p: Point) -> Point:
    return Point(p.x * 2)

model = ScriptedModel([[function_call("double", {"p": {"x": 2}}, call_id="c1")], [assistant_message('{"x": 4}')]])
result = Runner.run_sync(Agent(name="a", model=model, tools=[double], output_type=Point), "go")
assert result.final_output == Point(4), result.final_output
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "pydantic"))
'''


def test_import_and_a_full_run_with_a_protocol_model_leave_pydantic_unimported():
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", "import sys; import miniagents; print('pydantic' in sys.modules)"],
                         cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    out = subprocess.run([sys.executable, "-c", _FULL_RUN], cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
