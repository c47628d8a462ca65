"""Specification of miniagents.schema: signatures -> strict JSON Schema, docstrings, argument validation."""
import dataclasses
import enum
import functools
import json
import re
import subprocess
import sys
import typing
from dataclasses import dataclass, field
from typing import (Any, Callable, ClassVar, Dict, FrozenSet, List, Mapping, NamedTuple, Optional, Sequence, Set,
                    Tuple, TypedDict, Union)

import pytest

try:
    from typing import Annotated, Literal
except ImportError:  # pragma: no cover
    from typing_extensions import Annotated, Literal

from miniagents.context import RunContextWrapper, ToolContext
from miniagents.errors import ModelBehaviorError, UserError
from miniagents.docstrings import parse_docstring
from miniagents.schema import FuncSchema, check_tool_name, ensure_strict_json_schema, function_schema, type_schema
from miniagents.validate import ArgumentsError, parse_arguments, validate_value

EMPTY_STRICT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


# ------------------------------------------------------------------------------------------- fixtures

class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Filters:
    """Search filters."""

    limit: int
    tag: Optional[str] = None


@dataclass
class Query:
    text: str
    filters: Filters


@dataclass
class TreeNode:
    name: str
    children: List["TreeNode"] = field(default_factory=list)


class Movie(TypedDict):
    title: str
    year: int


class PartialMovie(TypedDict, total=False):
    title: str
    year: int


class Point(NamedTuple):
    x: int
    y: int = 0


@dataclass
class Positive:
    n: int

    def __post_init__(self):
        if self.n <= 0:
            raise ValueError("n must be positive")


def get_weather(city: str, units: Literal["c", "f"] = "c") -> str:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
        units: Temperature units.
    """
    return f"{city} {units}"


# ---------------------------------------------------------------------------------- check_tool_name

def test_check_tool_name_returns_a_valid_name():
    assert check_tool_name("get_weather-2") == "get_weather-2"
    assert check_tool_name("x" * 64) == "x" * 64


@pytest.mark.parametrize("bad", ["", "get weather", "x" * 65, "héllo", "a.b"])
def test_check_tool_name_rejects_a_bad_name_naming_it_and_the_rule(bad):
    with pytest.raises(UserError) as err:
        check_tool_name(bad)
    assert repr(bad) in err.value.message and "^[a-zA-Z0-9_-]{1,64}$" in err.value.message


# ---------------------------------------------------------------------------------- parse_arguments

@pytest.mark.parametrize("raw", [None, "", "   \n"])
def test_parse_arguments_treats_empty_as_no_arguments(raw):
    assert parse_arguments(raw, "t") == {}


def test_parse_arguments_returns_the_object():
    assert parse_arguments('{"city": "Paris"}', "t") == {"city": "Paris"}


def test_parse_arguments_invalid_json_names_tool_problem_and_shows_the_text():
    with pytest.raises(ArgumentsError) as err:
        parse_arguments('{"city": ', "get_weather")
    msg = err.value.message
    assert msg.startswith("Invalid JSON input for tool get_weather:") and '{"city": ' in msg
    assert isinstance(err.value, ModelBehaviorError)


def test_parse_arguments_preview_is_bounded_with_an_ellipsis():
    raw = '{"a": "' + "x" * 1000
    with pytest.raises(ArgumentsError) as err:
        parse_arguments(raw, "t")
    preview = err.value.message.split("Received: ", 1)[1]
    assert len(preview) == 200 and preview.endswith("…")


def test_parse_arguments_rejects_a_non_object():
    with pytest.raises(ArgumentsError, match=r"expected a JSON object.*got array of 2 items.*\[1, 2\]"):
        parse_arguments("[1, 2]", "t")


def test_parse_arguments_rejects_nan_which_is_not_json():
    with pytest.raises(ArgumentsError, match="NaN"):
        parse_arguments('{"x": NaN}', "t")


# ---------------------------------------------------------------------------------- parse_docstring

def test_google_docstring_summary_and_params():
    desc, params, style = parse_docstring(get_weather.__doc__)
    assert (desc, params, style) == ("Get the current weather for a city.",
                                     {"city": "The city to look up.", "units": "Temperature units."}, "google")


def test_every_google_parameter_header_is_read():
    for header in ("Args", "Arguments", "Params", "Parameters", "Keyword Args", "Keyword Arguments"):
        assert parse_docstring(f"Do.\n\n{header}:\n    limit: How many.\n") == ("Do.", {"limit": "How many."},
                                                                                   "google"), header


def test_google_args_section_without_blank_line_is_still_read():
    doc = """Add two numbers.
    Args:
        a (int): First.
        b: Second,
            continued.
    Returns:
        The sum.
    """
    desc, params, style = parse_docstring(doc)
    assert desc == "Add two numbers."
    assert params == {"a": "First.", "b": "Second,\ncontinued."}
    assert style == "google"


def test_blank_lines_in_an_args_section_and_a_line_that_is_no_entry_are_read_as_written():
    doc = "Add.\n\nArgs:\n\n    a: First,\n\n        still first.\n    see below\n    b: Second.\n"
    # a blank line after the heading does not set the section's indentation; a line at the entries' indentation
    # that is no `name: text` belongs to no entry (it is not a continuation)
    assert parse_docstring(doc)[1] == {"a": "First,\nstill first.", "b": "Second."}


def test_only_text_before_the_first_section_is_the_description():
    doc = "Summary.\n\nMore detail.\n\nReturns:\n    Something.\n\nRaises:\n    ValueError: never."
    assert parse_docstring(doc)[0] == "Summary.\n\nMore detail."


def test_star_args_names_are_stripped():
    doc = "Sum.\n\nArgs:\n    *args: Numbers.\n    **kwargs: Options."
    assert parse_docstring(doc)[1] == {"args": "Numbers.", "kwargs": "Options."}


@pytest.mark.parametrize("doc", [
    "Search things.\n\nParameters\n----------\nquery : str\n    What to find.",
    "Search things.\n\n:param query: What to find.\n:returns: Matches.",
])
def test_a_docstring_in_another_style_is_the_description_whole(doc):
    """NumPy and Sphinx styles are not read (upstream reads them with griffe): the model still gets every word."""
    assert parse_docstring(doc) == (doc, {}, "google")

    def search(query: str):
        pass
    search.__doc__ = doc
    assert function_schema(search).description == doc


@pytest.mark.parametrize("style", ["numpy", "sphinx", "auto"])
def test_a_docstring_style_other_than_google_is_refused_where_the_tool_is_defined(style):
    def search(query: str):
        """Search."""
    with pytest.raises(UserError, match=f"docstring_style='{style}'.*Google-style docstrings only"):
        function_schema(search, docstring_style=style)


def test_no_markers_means_google():
    assert parse_docstring("Just text.") == ("Just text.", {}, "google")


def test_no_docstring_gives_no_description():
    assert parse_docstring(None) == (None, {}, "google")


def test_the_google_style_may_be_named():
    assert function_schema(get_weather, docstring_style="google") == function_schema(get_weather)


# ---------------------------------------------------------------------------------- function_schema

def test_get_weather_full_strict_schema():
    fs = function_schema(get_weather)
    assert fs.name == "get_weather" and fs.description == "Get the current weather for a city."
    assert fs.strict_json_schema is True and fs.context_kind is None
    assert fs.params_json_schema == {
        "title": "get_weather_args", "type": "object", "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "title": "City", "description": "The city to look up."},
            "units": {"enum": ["c", "f"], "type": "string", "title": "Units",
                      "description": "Temperature units.", "default": "c"},
        },
        "required": ["city", "units"],
    }


def test_a_callable_whose_signature_cannot_be_read_is_refused_naming_the_tool():
    from miniagents import function_tool

    with pytest.raises(UserError, match=r"^tool 'max': cannot read the signature of <built-in function max>: "):
        function_tool(max)
    with pytest.raises(UserError, match=r"^tool 'max': cannot read the signature of <built-in function max>: ") as \
            refused:
        function_tool(functools.partial(max, key="sk-SECRET"))  # a partial's repr would show what it binds
    assert "sk-SECRET" not in str(refused.value)


def test_get_weather_non_strict_requires_only_params_without_defaults():
    schema = function_schema(get_weather, strict_json_schema=False).params_json_schema
    assert schema["required"] == ["city"] and "additionalProperties" not in schema


def test_property_titles_are_capitalised_like_pydantic():
    def f(max_items: int, city: str): ...
    props = function_schema(f).params_json_schema["properties"]
    assert [p["title"] for p in props.values()] == ["Max Items", "City"]


def test_no_docstring_gives_an_empty_description():
    def f(x: int): ...
    assert function_schema(f).description == ""


def test_overrides_win():
    fs = function_schema(get_weather, name_override="weather", description_override="Weather.")
    assert (fs.name, fs.description, fs.params_json_schema["title"]) == ("weather", "Weather.", "weather_args")


def test_use_docstring_info_false_ignores_the_docstring():
    fs = function_schema(get_weather, use_docstring_info=False)
    assert fs.description == "" and "description" not in fs.params_json_schema["properties"]["city"]


def test_annotated_string_becomes_the_description_and_docstring_wins():
    def f(a: Annotated[int, "From annotation."], b: Annotated[int, "Loses."]):
        """F.

        Args:
            b: From docstring.
        """
    props = function_schema(f).params_json_schema["properties"]
    assert props["a"]["description"] == "From annotation."
    assert props["b"]["description"] == "From docstring."


def test_optional_with_default_none_is_nullable_and_the_null_default_dropped():
    def f(limit: Optional[int] = None): ...
    fs = function_schema(f)
    assert fs.params_json_schema["properties"]["limit"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Limit"}
    assert fs.to_call_args({"limit": None}) == ([None], {})
    assert fs.to_call_args({}) == ([None], {})
    assert fs.to_call_args({"limit": 3}) == ([3], {})


def test_a_default_of_none_makes_a_plain_type_nullable():
    def f(limit: int = None): ...  # type: ignore[assignment]
    assert function_schema(f).params_json_schema["properties"]["limit"]["anyOf"] == [
        {"type": "integer"}, {"type": "null"}]


def test_non_null_defaults_are_kept():
    def f(n: int = 3, tags: List[str] = ["a"]): ...  # noqa: B006
    props = function_schema(f).params_json_schema["properties"]
    assert props["n"]["default"] == 3 and props["tags"]["default"] == ["a"]


def test_union_becomes_any_of():
    def f(x: Union[int, str]): ...
    assert function_schema(f).params_json_schema["properties"]["x"]["anyOf"] == [{"type": "integer"},
                                                                                  {"type": "string"}]


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None needs Python 3.10")
def test_pipe_union_is_supported():
    ns: dict = {}
    exec("def f(x: int | None = None): ...", ns)
    fs = function_schema(ns["f"])
    assert fs.params_json_schema["properties"]["x"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]


def test_containers_map_to_arrays():
    def f(a: List[int], b: Sequence[str], c: Tuple[int, str], d: Tuple[float, ...], e: Set[int],
          g: FrozenSet[str]): ...
    props = function_schema(f, strict_json_schema=False).params_json_schema["properties"]  # (c: strict refuses it)
    strip = {k: {kk: vv for kk, vv in v.items() if kk != "title"} for k, v in props.items()}
    assert strip == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
              "minItems": 2, "maxItems": 2},
        "d": {"type": "array", "items": {"type": "number"}},
        "e": {"type": "array", "items": {"type": "integer"}},
        "g": {"type": "array", "items": {"type": "string"}},
    }


def test_containers_convert_back_to_their_python_types():
    def f(c: Tuple[int, str], d: Tuple[float, ...], e: Set[int], g: FrozenSet[str]): ...
    args, _ = function_schema(f, strict_json_schema=False).to_call_args({"c": [1, "a"], "d": [1, 2.5], "e": [1, 1, 2], "g": ["x"]})
    assert args == [(1, "a"), (1.0, 2.5), {1, 2}, frozenset({"x"})]
    assert isinstance(args[1][0], float)


def test_literal_of_mixed_types_has_no_type_and_single_literal_is_const():
    def f(a: Literal[1, "a"], b: Literal["only"]): ...
    props = function_schema(f).params_json_schema["properties"]
    assert props["a"] == {"enum": [1, "a"], "title": "A"}
    assert props["b"] == {"const": "only", "type": "string", "title": "B"}


def test_enum_goes_to_defs_with_title_and_is_referenced():
    def f(color: Color): ...
    fs = function_schema(f)
    assert fs.params_json_schema["properties"]["color"] == {"$ref": "#/$defs/Color"}
    assert fs.params_json_schema["$defs"]["Color"] == {"enum": ["red", "green"], "title": "Color",
                                                        "type": "string"}
    assert fs.to_call_args({"color": "green"}) == ([Color.GREEN], {})


def test_enum_with_default_is_inlined_by_the_strict_pass():
    def f(color: Color = Color.RED): ...
    prop = function_schema(f).params_json_schema["properties"]["color"]
    assert prop == {"enum": ["red", "green"], "title": "Color", "type": "string", "default": "red"}


def test_dataclass_param_is_a_strict_object_in_defs():
    def search(query: Query): ...
    schema = function_schema(search).params_json_schema
    assert schema["properties"]["query"] == {"$ref": "#/$defs/Query"}
    assert schema["$defs"]["Query"] == {
        "properties": {"text": {"type": "string", "title": "Text"}, "filters": {"$ref": "#/$defs/Filters"}},
        "required": ["text", "filters"], "title": "Query", "type": "object", "additionalProperties": False}
    assert schema["$defs"]["Filters"] == {
        "description": "Search filters.", "title": "Filters", "type": "object", "additionalProperties": False,
        "properties": {"limit": {"type": "integer", "title": "Limit"},
                       "tag": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Tag"}},
        "required": ["limit", "tag"]}


def test_dataclass_argument_is_built():
    def search(query: Query): ...
    args, _ = function_schema(search).to_call_args({"query": {"text": "x", "filters": {"limit": 2}}})
    assert args == [Query("x", Filters(2))]


def test_nested_type_error_names_the_path():
    def search(filters: Filters): ...
    with pytest.raises(ArgumentsError) as err:
        function_schema(search).to_call_args({"filters": {"limit": "5"}})
    assert err.value.message == "parameter 'filters.limit': expected integer, got string \"5\""


def test_recursive_dataclass_references_itself():
    def f(tree: TreeNode): ...
    fs = function_schema(f)
    node = fs.params_json_schema["$defs"]["TreeNode"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/TreeNode"}
    args, _ = fs.to_call_args({"tree": {"name": "a", "children": [{"name": "b", "children": []}]}})
    assert args == [TreeNode("a", [TreeNode("b")])]


def test_typeddict_total_and_not_total():
    def f(m: Movie, p: PartialMovie): ...
    fs = function_schema(f)
    for name in ("Movie", "PartialMovie"):
        d = fs.params_json_schema["$defs"][name]
        assert d["required"] == ["title", "year"] and d["additionalProperties"] is False
    assert fs.to_call_args({"m": {"title": "A", "year": 1}, "p": {"year": 2}}) == (
        [{"title": "A", "year": 1}, {"year": 2}], {})
    with pytest.raises(ArgumentsError, match="parameter 'm': missing required field 'year'"):
        fs.to_call_args({"m": {"title": "A"}, "p": {}})


@pytest.mark.skipif(not hasattr(typing, "Required"), reason="typing.Required and NotRequired are new in Python 3.11")
def test_typeddict_required_and_not_required_marks_set_which_keys_are_required():
    class Booking(TypedDict, total=False):
        room: typing.Required[str]
        nights: int

    class Guest(TypedDict):
        name: str
        note: typing.NotRequired[str]

    def f(b: Booking, g: Guest): ...
    fs = function_schema(f, strict_json_schema=False)
    booking, guest = fs.params_json_schema["$defs"]["Booking"], fs.params_json_schema["$defs"]["Guest"]
    assert booking["required"] == ["room"] and booking["properties"]["nights"] == {"type": "integer", "title": "Nights"}
    assert guest["required"] == ["name"] and guest["properties"]["note"] == {"type": "string", "title": "Note"}
    assert fs.to_call_args({"b": {"room": "12"}, "g": {"name": "ann"}}) == ([{"room": "12"}, {"name": "ann"}], {})
    with pytest.raises(ArgumentsError, match="parameter 'b.nights': expected integer"):
        fs.to_call_args({"b": {"room": "12", "nights": "two"}, "g": {"name": "ann"}})


@pytest.mark.skipif(not hasattr(typing, "Required"), reason="typing.Required and NotRequired are new in Python 3.11")
def test_a_typeddict_qualifier_inside_annotated_is_read_as_one_around_it():
    """PEP 655 lets Annotated stand around Required/NotRequired or inside it: both are read (Annotated outside was
    refused as a type miniagents cannot express), for a parameter and an output type alike."""
    class Order(TypedDict):
        item: str
        note: Annotated[typing.NotRequired[str], "a note for the cook"]
        cups: typing.NotRequired[Annotated[int, "how many"]]

    class Loose(TypedDict, total=False):
        name: Annotated[typing.Required[Annotated[str, "who"]], "ignored: the first description wins"]

    def place(order: Order, loose: Loose): ...
    fs = function_schema(place, strict_json_schema=False)
    order, loose = fs.params_json_schema["$defs"]["Order"], fs.params_json_schema["$defs"]["Loose"]
    assert order["required"] == ["item"] and loose["required"] == ["name"]
    assert order["properties"]["note"] == {"type": "string", "title": "Note", "description": "a note for the cook"}
    assert order["properties"]["cups"] == {"type": "integer", "title": "Cups", "description": "how many"}
    assert loose["properties"]["name"] == {"type": "string", "title": "Name", "description": "who"}
    assert fs.to_call_args({"order": {"item": "tea"}, "loose": {"name": "ann"}}) == (
        [{"item": "tea"}, {"name": "ann"}], {})
    with pytest.raises(ArgumentsError, match="parameter 'order.note': expected string, got integer 5"):
        fs.to_call_args({"order": {"item": "tea", "note": 5}, "loose": {"name": "ann"}})
    schema, wrapped = type_schema(Order)
    assert not wrapped and schema["properties"]["note"]["description"] == "a note for the cook"
    assert validate_value(Order, {"item": "tea", "note": "hot", "cups": 2}) == {"item": "tea", "note": "hot", "cups": 2}


@pytest.mark.skipif(not hasattr(typing, "ReadOnly"), reason="typing.ReadOnly is new in Python 3.13")
def test_a_read_only_typeddict_field_is_read_as_its_type():
    class Order(TypedDict, total=False):
        item: typing.ReadOnly[typing.Required[str]]
        note: Annotated[typing.ReadOnly[str], "a note"]

    def place(order: Order): ...
    order = function_schema(place).params_json_schema["$defs"]["Order"]
    assert order["properties"] == {"item": {"type": "string", "title": "Item"},
                                   "note": {"type": "string", "title": "Note", "description": "a note"}}
    assert validate_value(Order, {"item": "tea"}) == {"item": "tea"}


T = typing.TypeVar("T")


class StandInRequired(typing.Generic[T]):  # a qualifier of another module than typing, known by its name only
    _name = "Required"


class StandInNotRequired(typing.Generic[T]):
    _name = "NotRequired"


class StandInReadOnly(typing.Generic[T]):
    _name = "ReadOnly"


@pytest.mark.parametrize("source", ["typing_extensions", "a stand-in"])
def test_a_typeddict_qualifier_of_typing_extensions_is_read_as_typings(source):
    """On Python 3.9 and 3.10 typing_extensions' Required and NotRequired are the only ones (its ReadOnly before
    3.13), and are not typing's: a TypedDict that used any was refused as a type miniagents cannot express. The
    kernel imports no package, so it knows a qualifier by its name; a stand-in runs where typing_extensions is
    absent."""
    if source == "typing_extensions":
        te = pytest.importorskip("typing_extensions")
        Base, Required, NotRequired, ReadOnly = te.TypedDict, te.Required, te.NotRequired, te.ReadOnly
    else:
        Base, Required, NotRequired, ReadOnly = TypedDict, StandInRequired, StandInNotRequired, StandInReadOnly

    class Order(Base, total=False):
        item: ReadOnly[Required[str]]
        note: Annotated[NotRequired[str], "a note for the cook"]
        cups: NotRequired[Annotated[int, "how many"]]

    def place(order: Order): ...
    fs = function_schema(place, strict_json_schema=False)
    order = fs.params_json_schema["$defs"]["Order"]
    assert order["properties"] == {"item": {"type": "string", "title": "Item"},
                                   "note": {"type": "string", "title": "Note", "description": "a note for the cook"},
                                   "cups": {"type": "integer", "title": "Cups", "description": "how many"}}
    assert order.get("required") == (["item"] if source == "typing_extensions" else None)  # (a stand-in: total=False)
    assert validate_value(Order, {"item": "tea", "cups": 2}) == {"item": "tea", "cups": 2}
    with pytest.raises(ArgumentsError, match="parameter 'order.note': expected string, got integer 5"):
        fs.to_call_args({"order": {"item": "tea", "note": 5}})


def test_two_object_types_of_the_same_name_get_definitions_of_their_own():
    First = dataclasses.make_dataclass("Item", [("a", int)])
    Second = dataclasses.make_dataclass("Item", [("b", str)])

    def f(first: First, second: Second): ...
    schema = function_schema(f).params_json_schema
    assert schema["properties"]["first"] == {"$ref": "#/$defs/Item"}
    assert schema["properties"]["second"] == {"$ref": "#/$defs/Item2"}
    assert list(schema["$defs"]["Item"]["properties"]) == ["a"]
    assert list(schema["$defs"]["Item2"]["properties"]) == ["b"]


def test_a_parameters_default_of_a_str_subclass_is_kept_in_the_schema_as_its_text():
    class Name(str):
        pass

    def f(name: str = Name("ann")): ...
    schema = function_schema(f).params_json_schema
    assert json.loads(json.dumps(schema))["properties"]["name"]["default"] == "ann"


def test_namedtuple_is_an_object():
    def f(p: Point): ...
    fs = function_schema(f)
    assert fs.params_json_schema["$defs"]["Point"]["properties"] == {
        "x": {"type": "integer", "title": "X"}, "y": {"type": "integer", "title": "Y", "default": 0}}
    assert fs.to_call_args({"p": {"x": 1}}) == ([Point(1, 0)], {})


def test_any_is_refused_in_strict_mode_naming_the_parameter():
    def f(blob: Any): ...
    with pytest.raises(UserError, match="tool 'f': parameter 'blob' is Any; strict mode cannot express Any"):
        function_schema(f)


def test_unannotated_parameter_is_any():
    def f(blob): ...
    with pytest.raises(UserError, match="parameter 'blob'"):
        function_schema(f)
    fs = function_schema(f, strict_json_schema=False)
    assert fs.params_json_schema["properties"]["blob"] == {"title": "Blob"}
    assert fs.to_call_args({"blob": {"any": [1]}}) == ([{"any": [1]}], {})


def test_dict_is_refused_in_strict_mode_with_a_helpful_message():
    def lookup(filters: Dict[str, Any]): ...
    with pytest.raises(UserError) as err:
        function_schema(lookup)
    assert err.value.message == (
        "tool 'lookup': parameter 'filters' is dict[str, Any]; strict mode cannot express it — use a "
        "dataclass or TypedDict, or strict_mode=False")


@dataclass
class Opts:
    extra: Mapping[str, int]


def test_mapping_nested_in_a_dataclass_is_refused_naming_the_field():
    def f(opts: Opts): ...
    with pytest.raises(UserError, match=r"parameter 'opts' is Opts \(Opts.extra is Mapping\[str, int\]\)"):
        function_schema(f)


def test_dict_is_an_open_object_when_not_strict():
    def lookup(filters: Dict[str, int]): ...
    fs = function_schema(lookup, strict_json_schema=False)
    assert fs.params_json_schema["properties"]["filters"] == {
        "type": "object", "additionalProperties": {"type": "integer"}, "title": "Filters"}
    assert fs.to_call_args({"filters": {"a": 1}}) == ([{"a": 1}], {})
    with pytest.raises(ArgumentsError, match=r"parameter 'filters.a': expected integer"):
        fs.to_call_args({"filters": {"a": "1"}})


@pytest.mark.parametrize("tp", [bytes, complex, object.__class__])
def test_unexpressible_annotation_raises_instead_of_becoming_a_string(tp):
    def f(x): ...
    f.__annotations__ = {"x": tp}
    with pytest.raises(UserError, match="parameter 'x' .*cannot express it as JSON Schema"):
        function_schema(f)


def test_an_unexpressible_union_is_named_as_written_in_python():
    def f(x: Union[Literal["a"], Callable[..., Any], None]): ...

    def g(y: Dict[str, bytes]): ...
    with pytest.raises(UserError) as caught:
        function_schema(f)
    assert str(caught.value).startswith("tool 'f': parameter 'x' is Literal['a'] | Callable[..., Any] | None; "
                                        "miniagents cannot express it as JSON Schema")
    with pytest.raises(UserError, match=r"^tool 'g': parameter 'y' is dict\[str, bytes\]; "):
        function_schema(g)


def test_var_args_become_a_list_passed_positionally():
    def f(first: str, *rest: int, flag: bool = False): ...
    fs = function_schema(f)
    assert fs.params_json_schema["properties"]["rest"] == {
        "type": "array", "items": {"type": "integer"}, "title": "Rest", "default": []}
    assert fs.to_call_args({"first": "a", "rest": [1, 2], "flag": True}) == (["a", 1, 2], {"flag": True})
    assert fs.to_call_args({"first": "a", "flag": False}) == (["a"], {"flag": False})


def test_var_kwargs_are_refused_in_strict_mode():
    def f(**options: int): ...
    with pytest.raises(UserError, match=r"tool 'f': parameter '\*\*options'.*strict_mode=False"):
        function_schema(f)


def test_var_kwargs_are_an_open_object_when_not_strict():
    def f(a: int, **options: int): ...
    fs = function_schema(f, strict_json_schema=False)
    assert fs.params_json_schema["properties"]["options"] == {
        "type": "object", "additionalProperties": {"type": "integer"}, "title": "Options", "default": {}}
    assert fs.to_call_args({"a": 1, "options": {"x": 2}}) == ([1], {"x": 2})


def test_keyword_only_parameters_are_passed_by_keyword():
    def f(a: int, *, b: int, c: int = 3): ...
    assert function_schema(f).to_call_args({"a": 1, "b": 2}) == ([1], {"b": 2, "c": 3})


@pytest.mark.parametrize("ann, kind", [(RunContextWrapper, "run_context"), (RunContextWrapper[Any], "run_context"),
                                       (ToolContext, "tool_context"), (ToolContext[dict], "tool_context"),
                                       ("RunContextWrapper[Any]", "run_context"),
                                       ("ToolContext", "tool_context")])
def test_first_context_parameter_is_excluded(ann, kind):
    def f(ctx, city: str): ...
    f.__annotations__ = {"ctx": ann, "city": str}
    fs = function_schema(f)
    assert fs.context_kind == kind
    assert list(fs.params_json_schema["properties"]) == ["city"]
    assert fs.to_call_args({"city": "x"}) == (["x"], {})


def test_context_parameter_annotated_with_an_unresolvable_string_is_still_recognised():
    def f(ctx: "mystery.ToolContext[Foo]", city: str): ...  # noqa: F821
    assert function_schema(f).context_kind == "tool_context"


def test_context_parameter_not_first_is_an_error():
    def lookup(city: str, ctx: RunContextWrapper): ...
    with pytest.raises(UserError) as err:
        function_schema(lookup)
    assert err.value.message == "RunContextWrapper/ToolContext param found at non-first position in function lookup"


def test_keyword_only_context_parameter_is_refused_at_decoration_time():
    def f(*, ctx: RunContextWrapper, city: str): ...
    with pytest.raises(UserError, match="context parameter 'ctx' must be positional"):
        function_schema(f)


def test_missing_required_parameter():
    with pytest.raises(ArgumentsError, match="missing required parameter 'city'"):
        function_schema(get_weather).to_call_args({})


def test_unknown_parameter_is_refused_in_strict_mode_and_ignored_otherwise():
    with pytest.raises(ArgumentsError, match="unexpected parameter 'town'"):
        function_schema(get_weather).to_call_args({"city": "x", "town": "y"})
    lax = function_schema(get_weather, strict_json_schema=False)
    assert lax.to_call_args({"city": "x", "town": "y"}) == (["x", "c"], {})


def test_an_unknown_parameter_s_refusal_names_the_parameters_the_model_may_send_or_none():
    """The model reads the refusal to try again: it lists what it may send, and says "none" for a tool without any
    (not an empty list it could read as cut off)."""
    def ping() -> str: ...
    with pytest.raises(ArgumentsError) as told:
        function_schema(get_weather).to_call_args({"city": "x", "town": "y"})
    assert told.value.message == "unexpected parameter 'town' (parameters: city, units)"
    with pytest.raises(ArgumentsError) as told:
        function_schema(ping).to_call_args({"host": "a"})
    assert told.value.message == "unexpected parameter 'host' (parameters: none)"


def test_unknown_nested_field_is_refused():
    def f(filters: Filters): ...
    with pytest.raises(ArgumentsError, match=r"parameter 'filters': unexpected field 'x' \(allowed: limit, tag\)"):
        function_schema(f).to_call_args({"filters": {"limit": 1, "x": 2}})


@pytest.mark.parametrize("arguments, said", [({"a": 5}, "parameter 'a': expected null, got integer 5"),
                                             ({"a": None, "c": [1]}, r"parameter 'c\[0\]': expected null, got integer 1")])
def test_a_value_where_none_is_the_type_is_refused_unless_it_is_null(arguments, said):
    def f(a: None, c: List[None] = []): ...
    with pytest.raises(ArgumentsError, match=said):
        function_schema(f, strict_json_schema=False).to_call_args(arguments)
    assert function_schema(f, strict_json_schema=False).to_call_args({"a": None, "c": [None]}) == ([None, [None]], {})


def test_bad_literal_value_is_refused():
    with pytest.raises(ArgumentsError) as err:
        function_schema(get_weather).to_call_args({"city": "x", "units": "k"})
    assert err.value.message == "parameter 'units': expected one of \"c\", \"f\", got string \"k\""


def test_null_for_a_parameter_with_a_default_takes_the_default():
    assert function_schema(get_weather).to_call_args({"city": "x", "units": None}) == (["x", "c"], {})


@pytest.mark.parametrize("value", [True, "5", 5.5, None, [5]])
def test_integer_parameters_are_strict_typed(value):
    def f(n: int): ...
    with pytest.raises(ArgumentsError, match="parameter 'n': expected integer"):
        function_schema(f).to_call_args({"n": value})


def test_integral_float_is_an_integer_and_int_is_a_float():
    def f(n: int, x: float): ...
    args, _ = function_schema(f).to_call_args({"n": 5.0, "x": 2})
    assert args == [5, 2.0] and type(args[0]) is int and type(args[1]) is float


def test_bool_is_not_a_number():
    def f(x: float): ...
    with pytest.raises(ArgumentsError, match="expected number, got boolean true"):
        function_schema(f).to_call_args({"x": True})


def test_to_call_args_on_a_non_object_raises_arguments_error():
    with pytest.raises(ArgumentsError):
        function_schema(get_weather).to_call_args(["x"])  # type: ignore[arg-type]


def test_a_dataclass_check_failure_is_an_arguments_error():
    def f(p: Positive): ...
    with pytest.raises(ArgumentsError, match="parameter 'p': invalid Positive: n must be positive"):
        function_schema(f).to_call_args({"p": {"n": 0}})


def test_list_item_error_names_the_index():
    def f(points: List[Point]): ...
    with pytest.raises(ArgumentsError, match=r"parameter 'points\[1\].x': expected integer, got null"):
        function_schema(f).to_call_args({"points": [{"x": 1}, {"x": None}]})


def test_func_schema_is_frozen():
    fs = function_schema(get_weather)
    assert isinstance(fs, FuncSchema)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fs.name = "x"  # type: ignore[misc]


def test_method_self_is_not_a_parameter():
    class Svc:
        def look(self, key: str) -> str:
            return key
    fs = function_schema(Svc().look)
    assert list(fs.params_json_schema["properties"]) == ["key"]


def test_zero_argument_function_gets_the_strict_empty_object():
    def f(): ...
    schema = function_schema(f).params_json_schema
    assert schema == {**EMPTY_STRICT, "title": "f_args"}


def test_unresolvable_annotation_names_the_parameter():
    def f(x: "NoSuchType"): ...  # noqa: F821
    with pytest.raises(UserError, match="annotation 'NoSuchType' of parameter 'x'"):
        function_schema(f)


# ---------------------------------------------------------------------------------- strict pass

def test_strict_pass_turns_empty_into_the_strict_empty_object():
    assert ensure_strict_json_schema({}) == EMPTY_STRICT


def test_strict_pass_refuses_a_root_any_of():
    with pytest.raises(UserError, match="The root of a strict JSON schema must not use 'anyOf'"):
        ensure_strict_json_schema({"anyOf": [{"type": "string"}, {"type": "null"}]})


@pytest.mark.parametrize("root", [{"type": ["object", "null"]}, {"type": "object", "nullable": True}])
def test_strict_pass_refuses_a_nullable_root(root):
    with pytest.raises(UserError, match="nullable"):
        ensure_strict_json_schema(root)


@pytest.mark.parametrize("extra", [True, {}, {"type": "string"}])
def test_strict_pass_refuses_additional_properties(extra):
    with pytest.raises(UserError, match="additionalProperties should not be set for object types"):
        ensure_strict_json_schema({"type": "object", "properties": {}, "additionalProperties": extra})


def test_strict_pass_closes_objects_and_requires_every_property():
    out = ensure_strict_json_schema({"properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 1}},
                                     "required": ["a"]})
    assert out == {"type": "object", "additionalProperties": False, "required": ["a", "b"],
                   "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 1}}}


def test_strict_pass_recurses_through_defs_items_and_any_of():
    schema = {"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "y": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]}},
        "$defs": {"D": {"type": "object", "properties": {"b": {"type": "integer"}}}}}
    out = ensure_strict_json_schema(schema)
    assert out["properties"]["xs"]["items"]["additionalProperties"] is False
    assert out["properties"]["xs"]["items"]["required"] == ["a"]
    assert out["$defs"]["D"] == {"type": "object", "properties": {"b": {"type": "integer"}},
                                 "additionalProperties": False, "required": ["b"]}


def test_strict_pass_turns_one_of_into_any_of():
    out = ensure_strict_json_schema({"type": "object", "properties": {
        "x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}})
    assert out["properties"]["x"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}


def test_strict_pass_merges_a_single_all_of():
    out = ensure_strict_json_schema({"type": "object", "properties": {
        "x": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}], "description": "X"}}})
    assert out["properties"]["x"] == {"description": "X", "type": "object", "properties": {"a": {"type": "string"}},
                                      "required": ["a"], "additionalProperties": False}


def test_strict_pass_drops_null_defaults_only():
    out = ensure_strict_json_schema({"type": "object", "properties": {
        "a": {"type": ["string", "null"], "default": None}, "b": {"type": "string", "default": "x"}}})
    assert "default" not in out["properties"]["a"] and out["properties"]["b"]["default"] == "x"


def test_strict_pass_inlines_a_ref_with_siblings():
    out = ensure_strict_json_schema({"type": "object", "properties": {
        "c": {"$ref": "#/$defs/C", "description": "The colour."}},
        "$defs": {"C": {"enum": ["r", "g"], "type": "string"}}})
    assert out["properties"]["c"] == {"enum": ["r", "g"], "type": "string", "description": "The colour."}


T_OBJECT = {"T": {"type": "object", "properties": {"inner": {"type": "string"}}}}


@pytest.mark.parametrize("schema", [
    {"$defs": T_OBJECT, "type": "object", "properties": {"n": {"$ref": "#/$defs/T", "properties": {"a": {"type": "string"}}}}},
    {"$defs": T_OBJECT, "type": "object", "properties": {"outer": {"type": "string"}},
     "allOf": [{"$ref": "#/$defs/T", "description": "alias"}]},
    {"$defs": T_OBJECT, "type": "object", "properties": {"outer": {"type": "string"}},
     "allOf": [{"allOf": [{"$ref": "#/$defs/T"}]}]},
])
def test_strict_pass_refuses_a_ref_or_one_entry_all_of_that_contradicts_the_keywords_beside_it(schema):
    with pytest.raises(UserError, match=r"both set \['properties'\] differently"):
        ensure_strict_json_schema(schema)


def test_strict_pass_merges_keywords_beside_a_ref_that_its_target_leaves_unset():
    out = ensure_strict_json_schema({"$defs": {"T": {"type": "string"}}, "type": "object",
                                     "properties": {"t": {"$ref": "#/$defs/T", "minLength": 1}}})
    assert out["properties"]["t"] == {"type": "string", "minLength": 1}


def test_strict_pass_refuses_a_cycle_of_refs_with_no_schema_in_it():
    with pytest.raises(UserError, match="cycle with no schema in it"):
        ensure_strict_json_schema({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
                                   "type": "object", "allOf": [{"$ref": "#/$defs/A"}]})


def test_strict_pass_lets_the_nodes_annotations_win_and_closes_a_nullable_object():
    strict = ensure_strict_json_schema({
        "$id": "https://example.test/root", "$defs": T_OBJECT, "type": "object",
        "properties": {"node": {"$ref": "#/$defs/T", "title": "Node"},
                       "maybe": {"type": ["object", "null"], "properties": {"k": {"type": "string"}}}}})
    node = strict["properties"]["node"]
    assert "$ref" not in node and node["title"] == "Node" and node["required"] == ["inner"]
    assert strict["properties"]["maybe"]["additionalProperties"] is False
    assert strict["properties"]["maybe"]["required"] == ["k"] and strict["$id"] == "https://example.test/root"


@pytest.mark.parametrize("name, token", [("a/b", "a~1b"), ("a~1b", "a~01b"), ("$id", "$id")])
def test_strict_pass_reads_definition_names_as_json_pointer_tokens(name, token):
    strict = ensure_strict_json_schema({"$defs": {name: {"type": "object", "properties": {"v": {"type": "string"}}}},
                                        "type": "object", "allOf": [{"$ref": f"#/$defs/{token}"}]})
    assert strict["properties"] == {"v": {"type": "string"}} and strict["required"] == ["v"]


def test_strict_pass_refuses_additional_properties_on_an_object_without_a_type():
    with pytest.raises(UserError, match="additionalProperties should not be set"):
        ensure_strict_json_schema({"type": "object", "properties": {"m": {"additionalProperties": {"type": "string"}}}})


def test_strict_pass_never_mutates_its_input():
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}, "b": {"type": "string", "default": None}}}
    before = json.dumps(schema)
    out = ensure_strict_json_schema(schema)
    assert json.dumps(schema) == before and out is not schema
    out["properties"]["a"]["x"] = 1
    assert json.dumps(schema) == before


def test_strict_pass_limits_depth():
    schema: dict = {"type": "string"}
    for _ in range(150):
        schema = {"type": "array", "items": schema}
    with pytest.raises(UserError, match="depth 100"):
        ensure_strict_json_schema({"type": "object", "properties": {"x": schema}})


def test_strict_pass_limits_nodes():
    props = {f"p{i}": {"type": "string"} for i in range(100_001)}
    with pytest.raises(UserError, match="100000 nodes"):
        ensure_strict_json_schema({"type": "object", "properties": props})


@pytest.mark.with_shells  # upstream's error_handlers: the upstream shell's plugin
def test_an_error_handlers_output_for_an_output_schema_of_your_own_is_kept_in_the_history_as_json():
    """The kernel asks every output schema for `model_text`, so the base class has it (it once was only on
    AgentOutputSchema, and a schema of your own failed with AttributeError)."""
    from miniagents import Agent, function_tool
    from miniagents.agent_output import AgentOutputSchemaBase
    from miniagents.upstream import Runner  # upstream's error_handlers
    from miniagents.testing import ScriptedModel, function_call

    class Scores(AgentOutputSchemaBase):
        def is_plain_text(self): return False
        def name(self): return "scores"
        def json_schema(self): return {"type": "object", "properties": {"a": {"type": "integer"}}}
        def is_strict_json_schema(self): return False
        def validate_json(self, text): return json.loads(text)

    @function_tool
    def noop() -> str:
        return "x"

    model = ScriptedModel([[function_call("noop", "{}", call_id="c1")]])
    handlers = {"max_turns": lambda data: {"final_output": {"a": 1}, "include_in_history": True}}
    result = Runner.run_sync(Agent(name="A", output_type=Scores(), model=model, tools=[noop]), "go", max_turns=1,
                             error_handlers=handlers)
    assert result.final_output == {"a": 1}
    assert result.new_items[-1].raw_item["content"][0]["text"] == '{"a":1}'


def _one_property(prop, **root):
    """A hand-written tool schema whose one property `a` is `prop`."""
    return {"type": "object", "properties": {"a": prop}, "required": ["a"], "additionalProperties": False, **root}


@pytest.mark.parametrize("params, message", [
    (["not", "a", "schema"], "A JSON schema must be a dict, got list"),
    (_one_property({"$ref": "https://example.test/s", "description": "d"}),
     "Only local $ref values are supported in a strict schema, got 'https://example.test/s'"),
    (_one_property({"$ref": "#/$defs/Missing", "description": "d"}),
     "Unresolvable $ref '#/$defs/Missing' in JSON schema"),
    (_one_property({"$ref": "#/$defs/B", "description": "d"}, **{"$defs": {"B": 5}}),
     "$ref '#/$defs/B' does not point to a schema"),
    (_one_property({"$ref": "https://example.test/s"}),  # a lone $ref is sent as it is: checked all the same
     "Only local $ref values are supported in a strict schema, got 'https://example.test/s'"),
    (_one_property({"$ref": "#/$defs/Missing"}), "Unresolvable $ref '#/$defs/Missing' in JSON schema"),
])
def test_a_hand_written_strict_tool_schema_strict_mode_cannot_read_is_refused_where_the_tool_is_made(params, message):
    from miniagents import FunctionTool

    with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
        FunctionTool(name="t", description="d", params_json_schema=params, on_invoke_tool=lambda ctx, args: "x")


# ---------------------------------------------------------------------------------- type_schema

def test_str_output_is_wrapped_as_response():
    assert type_schema(str) == ({"type": "object", "properties": {"response": {"type": "string"}},
                                 "required": ["response"], "additionalProperties": False}, True)


def test_list_and_literal_outputs_are_wrapped():
    schema, wrapped = type_schema(List[int])
    assert wrapped and schema["properties"]["response"] == {"type": "array", "items": {"type": "integer"}}
    schema, wrapped = type_schema(Literal["yes", "no"])
    assert wrapped and schema["properties"]["response"] == {"enum": ["yes", "no"], "type": "string"}


def test_optional_dataclass_output_is_wrapped_not_a_root_any_of():
    schema, wrapped = type_schema(Optional[Filters])
    assert wrapped and schema["properties"]["response"]["anyOf"][0] == {"$ref": "#/$defs/Filters"}


def test_dataclass_output_is_the_root_with_nested_defs():
    schema, wrapped = type_schema(Query)
    assert not wrapped
    assert schema["title"] == "Query" and schema["required"] == ["text", "filters"]
    assert schema["additionalProperties"] is False
    assert list(schema["$defs"]) == ["Filters"]


def test_recursive_output_keeps_its_own_def():
    schema, wrapped = type_schema(TreeNode)
    assert not wrapped and schema["title"] == "TreeNode" and "TreeNode" in schema["$defs"]


def test_typeddict_output_is_the_root():
    schema, wrapped = type_schema(Movie)
    assert not wrapped and schema == {"properties": {"title": {"type": "string", "title": "Title"},
                                                     "year": {"type": "integer", "title": "Year"}},
                                      "required": ["title", "year"], "title": "Movie", "type": "object",
                                      "additionalProperties": False}


def test_output_type_that_cannot_be_expressed_raises():
    with pytest.raises(UserError, match="output type is dict"):
        type_schema(Dict[str, int])
    assert type_schema(Dict[str, int], strict=False)[0]["properties"]["response"]["additionalProperties"] == {
        "type": "integer"}


# ---------------------------------------------------------------------------------- validate_value

def test_validate_value_builds_dataclasses():
    assert validate_value(Query, {"text": "q", "filters": {"limit": 1, "tag": "t"}}) == Query("q", Filters(1, "t"))


def test_validate_value_without_a_path_states_the_problem_only():
    with pytest.raises(ArgumentsError) as err:
        validate_value(int, "5")
    assert err.value.message == 'expected integer, got string "5"' and err.value.path == ""


def test_validate_value_uses_the_given_path():
    with pytest.raises(ArgumentsError) as err:
        validate_value(Filters, {"limit": "x"}, path="response")
    assert err.value.message == "parameter 'response.limit': expected integer, got string \"x\""
    assert err.value.path == "response.limit"


def test_validate_value_literal_distinguishes_true_from_one():
    with pytest.raises(ArgumentsError):
        validate_value(Literal[1], True)
    assert validate_value(Literal[1, 2], 2) == 2


def test_validate_value_converts_enums():
    assert validate_value(Color, "red") is Color.RED
    with pytest.raises(ArgumentsError, match='expected one of "red", "green", got string "blue"'):
        validate_value(Color, "blue")


def test_validate_value_union_tries_each_arm():
    assert validate_value(Union[int, str], "a") == "a"
    assert validate_value(Union[Filters, Point], {"x": 1}) == Point(1)
    with pytest.raises(ArgumentsError, match="expected integer or string, got boolean"):
        validate_value(Union[int, str], True)


def test_validate_value_tuple_length_must_match():
    with pytest.raises(ArgumentsError, match="exactly 2 items"):
        validate_value(Tuple[int, int], [1])


# ---------------------------------------------------------------------------------- Pydantic duck typing

class FakeValidationError(ValueError):
    pass


@dataclass
class FakeModel:
    """A tiny stand-in for pydantic.BaseModel: dataclass fields, model_* methods."""

    TYPES: ClassVar[dict] = {str: "string", int: "integer"}

    @classmethod
    def _field_schema(cls, tp, defs):
        if isinstance(tp, type) and issubclass(tp, FakeModel):
            defs.update(tp.model_json_schema().pop("$defs", {}))
            defs[tp.__name__] = {k: v for k, v in tp.model_json_schema().items() if k != "$defs"}
            return {"$ref": f"#/$defs/{tp.__name__}"}
        if getattr(tp, "__origin__", None) is list:
            return {"type": "array", "items": cls._field_schema(tp.__args__[0], defs)}
        if getattr(tp, "__origin__", None) is Union:
            return {"anyOf": [cls._field_schema(tp.__args__[0], defs), {"type": "null"}]}
        return {"type": cls.TYPES[tp]}

    @classmethod
    def model_json_schema(cls):
        import typing
        defs: dict = {}
        props, required = {}, []
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            props[f.name] = {**cls._field_schema(hints[f.name], defs), "title": f.name.title()}
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            elif f.default is None:
                props[f.name]["default"] = None
        out = {"properties": props, "required": required, "title": cls.__name__, "type": "object"}
        return {**out, "$defs": defs} if defs else out

    @classmethod
    def _convert(cls, tp, value, loc):
        if isinstance(tp, type) and issubclass(tp, FakeModel):
            return tp.model_validate(value)
        if getattr(tp, "__origin__", None) is list and isinstance(value, list):
            return [cls._convert(tp.__args__[0], v, loc) for v in value]
        if getattr(tp, "__origin__", None) is Union:
            return None if value is None else cls._convert(tp.__args__[0], value, loc)
        if isinstance(tp, type) and isinstance(value, tp):
            return value
        raise FakeValidationError(f"1 validation error for {cls.__name__}\n{loc}\n  Input should be a valid "
                                  f"{cls.TYPES.get(tp, 'value')}")

    @classmethod
    def model_validate(cls, value):
        import typing
        if not isinstance(value, dict):
            raise FakeValidationError(f"1 validation error for {cls.__name__}\n  Input should be an object")
        hints, kwargs = typing.get_type_hints(cls), {}
        for f in dataclasses.fields(cls):
            if f.name in value:
                kwargs[f.name] = cls._convert(hints[f.name], value[f.name], f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise FakeValidationError(f"1 validation error for {cls.__name__}\n{f.name}\n  Field required")
        return cls(**kwargs)

    @classmethod
    def model_validate_json(cls, text):
        return cls.model_validate(json.loads(text))

    def model_dump(self, mode="python"):
        return json.loads(json.dumps(dataclasses.asdict(self)))


@dataclass
class FakeAddress(FakeModel):
    street: str
    zip: Optional[str] = None


@dataclass
class FakeUser(FakeModel):
    name: str
    address: FakeAddress
    previous: List[FakeAddress] = field(default_factory=list)


def _real_pydantic_models():
    pydantic = pytest.importorskip("pydantic")

    class FakeAddress(pydantic.BaseModel):
        street: str
        zip: Optional[str] = None

    class FakeUser(pydantic.BaseModel):
        name: str
        address: FakeAddress
        previous: List[FakeAddress] = []

    return FakeAddress, FakeUser


@pytest.fixture(params=["fake", "pydantic"])
def models(request):
    return (FakeAddress, FakeUser) if request.param == "fake" else _real_pydantic_models()


def _titles_off(node):
    if isinstance(node, dict):
        return {k: _titles_off(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    return [_titles_off(v) for v in node] if isinstance(node, list) else node


def test_importing_schema_does_not_import_pydantic():
    code = "import sys, miniagents.schema; assert 'pydantic' not in sys.modules, 'pydantic imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_model_param_schema_is_hoisted_and_strict(models):
    Address, User = models

    def register(user: User, backup: Optional[Address] = None, more: List[Address] = []): ...  # noqa: B006
    schema = function_schema(register).params_json_schema
    assert schema["properties"]["user"] == {"$ref": "#/$defs/FakeUser"}
    assert schema["properties"]["backup"] == {"anyOf": [{"$ref": "#/$defs/FakeAddress"}, {"type": "null"}]}
    assert schema["properties"]["more"]["items"] == {"$ref": "#/$defs/FakeAddress"}
    assert set(schema["$defs"]) == {"FakeUser", "FakeAddress"}
    assert _titles_off(schema["$defs"]["FakeAddress"]) == {
        "type": "object", "additionalProperties": False, "required": ["street", "zip"],
        "properties": {"street": {"type": "string"}, "zip": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    user = schema["$defs"]["FakeUser"]
    assert user["required"] == ["name", "address", "previous"] and user["additionalProperties"] is False
    assert user["properties"]["previous"]["items"] == {"$ref": "#/$defs/FakeAddress"}


def test_a_model_and_another_type_of_the_same_name_are_each_defined(models):
    """Pydantic names a nested model by its class name: where another type has that name, the model's is another one
    (FakeAddress2), its $refs changed with it, as a second class of one name is named."""
    Address, User = models
    Other = dataclasses.make_dataclass("FakeAddress", [("line", str)])

    def register(other: Other, user: User): ...
    schema = function_schema(register).params_json_schema
    assert schema["properties"]["other"] == {"$ref": "#/$defs/FakeAddress"}
    assert list(schema["$defs"]["FakeAddress"]["properties"]) == ["line"]
    assert schema["$defs"]["FakeUser"]["properties"]["previous"]["items"] == {"$ref": "#/$defs/FakeAddress2"}
    assert list(schema["$defs"]["FakeAddress2"]["properties"]) == ["street", "zip"]


class RemoteRefModel:
    """A model class (pydantic's protocol) whose schema points outside itself, which strict mode cannot send."""

    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "title": "RemoteRefModel", "required": ["x"],
                "properties": {"x": {"$ref": "https://example.test/x", "title": "X"}}}

    @classmethod
    def model_validate(cls, value):
        return value


class RecursiveModel:
    """A recursive model class (pydantic's protocol): its schema's root is a $ref into its own $defs."""

    @classmethod
    def model_json_schema(cls):
        children = {"type": "array", "items": {"$ref": "#/$defs/RecursiveModel"}, "title": "Children"}
        return {"$ref": "#/$defs/RecursiveModel", "$defs": {"RecursiveModel": {
            "type": "object", "title": "RecursiveModel", "required": ["name", "children"],
            "properties": {"name": {"type": "string", "title": "Name"}, "children": children}}}}

    @classmethod
    def model_validate(cls, value):
        return ("validated", value)


def test_a_recursive_model_whose_schema_root_is_a_ref_is_referenced_by_every_parameter_of_its_type():
    def plant(tree: RecursiveModel, more: List[RecursiveModel]): ...
    fs = function_schema(plant)
    schema = fs.params_json_schema
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/RecursiveModel"}
    assert schema["properties"]["more"]["items"] == {"$ref": "#/$defs/RecursiveModel"}
    assert schema["$defs"]["RecursiveModel"]["additionalProperties"] is False
    tree = {"name": "a", "children": [{"name": "b", "children": []}]}
    assert fs.to_call_args({"tree": tree, "more": []}) == ([("validated", tree), []], {})


def test_a_strict_pass_refusal_of_a_functions_schema_names_the_tool():
    def register(m: RemoteRefModel): ...
    with pytest.raises(UserError, match="^tool 'register': Only local \\$ref values are supported in a strict schema, "
                                        "got 'https://example.test/x'$"):
        function_schema(register)


def test_model_param_is_converted_with_model_validate(models):
    Address, User = models

    def register(user: User, more: List[Address]): ...
    args, _ = function_schema(register).to_call_args(
        {"user": {"name": "a", "address": {"street": "s"}, "previous": [{"street": "p", "zip": "1"}]},
         "more": [{"street": "m"}]})
    assert isinstance(args[0], User) and isinstance(args[0].address, Address)
    assert args[0].previous[0].zip == "1" and args[1][0].street == "m"


def test_model_validation_failure_is_an_arguments_error_with_the_validators_message(models):
    _, User = models

    def register(user: User): ...
    with pytest.raises(ArgumentsError) as err:
        function_schema(register).to_call_args({"user": {"name": "a"}})
    assert err.value.message.startswith("parameter 'user': invalid FakeUser:")
    assert "address" in err.value.message and "Field required" in err.value.message


def test_model_output_type_is_the_root(models):
    _, User = models
    schema, wrapped = type_schema(User)
    assert not wrapped and schema["title"] == "FakeUser" and schema["additionalProperties"] is False
    assert list(schema["$defs"]) == ["FakeAddress"]
    user = validate_value(User, {"name": "n", "address": {"street": "s", "zip": None}, "previous": []})
    assert user.model_dump(mode="json")["address"] == {"street": "s", "zip": None}


def test_list_of_models_output_is_wrapped(models):
    Address, _ = models
    schema, wrapped = type_schema(List[Address])
    assert wrapped and schema["properties"]["response"]["items"] == {"$ref": "#/$defs/FakeAddress"}
    assert schema["$defs"]["FakeAddress"]["additionalProperties"] is False


def test_strict_pass_keeps_a_recursive_ref_with_siblings_bare_instead_of_looping():
    out = ensure_strict_json_schema({"type": "object", "properties": {"n": {"$ref": "#/$defs/N", "description": "x"}},
                                     "$defs": {"N": {"type": "object", "properties": {
                                         "next": {"$ref": "#/$defs/N", "description": "again"}}}}})
    assert out["properties"]["n"]["description"] == "x"
    assert out["properties"]["n"]["properties"]["next"] == {"$ref": "#/$defs/N"}


@dataclass
class Dangling:
    x: "NoSuchThing"  # noqa: F821


def test_a_dataclass_whose_hints_do_not_resolve_is_a_user_error():
    def f(d: Dangling): ...
    with pytest.raises(UserError, match=r"parameter 'd' is Dangling.*type hints do not resolve"):
        function_schema(f)


def test_a_literal_of_non_json_values_is_a_user_error():
    def f(x: Literal[b"raw"]): ...
    with pytest.raises(UserError, match="parameter 'x'.*must be JSON"):
        function_schema(f)


def test_null_for_a_field_with_a_default_factory_takes_the_default():
    assert validate_value(TreeNode, {"name": "a", "children": None}) == TreeNode("a")


def test_too_deeply_nested_arguments_are_an_arguments_error():
    def f(tree: TreeNode): ...
    data: dict = {"name": "leaf", "children": []}
    for _ in range(3000):
        data = {"name": "n", "children": [data]}
    with pytest.raises(ArgumentsError, match="nested too deeply"):
        function_schema(f).to_call_args({"tree": data})


def _upstream_schema(func):
    """What upstream builds: a pydantic model of the parameters, then the strict pass."""
    import inspect
    import typing
    pydantic = pytest.importorskip("pydantic")
    doc = parse_docstring(func.__doc__)[1]
    hints = typing.get_type_hints(func, include_extras=True)
    fields = {name: (hints[name], pydantic.Field(... if p.default is p.empty else p.default,
                                                 description=doc.get(name)))
              for name, p in inspect.signature(func).parameters.items()}
    model = pydantic.create_model(f"{func.__name__}_args", **fields)
    return ensure_strict_json_schema(model.model_json_schema())


def search_movies(query: Query, color: Color, genre: Optional[str] = None, limit: int = 10,
                  tags: List[str] = [], year_range: Tuple[int, int] = (1990, 2000)):  # noqa: B006
    """Search.

    Args:
        query: What to look for.
        genre: Only this genre.
    """


@pytest.mark.parametrize("func", [get_weather, search_movies])
def test_schema_matches_what_upstream_pydantic_builds(func):
    assert function_schema(func).params_json_schema == _upstream_schema(func)
