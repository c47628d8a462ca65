"""What a model sends that no signature takes, and what a signature asks that no value could give.

Found by attacking the tool layer: nesting deeper than Python walks, numbers beyond any float, non-finite
numbers, set items that cannot be hashed, InitVars, results that cannot be shown, unions nested in themselves.
Each case ends in a message the model can act on, an error where the tool is made, or the tool's real result;
never a bare exception, and never work that grows faster than what the model sent.
"""
import copy
import dataclasses
import enum
import functools
import json
import math
import re
from dataclasses import InitVar, dataclass
import typing
from typing import Dict, FrozenSet, List, Literal, Optional, Set, Tuple, Union
from unittest import mock

import pytest
from hypothesis import given, strategies as st

from miniagents import (FunctionTool, ModelBehaviorError, RunContextWrapper, Runner, SQLiteSession, UserError,
                        function_tool)
from miniagents.agent_output import AgentOutputSchema, InvalidFinalOutput
from miniagents import docstrings, upstream, validate
from miniagents.docstrings import parse_docstring
from miniagents.schema import wire_schema
from miniagents.testing import assistant_message, function_call
from miniagents.validate import ArgumentsError, parse_arguments, validate_value
from support import make_agent, outputs_sent

DEEP = 900  # below the decoder's own limit, deep enough that a second walk of the value overflows the stack


def deep_arguments(leaf: str) -> str:
    return '{"x": ' + "[" * DEEP + leaf + "]" * DEEP + "}"


def told(tool, arguments, call_id="c1", **agent_kw):
    agent, model = make_agent([[function_call(tool.name, arguments, call_id=call_id)], [assistant_message("done")]],
                              tools=[tool], **agent_kw)
    Runner.run_sync(agent, "go")
    return outputs_sent(model.calls[1])[call_id]


@pytest.mark.parametrize("leaf", ['"é"', '"\\u00e9"'])
@pytest.mark.parametrize("options", [{}, {"needs_approval": lambda ctx, params, call_id: False}])
def test_arguments_nested_too_deeply_with_text_to_repair_are_the_models_mistake(leaf, options):
    @function_tool(**options)
    def f(x: int = 0) -> str:
        return "ran"

    text = told(f, deep_arguments(leaf))
    assert text.startswith("Invalid JSON input for tool f") and "ran" not in text


def test_with_every_failure_raised_deep_arguments_are_a_model_behavior_error():
    @function_tool(failure_error_function=None)
    def f(x: int = 0) -> str:
        return "ran"

    with pytest.raises(ModelBehaviorError, match="Invalid JSON input for tool f"):
        told(f, deep_arguments('"é"'))


def test_a_repeated_call_id_with_deep_arguments_and_its_approval_are_no_recursion_error():
    @function_tool(needs_approval=True)
    def f(x: int = 0) -> str:
        return "ran"

    deep = '{"x": ' + "[" * 5000 + "]" * 5000 + "}"
    agent, model = make_agent([[function_call("f", "{}", call_id="abcXYZ")], [function_call("f", deep, call_id="abcXYZ")],
                               [assistant_message("done")]], tools=[f])
    state = Runner.run_sync(agent, "go").to_state()
    state.approve(state.get_interruptions()[0])
    paused = Runner.run_sync(agent, state).to_state()
    paused.approve(paused.get_interruptions()[0])
    assert Runner.run_sync(agent, paused).final_output == "done"
    assert "Invalid JSON input for tool f" in list(outputs_sent(model.calls[2]).values())[-1]


@pytest.mark.parametrize("number", ["1" + "0" * 400, "1e400", "-1e400"])
def test_a_number_beyond_any_float_is_the_models_mistake(number):
    seen = []

    @function_tool
    def g(x: float) -> str:
        seen.append(x)
        return "ran"

    text = told(g, '{"x": %s}' % number)
    assert "expected a finite number" in text and seen == []


@pytest.mark.parametrize("output_type, answer", [
    (int, '{"response": ' + "[" * 3000 + "]" * 3000 + "}"),
    (float, '{"response": 1' + "0" * 400 + "}"),
    (float, '{"response": 1e400}'),
    (float, '{"response": NaN}'),
    (float, '{"response": Infinity}'),
])
def test_a_final_output_no_output_type_takes_is_invalid_final_output(output_type, answer):
    with pytest.raises(InvalidFinalOutput):
        AgentOutputSchema(output_type).validate_json(answer)


def test_an_invalid_final_output_quotes_a_bounded_preview():
    with pytest.raises(InvalidFinalOutput) as info:
        AgentOutputSchema(int).validate_json("x" * 10_000_000)
    assert len(str(info.value)) < 1000


class Infinite(enum.Enum):
    A = float("inf")
    B = 1.0


@dataclass
class Point:
    x: int


@dataclass(frozen=True)
class FrozenPoint:
    x: int


@dataclass
class Scaled:
    a: int
    scale: InitVar[int]

    def __post_init__(self, scale):
        self.a *= scale


@pytest.mark.parametrize("annotation, words", [
    (Infinite, "its values must be JSON"),
    (Literal[float("inf")], "its values must be JSON"),
    (Set[Point], "the items of a set must be hashable"),
    (FrozenSet[List[int]], "the items of a set must be hashable"),
    (Set[Optional[List[int]]], "the items of a set must be hashable"),
    (Scaled, "its __init__ needs 'scale', which is not a field"),
])
def test_a_parameter_no_value_could_fill_is_refused_where_the_tool_is_made(annotation, words):
    def f(x) -> str:
        return "ran"

    f.__annotations__["x"] = annotation
    with pytest.raises(UserError, match=words):
        function_tool(f)


def test_set_items_that_hash_and_an_init_var_with_a_default_are_taken():
    @dataclass
    class Defaulted:
        a: int
        scale: InitVar[int] = 2

        def __post_init__(self, scale):
            self.a *= scale

    @function_tool
    def f(points: Set[FrozenPoint], d: Defaulted) -> str:
        return f"{sorted(p.x for p in points)} {d.a}"

    assert told(f, {"points": [{"x": 2}, {"x": 1}], "d": {"a": 3}}) == "[1, 2] 6"


@pytest.mark.parametrize("annotation", [set, Set[typing.Any], frozenset])
def test_set_items_of_any_type_the_model_sends_as_objects_are_told_to_it_as_unhashable(annotation):
    """Without strict mode a set of anything is allowed: objects in it (dicts) cannot be set items."""
    def f(tags) -> str:
        ran.append(tags)
        return "ran"

    f.__annotations__["tags"] = annotation
    ran = []
    text = told(function_tool(f, strict_mode=False), {"tags": [{"a": 1}]})
    assert "parameter 'tags': items of a set must be hashable (unhashable type: 'dict')" in text and ran == []


def test_a_non_finite_default_is_left_out_of_a_schema_that_stays_json():
    @function_tool(strict_mode=False)
    def f(x: float = float("nan")) -> str:
        return "ran"

    assert "default" not in f.params_json_schema["properties"]["x"]
    json.dumps(f.params_json_schema, allow_nan=False)


def test_a_content_part_with_a_lone_surrogate_reaches_the_model_and_the_session_repaired():
    """Repaired where the tool's result enters the run: the next request's UTF-8 could not hold it (the session
    repairs what it stores on its own)."""
    @function_tool
    def t() -> list:
        return [{"type": "input_text", "text": "a\ud800b"}]

    session = SQLiteSession("s")
    agent, model = make_agent([[function_call("t", "{}", call_id="c1")], [assistant_message("done")]], tools=[t])
    Runner.run_sync(agent, "go", session=session)
    repaired = [{"type": "input_text", "text": "a\ufffdb"}]
    for items in (session.get_items(), model.calls[1].input):
        assert [i["output"] for i in items if i.get("type") == "function_call_output"] == [repaired]


def cyclic():
    value = [1]
    value.append(value)
    return value


@pytest.mark.parametrize("result, text", [
    (lambda: 10 ** 5000, "The tool ran, but its result, of type int, cannot be shown as text."),
    (cyclic, "[1, [...]]"),
])
def test_a_tool_that_ran_is_never_reported_as_failed_for_a_result_that_is_hard_to_show(result, text):
    ran = []

    @function_tool
    def pay() -> object:
        ran.append(1)
        return result()

    if "int" in text and not hasattr(__import__("sys"), "set_int_max_str_digits"):
        text = str(10 ** 5000)  # Python 3.9/3.10 show any int
    assert told(pay, "{}") == text and ran == [1]


def test_a_section_word_inside_an_entry_and_a_nested_type_keep_every_parameter():
    _, params, _ = parse_docstring("""Do it.

    Args:
        x: The x value.
            Example:
                x = 3
        y (Callable[(int), str]): The y value.
    """)
    assert params == {"x": "The x value.\nExample:\nx = 3", "y": "The y value."}


@pytest.mark.parametrize("defs", [[True], 1.5, "a", True])
def test_a_strict_schema_whose_defs_are_no_object_is_a_user_error_where_the_tool_is_made(defs):
    schema = {"type": "object", "properties": {}, "$defs": defs}  # an MCP server's, or a hand-written one
    with pytest.raises(UserError, match=r"\$defs must be an object"):
        FunctionTool("t", "d", schema, lambda context, arguments: "x", strict_json_schema=True)


def test_finite_floats_pass_unchanged():
    @function_tool
    def g(x: float) -> str:
        return repr(x)

    assert told(g, {"x": 2.5}) == "2.5" and math.isfinite(float(told(g, {"x": 1e308})))


@dataclass
class Knot:
    a: "Optional[Union[Knot, Loop]]"
    z: int = 0


@dataclass
class Loop:  # Knot's twin but for z: a value fails both, or Knot converts its field a before z refuses it
    a: "Optional[Union[Knot, Loop]]"
    z: str = ""


def nested(depth, leaf, **fields):
    value = leaf
    for _ in range(depth):
        value = {"a": value, **fields}
    return value


class Conversions:
    """Counts the validator's conversions while in a `with`; past `limit` it stops the conversion (before the fix
    a recursive union took 2 ** depth of them)."""

    def __init__(self, limit=10_000):
        self.count, self.limit, self.convert = 0, limit, validate._convert

    def __enter__(self):
        self.patch = mock.patch.object(validate, "_convert", self.counted)
        self.patch.start()
        return self

    def __exit__(self, *exc):
        self.patch.stop()

    def counted(self, *args):
        self.count += 1
        assert self.count <= self.limit, "conversions grow with the paths of nested unions, not the value's size"
        return self.convert(*args)


@pytest.mark.parametrize("value", [
    nested(40, 5),  # fails at the bottom, under every arm
    nested(40, None, z="s"),  # each arm Knot converts the field a, then refuses z: Loop takes it
])
def test_a_union_nested_in_itself_converts_each_value_once_per_arm(value):
    with Conversions() as conversions:
        try:
            validate_value(Union[Knot, Loop], value)
        except ArgumentsError:
            pass
    assert conversions.count <= 10 * 41  # a few per level: linear in the depth


def test_a_tool_and_an_output_type_refuse_a_deep_recursive_union_at_once():
    @function_tool
    def walk(tree: Union[Knot, Loop]) -> str:
        return "ran"

    with Conversions():
        assert "expected object (Knot) or object (Loop), got object" in told(walk, {"tree": nested(40, 5)})
        with pytest.raises(InvalidFinalOutput):
            AgentOutputSchema(Knot).validate_json(json.dumps({"response": nested(40, 5)}))


KNOTS = st.recursive(st.sampled_from([None, 5]), lambda inner: st.fixed_dictionaries(
    {"a": inner}, optional={"z": st.sampled_from([1, "s"])}), max_leaves=60)


@given(KNOTS.filter(lambda v: isinstance(v, dict)))
def test_a_recursive_union_converts_in_linear_work_to_what_each_node_says(value):
    with Conversions(limit=5 * len(json.dumps(value))) as conversions:
        try:
            got = validate_value(Union[Knot, Loop], value)
        except ArgumentsError:
            got = None
    assert (got is None) == ("5" in json.dumps(value))  # any value fits one arm; only the leaf 5 fits none
    while got is not None:  # a z of text is a Loop's
        assert type(got) is (Loop if value.get("z") == "s" else Knot) and got.z == value.get("z", got.z)
        got, value = got.a, value["a"]


@pytest.mark.parametrize("tp, entry", [(Dict[str, int], "x"), (Dict[int, str], "x"), (Dict[str, List[int]], ["x"])])
def test_a_dict_key_the_model_chose_is_quoted_cut_in_what_it_is_told(tp, entry):
    key = "K" * 1_000_000

    def f(m) -> str:
        return "ran"

    f.__annotations__["m"] = tp
    text = told(function_tool(f, strict_mode=False), {"m": {key: entry}})
    assert "K" * 50 + "…" in text and len(text) < 1000
    with pytest.raises(InvalidFinalOutput) as info:
        AgentOutputSchema(tp, strict_json_schema=False).validate_json(json.dumps({"response": {key: entry}}))
    assert len(str(info.value)) < 1000


def test_a_keyword_that_names_another_parameter_is_refused_naming_it():
    ran = []

    @function_tool(strict_mode=False)
    def tag(name: str, **kw: int) -> str:
        ran.append(1)
        return "ran"

    @function_tool(strict_mode=False)
    def limit(*, n: int, **kw: int) -> str:
        ran.append(1)
        return "ran"

    for tool, arguments in ((tag, {"name": "x", "kw": {"name": 1}}), (limit, {"n": 3, "kw": {"n": 500}})):
        text = told(tool, arguments)
        assert "parameter 'kw': the key '%s' names another parameter of the function" % list(arguments)[0] in text
    assert ran == []


@pytest.mark.parametrize("raw", [{"a": 1}, b'{"a": 1}', 5, ["{}"]])
def test_arguments_that_are_no_text_are_the_callers_mistake_named_as_such(raw):
    """A program calling a tool's `on_invoke_tool` with a dict gets the arguments error, not a bare TypeError."""
    with pytest.raises(ArgumentsError, match=f"expected a JSON string, got {type(raw).__name__}"):
        parse_arguments(raw, "t")


def test_a_keyword_named_as_the_context_parameter_is_refused_naming_it():
    ran = []

    @function_tool(strict_mode=False)
    def tagged(ctx: RunContextWrapper, n: int, **extra: int) -> str:
        ran.append(1)
        return "ran"

    text = told(tagged, {"n": 1, "extra": {"ctx": 5}})
    assert "parameter 'extra': the key 'ctx' names another parameter of the function" in text and ran == []


def test_a_keyword_named_as_a_parameter_the_call_fills_first_is_refused_naming_it():
    """A bound method's `self`, a callable object's, a partial's positional argument: hidden from the signature,
    filled before the model's arguments; such a key clashed in the call (a redacted TypeError)."""
    import functools

    ran = []

    class Service:
        def look(self, q: str, **extra: int) -> str:
            ran.append(1)
            return "ran"

        def __call__(self, q: str, **extra: int) -> str:
            ran.append(1)
            return "ran"

    def scaled(a: int, b: int, **extra: int) -> str:
        ran.append(1)
        return "ran"

    for tool, arguments, key in (
            (function_tool(Service().look, strict_mode=False), {"q": "x", "extra": {"self": 1}}, "self"),
            (function_tool(Service(), name_override="svc", strict_mode=False), {"q": "x", "extra": {"self": 1}},
             "self"),
            (function_tool(functools.partial(scaled, 1), name_override="pb", strict_mode=False),
             {"b": 2, "extra": {"a": 9}}, "a")):
        assert f"parameter 'extra': the key '{key}' names another parameter of the function" in told(tool, arguments)
    assert ran == []
    assert told(function_tool(Service().look, strict_mode=False), {"q": "x", "extra": {"n": 1}}) == "ran"


def test_a_keyword_named_as_a_positional_only_parameter_is_passed():
    @function_tool(strict_mode=False)
    def tag(name: str, /, **kw: int) -> str:
        return f"{name} {kw}"

    assert told(tag, {"name": "x", "kw": {"name": 1}}) == "x {'name': 1}"


def deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("default", [cyclic(), deep_list(5000)])
@pytest.mark.parametrize("strict", [True, False])
def test_a_default_that_holds_itself_or_nests_too_deeply_is_left_out_of_the_schema(default, strict):
    def f(x: List[List[int]] = default) -> str:
        return "default" if x is default else "given"

    tool = function_tool(f, strict_mode=strict)
    assert "default" not in tool.params_json_schema["properties"]["x"]
    assert told(tool, {}) == "default"


@pytest.mark.skipif(not hasattr(__import__("sys"), "set_int_max_str_digits"), reason="this Python reads any int")
def test_an_integer_key_beyond_the_digits_python_reads_is_the_models_mistake():
    @function_tool(strict_mode=False, failure_error_function=None)
    def byid(m: Dict[int, str]) -> str:
        return "ran"

    with pytest.raises(ModelBehaviorError, match="expected an integer key, got one of 5000 digits"):
        told(byid, {"m": {"9" * 5000: "x"}})
    with pytest.raises(ArgumentsError, match="got one of 5000 digits"):
        AgentOutputSchema(Dict[int, str], strict_json_schema=False).validate_data({"9" * 5000: "x"})


def test_long_runs_of_spaces_in_entries_are_read_at_once():
    assert ")?\\s*" not in docstrings._ENTRY.pattern  # no run of spaces after an optional part ending in one
    spaces = " " * 200_000  # quadratic time took minutes here: each split of the run was tried
    _, params, _ = parse_docstring(f"Do it.\n\nArgs:\n    a{spaces}x\n    b{spaces}(int){spaces}: The b.")
    assert params == {"b": "The b."}


def test_a_final_output_with_a_lone_surrogate_is_repaired_as_tool_arguments_are():
    assert AgentOutputSchema(List[str]).validate_json('{"response": ["a\\ud800b"]}') == ["a\ufffdb"]
    with pytest.raises(InvalidFinalOutput) as info:
        AgentOutputSchema(List[int]).validate_json('{"response": [1, "\\udfff"]}')
    assert "\ufffd" in str(info.value)
    str(info.value).encode("utf-8")


def test_a_bare_typing_tuple_is_any_tuple_as_tuple_is():
    def f(x: typing.Tuple, y: tuple) -> str:
        return repr((x, y))

    tool = function_tool(f, strict_mode=False)
    assert tool.params_json_schema["properties"]["x"] == {"type": "array", "items": {}, "title": "X"}
    assert told(tool, {"x": [1, "a"], "y": [2]}) == "((1, 'a'), (2,))"
    with pytest.raises(UserError, match="strict mode cannot express Any"):
        function_tool(f)
    assert validate_value(typing.Tuple, [1]) == (1,)
    with pytest.raises(ArgumentsError, match="exactly 0 items"):
        validate_value(typing.Tuple[()], [1])


@dataclass
class Pair:
    x: Tuple[int, str]


def test_a_fixed_tuple_of_mixed_item_types_is_refused_in_strict_mode_where_it_is_made():
    def f(c: Tuple[int, str]) -> str:
        return repr(c)

    def g(c: Tuple[int, int]) -> str:
        return repr(c)

    with pytest.raises(UserError, match=r"'c' is tuple\[int, str\]; strict mode cannot say which item type stands"):
        function_tool(f)
    with pytest.raises(UserError, match=r"Pair.x is tuple\[int, str\]\); strict mode cannot say which item type"):
        AgentOutputSchema(Pair)
    assert told(function_tool(f, strict_mode=False), {"c": [1, "a"]}) == "(1, 'a')"  # sent with its prefixItems
    sent = wire_schema(function_tool(g).params_json_schema, True)["properties"]["c"]  # one item type: exact
    assert sent == {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "title": "C"}


def canon(value):
    """A JSON value as JSON compares it: 1 and 1.0 alike, true and 1 not, at every depth."""
    if isinstance(value, bool) or not isinstance(value, (int, float, list, dict)):
        return type(value).__name__, value
    if isinstance(value, list):
        return "list", tuple(map(canon, value))
    return ("dict", frozenset((k, canon(v)) for k, v in value.items())) if isinstance(value, dict) else ("n", value)


JSON_VALUES = st.recursive(st.sampled_from([None, True, False, 0, 1, 1.0, "1"]), lambda inner: st.lists(
    inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2), max_leaves=6)


def lookalikes(value):
    """`value` with each leaf kept or swapped for one Python finds equal to it (True for 1, 0.0 for False)."""
    if isinstance(value, list):
        return st.tuples(*map(lookalikes, value)).map(list)
    if isinstance(value, dict):
        return st.fixed_dictionaries({k: lookalikes(v) for k, v in value.items()})
    return st.sampled_from([value, *(v for v in (True, 1, 1.0, False, 0, 0.0) if v == value and value is not None)])


@given(JSON_VALUES.flatmap(lambda value: st.tuples(st.just(value), lookalikes(value) | JSON_VALUES)))
def test_an_enum_value_is_matched_as_json_compares_at_every_depth(case):
    value, sent = case
    choice = enum.Enum("Choice", {"A": value})
    try:
        matched = validate_value(choice, sent) is choice.A
    except ArgumentsError:
        matched = False
    assert matched == (canon(value) == canon(sent))


def test_an_enum_of_arrays_and_objects_refuses_true_where_1_stands():
    class Shape(enum.Enum):
        LINE = (1,)
        PAIR = (1, 2)
        POINT = {"x": 1}

    assert validate_value(Shape, [1.0, 2]) is Shape.PAIR and validate_value(Shape, {"x": 1.0}) is Shape.POINT
    for sent in ([True], [True, 2], [[1]], {"x": True}):
        with pytest.raises(ArgumentsError, match=r'expected one of \[1\], \[1, 2\], {"x": 1}'):
            validate_value(Shape, sent)


@pytest.mark.parametrize("prop, words", [
    ({"oneOf": {"type": "string"}}, "'oneOf' in a JSON schema must be a list of schemas, got dict"),
    ({"anyOf": "string"}, "'anyOf' in a JSON schema must be a list of schemas, got str"),
    ({"allOf": {"type": "string"}}, "'allOf' in a JSON schema must be a list of schemas, got dict"),
    ({"type": "array", "prefixItems": {"type": "string"}}, "'prefixItems' in a JSON schema must be a list"),
    ({"type": "array", "examples": deep_list(3000)}, "a value nested too deeply for the strict pass"),
    ({"type": "array", "default": deep_list(3000)}, "a value nested too deeply for the strict pass"),
], ids=["oneOf", "anyOf", "allOf", "prefixItems", "examples", "default"])
def test_a_hand_written_strict_schema_strict_mode_cannot_read_is_a_user_error(prop, words):
    with pytest.raises(UserError, match=words):
        FunctionTool(name="t", description="", params_json_schema={"type": "object", "properties": {"a": prop}},
                     on_invoke_tool=lambda ctx, raw: "ran")


# --- What an attack on tool schemas and validation found -------------------------------------------------------

SECRET = "sk-live-SECRET123"


def fetch(api_key: str, url: str) -> str:
    """Fetch a URL with the service's key."""
    return f"fetched {url} with key {api_key}"


def partial_of_partial(func, **keywords):
    """A partial of a partial: Python merges the two into one, unless the inner one has attributes of its own."""
    inner = functools.partial(func)
    inner.note = "kept apart"
    return functools.partial(inner, **keywords)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("bound", [functools.partial(fetch, api_key=SECRET),
                                   partial_of_partial(fetch, api_key=SECRET)])
def test_a_keyword_a_partial_binds_is_neither_sent_to_the_model_nor_replaced_by_it(bound, strict):
    """A partial's keyword (an API key) was a parameter: its value sent as the default, and the model's replaced it.
    The name and the description come from the function the partial calls."""
    tool = function_tool(bound, strict_mode=strict)
    assert (tool.name, tool.description) == ("fetch", "Fetch a URL with the service's key.")
    assert SECRET not in json.dumps(tool.spec()) and "api_key" not in json.dumps(tool.params_json_schema)
    told_back = told(tool, {"api_key": "attacker", "url": "u"})
    assert ("unexpected parameter 'api_key'" in told_back) if strict else (told_back == f"fetched u with key {SECRET}")


def test_a_keyword_a_partial_binds_is_no_key_of_its_kwargs():
    def fetch_with(url: str, **headers: str) -> str:
        return f"fetched {url} with {headers}"

    tool = function_tool(functools.partial(fetch_with, token=SECRET), strict_mode=False)
    assert SECRET not in json.dumps(tool.spec())
    assert "the key 'token' names another parameter" in told(tool, {"url": "u", "headers": {"token": "x"}})


@pytest.mark.parametrize("params, problem", [
    ({"type": "string"}, "a root that is not an object"),
    ({"type": "object"}, "an object without properties"),
    ({"type": "object", "properties": {"ids": {"type": "array"}}}, "an array without items"),
    ({"type": "object", "properties": {"v": {"description": "anything"}}}, "a schema without a type"),
])
def test_a_strict_schema_strict_endpoints_refuse_is_refused_where_the_tool_is_made(params, problem):
    """Each was accepted, then refused by the server at every request (an open object was closed silently)."""
    with pytest.raises(UserError, match=problem):
        FunctionTool(name="t", description="", params_json_schema=params, on_invoke_tool=lambda ctx, args: "")
    loose = FunctionTool(name="t", description="", params_json_schema=params, on_invoke_tool=lambda ctx, args: "",
                         strict_json_schema=False)
    assert wire_schema(loose.params_json_schema, False) == params


class Ints:
    """Shaped as miniagents recognises a pydantic model; its schema is `RootModel[list[int]]`'s, an array."""

    @classmethod
    def model_json_schema(cls):
        return {"items": {"type": "integer"}, "title": "Ints", "type": "array"}

    @classmethod
    def model_validate(cls, value):
        return value


def test_an_empty_tuple_and_an_output_type_whose_schema_is_no_object_are_refused_in_strict_mode():
    def nothing(t: Tuple[()]) -> str:
        return "x"

    with pytest.raises(UserError, match="tool 'nothing': an array without items"):
        function_tool(nothing)
    with pytest.raises(UserError, match="a root that is not an object"):
        AgentOutputSchema(Ints)
    assert function_tool(nothing, strict_mode=False).params_json_schema["properties"]["t"]["maxItems"] == 0
    assert AgentOutputSchema(Ints, strict_json_schema=False).validate_json("[1]") == [1]


@dataclasses.dataclass(init=False)
class Point:
    x: int
    label: str = "origin"

    def __init__(self, x: int):
        self.x, self.label = x, f"p{x}"


def test_a_dataclass_whose_own_init_takes_not_every_field_is_refused_naming_them():
    """Every answer the schema allowed built it with a field its __init__ takes not: a bare TypeError out of the
    run (an output type), a redacted failure (a tool's parameter)."""
    def place(p: Point) -> str:
        return "ran"

    with pytest.raises(UserError, match="parameter 'p' is Point; its __init__ takes no 'label'"):
        function_tool(place)
    with pytest.raises(UserError, match="output type is Point; its __init__ takes no 'label' by name"):
        AgentOutputSchema(Point)

    @dataclasses.dataclass(init=False)
    class ByPosition:
        x: int

        def __init__(self, x: int, /):
            self.x = x

    with pytest.raises(UserError, match="its __init__ takes no 'x' by name"):
        AgentOutputSchema(ByPosition)

    @dataclasses.dataclass(init=False)
    class Open:
        x: int

        def __init__(self, *args: int, **fields: int):
            self.x = fields["x"]

    assert AgentOutputSchema(Open).validate_json('{"response": {"x": 1}}').x == 1


@pytest.mark.parametrize("name", ["orders/row", "a~b", 'say "hi"', "Café"])
@pytest.mark.parametrize("strict", [True, False])
def test_a_class_named_with_what_a_json_pointer_escapes_is_defined_under_a_token(name, strict):
    """"orders/row" went into $ref unescaped: strict, a misleading "Unresolvable $ref"; not strict, a $ref sent
    that named nothing. A recursive one is kept in $defs, as it needs."""
    row = dataclasses.make_dataclass(name, [("id", int), ("next", Optional["Row"], dataclasses.field(default=None))])
    row.__annotations__["next"] = Optional[row]

    def save(r) -> str:
        return "ok"

    save.__annotations__ = {"r": row}
    schema = function_tool(save, strict_mode=strict).params_json_schema
    token = re.fullmatch(r"#/\$defs/([A-Za-z0-9_.-]+)", schema["properties"]["r"]["$ref"]).group(1)
    assert schema["$defs"][token]["title"] == name
    output = AgentOutputSchema(row, strict_json_schema=strict).json_schema()
    assert [d["title"] for d in output["$defs"].values()] == [name]


def test_a_chain_of_dataclasses_deeper_than_python_recurses_is_refused_where_it_is_made():
    chain = int
    for i in range(250):
        chain = dataclasses.make_dataclass(f"C{i}", [("v", chain)])

    def f(x) -> int:
        return 0

    f.__annotations__ = {"x": chain}
    with pytest.raises(UserError, match="parameter 'x' is C249, nested too deeply for a schema"):
        function_tool(f, strict_mode=False)
    with pytest.raises(UserError, match="output type is C249, nested too deeply for a schema"):
        AgentOutputSchema(chain)


@pytest.mark.parametrize("text", [None, b'{"response": 1}'])
def test_a_final_output_that_is_no_text_is_invalid_not_a_bare_type_error(text):
    with pytest.raises(InvalidFinalOutput, match="expected a JSON string, got"):
        AgentOutputSchema(int).validate_json(text)


def test_an_integer_key_has_one_text_so_two_keys_never_name_one_int():
    """"1" and "01" were both read as 1: one value silently replaced the other."""
    @function_tool(strict_mode=False)
    def stock(counts: Dict[int, str]) -> str:
        return json.dumps(counts)

    assert told(stock, {"counts": {"0": "a", "-5": "b", "10": "c"}}) == '{"0": "a", "-5": "b", "10": "c"}'
    for key in ("01", "-0", "+1"):
        assert f"expected an integer key (no leading zero or -0), got '{key}'" in told(stock, {"counts": {key: "x"}})
    assert stock.params_json_schema["properties"]["counts"]["propertyNames"] == {"pattern": "^(0|-?[1-9][0-9]*)$"}


def test_an_enum_without_members_is_refused_where_it_is_made():
    class Empty(enum.Enum):
        pass

    def pick(e: Empty) -> str:
        return "never"

    with pytest.raises(UserError, match="parameter 'e' is Empty; it has no members, so no value could be sent"):
        function_tool(pick)


# --- What an attack on those fixes found -----------------------------------------------------------------------

def decorated(fn):
    @functools.wraps(fn)  # a partial has no __name__: the wrapper keeps its own, and takes the partial's docstring
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("make", [lambda bound, strict: upstream.function_tool(bound, strict_mode=strict),
                                  lambda bound, strict: function_tool(decorated(bound), strict_mode=strict)],
                         ids=["the upstream shell's function_tool", "a functools.wraps decorator"])
def test_a_keyword_a_partial_binds_behind_a_decorator_is_neither_sent_nor_replaced(make, strict):
    """`inspect.signature` follows `__wrapped__` to the partial; the keywords were read from a partial only: the key
    was sent as a default and the model's replaced it, the tool named `wrapper` and described by partial's docstring."""
    tool = make(functools.partial(fetch, api_key=SECRET), strict)
    assert (tool.name, tool.description) == ("fetch", "Fetch a URL with the service's key.")
    assert SECRET not in json.dumps(tool.spec()) and "api_key" not in json.dumps(tool.params_json_schema)
    told_back = told(tool, {"api_key": "attacker", "url": "u"})
    assert ("unexpected parameter 'api_key'" in told_back) if strict else (told_back == f"fetched u with key {SECRET}")


def test_a_partial_wrapped_in_a_loop_is_a_user_error():
    def looped(url: str) -> str:
        return url

    looped.__wrapped__ = functools.partial(looped)  # a bare RecursionError out of inspect.signature
    with pytest.raises(UserError, match="functools.partial or functools.wraps nest it more than 100 deep"):
        function_tool(looped)


def test_a_keyword_a_partial_binds_needs_no_annotation_that_resolves():
    """Left out of the schema, its annotation was resolved all the same: a class imported only under TYPE_CHECKING
    was a UserError."""
    def fetch_with(url: str, client: "HTTPConnection" = None) -> str:  # noqa: F821
        return f"fetched {url} with {client}"

    assert told(function_tool(functools.partial(fetch_with, client="pool")), {"url": "u"}) == "fetched u with pool"


class Lookup:
    """Look a word up."""

    def __call__(self, word: str, api_key: str = "") -> str:
        return word


def test_a_partial_of_a_callable_object_is_named_by_its_class():
    assert function_tool(functools.partial(Lookup(), api_key=SECRET)).name == "Lookup"  # was `partial`


def model(name: str, schema: dict):
    """A class shaped as miniagents recognises a pydantic model, whose schema is `schema` (as pydantic writes it)."""
    return type(name, (), {"model_json_schema": classmethod(lambda cls: copy.deepcopy(schema)),
                           "model_validate": classmethod(lambda cls, value: value)})


def obj(title: str, **properties) -> dict:
    return {"properties": properties, "required": list(properties), "title": title, "type": "object"}


def target(schema: dict, node: dict) -> dict:
    return schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_pydantic_models_defs_take_other_names_where_another_type_has_theirs(order):
    """A dataclass named "Item/v1" is defined as Item_v1, as pydantic names a nested model Item_v1: a UserError ("two
    different types are named Item_v1") when the dataclass came first. A model whose own schema is the same as one
    defined may refer to one renamed, so it is renamed too."""
    row = dataclasses.make_dataclass("Item/v1", [("x", int)])
    outer = model("Outer", {**obj("Outer", item={"$ref": "#/$defs/Item_v1"}),
                            "$defs": {"Item_v1": obj("Item_v1", y={"type": "string"})}})

    def keep(a, b) -> str:
        return "ok"

    keep.__annotations__ = dict(sorted({"a": row, "b": outer}.items(), reverse=order == "ba"))
    schema = function_tool(keep).params_json_schema
    assert list(target(schema, schema["properties"]["a"])["properties"]) == ["x"]
    assert list(target(schema, target(schema, schema["properties"]["b"])["properties"]["item"])["properties"]) == ["y"]
    first, second = ({"$defs": {"Mid": obj("Mid", i={"$ref": "#/$defs/Inner"}), "Inner": obj("Inner", **{n: t})},
                      **obj(name, m={"$ref": "#/$defs/Mid"})} for name, n, t in
                     [("First", "x", {"type": "integer"}), ("Second", "y", {"type": "string"})])
    keep.__annotations__ = {"a": model("First", first), "b": model("Second", second)}
    schema = function_tool(keep).params_json_schema
    for name, field in (("a", "x"), ("b", "y")):
        mid = target(schema, target(schema, schema["properties"][name])["properties"]["m"])
        assert list(target(schema, mid["properties"]["i"])["properties"]) == [field]


def test_a_generic_pydantic_model_another_one_holds_is_defined_once():
    """Pydantic names `Box[int]` Box_int_ in a model holding one: it was defined again under `Box[int]`."""
    box = obj("Box[int]", v={"type": "integer"})
    holder = model("Holder", {**obj("Holder", b={"$ref": "#/$defs/Box_int_"}), "$defs": {"Box_int_": box}})

    def keep(h, b) -> str:
        return "ok"

    keep.__annotations__ = {"h": holder, "b": model("Box[int]", box)}
    schema = function_tool(keep).params_json_schema
    assert sorted(schema["$defs"]) == ["Box_int_", "Holder"] and schema["properties"]["b"]["$ref"] == "#/$defs/Box_int_"


@dataclasses.dataclass(init=False)
class Failure(Exception):
    """A failure (a docstring: Python 3.9's dataclass reads the signature for one it lacks, and fails here)."""

    code: int


def test_a_dataclass_built_by_a_built_in_base_is_refused_where_it_is_made():
    """Exception's __init__ has no signature Python reads: a bare ValueError from inspect.signature (and a call takes
    no keywords; a dict's makes them items, not fields)."""
    def report(f: Failure) -> str:
        return "ran"

    with pytest.raises(UserError, match="parameter 'f' is Failure; its __init__ is its built-in base's"):
        function_tool(report)
    with pytest.raises(UserError, match="output type is Failure; its __init__ is its built-in base's"):
        AgentOutputSchema(Failure)
