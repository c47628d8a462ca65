"""Capabilities (a shell): per-run add-ons that give an agent tools, an instruction fragment and request parameters.

Holds `Capability` (the base), `prepare` (a run's clones of an agent's capabilities and what they add) and
`CapabilityPlugin`, which plugs them into runs through the kernel's seams (`prepare_run`: clone and check every
reachable agent's capabilities before any model call; `offer`: add their tools, instructions and request
parameters to the agent's turn; `model_input`: `process_context`). `Workspace` (workspace.py) is a capability
that lets a model read, search and optionally write the files of one folder. The names follow upstream's
sandbox capabilities (`type`, `clone`, `tools`, `instructions`, `sampling_params`, `process_context`,
`required_capability_types`); miniagents has no sandbox session or manifest, so there is no
`bind`/`process_manifest`, and `model_adapters` (which model adapters a capability can serve) is miniagents' own.

Every run works on clones (`clone()`), so nothing a capability records reaches another run.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from .. import caller, seams
from ..errors import UserError


class Capability:
    """Per-run middleware for an agent. Override what you need: `tools()` (FunctionTools added to the agent's),
    `instructions()` (a fragment appended to its instructions; may be async), `sampling_params(params)`
    (request parameters merged into `ModelSettings.extra_args`), `process_context(items)` (the model input
    before each call), `required_capability_types()`, and `model_adapters` (class names of the model
    adapters it can serve; None: any). `clone()` makes the per-run copy."""

    type: str = "capability"
    model_adapters: Optional[tuple] = None

    def clone(self) -> "Capability":
        """A per-run copy: a shallow copy whose list, dict, set and bytearray attributes are copied as well.
        Override it when the capability holds other mutable state."""
        twin = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, (list, dict, set, bytearray)):
                setattr(twin, name, copy.copy(value))
        return twin

    def required_capability_types(self) -> set:
        """The `type`s of other capabilities this one needs on the same agent."""
        return set()

    def tools(self) -> list:
        return []

    def instructions(self, manifest: Any = None) -> Optional[str]:
        """An instruction fragment, or None. (Upstream passes its sandbox manifest; miniagents passes None.)"""
        return None

    def sampling_params(self, sampling_params: dict) -> dict:
        """Extra request parameters; `sampling_params` holds the agent's `extra_args` and `"model"` (its name)."""
        return {}

    def process_context(self, context: list) -> list:
        """The model input items before a model call; return them unchanged by default."""
        return context

    def supports_model(self, model: Any) -> bool:
        """Whether this capability can serve `model` (a Model instance): by `model_adapters`, which names
        adapter classes (a subclass of a named class qualifies)."""
        if self.model_adapters is None:
            return True
        return any(cls.__name__ in self.model_adapters for cls in type(model).__mro__)


@dataclass(eq=False)
class PreparedCapabilities:
    """One agent's capabilities for one run: the clones, their tools (in capability order), their instruction
    fragments joined by blank lines (None if there are none), and `extra_args` merged with their
    sampling params."""

    capabilities: list
    tools: list
    instructions: Optional[str]
    extra_args: Optional[dict]


def prepare(capabilities: list, model: Any, extra_args: Optional[dict] = None) -> PreparedCapabilities:
    """Clone `capabilities` for one run and collect what they add; raise `UserError` (before any model call)
    when one cannot serve `model` or lacks a capability it requires. `model` is the resolved Model instance
    the agent will use; `extra_args` the agent's resolved `ModelSettings.extra_args`."""
    clones = []
    for capability in capabilities:
        if not isinstance(capability, Capability):
            raise UserError(f"capabilities must be Capability objects, got {type(capability).__name__}")
        clones.append(capability.clone())
    present = {c.type for c in clones}
    for capability in clones:
        missing = capability.required_capability_types() - present
        if missing:
            raise UserError(f"{type(capability).__name__} requires missing capabilities: {', '.join(sorted(missing))}")
        if not capability.supports_model(model):
            raise UserError(f"capability {type(capability).__name__} ({capability.type!r}) cannot run on the model "
                            f"adapter {type(model).__name__}; it serves {', '.join(capability.model_adapters or ())}")
    tools = [tool for capability in clones for tool in capability.tools()]
    fragments = [text for text in (caller.call(c.instructions, None) for c in clones) if text]
    params = dict(extra_args or {})
    model_name = getattr(model, "model", None)
    for capability in clones:
        seen = dict(params, model=model_name) if isinstance(model_name, str) else dict(params)
        params = _merge(params, capability.sampling_params(seen) or {})
    return PreparedCapabilities(clones, tools, "\n\n".join(fragments) or None, params or None)


def _merge(base: dict, extra: dict) -> dict:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merge(merged[key], value) if isinstance(merged.get(key), dict) and isinstance(value, dict) \
            else value
    return merged


class CapabilityPlugin(seams.Plugin):
    """Capabilities in a run, through the kernel's seams (registered when this shell is imported)."""

    def prepare_run(self, run: Any) -> None:
        for agent in run.agents:
            self.prepared(run, agent)

    def prepared(self, run: Any, agent: Any) -> Optional[PreparedCapabilities]:
        """This run's copies of `agent`'s capabilities (None: it has none): made when the run starts, or when it
        first offers the agent's tools (an agent met during the run, which only a hand-built `Handoff` reaches)."""
        from ..turn import get_model

        prepared = run.scratch.setdefault(self, {})  # id(agent) -> PreparedCapabilities (run.agents keeps each)
        if agent.capabilities and id(agent) not in prepared:
            extra_args = agent.model_settings.resolve(run.config.model_settings).extra_args
            prepared[id(agent)] = prepare(agent.capabilities, get_model(agent, run.config), extra_args)
        return prepared.get(id(agent))

    def offer(self, run: Any, setup: Any) -> Any:
        """The execution copy for this run: the agent's own tools and text, then what its capabilities add."""
        prepared = self.prepared(run, setup.agent)
        if prepared is None:
            return setup
        tools = dict(setup.tools)
        for tool in prepared.tools:
            tools.setdefault(tool.name, tool)
        instructions = setup.instructions
        if prepared.instructions:
            instructions = f"{instructions}\n\n{prepared.instructions}" if instructions else prepared.instructions
        return dataclasses.replace(setup, instructions=instructions, tools=tools,
                                   settings=dataclasses.replace(setup.settings, extra_args=prepared.extra_args))

    def model_input(self, run: Any, setup: Any, items: list) -> list:
        prepared = run.scratch.get(self, {}).get(id(setup.agent))
        for capability in prepared.capabilities if prepared is not None else ():
            items = capability.process_context(items)
        return items


seams.register(CapabilityPlugin())

from .workspace import Workspace  # noqa: E402  (a Capability: defined after its base)

__all__ = ["Capability", "CapabilityPlugin", "PreparedCapabilities", "Workspace", "prepare"]
