"""Python signatures and type hints -> strict JSON Schema: the definition-time half of the tool layer.

Holds `function_schema` (a function's parameters -> `FuncSchema`: schema, description, `to_call_args`),
`type_schema` (an output type -> schema), the strict pass (`ensure_strict_json_schema`; `wire_schema`, its form
for a request), and the tool name rules and spec (`check_tool_name`, `tool_name_from`, `tool_spec`). Tools,
agents and handoffs call it when they are defined: what JSON Schema cannot say is a programmer mistake and raises
`UserError` here, never later. Checking the model's values against the types is `validate.py`. Pure functions
only: it never imports pydantic (models are recognised by duck typing), never runs a tool, never does I/O.
"""
from __future__ import annotations

import collections.abc as cabc
import copy
import dataclasses
import functools
import inspect
import itertools
import json
import re
import typing
from typing import Any, Dict, List, Optional

from .context import RunContextWrapper, ToolContext
from .docstrings import parse_docstring
from .errors import UserError
from .items import described, preview
from .validate import (INT_KEY, JSON_TYPES, KEYWORDS, MISSING, ArgumentsError, call_args, field_type, fields_of,
                       is_enum, is_object_type, is_pydantic, is_union, jsonable, param, strip_annotated, type_name)

_EMPTY_OBJECT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
_MAX_NODES, _MAX_DEPTH = 100_000, 100


def tool_name_from(name: str) -> str:
    """An agent's name as a tool name: every character outside [a-zA-Z0-9_] becomes "_", lower-cased
    (handoffs prefix it with `transfer_to_`; agents-as-tools use it as is)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name).lower()


def tool_spec(name: str, description: str, parameters: dict, strict: bool) -> dict:
    """What the kernel sends a model for one callable function (function tools and handoffs alike)."""
    return {"type": "function", "name": name, "description": description, "parameters": parameters,
            "strict": strict}


class SpecReads:
    """Lets an object the kernel hands a model (a tool, a handoff, an output schema) also be read like its
    plain-data `spec()` (`tool["name"]`, `handoff.get("parameters")`), as models written against miniagents'
    earlier boundary, which passed the specs themselves, read them."""

    def spec(self) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.spec()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return (self.spec() or {}).get(key, default)


def check_tool_name(name: str) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
        raise UserError(f"Invalid tool name {described(name)}: a tool name must match ^[a-zA-Z0-9_-]{{1,64}}$ "
                        "(1-64 ASCII letters, digits, '_' or '-'); pass name_override=... to choose one")
    return name


# ------------------------------------------------------------------------------------------ schema builder

_STRICT_MAP = "strict mode cannot express it — use a dataclass or TypedDict, or strict_mode=False"
_STRICT_ANY = "strict mode cannot express Any — give it a concrete type, or strict_mode=False"
_STRICT_TUPLE = ("strict mode cannot say which item type stands where (strict endpoints take no prefixItems) — use a "
                 "NamedTuple or dataclass, tuple[T, ...], or strict_mode=False")
_UNKNOWN = ("miniagents cannot express it as JSON Schema — use str, int, float, bool, list, tuple, set, "
            "Literal, an Enum, a dataclass, TypedDict, NamedTuple or a Pydantic model")


def schema_value(data: Any) -> Any:
    """`data` when JSON can write it: a ValueError for a number it cannot (inf, nan), which Python's json would
    send as a bare `Infinity` no server parses."""
    json.dumps(data, allow_nan=False)
    return data


def _unhashable(tp) -> bool:
    """Whether values of `tp` can never be set items (a list, a dict, a dataclass that is not frozen...)."""
    tp = strip_annotated(tp)[0]
    if is_union(tp):
        return any(map(_unhashable, typing.get_args(tp)))
    cls = typing.get_origin(tp) or tp
    return isinstance(cls, type) and cls.__hash__ is None


def _literal_type(values) -> dict:
    kinds = {next((name for t, name in JSON_TYPES.items() if isinstance(v, t)), "?") for v in values}
    return {"type": kinds.pop()} if len(kinds) == 1 and "?" not in kinds else {}


def _title(name: str) -> str:
    return name.title().replace("_", " ").strip()  # pydantic's rule: max_items -> Max Items


class _Builder:
    """Builds pydantic-shaped schemas; classes go to `defs` once and are referenced by `$ref`. What JSON Schema
    cannot say is refused naming `subject` (a parameter, an output type), its type `top`, and the path of fields
    (`where`) down to the type at fault."""

    def __init__(self, strict: bool, subject: str = "", top: Any = None):
        self.strict, self.defs, self.names, self.where = strict, {}, {}, []
        self.subject, self.top = subject, top

    def refused(self, tp, reason: str) -> UserError:
        inner = f" ({' / '.join(self.where)} is {type_name(tp)})" if self.where else ""
        return UserError(f"{self.subject} is {type_name(self.top)}{inner}; {reason}")

    def guarded(self, build, *args) -> dict:
        """`build(*args)`, with a type nested deeper than Python recurses (a chain of dataclasses) refused."""
        try:
            return build(*args)
        except RecursionError:
            raise UserError(f"{self.subject} is {type_name(self.top)}, nested too deeply for a schema (deeper than "
                            "Python's recursion limit): flatten it") from None

    def prop(self, name: str, tp, default=MISSING, description=None) -> dict:
        schema = self.schema(tp)
        if not ("$ref" in schema or any("$ref" in b for b in schema.get("anyOf", ()))):
            schema["title"] = _title(name)
        description = description or strip_annotated(tp)[1]
        if description:
            schema["description"] = description
        if default is not MISSING:
            try:
                schema["default"] = schema_value(jsonable(default))
            except (TypeError, ValueError, RecursionError):  # (a list that holds itself, one nested too deeply)
                pass  # not representable: the Python default still applies at call time
        return schema

    def schema(self, tp) -> dict:
        tp = strip_annotated(tp)[0]
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any or tp is object or tp is inspect.Parameter.empty:
            if self.strict:
                raise self.refused(Any, _STRICT_ANY)
            return {}
        tp = type(None) if tp is None else tp
        simple = next((name for t, name in JSON_TYPES.items() if t is tp), None)
        if simple:
            return {"type": simple}
        if origin is typing.Literal or is_enum(tp):
            try:
                values = schema_value([jsonable(a) for a in (args or [m.value for m in tp])])
            except (TypeError, ValueError) as exc:
                raise self.refused(tp, f"its values must be JSON ({exc})") from None
            if not values:
                raise self.refused(tp, "it has no members, so no value could be sent")
            if origin is not typing.Literal:
                return self._define(tp, lambda: {"enum": values, "title": tp.__name__, **_literal_type(values)})
            return {"const": values[0], **_literal_type(values)} if len(values) == 1 \
                else {"enum": values, **_literal_type(values)}
        if is_union(tp):
            return {"anyOf": [self.schema(a) for a in args]}
        if (tp in (set, frozenset) or origin in (set, frozenset, cabc.Set, cabc.MutableSet)) and args \
                and _unhashable(args[0]):
            raise self.refused(tp, "the items of a set must be hashable: use a list, or a frozen dataclass")
        # (a bare `typing.Tuple` is any tuple, as `tuple` is: its origin and no args would read as `Tuple[()]`)
        if tp in (list, tuple, typing.Tuple, set, frozenset, dict) or origin in (
                list, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Set, cabc.MutableSet, cabc.Iterable):
            return {"type": "array", "items": self.schema(args[0] if args else Any)} if tp is not dict \
                else self.schema(Dict[str, Any])
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.schema(args[0])}
            args = () if args == ((),) else args
            items = [self.schema(a) for a in args]
            if self.strict and any(item != items[0] for item in items):  # sent as items: anyOf, in any order
                raise self.refused(tp, _STRICT_TUPLE)
            return {"type": "array", "prefixItems": items, "minItems": len(args), "maxItems": len(args)}
        if origin in (dict, cabc.Mapping, cabc.MutableMapping):
            if self.strict:
                raise self.refused(tp, _STRICT_MAP)
            key = strip_annotated(args[0])[0] if args else str
            if key not in (str, int):
                raise self.refused(tp, "JSON object keys are strings — use dict[str, T] or dict[int, T]")
            schema = {"type": "object", "additionalProperties": self.schema(args[1] if args else Any)}
            if key is int:  # the keys arrive as JSON strings of digits and are read back as ints
                schema["propertyNames"] = {"pattern": INT_KEY}
            return schema
        if is_pydantic(tp):
            return self._pydantic(tp)
        if is_object_type(tp):
            return self._define(tp, lambda: self._object(tp))
        raise self.refused(tp, _UNKNOWN)

    def _define(self, cls, build) -> dict:
        if cls not in self.names:  # named as pydantic names them: a JSON Pointer token JSON writes as it is
            name = _free(re.sub(r"[^A-Za-z0-9_.-]", "_", cls.__name__), self.defs)  # (make_dataclass takes "a/b")
            self.names[cls], self.defs[name] = name, {}  # registered first: recursion finds the $ref
            self.defs[name] = build()
        return {"$ref": f"#/$defs/{self.names[cls]}"}

    def _object(self, cls) -> dict:
        props, required = {}, []
        try:
            fields = fields_of(cls)
        except Exception as exc:  # e.g. a forward reference that does not resolve
            raise self.refused(cls, f"its type hints do not resolve ({type(exc).__name__}: {exc})") from None
        if dataclasses.is_dataclass(cls):
            self._built_by_fields(cls, [f[0] for f in fields])
        for name, tp, req, default in fields:
            self.where.append(f"{cls.__name__}.{name}")
            props[name] = self.prop(name, field_type(tp, default), default)
            self.where.pop()
            if req:
                required.append(name)
        out = {"properties": props, "required": required, "title": cls.__name__, "type": "object"}
        doc = inspect.cleandoc(cls.__doc__ or "")
        if doc and not doc.startswith(f"{cls.__name__}(") and cls.__doc__ not in (dict.__doc__, tuple.__doc__):
            out["description"] = doc
        return out if required else {k: v for k, v in out.items() if k != "required"}

    def _built_by_fields(self, cls, names: list) -> None:
        """A dataclass is built as `cls(**fields)`: its `__init__` must need nothing but fields (an InitVar has no
        field in the schema) and take every one (its own `__init__`, with init=False, may not): else no value the
        schema allows could ever build it."""
        try:
            params = inspect.signature(cls).parameters.values()
        except (TypeError, ValueError):  # a built-in base's (init=False under Exception, dict): no fields by name
            raise self.refused(cls, "its __init__ is its built-in base's, which sets no field (Exception's takes no "
                                    "keywords, dict's makes them items): let dataclass write it (init=True)") from None
        unsent = [p.name for p in params if p.default is p.empty and p.name not in names
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if unsent:
            raise self.refused(cls, f"its __init__ needs {unsent[0]!r}, which is not a field (an InitVar?): "
                                    "give it a default, or make it a field")
        untaken = [n for n in names if n not in {p.name for p in params if p.kind in KEYWORDS}]
        if untaken and all(p.kind != p.VAR_KEYWORD for p in params):
            raise self.refused(cls, f"its __init__ takes no {', '.join(map(repr, untaken))} by name, though its "
                                    "schema asks for every field: take them, or make them field(init=False)")

    def _pydantic(self, cls) -> dict:
        """A pydantic model's own schema, its `$defs` moved into ours. Pydantic names a nested model by its class
        name, as `_define` names a class: where one of its names holds another schema here, each of its names here
        is changed for a free one (a name whose schema is the same may refer to one that changed)."""
        if cls in self.names:
            return {"$ref": f"#/$defs/{self.names[cls]}"}
        schema = copy.deepcopy(cls.model_json_schema())
        defs = schema.pop("$defs", {})
        if any(self.defs.get(name, body) != body for name, body in defs.items()):
            names: dict = {}
            for name in (name for name in defs if name in self.defs):
                names[name] = _free(name, set(self.defs) | set(defs) | set(names.values()))
            refs = {f"#/$defs/{old}": f"#/$defs/{new}" for old, new in names.items()}
            schema, defs = _renamed(schema, refs), {names.get(n, n): _renamed(b, refs) for n, b in defs.items()}
        self.defs.update(defs)
        if set(schema) == {"$ref"}:  # recursive models: the root is a reference into $defs
            self.names[cls] = schema["$ref"].rsplit("/", 1)[-1]
            return schema
        hoisted = next((name for name, body in self.defs.items() if body == schema), None)
        if hoisted:  # from another model's $defs
            self.names[cls] = hoisted
            return {"$ref": f"#/$defs/{hoisted}"}
        return self._define(cls, lambda: schema)


def _free(base: str, taken) -> str:
    """`base`, or the first of base2, base3... not in `taken`."""
    return next(name for name in itertools.chain([base], map(f"{base}{{}}".format, itertools.count(2)))
                if name not in taken)


def _renamed(node: Any, refs: dict) -> Any:
    """A copy of a pydantic schema with each reference into `$defs` in `refs` changed: a `$ref`'s, a discriminator
    mapping's (a text that is exactly one, as a default, changes too)."""
    if isinstance(node, dict):
        return {key: _renamed(value, refs) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(value, refs) for value in node]
    return refs.get(node, node) if isinstance(node, str) else node


# -------------------------------------------------------------------------------------------- strict pass

def ensure_strict_json_schema(schema: dict, wire: bool = False) -> dict:
    """A copy of `schema` as strict endpoints take it: every object closed and all its properties required, a
    $ref beside other keywords and a one-entry allOf inlined, oneOf read as anyOf, null defaults dropped. What
    strict mode cannot say (an open object, a root union, a $ref cycle with no schema in it) or strict endpoints
    refuse (a root that is no object, an object without properties, an array without items, a schema without a
    type) is a UserError here, where the tool or output type is defined, rather than a rejected request later (or an
    open object silently closed). `wire`: see `wire_schema`."""
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
    if not isinstance(schema.get("$defs") or {}, dict):  # (the loop over its names below would be a bare error)
        raise UserError(f"A JSON schema's $defs must be an object of schemas, got {type(schema['$defs']).__name__}")
    try:
        strict = _strict(schema, schema, 0, [0], (), wire)
    except RecursionError:  # a value in it (an `examples`, a `default`) nested deeper than Python copies
        raise UserError("JSON schema holds a value nested too deeply for the strict pass (an `examples` or a "
                        "`default`?); flatten it") from None
    for name in strict.get("$defs") or {}:
        _no_bare_ref_cycle(strict, "#/$defs/" + name.replace("~", "~0").replace("/", "~1"))
    if strict.get("type") != "object":
        raise _unfit(strict, "a root that is not an object")
    return strict


def _no_bare_ref_cycle(root: dict, ref: str) -> None:
    """A definition that is only a `$ref` back to itself (through others) describes no value: refuse it."""
    seen = []
    while isinstance(ref, str) and ref not in seen:
        seen.append(ref)
        node = _resolve_ref(root, ref)
        ref = node.get("$ref") if set(node) == {"$ref"} else None
    if ref is not None:
        raise UserError(f"JSON schema is too large for the strict pass: {' -> '.join(seen + [ref])} is a $ref "
                        "cycle with no schema in it; simplify or flatten the schema")


def _strict(node, root, depth, count, inlining, wire):
    """One node of the strict pass, its children first; `inlining` is the $refs being inlined above it."""
    count[0] += 1
    if depth > _MAX_DEPTH:
        raise UserError(f"JSON schema is too deeply nested for the strict pass (limit: depth {_MAX_DEPTH})")
    if count[0] > _MAX_NODES:
        raise UserError(f"JSON schema is too large for the strict pass (limit: {_MAX_NODES} nodes)")
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out = {}
    for key, value in node.items():
        if wire and (key in _WIRE_REJECTS or (key == "items" and value is False)):
            continue
        if key in ("$defs", "definitions", "properties") and isinstance(value, dict):
            out[key] = {k: _strict(v, root, depth + 1, count, inlining, wire) for k, v in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems", "items") and isinstance(value, list):
            out[key] = [_strict(v, root, depth + 1, count, inlining, wire) for v in value]
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):  # (a hand-written schema's mistake)
            raise UserError(f"'{key}' in a JSON schema must be a list of schemas, got {type(value).__name__}")
        elif key == "items" and isinstance(value, dict):
            out[key] = _strict(value, root, depth + 1, count, inlining, wire)
        else:
            out[key] = copy.deepcopy(value)
    if wire:
        _wire(node, out, lambda sub: _strict(sub, root, depth + 1, count, inlining, wire))
    out = _flat_combinators(out)  # before the object rules, so they see the merged keys
    if "type" not in out and ("properties" in out or "additionalProperties" in out):
        out["type"] = "object"
    kind = out.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        if out.setdefault("additionalProperties", False) is not False:
            raise UserError("additionalProperties should not be set for object types (a dict or Mapping type, "
                            "or extra='allow'): strict mode cannot express it; use strict_mode=False")
    if isinstance(out.get("properties"), dict):
        out["required"] = list(out["properties"])
    if "default" in out and out["default"] is None:
        del out["default"]
    if "$ref" in out and len(out) > 1:
        if out["$ref"] in inlining:  # a cycle: inlining again would never end; the bare $ref is valid
            return {k: v for k, v in out.items() if k in ("$ref", "$defs")}  # (the root keeps its $defs)
        rest = {k: v for k, v in out.items() if k != "$ref"}
        merged = _merged(rest, _resolve_ref(root, out["$ref"]), f"$ref {out['$ref']!r}")
        return _strict(merged, root, depth + 1, count, inlining + (out["$ref"],), wire)
    if "$ref" in out:  # a lone one is sent as it is: what it names must be here, not missing at the server
        _resolve_ref(root, out["$ref"])
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds and not isinstance(out.get("properties"), dict):
        raise _unfit(out, "an object without properties (closed, as strict mode closes every object, it takes only {})")
    if "array" in kinds and not (isinstance(out.get("items"), dict) or out.get("prefixItems")):
        raise _unfit(out, "an array without items")
    if kind is None and not {"anyOf", "$ref", "enum", "const"} & out.keys():
        raise _unfit(out, "a schema without a type")
    return out


def _unfit(node: dict, what: str) -> UserError:
    return UserError(f"{what} in a strict JSON schema: {preview(node, 120)}; strict endpoints refuse it: say what it "
                     "holds, or use strict_mode=False")


# Keywords that describe a schema without constraining its values: where two merged schemas both set one, the
# node's own wins (a field's description over its class's).
_ANNOTATIONS = frozenset(("description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly",
                          "$comment", "$schema", "$id", "$anchor", "contentMediaType", "contentEncoding"))


def _merged(node: dict, other: dict, what: str) -> dict:
    """`node` and the schema `other` (its $ref's target, its one-entry allOf) as one: refused where both set a
    keyword differently, since strict mode would have to drop one of them silently."""
    clashes = sorted(k for k in set(node) & set(other) - _ANNOTATIONS if node[k] != other[k])
    if clashes:
        raise UserError(f"{what} and the schema beside it both set {clashes} differently; strict mode would have "
                        "to drop one of them: merge them by hand")
    return {**other, **node}


def _flat_combinators(node: dict) -> dict:
    """Strict mode's combinator rules: a one-entry `allOf` is merged into its node; `oneOf` becomes `anyOf`."""
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1 and isinstance(node["allOf"][0], dict):
        node = _merged({k: v for k, v in node.items() if k != "allOf"}, node["allOf"][0], "a one-entry `allOf`")
    if "oneOf" in node:
        node = {**{k: v for k, v in node.items() if k != "oneOf"}, "anyOf": node.get("anyOf", []) + node["oneOf"]}
    return node


# Keywords strict endpoints reject in a request, though they are valid JSON Schema (and useful at definition).
_WIRE_REJECTS = frozenset((
    "default", "prefixItems", "minLength", "maxLength", "patternProperties", "propertyNames",
    "unevaluatedProperties", "minProperties", "maxProperties", "uniqueItems", "contains", "minContains",
    "maxContains", "unevaluatedItems", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "$id"))


def wire_schema(schema: Optional[dict], strict: bool) -> dict:
    """The copy of a schema a model adapter sends. For strict, the strict pass without what strict endpoints
    reject: a dropped `default` is mentioned in the description, `prefixItems` (tuples) becomes `items` (a
    hand-written schema's mixed item types become `items: anyOf`, in any order: strict mode refuses a type's
    tuple of mixed item types where it is defined). An empty schema is the strict empty object. The caller's
    schema is not modified."""
    if not schema:
        return copy.deepcopy(_EMPTY_OBJECT)
    return ensure_strict_json_schema(schema, wire=True) if strict else schema


def _wire(node: dict, out: dict, strict) -> None:
    """The wire mode's additions to `out`, the strict pass of `node` (`strict` makes that of a sub-schema)."""
    if isinstance(node.get("prefixItems"), list) and "items" not in out:
        branches: list = []
        for sub in map(strict, node["prefixItems"]):
            if sub not in branches:
                branches.append(sub)
        if branches:
            out["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if node.get("default") is not None:
        note = "Default: " + json.dumps(node["default"], ensure_ascii=False) + "."
        out["description"] = (str(out["description"]).rstrip() + " " + note) if out.get("description") else note


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


# ------------------------------------------------------------------------------------- function -> schema

def _context_kind(ann) -> Optional[str]:
    if isinstance(ann, str):
        m = re.fullmatch(r"\s*(?:[\w.]+\.)?(RunContextWrapper|ToolContext)\s*(?:\[.*\])?\s*", ann.strip("'\""), re.S)
        return None if not m else "tool_context" if m.group(1) == "ToolContext" else "run_context"
    base = strip_annotated(ann)[0]
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
    _params: tuple = dataclasses.field(default=(), repr=False, compare=False)  # validate.Param per parameter

    def to_call_args(self, data: dict):
        """Validate and convert the parsed arguments -> (positional args, kwargs), context excluded."""
        if not isinstance(data, dict):
            raise ArgumentsError(f"expected a JSON object of parameters, got {type(data).__name__}")
        return call_args(self._params, data, self.strict_json_schema)


def _hints(target, sig, name: str, bound: frozenset) -> dict:
    """Each parameter's annotation resolved in the module of the function `target` wraps or is (a string one under
    `from __future__ import annotations` too), one at a time so that an error names the parameter. A context
    parameter's, and a keyword a partial binds (left out), are left as written: their classes may be imported only
    under TYPE_CHECKING."""
    target = inspect.unwrap(target)
    globalns = getattr(target, "__globals__", None) or getattr(getattr(target, "__call__", None), "__globals__", {})
    hints = {}
    for p in sig.parameters.values():
        if p.annotation is not p.empty and not _context_kind(p.annotation) and p.name not in bound:
            try:
                hints[p.name] = typing.get_type_hints(_Stub(p.annotation), globalns, include_extras=True)["a"]
            except Exception as exc:
                raise UserError(f"tool '{name}': cannot resolve the annotation {p.annotation!r} of parameter "
                                f"'{p.name}' ({type(exc).__name__}: {exc})") from None
    return hints


class _Stub:
    def __init__(self, annotation):
        self.__annotations__ = {"a": annotation}


def _unbound(func: Any) -> tuple:
    """(the function a `functools.partial`, nested ones too, calls, else `func`; the keywords they bind), through
    decorators (`functools.wraps`: the upstream shell's `function_tool`), which `inspect.signature` follows too. A
    bound keyword is the developer's value (an API key, say): it is left out of the schema, where the model would read
    it as a default and could send another. Followed `_MAX_DEPTH` steps: a longer chain is refused (it may be a
    loop), as a keyword bound past the last step would be sent."""
    target, keywords = func, frozenset()
    for _ in range(_MAX_DEPTH):
        if isinstance(func, functools.partial):
            func, keywords = func.func, keywords | frozenset(func.keywords)
            target = func
        elif hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        else:
            return target, keywords
    raise UserError(f"cannot read the signature of a {type(target).__name__}: functools.partial or functools.wraps "
                    f"nest it more than {_MAX_DEPTH} deep, or in a loop")


def _filled_first(func: Any) -> frozenset:
    """The parameters a call of `func` fills before the model's arguments, which its signature hides: a method's
    instance or class (bound, or a callable object's `__call__`), the arguments a `functools.partial` gives by
    position or keyword. A `**kwargs` key with such a name would clash with it in the call."""
    if isinstance(func, functools.partial):
        return frozenset(list(inspect.signature(func.func).parameters)[:len(func.args)]) | frozenset(
            func.keywords) | _filled_first(func.func)
    method = func if inspect.ismethod(func) else getattr(func, "__call__", None)
    first = next(iter(inspect.signature(method.__func__).parameters.values()), None) if inspect.ismethod(method) \
        else None
    return frozenset({first.name}) if first is not None and first.kind in KEYWORDS else frozenset()


def function_schema(func, *, name_override=None, description_override=None, docstring_style=None,
                    use_docstring_info=True, strict_json_schema=True) -> FuncSchema:
    """Read a function's signature, hints and docstring into a FuncSchema (UserError on what JSON can't say)."""
    target, bound = _unbound(func)
    if name_override is not None and not isinstance(name_override, str):  # (each message below names the tool)
        raise UserError(f"name_override must be a string, got {type(name_override).__name__}")
    name = name_override or getattr(target, "__name__", None) or type(target).__name__
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise UserError(f"tool '{name}': cannot read the signature of {target!r}: {exc}") from None
    if docstring_style not in (None, "google"):
        raise UserError(f"tool '{name}': docstring_style={described(docstring_style)}: miniagents reads Google-style "
                        "docstrings only (a docstring in another style is sent whole as the description)")
    hints = _hints(target, sig, name, bound)
    doc, param_docs, _ = parse_docstring(inspect.getdoc(target)) if use_docstring_info else (None, {}, None)
    builder, props, required, params, context_kind = _Builder(strict_json_schema), {}, [], [], None
    for index, p in enumerate(sig.parameters.values()):
        if p.kind == p.KEYWORD_ONLY and p.name in bound:
            continue
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
        default, tp = p.default, field_type(ann, p.default)
        if p.kind == p.VAR_POSITIONAL:
            default, tp = [], List[ann]
        elif p.kind == p.VAR_KEYWORD:
            if strict_json_schema:
                raise UserError(f"tool '{name}': parameter '**{p.name}' takes arbitrary keywords; strict mode "
                                "cannot express them — name the parameters, or strict_mode=False")
            default, tp = {}, Dict[str, ann]
        builder.subject, builder.top = f"tool '{name}': parameter '{p.name}'", ann
        props[p.name] = builder.guarded(builder.prop, p.name, tp, default, param_docs.get(p.name))
        if default is p.empty:
            required.append(p.name)
        taken = frozenset(q.name for q in sig.parameters.values() if q.kind in KEYWORDS) | _filled_first(func) \
            if p.kind == p.VAR_KEYWORD else frozenset()
        params.append(param(p.name, p.kind, tp, default, strict_json_schema, taken))
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


def type_schema(tp, *, strict: bool = True, output_rule: bool = False):
    """Type -> (schema, wrapped). An object type (dataclass, TypedDict, NamedTuple, pydantic model) stands as the
    root; any other becomes {"response": T}. `output_rule`: upstream's rule for an agent's output type instead,
    where pydantic models and dict types (TypedDicts, `dict[str, T]`) stand and dataclasses are wrapped."""
    builder = _Builder(strict, "output type", tp)
    inner = builder.guarded(builder.schema, tp)
    base = strip_annotated(tp)[0]
    cls = typing.get_origin(base) or base
    if output_rule:
        stands = is_pydantic(cls) or (isinstance(cls, type) and issubclass(cls, dict))
    else:
        stands = is_object_type(base)
    if not stands:
        root = {"type": "object", "properties": {"response": inner}, "required": ["response"],
                "additionalProperties": False}
    elif "$ref" in inner:
        name = inner["$ref"].rsplit("/", 1)[-1]
        root = dict(builder.defs[name])
        if f'"#/$defs/{name}"' not in json.dumps(builder.defs):  # not recursive: no need to keep it
            del builder.defs[name]
    else:  # a dict type: its object schema is the root
        root = dict(inner)
    if builder.defs:
        root["$defs"] = builder.defs
    return (ensure_strict_json_schema(root) if strict else root), not stands
