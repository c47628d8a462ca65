"""Lifecycle hooks: local callbacks at the points a run passes (agent start/end, model call, tool, handoff).

Subclass `RunHooks` (for a whole run, `Runner.run_sync(..., hooks=...)`) or `AgentHooks` (one agent,
`Agent(hooks=...)`) and override what you need; methods may be sync or `async def`. Hooks observe:
they never change the run, and nothing they see leaves the process unless you send it.
"""
from __future__ import annotations

from typing import Any, Generic

from . import caller
from .context import TContext


class RunHooks(Generic[TContext]):
    """Callbacks for every agent of one run (`Runner.run_sync(..., hooks=...)`); override what you need."""

    def on_agent_start(self, context: Any, agent: Any) -> None: ...

    def on_agent_end(self, context: Any, agent: Any, output: Any) -> None: ...

    def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None: ...

    def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None: ...

    def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None: ...

    def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: list) -> None: ...

    def on_llm_end(self, context: Any, agent: Any, response: Any) -> None: ...


class AgentHooks(Generic[TContext]):
    """Callbacks for one agent (`Agent(hooks=...)`); override what you need."""

    def on_start(self, context: Any, agent: Any) -> None: ...

    def on_end(self, context: Any, agent: Any, output: Any) -> None: ...

    def on_handoff(self, context: Any, agent: Any, source: Any) -> None: ...

    def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None: ...

    def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None: ...

    def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: list) -> None: ...

    def on_llm_end(self, context: Any, agent: Any, response: Any) -> None: ...


# run-hook method -> the agent-hook method called at the same point
AGENT_METHOD = {"on_agent_start": "on_start", "on_agent_end": "on_end", "on_tool_start": "on_tool_start",
                "on_tool_end": "on_tool_end", "on_llm_start": "on_llm_start", "on_llm_end": "on_llm_end"}


def notify(run_hooks: Any, event: str, context: Any, agent: Any, *rest: Any) -> None:
    """Call `event` on the run's hooks and the matching method on the agent's own hooks."""
    if run_hooks is not None:
        caller.resolve(getattr(run_hooks, event)(context, agent, *rest))
    agent_hooks = getattr(agent, "hooks", None)
    if agent_hooks is not None and event in AGENT_METHOD:
        caller.resolve(getattr(agent_hooks, AGENT_METHOD[event])(context, agent, *rest))

