"""Agents that take assignment, as upstream's do, for programs run by `python -m miniagents.upstream`.

miniagents' `Agent` is a frozen dataclass (one agent serves concurrent runs safely; change one with
`agent.clone(...)`). Upstream's is mutable, and its programs and tests assign to it (`agent.output_type =
AgentOutputSchema(...)`, `agent.handoffs = [...]`). `install()` lets them: a field's new value is checked as the
constructor checks it (a bad one raises the constructor's error and leaves the agent as it was).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..agent import Agent

_frozen_setattr = Agent.__setattr__


def _assign(agent: Agent, name: str, value: Any) -> None:
    if name not in {f.name for f in dataclasses.fields(agent)}:
        _frozen_setattr(agent, name, value)  # raises FrozenInstanceError: only fields take assignment
        return
    checked = dataclasses.replace(agent, **{name: value})  # runs the constructor's checks on the new value
    object.__setattr__(agent, name, getattr(checked, name))


def install() -> None:
    """From now on, in this process, `agent.<field> = value` works on every `Agent`."""
    Agent.__setattr__ = _assign
