"""Mutants nobody hand-picked: small edits generated from the AST of every module under `miniagents/`.

Used by `python tests/mutation_check.py --generated`; standard library only, never imported by the package.

What is mutated (each mutant is one edit, applied to a private copy of the repository, never the work tree):
- compare    a comparison operator flipped (`==`/`!=`, `<`/`>=`, `>`/`<=`, `in`/`not in`, `is`/`is not`)
- boundary   an ordering comparison moved by one (`<`/`<=`, `>`/`>=`)
- boolop     `and`/`or` swapped
- constant   a number `n` -> `n + 1`, `True`/`False` swapped, a non-empty string -> `""`, `""` -> `"mutated"`
- return     `return <expression>` -> `return None` (a returned constant is the `constant` mutation's job)
- negate     the condition of an `if`, `while`, conditional expression or comprehension `if` negated
- remove     a statement replaced by `pass`: a call made for its effect, an assignment to an attribute or an
             item, an augmented assignment, `raise`, `continue`, `break`, `del`
- slice      a slice bound moved: `x[a:b]` -> `x[a + 1:b]` and `x[a:b + 1]` (a missing lower bound becomes 1)

What is never mutated (it cannot change what a caller sees, or a change there says nothing about the tests):
docstrings; logging calls (`logger.*(...)`, `logging.*(...)`, `warnings.warn(...)`) and the lines that make a
logger; `__repr__` bodies; abstract methods; `if TYPE_CHECKING:` blocks; assignments to dunder names (`__all__`,
`__version__`); type annotations; f-strings (their pieces are formatting, the whole is tested through the
message it makes).

Each mutant has a stable id that survives cosmetic edits (reformatting, moving code, adding lines elsewhere):
`<module path>::<enclosing function or class>::<kind>::<source text> -> <mutated text>`, plus `@N` when the
same edit occurs N+1 times in one function. Line numbers are only for reading the report.

Which tests run first (a mutant is then checked against the whole suite only if these all pass): the test files
whose name contains the module's name (`tool.py` -> `test_tools.py`, `session.py` -> `test_session*.py`; for a
shell's `__init__.py` and `__main__.py`, its folder's: `retry/` -> `test_retry.py`, plus `tests/<folder>/`), the test
files that import the module by its dotted name (`from miniagents.schema import ...`); for another module of a
shell's folder that none of these name, its folder's (`tracing/scope.py` -> `test_tracing*.py`, `tests/tracing/`,
the files importing `miniagents.tracing`); and, for modules with no
test file of their own, the few listed in `EXTRA_TESTS` (the loop's modules are specified by test_run and
friends). No match at all means the whole suite runs at once.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "miniagents"

CMP_FLIP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
            ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
CMP_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
LOGGER_NAMES = {"logger", "logging", "log", "warnings"}

# Modules whose name matches no test file: the tests that specify them (by behaviour, through the public API).
LOOP_TESTS = ("test_run", "test_tools", "test_approvals", "test_handoffs")
EXTRA_TESTS: Dict[str, Tuple[str, ...]] = {
    "turn": LOOP_TESTS + ("test_call_ids",),
    "steps": LOOP_TESTS,
    "result": ("test_run", "test_approvals", "test_session_runs"),
    "aio": ("test_tools", "test_run", "test_guardrails"),
    "context": ("test_approvals", "test_run", "test_tools"),
    "validate": ("test_schema", "test_tools", "test_output_types"),
    "docstrings": ("test_schema", "test_tools"),
    "errors": ("test_run", "test_http"),
    "chat_stream": ("test_chat_completions", "test_sse_properties"),
    "endpoint": ("test_http", "test_chat_completions", "test_responses"),
    "interface": ("test_run", "test_chat_completions", "test_responses"),
    "provider": ("test_http", "test_http_end_to_end", "test_chat_completions", "test_responses"),
    "__init__": ("test_run", "test_readme", "test_misuse"),
    "shapes": ("test_chat_completions", "test_responses", "test_model_fuzz", "test_sse_properties"),
    "sql_session": ("test_session", "test_session_contract", "test_session_dbapi", "test_session_files"),
}


@dataclass(frozen=True)
class Edit:
    """One generated mutation: replace `old` (at `start` in the file's text) with `new`."""

    file: str     # relative to the repository root
    line: int
    start: int    # character offset of `old` in the file
    old: str
    new: str
    kind: str
    id: str


def module_files(root: str = ROOT) -> List[str]:
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        found += [os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")
                  for f in sorted(files) if f.endswith(".py")]
    return sorted(found)


# ----------------------------------------------------------------------------- finding mutation sites


def _is_docstring(node: ast.AST, parent: ast.AST) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(node, ast.Expr) and isinstance(body, list) and body and body[0] is node
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))


def _is_logging(node: ast.AST) -> bool:
    """A statement that logs or makes a logger: `logger.warning(...)`, `logger = logging.getLogger(...)`."""
    value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    owner = value.func.value
    return isinstance(owner, ast.Name) and owner.id in LOGGER_NAMES


def _is_skipped_block(node: ast.AST) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # An abstract method's defaults and body never run: callers reach the subclass's method.
        return node.name == "__repr__" or any(
            (d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else None) == "abstractmethod"
            for d in node.decorator_list)
    if isinstance(node, ast.If):
        test = node.test
        name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
        return name == "TYPE_CHECKING"
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__") for t in targets)
    return False


ANNOTATION_FIELDS = {"annotation", "returns", "type_comment"}


def _children(node: ast.AST) -> Iterator[ast.AST]:
    """Child nodes, leaving out annotations and f-strings."""
    for name, value in ast.iter_fields(node):
        if name in ANNOTATION_FIELDS:
            continue
        for child in (value if isinstance(value, list) else [value]):
            if isinstance(child, ast.AST) and not isinstance(child, ast.JoinedStr):
                yield child


class _Sites:
    """Walks one module and yields (node, kind, replacement node or text, scope)."""

    def __init__(self) -> None:
        self.found: List[Tuple[ast.AST, str, object, str]] = []

    def walk(self, node: ast.AST, parent: Optional[ast.AST], scope: List[str]) -> None:
        if _is_skipped_block(node) or _is_logging(node) or (parent is not None and _is_docstring(node, parent)):
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = scope + [node.name]
        self.visit(node, ".".join(scope) or "<module>")
        for child in _children(node):
            self.walk(child, node, scope)

    def add(self, node: ast.AST, kind: str, new: object, scope: str) -> None:
        self.found.append((node, kind, new, scope))

    def visit(self, node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for kind, table in (("compare", CMP_FLIP), ("boundary", CMP_BOUNDARY)):
                    if type(op) in table:
                        ops = list(node.ops)
                        ops[i] = table[type(op)]()
                        self.add(node, kind, ast.Compare(node.left, ops, node.comparators), scope)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self.add(node, "boolop", ast.BoolOp(other, node.values), scope)
        elif isinstance(node, ast.Constant):
            new = _constant_mutation(node.value)
            if new is not None:
                self.add(node, "constant", ast.Constant(new[0]), scope)
        elif isinstance(node, ast.Return):
            if node.value is not None and not isinstance(node.value, ast.Constant):
                self.add(node.value, "return", ast.Constant(None), scope)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self.add(node.test, "negate", ast.UnaryOp(ast.Not(), node.test), scope)
        elif isinstance(node, ast.comprehension):
            for test in node.ifs:
                self.add(test, "negate", ast.UnaryOp(ast.Not(), test), scope)
        elif isinstance(node, ast.Slice):
            lower = ast.BinOp(node.lower, ast.Add(), ast.Constant(1)) if node.lower else ast.Constant(1)
            self.add(node, "slice", ast.Slice(lower, node.upper, node.step), scope)
            if node.upper is not None:
                self.add(node, "slice", ast.Slice(node.lower, ast.BinOp(node.upper, ast.Add(), ast.Constant(1)),
                                                  node.step), scope)
        if _removable(node):
            self.add(node, "remove", "pass", scope)


def _constant_mutation(value: object) -> Optional[tuple]:
    if isinstance(value, bool):
        return (not value,)
    if isinstance(value, (int, float)):
        return (value + 1,)
    if isinstance(value, str):
        return ("" if value else "mutated",)
    return None


def _removable(node: ast.AST) -> bool:
    if isinstance(node, ast.Expr):
        return isinstance(node.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom))
    if isinstance(node, ast.Assign):
        return all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets)
    return isinstance(node, (ast.AugAssign, ast.Raise, ast.Continue, ast.Break, ast.Delete))


# ----------------------------------------------------------------------------- turning sites into edits


def _offsets(text: str) -> List[int]:
    starts, total = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    starts.append(total)
    return starts


def _span(node: ast.AST, starts: List[int], lines: List[str]) -> Tuple[int, int]:
    """Character offsets of `node` in the text (ast columns count UTF-8 bytes)."""
    def offset(lineno: int, col: int) -> int:
        return starts[lineno - 1] + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace"))

    return offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def generate(root: str = ROOT, files: Optional[List[str]] = None) -> List[Edit]:
    """Every generated mutant of every module (or of `files`), in file order."""
    edits: List[Edit] = []
    for rel in files or module_files(root):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        tree = ast.parse(text)
        sites = _Sites()
        for child in _children(tree):
            sites.walk(child, tree, [])
        starts, lines = _offsets(text), text.splitlines(keepends=True)
        seen: Dict[str, int] = {}
        for node, kind, new, scope in sites.found:
            start, end = _span(node, starts, lines)
            old = text[start:end]
            if isinstance(new, str):
                replacement = new
            else:
                replacement = ast.unparse(ast.fix_missing_locations(new))
                if kind != "return" and not isinstance(node, ast.Slice):
                    replacement = f"({replacement})"  # keeps its meaning whatever surrounds it
            base = f"{rel}::{scope}::{kind}::{_squash(old)[:80]} -> {_squash(replacement)[:80]}"
            n = seen.get(base, 0)
            seen[base] = n + 1
            edits.append(Edit(rel, node.lineno, start, old, replacement, kind, base + (f" @{n}" if n else "")))
    return edits


# ----------------------------------------------------------------------------- which tests run first


def _imports_module(test_text: str, dotted: str) -> bool:
    parent, _, leaf = dotted.rpartition(".")
    patterns = [rf"^\s*from {re.escape(dotted)} import", rf"^\s*import {re.escape(dotted)}\b"]
    if parent:
        patterns.append(rf"^\s*from {re.escape(parent)} import [^\n]*\b{re.escape(leaf)}\b")
    return any(re.search(p, test_text, re.M) for p in patterns)


def tests_for(module_file: str, test_files: List[str], root: str = ROOT) -> Tuple[str, ...]:
    """The test files (paths relative to the root) to run first for a mutant in `module_file`."""
    stem = os.path.splitext(os.path.basename(module_file))[0]
    dotted = os.path.splitext(module_file)[0].replace("/", ".")
    parts = module_file.split("/")
    package = parts[1] if len(parts) == 3 else None  # a subpackage's module
    folder = package if stem in ("__init__", "__main__") else None  # a subpackage's own module
    if stem in ("__init__", "__main__"):
        dotted = dotted.rpartition(".")[0]
    key = folder.rstrip("s") if folder else stem.rstrip("s") if stem not in ("__init__", "__main__") else ""
    chosen, shell = [], []
    for test in test_files:
        name = os.path.splitext(os.path.basename(test))[0]
        with open(os.path.join(root, test), encoding="utf-8") as f:
            text = f.read()
        if (key and key in name[len("test_"):]) or ((stem != "__init__" or folder) and _imports_module(text, dotted)) \
                or (folder and test.split("/")[1] == folder):  # tests/<folder>/, as tests/recording/
            chosen.append(test)
        elif package and not folder and package != "models" and (
                package.rstrip("s") in name[len("test_"):] or test.split("/")[1] == package
                or _imports_module(text, f"{PACKAGE}.{package}")):  # tracing/scope.py: test_tracing*.py
            shell.append(test)
    chosen = chosen or shell
    extra = [t for t in test_files if os.path.splitext(os.path.basename(t))[0]
             in EXTRA_TESTS.get(stem if not folder else "", ())]
    return tuple(dict.fromkeys(chosen + extra))
