"""`python -m miniagents.trace FILE.jsonl [--full]`, the tracing shell's command under its first name; and, when
imported, upstream's `trace(...)` function.

Imported as a submodule (`import miniagents.trace`), this file puts that function in its own place in
`sys.modules`, so the import system binds `miniagents.trace` to the function, not to a module, whatever the
import order. It reaches the shell only through `seams.load_shell`, the kernel's one way to a shell.
"""
import sys

from .seams import load_shell

if __name__ == "__main__":
    sys.exit(load_shell("tracing", "python -m miniagents.trace").tree.main())
else:
    sys.modules[__name__] = load_shell("tracing", "miniagents.trace").trace  # type: ignore[assignment]
