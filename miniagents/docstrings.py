"""Docstrings -> a tool's description and its parameters' descriptions.

Holds `parse_docstring`, which reads the Google, Sphinx and NumPy styles (detected when not named).
`schema.py` calls it at definition time, while it builds a function tool's schema. Pure text work: it never
imports the rest of the kernel and never evaluates anything written in a docstring.
"""
import inspect
import re
from typing import Dict, List, Optional

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
