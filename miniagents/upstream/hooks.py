"""Upstream's lifecycle hooks: local callbacks at the points a run passes (agent start/end, model call, tool,
handoff), in upstream's shape (`agents.lifecycle`: its method names and argument order).

Subclass `RunHooks` (for a whole run, the shell's `Runner.run_sync(..., hooks=...)`) or `AgentHooks` (one agent,
the shell's `Agent(hooks=...)`) and override what you need; methods may be sync or `async def`. Hooks observe:
they never change the run, and nothing they see leaves the process unless you send it. The kernel has one way to
observe a run, its seams: the shell's runner turns a run's hooks and its agents' own hooks into a `HookPlugin`,
a plugin taking part in that run only (the kernel's `Runner.run_sync(..., plugins=[...])`), as tracing takes part
in every run. A kernel program writes a `seams.Plugin` itself.
"""
from __future__ import annotations

import contextlib
from typing import Any, Generic, Iterator

from .. import caller
from ..agent import Agent
from ..context import TContext
from ..handoffs import Handoff
from ..seams import HandoffStep, ModelStep, Plugin, ToolStep
from ..state import reachable_agents


# What a hook's default returns: nothing, already done, so that `await super().on_agent_start(...)` works too.
DONE = caller.Ready(None)


class RunHooks(Generic[TContext]):
    """Callbacks for every agent of one run (the shell's `Runner.run_sync(..., hooks=...)`); override what you
    need. Each default returns `DONE`, so an `async def` override may `await super().on_...(...)` as upstream's
    may (a default that returned None made that a bare TypeError)."""

    def on_agent_start(self, context: Any, agent: Any) -> Any:
        return DONE

    def on_agent_end(self, context: Any, agent: Any, output: Any) -> Any:
        return DONE

    def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> Any:
        return DONE

    def on_tool_start(self, context: Any, agent: Any, tool: Any) -> Any:
        return DONE

    def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> Any:
        return DONE

    def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: list) -> Any:
        return DONE

    def on_llm_end(self, context: Any, agent: Any, response: Any) -> Any:
        return DONE


class AgentHooks(Generic[TContext]):
    """Callbacks for one agent (the shell's `Agent(hooks=...)`); override what you need (each default returns
    `DONE`, as `RunHooks`' do)."""

    def on_start(self, context: Any, agent: Any) -> Any:
        return DONE

    def on_end(self, context: Any, agent: Any, output: Any) -> Any:
        return DONE

    def on_handoff(self, context: Any, agent: Any, source: Any) -> Any:
        return DONE

    def on_tool_start(self, context: Any, agent: Any, tool: Any) -> Any:
        return DONE

    def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> Any:
        return DONE

    def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: list) -> Any:
        return DONE

    def on_llm_end(self, context: Any, agent: Any, response: Any) -> Any:
        return DONE


# run-hook method -> the agent-hook method called at the same point
AGENT_METHOD = {"on_agent_start": "on_start", "on_agent_end": "on_end", "on_tool_start": "on_tool_start",
                "on_tool_end": "on_tool_end", "on_llm_start": "on_llm_start", "on_llm_end": "on_llm_end"}


class HookPlugin(Plugin):
    """A run's `RunHooks` (None: none) and its agents' `AgentHooks`, called from the seams of that run."""

    def __init__(self, run_hooks: Any):
        if run_hooks is not None and not isinstance(run_hooks, RunHooks):
            if isinstance(run_hooks, AgentHooks):
                raise TypeError("Run hooks must be instances of RunHooks. Received agent-scoped hooks (AgentHooks). "
                                "Attach AgentHooks to an Agent via Agent(..., hooks=...).")
            raise TypeError(f"Run hooks must be instances of RunHooks, got {type(run_hooks).__name__}")
        self.run_hooks = run_hooks

    def notify(self, event: str, context: Any, agent: Any, *rest: Any) -> None:
        """Call `event` on the run's hooks and the matching method on the agent's own hooks."""
        if self.run_hooks is not None:
            caller.resolve(getattr(self.run_hooks, event)(context, agent, *rest))
        agent_hooks = getattr(agent, "hooks", None)
        if agent_hooks is not None and event in AGENT_METHOD:
            caller.resolve(getattr(agent_hooks, AGENT_METHOD[event])(context, agent, *rest))

    def agent_started(self, run: Any, agent: Any) -> None:
        run.state.context_wrapper.turn_input = list(run.state.transcript)  # what the agent starts from
        self.notify("on_agent_start", run.state.context_wrapper, agent)

    def final_output(self, run: Any, agent: Any, output: Any) -> None:
        self.notify("on_agent_end", run.state.context_wrapper, agent, output)

    @contextlib.contextmanager
    def model_call(self, run: Any, step: ModelStep) -> Iterator[None]:
        context = run.state.context_wrapper
        context.turn_input = step.input
        self.notify("on_llm_start", context, step.agent, step.instructions, step.input)
        yield
        self.notify("on_llm_end", context, step.agent, step.response)

    @contextlib.contextmanager
    def tool_call(self, run: Any, step: ToolStep) -> Iterator[None]:
        self.notify("on_tool_start", step.context, step.agent, step.tool)
        yield
        result = step.value if step.value is not None else step.text
        self.notify("on_tool_end", step.context, step.agent, step.tool, result)

    @contextlib.contextmanager
    def handoff(self, run: Any, step: HandoffStep) -> Iterator[None]:
        yield
        context, source = run.state.context_wrapper, step.from_agent
        if self.run_hooks is not None:
            caller.resolve(self.run_hooks.on_handoff(context, source, step.to_agent))
        source_hooks = getattr(source, "hooks", None)  # a kernel agent in the graph has none
        if source_hooks is not None:  # upstream's convention: the source agent's hooks, told the new agent first
            caller.resolve(source_hooks.on_handoff(context, step.to_agent, source))


def hook_plugins(hooks: Any, *starts: Any) -> list:
    """The per-run plugins (the kernel's `plugins=`) for a run's `RunHooks` (None: none) and the `AgentHooks` of the
    agents it can reach from its `starts` (the starting agent, and the agent a resumed state is at): a `HookPlugin`
    when there are any, or when an agent may be met only during the run (a hand-built `Handoff` gives its agent
    when called), else none, so a run without hooks takes no plugin step for them. A starting agent that is not an
    agent is left to the kernel's check."""
    agents = [agent for start in starts if isinstance(start, Agent) for agent in reachable_agents(start)]
    has_agent_hooks = any(getattr(agent, "hooks", None) is not None or any(
        isinstance(entry, Handoff) and entry._agent is None for entry in agent.handoffs) for agent in agents)
    return [HookPlugin(hooks)] if hooks is not None or has_agent_hooks else []
