"""`python -m miniagents.trace FILE.jsonl [--full]`: print a trace file as a tree (see `trace_tree`).

`miniagents.trace` is also upstream's `trace(...)` function. Imported as a submodule
(`import miniagents.trace`), this file puts that function in its own place in `sys.modules`, so the
import system binds `miniagents.trace` to the function, not to a module, whatever the import order.
"""
import sys

if __name__ == "__main__":
    from miniagents.trace_tree import main

    sys.exit(main())
else:
    from .tracing import trace

    sys.modules[__name__] = trace  # type: ignore[assignment]
