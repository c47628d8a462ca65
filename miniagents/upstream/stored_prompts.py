"""Upstream's stored prompts: `Agent(prompt=...)`, a prompt kept on the OpenAI platform (Responses API only).

The kernel knows nothing of them: upstream's `Agent` (classes.py) has the `prompt` field and `prompt_for`, and
`PromptPlugin`, on the kernel's `model` seam, sends the agent's prompt with each model call of a turn (the model
is wrapped so that its call gets the `prompt` keyword of upstream's `Model` protocol, which adapters send).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, TypedDict

from .. import caller, seams
from ..context import RunContextWrapper
from ..errors import UserError


class Prompt(TypedDict, total=False):
    """A prompt stored on the OpenAI platform (`id`, optional `version` and `variables`); Responses API only."""

    id: str
    version: str
    variables: Dict[str, Any]


@dataclass
class GenerateDynamicPromptData:
    """What a prompt function (`Agent(prompt=fn)`) is given each turn: the run's context and the agent."""

    context: RunContextWrapper
    agent: Any


def check_prompt(prompt: Any) -> None:
    """`Agent(prompt=...)` takes a `Prompt` dict with an `id`, a function returning one, or None."""
    if prompt is not None and not (callable(prompt) or isinstance(prompt, dict) and isinstance(prompt.get("id"), str)):
        raise TypeError(f"Agent prompt must be a Prompt dict with an 'id', a function returning one, or None, "
                        f"got {type(prompt).__name__}")


def prompt_for(agent: Any, ctx: RunContextWrapper) -> Optional[dict]:
    """The stored prompt `agent` sends this turn: its `prompt` as given, or what its function returns."""
    prompt = getattr(agent, "prompt", None)
    if not callable(prompt):
        return prompt
    made = caller.call(prompt, GenerateDynamicPromptData(context=ctx, agent=agent))
    if not (isinstance(made, dict) and isinstance(made.get("id"), str)):
        raise UserError(f"Agent {agent.name!r}: the prompt function must return a Prompt dict with an 'id', "
                        f"got {type(made).__name__}")
    return made


class PromptedModel:
    """A model whose calls this turn carry the agent's stored prompt (the `prompt` keyword)."""

    def __init__(self, model: Any, prompt: dict):
        self.wrapped, self.prompt = model, prompt  # not `model`: a tracing span reads a model's name from `model.model`

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.get_response(*args, **kwargs, prompt=self.prompt)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped.stream_response(*args, **kwargs, prompt=self.prompt)


class PromptPlugin(seams.Plugin):
    """Sends an agent's stored prompt with its model calls (made anew each turn when it is a function)."""

    def model(self, run: Any, setup: Any, model: Any) -> Any:
        if getattr(setup.agent, "prompt", None) is None:
            return model
        return PromptedModel(model, prompt_for(setup.agent, run.state.context_wrapper))


PLUGIN = PromptPlugin()  # the one the package registers: importlib.reload of the package registers it again, once
