"""Differences upstream's examples and tests found, fixed to upstream's behaviour (issue 21): each test names
the upstream program or test area that showed it."""
import typing
from dataclasses import dataclass

import pytest

import miniagents
import miniagents.upstream
from miniagents.upstream import AgentOutputSchema, Runner, UserError
from miniagents.agent_output import InvalidFinalOutput
from miniagents.context import InputTokensDetails, OutputTokensDetails, Usage as KernelUsage
from miniagents.upstream import RequestUsage, Usage
from miniagents.testing import ModelStep, assistant_message
from support import make_agent


# --- basic/usage_tracking: per-request usage entries are objects -------------------------------------------


def test_request_usage_entries_are_request_usage_objects_with_upstreams_fields():
    agent, _ = make_agent([ModelStep([assistant_message("hi")],
                                     Usage(requests=1, input_tokens=7, output_tokens=2, total_tokens=9))])
    result = Runner.run_sync(agent, "hi")
    entries = result.context_wrapper.usage.request_usage_entries
    assert [type(entry) for entry in entries] == [RequestUsage]
    entry = entries[0]
    assert (entry.input_tokens, entry.output_tokens, entry.total_tokens) == (7, 2, 9)
    assert entry.input_tokens_details.cached_tokens == 0 and entry.output_tokens_details.reasoning_tokens == 0


def test_a_request_usage_entry_does_not_share_its_details_with_the_usage_it_came_from():
    one = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
    run = Usage()
    run.add(one)
    one.input_tokens_details.cached_tokens = 5
    assert run.request_usage_entries[0].input_tokens_details.cached_tokens == 0


def test_usage_keeps_each_requests_own_entry_and_a_summed_usage_passes_its_entries_on():
    run = Usage()
    for tokens in (3, 5):
        run.add(KernelUsage(requests=1, input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1,
                            input_tokens_details=InputTokensDetails(cached_tokens=tokens - 1),
                            output_tokens_details=OutputTokensDetails(reasoning_tokens=tokens * 2)))
    assert [entry.input_tokens for entry in run.request_usage_entries] == [3, 5]
    parent = Usage()
    parent.add(run)  # a nested run's usage: its requests' entries, not one entry for the whole run
    assert (parent.requests, parent.input_tokens, parent.output_tokens, parent.total_tokens) == (2, 8, 2, 10)
    assert (parent.input_tokens_details.cached_tokens, parent.output_tokens_details.reasoning_tokens) == (6, 16)
    assert len(parent.request_usage_entries) == 2


# --- agent_patterns/human_in_the_loop_custom_rejection: the classes upstream subscripts are generic ----------

UPSTREAM_GENERIC = ("Agent AgentBase InputGuardrail OutputGuardrail ToolInputGuardrail ToolOutputGuardrail Handoff "
                    "AgentHookContext RunContextWrapper RunErrorHandlerInput ToolErrorFormatterArgs RunState "
                    "CallModelData ToolContext RunHooks AgentHooks")


@pytest.mark.parametrize("name", UPSTREAM_GENERIC.split())
def test_every_class_upstream_makes_generic_can_be_subscripted(name):
    cls = getattr(miniagents.upstream, name)
    assert typing.get_origin(cls[dict]) is cls
    assert cls.__parameters__ == (miniagents.TContext,)


def test_a_tracing_span_is_generic_in_its_data():
    from miniagents.tracing import AgentSpanData, Span

    assert typing.get_origin(Span[AgentSpanData]) is Span


# --- basic/non_strict_output_type: dict[int, T] outside strict mode ---------------------------------------------


@dataclass
class Jokes:
    jokes: typing.Dict[int, str]


def test_a_non_strict_output_type_may_have_int_keys_read_back_as_ints():
    schema = AgentOutputSchema(Jokes, strict_json_schema=False)
    jokes = schema.json_schema()["$defs"]["Jokes"]["properties"]["jokes"]
    assert jokes["additionalProperties"] == {"type": "string"}
    assert jokes["propertyNames"] == {"pattern": "^(0|-?[1-9][0-9]*)$"}
    assert schema.validate_json('{"response": {"jokes": {"1": "a", "-20": "b"}}}') == Jokes({1: "a", -20: "b"})


def test_a_key_that_is_no_integer_is_an_invalid_output_naming_it():
    schema = AgentOutputSchema(Jokes, strict_json_schema=False)
    with pytest.raises(InvalidFinalOutput, match=r"jokes.one': expected an integer key \(no leading zero or -0\), "
                                                 "got 'one'"):
        schema.validate_json('{"response": {"jokes": {"one": "a"}}}')


def test_strict_mode_still_refuses_a_dict_and_other_key_types_stay_refused():
    with pytest.raises(UserError, match="strict mode cannot express it"):
        AgentOutputSchema(Jokes)
    with pytest.raises(UserError, match=r"JSON object keys are strings — use dict\[str, T\] or dict\[int, T\]"):
        AgentOutputSchema(typing.Dict[float, str], strict_json_schema=False)


def test_an_agent_whose_output_type_strict_mode_cannot_express_is_made_and_handed_off_to_and_refused_at_use():
    """Upstream makes such an agent and refuses its output type only when a run uses it: the agent can still be
    a handoff's target, and the run that hands off to it stops there with the kernel's explanation."""
    from miniagents.testing import ScriptedModel, function_call

    jokester = miniagents.upstream.Agent(name="Jokester", output_type=Jokes)
    assert jokester.default_handoff.tool_name == "transfer_to_jokester"
    model = ScriptedModel([[function_call("transfer_to_jokester", {}, call_id="h1")], [assistant_message("{}")]])
    triage = miniagents.upstream.Agent(name="Triage", handoffs=[jokester], model=model)
    with pytest.raises(UserError, match="strict mode cannot express it"):
        Runner.run_sync(triage, "tell me jokes")
    assert [tool["name"] for tool in model.calls[0].handoffs] == ["transfer_to_jokester"]
    with pytest.raises(UserError, match="strict mode cannot express it"):  # what the agent holds refuses it,
        jokester.output_schema.json_schema()  # whether the tracing shell's agent span or the turn reads it first


# --- basic/trace_redaction: an exporter of one's own behind upstream's BatchTraceProcessor -----------------------


class ListExporter:
    def __init__(self, fail=False):
        self.batches, self.fail = [], fail

    def export(self, items):
        if self.fail:
            raise RuntimeError("destination down")
        self.batches.append([item.export()["object"] for item in items])


def test_batch_processor_hands_traces_at_start_and_spans_at_end_in_batches():
    from miniagents.tracing import custom_span, set_trace_processors, trace
    from miniagents.tracing.processor_interface import TracingExporter
    from miniagents.tracing.processors import BatchTraceProcessor

    assert issubclass(type("Mine", (TracingExporter,), {"export": lambda self, items: None}), TracingExporter)
    exporter = ListExporter()
    processor = BatchTraceProcessor(exporter, max_batch_size=2)
    set_trace_processors([processor])
    try:
        with trace("work"):
            for _ in range(2):
                with custom_span("step"):
                    pass
        assert exporter.batches == [["trace", "trace.span"]]
        processor.force_flush()
        assert exporter.batches[1:] == [["trace.span"]]
        processor.shutdown()
        with trace("after shutdown"):
            pass
        processor.force_flush()
        assert len(exporter.batches) == 2
    finally:
        set_trace_processors([])


def test_what_a_batch_still_holds_when_the_program_ends_is_exported_as_upstream_does_at_exit(tmp_path):
    import subprocess
    import sys

    from support import ROOT

    program = tmp_path / "short.py"
    program.write_text(
        "from agents import Agent, Runner, add_trace_processor\n"
        "from agents.tracing.processors import BatchTraceProcessor\n"
        "from agents.testing import ScriptedModel, assistant_message\n"
        "class Printer:\n"
        "    def export(self, items):\n"
        "        print('exported', sorted({item.export()['object'] for item in items}))\n"
        "add_trace_processor(BatchTraceProcessor(Printer()))\n"
        "Runner.run_sync(Agent(name='a', model=ScriptedModel([[assistant_message('hi')]])), 'hi')\n")
    done = subprocess.run([sys.executable, "-m", "miniagents.upstream", str(program)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": ROOT, "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["exported ['trace', 'trace.span']"]


def test_a_failing_exporter_loses_its_batch_not_the_run(caplog):
    from miniagents.tracing import set_trace_processors, trace
    from miniagents.tracing.processors import BatchTraceProcessor

    processor = BatchTraceProcessor(ListExporter(fail=True), max_batch_size=1)
    set_trace_processors([processor])
    try:
        with caplog.at_level("WARNING", logger="miniagents"):
            with trace("work"):
                pass
    finally:
        set_trace_processors([])
    assert "trace exporter ListExporter failed; 1 items dropped (RuntimeError)" in caplog.text
    assert "destination down" not in caplog.text  # the exporter's message may hold what it was sending


@pytest.mark.parametrize("exporter, size", [(object(), 1), (ListExporter(), 0)])
def test_a_batch_processor_without_an_exporter_or_a_batch_is_refused(exporter, size):
    from miniagents.tracing.processors import BatchTraceProcessor

    with pytest.raises(UserError):
        BatchTraceProcessor(exporter, max_batch_size=size)


@pytest.mark.parametrize("sizes", [{"max_batch_size": "10"}, {"max_queue_size": "10"}, {"max_batch_size": 2.5},
                                   {"max_queue_size": None}, {"max_batch_size": True}])
def test_a_batch_processors_size_that_is_no_whole_number_is_a_user_error_when_it_is_made(sizes):
    """A size given as text (read from a configuration file) was a bare TypeError from a comparison inside."""
    from miniagents.tracing.processors import BatchTraceProcessor

    with pytest.raises(UserError, match="must be whole numbers"):
        BatchTraceProcessor(ListExporter(), **sizes)


# --- upstream's tests/test_run_context_approvals.py: exact decisions outrank sticky ones; messages follow ------


def _approval(call_id, tool="send"):
    from miniagents import ToolApprovalItem

    return ToolApprovalItem(agent=None, raw_item={"type": "function_call", "name": tool, "call_id": call_id,
                                                   "arguments": "{}"})


def test_a_rejection_of_one_call_outranks_an_earlier_approval_of_every_call():
    from miniagents import RunContextWrapper

    ctx = RunContextWrapper()
    ctx.approve_tool(_approval("a"), always_approve=True)
    ctx.reject_tool(_approval("b"), rejection_message="not this one")
    assert ctx.is_tool_approved("send", "b") is False
    assert ctx.rejection_message("send", "b") == "not this one"
    assert ctx.is_tool_approved("send", "c") is True  # the sticky approval still covers the others


def test_an_approval_of_one_call_outranks_an_earlier_rejection_of_every_call():
    from miniagents import RunContextWrapper

    ctx = RunContextWrapper()
    ctx.reject_tool(_approval("a"), always_reject=True)
    ctx.approve_tool(_approval("b"))
    assert ctx.is_tool_approved("send", "b") is True and ctx.is_tool_approved("send", "c") is False


def test_each_decision_replaces_the_last_ones_message():
    from miniagents import RunContextWrapper

    ctx = RunContextWrapper()
    ctx.reject_tool(_approval("a"), rejection_message="Denied by policy")
    ctx.approve_tool(_approval("a"))
    assert ctx.is_tool_approved("send", "a") is True and ctx.rejection_message("send", "a") is None
    ctx.reject_tool(_approval("a"), rejection_message="first")
    ctx.reject_tool(_approval("a"))
    assert ctx.rejection_message("send", "a") is None
    ctx.reject_tool(_approval("b"), rejection_message="b's")
    ctx.approve_tool(_approval("c"), always_approve=True)  # a decision for every call clears every message
    assert ctx.rejection_message("send", "b") is None
    assert ctx.approvals["send"] == {"approved": True, "rejected": []}


def test_a_call_approved_again_under_a_sticky_approval_keeps_it_sticky():
    from miniagents import RunContextWrapper

    ctx = RunContextWrapper()
    ctx.approve_tool(_approval("a"), always_approve=True)
    ctx.approve_tool(_approval("b"))
    assert ctx.is_tool_approved("send", "z") is True


# --- upstream's tests/test_cancel_streaming.py: cancel() then leaving the stream completes the result at once ----


def test_a_cancelled_stream_left_at_once_is_complete_right_away():
    import asyncio

    agent, _ = make_agent([[assistant_message("one")], [assistant_message("two")]])

    async def main():
        result = Runner.run_streamed(agent, "hi")
        seen = 0
        async for _ in result.stream_events():
            seen += 1
            result.cancel()
            break
        assert result.is_complete and seen == 1
        assert result.final_output is None and result.input == "hi"
        assert [event async for event in result.stream_events()] == []  # nothing more after cancel
        return result

    asyncio.run(main())


def test_after_turn_cancel_does_not_claim_completion_early():
    import asyncio

    agent, _ = make_agent([[assistant_message("one")]])

    async def main():
        result = Runner.run_streamed(agent, "hi")
        async for _ in result.stream_events():
            result.cancel(mode="after_turn")
            assert not result.is_complete
        assert result.is_complete

    asyncio.run(main())


# --- upstream's tests/model_settings and memory: settings given as dicts ---------------------------------------


def test_a_session_takes_its_settings_as_a_dict():
    from miniagents import SQLiteSession, SessionSettings

    session = SQLiteSession("dict-settings", session_settings={"limit": 2})
    session.add_items([{"role": "user", "content": str(n)} for n in range(4)])
    assert [item["content"] for item in session.get_items()] == ["2", "3"]
    assert session.session_settings == SessionSettings(limit=2)
    assert SessionSettings(limit=1).resolve({"limit_turns": 3}) == SessionSettings(limit=1, limit_turns=3)


@pytest.mark.parametrize("make, message", [
    (lambda: miniagents.SessionSettings({"limit": 3}), "SessionSettings.limit must be an int or None, got dict"),
    (lambda: miniagents.SessionSettings.coerce([3]), "must be SessionSettings, a dict or None, got list"),
    (lambda: miniagents.Agent(name="a", model_settings="hot"),
     "Agent model_settings must be a ModelSettings instance or a dict, got str"),
])
def test_settings_that_cannot_be_read_say_which(make, message):
    with pytest.raises(TypeError, match=message):
        make()


@pytest.mark.parametrize("make, message", [
    (lambda: miniagents.ModelSettings().resolve({"temperatur": 0.5}), "ModelSettings has no field 'temperatur'"),
    (lambda: miniagents.Agent(name="a", model_settings={"temperatur": 0.5}), "ModelSettings has no field 'temperatur'"),
    (lambda: miniagents.RunConfig(model_settings={"top_q": 1}), "RunConfig.model_settings has no field 'top_q'"),
    (lambda: miniagents.SessionSettings.coerce({"limt": 3}), "SessionSettings has no field 'limt'"),
    (lambda: miniagents.SessionSettings.coerce({1: 3, "a": 1}), "SessionSettings has no field 'a', 1"),  # a bare
    # TypeError sorting the keys
])
def test_model_settings_with_a_key_they_lack_say_which(make, message):
    with pytest.raises(miniagents.UserError, match=message):
        make()


def test_model_settings_resolve_a_dict_keeping_what_it_omits():
    base = miniagents.ModelSettings(temperature=0.5, reasoning={"effort": "low"})
    resolved = base.resolve({"temperature": 0.0})
    assert resolved.temperature == 0.0 and resolved.reasoning is base.reasoning


# --- Members of public classes and helpers upstream's tests use -------------------------------------------------


def test_invoke_function_tool_runs_one_call_as_a_run_does():
    import time

    from miniagents import ToolContext, function_tool
    from miniagents.upstream.tool import invoke_function_tool

    @function_tool
    def add(a: int, b: int) -> int:
        return a + b

    @function_tool(timeout=0.05)
    def slow() -> str:
        time.sleep(2)
        return "late"

    def context(name):
        return ToolContext(context=None, tool_name=name, tool_call_id="c1", tool_arguments="{}")

    assert invoke_function_tool(function_tool=add, context=context("add"), arguments='{"a": 1, "b": 2}').value == 3
    timed_out = invoke_function_tool(function_tool=slow, context=context("slow"), arguments="{}").value
    assert timed_out.startswith("Tool 'slow' timed out after 0.05 seconds.") and "may still complete" in timed_out


def test_generate_func_documentation_reads_the_docstring():
    from miniagents.upstream.function_schema import FuncDocumentation, generate_func_documentation

    def lookup(city: str, days: int) -> str:
        """Look the weather up.

        Args:
            city: Where.
            days: How many days ahead.
        """

    def bare():
        pass

    assert generate_func_documentation(lookup) == FuncDocumentation(
        "lookup", "Look the weather up.", {"city": "Where.", "days": "How many days ahead."})
    assert generate_func_documentation(bare) == FuncDocumentation("bare", None, None)


def test_mcp_tool_choice_is_a_settings_type_that_serialises():
    import json

    from miniagents.upstream.model_settings import MCPToolChoice, ModelSettings

    settings = ModelSettings(temperature=0.5, tool_choice=MCPToolChoice(server_label="mcp", name="tool"))
    assert json.loads(json.dumps(settings.to_json_dict())) == {
        "temperature": 0.5, "tool_choice": {"server_label": "mcp", "name": "tool"}}


def test_run_error_details_has_the_tool_guardrail_result_lists():
    from miniagents import RunErrorDetails

    details = RunErrorDetails("hi", [], [], None, None)
    assert details.tool_input_guardrail_results == [] and details.tool_output_guardrail_results == []


@pytest.mark.parametrize("options, said", [({"run_config": 5}, "run_config must be a RunConfig"),
                                           ({"error_handlers": 5}, "error_handlers must be a dict")])
def test_run_options_of_the_wrong_kind_are_user_errors_in_the_shell_too(options, said):
    agent, model = make_agent([[assistant_message("never")]])
    with pytest.raises(UserError, match=said):
        Runner.run_sync(agent, "hi", **options)
    assert model.calls == ()
