"""Upstream's `error_handlers`: a run's errors answered with a final output instead of raised.

`Runner.run_sync(agent, input, error_handlers={"max_turns": handler})` (upstream's runner, this shell's) keeps
the handlers on the run's `RunConfig`; `answer` is `UpstreamPlugin`'s `answer_error` seam. A handler receives a
`RunErrorHandlerInput` and returns the final output (a `RunErrorHandlerResult`, a dict of its fields, or any other
value, which is the final output itself), or None to let the error raise. The kinds are "max_turns",
"model_refusal", "invalid_final_output" and "usage_limit".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic

from .. import caller
from ..agent_output import output_schema
from ..context import TContext
from ..errors import ModelBehaviorError, UserError
from ..items import FAKE_ID, MessageOutputItem, assistant_message
from ..turn import NextStepError, NextStepFinalOutput
from .raw_items import RawItem


@dataclass(eq=False)
class RunErrorData:
    """The run so far, as an error handler sees it: the original input, every item generated (this turn's
    included), the transcript, this turn's raw output items, the model responses and the failing agent."""

    input: Any
    new_items: list
    history: list
    output: list
    raw_responses: list
    last_agent: Any


@dataclass(eq=False)
class RunErrorHandlerInput(Generic[TContext]):
    """What a handler in `error_handlers={kind: handler}` receives. A handler that returns None lets `error`
    raise."""

    error: Exception
    context: Any
    run_data: RunErrorData


@dataclass
class RunErrorHandlerResult:
    """A handler's answer: `final_output` ends the run (parsed into the agent's `output_type`) and, with
    `include_in_history`, is also recorded as an assistant message. A bare value or such a dict also works."""

    final_output: Any
    include_in_history: bool = True


def answer(run: Any, turn: Any, error: NextStepError) -> Any:
    """The run's handler for `error.kind` answers it with a final output (validated against the output type, and
    recorded as an assistant message unless it says otherwise), or raises the error when it returns None. With no
    handler for that kind, `error` goes back to the kernel unchanged."""
    handler = (getattr(run.config, "error_handlers", None) or {}).get(error.kind)
    if handler is None:
        return error
    state, agent = run.state, run.state.current_agent
    data = RunErrorData(state.original_input, list(state.generated_items), list(state.transcript),
                        [i.raw_item for i in turn.items], state.model_responses, agent)
    verdict = caller.call(handler, RunErrorHandlerInput(error.error, state.context_wrapper, data))
    if verdict is None:
        raise error.error
    if isinstance(verdict, dict) and "final_output" in verdict:  # a RunErrorHandlerResult as a dict
        if set(verdict) - {"final_output", "include_in_history"}:
            raise UserError("Invalid run error handler result.")
        verdict = RunErrorHandlerResult(**verdict)
    if not isinstance(verdict, RunErrorHandlerResult):  # any other value is the final output
        verdict = RunErrorHandlerResult(verdict)
    output, schema = verdict.final_output, output_schema(agent.output_type)
    if not schema.is_plain_text():
        try:
            if isinstance(output, str):
                output = schema.validate_json(output)
            elif isinstance(output, (dict, list)):  # JSON data: build the output type
                output = schema.validate_data(output)
        except ModelBehaviorError:
            raise UserError("Invalid run error handler final_output for structured output.") from None
    if verdict.include_in_history:
        try:
            text = schema.model_text(output)
        except (TypeError, RecursionError) as e:  # kept in the history as the model would have written it
            raise UserError(f"Invalid run error handler final_output: {e}, so it cannot be kept in the history "
                            "(include_in_history=False keeps it out)") from None
        message = RawItem(assistant_message(text, FAKE_ID))  # upstream's is a typed message
        item = MessageOutputItem(agent=agent, raw_item=message)
        turn.items.append(item)
        state.generated_items.append(item)
    return NextStepFinalOutput(output)
