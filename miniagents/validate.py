"""Decoded JSON -> annotated Python values: the call-time half of the tool layer.

Holds `parse_arguments` (the model's arguments string -> dict), `validate_value` (a decoded JSON value checked
against a type hint and converted: dataclasses built, enums, tuples, sets), `call_args` (the body of
`FuncSchema.to_call_args`), `ArgumentsError`, and the type-hint readers that `schema.py` shares. It runs after
the model answered, before a tool or output type sees the value: every mistake raises `ArgumentsError`, whose
message names the parameter and what to fix, for the model to read. It never builds schemas (that is
`schema.py`), never runs a tool, never does I/O, never imports pydantic (models are recognised by duck typing).
"""
from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import functools
import inspect
import json
import math
import re
import sys
import types
import typing
from typing import Any, Callable, NamedTuple, Optional, Union

from .errors import ModelBehaviorError
from .items import clean_json, described, preview

MISSING = inspect.Parameter.empty
JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
_UNIONS = (Union, getattr(types, "UnionType", Union))  # `Union[X, Y]`, and `X | Y` on Python 3.10+
_QUALIFIERS = ("Required", "NotRequired", "ReadOnly")  # a TypedDict field's, typing's or typing_extensions' (by name)
INT_KEY = "^(0|-?[1-9][0-9]*)$"  # the JSON text of a `dict[int, T]` key: one text per int ("01", "-0" would clash)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


# ------------------------------------------------------------------------------ reading type hints (shared)

def strip_annotated(tp):
    """-> (inner type, description from the first str metadata or a Field-like `.description`)."""
    desc = None
    while typing.get_origin(tp) is typing.Annotated:
        tp, *meta = typing.get_args(tp)
        for m in meta:
            d = m if isinstance(m, str) else getattr(m, "description", None)
            if desc is None and isinstance(d, str):
                desc = d
    return tp, desc


def is_union(tp) -> bool:
    return typing.get_origin(tp) in _UNIONS


def admits_none(tp) -> bool:
    tp = strip_annotated(tp)[0]
    if tp in (None, type(None), Any, object):
        return True
    if is_union(tp) or typing.get_origin(tp) is typing.Literal:
        return any(a is None or a is type(None) or (is_union(a) and admits_none(a)) for a in typing.get_args(tp))
    return False


def is_pydantic(tp) -> bool:
    return isinstance(tp, type) and callable(getattr(tp, "model_json_schema", None)) \
        and callable(getattr(tp, "model_validate", None))


def _is_typeddict(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _is_namedtuple(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def is_object_type(tp) -> bool:
    return (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or _is_typeddict(tp) \
        or _is_namedtuple(tp) or is_pydantic(tp)


def is_enum(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def type_name(tp) -> str:
    tp = strip_annotated(tp)[0]
    if tp is None or tp is type(None):
        return "None"
    if tp is Any or tp is Ellipsis:
        return "Any" if tp is Any else "..."
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if is_union(tp):
        return " | ".join(map(type_name, args))
    if origin is not None:
        base = getattr(origin, "__name__", str(origin))
        return f"{base}[{', '.join(map(type_name, args))}]" if args else base
    return getattr(tp, "__name__", None) or described(tp)  # (a value that is no type: said where it is refused)


@functools.lru_cache(maxsize=None)
def fields_of(cls) -> tuple:
    """(name, type, required, default) per field of a dataclass / TypedDict / NamedTuple; default MISSING if none."""
    hints = typing.get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            if f.init:
                has_factory = f.default_factory is not dataclasses.MISSING
                default = MISSING if f.default is dataclasses.MISSING else f.default
                out.append((f.name, hints.get(f.name, Any), default is MISSING and not has_factory, default))
        return tuple(out)
    if _is_namedtuple(cls):
        return tuple((n, hints.get(n, Any), n not in cls._field_defaults, cls._field_defaults.get(n, MISSING))
                     for n in cls._fields)
    return tuple((n, _unqualified(tp), n in cls.__required_keys__, MISSING) for n, tp in hints.items())  # TypedDict


def _unqualified(tp):
    """A TypedDict field's type without its qualifiers (Required, NotRequired, ReadOnly), which may stand inside
    Annotated and each other in any order (PEP 655, 705): `__required_keys__` has read them. Annotated's metadata
    (a description) stays. A qualifier is known by its name: typing_extensions' are the only ones before Python 3.11
    (ReadOnly before 3.13), and the kernel imports no package."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if getattr(origin, "_name", None) in _QUALIFIERS:
        return _unqualified(args[0])
    return typing.Annotated[(_unqualified(args[0]), *args[1:])] if origin is typing.Annotated else tp


def field_type(tp, default):
    """A default of None makes the type nullable, so the model can send null for "not given"."""
    return Optional[tp] if default is None and not admits_none(tp) else tp


def jsonable(value):
    """A Python value as JSON data (the inverse of `validate_value`): pydantic-like models dumped, dataclasses
    as objects (NamedTuples too), enums as their values, tuples and sets as arrays; `TypeError` for anything else."""
    if value is None or type(value) in (str, int, float, bool):  # JSON already (exactly these types, no subclass)
        return value
    if callable(getattr(value, "model_dump", None)) and not isinstance(value, type):
        return value.model_dump(mode="json")
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: an object, as its schema says
        return {name: jsonable(v) for name, v in zip(value._fields, value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)):  # a subclass (an IntFlag is an Enum, handled above)
        return value
    raise TypeError(f"{type(value).__name__} is not JSON")


# ------------------------------------------------------------------------------------------------- errors

class ArgumentsError(ModelBehaviorError):
    """Arguments from the model that cannot be used; `.message` is model-readable: names the path and problem."""

    def __init__(self, message: str, *, path: str = "", problem: str = ""):
        super().__init__(message)
        self.path, self.problem = path, problem or message


def _fail(path: str, problem: str):
    raise ArgumentsError(f"parameter '{path}': {problem}" if path else problem, path=path, problem=problem)


def _describe(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, (int, float)):
        return f"{'integer' if isinstance(value, int) else 'number'} {preview(repr(value))[:40]}"
    if isinstance(value, str):
        return f"string {json.dumps(value if len(value) <= 40 else value[:39] + '…', ensure_ascii=False)}"
    if isinstance(value, list):
        return f"array of {len(value)} item{'s' * (len(value) != 1)}"
    return "object" if isinstance(value, dict) else type(value).__name__


def _expected(tp) -> str:
    """What a type takes, in JSON's words: "integer", "object (Movie)", "array", "one of "a", "b"", ..."""
    tp = strip_annotated(tp)[0]
    if tp in JSON_TYPES or tp is None:
        return JSON_TYPES.get(tp, "null")
    if is_object_type(tp):
        return f"object ({type_name(tp)})"
    if tp is dict or typing.get_origin(tp) in _MAPPINGS:
        return "object"
    if typing.get_origin(tp) is typing.Literal or is_enum(tp):
        values = typing.get_args(tp) if typing.get_origin(tp) else [m.value for m in tp]
        return "one of " + ", ".join(json.dumps(jsonable(v)) for v in values)
    return "array" if typing.get_origin(tp) or tp in (list, tuple, set, frozenset) else type_name(tp)


# ---------------------------------------------------------------------------------------- model arguments

def parse_arguments(raw: Optional[str], tool_name: str) -> dict:
    """The model's `arguments` string -> dict. Empty means no arguments; anything else must be a JSON object."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        data = STRICT_JSON.decode(raw)
        if not (raw.isascii() and "\\u" not in raw):  # an escape or a character that may decode to a lone surrogate
            data = clean_json(data)  # a "\\ud800" escape must not reach the tool, a request or a database
    except json.JSONDecodeError as exc:
        raise unreadable(tool_name, f"{exc.msg} at line {exc.lineno} column {exc.colno}. Send one JSON object. "
                         f"Received: {preview(raw)}") from None
    except (ValueError, RecursionError) as exc:
        raise unreadable(tool_name, f"{exc or 'nested too deeply'}. Received: {preview(raw)}") from None
    except TypeError:  # no text at all: a program that calls a tool's on_invoke_tool with a dict
        raise unreadable(tool_name, f"expected a JSON string, got {type(raw).__name__}") from None
    if not isinstance(data, dict):
        raise unreadable(tool_name, f"expected a JSON object of parameters, got {_describe(data)}. "
                         f"Received: {preview(raw)}")
    return data


def unreadable(tool_name: str, problem: str) -> ArgumentsError:
    """Arguments that are not one JSON object: the message names the tool (`failure_text` keeps it as it is)."""
    return ArgumentsError(f"Invalid JSON input for tool {tool_name}: {problem}")


def _no_constant(name: str) -> None:
    """Python's json accepts NaN and Infinity; JSON does not."""
    raise ValueError(f"{name} is not valid JSON")


STRICT_JSON = json.JSONDecoder(parse_constant=_no_constant)  # made once: a decoder per call costs as much as a call


class Param(NamedTuple):
    """One parameter of a tool's function, read once when the tool is made: how its argument is passed (`kind`,
    an `inspect.Parameter` kind), checked and converted (`convert`, see `converter`), and its default."""

    name: str
    kind: Any
    type: Any
    default: Any
    convert: Callable


def param(name: str, kind: Any, tp: Any, default: Any, strict: bool, taken: frozenset = frozenset()) -> Param:
    """A `Param`; null for a parameter with a default that does not admit None means "not given". `taken`: for
    `**kwargs`, the names it can hold no key of (the function's other parameters passable by name, its context
    parameter's too): such a key would clash with that parameter in the call."""
    convert = converter(tp, strict)
    if default is not MISSING and not admits_none(tp):
        convert = functools.partial(_null_is_default, convert, default)
    if taken:
        convert = functools.partial(_no_key_of, convert, taken)
    return Param(name, kind, tp, default, convert)


def _no_key_of(convert: Callable, taken: frozenset, value: Any, path: str) -> Any:
    value = convert(value, path)
    named = sorted(value.keys() & taken)
    if named:
        _fail(path, f"the key '{named[0]}' names another parameter of the function: send that parameter as itself, "
              "or use another key")
    return value


def _null_is_default(convert: Callable, default: Any, value: Any, path: str) -> Any:
    return default if value is None else convert(value, path)


ADD = {inspect.Parameter.POSITIONAL_ONLY: list.append, inspect.Parameter.POSITIONAL_OR_KEYWORD: list.append,
       inspect.Parameter.VAR_POSITIONAL: list.extend}  # how an argument joins the positional ones
KEYWORDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)  # passable by name


def call_args(params: tuple, data: dict, strict: bool):
    """Parsed arguments -> (positional args, kwargs) for `params` (`Param`s)."""
    unknown = sorted(data.keys() - {p.name for p in params})
    if unknown and strict:
        names = ", ".join(p.name for p in params) or "none"
        _fail("", f"unexpected parameter '{preview(unknown[0], 60)}' (parameters: {names})")
    args, kwargs = [], {}
    for p in params:
        if p.name not in data and p.default is MISSING:
            _fail("", f"missing required parameter '{p.name}'")
        value = p.convert(data[p.name], p.name) if p.name in data else p.default
        if p.kind in ADD:
            ADD[p.kind](args, value)
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            kwargs.update(value)
        else:  # keyword-only
            kwargs[p.name] = value
    return args, kwargs


def converter(tp: Any, strict: bool) -> Callable:
    """A function `(value, path) -> value` that checks a decoded JSON value against `tp` and converts it, chosen
    once per parameter: a scalar type's is a single check (anything else of `int` or `float`, such as 5.0 for an
    int, takes the general conversion), any other type's the general conversion (`_convert`)."""
    if tp in (str, bool):
        return lambda value, path: value if isinstance(value, tp) else _fail(
            path, f"expected {_expected(tp)}, got {_describe(value)}")
    if tp is int:
        return lambda value, path: value if type(value) is int else _convert_guarded(tp, value, path, strict)
    if tp is float:  # (1e400 decodes to inf)
        return lambda value, path: value if type(value) is float and math.isfinite(value) else _convert_guarded(
            tp, value, path, strict)
    return lambda value, path: _convert_guarded(tp, value, path, strict)


def validate_value(tp, value, *, path: str = "", strict: bool = True):
    """Check a decoded JSON value against `tp` and convert it (dataclasses built, enums, tuples, sets); an object's
    keys its type does not name are refused when `strict` (its schema said so), else ignored."""
    return _convert_guarded(tp, value, path, strict)


# ------------------------------------------------------------------------------------------------ convert

def _convert_guarded(tp, value, path, strict):
    try:
        return _convert(tp, value, path, strict, {})
    except RecursionError:
        return _fail(path, "the value is nested too deeply")


def _join(path: str, key) -> str:
    """`path` one step down; a key (a dict's may be the model's, of any length) is cut to 60 characters."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{preview(str(key), 60)}" if path else preview(str(key), 60)


def _same(a, b) -> bool:
    """JSON equality without Python's 1 == 1.0 == True, at every depth (an enum's value may be an array)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    return a == b and (type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                               and not isinstance(a, bool) and not isinstance(b, bool)))


def _convert(tp, value, path: str, strict: bool, tried: dict):
    """`tried`: the outcome of each union arm tried so far in this conversion (see the union case)."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = strip_annotated(tp)[0]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    wrong = lambda: _fail(path, f"expected {_expected(tp)}, got {_describe(value)}")  # noqa: E731
    if tp is Any or tp is object or tp is MISSING:
        return value
    if tp is None or tp is type(None):
        return None if value is None else wrong()
    if tp in (str, bool):
        return value if isinstance(value, tp) else wrong()
    if tp is int:  # JSON Schema "integer" includes 5.0; bool is not an integer here
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else wrong()
    if tp is float:  # a finite number: 1e400 decodes to inf, an integer may be beyond any float
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return wrong()
        return float(value) if abs(value) <= sys.float_info.max else _fail(
            path, f"expected a finite number, got {_describe(value)}")
    if is_union(tp):
        if value is None and admits_none(tp):
            return None
        arms = [a for a in args if a is not type(None)]
        if len(arms) == 1:
            return _convert(arms[0], value, path, strict, tried)
        problems = []
        for arm in arms:  # each arm's outcome for this value at this path is kept for the whole conversion: under
            key = (id(arm), id(value), path)  # nested unions (A | B, each with a field of A | B) a value is then
            if key not in tried:  # converted once per arm, not once per path of arms above it (2 ** depth)
                try:  # (the entry holds the arm, so that no other type takes its id meanwhile)
                    tried[key] = (arm, _convert(arm, value, path, strict, tried), None)
                except ArgumentsError as problem:
                    tried[key] = (arm, None, problem)
            _, converted, problem = tried[key]
            if problem is None:
                return converted
            problems.append((arm, problem))
        kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
        same_kind = [p for arm, p in problems if _expected(arm).split(" ")[0] == kind]
        if len(same_kind) == 1:  # one arm takes this kind of value: its problem is the precise one
            raise same_kind[0]
        return _fail(path, f"expected {' or '.join(map(_expected, args))}, got {_describe(value)}")
    if origin is typing.Literal or is_enum(tp):
        for choice in (args if origin is typing.Literal else tuple(tp)):
            if _same(jsonable(choice), value):
                return choice
        return wrong()
    if is_pydantic(tp):
        try:
            return tp.model_validate(value)
        except ValueError as exc:  # a validation error (pydantic's is a ValueError): the model can fix its input
            return _fail(path, f"invalid {tp.__name__}: {exc}")
        # Anything else (a validator that could not reach its database, say) is the tool's failure, not the
        # model's: it propagates to the failure policy, which redacts it.
    if is_object_type(tp):
        return _convert_object(tp, value, path, strict, tried) if isinstance(value, dict) else wrong()
    if origin in _MAPPINGS or tp is dict:
        if not isinstance(value, dict):
            return wrong()
        read_key = _int_key if args and strip_annotated(args[0])[0] is int else lambda key, where: key
        return {read_key(k, _join(path, k)): _convert(args[1] if args else Any, v, _join(path, k), strict, tried)
                for k, v in value.items()}
    if not isinstance(value, list):
        return wrong()
    # a fixed tuple (a bare `typing.Tuple` has no args, as `Tuple[()]` on 3.11+, but it is any tuple, as `tuple` is)
    if origin is tuple and tp is not typing.Tuple and not (len(args) == 2 and args[1] is Ellipsis):
        args = () if args == ((),) else args
        if len(value) != len(args):
            return _fail(path, f"expected an array of exactly {len(args)} items, got {_describe(value)}")
        return tuple(_convert(a, v, _join(path, i), strict, tried) for i, (a, v) in enumerate(zip(args, value)))
    items = [_convert(args[0] if args else Any, v, _join(path, i), strict, tried) for i, v in enumerate(value)]
    if origin is tuple or tp is tuple:
        return tuple(items)
    try:
        if origin in (set, cabc.Set, cabc.MutableSet) or tp is set:
            return set(items)
        return frozenset(items) if origin is frozenset or tp is frozenset else items
    except TypeError as exc:  # unhashable items
        return _fail(path, f"items of a set must be hashable ({exc})")


def _int_key(key: str, path: str) -> int:
    """A `dict[int, T]` key as JSON carries it (a string of digits), read back as the int."""
    if re.fullmatch(INT_KEY, key) is None:
        return _fail(path, f"expected an integer key (no leading zero or -0), got {preview(repr(key), 60)}")
    try:
        return int(key)
    except ValueError:  # more digits than Python reads into an int (sys.get_int_max_str_digits(), 4300 by default)
        return _fail(path, f"expected an integer key, got one of {len(key)} digits: too long")


def _convert_object(cls, value: dict, path: str, strict: bool, tried: dict):
    fields = fields_of(cls)
    names = [f[0] for f in fields]
    unknown = [k for k in value if k not in names]
    if unknown and strict:
        _fail(path, f"unexpected field '{preview(unknown[0], 60)}' (allowed: {', '.join(names) or 'none'})")
    kwargs = {}
    for name, tp, required, default in fields:
        if name in value:
            if value[name] is None and not required and not admits_none(tp):
                continue  # null means "not given": the default applies
            kwargs[name] = _convert(field_type(tp, default), value[name], _join(path, name), strict, tried)
        elif required:
            _fail(path, f"missing required field '{name}'")
    if _is_typeddict(cls):
        return kwargs
    try:
        return cls(**kwargs)
    except ValueError as exc:  # a check in __post_init__ says what is wrong with the value: the model can fix it
        return _fail(path, f"invalid {cls.__name__}: {exc}")
    # Anything else (a TypeError from a bug in __post_init__, say) is the tool's failure, not the model's, as for a
    # pydantic model above: the failure policy redacts and logs it, where the model was told its text to fix.
