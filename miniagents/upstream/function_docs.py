"""Upstream's `agents.function_schema.generate_func_documentation`: a function's name, description and
parameter descriptions, read from its docstring by miniagents' own parser (`docstrings.parse_docstring`,
Google, Sphinx and NumPy styles) instead of griffe."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from ..docstrings import parse_docstring
from ..schema import ensure_strict_json_schema, function_schema  # noqa: F401 - upstream's paths read them here


@dataclass
class FuncDocumentation:
    """What a docstring says of a function (upstream's fields)."""

    name: str
    description: Optional[str]
    param_descriptions: Optional[Dict[str, str]]


def generate_func_documentation(func: Callable[..., Any], style: Optional[str] = None) -> FuncDocumentation:
    """`func`'s name, and what its docstring says (both None without one); `style` is detected when None."""
    doc = inspect.getdoc(func)
    if not doc:
        return FuncDocumentation(name=func.__name__, description=None, param_descriptions=None)
    description, params, _ = parse_docstring(doc, style)
    return FuncDocumentation(name=func.__name__, description=description, param_descriptions=params or None)
