"""The package's shape: imports flow one way, layer by layer, and the only edge back is `Agent.as_tool` -> the runner.

Every import counts, function-level ones included. A new module must be given a layer here: where it sits is a
decision, not an accident.
"""
import ast
import pathlib

import miniagents

PACKAGE = pathlib.Path(miniagents.__file__).parent

# Each layer may import its own modules and those of the layers before it (models/ is beside the kernel: it
# knows items and the Model interface, nothing of agents or tools).
LAYERS = {
    "data": ["errors", "items", "context", "caller", "tracing", "trace_tree", "trace", "retry", "logger"],
    "declarations": ["docstrings", "validate", "schema", "models.interface", "tool", "handoffs", "guardrails",
                     "hooks", "config", "agent_output", "capabilities", "agent"],
    "sessions": ["session", "sql_dialect", "sql_session", "sqlite_session", "dbapi_session"],
    "running": ["state", "turn", "result", "run", "testing", "repl"],
    "compatibility": ["handoff_helpers", "compat"],
}
MODELS = ["models.connection", "models.protocol", "models.shapes", "models.bounded", "models.http",
          "models.endpoint", "models.chat_stream", "models.chat_completions", "models.responses", "models.provider"]
# The only I/O: it knows items, the Model interface and the strict schema pass, nothing of agents or tools; the
# provider sits on top of the adapters and only the runner imports it.
MODELS_MAY_IMPORT = set(LAYERS["data"]) | {"models.interface", "schema", "validate", "docstrings"} | (
    set(MODELS) - {"models.provider"})
BACK_EDGES = {("agent", "run")}  # Agent.as_tool runs an agent: the recursion behind agents-as-tools
LAZY_EDGES = {("turn", "models.provider")}  # a model name is resolved by the default provider on first use


def module_files():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            continue
        yield ".".join(parts), path


def imports_of(name, path):
    """The package modules `path` imports, at any depth of the file."""
    package = name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("miniagents"):
                target = node.module.split(".")[1:]
            else:
                continue
            candidates = [".".join(target + [a.name]) for a in node.names] + [".".join(target)]
        elif isinstance(node, ast.Import):
            candidates = [a.name[len("miniagents."):] for a in node.names if a.name.startswith("miniagents.")]
        else:
            continue
        found.update(c for c in candidates if c in MODULES)
    found.discard(name)
    return found


MODULES = {name for name, _ in module_files()}
GRAPH = {name: imports_of(name, path) for name, path in module_files()}


def test_every_module_has_a_place():
    placed = {m for layer in LAYERS.values() for m in layer} | set(MODELS)
    assert MODULES - placed == set(), "give the new module a layer in tests/project/test_architecture.py"
    assert placed - MODULES == set(), "a module listed here no longer exists"


def test_imports_flow_one_way():
    order = {m: i for i, layer in enumerate(LAYERS.values()) for m in layer}
    wrong = []
    for module, targets in GRAPH.items():
        for target in targets:
            if (module, target) in BACK_EDGES | LAZY_EDGES:
                continue
            if module in MODELS:
                if target not in MODELS_MAY_IMPORT:
                    wrong.append(f"{module} -> {target}")
            elif target in MODELS or order[target] > order[module]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_import_cycle_but_the_agent_tool_recursion():
    graph = {m: {t for t in ts if (m, t) not in BACK_EDGES} for m, ts in GRAPH.items()}
    state = {}

    def visit(module, path):
        if state.get(module) == "done":
            return
        assert state.get(module) != "open", "import cycle: " + " -> ".join(path + [module])
        state[module] = "open"
        for target in sorted(graph[module]):
            visit(target, path + [module])
        state[module] = "done"

    for module in sorted(graph):
        visit(module, [])


def test_the_back_edge_is_real_and_function_level():
    """If as_tool stopped importing the runner lazily, `import miniagents.agent` would import the runner first."""
    assert ("agent", "run") in {(m, t) for m, ts in GRAPH.items() for t in ts}
    tree = ast.parse((PACKAGE / "agent.py").read_text(encoding="utf-8"))
    top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "run" not in top_level


def test_all_lists_every_public_name_of_the_package_and_each_one_resolves():
    """`__all__` is written out: a name imported into the package and left out of it (or listed and gone) fails."""
    imported = {n for n, v in vars(miniagents).items() if not n.startswith("_") and not isinstance(v, type(ast))}
    assert imported - set(miniagents.__all__) == set()
    assert [n for n in miniagents.__all__ if not hasattr(miniagents, n)] == []
