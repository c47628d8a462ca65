"""Calling the user's sync-or-async callables from the synchronous kernel.

The loop is synchronous (DESIGN.md, idea 6). A tool, guardrail, filter or instructions callable may
be `async def`; its coroutine runs to completion on a fresh event loop in the calling thread.
asyncio is imported only when a coroutine actually shows up, to keep `import miniagents` cheap.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable


def resolve(value: Any) -> Any:
    """Return `value`, or the result of awaiting it when it is awaitable."""
    if not inspect.isawaitable(value):
        return value
    import asyncio

    async def wait() -> Any:
        return await value

    return asyncio.run(wait())


def call(fn: Callable, *args: Any) -> Any:
    """Call `fn(*args)` and resolve the result."""
    return resolve(fn(*args))


def arity(fn: Callable) -> int:
    """Number of positional parameters `fn` takes (ignoring `self` on bound methods)."""
    params = inspect.signature(fn).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
