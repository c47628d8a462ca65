"""A run's trace, as the kernel writes it: the spans upstream makes (task, agent, turn, generation, function,
handoff, guardrail) plus approvals, in a tree a person can read back with `python -m miniagents.tracing`.

And capabilities in a run: a fresh copy per run, tools and instructions for the model, the public agent kept
for results and plugins, and a capability its model cannot serve refused when the run starts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from miniagents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, ModelSettings,
                        OutputGuardrailTripwireTriggered, RunConfig, RunState, Runner, UserError, function_tool,
                        input_guardrail, output_guardrail, seams)
from miniagents.capabilities import Capability, Workspace
from miniagents.testing import ScriptedModel, assistant_message, function_call
from miniagents.tracing.tree import describe, read
from support import outputs_sent

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
        "run 'Help desk' 4 model calls, 0 in / 0 out tokens",  # the state's usage: the whole run so far
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
