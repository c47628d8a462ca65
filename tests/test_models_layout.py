"""models/ is the package's only I/O and sits at the bottom: it reaches into the kernel only for errors,
items, context (Usage) and schema, and its own modules import one way (provider on top, nothing imports it)."""
import ast
import pathlib

MODELS = pathlib.Path(__file__).parent.parent / "miniagents" / "models"
KERNEL_ALLOWED = {"errors", "items", "context", "schema"}


def imports_of(path: pathlib.Path) -> set:
    """Every miniagents module `path` imports, at module level or inside a function, as 'models.x' / 'x'."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ["models"] if node.level == 1 else []
            target = base + (node.module.split(".") if node.module else [])
            if node.module is None or target == ["models"]:
                found |= {".".join(base + [alias.name]) for alias in node.names}
            else:
                found.add(".".join(target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found |= {n[len("miniagents."):] for n in names if n.startswith("miniagents.")}
    return found


def graph() -> dict:
    return {"models." + p.stem: imports_of(p) for p in MODELS.glob("*.py") if p.stem != "__init__"}


def test_models_reach_into_the_kernel_only_for_errors_items_context_and_schema():
    for module, targets in graph().items():
        kernel = {t for t in targets if not t.startswith("models.")}
        assert kernel <= KERNEL_ALLOWED, f"{module} imports {sorted(kernel - KERNEL_ALLOWED)}"


def test_nothing_in_models_imports_the_provider_and_the_graph_has_no_cycle():
    edges = graph()
    assert [m for m, targets in edges.items() if "models.provider" in targets] == []
    done, active = set(), []

    def visit(module):
        assert module not in active, f"import cycle: {' -> '.join(active + [module])}"
        if module in done:
            return
        active.append(module)
        for target in edges.get(module, ()):
            if target.startswith("models."):
                visit(target)
        active.pop()
        done.add(module)

    for module in edges:
        visit(module)
