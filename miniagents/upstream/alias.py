"""`agents` is miniagents: an import hook that makes `agents` and every `agents.<path>` resolve to `miniagents`
and `miniagents.<path>`, for code written for the OpenAI Agents SDK (used by `python -m miniagents.upstream`).

`import miniagents as agents` serves attribute reads only; `from agents.extensions import handoff_filters`
needs the name `agents` in the import system. The hook is first on `sys.meta_path`, so an installed upstream
SDK is never found while it is installed. `agents.<path>` is the very module `miniagents.<path>` (one object:
a patch of one is a patch of the other), except where upstream's module holds names the real miniagents
module lacks (`PATH_EXTRAS`): there `agents.<path>` reads the real module first, then the extra names.
"""
from __future__ import annotations

import importlib
import sys
import types
from importlib.machinery import ModuleSpec

# Upstream path that is a real miniagents module -> "name=module:attr ..." it adds (read when accessed).
PATH_EXTRAS = {
    "models": "get_default_model=upstream.default_models:get_default_model "
              "get_default_model_settings=upstream.default_models:get_default_model_settings "
              "gpt_5_reasoning_settings_required=upstream.default_models:gpt_5_reasoning_settings_required "
              "is_gpt_5_default=upstream.default_models:is_gpt_5_default",
}


def _extras(path: str) -> dict:
    return dict(entry.split("=") for entry in PATH_EXTRAS.get(path, "").split())


class ExtendedModule(types.ModuleType):
    """`agents.<path>` where upstream's module has names miniagents' has not: the real module's names first."""

    def __init__(self, name: str, real: types.ModuleType):
        super().__init__(name, real.__doc__)
        self.__dict__["_real"] = real
        if hasattr(real, "__path__"):
            self.__path__ = list(real.__path__)
        self.__all__ = sorted(set(getattr(real, "__all__", ())) | set(_extras(name.partition(".")[2])))

    def __getattr__(self, name: str):
        real = self.__dict__["_real"]
        if hasattr(real, name):
            return getattr(real, name)
        target = _extras(self.__name__.partition(".")[2]).get(name)
        if target is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module("miniagents." + module), attr)

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_real"])) | set(self.__all__))


class _Existing:
    """The loader of an alias: the module already exists, and keeps its own `__spec__`."""

    def __init__(self, module: types.ModuleType):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if self.spec is not None:
            module.__spec__ = self.spec  # the import system set the alias's spec; the real name stays


class AgentsAlias:
    """First on `sys.meta_path` while installed: finds `agents[.<path>]` as `miniagents[.<path>]`."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        if fullname != "agents" and not fullname.startswith("agents."):
            return None
        upstream_path = fullname.partition(".")[2]
        real_name = "miniagents." + upstream_path if upstream_path else "miniagents"
        try:
            module = importlib.import_module(real_name)
        except ModuleNotFoundError as missing:
            if missing.name != real_name:
                raise
            raise ModuleNotFoundError(f"No module named {fullname!r}: miniagents has no {real_name!r}",
                                      name=fullname) from None
        if upstream_path in PATH_EXTRAS:
            module = ExtendedModule(fullname, module)
        return ModuleSpec(fullname, _Existing(module), is_package=hasattr(module, "__path__"))


def install() -> None:
    """Make `agents` resolve to miniagents from now on (an `agents` already imported is replaced)."""
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
