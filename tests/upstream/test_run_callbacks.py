"""Upstream's `RunConfig` callbacks (miniagents/upstream/run_callbacks.py), each on a kernel seam that
`UpstreamPlugin` answers: `session_input_callback` (`session_input`), `call_model_input_filter` (`model_input`),
`tool_error_formatter` (`error_text`) and `output_guardrail_blocked_message` (`blocked_output`).

The kernel's `RunConfig` has none of them (Python's own TypeError), and a plain run never loads the shell. Each
callback is also tried hostile: one that raises (its own error stops the run, nothing half-saved, a paused state
still resumes), one that returns the wrong type (a `UserError` saying what it must return), an async one, in a
streamed run and in a resumed one. The two formatters are upstream's exception: one that raises or returns no text
leaves the default text, logged, and the run goes on.
"""
from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading

import pytest

from miniagents import (Agent, OutputGuardrailTripwireTriggered, RunConfig as KernelRunConfig, Runner, SQLiteSession,
                        UserError, function_tool, output_guardrail, GuardrailFunctionOutput)
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.upstream import (CallModelData, ModelInputData, OutputGuardrailBlockedMessageArgs, RunConfig,
                                 ToolErrorFormatterArgs)
from support import ROOT, block_everything, make_agent, outputs_sent, secret_agent

REJECTED = "Tool execution was not approved."
WITHHELD = "Output withheld by an output guardrail."
UNKNOWN = "Tool 'nope' not found. Available tools: ping."


class Refused(Exception):
    """A callback's own error: the run stops with it, unchanged."""


def refuse(*args):
    raise Refused("no")


def streamed(agent, input, **options):
    """Drive a streamed run to its end; (the result, its events)."""
    result = Runner.run_streamed(agent, input, **options)

    async def read():
        return [event async for event in result.stream_events()]
    return result, asyncio.run(read())


async def drain(result):
    """Read a streamed run to its end; its events' item types."""
    return [getattr(event, "item", event).type async for event in result.stream_events()]


def history(session):
    return asyncio.run(session.get_items())


# --- The kernel has none of them, and a plain run never loads the shell ----------------------------------------


@pytest.mark.parametrize("field", ["session_input_callback", "call_model_input_filter", "tool_error_formatter",
                                   "output_guardrail_blocked_message"])
def test_the_kernels_run_config_takes_none_of_upstreams_callbacks(field):
    with pytest.raises(TypeError, match=field):
        KernelRunConfig(**{field: lambda *args: None})
    assert getattr(RunConfig(), field) is None  # the shell's has each, unset


def test_a_plain_run_takes_no_step_for_them_and_loads_no_shell():
    """A kernel run with a session, an unknown tool, a rejected call and an output guardrail that rejects a tool's
    final output gets the kernel's texts and input, and never imports upstream/ (so no line of it runs)."""
    code = """
import sys
from miniagents import (Agent, GuardrailFunctionOutput, OutputGuardrailTripwireTriggered, Runner, SQLiteSession,
                        function_tool, output_guardrail)
from miniagents.testing import ScriptedModel, assistant_message, function_call

@function_tool(needs_approval=True)
def wipe(path: str) -> str:
    return "wiped"

@function_tool
def read() -> str:
    return "SECRET"

@output_guardrail
def block(ctx, agent, output):
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

session = SQLiteSession("s")
model = ScriptedModel([[function_call("nope", "{}", call_id="c1"), function_call("wipe", {"path": "a"}, call_id="c2")]])
agent = Agent(name="A", tools=[wipe], model=model)
paused = Runner.run_sync(agent, "go", session=session)
state = paused.to_state()
state.reject(paused.interruptions[0])
model.enqueue([assistant_message("done")])
assert Runner.run_sync(agent, state, session=session).final_output == "done"
sent = {i["call_id"]: i["output"] for i in model.calls[1].input if i.get("type") == "function_call_output"}
assert sent == {"c1": "Tool 'nope' not found. Available tools: wipe.", "c2": "Tool execution was not approved."}
vault = Agent(name="V", tools=[read], tool_use_behavior="stop_on_first_tool", output_guardrails=[block],
              model=ScriptedModel([[function_call("read", "{}", call_id="c3")]]))
try:
    Runner.run_sync(vault, "go", session=session)
except OutputGuardrailTripwireTriggered:
    pass
assert session.get_items()[-1]["output"] == "Output withheld by an output guardrail."
print(sorted(m for m in sys.modules if m.startswith("miniagents.upstream")))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_run_with_no_plugin_never_takes_the_model_input_step():
    from miniagents import run as run_module, steps
    from miniagents.run import Options, start_run

    agent, _ = make_agent([[assistant_message("x")]])
    run = start_run(agent, "hi", Options())
    run.plugins = ()
    run_module.choose(run)
    assert steps.filter_input not in run.fresh


# --- session_input_callback -----------------------------------------------------------------------------------


def seeded_session():
    session = SQLiteSession("s")
    session.add_items([{"role": "user", "content": "old question"}, assistant_message("old answer")])
    return session


def test_the_session_input_callback_decides_what_the_run_starts_from_and_only_the_new_input_is_saved():
    seen = []

    def newest_only(history, new_items):
        seen.append(([i.get("role") for i in history], [i["content"] for i in new_items]))
        new_items.append({"role": "user", "content": "smuggled"})  # its own copy: the saved input is unchanged
        return new_items

    session = seeded_session()
    agent, model = make_agent([[assistant_message("fresh answer")]])
    Runner.run_sync(agent, "new question", session=session, run_config=RunConfig(session_input_callback=newest_only))
    assert seen == [(["user", "assistant"], ["new question"])]
    assert [i.get("content") for i in model.calls[0].input] == ["new question", "smuggled"]
    assert [i.get("content") for i in history(session)][2] == "new question" and len(history(session)) == 4


def test_an_async_session_input_callback_is_awaited_in_a_streamed_run():
    async def reverse(history, new_items):
        return new_items + history

    session = seeded_session()
    agent, model = make_agent([[assistant_message("ok")]])
    result, _ = streamed(agent, "first", session=session, run_config=RunConfig(session_input_callback=reverse))
    assert result.final_output == "ok"
    assert [i.get("content") for i in model.calls[0].input][:2] == ["first", "old question"]


@pytest.mark.parametrize("answer, message", [
    (None, "Session input callback must return a list of input items."),
    ((), "Session input callback must return a list of input items."),
    ([{"role": "robot", "content": "x"}], r"Session input callback returned an input item \[0\] that has role"),
    (["text"], r"returned an input item \[0\] that is not an object"),
])
def test_a_session_input_callback_returning_the_wrong_type_is_a_user_error_and_nothing_is_saved(answer, message):
    session = seeded_session()
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent, "new", session=session,
                        run_config=RunConfig(session_input_callback=lambda history, new_items: answer))
    assert model.calls == () and len(history(session)) == 2


def test_a_session_input_callback_that_raises_stops_the_run_with_its_own_error_before_anything_happens():
    session = seeded_session()
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(Refused):
        Runner.run_sync(agent, "new", session=session, run_config=RunConfig(session_input_callback=refuse))
    with pytest.raises(Refused):
        streamed(agent, "new", session=session, run_config=RunConfig(session_input_callback=refuse))
    assert model.calls == () and len(history(session)) == 2


@pytest.mark.parametrize("field", ["session_input_callback", "call_model_input_filter", "tool_error_formatter"])
def test_a_callback_that_is_not_callable_is_refused_when_the_config_is_made(field):
    with pytest.raises(UserError, match=f"RunConfig.{field} must be a callable or None"):
        RunConfig(**{field: "not callable"})


# --- call_model_input_filter --------------------------------------------------------------------------------


@function_tool
def echo(text: str) -> str:
    return text


def test_a_call_model_input_filter_must_return_model_input_data():
    agent, _ = make_agent([[assistant_message("x")]])
    config = RunConfig(call_model_input_filter=lambda data: data.model_data.input)
    with pytest.raises(UserError, match="call_model_input_filter must return a ModelInputData instance"):
        Runner.run_sync(agent, "hi", run_config=config)


def test_the_filter_sees_the_agent_and_context_and_sets_the_items_and_instructions_sent():
    seen = []

    def only_users(data: CallModelData) -> ModelInputData:
        seen.append((data.agent.name, data.context, data.model_data.instructions))
        kept = [i for i in data.model_data.input if i.get("role") == "user" or i.get("type") == "function_call"]
        return ModelInputData(input=kept, instructions=f"{data.model_data.instructions} Be brief.")

    model = ScriptedModel([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="Brief", instructions="Help.", tools=[echo], model=model)
    result = Runner.run_sync(agent, "hi", context={"user": 1}, run_config=RunConfig(call_model_input_filter=only_users))
    assert result.final_output == "done"
    assert seen == [("Brief", {"user": 1}, "Help.")] * 2  # each turn's own instructions, not the last filter's
    assert [c.system_instructions for c in model.calls] == ["Help. Be brief."] * 2
    assert [i.get("role") or i.get("type") for i in model.calls[1].input] == ["user"]  # the orphaned call dropped


def test_an_output_for_a_call_the_server_holds_is_sent_through_the_filter_too():
    """With a conversation on the server, an output whose call is not in the local transcript answers the call
    the server holds: the filter's items keep it, as the kernel's transcript does."""
    held = {"type": "function_call_output", "call_id": "c9", "output": "42"}
    agent, model = make_agent([[assistant_message("done")]])
    result = Runner.run_sync(agent, [held, {"role": "user", "content": "and now?"}], conversation_id="conv",
                             run_config=RunConfig(call_model_input_filter=lambda data: data.model_data))
    assert result.final_output == "done"
    assert [i.get("type") or i.get("role") for i in model.calls[0].input] == ["function_call_output", "user"]


@pytest.mark.parametrize("in_place", [False, True])
def test_an_output_whose_call_the_filter_took_out_is_an_orphan_not_one_the_server_holds(in_place):
    """A filter that hides the calls from the model, in a server-managed run: what it was given had the call, so
    the server never held it; its output was sent alone (the API refuses it) where the filter promises it dropped.
    An output whose call what the filter was given lacks is still the server's, even if the filter edits the list
    it was given."""
    def hide_calls(data):
        items = data.model_data.input
        if in_place:
            items[:] = [i for i in items if i.get("type") != "function_call"]
        return ModelInputData(items if in_place else [i for i in items if i.get("type") != "function_call"],
                              data.model_data.instructions)
    given = [{"role": "user", "content": "look it up"},
             {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "42"},
             {"type": "function_call_output", "call_id": "c9", "output": "7"}, {"role": "user", "content": "and?"}]
    agent, model = make_agent([[assistant_message("done")]])
    Runner.run_sync(agent, given, previous_response_id="resp_0",
                    run_config=RunConfig(call_model_input_filter=hide_calls))
    assert [(i.get("type") or i["role"], i.get("call_id")) for i in model.calls[0].input] == [
        ("user", None), ("function_call_output", "c9"), ("user", None)]


def test_an_async_filter_is_awaited_in_a_streamed_run_and_after_a_resume():
    async def tag(data):
        return ModelInputData(data.model_data.input + [{"role": "user", "content": "(filtered)"}], "Tagged.")

    @function_tool(needs_approval=True)
    def wipe(path: str) -> str:
        return f"wiped {path}"

    model = ScriptedModel([[function_call("wipe", {"path": "a"}, call_id="c1")]])
    agent = Agent(name="A", tools=[wipe], model=model)
    config = RunConfig(call_model_input_filter=tag)
    paused, _ = streamed(agent, "go", run_config=config)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    model.enqueue([assistant_message("done")])
    result, _ = streamed(agent, state, run_config=config)
    assert result.final_output == "done"
    assert [c.system_instructions for c in model.calls] == ["Tagged.", "Tagged."]
    assert [c.input[-1].get("content") for c in model.calls] == ["(filtered)", "(filtered)"]
    assert outputs_sent(model.calls[1]) == {"c1": "wiped a"}


@pytest.mark.parametrize("answer, message", [
    (ModelInputData(None, "x"), "whose input is a list of input items and whose instructions are a text or None, "
                                "got input of type NoneType"),
    (ModelInputData([], 42), "got input of type list and instructions of type int"),
    (ModelInputData([{"role": "robot", "content": "x"}], None), r"returned an input item \[0\] that has role"),
])
def test_a_filter_returning_model_input_data_of_the_wrong_shape_is_a_user_error(answer, message):
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent, "hi", run_config=RunConfig(call_model_input_filter=lambda data: answer))
    assert model.calls == ()


def test_a_filter_that_raises_stops_the_run_with_its_own_error_and_a_session_keeps_nothing_of_the_turn():
    session = seeded_session()
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(Refused):
        Runner.run_sync(agent, "hi", session=session, run_config=RunConfig(call_model_input_filter=refuse))
    with pytest.raises(Refused):
        streamed(agent, "hi", session=session, run_config=RunConfig(call_model_input_filter=refuse))
    assert model.calls == () and len(history(session)) == 2


def test_the_filter_comes_before_the_reasoning_id_policy():
    def keep(data):
        return ModelInputData(list(data.model_data.input), data.model_data.instructions)

    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    model = ScriptedModel([[reasoning, function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]])
    agent = Agent(name="A", tools=[echo], model=model)
    Runner.run_sync(agent, "hi", run_config=RunConfig(call_model_input_filter=keep, reasoning_item_id_policy="omit"))
    sent = [i for i in model.calls[1].input if i.get("type") == "reasoning"]
    assert sent and all("id" not in i for i in sent)


# --- tool_error_formatter -----------------------------------------------------------------------------------


def make_wipe(log):
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(("delete_file", path))
        return f"deleted {path}"
    return delete_file


def paused(model, log, *first_turn):
    """Run until the first turn pauses; returns (agent, result)."""
    model.enqueue(list(first_turn))
    agent = Agent("Janitor", instructions="Keep the disk tidy.", tools=[make_wipe(log)], model=model)
    return agent, Runner.run_sync(agent, "tidy up")


def delete(path, call_id):
    return function_call("delete_file", {"path": path}, call_id=call_id)


def test_tool_error_formatter_with_kind_approval_rejected_changes_the_default_text():
    log, model, seen = [], ScriptedModel(), []

    def formatter(args):
        seen.append((args.kind, args.tool_name, args.call_id, args.default_message))
        return f"{args.tool_name} was declined by the operator" if args.kind == "approval_rejected" else None

    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0])
    model.enqueue([assistant_message("ok")])
    Runner.run_sync(agent, state, run_config=RunConfig(tool_error_formatter=formatter))
    assert seen == [("approval_rejected", "delete_file", "c1", REJECTED)]
    assert outputs_sent(model.calls[1]) == {"c1": "delete_file was declined by the operator"}


def test_an_explicit_rejection_message_wins_over_the_tool_error_formatter():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0], rejection_message="verbatim")
    model.enqueue([assistant_message("ok")])
    Runner.run_sync(agent, state, run_config=RunConfig(tool_error_formatter=lambda args: "formatted"))
    assert outputs_sent(model.calls[1]) == {"c1": "verbatim"}


@function_tool
def ping() -> str:
    return "pong"


def test_a_tool_error_formatter_can_reword_the_unknown_tool_message():
    def formatter(args):
        return f"{args.kind}: no tool called {args.tool_name!r} (call {args.call_id})"

    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    Runner.run_sync(agent, "go", run_config=RunConfig(tool_error_formatter=formatter))
    assert outputs_sent(model.calls[1]) == {"c1": "tool_not_found: no tool called 'nope' (call c1)"}


def test_an_async_formatter_is_awaited_and_a_streamed_run_streams_its_text():
    seen = []

    async def formatter(args: ToolErrorFormatterArgs):
        seen.append((args.tool_type, args.run_context.context))
        return "no such tool"

    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    result, events = streamed(agent, "go", context="ctx", run_config=RunConfig(tool_error_formatter=formatter))
    assert result.final_output == "ok" and seen == [("function", "ctx")]
    assert outputs_sent(model.calls[1]) == {"c1": "no such tool"}
    assert [e.item.output for e in events if e.type == "run_item_stream_event"
            and e.item.type == "tool_call_output_item"] == ["no such tool"]


@pytest.mark.parametrize("answer", [None, ""])
def test_a_formatter_with_no_text_leaves_the_kernels(answer):
    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    Runner.run_sync(agent, "go", run_config=RunConfig(tool_error_formatter=lambda args: answer))
    assert outputs_sent(model.calls[1]) == {"c1": UNKNOWN}


async def refuse_later(args):
    raise Refused("no")


@pytest.mark.parametrize("answer", [42, ["text"], {"text": "x"}, b"SECRET-DATA"])
def test_a_formatter_returning_something_else_than_text_leaves_the_kernels_and_logs_its_type(answer, caplog):
    """As upstream: the model is told the default message, the log names the type (never the value), the run goes
    on."""
    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        result = Runner.run_sync(agent, "go", run_config=RunConfig(tool_error_formatter=lambda args: answer))
    assert result.final_output == "ok" and outputs_sent(model.calls[1]) == {"c1": UNKNOWN}
    [record] = [r for r in caplog.records if "tool_error_formatter" in r.getMessage()]
    assert f"returned {type(answer).__name__}" in record.getMessage() and "SECRET" not in record.getMessage()


@pytest.mark.parametrize("formatter", [refuse, refuse_later])
def test_a_formatter_that_raises_leaves_the_kernels_text_and_says_so_on_the_log(formatter, caplog):
    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        result, events = streamed(agent, "go", run_config=RunConfig(tool_error_formatter=formatter))
    assert result.final_output == "ok" and outputs_sent(model.calls[1]) == {"c1": UNKNOWN}
    [record] = [r for r in caplog.records if "tool_error_formatter raised" in r.getMessage()]
    assert record.exc_info[0] is Refused


def test_a_formatter_that_raises_in_a_resumed_run_leaves_the_rejection_text_and_nothing_runs():
    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0])
    document = state.to_json()
    model.enqueue([assistant_message("ok")])
    model.enqueue([assistant_message("ok")])
    resumed = Runner.run_sync(agent, state, run_config=RunConfig(tool_error_formatter=refuse))
    again, _ = streamed(agent, type(state).from_json(agent, document),
                        run_config=RunConfig(tool_error_formatter=lambda args: args))
    assert resumed.final_output == again.final_output == "ok" and log == []
    assert outputs_sent(model.calls[1]) == outputs_sent(model.calls[2]) == {"c1": REJECTED}


def test_a_run_cancelled_while_its_formatter_awaits_stops_unanswered_and_a_resume_asks_the_formatter_again():
    """A cancel is no failure of the formatter's: the call is not answered with the default text, so the state the
    cancelled run leaves asks the formatter again when it resumes."""
    started, cancelled = threading.Event(), []

    async def never_answers(args):
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(args.call_id)
            raise

    log, model = [], ScriptedModel()
    agent, result = paused(model, log, delete("a.txt", "c1"))
    state = result.to_state()
    state.reject(result.interruptions[0])
    stopped = Runner.run_streamed(agent, state, run_config=RunConfig(tool_error_formatter=never_answers))
    canceller = threading.Thread(target=lambda: (started.wait(30), stopped.cancel()))
    canceller.start()
    streamed_events = asyncio.run(drain(stopped))
    canceller.join()
    assert cancelled == ["c1"] and len(model.calls) == 1 and "tool_call_output_item" not in streamed_events
    model.enqueue([assistant_message("ok")])
    resumed = Runner.run_sync(agent, stopped.to_state(), run_config=RunConfig(tool_error_formatter=lambda a: "no"))
    assert resumed.final_output == "ok" and log == [] and outputs_sent(model.calls[1]) == {"c1": "no"}


def test_a_formatter_interrupted_by_ctrl_c_is_not_swallowed():
    """Only an Exception falls back, as upstream catches only those: a KeyboardInterrupt still stops the run."""
    def interrupt(args):
        raise KeyboardInterrupt

    agent, model = make_agent([[function_call("nope", "{}", call_id="c1")], [assistant_message("ok")]], tools=[ping])
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(agent, "go", run_config=RunConfig(tool_error_formatter=interrupt))
    assert len(model.calls) == 1


# --- output_guardrail_blocked_message -------------------------------------------------------------------------





@pytest.mark.parametrize("configured, expected", [
    ("Withheld.", "Withheld."),
    (lambda args: f"{args.guardrail_name} withheld {args.agent.name}'s output", "block_everything withheld Vault's "
                                                                                 "output"),
    (lambda args: None, "Output withheld by an output guardrail."),
    (lambda args: "", "Output withheld by an output guardrail."),
    (lambda args: 1 / 0, "Output withheld by an output guardrail."),
])
def test_run_config_sets_the_text_of_a_rejected_tool_output(configured, expected):
    session = SQLiteSession("s")
    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(secret_agent(), "go", session=session,
                        run_config=RunConfig(output_guardrail_blocked_message=configured))
    assert history(session)[-1]["output"] == expected


def test_a_blocked_message_formatter_gets_the_default_and_the_context_never_the_output():
    seen = []

    def formatter(args):
        seen.append(args)
        return "no"

    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(secret_agent(), "go", context={"user": 7},
                        run_config=RunConfig(output_guardrail_blocked_message=formatter))
    (args,) = seen
    assert args.default_message == "Output withheld by an output guardrail." and args.run_context.context == {"user": 7}
    assert "SECRET-DATA" not in repr(vars(args))


async def later(args):
    return "later"


@pytest.mark.parametrize("configured", ["", 42, later])
def test_a_blocked_message_setting_is_checked_when_the_config_is_made(configured):
    with pytest.raises(UserError, match="output_guardrail_blocked_message must be a non-empty text, a synchronous"):
        RunConfig(output_guardrail_blocked_message=configured)


def test_a_formatter_that_raises_leaves_the_default_and_says_so_on_the_log(caplog):
    session = SQLiteSession("s")
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        with pytest.raises(OutputGuardrailTripwireTriggered) as info:
            Runner.run_sync(secret_agent(), "go", session=session,
                            run_config=RunConfig(output_guardrail_blocked_message=refuse))
    assert history(session)[-1]["output"] == WITHHELD and info.value.guardrail_result.agent_output == WITHHELD
    [record] = [r for r in caplog.records if "output_guardrail_blocked_message raised" in r.getMessage()]
    assert record.exc_info[0] is Refused and "SECRET-DATA" not in record.getMessage()


def test_an_async_formatter_hidden_in_an_object_is_never_awaited_and_the_default_is_kept():
    class Later:
        def __init__(self):
            self.calls = 0

        async def __call__(self, args):
            self.calls += 1  # never reached: the coroutine is closed unrun
            return "late"

    formatter = Later()
    session = SQLiteSession("s")
    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(secret_agent(), "go", session=session,
                        run_config=RunConfig(output_guardrail_blocked_message=formatter))
    assert history(session)[-1]["output"] == WITHHELD and formatter.calls == 0


def test_a_streamed_run_streams_and_saves_the_blocked_message_never_the_output():
    session = SQLiteSession("s")

    def formatter(args: OutputGuardrailBlockedMessageArgs):
        return f"{args.guardrail_name} said no"

    with pytest.raises(OutputGuardrailTripwireTriggered) as info:
        streamed(secret_agent(), "go", session=session,
                 run_config=RunConfig(output_guardrail_blocked_message=formatter))
    assert history(session)[-1]["output"] == "block_everything said no"
    assert "SECRET-DATA" not in repr(info.value.run_data.new_items) and "SECRET-DATA" not in repr(history(session))


def test_a_resumed_run_whose_tool_output_is_rejected_gets_the_blocked_message():
    @function_tool(needs_approval=True)
    def open_vault() -> str:
        return "SECRET-DATA"

    model = ScriptedModel([[function_call("open_vault", "{}", call_id="c1")]])
    agent = Agent(name="Vault", tools=[open_vault], tool_use_behavior="stop_on_first_tool",
                  output_guardrails=[block_everything], model=model)
    config = RunConfig(output_guardrail_blocked_message=lambda args: "sealed")
    result = Runner.run_sync(agent, "go", run_config=config)
    state = result.to_state()
    state.approve(result.interruptions[0])
    with pytest.raises(OutputGuardrailTripwireTriggered) as info:
        Runner.run_sync(agent, state, run_config=config)
    assert info.value.guardrail_result.agent_output == "sealed"
    assert [i.output for i in info.value.run_data.new_items if i.type == "tool_call_output_item"] == ["sealed"]
