"""Calling the user's sync-or-async callables from the synchronous kernel, with optional deadlines.

The loop is synchronous, so one loop serves sync, async and streamed runs. A tool, guardrail, filter or
instructions callable may still be `async def`; its coroutine runs to completion on a fresh event loop, in the
calling thread, or in a helper thread when the calling thread already runs a loop (`run_sync` called from
async code).
asyncio and threading are imported only when needed, to keep `import miniagents` cheap.
"""
from __future__ import annotations

import contextvars
import inspect
from typing import Any, Callable, Optional

CANCEL_CALLBACKS: contextvars.ContextVar = contextvars.ContextVar("miniagents_cancel_callbacks", default=None)
"""How a cancelled run stops what it waits on. While a run is driven, this holds its list of aborts: whatever
is in flight (an HTTP request, an async tool's task) adds a zero-argument callable that stops it and removes
it when done; cancelling the run calls them all, from another thread. Threads the run starts copy it."""


class Deadline(Exception):
    """Raised by `resolve`/`in_thread` when `timeout` seconds passed first."""


class Cancelled(Exception):
    """Raised by `resolve` when the run was cancelled while an async call was running (its task cancelled)."""


def start_thread(fn: Callable[[], Any], name: str = "miniagents-worker") -> Callable[..., Any]:
    """Start `fn()` in a daemon thread; the returned `join(timeout=None)` gives its result or raises
    its error, or raises `Deadline` past `timeout` (a sync function cannot be stopped: its thread is
    left to finish on its own)."""
    import contextvars
    import threading

    box: dict = {}
    context = contextvars.copy_context()  # the caller's context variables, as if fn ran in its thread

    def work() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as e:  # handed to the joining thread
            box["error"] = e

    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()

    def join(timeout: Optional[float] = None) -> Any:
        worker.join(timeout)
        if worker.is_alive():
            raise Deadline()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return join


def in_thread(fn: Callable[[], Any], timeout: Optional[float] = None, name: str = "miniagents-worker") -> Any:
    """Run `fn()` in a daemon thread and wait for it (at most `timeout` seconds)."""
    return start_thread(fn, name)(timeout)


def resolve(value: Any, timeout: Optional[float] = None) -> Any:
    """Return `value`, or the result of awaiting it when it is awaitable (cancelled past `timeout`)."""
    if not inspect.isawaitable(value):
        return value
    import asyncio

    async def wait() -> Any:
        task, aborts = asyncio.ensure_future(value), CANCEL_CALLBACKS.get()
        loop = asyncio.get_running_loop()

        def abort() -> None:  # from another thread: the run was cancelled
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop already ended: nothing left to stop
                pass

        if aborts is not None:
            aborts.append(abort)
        try:
            return await (task if timeout is None else asyncio.wait_for(task, timeout))
        except asyncio.TimeoutError:
            raise Deadline() from None
        except asyncio.CancelledError:
            raise Cancelled() from None
        finally:
            if aborts is not None and abort in aborts:
                aborts.remove(abort)

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the usual case
        return asyncio.run(wait())
    return in_thread(lambda: asyncio.run(wait()), name="miniagents-await")


def call(fn: Callable, *args: Any) -> Any:
    """Call `fn(*args)` and resolve the result."""
    return resolve(fn(*args))


def arity(fn: Callable) -> int:
    """Number of positional parameters `fn` takes (ignoring `self` on bound methods)."""
    params = inspect.signature(fn).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
