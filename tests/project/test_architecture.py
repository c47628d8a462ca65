"""The package's shape: a kernel whose imports flow one way, layer by layer, and shells the kernel never imports.

The kernel is the modules directly in miniagents/ and in miniagents/models/; every other folder of miniagents/ is a
shell (listed in `seams.SHELLS`), which may import the kernel and the shells it declares below, and nothing else.
Every import counts, function-level ones included. A new module must be given a layer here: where it sits is a
decision, not an accident.
"""
import ast
import pathlib

import miniagents
from miniagents import seams

PACKAGE = pathlib.Path(miniagents.__file__).parent

# Each layer may import its own modules and those of the layers before it (models/ is beside the kernel: it
# knows items and the Model interface, nothing of agents or tools).
LAYERS = {
    "data": ["errors", "seams", "items", "context", "caller"],
    "declarations": ["docstrings", "validate", "schema", "models.interface", "tool",
                     "handoffs", "guardrails", "config", "agent_output", "agent"],
    "sessions": ["session", "sql_dialect", "sql_session", "sqlite_session"],
    "running": ["state", "result", "turn", "ledger", "steps", "run"],
}
MODELS = ["models.connection", "models.protocol", "models.shapes", "models.bounded", "models.http",
          "models.endpoint", "models.chat_stream", "models.chat_completions", "models.responses", "models.provider"]
# The only I/O: it knows items, the Model interface and the strict schema pass, nothing of agents or tools; the
# provider sits on top of the adapters and only the runner imports it.
MODELS_MAY_IMPORT = set(LAYERS["data"]) | {"models.interface", "schema", "validate",
                                           "docstrings"} | (
    set(MODELS) - {"models.provider"})
BACK_EDGES = {("agent", "run")}  # Agent.as_tool runs an agent: the recursion behind agents-as-tools
LAZY_EDGES = {("turn", "models.provider")}  # a model name is resolved by the default provider on first use
# shell -> the other shells it may import (each imports the kernel freely)
SHELL_IMPORTS = {"tracing": set(), "retry": set(), "capabilities": set(), "upstream": {"retry", "testing"},
                 "recording": {"testing"},
                 "dbapi": set(), "mcp": set(), "vendor": set(), "testing": set()}
# The kernel names a shell only as text, in these modules: seams (load_shell, the finder, what a configuration asks
# for) and the package's table of names that load on first use.
NAMES_SHELLS = {"seams", "__init__"}


def module_files():
    """(dotted name, path) of every module; a shell's `__init__.py` is the shell's own module."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            if len(parts) == 1 or parts[0] == "models":
                continue
            parts = parts[:-1]
        yield ".".join(parts), path


SHELL_FOLDERS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {"models"}


def shell_of(module):
    """The shell a module belongs to, or None for a kernel module."""
    head = module.split(".")[0]
    return head if head in SHELL_FOLDERS else None


def imports_of(name, path):
    """The package modules `path` imports, at any depth of the file."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
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
    found.discard(".".join(package))  # `from . import x` names the module's own package: not an import of it
    return found


MODULES = {name for name, _ in module_files()}
GRAPH = {name: imports_of(name, path) for name, path in module_files()}
KERNEL = {m for m in MODULES if shell_of(m) is None}


def test_every_module_has_a_place():
    placed = {m for layer in LAYERS.values() for m in layer} | set(MODELS)
    assert KERNEL - placed == set(), "give the new module a layer in tests/project/test_architecture.py"
    assert placed - KERNEL == set(), "a module listed here no longer exists"
    assert SHELL_FOLDERS <= set(seams.SHELLS), "a new folder of miniagents/ is a shell: list it in seams.SHELLS"
    assert SHELL_FOLDERS <= set(SHELL_IMPORTS), "say which shells each shell may import (SHELL_IMPORTS)"


def test_the_kernel_never_imports_a_shell():
    wrong = [f"{m} -> {t}" for m in sorted(KERNEL) for t in sorted(GRAPH[m]) if shell_of(t) is not None]
    assert wrong == []


def test_the_kernel_names_shells_only_where_it_loads_them():
    """`load_shell`, and any text naming a shell's module (`"miniagents.tracing"`, `".tracing"`), appear nowhere else."""
    wrong = []
    for name, path in module_files():
        if name not in KERNEL or name in NAMES_SHELLS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            calls_loader = isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                == "load_shell"
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            names_shell = any(text.startswith(p + shell) for p in ("miniagents.", ".") for shell in seams.SHELLS)
            if calls_loader or names_shell:
                wrong.append(f"{name}:{node.lineno}")
    assert wrong == []


def test_shells_import_the_kernel_and_the_shells_they_declare():
    wrong = [f"{m} -> {t}" for m in sorted(MODULES - KERNEL) for t in sorted(GRAPH[m])
             if shell_of(t) not in (None, shell_of(m)) and shell_of(t) not in SHELL_IMPORTS[shell_of(m)]]
    assert wrong == []


def test_kernel_imports_flow_one_way():
    order = {m: i for i, layer in enumerate(LAYERS.values()) for m in layer}
    wrong = []
    for module in sorted(KERNEL):
        for target in GRAPH[module]:
            if (module, target) in BACK_EDGES | LAZY_EDGES or target not in KERNEL:
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


def test_the_package_never_spells_its_own_name_where_a_copy_would_need_its_own():
    """A loaded module or a logger is named from `__name__`, never from the text "miniagents": a copy vendored as
    `myproj._vendor.miniagents` must find its own modules and log under its own name."""
    naming = {"getLogger", "import_module", "__import__", "find_spec"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in naming:
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for arg in node.args[:1]
                          if isinstance(arg, ast.Constant) and str(arg.value).split(".")[0] == "miniagents"]
    assert found == []


def test_no_line_of_the_package_is_wider_than_120_columns():
    """A reader sees each line whole, side by side with another file; a long line is split where it means."""
    wide = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 120]
    assert wide == []
