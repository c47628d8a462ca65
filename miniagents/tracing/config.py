"""Upstream's `agents.tracing.config`: `TracingConfig`, the type of `RunConfig.tracing` (defined beside
`RunConfig` in the kernel, which never imports this shell)."""
from ..config import TracingConfig

__all__ = ["TracingConfig"]
