"""The README's two generated tables, "The loop in one page": a reading order and the lines per area.

    python tests/readme_tables.py           # print both tables as they would be written
    python tests/readme_tables.py --write   # rewrite them in README.md, between their markers

Both come from the source as it is now (function line ranges found with `ast`, lines counted per module),
so they stay true while the kernel changes; tests/test_readme_tables.py fails when README.md is stale.
What this file decides: which functions a learner reads, in which order (`READING_ORDER`), which modules
make up each area (`AREAS`, every module in exactly one), and each area's size budget in code lines
(`BUDGETS`: lines that are not blank, comments or docstrings). A budget is a decision: raise it on purpose,
in its own commit, saying why. Standard library only; it never imports miniagents.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "miniagents"
README = ROOT / "README.md"

# (module path under miniagents/, function or Class.method, why a learner reads it), in reading order.
READING_ORDER = [
    ("run.py", "Runner.run_sync", "the entry point; `run` and `run_streamed` drive the same loop"),
    ("run.py", "start_run", "checks the arguments; a fresh `RunState` (the session's history read once) or "
                            "the paused one"),
    ("run.py", "drive", "drains the loop; an error leaves with the partial run"),
    ("run.py", "_loop", "turn after turn until a final output, a pause or an error; every `NextStep` is "
                        "dispatched here"),
    ("turn.py", "run_turn", "one turn, one verb per step"),
    ("turn.py", "prepare_turn", "what the agent offers this turn: instructions, enabled tools and handoffs"),
    ("turn.py", "start_turn", "counts the turn, runs the first turn's input guardrails, calls the model"),
    ("turn.py", "call_model", "the transcript goes out, the response is recorded"),
    ("models/interface.py", "Model", "all the loop asks of a model: `get_response`, `stream_response`"),
    ("turn.py", "classify_output", "response items become run items; function calls become `Call`s"),
    ("turn.py", "plan_tool_calls", "each call's fate: settled, unknown tool, waiting for approval, rejected, run"),
    ("turn.py", "run_tools", "the runnable calls, concurrently"),
    ("tool.py", "invoke_tool", "arguments checked, the function called, its result as text for the model"),
    ("schema.py", "function_schema", "how a Python signature became the tool's strict JSON schema"),
    ("turn.py", "settle_turn", "every output after its own call, in the model's call order"),
    ("turn.py", "decide_next_step", "the four outcomes, in priority order"),
    ("run.py", "pause", "a call waits for a person: the turn's settled outputs are kept"),
    ("run.py", "take_handoff", "the transfer's output, the input filter, the agent switch"),
    ("run.py", "save_turn", "the finished turn written to the session in one transaction"),
    ("run.py", "finish", "output guardrails, then the result"),
    ("state.py", "dump_state", "a paused run as versioned JSON"),
    ("state.py", "load_state", "and back, the whole document checked before anything is built"),
    ("turn.py", "claim_calls", "exactly once: a resumed turn's calls claimed in the session's ledger"),
]

# area -> module paths under miniagents/ ("folder/": every module in it); every module is in exactly one area.
AREAS = {
    "loop": ["run.py", "turn.py", "result.py", "config.py", "caller.py", "retry/", "seams.py"],
    "agents, items, guardrails": ["__init__.py", "agent.py", "handoffs.py", "guardrails.py", "hooks.py", "items.py",
                                  "context.py", "errors.py"],
    "tools and schemas": ["tool.py", "schema.py", "validate.py", "docstrings.py", "agent_output.py"],
    "state and sessions": ["state.py", "session.py", "sql_session.py", "sql_dialect.py", "sqlite_session.py",
                           "dbapi_session.py"],
    "HTTP adapters": ["models/"],
    "compatibility": ["upstream/"],
    "tracing, capabilities": ["tracing/", "trace.py", "capabilities/"],
    "offline model": ["testing.py"],
}
BUDGETS = {  # code lines per area (set December 2026 with about a fifth of headroom)
    "loop": 1750,  # raised for issue 11: runner-managed retries (retry.py), RunState.add_input, AgentRunner
    "agents, items, guardrails": 1100,
    "tools and schemas": 1350,  # raised for issue 11: hosted tools and structured tool outputs
    "state and sessions": 1100,
    "HTTP adapters": 1900,
    "compatibility": 900,  # raised for issue 21: the zero-edit runner (agents alias, openai.types stand-ins) and
    # the upstream helpers its programs import
    "tracing, capabilities": 1200,
    "offline model": 360,  # raised for issue 11: upstream's whole agents.testing contract (steps, checks, streams)
}

MARKERS = {
    "reading order": ("<!-- reading order: generated by tests/readme_tables.py -->",
                      "<!-- end of reading order -->"),
    "lines per area": ("<!-- lines per area: generated by tests/readme_tables.py -->",
                       "<!-- end of lines per area -->"),
}


class StaleTable(Exception):
    """The source no longer has what this file names: say what to edit."""


def modules() -> list:
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


def definition(module: str, name: str) -> ast.AST:
    """The `def` or `class` called `name` ("Class.method" for a method) at the top of `module`."""
    path = PACKAGE / module
    if not path.exists():
        raise StaleTable(f"READING_ORDER names miniagents/{module}, which no longer exists: edit tests/readme_tables.py")
    body = ast.parse(path.read_text(encoding="utf-8")).body
    node = None
    for part in name.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise StaleTable(f"READING_ORDER names {name} in miniagents/{module}, which is not there any more: "
                             "edit tests/readme_tables.py")
        body = node.body
    return node


def line_range(node: ast.AST) -> tuple:
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return first, node.end_lineno


def reading_order() -> str:
    rows = ["| # | read | in | why |", "|---|---|---|---|"]
    for number, (module, name, why) in enumerate(READING_ORDER, 1):
        first, last = line_range(definition(module, name))
        rows.append(f"| {number} | `{name}` | `miniagents/{module}:{first}-{last}` | {why} |")
    return "\n".join(rows)


def counts(path: Path) -> tuple:
    """(lines, code lines): code lines are neither blank, nor comments, nor docstrings."""
    text = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = text.splitlines()
    code = sum(1 for n, line in enumerate(lines, 1)
               if line.strip() and not line.strip().startswith("#") and n not in docstrings)
    return len(lines), code


def expand(members: list) -> list:
    """Module paths, a "folder/" entry standing for every module in it."""
    return [found for m in members for found in ([x for x in modules() if x.startswith(m)] if m.endswith("/") else [m])]


def area_sizes() -> dict:
    """area -> (modules, lines, code lines); every module must have exactly one area."""
    placed = [m for members in AREAS.values() for m in expand(members)]
    missing, gone = sorted(set(modules()) - set(placed)), sorted(set(placed) - set(modules()))
    twice = sorted({m for m in placed if placed.count(m) > 1})
    if missing or gone or twice:
        raise StaleTable(f"AREAS in tests/readme_tables.py is out of date: give these modules an area: {missing}; "
                         f"remove these (gone): {gone}; these are in two areas: {twice}")
    sizes = {}
    for area, members in AREAS.items():
        per_module = [counts(PACKAGE / m) for m in expand(members)]
        sizes[area] = (members, sum(c[0] for c in per_module), sum(c[1] for c in per_module))
    return sizes


def lines_per_area() -> str:
    rows = ["| area | modules | lines | code lines | budget |", "|---|---|---:|---:|---:|"]
    sizes = area_sizes()
    for area, (members, lines, code) in sizes.items():
        rows.append(f"| {area} | {', '.join(m if m.endswith('/') else m[:-3] for m in members)} | {lines:,} | {code:,} | {BUDGETS[area]:,} |")
    total_lines, total_code = sum(s[1] for s in sizes.values()), sum(s[2] for s in sizes.values())
    rows.append(f"| **all of miniagents/** | {len(modules())} modules | {total_lines:,} | {total_code:,} | "
                f"{sum(BUDGETS.values()):,} |")
    return "\n".join(rows)


def over_budget() -> list:
    """Areas whose code lines exceed their budget, as sentences."""
    return [f"{area}: {code} code lines, budget {BUDGETS[area]}" for area, (_, _, code) in area_sizes().items()
            if code > BUDGETS[area]]


def tables() -> dict:
    return {"reading order": reading_order(), "lines per area": lines_per_area()}


def rewrite(readme: str) -> str:
    """`readme` with each table replaced by its generated text (the markers must be there, once each)."""
    for name, table in tables().items():
        start, end = MARKERS[name]
        if readme.count(start) != 1 or readme.count(end) != 1 or readme.index(start) > readme.index(end):
            raise StaleTable(f"README.md must hold the {name} markers once each, in order: {start} ... {end}")
        before, rest = readme.split(start, 1)
        readme = before + start + "\n" + table + "\n" + end + rest.split(end, 1)[1]
    return readme


def main(argv: list) -> int:
    try:
        if argv == ["--write"]:
            README.write_text(rewrite(README.read_text(encoding="utf-8")), encoding="utf-8")
            print(f"rewrote the reading order and the lines per area in {README}")
        elif not argv:
            for name, table in tables().items():
                print(f"{name}:\n{table}\n")
        else:
            print("usage: python tests/readme_tables.py [--write]", file=sys.stderr)
            return 2
    except StaleTable as problem:
        print(f"readme_tables: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
