"""Upstream's `agents.tracing.config`: `TracingConfig`, the type of `RunConfig.tracing`."""
from __future__ import annotations

from typing import TypedDict


class TracingConfig(TypedDict, total=False):
    """`RunConfig.tracing`: `include_task_and_turn_spans` (default True). Its `api_key` is for upstream's exporter;
    miniagents exports nothing and drops it."""

    api_key: str
    include_task_and_turn_spans: bool


__all__ = ["TracingConfig"]
