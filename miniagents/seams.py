"""Every seam of the kernel on one page: where an optional part plugs into a run.

The kernel is the loop and what it cannot do without. Everything else — tracing, retries the run manages,
capabilities, upstream's import paths, sessions on other databases — is a *shell*: a folder of miniagents/
that imports the kernel and is never imported by it. A shell that takes part in runs does it through a
`Plugin`: an object with methods named after the seams below, registered once (`register`, usually when the
shell is imported), or given to one run (`Runner.run_sync(..., plugins=[...])`). Upstream's `RunHooks` and
`AgentHooks` are such a per-run plugin, made by the upstream shell's runner (`upstream.hooks.HookPlugin`); so
tracing and hooks are two users of the same seams, not two code paths in the turn.

Three kinds of seam:

- **around a step** (`run`, `turn`, `model_call`, `tool_call`, `handoff`, `guardrail`): the method returns a
  context manager, or None for nothing to do. It is entered just before the step and left just after it
  (with the step's exception, if it failed), in the thread that runs the step, so what it makes current
  (a trace span, a context variable) is current inside the step. Before it is left, the step's record
  (the `*Step` classes below) holds what the step produced. It may not change the step, nor suppress its error:
  what its `__exit__` returns is ignored, and the error goes on to the other plugins and the run.
- **an event** (`agent_started`, `agent_ended`, `approval`, `final_output`): called; returns nothing.
- **a change** (`prepare_run`, `session_input`, `offer`, `model_input`, `model`, `error_text`, `blocked_output`,
  `answer_error`, `invoke`): returns what the kernel uses instead of what it passed (the same object when the
  plugin has nothing to change). What it returns is checked (`RETURNS`): a value its seam cannot take is a
  `UserError` naming the plugin and the seam, never a TypeError later, deep in the turn.

Plugins see steps in registration order, the run's own plugins last, and leave around-seams in reverse order.
A plugin that raises makes the step fail as if the step had raised.

With no plugin active a run pays one check per seam and runs no plugin code; the records are plain data.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
from dataclasses import dataclass
from importlib.machinery import ModuleSpec, PathFinder
from typing import Any, Optional

from .errors import MissingFeatureError, UserError, needs, warn
from .items import described

plugins: tuple = ()  # every run's plugins: replaced (never mutated), so a run that started keeps its own
NOTHING = contextlib.nullcontext()  # what the kernel enters around a step when no plugin is active

PACKAGE = __name__.rpartition(".")[0]  # this package's name: miniagents, or a vendored copy's
# The shells a whole copy of miniagents has: folder -> the feature, for the error a copy without it raises.
SHELLS = {
    "tracing": f"tracing (traces and spans for in-process processors, `python -m {PACKAGE}.tracing`)",
    "retry": "retries the run manages (`ModelSettings(retry=ModelRetrySettings(...))`)",
    "capabilities": "capabilities and the Workspace",
    "dbapi": "sessions on any DB-API 2.0 database (`DBAPISession`)",
    "upstream": "compatibility with upstream's programs (its names, import paths and rules)",
    "recording": "recording a run and replaying it offline",
    "mcp": "tools from MCP servers (`MCPServerStdio`)",
    "vendor": f"copying miniagents into a project (`python -m {PACKAGE}.vendor`)",
    "testing": "the offline model that plays back scripted answers (`ScriptedModel`)",
}


class Plugin:
    """The seams, one method each; this base does nothing, so a plugin overrides only what it needs.

    `run` is the kernel's run in progress (`turn.Run`): `run.state` is the `RunState`, `run.config` the
    `RunConfig`; a plugin may keep what it needs for one run in `run.scratch[self]`."""

    # --- Around a step ------------------------------------------------------------------------------

    def run(self, run: Any) -> Optional[contextlib.AbstractContextManager]:
        """Around one drive of the loop: a run from its start, or a paused one resumed, until it returns
        (final output, pause, cancel) or raises. Nested runs (an agent used as a tool) are inside their
        caller's `tool_call`."""
        return None

    def turn(self, run: Any, step: "TurnStep") -> Optional[contextlib.AbstractContextManager]:
        """Around one turn: from resolving the agent's offer to deciding the next step (a resumed turn too)."""
        return None

    def model_call(self, run: Any, step: "ModelStep") -> Optional[contextlib.AbstractContextManager]:
        """Around one call of the model, retries included; `step.response` is set when it answered."""
        return None

    def tool_call(self, run: Any, step: "ToolStep") -> Optional[contextlib.AbstractContextManager]:
        """Around one function call's invocation (after its approval and tool input guardrails, before its
        output guardrails); `step.value`/`step.text` are set when it returned, `step.error` when the tool
        raised and the model was told `step.text` instead."""
        return None

    def handoff(self, run: Any, step: "HandoffStep") -> Optional[contextlib.AbstractContextManager]:
        """Around the winning handoff's invocation; `step.to_agent` is set when the new agent is known."""
        return None

    def guardrail(self, run: Any, step: "GuardrailStep") -> Optional[contextlib.AbstractContextManager]:
        """Around one guardrail's check (input, output, tool input, tool output); `step.triggered` is set."""
        return None

    # --- Events --------------------------------------------------------------------------------------

    def agent_started(self, run: Any, agent: Any) -> None:
        """`agent` takes the conversation: the run started (or resumed) with it, or a handoff chose it."""

    def agent_ended(self, run: Any, agent: Any, error: Optional[BaseException]) -> None:
        """`agent`'s stretch of the run ended: it handed off, the run finished, paused, was cancelled, or raised
        `error` (an `AgentsException`; None otherwise)."""

    def approval(self, run: Any, tool_name: str, call_id: str, decision: str) -> None:
        """A call needs a person: `decision` is "pending" (the run pauses), "approved" or "rejected"."""

    def final_output(self, run: Any, agent: Any, output: Any) -> None:
        """The run ends with `output` from `agent` (after the output guardrails passed)."""

    # --- Changes -------------------------------------------------------------------------------------

    def prepare_run(self, run: Any) -> None:
        """The run is about to start (or a paused one to resume), before any model call: refuse what cannot work
        (raise `UserError`), and make what this run needs (kept in `run.scratch[self]`). `run.agents` lists every
        agent it can reach now; one met later (a hand-built `Handoff` gives its agent when called) joins it before
        its first `offer`, so make what such an agent needs there too."""

    def session_input(self, run: Any, history: list, new_items: list, items: list) -> list:
        """A new run with a session is about to start (asked once, before `prepare_run`; a resumed state has its
        input already): `history` is what the session holds, as it gave it, `new_items` the run's new input, and
        `items` what the run starts from (the history without orphaned calls or outputs, then the new input, or what
        a plugin before returned). Return it, or the input items to start from instead (upstream's
        `session_input_callback`). Only `new_items` joins the session, with the first turn, whatever is returned."""
        return items

    def offer(self, run: Any, setup: Any) -> Any:
        """What the agent offers the model this turn (`turn.TurnSetup`: instructions, tools, handoffs,
        settings); return it, or a changed copy (`dataclasses.replace`)."""
        return setup

    def model_input(self, run: Any, setup: Any, items: list) -> Any:
        """The items about to be sent to the model this turn, with `setup.instructions` as its system prompt:
        return them, or the list to send instead, or a pair `(instructions, items)` to change the instructions too
        (upstream's `call_model_input_filter`); the next plugin gets `setup` with them."""
        return items

    def model(self, run: Any, setup: Any, model: Any) -> Any:
        """The `Model` this turn calls; return it, or one that wraps it (retries, recording)."""
        return model

    def error_text(self, run: Any, call: Any, kind: str, text: str) -> str:
        """A function call gets an error instead of running: `kind` is "tool_not_found" (the agent has no tool of
        that name) or "approval_rejected" (a person rejected it with no message of their own); `text` is what the
        model is told (the kernel's text, or what a plugin before returned). Return it, or the text to tell the
        model instead (upstream's `tool_error_formatter`)."""
        return text

    def blocked_output(self, run: Any, trip: Any, text: str) -> str:
        """An output guardrail rejected a final output that a tool gave (`tool_use_behavior`): its call keeps an
        output, `text` (the kernel's "Output withheld by an output guardrail.", or what a plugin before returned),
        which the session, the state and the error's run data hold in place of what was rejected. Return it, or
        the text to keep instead (upstream's `output_guardrail_blocked_message`); it must not carry the rejected
        output, which `trip` (the `OutputGuardrailTripwireTriggered` about to be raised) holds."""
        return text

    def answer_error(self, run: Any, turn: Any, error: Any) -> Any:
        """A turn ended in an error a run may answer (`turn.NextStepError`: its `kind` and `error`); return it
        unchanged to let the kernel go on (another turn when `error.run_again`, else the error stops the run), a
        `turn.NextStepFinalOutput` to end the run with that output, or raise."""
        return error

    def invoke(self, run: Any, invoke: Any) -> Any:
        """How a function call is invoked: `invoke(run, turn, call, ctx) -> (value, text)` runs the tool (its
        guardrails, the `tool_call` seam, the ledger's record of its outcome); return it, or a function wrapping it.
        What the wrapper does after `invoke` returned happens once the outcome is recorded, so it never makes the
        call run again; it may set `call.custom_data` (kept on the output item and in RunState JSON, never sent to
        the model). `call.fate` is "done" when the ledger found the call ran before (it did not run now)."""
        return invoke


# --- The records a step fills in (what around-seams read before they are left) --------------------------


@dataclass(eq=False)
class TurnStep:
    agent: Any
    number: int  # the run's turn count, 1-based
    resumed: bool


@dataclass(eq=False)
class ModelStep:
    agent: Any
    model: Any
    instructions: Optional[str]
    input: list
    settings: Any
    response: Any = None


@dataclass(eq=False)
class ToolStep:
    agent: Any
    tool: Any
    context: Any  # the call's ToolContext
    arguments: str
    value: Any = None
    text: Any = None
    error: Optional[BaseException] = None


@dataclass(eq=False)
class HandoffStep:
    from_agent: Any
    handoff: Any
    to_agent: Any = None


@dataclass(eq=False)
class GuardrailStep:
    name: str
    kind: str  # "input" | "output" | "tool_input" | "tool_output"
    triggered: bool = False


# --- Registration and dispatch -----------------------------------------------------------------------


def register(plugin: Plugin) -> None:
    """Make `plugin` take part in every run that starts from now on (once, however often registered). A shell
    loaded again (dropped from sys.modules and imported anew, or reloaded) registers a new plugin of a new class
    of the same module and name: it takes the place of its earlier load's, or each of the shell's rules ran twice
    in every run (a callback, a custom data extractor, a span exported twice)."""
    global plugins
    if plugin not in plugins:
        kept = tuple(p for p in plugins if not _reloaded(type(p), type(plugin)))
        at = next((n for n, p in enumerate(plugins) if p not in kept), len(kept))
        plugins = kept[:at] + (plugin,) + kept[at:]


def _reloaded(old: type, new: type) -> bool:
    """Whether `new` is `old` loaded again: another class of the same module-level name."""
    return old is not new and "<locals>" not in new.__qualname__ and \
        (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)


def checked(plugins: Any) -> tuple:
    """A run's own plugins (`Runner.run_sync(..., plugins=[...])`, `as_tool(plugins=...)`), checked when given."""
    if not isinstance(plugins, (list, tuple)) or not all(isinstance(plugin, Plugin) for plugin in plugins):
        raise UserError("plugins must be a list of seams.Plugin objects (subclass Plugin and override the seams you "
                        f"need), got {described(plugins)}")
    return tuple(plugins)


def around(plugins: tuple, seam: str, run: Any, *step: Any) -> contextlib.AbstractContextManager:
    """The plugins' context managers for one around-seam, entered as one (a plain no-op when there are none). Each
    sees the step's error; none can suppress it (what its `__exit__` returns is ignored): a step whose error vanished
    left no result for the turn to read (a run 'completed' with no output, or failed later with a bare KeyError)."""
    stack = contextlib.ExitStack()
    try:
        for plugin in plugins:
            manager = getattr(plugin, seam)(run, *step)
            if manager is not None:
                manager.__enter__()
                stack.push(lambda *error, leave=manager.__exit__: leave(*error) and False)
    except BaseException:
        stack.__exit__(*sys.exc_info())  # those entered are left with the error, as a failed step leaves them
        raise
    return stack


def emit(plugins: tuple, seam: str, run: Any, *args: Any) -> None:
    """Call an event seam on every plugin."""
    for plugin in plugins:
        getattr(plugin, seam)(run, *args)


def change(plugins: tuple, seam: str, run: Any, *args: Any) -> Any:
    """Pass a value through a change seam: each plugin gets what the one before returned (the last argument)."""
    *fixed, value = args
    for plugin in plugins:
        value = returned(plugin, seam, getattr(plugin, seam)(run, *fixed, value), value)
    return value


def _items(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _final_output(value: Any, error: Any) -> bool:
    """Whether `value` is a `turn.NextStepFinalOutput`, told by the module it shares with `error` (a
    `turn.NextStepError`): this page never imports the turn."""
    return type(value).__name__ == "NextStepFinalOutput" and type(value).__module__ == type(error).__module__


# What a change seam's plugin may return, given what it was passed: the check, and the words for it.
RETURNS = {
    "session_input": (lambda value, given: _items(value), "a list of input items (dicts)"),
    "offer": (lambda value, given: type(value) is type(given), "the setup it was given, or a changed copy "
                                                               "(dataclasses.replace)"),
    "model_input": (lambda value, given: _items(value) or (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (str, type(None))) and _items(value[1])),
        "the input items (a list of dicts), or a pair (instructions: a str or None, items)"),
    "model": (lambda value, given: callable(getattr(value, "get_response", None))
              and callable(getattr(value, "stream_response", None)), "a Model (get_response, stream_response)"),
    "error_text": (lambda value, given: isinstance(value, str), "a str"),
    "blocked_output": (lambda value, given: isinstance(value, str), "a str"),
    "answer_error": (lambda value, given: _final_output(value, given),
                     "the error it was given, or a NextStepFinalOutput"),
    "invoke": (lambda value, given: callable(value), "a function: invoke(run, turn, call, ctx) -> (value, text)"),
}


def returned(plugin: Plugin, seam: str, value: Any, given: Any) -> Any:
    """`value`, what `plugin`'s change seam returned, when it is what the seam may return; else a `UserError` that
    names the plugin, the seam and what it must return (never the value: it may hold the run's data)."""
    if value is given:  # nothing changed
        return value
    check, expected = RETURNS[seam]
    if not check(value, given):
        raise UserError(f"Plugin {type(plugin).__name__}'s {seam} returned {type(value).__name__}: it must return "
                        f"{expected}")
    return value


# --- Shells by name ------------------------------------------------------------------------------------
# The kernel never imports a shell. It names one only here: to load it when a run's configuration asks for its
# feature (`RunConfig(trace_path=...)`), and to explain, in a copy of miniagents that left it out, why a name or
# module path of that shell is missing. The package never names itself: it is whatever `__name__` says, so a copy
# vendored as `myproj._vendor.miniagents` finds its own shells and never another copy's.


def missing(what: str, shell: str) -> MissingFeatureError:
    """The error for `what` (a name, a module path, an option) of a shell this copy lacks."""
    return MissingFeatureError(what, f"{SHELLS[shell]}: the shell folder {PACKAGE}/{shell}/",
                               "this copy of miniagents does not have (copy that folder back from a full miniagents "
                               "to use it)", f"{PACKAGE}.{shell}")


def load_shell(shell: str, what: Optional[str] = None) -> Any:
    """Import the shell `<package>.<shell>`; `MissingFeatureError` (naming what needs it) when it was left out, or
    when this Python lacks a standard-library module the shell imports (`select`, `_posixsubprocess`)."""
    if not present(shell):
        raise missing(what or f"{PACKAGE}.{shell}", shell)
    return needs(f"{PACKAGE}.{shell}", f"{what} (the shell {PACKAGE}.{shell})" if what else f"{PACKAGE}.{shell}")


def load_asked_for(configuration: Any) -> None:
    """Load the shells a configuration asks for when it is made: tracing for `RunConfig(trace_path=...)`, the
    retries the run manages for `ModelSettings(retry=...)`."""
    if getattr(configuration, "trace_path", None):
        load_shell("tracing", "RunConfig(trace_path=...)")
    if getattr(configuration, "retry", None) is not None:
        load_shell("retry", "ModelSettings(retry=...)")


_warned: set = set()


def ask_for(shell: str, what: str) -> None:
    """Load a shell the environment asks for (`MINIAGENTS_TRACE`); in a copy without it, warn once and go on."""
    try:
        load_shell(shell, what)
    except MissingFeatureError as error:
        if shell not in _warned:
            _warned.add(shell)
            warn("%s; the run goes on without it", error)


def present(shell: str) -> bool:
    """Whether this copy of miniagents has the shell folder (found without importing it)."""
    return PathFinder.find_spec(f"{PACKAGE}.{shell}", sys.modules[PACKAGE].__path__) is not None


class ShellFinder:
    """Last on `sys.meta_path`: a module path of a shell this copy lacks (`<package>.tracing.tree`), or a name the
    package cannot give imported from it (`from <package> import Workspace` or `SQLiteSession`, which looks for a
    submodule first), raises the `MissingFeatureError` that says what is missing instead of a bare ImportError."""

    def __init__(self, package: str):
        self.package = package

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[ModuleSpec]:
        prefix, _, rest = fullname.partition(self.package + ".")
        first = rest.split(".")[0]
        module = first if first in SHELLS else getattr(sys.modules.get(self.package), "_LAZY", {}).get(first, "")
        shell = module.split(".")[0]
        if prefix or not module:
            return None
        if shell not in SHELLS:  # a kernel name whose module did not load: importing it says why
            importlib.import_module(f"{self.package}.{module}")
        else:  # a shell left out, or one this Python cannot import, raises its MissingFeatureError
            load_shell(shell, fullname if first in SHELLS else first)
        return None


def install_finder() -> None:
    if not any(isinstance(f, ShellFinder) and f.package == PACKAGE for f in sys.meta_path):
        sys.meta_path.append(ShellFinder(PACKAGE))
