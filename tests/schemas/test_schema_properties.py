"""Property tests for miniagents.schema: generated annotations give strict-valid schemas, generated values
survive validate_value, and the strict pass is idempotent and pure."""
import copy
import dataclasses
import inspect
import itertools
import json
from typing import List, Optional, Tuple, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from typing import Literal
except ImportError:  # pragma: no cover
    from typing_extensions import Literal

from miniagents.schema import ensure_strict_json_schema, function_schema, type_schema
from miniagents.validate import validate_value

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_ids = itertools.count()
NAMES = st.text("abcdefgh_", min_size=1, max_size=6).filter(lambda s: s.isidentifier())


# ------------------------------------------------------------------------------ generated annotations

def _dataclass(types):
    return dataclasses.make_dataclass(f"DC{next(_ids)}", [(f"f{i}", t) for i, t in enumerate(types)])


def _typeddict(args):
    types, total = args
    return TypedDict(f"TD{next(_ids)}", {f"k{i}": t for i, t in enumerate(types)}, total=total)


LEAVES = st.sampled_from([str, int, float, bool]) | st.lists(
    st.text("xyz", min_size=1, max_size=3), min_size=1, max_size=3, unique=True).map(lambda v: Literal[tuple(v)])


def _extend(children, mixed=False):
    """`mixed`: fixed tuples of mixed item types too, which strict mode refuses (strict endpoints take no
    prefixItems: which type stands where cannot be sent)."""
    fixed = st.lists(children, min_size=1, max_size=3) if mixed else st.tuples(children, st.integers(1, 3)).map(
        lambda tn: [tn[0]] * tn[1])
    return st.one_of(
        children.map(lambda t: List[t]),
        children.map(lambda t: Optional[t]),
        fixed.map(lambda ts: Tuple[tuple(ts)]),
        children.map(lambda t: Tuple[t, ...]),
        st.lists(children, min_size=1, max_size=3).map(_dataclass),
        st.tuples(st.lists(children, min_size=1, max_size=3), st.booleans()).map(_typeddict),
    )


ANNOTATIONS = st.recursive(LEAVES, _extend, max_leaves=8)  # what strict mode takes
ANY_ANNOTATIONS = st.recursive(LEAVES, lambda children: _extend(children, mixed=True), max_leaves=8)


def values_for(tp):
    """A strategy for Python values of the annotation `tp`."""
    simple = {str: st.text(max_size=8), int: st.integers(-10**6, 10**6), bool: st.booleans(),
              float: st.floats(allow_nan=False, allow_infinity=False, width=32)}
    if tp in simple:
        return simple[tp]
    if dataclasses.is_dataclass(tp):
        return st.builds(tp, **{f.name: values_for(f.type) for f in dataclasses.fields(tp)})
    if hasattr(tp, "__total__"):
        fields = {k: values_for(t) for k, t in tp.__annotations__.items()}
        required = {k: v for k, v in fields.items() if k in tp.__required_keys__}
        return st.fixed_dictionaries(required, optional={k: v for k, v in fields.items() if k not in required})
    origin, args = getattr(tp, "__origin__", None), getattr(tp, "__args__", ())
    if origin is Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(values_for(args[0]), max_size=3)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(values_for(args[0]), max_size=3).map(tuple)
        return st.tuples(*map(values_for, args))
    return st.none() | values_for(next(a for a in args if a is not type(None)))  # Optional


def to_json(value):
    """What a model would send: the value as decoded JSON."""
    def plain(v):
        if dataclasses.is_dataclass(v):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    return json.loads(json.dumps(plain(value)))


# ------------------------------------------------------------------------------ strict-validity checker

FORBIDDEN = {"oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "propertyNames",
             "unevaluatedProperties", "minProperties", "maxProperties", "uniqueItems", "contains"}


def assert_strict_valid(schema):
    assert schema.get("type") == "object" and "anyOf" not in schema, "root must be a plain object"
    defs = schema.get("$defs", {})

    def walk(node, where):
        if isinstance(node, list):
            for i, x in enumerate(node):
                walk(x, f"{where}[{i}]")
            return
        if not isinstance(node, dict):
            return
        assert not FORBIDDEN & set(node), f"{where}: forbidden keys {FORBIDDEN & set(node)}"
        if "$ref" in node:
            assert set(node) == {"$ref"}, f"{where}: $ref with siblings"
            assert node["$ref"].startswith("#/$defs/") and node["$ref"][8:] in defs, f"{where}: dangling $ref"
        if node.get("type") == "object" or "properties" in node:
            assert node.get("additionalProperties") is False, f"{where}: object not closed"
            assert node.get("required") == list(node.get("properties", {})), f"{where}: not all required"
        if "default" in node:
            assert node["default"] is not None, f"{where}: null default"
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    walk(sub, f"{where}.{name}")
            elif key in ("items", "anyOf", "prefixItems"):
                walk(value, f"{where}.{key}")
    walk(schema, "#")


# ------------------------------------------------------------------------------ properties

@SETTINGS
@given(ANNOTATIONS)
def test_output_schemas_of_generated_annotations_are_strict_valid(tp):
    schema, _ = type_schema(tp)
    assert_strict_valid(schema)
    json.dumps(schema)


@SETTINGS
@given(st.lists(ANNOTATIONS, min_size=0, max_size=4))
def test_function_schemas_of_generated_signatures_are_strict_valid(types):
    fs = function_schema(_function(types))
    assert_strict_valid(fs.params_json_schema)
    assert list(fs.params_json_schema["properties"]) == [f"p{i}" for i in range(len(types))]


def _function(types):
    """A function `f(p0: types[0], p1: types[1], ...)`."""
    def f(*args):
        return args
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    f.__signature__ = inspect.Signature([inspect.Parameter(f"p{i}", kind, annotation=t) for i, t in enumerate(types)])
    f.__annotations__ = {f"p{i}": t for i, t in enumerate(types)}
    return f


@SETTINGS
@given(ANY_ANNOTATIONS.flatmap(lambda tp: st.tuples(st.just(tp), values_for(tp))))
def test_generated_values_survive_a_json_round_trip_through_validate_value(case):
    tp, value = case
    back = validate_value(tp, to_json(value))
    assert back == value and type(back) is type(value)


@SETTINGS
@given(st.lists(ANNOTATIONS, min_size=1, max_size=3).flatmap(
    lambda ts: st.tuples(st.just(ts), st.tuples(*map(values_for, ts)))))
def test_to_call_args_returns_the_values_a_model_sent(case):
    types, values = case
    fs = function_schema(_function(types))
    args, kwargs = fs.to_call_args({f"p{i}": to_json(v) for i, v in enumerate(values)})
    assert tuple(args) == values and kwargs == {}


@SETTINGS
@given(ANY_ANNOTATIONS.flatmap(lambda tp: st.tuples(st.just(tp), values_for(tp))))
def test_wrong_json_kind_is_always_an_arguments_error_never_a_crash(case):
    from miniagents.validate import ArgumentsError
    tp, _ = case
    for junk in (object, [object], "x", 1.5, True, None):
        try:
            validate_value(tp, junk)
        except ArgumentsError:
            pass


# generated JSON schemas (hand-written tool schemas) for the strict pass
SCHEMA_LEAVES = st.sampled_from([{"type": "string"}, {"type": "integer", "default": None}, {"type": "number"},
                                 {"type": "boolean", "default": True}, {"enum": ["a", "b"]}, {"type": "null"}])


def _schema_extend(children):
    props = st.dictionaries(NAMES, children, max_size=3)
    return st.one_of(
        props.map(lambda p: {"type": "object", "properties": p}),
        props.map(lambda p: {"properties": p, "required": list(p)[:1]}),
        children.map(lambda c: {"type": "array", "items": c}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"anyOf": cs}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"oneOf": cs}),
        children.map(lambda c: {"allOf": [c], "description": "d"}),
        children.map(lambda c: {"$ref": "#/$defs/Shared", "description": "with a sibling"}),
        children.map(lambda c: {"$ref": "#/$defs/Shared"}),
    )


SCHEMAS = st.tuples(st.dictionaries(NAMES, st.recursive(SCHEMA_LEAVES, _schema_extend, max_leaves=10), max_size=4),
                    st.recursive(SCHEMA_LEAVES, _schema_extend, max_leaves=5)).map(
    lambda pd: {"type": "object", "properties": pd[0],
                "$defs": {"Shared": {"type": "object", "properties": {"s": pd[1]}}}})


@SETTINGS
@given(SCHEMAS)
def test_strict_pass_is_idempotent_and_never_mutates_its_input(schema):
    before = copy.deepcopy(schema)
    once = ensure_strict_json_schema(schema)
    assert schema == before
    assert ensure_strict_json_schema(once) == once
    assert ensure_strict_json_schema(copy.deepcopy(once)) == once


@SETTINGS
@given(SCHEMAS)
def test_strict_pass_output_is_strict_valid(schema):
    assert_strict_valid(ensure_strict_json_schema(schema))


def test_checker_catches_a_non_strict_schema():
    with pytest.raises(AssertionError):
        assert_strict_valid({"type": "object", "properties": {"a": {"type": "string"}}, "required": []})
