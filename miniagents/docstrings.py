"""A docstring -> a tool's description and its parameters' descriptions, read in Google style.

`schema.py` calls `parse_docstring` while it builds a function tool's schema. The description is the text before
the first section (`Args:`, `Returns:`, ...); a parameter's description is its entry under `Args:` (or another
parameter section). One style is enough for a tool's description: a docstring in another style (NumPy, Sphinx)
has no Google section, so it is sent whole as the description and the model still reads every word of it. Pure
text work: it never imports the rest of the kernel and never evaluates anything written in a docstring.
"""
import inspect
import re
from typing import Dict, List, Optional

_SECTION = re.compile(
    r"^(Args|Arguments|Params|Parameters|Keyword Args|Keyword Arguments|Other Parameters|Returns?|"
    r"Yields?|Raises|Examples?|Notes?|Attributes|Warnings?|See Also|Todo|References)\s*:\s*$")
_PARAMETERS = {"Args", "Arguments", "Params", "Parameters", "Keyword Args", "Keyword Arguments", "Other Parameters"}
# `name (type): description`. One run of spaces may stand at each place: two beside each other (around an optional
# type) would try every split of a long run between them, quadratic time for one docstring line.
_ENTRY = re.compile(r"(\**\w+)\s*(?:\((?:[^()]|\([^()]*\))*\)\s*)?:(.*)$")


def parse_docstring(doc: Optional[str], style: Optional[str] = None):
    """-> (the description before the first section or None, {parameter: description}, "google"). `style` is
    accepted for upstream's callers; `function_schema` refuses any style but Google."""
    lines = inspect.cleandoc(doc or "").splitlines()
    heads = [i for i, line in enumerate(lines) if _SECTION.match(line)] + [len(lines)]
    params: Dict[str, str] = {}
    for start, end in zip(heads, heads[1:]):
        if lines[start].strip().rstrip(":").strip() in _PARAMETERS:
            params.update(_entries(lines[start + 1:end]))
    return "\n".join(lines[:heads[0]]).strip() or None, params, "google"


def _entries(lines: List[str]) -> Dict[str, str]:
    """A section's entries: a line at the section's indentation starts one, deeper lines continue it."""
    out: Dict[str, List[str]] = {}
    base, current = None, []
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        base = indent if base is None else base
        entry = _ENTRY.match(line.strip()) if indent <= base else None
        if entry:
            current = out[entry.group(1).lstrip("*")] = [entry.group(2).strip()]
        elif indent > base:
            current.append(line.strip())
    return {name: "\n".join(text).strip() for name, text in out.items()}
