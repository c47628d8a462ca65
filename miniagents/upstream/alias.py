"""`agents` is this shell: an import hook that makes `agents` and every `agents.<path>` resolve to
`miniagents.upstream` and `miniagents.upstream.<path>`, for code written for the OpenAI Agents SDK (used by
`python -m miniagents.upstream`).

`import miniagents.upstream as agents` serves attribute reads only; `from agents.extensions import
handoff_filters` needs the name `agents` in the import system. The hook is first on `sys.meta_path`, so an
installed upstream SDK is never found while it is installed. `agents.<path>` is the very module
`miniagents.upstream.<path>` (one object: a patch of one is a patch of the other).
"""
from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec

from ..errors import UserError

SHELL = __name__.rpartition(".")[0]  # this shell's package: miniagents.upstream, or a vendored copy's


class _Existing:
    """The loader of an alias: the module already exists, and keeps its own `__spec__`."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if self.spec is not None:
            module.__spec__ = self.spec  # the import system set the alias's spec; the real name stays


class AgentsAlias:
    """First on `sys.meta_path` while installed: finds `agents[.<path>]` as `miniagents.upstream[.<path>]`."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if fullname != "agents" and not fullname.startswith("agents."):
            return None
        upstream_path = fullname.partition(".")[2]
        real_name = f"{SHELL}.{upstream_path}" if upstream_path else SHELL
        try:
            module = importlib.import_module(real_name)
        except ModuleNotFoundError as missing:
            if missing.name != real_name:
                raise
            raise ModuleNotFoundError(f"No module named {fullname!r}: miniagents has no {upstream_path!r}",
                                      name=fullname) from None
        return ModuleSpec(fullname, _Existing(module), is_package=hasattr(module, "__path__"))


def install() -> None:
    """Make `agents` resolve to this shell from now on (an `agents` already imported is replaced). A copy named
    under `agents` cannot: `agents` would be mapped onto itself (the vendor command refuses such a name)."""
    if SHELL.partition(".")[0] == "agents":
        raise UserError(f"{SHELL}: a copy of miniagents named under `agents` cannot make `agents` its upstream "
                        "shell (the name would be mapped onto itself): vendor it under another name")
    for name in [name for name in sys.modules if name == "agents" or name.startswith("agents.")]:
        del sys.modules[name]
    if AgentsAlias not in sys.meta_path:
        sys.meta_path.insert(0, AgentsAlias)


def uninstall() -> None:
    """Undo `install`: `agents` is whatever the import system finds next time."""
    if AgentsAlias in sys.meta_path:
        sys.meta_path.remove(AgentsAlias)
    for name in [name for name in sys.modules if name == "agents" or name.startswith("agents.")]:
        del sys.modules[name]
