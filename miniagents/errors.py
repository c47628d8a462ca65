"""The exception hierarchy.

Every exception a run raises is an `AgentsException`. Those raised mid-run carry `run_data`
(a `RunErrorDetails`) with what was done before the failure, so nothing the run produced is lost. What goes
wrong without stopping a run is logged with `warn`. This module imports nothing else from the package.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(eq=False)
class RunErrorDetails:
    """The partial run attached to an exception: input, items, responses, last agent, context."""

    input: Any
    new_items: list
    raw_responses: list
    last_agent: Any
    context_wrapper: Any
    input_guardrail_results: list = field(default_factory=list)
    output_guardrail_results: list = field(default_factory=list)
    tool_input_guardrail_results: list = field(default_factory=list)
    tool_output_guardrail_results: list = field(default_factory=list)


def warn(message: str, *args: Any, **kwargs: Any) -> None:
    """Log a warning on the package's logger (miniagents, or the name a vendored copy has). `logging` is imported
    here, the first time something is logged: a run that goes well logs nothing, and importing `logging` costs
    more than any module of the kernel."""
    import logging

    logging.getLogger(__name__.rpartition(".")[0]).warning(message, *args, stacklevel=2, **kwargs)


class AgentsException(Exception):
    """Base class of every miniagents error; `message` is what went wrong."""

    run_data: Optional[RunErrorDetails] = None

    def __init__(self, message: str = ""):
        self.message = message
        super().__init__(message)


class MaxTurnsExceeded(AgentsException):
    """The run made `max_turns` model calls without reaching a final output."""


class ModelBehaviorError(AgentsException):
    """The model did something the run cannot accept (unknown tool when told to raise, bad output)."""


class UserError(AgentsException):
    """The program using miniagents is misconfigured."""


class ModelRefusalError(AgentsException):
    def __init__(self, refusal: str):
        self.refusal = refusal
        super().__init__(f"Model refused to produce output: {refusal}")


class ModelTimeoutError(AgentsException):
    def __init__(self, timeout_seconds: float):
        self.timeout_seconds = timeout_seconds
        super().__init__(f"Model call timed out after {timeout_seconds:g} seconds.")


class ModelHTTPError(AgentsException):
    """A model endpoint answered with an error status (or an in-band error event)."""

    def __init__(self, status: Optional[int], message: str, *, type: Optional[str] = None,
                 code: Optional[str] = None, param: Optional[str] = None,
                 request_id: Optional[str] = None, body: Any = None):
        where = f"HTTP {status}" if status is not None else "stream error"
        detail = "".join(f" {k}={v}" for k, v in (("type", type), ("code", code)) if v)
        rid = f" (request id {request_id})" if request_id else ""
        super().__init__(f"{where}:{detail} {message}{rid}")
        self.status, self.message, self.type, self.code = status, message, type, code  # message: the server's
        self.param, self.request_id, self.body = param, request_id, body
        self.retry_headers: dict = {}  # the answer's Retry-After and x-should-retry headers, for a retry policy


class ToolTimeoutError(AgentsException):
    """A tool did not return within its timeout. `still_running`: it was a sync function, which cannot be stopped:
    it goes on and may still complete, so the text the model sees says its effects may still happen."""

    def __init__(self, tool_name: str, timeout_seconds: float, still_running: bool = False):
        self.tool_name, self.timeout_seconds, self.still_running = tool_name, timeout_seconds, still_running
        text = f"Tool '{tool_name}' timed out after {timeout_seconds:g} seconds."
        if still_running:
            text += " It could not be stopped and may still complete: what it does may still happen."
        super().__init__(text)


class InputGuardrailTripwireTriggered(AgentsException):
    def __init__(self, guardrail_result: Any):
        self.guardrail_result = guardrail_result
        super().__init__(f"Guardrail {type(guardrail_result.guardrail).__name__} triggered tripwire")


class OutputGuardrailTripwireTriggered(AgentsException):
    def __init__(self, guardrail_result: Any):
        self.guardrail_result = guardrail_result
        super().__init__(f"Guardrail {type(guardrail_result.guardrail).__name__} triggered tripwire")


class ToolInputGuardrailTripwireTriggered(AgentsException):
    def __init__(self, guardrail: Any, output: Any):
        self.guardrail, self.output = guardrail, output
        super().__init__(f"Tool input guardrail {type(guardrail).__name__} triggered tripwire")


class ToolOutputGuardrailTripwireTriggered(AgentsException):
    def __init__(self, guardrail: Any, output: Any):
        self.guardrail, self.output = guardrail, output
        super().__init__(f"Tool output guardrail {type(guardrail).__name__} triggered tripwire")


class AlreadyResumedError(AgentsException):
    """A paused state (or one a usage limit stopped between turns) was resumed again with the session that keeps
    its ledger, after another resume of it took it (a retried webhook, a second worker): nothing ran, nothing was
    written, no model was called.
    `outcome` is what that resume recorded: "completed" (its turn is in the session's history), "paused again"
    (resume the state it returned), or None (it is still running, or it stopped before it finished)."""

    def __init__(self, run_id: str, turn: int, outcome: Optional[str]):
        said = {"completed": "it completed, and the session holds its turn",
                "paused again": "it paused again: resume the state it returned"}.get(
                    outcome, "it is still running, or it stopped before it finished")
        super().__init__(f"This run's state (run {run_id}, turn {turn}) was already resumed with this session: "
                         f"{said}. Nothing was run or written again.")
        self.run_id, self.turn, self.outcome = run_id, turn, outcome


class SessionStoreError(AgentsException):
    """The session's database cannot be used (the message names it, says what to do and, for a write, whether it
    was stored; docs/sessions.md lists the cases). The driver's exception is the `__cause__`; its text is not
    copied (it may name hosts or users)."""


class UnfinishedTurnError(AgentsException):
    """A run was given new input on a session whose journal holds a turn in flight: a run whose process died
    mid-turn (continue it first: run the agent on the session with no input, `[]`), a run paused for approval
    after calls of its turn ran (resume its state, or continue with `[]` to be given the pause again), or another
    run going on in this session right now. Nothing was run or written."""

    def __init__(self, session_id: str, run_id: str, turn: int):
        super().__init__(f"Session {session_id!r} has an unfinished turn (run {run_id}, turn {turn}): its process "
                         "died mid-turn, it paused for approval after some of its calls ran, or another run is going "
                         "on in this session. Continue it with no new input (Runner.run_sync(agent, [], "
                         "session=session)), or resume the paused state, before giving new input. Nothing was run "
                         "or written.")
        self.session_id, self.run_id, self.turn = session_id, run_id, turn


class UsageLimitExceeded(AgentsException):
    """A run reached one of its `UsageLimits` (`limit` names it: "request_limit", "tool_calls_limit", ...; `value`
    is the limit, `count` what the run would have reached). Nothing more ran; `state` is the run's `RunState`,
    which resumes where it stopped: `Runner.run_sync(agent, error.state, run_config=RunConfig(usage_limits=...))`
    with a higher limit."""

    def __init__(self, limit: str, value: int, count: int):
        super().__init__(f"Usage limit exceeded: {limit}={value} (the run would reach {count})")
        self.limit, self.value, self.count, self.state = limit, value, count, None


class MissingFeatureError(AgentsException, ImportError):
    """A feature this copy of miniagents or this Python lacks: a shell folder a vendored copy left out, or a
    standard-library module a minimal build omits (`_sqlite3`, `zlib`). `feature` says what needs it, `name` the
    module path that is missing. An ImportError, so `import` statements fail as they always do."""

    def __init__(self, feature: str, missing: str, remedy: str, name: str):
        super().__init__(f"{feature} needs {missing}, which {remedy}")
        self.feature, self.name = feature, name


def needs(module: str, feature: str) -> Any:
    """`import module` for a kernel module whose `feature` needs it: `MissingFeatureError` if this Python lacks it (or
    this copy lacks a module of its own: a shell's file deleted)."""
    import importlib
    import sys

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        name = error.name or module
        ours = name.startswith(__name__.rpartition(".")[0] + ".")  # a file of this copy, not a module of the Python
        raise MissingFeatureError(feature, f"the {'' if ours else 'standard-library '}module {name!r}",
                                  "this copy of miniagents lacks (deleted, or never copied)" if ours
                                  else f"this Python ({sys.executable}) was built without: use a Python that has it",
                                  name) from error


def file_name(path: Any, what: str, error: type = UserError) -> Any:
    """`path` as the system's calls take it (`os.fspath`); `error` naming `what` for what is no path (None, a
    number), holds a NUL character or a character the file system's encoding lacks (a lone surrogate: those
    `os.fsdecode` made of undecodable bytes encode back), which those calls refuse with a bare TypeError,
    ValueError or UnicodeEncodeError."""
    import os

    try:
        name = os.fspath(path)
        encoded = os.fsencode(name)
    except TypeError:
        raise error(f"{what} must be a str or an os.PathLike, got {type(path).__name__}") from None
    except UnicodeEncodeError:
        raise error(f"{what} cannot be encoded as a file name (a lone surrogate?): {name!r}") from None
    if b"\0" in encoded:
        raise error(f"{what} cannot hold a NUL character: {name!r}")
    return name
