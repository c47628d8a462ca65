"""Guardrails: checks on the run's input, its final output, and each tool call's input and output.

A guardrail is a function plus a name; running one returns a result object. Tripwires become the
exceptions in `errors.py`; the loop (run.py, turn.py) decides when each kind runs. An exception
raised inside a guardrail function propagates: a check that crashed never counts as "passed".
Unlike upstream, input guardrails block by default (`run_in_parallel=False`): a tripwire means no
model call and no tool ran.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional

from . import caller, seams
from .context import TContext
from .errors import (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered,
                     ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered, UserError)


@dataclass
class GuardrailFunctionOutput:
    """What an input or output guardrail function returns: `tripwire_triggered` stops the run with the
    matching tripwire exception; `output_info` is whatever the check wants to report."""

    output_info: Any
    tripwire_triggered: bool


@dataclass(eq=False)
class InputGuardrailResult:
    """One input guardrail's verdict, kept in `RunResult.input_guardrail_results`; its tripwire carries it."""

    guardrail: "InputGuardrail"
    output: GuardrailFunctionOutput


@dataclass(eq=False)
class OutputGuardrailResult:
    """One output guardrail's verdict on the final output it checked, with the agent that produced it."""

    guardrail: "OutputGuardrail"
    agent_output: Any
    agent: Any
    output: GuardrailFunctionOutput


@dataclass(eq=False)
class InputGuardrail(Generic[TContext]):
    """`guardrail_function(ctx, agent, input)`, sync or async, returns `GuardrailFunctionOutput`."""

    guardrail_function: Callable
    name: Optional[str] = None
    run_in_parallel: bool = False

    def get_name(self) -> str:
        return self.name or getattr(self.guardrail_function, "__name__", "input_guardrail")

    def run(self, agent: Any, input: Any, context: Any) -> "InputGuardrailResult":
        """Check `input`."""
        output = _checked(caller.call(self.guardrail_function, context, agent, input), self.get_name())
        return InputGuardrailResult(guardrail=self, output=output)


@dataclass(eq=False)
class OutputGuardrail(Generic[TContext]):
    """`guardrail_function(ctx, agent, output)`, sync or async, returns `GuardrailFunctionOutput`."""

    guardrail_function: Callable
    name: Optional[str] = None

    def get_name(self) -> str:
        return self.name or getattr(self.guardrail_function, "__name__", "output_guardrail")

    def run(self, context: Any, agent: Any, agent_output: Any) -> "OutputGuardrailResult":
        """Check the final output."""
        output = _checked(caller.call(self.guardrail_function, context, agent, agent_output), self.get_name())
        return OutputGuardrailResult(guardrail=self, agent_output=agent_output, agent=agent, output=output)


def run_input_guardrails(run: Any, guardrails: list, agent: Any, input: Any, results: list) -> None:
    """Run each guardrail in order, appending its result; the first tripwire raises. Each is given its own copy
    of a list `input` (`items.copied`): one that edits it in place (a redaction before its check) never rewrites
    the run's input, which the session keeps as the user's words."""
    from .items import copied

    context = run.state.context_wrapper
    _until_tripwire(run, "input", guardrails, lambda g: g.run(agent, copied(input), context),
                    InputGuardrailTripwireTriggered, results)


def run_output_guardrails(run: Any, guardrails: list, agent: Any, output: Any, results: list) -> None:
    """Run each guardrail on the final output in order, appending its result; the first tripwire raises."""
    context = run.state.context_wrapper
    _until_tripwire(run, "output", guardrails, lambda g: g.run(context, agent, output),
                    OutputGuardrailTripwireTriggered, results)


BLOCKED_OUTPUT = "Output withheld by an output guardrail."


def withhold_rejected_output(run: Any, items: list, results: list, trip: OutputGuardrailTripwireTriggered) -> None:
    """An output guardrail rejected the final output: the final turn's `items` are kept without it, so the
    session, the state and the error's run data never hold what was rejected (upstream's rule). A final
    message is dropped; a tool output that ended the run (`tool_use_behavior`) keeps its place, so its call
    still has an output, with a data-free text instead: `BLOCKED_OUTPUT`, or what the plugins' `blocked_output`
    seam makes of it (upstream's `output_guardrail_blocked_message`). That text also replaces what could
    carry the output: the tripwire's `agent_output` (its `output_info` is cleared) and what the turn's tool
    output guardrails reported (in `results`, the turn's tool guardrail results)."""
    from .items import MessageOutputItem, ToolCallOutputItem, function_call_output

    state = run.state
    outputs = [i for i in items if isinstance(i, ToolCallOutputItem)]
    if outputs:
        text = seams.change(run.plugins, "blocked_output", run, trip, BLOCKED_OUTPUT) if run.plugins else BLOCKED_OUTPUT
        for item in outputs:
            item.raw_item, item.output, item.custom_data = function_call_output(item.call_id, text), text, None
        trip.guardrail_result.agent_output, trip.guardrail_result.output.output_info = text, None
        for result in (r for r in results if r.stage == "output"):
            result.output.output_info = text
            if "message" in result.output.behavior:
                result.output.behavior = {**result.output.behavior, "message": text}
        return
    message = next((i for i in reversed(items) if isinstance(i, MessageOutputItem)), None)
    if message is not None:
        items.remove(message)
        state.generated_items[:] = [i for i in state.generated_items if i is not message]


def _until_tripwire(run: Any, kind: str, guardrails: list, check: Callable, tripwire: type, results: list) -> None:
    """Run each guardrail once the previous one passed, through the `guardrail` seam; raise at a trip."""
    for guardrail in guardrails:
        step = seams.GuardrailStep(guardrail.get_name(), kind)
        with seams.around(run.plugins, "guardrail", run, step):
            result = check(guardrail)
            step.triggered = result.output.tripwire_triggered
        results.append(result)
        if step.triggered:
            raise tripwire(result)


def _checked(output: Any, name: str) -> GuardrailFunctionOutput:
    if not isinstance(output, GuardrailFunctionOutput):
        raise TypeError(f"guardrail {name!r} must return GuardrailFunctionOutput, got {type(output).__name__}")
    return output


def _decorator(cls: type, func: Optional[Callable], name: Optional[str], **options: Any) -> Any:
    """Both forms of every guardrail decorator: bare (`@input_guardrail`) and called (`@input_guardrail(name=...)`)."""
    def make(fn: Callable) -> Any:  # a callable object or a partial has no __name__: `get_name` falls back
        return cls(guardrail_function=fn, name=name or getattr(fn, "__name__", None), **options)

    return make(func) if func is not None else make


def input_guardrail(func: Optional[Callable] = None, *, name: Optional[str] = None,
                    run_in_parallel: bool = False):
    """Make an `InputGuardrail` from `fn(ctx, agent, input) -> GuardrailFunctionOutput`."""
    return _decorator(InputGuardrail, func, name, run_in_parallel=run_in_parallel)


def output_guardrail(func: Optional[Callable] = None, *, name: Optional[str] = None):
    """Make an `OutputGuardrail` from `fn(ctx, agent, output) -> GuardrailFunctionOutput`."""
    return _decorator(OutputGuardrail, func, name)


# --- Tool guardrails -------------------------------------------------------------------------


@dataclass
class ToolGuardrailFunctionOutput:
    """`behavior` is `{"type": "allow"}`, `{"type": "reject_content", "message": ...}` or
    `{"type": "raise_exception"}`."""

    output_info: Any = None
    behavior: dict = field(default_factory=lambda: {"type": "allow"})

    @classmethod
    def allow(cls, output_info: Any = None) -> "ToolGuardrailFunctionOutput":
        return cls(output_info=output_info)

    @classmethod
    def reject_content(cls, message: str, output_info: Any = None) -> "ToolGuardrailFunctionOutput":
        return cls(output_info=output_info, behavior={"type": "reject_content", "message": message})

    @classmethod
    def raise_exception(cls, output_info: Any = None) -> "ToolGuardrailFunctionOutput":
        return cls(output_info=output_info, behavior={"type": "raise_exception"})


@dataclass(eq=False)
class ToolInputGuardrailData:
    """What a tool input guardrail receives just before the call runs (after approval): the call's
    `ToolContext` (tool name, call id, arguments) and the agent."""

    context: Any  # the ToolContext of the call
    agent: Any


@dataclass(eq=False)
class ToolOutputGuardrailData(ToolInputGuardrailData):
    """What a tool output guardrail receives: the same as for input, plus the value the tool returned."""

    output: Any = None


@dataclass(eq=False)
class ToolInputGuardrail(Generic[TContext]):
    """`guardrail_function(data)`, sync or async, returns `ToolGuardrailFunctionOutput`; runs before each call
    of a tool that lists it in `tool_input_guardrails`."""

    guardrail_function: Callable
    name: Optional[str] = None

    def get_name(self) -> str:
        return self.name or getattr(self.guardrail_function, "__name__", type(self).__name__)

    def run(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        """Check one call."""
        output = caller.call(self.guardrail_function, data)
        if not isinstance(output, ToolGuardrailFunctionOutput):
            raise TypeError(f"tool guardrail {self.get_name()!r} must return ToolGuardrailFunctionOutput, "
                            f"got {type(output).__name__}")
        behavior = output.behavior
        kind = behavior.get("type") if isinstance(behavior, dict) else None
        if kind not in ("allow", "reject_content", "raise_exception") or (
                kind == "reject_content" and not isinstance(behavior.get("message"), str)):
            raise UserError(f"tool guardrail {self.get_name()!r} returned the behavior {behavior!r:.200}; it must be "
                            '{"type": "allow"}, {"type": "reject_content", "message": <text for the model>} or '
                            '{"type": "raise_exception"} (ToolGuardrailFunctionOutput.allow() and its siblings)')
        return output


@dataclass(eq=False)
class ToolOutputGuardrail(ToolInputGuardrail[TContext]):
    """Like `ToolInputGuardrail`, but it runs after the tool, on the value the tool returned."""
    pass


@dataclass(eq=False)
class ToolInputGuardrailResult:
    """One tool input guardrail's verdict on one call, kept in `RunResult.tool_input_guardrail_results`."""

    guardrail: ToolInputGuardrail
    output: ToolGuardrailFunctionOutput
    stage = "input"  # which RunResult list it belongs to (a class attribute, not a field)


@dataclass(eq=False)
class ToolOutputGuardrailResult:
    """One tool output guardrail's verdict on one call, kept in `RunResult.tool_output_guardrail_results`."""

    guardrail: ToolOutputGuardrail
    output: ToolGuardrailFunctionOutput
    stage = "output"


def tool_input_guardrail(func: Optional[Callable] = None, *, name: Optional[str] = None):
    """Make a `ToolInputGuardrail` from `fn(data) -> ToolGuardrailFunctionOutput`."""
    return _decorator(ToolInputGuardrail, func, name)


def tool_output_guardrail(func: Optional[Callable] = None, *, name: Optional[str] = None):
    """Make a `ToolOutputGuardrail` from `fn(data) -> ToolGuardrailFunctionOutput`."""
    return _decorator(ToolOutputGuardrail, func, name)


# Each list of guardrails -> the kind it holds and the decorator that makes one from a function.
KINDS = {"input_guardrails": (InputGuardrail, "input_guardrail"),
         "output_guardrails": (OutputGuardrail, "output_guardrail"),
         "tool_input_guardrails": (ToolInputGuardrail, "tool_input_guardrail"),
         "tool_output_guardrails": (ToolOutputGuardrail, "tool_output_guardrail")}


def check_guardrails(owner: str, made: Any, *names: str) -> None:
    """The lists `names` of `made` (an agent, a tool, a run configuration, called `owner` in the error) hold only
    guardrails of their kind, checked where it is made: a plain function (its decorator forgotten), or anything
    else, is a `TypeError`, as for its other fields, that names the decorator; so is a guardrail whose function is
    not callable."""
    for name in names:
        kind, decorator = KINDS[name]
        for guardrail in getattr(made, name) or ():
            if not isinstance(guardrail, kind):
                raise TypeError(f"{owner} {name} must be {kind.__name__} objects (decorate functions with "
                                f"@{decorator}), got {type(guardrail).__name__}")
            if not callable(guardrail.guardrail_function):  # else a bare "not callable" when the run reaches it
                raise TypeError(f"{owner} {name}: {guardrail.get_name()!r} has a guardrail_function of type "
                                f"{type(guardrail.guardrail_function).__name__}, which is not callable")


def check_tool_input(run: Any, tool: Any, context: Any, agent: Any, results: list) -> Optional[str]:
    """Run a call's input guardrails before the tool: the text the model sees instead, if one rejects."""
    data = ToolInputGuardrailData(context=context, agent=agent)
    return _run_tool_guardrails(run, "tool_input", tool.tool_input_guardrails, data, ToolInputGuardrailResult,
                                ToolInputGuardrailTripwireTriggered, results)


def check_tool_output(run: Any, tool: Any, context: Any, agent: Any, output: Any, results: list) -> Optional[str]:
    """Run a call's output guardrails on its result: the text the model sees instead, if one rejects."""
    data = ToolOutputGuardrailData(context=context, agent=agent, output=output)
    return _run_tool_guardrails(run, "tool_output", tool.tool_output_guardrails, data, ToolOutputGuardrailResult,
                                ToolOutputGuardrailTripwireTriggered, results)


def _run_tool_guardrails(run: Any, kind: str, guardrails: list, data: Any, result_cls: Any, tripwire: Any,
                         results: list) -> Optional[str]:
    """Run each in order, recording its verdict: a rejection ends the checks with its message, a raise trips."""
    for guardrail in guardrails or ():
        step = seams.GuardrailStep(guardrail.get_name(), kind)
        with seams.around(run.plugins, "guardrail", run, step):
            verdict = guardrail.run(data)
            step.triggered = verdict.behavior["type"] != "allow"
        results.append(result_cls(guardrail, verdict))
        if verdict.behavior["type"] == "raise_exception":
            raise tripwire(guardrail, verdict)
        if verdict.behavior["type"] == "reject_content":
            return verdict.behavior["message"]
    return None
