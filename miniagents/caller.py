"""Calling the user's sync-or-async callables from the synchronous kernel, with optional deadlines.

The loop is synchronous, so one loop serves sync, async and streamed runs. A tool, guardrail, filter or
instructions callable may still be `async def`; its coroutine runs to completion on a fresh event loop, in the
calling thread, or in a helper thread when the calling thread already runs a loop (`run_sync` called from
async code).
asyncio and threading are imported only when needed, to keep `import miniagents` cheap.
"""
from __future__ import annotations

import collections.abc
import contextlib
import contextvars
import inspect
from typing import Any, Callable, Iterator, Optional

CANCEL_CALLBACKS: contextvars.ContextVar = contextvars.ContextVar("miniagents_cancel_callbacks", default=None)
"""How a cancelled run stops what it waits on. While a run is driven, this holds its list of aborts: whatever
is in flight (an HTTP request, an async tool's task) adds a zero-argument callable that stops it and removes
it when done; cancelling the run calls them all, from another thread. Threads the run starts copy it."""


class Aborts(list):
    """A run's aborts (see `CANCEL_CALLBACKS`), marked by an immediate cancel: a model request that starts after it
    (the cancel came while a guardrail or an instructions callable ran) is stopped before it is sent. What else
    starts after it (a session's write, a tool) runs as it would: the cancel stops the run at its next step."""

    cancelled = False


class AlreadyDone(collections.abc.Coroutine):
    """Mixin: a result that is already there, shaped like the coroutine upstream's method returns, so code
    written for upstream can `await` it or hand it to `asyncio.run`, while synchronous code just uses it."""

    __slots__ = ()

    def _result(self) -> Any:
        return self

    def send(self, value: Any) -> Any:
        raise StopIteration(self._result())

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        raise typ if val is None else val

    def close(self) -> None:
        return None

    def __await__(self) -> Any:
        return self._result()
        yield  # pragma: no cover - makes this a generator, as `await` requires


class Ready(AlreadyDone):
    """`AlreadyDone` for any value: `await` it, pass it to `asyncio.run`, or read `.value`. It is true, false
    and equal as its value is."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def _result(self) -> Any:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: Any) -> bool:
        return self.value == (other.value if isinstance(other, Ready) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Ready({self.value!r})"


class Deadline(Exception):
    """Raised by `resolve`/`in_thread` when `timeout` seconds passed first. `still_running`: the work was a sync
    function, which cannot be stopped: it goes on in its thread and may still finish (an async one is cancelled)."""

    def __init__(self, still_running: bool = False):
        super().__init__()
        self.still_running = still_running


class Cancelled(Exception):
    """Raised by `resolve` when the run was cancelled while an async call was running (its task cancelled).
    `started`: it stopped a tool's call that was running, which may have done what it does (tool.invoke_tool)."""

    started = False


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
            raise Deadline(still_running=True)
        if "error" in box:
            raise box["error"]
        return box["value"]

    return join


def in_thread(fn: Callable[[], Any], timeout: Optional[float] = None, name: str = "miniagents-worker") -> Any:
    """Run `fn()` in a daemon thread and wait for it (at most `timeout` seconds)."""
    return start_thread(fn, name)(timeout)


def resolve(value: Any, timeout: Optional[float] = None) -> Any:
    """Return `value`, or the result of awaiting it when it is awaitable (cancelled past `timeout`)."""
    if isinstance(value, AlreadyDone):  # computed already: no event loop needed
        return value._result()
    if not inspect.isawaitable(value):
        return value
    from .errors import UserError, needs

    asyncio = needs("asyncio", "an async function (a tool, guardrail, hook or session method)")

    async def wait() -> Any:
        task, loop, aborted = asyncio.ensure_future(value), asyncio.get_running_loop(), []

        def abort() -> None:  # from another thread: the run was cancelled
            aborted.append(True)
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop already ended: nothing left to stop
                pass

        with abortable(abort):
            try:
                return await (task if timeout is None else asyncio.wait_for(task, timeout))
            except asyncio.TimeoutError:
                raise Deadline() from None
            except asyncio.CancelledError:
                if not aborted and getattr(asyncio.current_task(), "cancelling", int)():  # Ctrl-C: asyncio.run
                    raise  # (3.11+) cancelled this task, and raises KeyboardInterrupt for it
                if not aborted:  # its own (a task it awaited was cancelled): its failure, not the run's cancel
                    raise UserError("An async function of this run raised asyncio.CancelledError, though the run was "
                                    "not cancelled: something it awaited was cancelled") from None
                raise Cancelled() from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the usual case
        return asyncio.run(wait())
    return in_thread(lambda: asyncio.run(wait()), name="miniagents-await")


@contextlib.contextmanager
def abortable(abort: Callable[[], None]) -> Iterator[None]:
    """While the block runs, `abort` is in the run's aborts (`CANCEL_CALLBACKS`): cancelling the run calls it."""
    aborts = CANCEL_CALLBACKS.get()
    if aborts is not None:
        aborts.append(abort)
    try:
        yield
    finally:
        if aborts is not None and abort in aborts:
            aborts.remove(abort)


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call `fn(*args, **kwargs)` and resolve the result."""
    return resolve(fn(*args, **kwargs))


def arity(fn: Callable) -> int:
    """Number of positional parameters `fn` takes (ignoring `self` on bound methods)."""
    params = inspect.signature(fn).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
