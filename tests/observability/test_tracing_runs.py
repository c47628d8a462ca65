"""A run's trace, as the kernel writes it: the spans upstream makes (task, agent, turn, generation, function,
handoff, guardrail) plus approvals, in a tree a person can read back with `python -m miniagents.tracing`.

And capabilities in a run: a fresh copy per run, tools and instructions for the model, the public agent kept
for results and plugins, and a capability its model cannot serve refused when the run starts.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading

import pytest

from miniagents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, ModelSettings,
                        OpenAIChatCompletionsModel, OutputGuardrailTripwireTriggered, RunConfig, RunState, Runner,
                        UserError, function_tool, handoff, input_guardrail, output_guardrail, seams)
from miniagents.capabilities import Capability, Workspace
from miniagents.context import Usage
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from miniagents.tracing import redaction
from miniagents.tracing.tree import describe, read
from support import outputs_sent

from openai_server import OpenAITestServer, chat_chunks, chat_completion, sse
from support import ROOT  # noqa: E402


def tree(path):
    """Each trace in the file as indented lines, without timings: the shape of the run."""
    with open(path, encoding="utf-8") as f:
        traces, problems = read(f)
    assert problems == []
    shapes = []
    for _, entry in traces:
        spans = entry["spans"]
        kids = {}
        for record in spans.values():
            kids.setdefault(record.get("parent_id") if record.get("parent_id") in spans else None, []).append(record)
        lines = []

        def walk(parent, depth):
            for record in sorted(kids.get(parent, []), key=lambda r: r.get("started_at") or ""):
                lines.append("  " * depth + describe(record, timing=False))
                walk(record["id"], depth + 1)

        walk(None, 0)
        shapes.append(lines)
    return shapes


def help_desk(log):
    @function_tool
    def lookup_order(order_id: str) -> str:
        """Find an order."""
        return f"Order {order_id} shipped"

    @function_tool(needs_approval=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        log.append(order_id)
        raise RuntimeError("payments are down")

    @input_guardrail
    def polite(ctx, agent, text):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    model = ScriptedModel([
        [function_call("lookup_order", {"order_id": "A-1"}, call_id="c1")],
        [function_call("transfer_to_billing", "{}", call_id="c2")],
        [function_call("refund", {"order_id": "A-1"}, call_id="c3")],
        [assistant_message("A person will call you.")],
    ])
    billing = Agent(name="Billing", tools=[refund], model=model)
    triage = Agent(name="Triage", tools=[lookup_order], handoffs=[billing], input_guardrails=[polite], model=model)
    return triage, model


def test_upstreams_tracing_config_leaves_out_the_task_and_turn_spans_and_its_api_key_is_never_kept(tmp_path):
    path, log = str(tmp_path / "run.jsonl"), []
    triage, _ = help_desk(log)
    config = RunConfig(trace_path=path, workflow_name="Help desk",
                       tracing={"include_task_and_turn_spans": False, "api_key": "sk-trace-secret"})
    assert config.tracing == {"include_task_and_turn_spans": False}
    Runner.run_sync(triage, "refund order A-1", run_config=config)
    (first,) = tree(path)
    assert first == [
        "agent Triage tools: lookup_order; handoffs: Billing",
        "  guardrail polite passed",
        "  model ? 0 in / 0 out tokens -> call lookup_order",
        '  tool lookup_order({"order_id":"A-1"}) -> Order A-1 shipped',
        "  model ? 0 in / 0 out tokens -> call transfer_to_billing",
        "  handoff Triage -> Billing",
        "agent Billing tools: refund",
        "  model ? 0 in / 0 out tokens -> call refund",
        "  approval refund (call c3) pending",
    ]
    with open(path, encoding="utf-8") as f:
        assert "sk-trace-secret" not in f.read()
    with pytest.raises(UserError, match="RunConfig.tracing must be a dict"):
        RunConfig(tracing="on")


def test_a_help_desk_run_is_traced_as_a_tree_with_its_tool_handoff_approval_and_error(tmp_path):
    path, log = str(tmp_path / "run.jsonl"), []
    triage, model = help_desk(log)
    config = RunConfig(trace_path=path, workflow_name="Help desk")
    paused = Runner.run_sync(triage, "refund order A-1", run_config=config)
    state = paused.to_state()
    state.approve(state.get_interruptions()[0])
    Runner.run_sync(triage, state, run_config=config)
    first, resumed = tree(path)
    assert first == [
        "run 'Help desk' 3 model calls, 0 in / 0 out tokens",
        "  agent Triage tools: lookup_order; handoffs: Billing",
        "    turn 1 (Triage)",
        "      guardrail polite passed",
        "      model ? 0 in / 0 out tokens -> call lookup_order",
        '      tool lookup_order({"order_id":"A-1"}) -> Order A-1 shipped',
        "    turn 2 (Triage)",
        "      model ? 0 in / 0 out tokens -> call transfer_to_billing",
        "    handoff Triage -> Billing",
        "  agent Billing tools: refund",
        "    turn 3 (Billing)",
        "      model ? 0 in / 0 out tokens -> call refund",
        "      approval refund (call c3) pending",
    ]
    assert resumed == [
        "run 'Help desk' 1 model call, 0 in / 0 out tokens",  # this run's own: it counts from where it resumes
        "  agent Billing tools: refund",
        "    turn 3 (Billing)",
        "      approval refund (call c3) approved",
        '      tool refund({"order_id":"A-1"}) -> An error occurred while running the tool. Please try again.  '
        '!! Error running tool {"tool_name": "refund", "error": "RuntimeError"}',
        "    turn 4 (Billing)",
        '      model ? 0 in / 0 out tokens -> "A person will call you."',
    ]
    assert log == ["A-1"]


def test_the_tree_printer_reads_the_file_a_run_wrote(tmp_path):
    path, log = str(tmp_path / "run.jsonl"), []
    triage, _ = help_desk(log)
    Runner.run_sync(triage, "refund order A-1", run_config=RunConfig(trace_path=path))
    out = subprocess.run([sys.executable, "-m", "miniagents.tracing", path], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    assert "agent Triage" in out and "handoff Triage -> Billing" in out and "approval refund (call c3)" in out


def test_max_turns_is_an_error_on_the_agent_span_and_the_run(tmp_path):
    path = str(tmp_path / "run.jsonl")
    agent = Agent(name="Looper", tools=[], model=ScriptedModel([[function_call("nope", "{}", call_id="c1")]]))
    with pytest.raises(Exception):
        Runner.run_sync(agent, "go", max_turns=1, run_config=RunConfig(trace_path=path))
    (lines,) = tree(path)
    assert lines[0].startswith("run 'Agent workflow'") and "!! MaxTurnsExceeded" in lines[0]
    assert lines[1].startswith("  agent Looper") and "!! Max turns exceeded" in lines[1]


def test_a_tripped_input_or_output_guardrail_is_traced_as_tripped(tmp_path):
    path = str(tmp_path / "run.jsonl")

    @input_guardrail
    def no_refunds(ctx, agent, text):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="refund" in text)

    @output_guardrail
    def no_promises(ctx, agent, output):
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="promise" in output)

    agent = Agent(name="Desk", input_guardrails=[no_refunds], output_guardrails=[no_promises],
                  model=ScriptedModel([[assistant_message("I promise")]]))
    with pytest.raises(InputGuardrailTripwireTriggered):
        Runner.run_sync(agent, "refund please", run_config=RunConfig(trace_path=path))
    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(agent, "hello", run_config=RunConfig(trace_path=path))
    tripped_input, tripped_output = tree(path)
    assert "      guardrail no_refunds TRIPPED" in tripped_input
    assert "      guardrail no_refunds passed" in tripped_output
    assert "    guardrail no_promises TRIPPED" in tripped_output  # in the agent's span, after its last turn


def test_the_environment_variable_traces_a_run_and_sensitive_data_can_be_left_out(tmp_path, monkeypatch):
    path = str(tmp_path / "env.jsonl")
    monkeypatch.setenv("MINIAGENTS_TRACE", path)
    triage, _ = help_desk([])
    secret_settings = ModelSettings(extra_headers={"Authorization": "Bearer sk-live-SECRET"})
    Runner.run_sync(triage.clone(model_settings=secret_settings), "refund order A-1",
                    run_config=RunConfig(trace_include_sensitive_data=False))
    text = open(path, encoding="utf-8").read()
    assert "lookup_order" in text and "sk-live-SECRET" not in text
    assert "A-1" not in text  # tool arguments, outputs and model text are sensitive


def test_a_run_without_task_spans_in_its_callers_trace_keeps_its_own_sensitive_data_rule_and_trace_file(tmp_path):
    """With `include_task_and_turn_spans` False there is no task span to carry the run's own rule and processors:
    a run joining the trace its caller opened, or an agent tool's inner run, still leaves its tool arguments out of
    every processor when it says so, and still writes (and closes) its own `trace_path`."""
    from miniagents import tracing

    secret, spans_off = "patient-record-4711", {"include_task_and_turn_spans": False}

    @function_tool
    def lookup(name: str) -> str:
        """Look a name up."""
        return "diagnosis for " + name

    def inner():
        return Agent(name="Inner", tools=[lookup], model=ScriptedModel([
            [function_call("lookup", {"name": secret}, call_id="c1")], [assistant_message("done")]]))

    caller, own = str(tmp_path / "caller.jsonl"), str(tmp_path / "own.jsonl")
    tracing.set_trace_processors([tracing.JsonlTraceProcessor(caller)])
    try:
        with tracing.trace("Help desk"):
            Runner.run_sync(inner(), "hi", run_config=RunConfig(trace_include_sensitive_data=False, tracing=spans_off))
    finally:
        tracing.set_trace_processors([])
    with tracing.trace("Help desk"):  # a trace no processor listens to: only the run's own file
        Runner.run_sync(inner(), "hi", run_config=RunConfig(trace_path=own, tracing=spans_off))
    as_tool = inner().as_tool("ask", "Ask.", run_config=RunConfig(trace_include_sensitive_data=False,
                                                                   tracing=spans_off))
    outer = Agent(name="Outer", tools=[as_tool], model=ScriptedModel([
        [function_call("ask", {"input": "x"}, call_id="o1")], [assistant_message("ok")]]))
    Runner.run_sync(outer, "hi", run_config=RunConfig(trace_path=caller))
    text = open(caller, encoding="utf-8").read()
    assert text.count('"name": "lookup"') == 2 * 2 and secret not in text  # 2 runs: a function span's start and end
    assert any("tool lookup" in line for line in tree(own)[0]) and secret in open(own, encoding="utf-8").read()
    assert not [fd for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == own]


@pytest.mark.parametrize("seam, kind", [("model_call", "generation"), ("tool_call", "function")])
def test_a_plugin_raising_around_a_step_fails_the_run_with_its_error_and_the_steps_span_records_it(tmp_path, seam,
                                                                                                  kind):
    """A run's own plugin that raises as a model call or tool call starts: the run raises its error (not one from
    inside tracing, which read the step as if it had succeeded), and the step's span ends with that error."""
    path = str(tmp_path / "run.jsonl")

    def refuses(self, run, step):
        raise PermissionError("not allowed here")

    @function_tool
    def double_it(x: int) -> int:
        """Double a number."""
        return 2 * x

    agent = Agent(name="A", tools=[double_it], model=ScriptedModel([
        [function_call("double_it", {"x": 2}, call_id="c1")], [assistant_message("done")]]))
    with pytest.raises(PermissionError, match="not allowed here"):
        Runner.run_sync(agent, "go", run_config=RunConfig(trace_path=path),
                        plugins=[type("Refuses", (seams.Plugin,), {seam: refuses})()])
    ended = [json.loads(line) for line in open(path, encoding="utf-8")]
    (span,) = [r for r in ended if r["event"] == "span_end" and r["span_data"]["type"] == kind]
    assert span["error"] == {"message": "PermissionError", "data": {"type": "PermissionError"}}


def test_a_model_call_whose_error_a_plugin_tries_to_swallow_fails_traced_as_it_fails_untraced(tmp_path):
    """A plugin left after tracing that suppresses a model call's error (which the seams' contract forbids) cannot:
    the run fails with the model's error, traced or not, and the generation span records it."""

    class Swallows(seams.Plugin):
        @contextlib.contextmanager
        def model_call(self, run, step):
            with contextlib.suppress(RuntimeError):
                yield

    for config in (RunConfig(trace_path=str(tmp_path / "run.jsonl")), RunConfig()):
        agent = Agent(name="A", model=ScriptedModel([RuntimeError("down"), [assistant_message("hi")]]))
        with pytest.raises(RuntimeError, match="down"):
            Runner.run_sync(agent, "hi", run_config=config, plugins=[Swallows()])
    assert '"type": "generation"' in (tmp_path / "run.jsonl").read_text(encoding="utf-8")


def test_tracing_asks_each_tools_is_enabled_no_more_often_than_the_run_does_and_names_what_the_turn_offered(
        tmp_path):
    """A tool's or handoff's `is_enabled` callable may have effects (a quota, an audit log): a traced run asks it as
    often as an untraced one, and the agent's span names the tools and handoffs its turn offered."""
    asked = []

    def flag(answer):
        def is_enabled(ctx, agent):
            asked.append(answer)
            return answer
        return is_enabled

    @function_tool(is_enabled=flag(True))
    def lookup() -> str:
        """Look up."""
        return "x"

    @function_tool(is_enabled=flag(False))
    def hidden() -> str:
        """Hidden."""
        return "y"

    def run(config):
        asked.clear()
        billing = Agent(name="Billing")
        Runner.run_sync(Agent(name="A", tools=[lookup, hidden], model=ScriptedModel([[assistant_message("ok")]]),
                              handoffs=[handoff(billing, is_enabled=flag(True))]), "hi", run_config=config)
        return list(asked)

    path = str(tmp_path / "run.jsonl")
    assert run(RunConfig(trace_path=path)) == run(RunConfig()) == [True, False, True]
    assert tree(path)[0][1] == "  agent A tools: lookup; handoffs: Billing"


def test_without_a_processor_a_run_writes_nothing_and_opens_no_recorded_span(tmp_path, monkeypatch):
    from miniagents import tracing

    monkeypatch.delenv("MINIAGENTS_TRACE", raising=False)
    seen = []

    @function_tool
    def probe() -> str:
        seen.append(tracing.recording())
        return "ok"

    agent = Agent(name="A", tools=[probe], model=ScriptedModel([[function_call("probe", "{}", call_id="c1")],
                                                                [assistant_message("done")]]))
    Runner.run_sync(agent, "go")
    assert seen == [False] and os.listdir(tmp_path) == []


# --- Capabilities in a run ---------------------------------------------------------------------------------


class Counter(Capability):
    """A capability with per-run state: a tool that counts its own calls, and an instruction fragment."""

    type = "counter"

    def __init__(self):
        self.calls = []

    def tools(self):
        @function_tool
        def tick() -> str:
            """Count."""
            self.calls.append(1)
            return f"tick {len(self.calls)}"

        return [tick]

    def instructions(self, manifest=None):
        return "You can count with tick."

    def sampling_params(self, params):
        return {"temperature_hint": "low"}


def test_a_capability_gives_each_run_its_own_copy_and_keeps_the_public_agent(tmp_path):
    class SeeAgent(seams.Plugin):  # a plugin of each run: which agent it says takes the conversation
        def __init__(self):
            self.agents = []

        def agent_started(self, run, agent):
            self.agents.append(agent)

    hooks, counter = SeeAgent(), Counter()
    script = [[function_call("tick", "{}", call_id="c1")], [function_call("tick", "{}", call_id="c2")],
              [assistant_message("done")]]
    agent = Agent(name="Counting", instructions="Be brief.", capabilities=[counter],
                  model=ScriptedModel(script + script))
    first = Runner.run_sync(agent, "count", plugins=[hooks])
    second = Runner.run_sync(agent, "count again", plugins=[hooks])
    assert first.last_agent is agent and second.last_agent is agent and hooks.agents == [agent, agent]
    model = agent.model
    assert outputs_sent(model.calls[2]) == {"c1": "tick 1", "c2": "tick 2"}
    assert outputs_sent(model.calls[5])["c2"] == "tick 2"  # the second run counted from zero again
    assert counter.calls == []  # the agent's own capability was never used, only its per-run copies
    assert model.calls[0].system_instructions == "Be brief.\n\nYou can count with tick."
    assert [t["name"] for t in model.calls[0].tools] == ["tick"]
    assert model.calls[0].model_settings.extra_args == {"temperature_hint": "low"}


def test_a_capability_its_model_cannot_serve_is_refused_when_the_run_starts():
    class ResponsesOnly(Capability):
        type = "responses-only"
        model_adapters = ("OpenAIResponsesModel",)

    model = ScriptedModel([[assistant_message("never")]])
    helper = Agent(name="Helper", capabilities=[ResponsesOnly()], model=model)
    front = Agent(name="Front", handoffs=[helper], model=model)
    with pytest.raises(UserError) as caught:
        Runner.run_sync(front, "hi")
    assert "ResponsesOnly" in str(caught.value) and "ScriptedModel" in str(caught.value)
    assert model.calls == ()


def test_a_workspace_answers_from_its_files_and_refuses_a_path_that_escapes(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    (root / "returns.md").write_text("Returns are accepted within 30 days.\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("hunter2\n", encoding="utf-8")
    model = ScriptedModel([
        [function_call("read_file", {"path": "returns.md", "start_line": 1, "end_line": 5}, call_id="c1"),
         function_call("read_file", {"path": "../secret.txt", "start_line": 1, "end_line": 5}, call_id="c2")],
        [assistant_message("30 days.")]])
    agent = Agent(name="Support", capabilities=[Workspace(str(root))], model=model)
    result = Runner.run_sync(agent, "How long do I have to return?")
    sent = outputs_sent(model.calls[1])
    assert "30 days" in sent["c1"] and "hunter2" not in json.dumps(model.calls[1].input)
    assert "outside" in sent["c2"] or "refused" in sent["c2"].lower()
    assert result.final_output == "30 days."


def spent(requests, inp, out):
    return Usage(requests=requests, input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def run_usages(path):
    """(input tokens, requests) of each run's task span, in the order the runs ended."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [(r["span_data"]["data"]["usage"]["input_tokens"], r["span_data"]["data"]["usage"]["requests"])
            for r in records if r["event"] == "span_end" and (r["span_data"].get("data") or {}).get("sdk_span_type")
            == "task"]


def test_an_agent_tools_inner_run_reports_its_own_usage_and_its_caller_everything_it_spent(tmp_path):
    """The inner run shares its caller's usage (its limits count both): its task span still says what it spent,
    not the caller's first call too; the caller's says the whole, the inner run's call included."""
    path = str(tmp_path / "run.jsonl")
    inner = Agent(name="Inner", model=ScriptedModel([ModelStep(output=[assistant_message("inner done")],
                                                               usage=spent(1, 7, 1))]))
    outer = Agent(name="Outer", tools=[inner.as_tool("ask_inner", "Ask")], model=ScriptedModel([
        ModelStep(output=[function_call("ask_inner", {"input": "x"}, call_id="o1")], usage=spent(1, 100, 10)),
        ModelStep(output=[assistant_message("outer done")], usage=spent(1, 200, 20))]))
    result = Runner.run_sync(outer, "go", run_config=RunConfig(trace_path=path))
    assert result.context_wrapper.usage.input_tokens == 307
    assert run_usages(path) == [(7, 1), (307, 3)]


def test_agent_tools_running_at_once_each_report_only_their_own_usage(tmp_path):
    """Two inner runs whose model calls are in flight together (both wait at a barrier before answering): each
    task span says what its own run spent, not what the other added to the shared usage meanwhile."""
    path, barrier = str(tmp_path / "run.jsonl"), threading.Barrier(2, timeout=10)

    def inner(name, tokens):
        def answer(call):
            barrier.wait()
            return ModelStep(output=[assistant_message(f"{name} done")], usage=spent(1, tokens, 1))
        return Agent(name=name, model=ScriptedModel([answer])).as_tool(f"ask_{name}", "Ask")

    outer = Agent(name="Outer", tools=[inner("a", 7), inner("b", 50)], model=ScriptedModel([
        ModelStep(output=[function_call("ask_a", {"input": "x"}, call_id="o1"),
                          function_call("ask_b", {"input": "y"}, call_id="o2")], usage=spent(1, 100, 10)),
        ModelStep(output=[assistant_message("outer done")], usage=spent(1, 200, 20))]))
    Runner.run_sync(outer, "go", run_config=RunConfig(trace_path=path))
    usages = run_usages(path)
    assert sorted(usages[:2]) == [(7, 1), (50, 1)] and usages[2] == (357, 4)


class Wrapped:
    """A model as a plugin's `model` seam wraps it (the upstream shell's, a recording's): kept as `wrapped`."""

    def __init__(self, model):
        self.wrapped = model

    def __getattr__(self, name):
        return getattr(self.wrapped, name)


class Wrapping(seams.Plugin):
    def model(self, run, setup, model):
        return Wrapped(model)


@pytest.mark.parametrize("streamed, wrapped", [(False, False), (True, False), (False, True)])
def test_no_credential_of_the_environment_the_settings_or_the_model_reaches_a_runs_trace_or_live_view(
        tmp_path, monkeypatch, capsys, streamed, wrapped):
    """The environment's API key echoed by a tool, a credential-named value at any depth of the model settings'
    and the trace's metadata, a Bearer value, and the model's own key (given as api_key=, in no variable; the model
    called as it is or wrapped by a plugin) that the server echoes back: none is in the file or on stderr."""
    env_key, meta_secret = "sk-env-0123456789abcdef", "metasecretVALUE1234"
    model_key = f"sk-model-key-{streamed:d}{wrapped:d}-9876543210"  # its own: a key once seen is hidden from then on
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    monkeypatch.setenv("MINIAGENTS_DEBUG", "1")
    path = str(tmp_path / "run.jsonl")

    @function_tool
    def show_env() -> str:
        """Show the environment."""
        return "OPENAI_API_KEY=" + os.environ["OPENAI_API_KEY"]

    server = OpenAITestServer()
    try:
        def answer(body):
            first = len(server.requests) == 1
            if body.get("stream"):
                return {"sse": sse(*chat_chunks(None, [("c1", "show_env", "{}")]) if first else
                                   chat_chunks(f"Your key is {model_key}."))}
            return {"status": 200, "json": chat_completion(None, [("c1", "show_env", "{}")]) if first else
                    chat_completion(f"Your key is {model_key}.")}

        server.otherwise = answer
        model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=model_key)
        settings = ModelSettings(metadata={"user": "Bearer " + meta_secret, "ctx": {"api_key": meta_secret}})
        agent = Agent(name="A", tools=[show_env], model=model, model_settings=settings)
        config = RunConfig(trace_path=path, trace_metadata={"api_key": meta_secret, "deep": [{"token": meta_secret}]})
        plugins = [Wrapping()] if wrapped else []
        if streamed:
            result = Runner.run_streamed(agent, "hi", run_config=config)

            async def drain():
                return [event async for event in result.stream_events()]

            asyncio.run(drain())
        else:
            result = Runner.run_sync(agent, "hi", run_config=config, plugins=plugins)
    finally:
        server.close()
    assert result.final_output.strip() == f"Your key is {model_key}."  # it was in the run
    with open(path, encoding="utf-8") as f:
        text = f.read()
    err = capsys.readouterr().err
    for secret in (env_key, meta_secret, model_key):
        assert secret not in text and secret not in err, secret
    assert "OPENAI_API_KEY=***" in text and "Your key is ***." in text and '"user": "Bearer ***"' in text


class Keyed:
    """A model as a gateway wraps one (`wrapped`, which the trace's redaction looks through): a real HTTP adapter
    holding the credentials, its answers played back so that no server is needed."""

    def __init__(self, steps, **adapter):
        self.wrapped = OpenAIChatCompletionsModel("m", base_url="http://127.0.0.1:9/v1", **adapter)
        self.scripted = ScriptedModel(steps)

    def get_response(self, *args, **kwargs):
        return self.scripted.get_response(*args, **kwargs)

    def stream_response(self, *args, **kwargs):
        return self.scripted.stream_response(*args, **kwargs)


def keyed_runs_elsewhere(tmp_path, count=65):
    """`count` traced runs, each with a key of its own, in another thread (as a server runs other tenants' runs)."""
    def run_all():
        for number in range(count):
            agent = Agent(name="Other", model=Keyed([[assistant_message("hi")]], api_key=f"sk-other-{number:03d}-key"))
            Runner.run_sync(agent, "hi", run_config=RunConfig(trace_path=str(tmp_path / "others.jsonl")))

    worker = threading.Thread(target=run_all)
    worker.start()
    worker.join()


@pytest.mark.parametrize("echoed_by", ["tool", "agent tool"])
def test_a_runs_model_key_stays_hidden_until_it_ends_however_many_other_runs_remember_theirs(tmp_path, echoed_by):
    """The key of a run's model, echoed by its tool while 65 other keyed runs make their calls (past the most recent
    secrets kept), or by an agent tool's inner run into its caller's trace after that inner run ended, is hidden."""
    key, path = "sk-tenant-own-" + "Z" * 24, str(tmp_path / "run.jsonl")

    @function_tool
    def show_config() -> str:
        """Show the client's configuration."""
        keyed_runs_elsewhere(tmp_path)
        return "client configured with key " + key

    def echoed(result):
        keyed_runs_elsewhere(tmp_path)  # after the inner run ended, before its caller's tool span does
        return "inner client configured with key " + key

    steps = [[function_call("show_config", {}, call_id="c1")], [assistant_message("done")]]
    if echoed_by == "tool":
        agent = Agent(name="A", model=Keyed(steps, api_key=key), tools=[show_config])
    else:
        inner = Agent(name="Inner", model=Keyed([[assistant_message("ok")]], api_key=key))
        agent = Agent(name="A", model=ScriptedModel([[function_call("ask", {"input": "x"}, call_id="c1")],
                                                     [assistant_message("done")]]),
                      tools=[inner.as_tool("ask", "Ask.", custom_output_extractor=echoed)])
    Runner.run_sync(agent, "hi", run_config=RunConfig(trace_path=path))
    text = open(path, encoding="utf-8").read()
    assert "configured with key ***" in text and key not in text
    assert redaction._held == ()  # every run ended: none holds a secret any more


def test_a_keyed_run_that_outlives_its_caller_releases_its_key_when_it_ends(tmp_path):
    """A traced run started in a tool's thread that a timeout left running ends after its caller did: its key is no
    longer held once it ends (it was kept for the ended caller's run, which never released it)."""
    caller_ended, inner_ended, path = threading.Event(), threading.Event(), str(tmp_path / "run.jsonl")

    def late() -> str:
        caller_ended.wait(10)
        inner = Agent(name="I", model=Keyed([[assistant_message("x")]], api_key="sk-late-inner-" + "Q" * 20))
        Runner.run_sync(inner, "hi", run_config=RunConfig(trace_path=path))
        inner_ended.set()
        return "ok"

    tool = function_tool(late, name_override="late")
    tool.timeout_seconds = 0.01
    outer = Agent(name="O", tools=[tool], model=ScriptedModel([[function_call("late", {}, call_id="c")],
                                                               [assistant_message("done")]]))
    Runner.run_sync(outer, "hi", run_config=RunConfig(trace_path=path))
    caller_ended.set()
    assert inner_ended.wait(10)
    assert redaction._held == ()


def test_a_credential_the_model_sends_in_a_header_is_hidden_in_its_trace(tmp_path):
    """A gateway's key given in default_headers (`X-Api-Key`), not as api_key=, echoed by a tool: hidden as the API
    key is."""
    key, path = "gw-" + "Q7" * 16, str(tmp_path / "run.jsonl")

    @function_tool
    def debug_info() -> str:
        """Show the gateway's headers."""
        return f"gateway headers: X-Api-Key={key}"

    steps = [[function_call("debug_info", {}, call_id="c1")], [assistant_message("ok")]]
    agent = Agent(name="A", tools=[debug_info], model=Keyed(steps, default_headers={"X-Api-Key": key}))
    Runner.run_sync(agent, "hi", run_config=RunConfig(trace_path=path))
    text = open(path, encoding="utf-8").read()
    assert "X-Api-Key=***" in text and key not in text
