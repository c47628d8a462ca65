"""Upstream's `agents.models` helpers about the default model (`is_gpt_5_default`, ...), which programs use to
pick settings that suit it.

The default model is miniagents' (`OPENAI_DEFAULT_MODEL`, else the provider's `DEFAULT_MODEL`). miniagents
sends no per-model default settings, so `get_default_model_settings` is always an empty `ModelSettings`.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from ..models import connection
from ..models.interface import ModelSettings


def get_default_model() -> str:
    """The model a run uses when neither the agent nor the run names one."""
    from ..models.provider import DEFAULT_MODEL

    return (os.environ.get("OPENAI_DEFAULT_MODEL") or DEFAULT_MODEL).lower()


def gpt_5_reasoning_settings_required(model_name: str) -> bool:
    """True for a GPT-5 model that takes reasoning settings (the `-chat-latest` aliases take none)."""
    return model_name.startswith("gpt-5") and not model_name.endswith("-chat-latest")


def is_gpt_5_default() -> bool:
    """True when the default model is a GPT-5 model that takes reasoning settings."""
    return gpt_5_reasoning_settings_required(get_default_model())


def get_default_model_settings(model: Optional[str] = None) -> ModelSettings:
    """The settings miniagents adds for `model` (the default one when None): none, for every model."""
    return ModelSettings()


def set_default_openai_client(client: Any, use_for_tracing: bool = True) -> None:
    """Send requests where `client` (e.g. an `openai.AsyncOpenAI`) points, with its key, unless a model or
    provider is given its own: its `base_url` and `api_key` are read (beating set_default_openai_key and the
    environment); the client itself is never called. `use_for_tracing` is accepted: traces are never sent."""
    from .providers import client_endpoint

    connection.set_default_endpoint(client=client_endpoint(client))
