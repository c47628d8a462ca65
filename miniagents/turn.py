"""One turn after the model answered: classify its output, plan the calls, run them, decide.

DESIGN.md, idea 5: nothing runs until the plan says so. `classify_output` reads the response into
run items and calls; `plan_tool_calls` decides per call what happens (already done, unknown,
waiting for approval, rejected, run); `run_tools` executes the runnable calls concurrently;
`settle_turn` puts every output in the model's call order; `decide_next_step` picks the `NextStep`.
Re-running a paused turn with the outputs it already has is how a run resumes after approval, so
these functions never call the model and never run a call twice.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import caller
from .agent import FunctionToolResult, ToolsToFinalOutputResult
from .context import ToolContext
from .errors import ModelBehaviorError, ModelRefusalError, UserError
from .hooks import notify
from .items import (HandoffCallItem, MessageOutputItem, RawItem, ReasoningItem, ToolApprovalItem,
                    ToolCallItem, ToolCallOutputItem, assistant_message, function_call_output, message_refusal,
                    message_text, new_call_id)
from .config import RunErrorData, RunErrorHandlerInput, RunErrorHandlerResult
from .schema import type_schema
from .validate import ArgumentsError, validate_value
from .steps import (NextStepFinalOutput, NextStepHandoff, NextStepInterruption, NextStepRunAgain,
                    SingleStepResult)
from .tool import NestedInterruption, invoke_tool, output_text

logger = logging.getLogger("miniagents")
MULTIPLE_HANDOFFS = "Multiple handoffs detected, ignoring this one."
REJECTED = "Tool execution was not approved."


@dataclass(eq=False)
class Call:
    """One function call of the response and what the agent has under that name (None: unknown)."""

    raw: RawItem
    target: Any
    kind: str  # "function" | "handoff" | "unknown"


@dataclass(eq=False)
class ToolErrorFormatterArgs:
    """What `RunConfig.tool_error_formatter` receives when a call gets an error instead of running: `kind` is
    "tool_not_found" or "approval_rejected"; return text to replace `default_message`."""

    kind: str
    tool_type: str
    tool_name: str
    call_id: str
    default_message: str
    run_context: Any


@dataclass(eq=False)
class Processed:
    """`classify_output`'s reading of one response: its run items in model order, and the function calls
    (`Call`s) that `settle_turn` plans next."""

    items: list  # message / reasoning / call items, in model order
    calls: list = field(default_factory=list)


def assign_call_ids(output: list, taken: set) -> list:
    """Give every function call a call id not used earlier in the run (fixed once per response, so a
    resumed turn sees the same ids). Missing ids and ids reused from earlier turns get fresh ones."""
    fixed = []
    for item in output:
        if item.get("type") == "function_call" and (not item.get("call_id") or item["call_id"] in taken):
            item = {**item, "call_id": new_call_id()}
        fixed.append(item)
    return fixed


def classify_output(agent: Any, output: list, tools: dict, handoffs: dict, config: Any) -> Processed:
    """Turn output items into run items and calls (a call id repeated within the response is dropped)."""
    processed, seen = Processed(items=[]), set()
    for item in output:
        kind = item.get("type", "message" if item.get("role") == "assistant" else None)
        if kind == "message":
            processed.items.append(MessageOutputItem(agent=agent, raw_item=item))
        elif kind == "reasoning":
            processed.items.append(ReasoningItem(agent=agent, raw_item=item))
        elif kind == "function_call":
            call = RawItem(item)
            if call["call_id"] in seen:
                logger.warning("ignoring repeated call id %r in one response", call["call_id"])
                continue
            seen.add(call["call_id"])
            name = call.get("name") or ""
            if name in handoffs:
                processed.items.append(HandoffCallItem(agent=agent, raw_item=call))
                processed.calls.append(Call(call, handoffs[name], "handoff"))
                continue
            if name not in tools and config.tool_not_found_behavior == "raise_error":
                raise ModelBehaviorError(f"Tool {name} not found in agent {agent.name}")
            tool = tools.get(name)
            processed.items.append(ToolCallItem(agent=agent, raw_item=call,
                                                description=getattr(tool, "description", None)))
            processed.calls.append(Call(call, tool, "function" if tool else "unknown"))
        else:
            logger.warning("ignoring output item of unsupported type %r", kind)
    return processed


def _format_error(config: Any, ctx: Any, kind: str, call: RawItem, default: str) -> str:
    if config.tool_error_formatter is None:
        return default
    args = ToolErrorFormatterArgs(kind, "function", call.get("name", ""), call["call_id"], default, ctx)
    return caller.call(config.tool_error_formatter, args) or default


def _needs_approval(tool: Any, ctx: Any, call: RawItem) -> bool:
    flag = tool.needs_approval
    if not callable(flag):
        return bool(flag)
    try:
        params = json.loads(call.get("arguments") or "{}")
    except ValueError:
        params = {}
    return bool(caller.call(flag, ctx, params, call["call_id"]))


def plan_tool_calls(calls: list, ctx: Any, config: Any, done: dict, tools: dict) -> tuple:
    """Decide each function call's fate; return (to_run, settled {call_id: text}, approvals)."""
    to_run, settled, approvals = [], {}, []
    for call in calls:
        call_id, name = call.raw["call_id"], call.raw.get("name") or ""
        if call.kind == "handoff":
            continue
        if call_id in done:
            continue
        if call.kind == "unknown":
            default = f"Tool '{name}' not found. Available tools: {', '.join(sorted(tools)) or 'none'}."
            settled[call_id] = _format_error(config, ctx, "tool_not_found", call.raw, default)
            continue
        decision = ctx.is_tool_approved(name, call_id)
        if decision is None and not _needs_approval(call.target, ctx, call.raw):
            decision = True
        if decision is True:
            to_run.append(call)
        elif decision is False:
            message = ctx.rejection_message(name, call_id) or _format_error(
                config, ctx, "approval_rejected", call.raw, REJECTED)
            settled[call_id] = message
        else:
            approvals.append(call)
    return to_run, settled, approvals


def _run_one(call: Call, agent: Any, ctx: Any, config: Any, nested: dict, hooks: Any) -> tuple:
    """approval (done) -> input guardrails -> invoke -> output guardrails; returns (value, text, results).

    An agent-as-tool whose inner run paused returns its `NestedInterruption` as the value, text None.
    """
    tool, raw = call.target, call.raw
    tool_ctx = ToolContext(context=ctx.context, usage=ctx.usage, turn_input=ctx.turn_input,
                           approvals=ctx.approvals, tool_name=tool.name, tool_call_id=raw["call_id"],
                           tool_arguments=raw.get("arguments") or "", tool_call=raw, agent=agent,
                           run_config=config, resume_state=nested.get(raw["call_id"]))
    results: list = []
    if tool.tool_input_guardrails:
        from .guardrails import check_tool_input  # loaded only once some tool has guardrails

        rejected = check_tool_input(tool, tool_ctx, agent, results)
        if rejected is not None:
            return rejected, rejected, results
    notify(hooks, "on_tool_start", tool_ctx, agent, tool)
    try:
        value, text = invoke_tool(tool, tool_ctx, raw.get("arguments") or "")
    except NestedInterruption as paused:
        return paused, None, results
    notify(hooks, "on_tool_end", tool_ctx, agent, tool, value if value is not None else text)
    if tool.tool_output_guardrails:
        from .guardrails import check_tool_output

        rejected = check_tool_output(tool, tool_ctx, agent, value, results)
        if rejected is not None:
            return rejected, rejected, results
    return value, text, results


def run_tools(to_run: list, agent: Any, ctx: Any, config: Any, nested: dict, hooks: Any) -> list:
    """Run calls concurrently (threads), bounded by the config; results come back in call order.

    A call that raises (a propagating failure or tripwire) does not stop its siblings; after all
    have finished, the first such exception in call order is raised.
    """
    jobs: list = [lambda c=c: _run_one(c, agent, ctx, config, nested, hooks) for c in to_run]
    limit = config.max_function_tool_concurrency
    outcomes: list = []
    if len(jobs) <= 1 or limit == 1:
        for job in jobs:
            try:
                outcomes.append((True, job()))
            except Exception as e:
                outcomes.append((False, e))
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(jobs), limit or len(jobs))) as pool:
            futures = [pool.submit(job) for job in jobs]
            for future in futures:
                error = future.exception()
                outcomes.append((False, error) if error else (True, future.result()))
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


@dataclass(eq=False)
class Settled:
    """`settle_turn`'s outcome: the turn's items with every output in call order, plus what `decide_next_step`
    weighs (pending approvals, the winning handoff, function results)."""

    items: list  # the turn's run items in model order, outputs after their calls
    results: list  # FunctionToolResult per function call that has an output
    approvals: list  # ToolApprovalItem per call waiting for a person
    handoff: Optional[Call]  # the winning handoff call
    guardrail_results: list
    nested: dict  # call id -> paused RunState of an agent-as-tool call


def settle_turn(agent: Any, processed: Processed, ctx: Any, config: Any, done: dict, tools: dict,
                nested: dict, hooks: Any = None) -> Settled:
    """Plan, run and order one response's calls.

    `done` maps call ids that already have an output (from before a pause, or from the session)
    to `(value, text)`; those calls are never run again.
    """
    to_run, settled, approvals = plan_tool_calls(processed.calls, ctx, config, done, tools)
    ran = dict(zip((c.raw["call_id"] for c in to_run), run_tools(to_run, agent, ctx, config, nested, hooks)))
    approval_items = [ToolApprovalItem(agent=agent, raw_item=c.raw, tool_name=c.raw.get("name", ""))
                      for c in approvals]
    still_paused = {}
    for call_id, (value, text, _) in ran.items():
        if isinstance(value, NestedInterruption):
            still_paused[call_id] = value.state
            approval_items.extend(value.interruptions)
    items, results, outputs, guardrail_results = list(processed.items), [], [], []
    handoff_calls = [c for c in processed.calls if c.kind == "handoff"]
    for call in processed.calls:
        call_id = call.raw["call_id"]
        if call.kind == "handoff":
            if call is not handoff_calls[0]:
                outputs.append(ToolCallOutputItem(agent=agent, raw_item=function_call_output(
                    call_id, MULTIPLE_HANDOFFS), output=MULTIPLE_HANDOFFS))
            continue
        if call_id in still_paused:
            continue  # its inner run waits for approval: no output yet
        if call_id in ran:
            value, text, found = ran[call_id]
            guardrail_results.extend(found)
        elif call_id in done:
            value, text = done[call_id]
        elif call_id in settled:
            value, text = settled[call_id], settled[call_id]
        else:
            continue  # waiting for approval: no output yet
        item = ToolCallOutputItem(agent=agent, raw_item=function_call_output(call_id, text), output=value)
        outputs.append(item)
        if call.kind == "function":
            results.append(FunctionToolResult(tool=call.target, output=value, run_item=item))
    winner = handoff_calls[0] if handoff_calls else None
    return Settled(items + outputs, results, approval_items, winner, guardrail_results, still_paused)


def tools_final_output(agent: Any, results: list, ctx: Any) -> ToolsToFinalOutputResult:
    """Ask `tool_use_behavior` whether the tool results end the run."""
    behavior = agent.tool_use_behavior
    if behavior == "run_llm_again":
        return ToolsToFinalOutputResult(False)
    if behavior == "stop_on_first_tool":
        return ToolsToFinalOutputResult(True, results[0].output)
    if isinstance(behavior, dict):
        names = behavior["stop_at_tool_names"]
        for result in results:
            if result.tool.name in names:
                return ToolsToFinalOutputResult(True, result.output)
        return ToolsToFinalOutputResult(False)
    if callable(behavior):
        verdict = caller.call(behavior, ctx, results)
        if not isinstance(verdict, ToolsToFinalOutputResult):
            raise UserError(f"tool_use_behavior callable must return ToolsToFinalOutputResult, got {verdict!r}")
        return verdict
    raise UserError(f"Invalid tool_use_behavior: {behavior!r}")


class InvalidFinalOutput(ModelBehaviorError):
    """The final text does not parse into the agent's output_type; `.raw_text` keeps it."""

    def __init__(self, message: str, raw_text: str):
        super().__init__(message)
        self.raw_text = raw_text


def parse_final_output(output_type: Any, wrapped: bool, text: str) -> Any:
    try:
        data = json.loads(text)
        if wrapped:
            if not isinstance(data, dict) or "response" not in data:
                raise ArgumentsError("expected an object with a 'response' key")
            data = data["response"]
        return validate_value(output_type, data)
    except (ValueError, ArgumentsError) as e:
        detail = getattr(e, "message", None) or str(e)
        raise InvalidFinalOutput(f"Invalid JSON when parsing model output: {detail}. Raw text: {text!r}",
                                 text) from None


def decide_next_step(agent: Any, processed: Processed, settled: Settled, ctx: Any, structured: bool,
                     wrapped: bool, handle_error: Callable) -> SingleStepResult:
    """Approval pending > handoff > tool_use_behavior > final output (no calls ran) > run again.

    `handle_error(kind, error, items, results, run_again=False)` applies the run's error handlers.
    """
    items, results, approvals, winner = settled.items, settled.results, settled.approvals, settled.handoff
    if approvals:
        return SingleStepResult(items, NextStepInterruption(approvals), results)
    if winner is not None:
        return SingleStepResult(items, NextStepHandoff(winner), results)
    if results:
        verdict = tools_final_output(agent, results, ctx)
        if verdict.is_final_output:
            output = verdict.final_output
            if agent.output_type in (None, str) and not isinstance(output, str):
                output = str(output)
            return SingleStepResult(items, NextStepFinalOutput(output), results)
    if processed.calls:
        return SingleStepResult(items, NextStepRunAgain(), results)
    messages = [i for i in processed.items if isinstance(i, MessageOutputItem)]
    last = messages[-1].raw_item if messages else None
    refusal = message_refusal(last) if last is not None else None
    if refusal is not None:
        return handle_error("model_refusal", ModelRefusalError(refusal), items, results)
    text = message_text(last) if last is not None else ""
    if not structured:
        return SingleStepResult(items, NextStepFinalOutput(text), results)
    if not text:
        error = ModelBehaviorError("Model returned no final output for the structured output type.")
        return handle_error("invalid_final_output", error, items, results, run_again=True)
    try:
        return SingleStepResult(items, NextStepFinalOutput(
            parse_final_output(agent.output_type, wrapped, text)), results)
    except InvalidFinalOutput as e:
        return handle_error("invalid_final_output", e, items, results)


# --- Output types and error handlers ---------------------------------------------------------

_schema_cache: dict = {}


def output_schema_for(output_type: Any) -> tuple:
    """`(spec or None, wrapped)` for an agent's output_type, computed once per type."""
    if output_type in (None, str):
        return None, False
    try:
        return _schema_cache[output_type]
    except (KeyError, TypeError):
        schema, wrapped = type_schema(output_type, strict=True)
        found = ({"name": "final_output", "schema": schema, "strict": True}, wrapped)
        try:
            _schema_cache[output_type] = found
        except TypeError:
            pass
        return found


def apply_error_handler(handlers: dict, kind: str, error: Exception, state: Any, agent: Any,
                        items: list, results: list, run_again: bool = False) -> SingleStepResult:
    """Let a run's `error_handlers` turn an error into a final output (validated against the output
    type), or re-raise it; `run_again` covers "no final text yet" when no handler is set."""
    handler = (handlers or {}).get(kind)
    if handler is None:
        if run_again:
            return SingleStepResult(items, NextStepRunAgain(), results)
        raise error
    data = RunErrorData(state.original_input, state.generated_items + items, list(state.transcript),
                        [i.raw_item for i in items], state.model_responses, agent)
    verdict = caller.call(handler, RunErrorHandlerInput(error, state.context_wrapper, data))
    if verdict is None:
        raise error
    if isinstance(verdict, dict):
        if set(verdict) - {"final_output", "include_in_history"}:
            raise UserError("Invalid run error handler result.")
        verdict = RunErrorHandlerResult(**verdict)
    if not isinstance(verdict, RunErrorHandlerResult):
        verdict = RunErrorHandlerResult(verdict)
    output = verdict.final_output
    schema, wrapped = output_schema_for(agent.output_type)
    if schema is not None and isinstance(output, str):
        output = parse_final_output(agent.output_type, wrapped, output)
    elif schema is not None and isinstance(output, (dict, list)):  # JSON data: build the output type
        output = validate_value(agent.output_type, output)
    if verdict.include_in_history:
        items = items + [MessageOutputItem(agent=agent, raw_item=assistant_message(output_text(output)))]
    return SingleStepResult(items, NextStepFinalOutput(output), results)
