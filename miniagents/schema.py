"""Python signatures and type hints -> strict JSON Schema, and JSON arguments -> Python values.

Holds `function_schema` (a tool's parameter schema plus `to_call_args`), `type_schema` (output types),
`ensure_strict_json_schema` (upstream's strict pass), `validate_value` (decoded JSON -> annotated
Python types), `parse_arguments`, `parse_docstring` and `check_tool_name`. The tool layer calls it at
decoration time (programmer mistakes raise `UserError` there, never later) and at call time (model
mistakes raise `ArgumentsError`, whose message tells the model what to fix). Pure functions only: it
never imports pydantic (models are recognised by duck typing), never runs a tool, never does I/O.
"""
from __future__ import annotations

import collections.abc as cabc
import copy
import dataclasses
import enum
import functools
import inspect
import json
import re
import typing
from typing import Any, Dict, List, Optional, Union

from .context import RunContextWrapper, ToolContext
from .errors import ModelBehaviorError, UserError

_MISSING = inspect.Parameter.empty
_UnionType = getattr(__import__("types"), "UnionType", None)  # `X | Y`, Python 3.10+
_REQ_WRAPPERS = tuple(w for w in (getattr(typing, "Required", None), getattr(typing, "NotRequired", None)) if w)
_EMPTY_OBJECT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
_MAX_NODES, _MAX_DEPTH, _PREVIEW = 100_000, 100, 200


class ArgumentsError(ModelBehaviorError):
    """Arguments from the model that cannot be used; `.message` is model-readable: names the path and problem."""

    def __init__(self, message: str, *, path: str = "", problem: str = ""):
        super().__init__(message)
        self.path, self.problem = path, problem or message


def _fail(path: str, problem: str):
    raise ArgumentsError(f"parameter '{path}': {problem}" if path else problem, path=path, problem=problem)


def check_tool_name(name: str) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
        raise UserError(f"Invalid tool name {name!r}: a tool name must match ^[a-zA-Z0-9_-]{{1,64}}$ "
                        "(1-64 ASCII letters, digits, '_' or '-'); pass name_override=... to choose one")
    return name


def _preview(text: str, limit: int = _PREVIEW) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_arguments(raw: Optional[str], tool_name: str) -> dict:
    """The model's `arguments` string -> dict. Empty means no arguments; anything else must be a JSON object."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    prefix = f"Invalid JSON input for tool {tool_name}"
    if not isinstance(raw, str):
        raise ArgumentsError(f"{prefix}: expected a JSON string, got {type(raw).__name__}")

    def no_constant(name):  # Python's json accepts NaN/Infinity; JSON does not
        raise ValueError(f"{name} is not valid JSON")
    try:
        data = json.loads(raw, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"{prefix}: {exc.msg} at line {exc.lineno} column {exc.colno}. "
                             f"Send one JSON object. Received: {_preview(raw)}") from None
    except (ValueError, RecursionError) as exc:
        raise ArgumentsError(f"{prefix}: {exc or 'nested too deeply'}. Received: {_preview(raw)}") from None
    if not isinstance(data, dict):
        raise ArgumentsError(f"{prefix}: expected a JSON object of parameters, got {_describe(data)}. "
                             f"Received: {_preview(raw)}")
    return data


# ---------------------------------------------------------------------------------------------- docstrings

_SPHINX = [r"^\s*:param\s", r"^\s*:type\s", r"^\s*:returns?:", r"^\s*:rtype:"]
_NUMPY = [rf"^\s*{w}\s*\n\s*-{{3,}}" for w in ("Parameters", "Returns", "Yields")]
_GOOGLE = [r"^\s*(Args|Arguments):", r"^\s*Returns:", r"^\s*Raises:"]
_GOOGLE_HEADER = re.compile(
    r"^\s*(Args|Arguments|Params|Parameters|Keyword Args|Keyword Arguments|Other Parameters|Returns?|"
    r"Yields?|Raises|Examples?|Notes?|Attributes|Warnings?|See Also|Todo|References)\s*:\s*$")
_GOOGLE_PARAMS = {"Args", "Arguments", "Params", "Parameters", "Keyword Args", "Keyword Arguments",
                  "Other Parameters"}


def _detect_style(doc: str) -> str:
    scores = {style: sum(bool(re.search(p, doc, re.M)) for p in pats)
              for style, pats in (("sphinx", _SPHINX), ("numpy", _NUMPY), ("google", _GOOGLE))}
    best = max(scores.values())
    return "google" if best == 0 else next(s for s in ("sphinx", "numpy", "google") if scores[s] == best)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _entries(lines: List[str], head: str) -> Dict[str, str]:
    """Parameter entries: a line at the base indentation starts one (matched by `head`), deeper lines continue it."""
    out: Dict[str, List[str]] = {}
    base, current = None, []
    for line in lines:
        if not line.strip():
            continue
        if base is None:
            base = _indent(line)
        m = re.match(head, line.strip()) if _indent(line) <= base else None
        if m:
            current = [m.group("desc").strip()] if m.group("desc") else []
            for name in m.group("names").split(","):
                out[name.strip().lstrip("*")] = current
        elif _indent(line) > base:
            current.append(line.strip())
    return {name: "\n".join(desc).strip() for name, desc in out.items()}


def parse_docstring(doc: Optional[str], style: Optional[str] = None):
    """-> (description before the first section or None, {param: description}, style used)."""
    if not doc or not doc.strip():
        return None, {}, style or "google"
    lines = inspect.cleandoc(doc).splitlines()
    style = style or _detect_style("\n".join(lines))
    if style == "sphinx":
        starts = [i for i, ln in enumerate(lines) if re.match(r"\s*:\w+", ln)] + [len(lines)]
        desc_lines, params = lines[: starts[0]], {}
        for i, j in zip(starts, starts[1:]):
            m = re.match(r"\s*:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?(\**\w+)\s*:(.*)$",
                         lines[i])
            if m:
                more = [x.strip() for x in lines[i + 1: j]]
                params[m.group(1).lstrip("*")] = "\n".join([m.group(2).strip()] + more).strip()
    elif style == "numpy":
        heads = [i for i in range(len(lines) - 1)
                 if lines[i].strip() and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1])] + [len(lines)]
        desc_lines, params = lines[: heads[0]], {}
        for i, j in zip(heads, heads[1:]):
            if lines[i].strip() in ("Parameters", "Other Parameters"):
                params.update(_entries(lines[i + 2: j], r"(?P<names>[\w*, ]+?)\s*(?::.*)?(?P<desc>)$"))
    else:
        heads = [i for i, ln in enumerate(lines) if _GOOGLE_HEADER.match(ln)] + [len(lines)]
        desc_lines, params = lines[: heads[0]], {}
        for i, j in zip(heads, heads[1:]):
            if lines[i].strip().rstrip(":").strip() in _GOOGLE_PARAMS:
                params.update(_entries(lines[i + 1: j], r"(?P<names>\**\w+)\s*(?:\([^)]*\))?\s*:(?P<desc>.*)$"))
    description = "\n".join(desc_lines).strip()
    return description or None, params, style


# ---------------------------------------------------------------------------------------- type inspection

def _strip_annotated(tp):
    """-> (inner type, description from the first str metadata or a Field-like `.description`)."""
    desc = None
    while typing.get_origin(tp) is typing.Annotated:
        tp, *meta = typing.get_args(tp)
        for m in meta:
            d = m if isinstance(m, str) else getattr(m, "description", None)
            if desc is None and isinstance(d, str):
                desc = d
    return tp, desc


def _is_union(tp) -> bool:
    return typing.get_origin(tp) is Union or (_UnionType is not None and isinstance(tp, _UnionType))


def _admits_none(tp) -> bool:
    tp = _strip_annotated(tp)[0]
    if tp in (None, type(None), Any, object):
        return True
    if _is_union(tp) or typing.get_origin(tp) is typing.Literal:
        return any(a is None or a is type(None) or (_is_union(a) and _admits_none(a)) for a in typing.get_args(tp))
    return False


def _is_pydantic(tp) -> bool:
    return isinstance(tp, type) and callable(getattr(tp, "model_json_schema", None)) \
        and callable(getattr(tp, "model_validate", None))


def _is_typeddict(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _is_namedtuple(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _is_object_type(tp) -> bool:
    return (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or _is_typeddict(tp) \
        or _is_namedtuple(tp) or _is_pydantic(tp)


def _type_name(tp) -> str:
    tp = _strip_annotated(tp)[0]
    if tp is None or tp is type(None):
        return "None"
    if tp is Any or tp is Ellipsis:
        return "Any" if tp is Any else "..."
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if _is_union(tp):
        return " | ".join(map(_type_name, args))
    if origin is not None:
        base = getattr(origin, "__name__", str(origin))
        return f"{base}[{', '.join(map(_type_name, args))}]" if args else base
    return getattr(tp, "__name__", repr(tp))


@functools.lru_cache(maxsize=None)
def _fields(cls) -> tuple:
    """(name, type, required, default) per field of a dataclass / TypedDict / NamedTuple; default _MISSING if none."""
    hints = typing.get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            if f.init:
                has_factory = f.default_factory is not dataclasses.MISSING
                default = _MISSING if f.default is dataclasses.MISSING else f.default
                out.append((f.name, hints.get(f.name, Any), default is _MISSING and not has_factory, default))
        return tuple(out)
    if _is_namedtuple(cls):
        return tuple((n, hints.get(n, Any), n not in cls._field_defaults, cls._field_defaults.get(n, _MISSING))
                     for n in cls._fields)
    out = []
    for n, tp in hints.items():  # TypedDict
        while typing.get_origin(tp) in _REQ_WRAPPERS:
            tp = typing.get_args(tp)[0]
        out.append((n, tp, n in cls.__required_keys__, _MISSING))
    return tuple(out)


def _field_type(tp, default):
    """A default of None makes the type nullable, so the model can send null for "not given"."""
    return Optional[tp] if default is None and not _admits_none(tp) else tp


def _title(name: str) -> str:
    return name.title().replace("_", " ").strip()  # pydantic's rule: max_items -> Max Items


def _jsonable(value):
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON")


# ------------------------------------------------------------------------------------------ schema builder

class _Unsupported(Exception):
    def __init__(self, tp, reason: str, where: tuple = ()):
        super().__init__(reason)
        self.tp, self.reason, self.where = tp, reason, where


_SIMPLE = ((str, "string"), (bool, "boolean"), (int, "integer"), (float, "number"), (type(None), "null"))
_STRICT_MAP = "strict mode cannot express it — use a dataclass or TypedDict, or strict_mode=False"
_STRICT_ANY = "strict mode cannot express Any — give it a concrete type, or strict_mode=False"
_UNKNOWN = ("miniagents cannot express it as JSON Schema — use str, int, float, bool, list, tuple, set, "
            "Literal, an Enum, a dataclass, TypedDict, NamedTuple or a Pydantic model")


def _literal_type(values) -> dict:
    kinds = {"null" if v is None else "boolean" if isinstance(v, bool) else "integer" if isinstance(v, int)
             else "number" if isinstance(v, float) else "string" if isinstance(v, str) else "?" for v in values}
    return {"type": kinds.pop()} if len(kinds) == 1 and "?" not in kinds else {}


class _Builder:
    """Builds pydantic-shaped schemas; classes go to `defs` once and are referenced by `$ref`."""

    def __init__(self, strict: bool):
        self.strict, self.defs, self.names, self.where = strict, {}, {}, []

    def prop(self, name: str, tp, default=_MISSING, description=None) -> dict:
        schema = self.schema(tp)
        if not ("$ref" in schema or any("$ref" in b for b in schema.get("anyOf", ()))):
            schema["title"] = _title(name)
        description = description or _strip_annotated(tp)[1]
        if description:
            schema["description"] = description
        if default is not _MISSING:
            try:
                schema["default"] = _jsonable(default)
            except TypeError:
                pass  # not representable: the Python default still applies at call time
        return schema

    def schema(self, tp) -> dict:
        tp = _strip_annotated(tp)[0]
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any or tp is object or tp is inspect.Parameter.empty:
            if self.strict:
                raise _Unsupported(Any, _STRICT_ANY, tuple(self.where))
            return {}
        tp = type(None) if tp is None else tp
        simple = next((name for t, name in _SIMPLE if t is tp), None)
        if simple:
            return {"type": simple}
        if origin is typing.Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
            try:
                values = [_jsonable(a) for a in (args or [m.value for m in tp])]
            except TypeError as exc:
                raise _Unsupported(tp, f"its values must be JSON ({exc})", tuple(self.where)) from None
            if origin is not typing.Literal:
                return self._define(tp, lambda: {"enum": values, "title": tp.__name__, **_literal_type(values)})
            return {"const": values[0], **_literal_type(values)} if len(values) == 1 \
                else {"enum": values, **_literal_type(values)}
        if _is_union(tp):
            return {"anyOf": [self.schema(a) for a in args]}
        if tp in (list, tuple, set, frozenset, dict) or origin in (list, set, frozenset, cabc.Sequence,
                                                                     cabc.MutableSequence, cabc.Set,
                                                                     cabc.MutableSet, cabc.Iterable):
            return {"type": "array", "items": self.schema(args[0] if args else Any)} if tp is not dict \
                else self.schema(Dict[str, Any])
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.schema(args[0])}
            args = () if args == ((),) else args
            return {"type": "array", "prefixItems": [self.schema(a) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        if origin in (dict, cabc.Mapping, cabc.MutableMapping):
            if self.strict:
                raise _Unsupported(tp, _STRICT_MAP, tuple(self.where))
            if args and _strip_annotated(args[0])[0] is not str:
                raise _Unsupported(tp, "JSON object keys are strings — use dict[str, T]", tuple(self.where))
            return {"type": "object", "additionalProperties": self.schema(args[1] if args else Any)}
        if _is_pydantic(tp):
            return self._pydantic(tp)
        if _is_object_type(tp):
            return self._define(tp, lambda: self._object(tp))
        raise _Unsupported(tp, _UNKNOWN, tuple(self.where))

    def _define(self, cls, build) -> dict:
        if cls not in self.names:
            name, n = cls.__name__, 1
            while name in self.defs:
                n, name = n + 1, f"{cls.__name__}{n + 1}"
            self.names[cls], self.defs[name] = name, {}  # registered first: recursion finds the $ref
            self.defs[name] = build()
        return {"$ref": f"#/$defs/{self.names[cls]}"}

    def _object(self, cls) -> dict:
        props, required = {}, []
        try:
            fields = _fields(cls)
        except Exception as exc:  # e.g. a forward reference that does not resolve
            raise _Unsupported(cls, f"its type hints do not resolve ({type(exc).__name__}: {exc})",
                               tuple(self.where)) from None
        for name, tp, req, default in fields:
            self.where.append(f"{cls.__name__}.{name}")
            props[name] = self.prop(name, _field_type(tp, default), default)
            self.where.pop()
            if req:
                required.append(name)
        out = {"properties": props, "required": required, "title": cls.__name__, "type": "object"}
        doc = inspect.cleandoc(cls.__doc__ or "")
        if doc and not doc.startswith(f"{cls.__name__}(") and cls.__doc__ not in (dict.__doc__, tuple.__doc__):
            out["description"] = doc
        return out if required else {k: v for k, v in out.items() if k != "required"}

    def _pydantic(self, cls) -> dict:
        if cls in self.names:
            return {"$ref": f"#/$defs/{self.names[cls]}"}
        schema = copy.deepcopy(cls.model_json_schema())
        inner = {**schema.pop("definitions", {}), **schema.pop("$defs", {})}
        renames = {}
        for name, body in inner.items():  # hoist into our $defs; a clash with a different body gets a new name
            new, n = name, 1
            while new in self.defs and self.defs[new] != body:
                n, new = n + 1, f"{name}{n + 1}"
            renames[name] = new
        fix = functools.partial(_rewrite_refs, renames=renames)
        for name, body in inner.items():
            self.defs[renames[name]] = fix(body)
        schema = fix(schema)
        if set(schema) == {"$ref"}:  # recursive models: the root is a reference into $defs
            self.names[cls] = schema["$ref"].rsplit("/", 1)[-1]
            return schema
        if self.defs.get(cls.__name__) == schema:  # already hoisted from another model's $defs
            self.names[cls] = cls.__name__
            return {"$ref": f"#/$defs/{cls.__name__}"}
        return self._define(cls, lambda: schema)


def _rewrite_refs(node, renames):
    if isinstance(node, list):
        return [_rewrite_refs(v, renames) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_refs(v, renames) for k, v in node.items()}
    m = re.fullmatch(r"#/(?:\$defs|definitions)/(.+)", str(out.get("$ref", "")))
    if m and m.group(1) in renames:
        out["$ref"] = f"#/$defs/{renames[m.group(1)]}"
    return out


# -------------------------------------------------------------------------------------------- strict pass

def ensure_strict_json_schema(schema: dict) -> dict:
    """Upstream's strict pass, as a copy: closed objects, every property required, no root anyOf."""
    if not isinstance(schema, dict):
        raise UserError(f"A JSON schema must be a dict, got {type(schema).__name__}")
    if not schema:
        return copy.deepcopy(_EMPTY_OBJECT)
    if "anyOf" in schema or "oneOf" in schema:
        raise UserError("The root of a strict JSON schema must not use 'anyOf'; wrap it in an object property")
    typ = schema.get("type")
    if schema.get("nullable") is True or typ == "null" or (isinstance(typ, list) and "null" in typ):
        raise UserError("The root of a strict JSON schema must not use 'anyOf' or be nullable; "
                        "wrap it in an object property")
    return _strict(schema, schema, 0, [0], ())


def _strict(node, root, depth, count, inlining):
    count[0] += 1
    if count[0] > _MAX_NODES or depth > _MAX_DEPTH:
        raise UserError(f"JSON schema is too large for the strict pass (limits: {_MAX_NODES} nodes, "
                        f"depth {_MAX_DEPTH})")
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out = {}
    for key, value in node.items():
        if key in ("$defs", "definitions", "properties") and isinstance(value, dict):
            out[key] = {k: _strict(v, root, depth + 1, count, inlining) for k, v in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems", "items") and isinstance(value, list):
            out[key] = [_strict(v, root, depth + 1, count, inlining) for v in value]
        elif key == "items" and isinstance(value, dict):
            out[key] = _strict(value, root, depth + 1, count, inlining)
        else:
            out[key] = copy.deepcopy(value)
    if isinstance(out.get("allOf"), list) and len(out["allOf"]) == 1 and isinstance(out["allOf"][0], dict):
        out.update(out.pop("allOf")[0])  # before the object rules, so they see the merged keys
    if "oneOf" in out:
        out["anyOf"] = out.get("anyOf", []) + out.pop("oneOf")
    if "properties" in out and "type" not in out:
        out["type"] = "object"
    if out.get("type") == "object":
        if out.setdefault("additionalProperties", False) is not False:
            raise UserError("additionalProperties should not be set for object types. This could be because "
                            "you configured additional properties to be allowed (a dict/Mapping type or "
                            "extra='allow'). If you really need this, use a non-strict schema "
                            "(strict_mode=False).")
    if isinstance(out.get("properties"), dict):
        out["required"] = list(out["properties"])
    if "default" in out and out["default"] is None:
        del out["default"]
    if "$ref" in out and len(out) > 1:
        if out["$ref"] in inlining:  # a cycle: inlining again would never end; the bare $ref is valid
            return {"$ref": out["$ref"]}
        merged = {**_resolve_ref(root, out["$ref"]), **{k: v for k, v in out.items() if k != "$ref"}}
        return _strict(merged, root, depth + 1, count, inlining + (out["$ref"],))
    return out


def _resolve_ref(root: dict, ref) -> dict:
    node = root
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise UserError(f"Only local $ref values are supported in a strict schema, got {ref!r}")
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise UserError(f"Unresolvable $ref {ref!r} in JSON schema")
        node = node[part]
    if not isinstance(node, dict):
        raise UserError(f"$ref {ref!r} does not point to a schema")
    return node


# --------------------------------------------------------------------------------------------- validation

def _describe(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, (int, float)):
        return f"{'integer' if isinstance(value, int) else 'number'} {_preview(repr(value))[:40]}"
    if isinstance(value, str):
        return f"string {json.dumps(value if len(value) <= 40 else value[:39] + '…', ensure_ascii=False)}"
    if isinstance(value, list):
        return f"array of {len(value)} item{'s' * (len(value) != 1)}"
    return "object" if isinstance(value, dict) else type(value).__name__


def _expected(tp) -> str:
    tp = _strip_annotated(tp)[0]
    simple = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
    if tp in simple or tp is None:
        return simple.get(tp, "null")
    if _is_object_type(tp) or typing.get_origin(tp) in (dict, cabc.Mapping, cabc.MutableMapping):
        return f"object ({_type_name(tp)})" if _is_object_type(tp) else "object"
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(json.dumps(_jsonable(a)) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(json.dumps(_jsonable(m.value)) for m in tp)
    return "array" if typing.get_origin(tp) or tp in (list, tuple, set, frozenset) else _type_name(tp)


def _join(path: str, key) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def _same(a, b) -> bool:
    """JSON equality without Python's 1 == 1.0 == True."""
    return a == b and (type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                               and not isinstance(a, bool) and not isinstance(b, bool)))


def _convert(tp, value, path: str, strict: bool):
    tp = _strip_annotated(tp)[0]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    wrong = lambda: _fail(path, f"expected {_expected(tp)}, got {_describe(value)}")  # noqa: E731
    if tp is Any or tp is object or tp is inspect.Parameter.empty:
        return value
    if tp is None or tp is type(None):
        return None if value is None else wrong()
    if tp in (str, bool):
        return value if isinstance(value, tp) else wrong()
    if tp is int:  # JSON Schema "integer" includes 5.0; bool is not an integer here
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else wrong()
    if tp is float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else wrong()
    if _is_union(tp):
        if value is None and _admits_none(tp):
            return None
        arms = [a for a in args if a is not type(None)]
        if len(arms) == 1:
            return _convert(arms[0], value, path, strict)
        for arm in arms:
            try:
                return _convert(arm, value, path, strict)
            except ArgumentsError:
                pass
        return _fail(path, f"expected {' or '.join(map(_expected, args))}, got {_describe(value)}")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        args = tuple(tp)
    if origin is typing.Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        for choice in args:
            if _same(_jsonable(choice), value):
                return choice
        return wrong()
    if _is_pydantic(tp):
        try:
            return tp.model_validate(value)
        except Exception as exc:  # the validator's own message tells the model what is wrong
            return _fail(path, f"invalid {tp.__name__}: {exc}")
    if _is_object_type(tp):
        return _convert_object(tp, value, path, strict) if isinstance(value, dict) else wrong()
    if origin in (dict, cabc.Mapping, cabc.MutableMapping) or tp is dict:
        if not isinstance(value, dict):
            return wrong()
        return {k: _convert(args[1] if args else Any, v, _join(path, k), strict) for k, v in value.items()}
    if not isinstance(value, list):
        return wrong()
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        args = () if args == ((),) else args
        if len(value) != len(args):
            return _fail(path, f"expected an array of exactly {len(args)} items, got {_describe(value)}")
        return tuple(_convert(a, v, _join(path, i), strict) for i, (a, v) in enumerate(zip(args, value)))
    items = [_convert(args[0] if args else Any, v, _join(path, i), strict) for i, v in enumerate(value)]
    if origin is tuple or tp is tuple:
        return tuple(items)
    try:
        if origin in (set, cabc.Set, cabc.MutableSet) or tp is set:
            return set(items)
        return frozenset(items) if origin is frozenset or tp is frozenset else items
    except TypeError as exc:  # unhashable items
        return _fail(path, f"items of a set must be hashable ({exc})")


def _convert_object(cls, value: dict, path: str, strict: bool):
    fields = _fields(cls)
    names = [f[0] for f in fields]
    unknown = [k for k in value if k not in names]
    if unknown and strict:
        _fail(path, f"unexpected field '{_preview(unknown[0], 60)}' (allowed: {', '.join(names) or 'none'})")
    kwargs = {}
    for name, tp, required, default in fields:
        if name in value:
            if value[name] is None and not required and not _admits_none(tp):
                continue  # null means "not given": the default applies
            kwargs[name] = _convert(_field_type(tp, default), value[name], _join(path, name), strict)
        elif required:
            _fail(path, f"missing required field '{name}'")
    if _is_typeddict(cls):
        return kwargs
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # e.g. a __post_init__ check: the model can fix its input
        return _fail(path, f"invalid {cls.__name__}: {exc}")


def validate_value(tp, value, *, path: str = ""):
    """Check a decoded JSON value against `tp` and convert it (dataclasses built, enums, tuples, sets)."""
    return _convert_guarded(tp, value, path, True)


def _convert_guarded(tp, value, path, strict):
    try:
        return _convert(tp, value, path, strict)
    except RecursionError:
        return _fail(path, "the value is nested too deeply")


# ------------------------------------------------------------------------------------- function -> schema

def _context_kind(ann) -> Optional[str]:
    if isinstance(ann, str):
        m = re.fullmatch(r"\s*(?:[\w.]+\.)?(RunContextWrapper|ToolContext)\s*(?:\[.*\])?\s*", ann.strip("'\""), re.S)
        return None if not m else "tool_context" if m.group(1) == "ToolContext" else "run_context"
    base = _strip_annotated(ann)[0]
    base = typing.get_origin(base) or base
    if isinstance(base, type) and issubclass(base, RunContextWrapper):
        return "tool_context" if issubclass(base, ToolContext) else "run_context"
    return None


@dataclasses.dataclass(frozen=True)
class FuncSchema:
    """A function's tool schema and how to call it with the model's (validated) arguments."""

    name: str
    description: str
    params_json_schema: dict
    strict_json_schema: bool
    context_kind: Optional[str]
    _params: tuple = dataclasses.field(default=(), repr=False, compare=False)  # (name, kind, type, default)

    def to_call_args(self, data: dict):
        """Validate and convert the parsed arguments -> (positional args, kwargs), context excluded."""
        if not isinstance(data, dict):
            raise ArgumentsError(f"expected a JSON object of parameters, got {_describe(data)}")
        names = [p[0] for p in self._params]
        unknown = [k for k in data if k not in names]
        if unknown and self.strict_json_schema:
            _fail("", f"unexpected parameter '{_preview(unknown[0], 60)}' (parameters: {', '.join(names) or 'none'})")
        args, kwargs = [], {}
        for name, kind, tp, default in self._params:
            value = data.get(name, _MISSING)
            if value is None and default is not _MISSING and not _admits_none(tp):
                value = _MISSING  # null means "not given"
            if value is _MISSING and default is _MISSING:
                _fail("", f"missing required parameter '{name}'")
            value = default if value is _MISSING else _convert_guarded(tp, value, name, self.strict_json_schema)
            if kind == inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif kind == inspect.Parameter.VAR_KEYWORD:
                kwargs.update(value)
            elif kind == inspect.Parameter.KEYWORD_ONLY:
                kwargs[name] = value
            else:
                args.append(value)
        return args, kwargs


def _hints(func, sig, name: str) -> dict:
    target = func
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = getattr(target, "__call__", target)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # one bad annotation: resolve one by one, so the error names the parameter
        pass
    hints, globalns = {}, getattr(inspect.unwrap(target), "__globals__", {})
    for p in sig.parameters.values():
        if isinstance(p.annotation, str) and not _context_kind(p.annotation):
            try:
                hints[p.name] = typing.get_type_hints(_Stub(p.annotation), globalns, include_extras=True)["a"]
            except Exception as exc:
                raise UserError(f"tool '{name}': cannot resolve the annotation {p.annotation!r} of parameter "
                                f"'{p.name}' ({type(exc).__name__}: {exc})") from None
    return hints


class _Stub:
    def __init__(self, annotation: str):
        self.__annotations__ = {"a": annotation}


def _unsupported(prefix: str, top, exc: _Unsupported) -> UserError:
    inner = f" ({' / '.join(exc.where)} is {_type_name(exc.tp)})" if exc.where else ""
    return UserError(f"{prefix} is {_type_name(top)}{inner}; {exc.reason}")


def function_schema(func, *, name_override=None, description_override=None, docstring_style=None,
                    use_docstring_info=True, strict_json_schema=True) -> FuncSchema:
    """Read a function's signature, hints and docstring into a FuncSchema (UserError on what JSON can't say)."""
    name = name_override or getattr(func, "__name__", None) or type(func).__name__
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise UserError(f"tool '{name}': cannot read the signature of {func!r}: {exc}") from None
    hints = _hints(func, sig, name)
    doc, param_docs, _ = parse_docstring(inspect.getdoc(func), docstring_style) if use_docstring_info \
        else (None, {}, None)
    builder, props, required, params, context_kind = _Builder(strict_json_schema), {}, [], [], None
    for index, p in enumerate(sig.parameters.values()):
        ann = hints.get(p.name, p.annotation)
        kind = _context_kind(ann)
        if kind:
            if index != 0:
                raise UserError("RunContextWrapper/ToolContext param found at non-first position in function "
                                f"{getattr(func, '__name__', name)}")
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise UserError(f"tool '{name}': the context parameter '{p.name}' must be positional (it is "
                                "passed first, by position); remove the '*' before it")
            context_kind = kind
            continue
        ann = Any if ann is p.empty else ann
        default, tp = p.default, _field_type(ann, p.default)
        if p.kind == p.VAR_POSITIONAL:
            default, tp = [], List[ann]
        elif p.kind == p.VAR_KEYWORD:
            if strict_json_schema:
                raise UserError(f"tool '{name}': parameter '**{p.name}' takes arbitrary keywords; strict mode "
                                "cannot express them — name the parameters, or strict_mode=False")
            default, tp = {}, Dict[str, ann]
        try:
            props[p.name] = builder.prop(p.name, tp, default, param_docs.get(p.name))
        except _Unsupported as exc:
            raise _unsupported(f"tool '{name}': parameter '{p.name}'", ann, exc) from None
        if default is p.empty:
            required.append(p.name)
        params.append((p.name, p.kind, tp, default))
    schema = {"properties": props, "required": required, "title": f"{name}_args", "type": "object"}
    if not required:
        del schema["required"]
    if builder.defs:
        schema["$defs"] = builder.defs
    if strict_json_schema:
        try:
            schema = ensure_strict_json_schema(schema)
        except UserError as exc:
            raise UserError(f"tool '{name}': {exc.message}") from None
    return FuncSchema(name=name, description=description_override or doc or "", params_json_schema=schema,
                      strict_json_schema=strict_json_schema, context_kind=context_kind, _params=tuple(params))


def type_schema(tp, *, strict: bool = True):
    """Output type -> (schema, wrapped). Object types stand as the root; others become {"response": T}."""
    builder = _Builder(strict)
    try:
        inner = builder.schema(tp)
    except _Unsupported as exc:
        raise _unsupported("output type", tp, exc) from None
    base = _strip_annotated(tp)[0]
    if _is_object_type(base) and "$ref" in inner:
        name = inner["$ref"].rsplit("/", 1)[-1]
        root = dict(builder.defs[name])
        if f'"#/$defs/{name}"' not in json.dumps(builder.defs):  # not recursive: no need to keep it
            del builder.defs[name]
        wrapped = False
    else:
        root = {"type": "object", "properties": {"response": inner}, "required": ["response"],
                "additionalProperties": False}
        wrapped = True
    if builder.defs:
        root["$defs"] = builder.defs
    return (ensure_strict_json_schema(root) if strict else root), wrapped
