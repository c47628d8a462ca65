"""Tracing (miniagents/tracing.py, trace_tree.py, trace.py): upstream's API recorded in-process, the JSON-lines
and stderr processors, the sensitive-data and API-key rules, the Runner's entry point `run_trace`, the tree
printer `python -m miniagents.tracing`, and the `miniagents.trace` name. Issue 14.

The spans below are written with the tracing API directly, shaped as the Runner will emit them
(`help_desk_runs`): task -> agent -> turn -> guardrail / generation / function / handoff / approval.
"""
from __future__ import annotations

import collections
import contextvars
import dataclasses
import io
import json
import logging
import os
import re
import string
import subprocess
import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from unittest import mock
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagents import MaxTurnsExceeded, ModelSettings, UserError, Usage, tracing
from miniagents.testing import assistant_message, function_call
from miniagents.tracing import tree
from miniagents.tracing.tree import describe, main, read, render

from support import ROOT  # noqa: E402


class Recorder(tracing.TracingProcessor):
    """Keeps every event as (event, export) so a test can read what processors saw, when they saw it."""

    def __init__(self):
        self.events, self.flushed, self.closed = [], 0, 0

    def on_trace_start(self, trace):
        self.events.append(("trace_start", trace.export()))

    def on_trace_end(self, trace):
        self.events.append(("trace_end", trace.export()))

    def on_span_start(self, span):
        self.events.append(("span_start", span.export()))

    def on_span_end(self, span):
        self.events.append(("span_end", span.export()))

    def force_flush(self):
        self.flushed += 1

    def shutdown(self):
        self.closed += 1

    def ended(self, kind=None):
        return [e for name, e in self.events if name == "span_end"
                and (kind is None or e["span_data"]["type"] == kind)]


class Config:
    """The RunConfig fields run_trace reads (RunConfig itself gains trace_path when the Runner is wired)."""

    def __init__(self, **fields):
        self.workflow_name, self.trace_id, self.group_id, self.trace_metadata = "Help desk", None, None, None
        self.tracing_disabled, self.trace_include_sensitive_data, self.trace_path = False, True, None
        self.__dict__.update(fields)


@pytest.fixture(autouse=True)
def clean_tracing(monkeypatch):
    """No processor, not disabled, no tracing variables: the state a fresh process starts in."""
    for name in ("MINIAGENTS_TRACE", "MINIAGENTS_DEBUG", "OPENAI_AGENTS_DISABLE_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracing.provider, "_disabled", None)
    tracing.set_trace_processors([])
    yield
    tracing.set_trace_processors([])


@pytest.fixture
def recorder():
    processor = Recorder()
    tracing.add_trace_processor(processor)
    return processor


def usage(inp, out, requests=1):
    return Usage(requests=requests, input_tokens=inp, output_tokens=out, total_tokens=inp + out).to_json()


def model_call(model_input, output, tokens, settings=None):
    """A generation span as the Runner makes it around one model call."""
    with tracing.generation_span(model="gpt-4o-mini", model_config=settings or ModelSettings(temperature=0)) as gen:
        gen.span_data.input = model_input
        gen.span_data.output = output
        gen.span_data.usage = usage(*tokens)


def help_desk_runs(config):
    """Two runs shaped exactly as the Runner emits them: the first hands off and pauses for an approval; the
    second (the resume) runs the approved call, whose tool fails, answers, and checks the output."""
    with tracing.run_trace(config) as task:
        agent = tracing.agent_span("Triage", handoffs=["Billing"], tools=["lookup_order"], output_type="str")
        agent.start(mark_as_current=True)
        with tracing.turn_span(1, "Triage") as turn:
            with tracing.guardrail_span("no_card_numbers") as guard:
                guard.span_data.triggered = False
            model_call([{"role": "user", "content": "Where is order A-1? I want a refund."}],
                       [function_call("lookup_order", {"order_id": "A-1"}, call_id="c1")], (42, 9))
            with tracing.function_span("lookup_order") as fn:
                fn.span_data.input = '{"order_id":"A-1"}'
                fn.span_data.output = "Order A-1 shipped on 2 May"
            turn.span_data.usage = usage(42, 9)
        with tracing.turn_span(2, "Triage"):
            model_call([], [function_call("transfer_to_billing", {}, call_id="c2")], (60, 5))
            with tracing.handoff_span(from_agent="Triage") as hand:
                hand.span_data.to_agent = "Billing"
        agent.finish(reset_current=True)
        agent = tracing.agent_span("Billing", tools=["refund"], output_type="str")
        agent.start(mark_as_current=True)
        with tracing.turn_span(3, "Billing"):
            model_call([], [function_call("refund", {"order_id": "A-1"}, call_id="c3")], (80, 7))
            with tracing.approval_span("refund", "c3", "pending"):
                pass
        agent.finish(reset_current=True)
        task.span_data.usage = usage(182, 21, requests=3)
    with tracing.run_trace(config) as task:
        agent = tracing.agent_span("Billing", tools=["refund"], output_type="str")
        agent.start(mark_as_current=True)
        with tracing.turn_span(3, "Billing"):
            with tracing.approval_span("refund", "c3", "approved"):
                pass
            with tracing.function_span("refund") as fn:
                fn.span_data.input = '{"order_id":"A-1"}'
                fn.span_data.output = "An error occurred while running the tool. Please try again."
                fn.set_error({"message": "Error running tool", "data": {"tool_name": "refund", "error": "ValueError"}})
        with tracing.turn_span(4, "Billing"):
            model_call([], [assistant_message("The refund failed; a person will call you today.")], (95, 12))
        with tracing.guardrail_span("polite") as guard:
            guard.span_data.triggered = False
        agent.finish(reset_current=True)


def out_of_turns_run(config):
    """A run that ends in an error: the model call fails once, then the turn limit is hit."""
    with pytest.raises(MaxTurnsExceeded):
        with tracing.run_trace(config):
            agent = tracing.agent_span("Triage", tools=[], output_type="str")
            agent.start(mark_as_current=True)
            try:
                with tracing.turn_span(1, "Triage"):
                    try:
                        with tracing.generation_span(model="gpt-4o-mini"):
                            raise TimeoutError("read timed out after 30 s, key sk-should-not-appear")
                    except TimeoutError:
                        pass
                agent.set_error({"message": "Max turns exceeded", "data": {"max_turns": 1}})
                raise MaxTurnsExceeded("Max turns (1) exceeded")
            finally:
                agent.finish(reset_current=True)


def normalized(text):
    text = re.sub(r"(trace|span)_[0-9a-f]{24,32}", r"\1_ID", text)
    return re.sub(r"\[(<1 ms|\d+ ms|\d+\.\d\d s)\]", "[T]", text)


HELP_DESK_TREE = """\
trace 'Help desk' trace_ID [T]
└─ run 'Help desk' [T] 3 model calls, 182 in / 21 out tokens
   ├─ agent Triage [T] tools: lookup_order; handoffs: Billing
   │  ├─ turn 1 (Triage) [T] 42 in / 9 out tokens
   │  │  ├─ guardrail no_card_numbers [T] passed
   │  │  ├─ model gpt-4o-mini [T] 42 in / 9 out tokens -> call lookup_order
   │  │  └─ tool lookup_order({"order_id":"A-1"}) [T] -> Order A-1 shipped on 2 May
   │  └─ turn 2 (Triage) [T]
   │     ├─ model gpt-4o-mini [T] 60 in / 5 out tokens -> call transfer_to_billing
   │     └─ handoff Triage -> Billing [T]
   └─ agent Billing [T] tools: refund
      └─ turn 3 (Billing) [T]
         ├─ model gpt-4o-mini [T] 80 in / 7 out tokens -> call refund
         └─ approval refund (call c3) [T] pending
trace 'Help desk' trace_ID [T]
└─ run 'Help desk' [T]
   └─ agent Billing [T] tools: refund
      ├─ turn 3 (Billing) [T]
      │  ├─ approval refund (call c3) [T] approved
      │  └─ tool refund({"order_id":"A-1"}) [T] -> An error occurred while running the tool. Please try again.  \
!! Error running tool {"tool_name": "refund", "error": "ValueError"}
      ├─ turn 4 (Billing) [T]
      │  └─ model gpt-4o-mini [T] 95 in / 12 out tokens -> "The refund failed; a person will call you today."
      └─ guardrail polite [T] passed
trace 'Help desk' trace_ID [T]
└─ run 'Help desk' [T]  !! MaxTurnsExceeded: Max turns (1) exceeded {"type": "MaxTurnsExceeded"}
   └─ agent Triage [T]  !! Max turns exceeded {"max_turns": 1}
      └─ turn 1 (Triage) [T]
         └─ model gpt-4o-mini [T]  !! TimeoutError {"type": "TimeoutError"}"""


def write_help_desk_file(tmp_path, **config):
    path = tmp_path / "run.jsonl"
    help_desk_runs(Config(trace_path=str(path), **config))
    out_of_turns_run(Config(trace_path=str(path), **config))
    return path


# --- The tree printer ----------------------------------------------------------------------------------


def test_the_tree_printer_shows_turns_model_calls_tools_handoffs_approvals_guardrails_and_errors(tmp_path):
    path = write_help_desk_file(tmp_path)
    traces, problems = read(path.read_text(encoding="utf-8").splitlines())
    assert problems == [] and len(traces) == 3
    assert normalized(render(traces)) == HELP_DESK_TREE
    assert "sk-should-not-appear" not in path.read_text(encoding="utf-8")  # only our own errors carry text


def test_python_dash_m_miniagents_trace_prints_the_file(tmp_path):
    path = write_help_desk_file(tmp_path)
    out = subprocess.run([sys.executable, "-m", "miniagents.tracing", str(path)], cwd=ROOT, capture_output=True,
                         env={**os.environ, "PYTHONPATH": ROOT, "PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 0, out.stderr
    assert normalized(out.stdout.decode("utf-8")).rstrip("\n") == HELP_DESK_TREE
    assert b"RuntimeWarning" not in out.stderr


def test_the_printer_falls_back_to_ascii_branches_when_the_terminal_cannot_show_box_lines(tmp_path):
    path = write_help_desk_file(tmp_path)
    out = subprocess.run([sys.executable, "-m", "miniagents.tracing", str(path)], cwd=ROOT, capture_output=True,
                         env={**os.environ, "PYTHONPATH": ROOT, "PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0 and out.stdout.decode("ascii").splitlines()[1] .startswith("`- run 'Help desk'")


def test_arguments_and_outputs_are_shortened_unless_full_is_asked(tmp_path, capsys):
    path = tmp_path / "long.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        with tracing.function_span("echo", input=json.dumps({"text": "x" * 500})) as fn:
            fn.span_data.output = "y" * 500
    assert main([str(path)]) == 0
    short = capsys.readouterr().out
    assert "x" * 100 not in short and "..." in short
    assert main([str(path), "--full"]) == 0
    assert "x" * 500 in capsys.readouterr().out


def test_the_printer_shows_unfinished_spans_and_reports_lines_it_cannot_read(tmp_path, capsys):
    path = tmp_path / "crash.jsonl"
    processor = tracing.JsonlTraceProcessor(path)
    tracing.add_trace_processor(processor)
    with tracing.trace("crashed"):
        tracing.function_span("slow_tool").start()  # the process died before this span ended
    processor.shutdown()
    with open(path, "a", encoding="utf-8") as f:
        f.write("not json\n[1, 2]\n\n")
    assert main([str(path)]) == 0
    captured = capsys.readouterr()
    assert "tool slow_tool [unfinished]" in captured.out
    assert "line 4 is not JSON; skipped" in captured.err and "line 5 is not a trace or span record" in captured.err


def test_a_line_a_failed_write_left_half_written_is_ended_before_the_next_record(tmp_path, monkeypatch):
    """A full disk (or a killed process) stops a write inside a line: the next record, by the next run's processor
    (which finds the file's end torn) or by the same one once there is room again, starts a line of its own instead of
    joining the half line (which the reader then skips, losing both)."""
    from miniagents.tracing import processors

    path, real_write, calls = tmp_path / "full.jsonl", os.write, []
    path.write_text('{"event": "span_st', encoding="utf-8")  # an earlier run's last write, cut short
    tracing.set_trace_processors([processors.JsonlTraceProcessor(path)])
    with tracing.trace("next run"):
        pass

    def write(fd, data):  # a disk that fills part-way through the next write
        calls.append(data)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data[:10] if len(calls) == 1 else data)

    monkeypatch.setattr(processors.os, "write", write)
    with tracing.trace("disk full"):
        pass
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"event": "span_st' and lines[3] == calls[0][:10].decode()
    assert [json.loads(lines[n])["event"] for n in (1, 2, 4)] == ["trace_start", "trace_end", "trace_end"]


HOSTILE_SPANS = [{"span_data": "x"}, {"id": [1]}, {"parent_id": {}}, {"started_at": 5}, {"ended_at": ["x"]},
                 {"span_data": {"type": 5}}, {"span_data": {"type": "custom", "data": [1]}}]


def test_the_printer_skips_and_reports_lines_of_shapes_it_cannot_read(tmp_path, capsys):
    """A span whose ids, times or data are not of the shapes the tree reads, a line nested deeper than Python reads,
    an odd value where a model's output or an agent's tools go: reported, skipped or shown, never a crash."""
    good = {"object": "trace.span", "id": "s1", "trace_id": "t1", "started_at": "2026-01-01T00:00:00+00:00",
            "span_data": {"type": "generation", "output": [{"type": "message", "content": 5},
                                                           {"type": "message", "content": [{"text": [1]}]}]}}
    odd_agent = dict(good, id="s2", span_data={"type": "agent", "name": "A", "tools": 5})
    lines = [json.dumps(good), json.dumps(odd_agent), "[" * 100000 + "]" * 100000]
    lines += [json.dumps({**good, "id": f"x{n}", **change}) for n, change in enumerate(HOSTILE_SPANS)]
    (tmp_path / "hostile.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main([str(tmp_path / "hostile.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "model ? [unfinished] ->" in captured.out and "agent A [unfinished]" in captured.out
    assert "line 3 nests deeper than Python reads; skipped" in captured.err
    assert [f"line {n} is a span record of a shape the tree cannot read" in captured.err
            for n in range(4, 4 + len(HOSTILE_SPANS))] == [True] * len(HOSTILE_SPANS)


def test_the_printer_skips_a_line_longer_than_its_cap_reading_at_most_the_cap(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tree, "MAX_LINE", 200)
    span = {"object": "trace.span", "id": "s1", "trace_id": "t1", "span_data": {"type": "custom", "name": "kept"}}
    long = dict(span, id="s2", span_data={"type": "custom", "name": "x" * 1000})
    (tmp_path / "long.jsonl").write_text(f"{json.dumps(long)}\n{json.dumps(span)}\n", encoding="utf-8")
    with open(tmp_path / "long.jsonl", encoding="utf-8") as f:
        assert [len(line) for line in tree.capped_lines(f)] == [201, len(json.dumps(span)) + 1]
    assert main([str(tmp_path / "long.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "line 1 is longer than 200 characters; skipped" in captured.err and "kept" in captured.out
    assert "x" * 10 not in captured.out


def test_the_printers_cap_is_the_16_mi_characters_its_page_promises(tmp_path, capsys):
    def line_of(length, name):  # a span record exactly `length` characters long
        span = {"object": "trace.span", "id": name, "trace_id": "t1", "span_data": {"type": "custom", "name": ""}}
        span["span_data"]["name"] = name + "x" * (length - len(json.dumps(span)) - len(name))
        return json.dumps(span)

    cap = 16 * 2 ** 20  # docs/tracing.md: "longer than 16 Mi characters ... skipped"
    (tmp_path / "big.jsonl").write_text(f"{line_of(cap, 'kept')}\n{line_of(cap + 1, 'over')}\n", encoding="utf-8")
    assert main([str(tmp_path / "big.jsonl")]) == 0
    captured = capsys.readouterr()
    assert f"line 2 is longer than {cap} characters; skipped" in captured.err and "line 1" not in captured.err
    assert "─ keptxxx" in captured.out and "over" not in captured.out


def test_the_printer_exits_with_a_message_for_a_missing_or_empty_file(tmp_path, capsys):
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "for reading: No such file or directory" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("")
    assert main([str(tmp_path / "empty.jsonl")]) == 1
    assert "no traces" in capsys.readouterr().err


def test_a_spans_end_record_wins_over_its_start_in_whatever_order_the_file_holds_them():
    # A file merged from several, or sorted by another tool, can hold an end before its start: the end says more.
    span = {"object": "trace.span", "id": "s1", "trace_id": "t1", "parent_id": None,
            "started_at": "2026-01-01T00:00:00+00:00", "span_data": {"type": "function", "name": "f"}}
    start = dict(span, event="span_start")
    end = dict(span, event="span_end", ended_at="2026-01-01T00:00:01+00:00")
    for order in ([start, end], [end, start]):
        (_, entry), = read(json.dumps(r) for r in order)[0]
        assert entry["spans"]["s1"]["event"] == "span_end"
        assert "unfinished" not in render(read(json.dumps(r) for r in order)[0])


def test_spans_whose_parent_is_not_in_the_file_are_shown_at_the_top_of_their_trace():
    lines = [json.dumps({"object": "trace.span", "id": f"s{n}", "trace_id": "t1", "parent_id": "gone",
                         "started_at": f"2026-01-01T00:00:0{n}+00:00",
                         "span_data": {"type": "handoff", "from_agent": "A", "to_agent": f"B{n}"}}) for n in (1, 2)]
    assert render(read(lines)[0]).splitlines() == ["trace t1", "├─ handoff A -> B1 [unfinished]",
                                                   "└─ handoff A -> B2 [unfinished]"]


span_ids = st.sampled_from(["a", "b", "c", "d", "e"])
records = st.lists(st.fixed_dictionaries({
    "object": st.just("trace.span"), "id": span_ids, "trace_id": st.sampled_from(["t1", "t2"]),
    "parent_id": st.one_of(st.none(), span_ids), "event": st.sampled_from(["span_start", "span_end"]),
    "started_at": st.sampled_from([None, "2026-01-01T00:00:00+00:00", "garbage"]),
    "ended_at": st.sampled_from([None, "2026-01-01T00:00:01+00:00"]),
    "span_data": st.one_of(st.just({"type": "function", "name": "f"}), st.dictionaries(st.text(), st.text())),
    "error": st.one_of(st.none(), st.just({"message": "m", "data": None}), st.text())}), max_size=12)


@settings(max_examples=200, deadline=None)
@given(records)
def test_every_span_in_a_file_is_printed_exactly_once_whatever_its_parent_links(recs):
    traces, _ = read(json.dumps(r) for r in recs)
    text = render(traces)
    lines = text.splitlines()
    assert len(lines) == len(traces) + sum(len(entry["spans"]) for _, entry in traces)


HOSTILE = st.lists(st.sampled_from(["x", " ", "\n", "\r", "\t", "\x1b[31m", "\x1b]0;owned\x07", "\x00", "\u2028",
                                    "\u202e", "\x85", "\x7f"]), max_size=8).map("".join)


@st.composite
def hostile_spans(draw):
    """One span of each kind the tree names, every text the tree shows from it drawn from control characters."""
    text = lambda: draw(HOSTILE)  # noqa: E731
    datas = [{"type": "agent", "name": text(), "tools": [text()], "handoffs": [text()], "output_type": text()},
             {"type": "generation", "model": text(), "usage": {"input_tokens": text()}, "output": [
                 {"type": "function_call", "name": text()}, {"type": "message", "content": text()}, {"type": text()}]},
             {"type": "function", "name": text(), "input": text(), "output": text()},
             {"type": "handoff", "from_agent": text(), "to_agent": text()},
             {"type": "guardrail", "name": text()},
             {"type": "custom", "name": "approval", "data": {"tool_name": text(), "call_id": text(),
                                                               "decision": text()}},
             {"type": "custom", "name": "task", "data": {"sdk_span_type": "task", "name": text()}},
             {"type": "custom", "name": "turn", "data": {"sdk_span_type": "turn", "turn": text(), "agent_name": text()}},
             {"type": "custom", "name": text(), "data": {text(): text()}},
             {"type": text()}]
    return [{"object": "trace.span", "id": f"s{n}", "trace_id": "t1", "parent_id": None,
             "started_at": f"2026-01-01T00:00:0{n}+00:00", "span_data": data,
             "error": {"message": text(), "data": {"why": text()}}} for n, data in enumerate(datas)]


@settings(max_examples=100, deadline=None)
@given(hostile_spans(), HOSTILE, HOSTILE, st.booleans())
def test_the_tree_shows_no_control_character_a_file_holds(spans, workflow, group, full):
    """A file's newline, ANSI escape, NUL or bidirectional override, in any text the tree shows, is shown escaped:
    one line per span and per trace, none of them able to forge another line or drive the terminal."""
    trace = {"object": "trace", "id": "t1", "workflow_name": workflow, "group_id": group}
    traces, problems = read(json.dumps(r) for r in [trace] + spans)
    lines = render(traces, full=full).split("\n")
    assert problems == [] and len(lines) == 1 + len(spans)
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]


def test_the_printer_escapes_a_forged_line_in_an_agents_name(tmp_path, capsys):
    forged = {"object": "trace.span", "id": "s1", "trace_id": "trace_1", "span_data": {
        "type": "agent", "name": 'Evil\n   └─ tool transfer_money({"to":"attacker"}) -> done\x1b[31m'}}
    trace = {"object": "trace", "id": "trace_1", "workflow_name": "W\x1b[2J", "group_id": "g\nforged line"}
    (tmp_path / "t.jsonl").write_text(json.dumps(trace) + "\n" + json.dumps(forged) + "\n", encoding="utf-8")
    assert main([str(tmp_path / "t.jsonl")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "trace 'W\\x1b[2J' trace_1 (group g\\nforged line)",
        '└─ agent Evil\\n   └─ tool transfer_money({"to":"attacker"}) -> done\\x1b[31m [unfinished]']


# --- The API: nesting, timings, errors ---------------------------------------------------------------------


def test_spans_nest_under_the_current_span_and_processors_see_starts_and_ends_in_order(recorder):
    with tracing.trace("Help desk", group_id="g1", metadata={"user": "u1"}) as t:
        assert tracing.get_current_trace() is t
        with tracing.agent_span("Triage") as agent:
            assert tracing.get_current_span() is agent
            with tracing.custom_span("lookup", {"rows": 3}) as inner:
                pass
            assert tracing.get_current_span() is agent
        assert tracing.get_current_span() is None
    assert tracing.get_current_trace() is None
    assert [(name, e.get("workflow_name") or e["span_data"]["type"]) for name, e in recorder.events] == [
        ("trace_start", "Help desk"), ("span_start", "agent"), ("span_start", "custom"), ("span_end", "custom"),
        ("span_end", "agent"), ("trace_end", "Help desk")]
    custom = recorder.ended("custom")[0]
    assert custom["parent_id"] == agent.span_id and custom["trace_id"] == t.trace_id == agent.trace_id
    assert custom["span_data"] == {"type": "custom", "name": "lookup", "data": {"rows": 3}}
    assert custom["started_at"] <= custom["ended_at"] and inner.ended_at == custom["ended_at"]
    assert re.fullmatch(r"trace_[0-9a-f]{32}", t.trace_id) and re.fullmatch(r"span_[0-9a-f]{24}", agent.span_id)
    assert recorder.events[0][1] == {"object": "trace", "id": t.trace_id, "workflow_name": "Help desk",
                                     "group_id": "g1", "metadata": {"user": "u1"}} == t.to_json()


def test_upstreams_export_shapes_for_each_span_kind(recorder):
    with tracing.trace("shapes"):
        spans = [tracing.agent_span("A", handoffs=["B"], tools=["t"], output_type="Answer"),
                 tracing.function_span("t", input="{}", output={"x": 1}),
                 tracing.generation_span(input=[], output=[], model="m", usage={"input_tokens": 1}),
                 tracing.handoff_span("A", "B"), tracing.guardrail_span("g", triggered=True),
                 tracing.turn_span(2, "A"), tracing.task_span("wf")]
        exported = [s.span_data.export() for s in spans]
    assert exported == [
        {"type": "agent", "name": "A", "handoffs": ["B"], "tools": ["t"], "output_type": "Answer"},
        {"type": "function", "name": "t", "input": "{}", "output": "{'x': 1}", "mcp_data": None},
        {"type": "generation", "input": [], "output": [], "model": "m", "model_config": None,
         "usage": {"input_tokens": 1}},
        {"type": "handoff", "from_agent": "A", "to_agent": "B"},
        {"type": "guardrail", "name": "g", "triggered": True},
        {"type": "custom", "name": "turn", "data": {"sdk_span_type": "turn", "turn": 2, "agent_name": "A"}},
        {"type": "custom", "name": "task", "data": {"sdk_span_type": "task", "name": "wf"}}]


def test_explicit_parents_and_manual_start_finish(recorder):
    t = tracing.trace("manual")
    t.start()
    assert tracing.get_current_trace() is None  # not marked current
    parent = tracing.agent_span("A", parent=t)
    parent.start()
    child = tracing.function_span("f", parent=parent)
    child.start()
    child.finish()
    parent.finish()
    t.finish()
    assert child.parent_id == parent.span_id and parent.parent_id is None and child.trace_id == t.trace_id
    assert [n for n, _ in recorder.events].count("span_end") == 2


def test_set_error_and_an_exception_leaving_a_span_are_recorded_without_foreign_exception_text(recorder):
    with tracing.trace("errors"):
        with tracing.custom_span("explicit") as span:
            span.set_error({"message": "Widget failed", "data": {"widget": 7}})
        with pytest.raises(ValueError):
            with tracing.custom_span("raised"):
                raise ValueError("password=hunter2")
        with pytest.raises(UserError):
            with tracing.custom_span("ours"):
                raise UserError("bad config")
    errors = {e["span_data"]["name"]: e["error"] for e in recorder.ended()}
    assert errors == {"explicit": {"message": "Widget failed", "data": {"widget": 7}},
                      "raised": {"message": "ValueError", "data": {"type": "ValueError"}},
                      "ours": {"message": "UserError: bad config", "data": {"type": "UserError"}}}


def test_contexts_copied_into_threads_keep_the_parent_and_bare_threads_do_not(recorder):
    seen = {}
    with tracing.trace("threads"):
        with tracing.turn_span(1, "A") as turn:
            def tool(name):
                with tracing.function_span(name) as span:
                    seen[name] = (tracing.get_current_trace() is not None, span)

            jobs = [(contextvars.copy_context(), name) for name in ("copied_1", "copied_2")]  # one copy per job
            with ThreadPoolExecutor(max_workers=2) as pool:
                list(pool.map(lambda job: job[0].run(tool, job[1]), jobs))
            bare = threading.Thread(target=tool, args=("bare",))
            bare.start()
            bare.join()
    assert seen["copied_1"][1].parent_id == turn.span_id == seen["copied_2"][1].parent_id
    assert seen["copied_1"][0] and not seen["bare"][0]
    assert isinstance(seen["bare"][1], tracing.NoOpSpan)
    assert sorted(e["span_data"]["name"] for e in recorder.ended("function")) == ["copied_1", "copied_2"]


def test_a_failing_processor_is_logged_by_type_and_never_breaks_the_trace(recorder, caplog):
    class Broken(Recorder):
        def on_span_end(self, span):
            raise RuntimeError("secret detail")

    tracing.set_trace_processors([Broken(), recorder])
    with caplog.at_level(logging.WARNING, logger="miniagents"):
        with tracing.trace("x"):
            with tracing.custom_span("still recorded"):
                pass
    assert [e["span_data"]["name"] for e in recorder.ended()] == ["still recorded"]
    assert "Broken failed in on_span_end (RuntimeError)" in caplog.text and "secret detail" not in caplog.text


def test_flush_traces_asks_every_registered_processor(recorder):
    tracing.flush_traces()
    assert recorder.flushed == 1


# --- Cheap when unused, and disabling --------------------------------------------------------------------


def test_with_no_processor_traces_are_silent_and_every_span_is_a_no_op():
    assert not tracing.recording()
    with tracing.trace("Help desk", group_id="g1") as t:
        assert t.name == "Help desk" and t.trace_id.startswith("trace_")
        assert not tracing.recording()
        with tracing.agent_span("A") as span:
            assert isinstance(span, tracing.NoOpSpan) and span.export() is None
            assert (span.trace_id, span.span_id, span.parent_id) == ("no-op", "no-op", None)  # upstream's ids
            assert tracing.get_current_span() is span  # upstream: a no-op span is still current
    with tracing.run_trace(Config()) as task:
        assert task is None



def test_a_trace_finished_twice_ends_once(recorder):
    trace = tracing.trace("Help desk")
    trace.start()
    trace.finish()
    trace.finish()
    assert [name for name, _ in recorder.events] == ["trace_start", "trace_end"]


def test_a_disabled_trace_stays_current_until_it_is_finished_with_reset_current():
    trace = tracing.trace("Help desk", disabled=True)
    assert isinstance(trace, tracing.NoOpTrace)
    assert (trace.trace_id, trace.name, trace.export(), trace.to_json()) == ("no-op", "no-op", None, None)  # upstream's
    trace.start(mark_as_current=True)
    trace.finish()  # upstream: finishing without reset_current leaves the current trace alone
    assert tracing.get_current_trace() is trace
    trace.finish(reset_current=True)
    assert tracing.get_current_trace() is None

@pytest.mark.parametrize("under", ["a recorded trace", "a disabled trace", "no trace"])
def test_every_span_leaves_the_current_span_as_it_found_it_however_it_ends(under):
    """A span becomes current only when asked (`with`, or start(mark_as_current=True)), stays current when it is
    finished without reset_current (upstream's rule), and the previous span is current again once it is reset,
    an exception leaving the block included. Without any trace a span is never current."""
    if under == "a recorded trace":
        tracing.add_trace_processor(Recorder())

    def scenario():
        outer = None if under == "no trace" else tracing.trace("t", disabled=under == "a disabled trace")
        if outer is not None:
            outer.start(mark_as_current=True)
        current = (lambda span: None if outer is None else span)
        with tracing.agent_span("A") as agent:
            assert tracing.get_current_span() is current(agent)
            with pytest.raises(RuntimeError):
                with tracing.function_span("f") as failing:
                    assert tracing.get_current_span() is current(failing)
                    raise RuntimeError("boom")
            assert tracing.get_current_span() is current(agent)
            unmarked = tracing.custom_span("unmarked")
            unmarked.start()
            assert tracing.get_current_span() is current(agent)
            unmarked.finish(reset_current=True)  # it never became current: nothing to restore
            assert tracing.get_current_span() is current(agent)
            marked = tracing.custom_span("marked")
            marked.start(mark_as_current=True)
            marked.finish()
            assert tracing.get_current_span() is current(marked)  # finished without reset_current: still current
        assert tracing.get_current_span() is None  # the agent span's end restores what was before it
        return outer

    outer = contextvars.copy_context().run(scenario)  # a context of its own: nothing is left current here
    assert tracing.get_current_span() is None and tracing.get_current_trace() is None
    if outer is not None:
        outer.finish()


@pytest.mark.parametrize("disabled", [False, True], ids=["recorded", "disabled"])
def test_every_trace_leaves_the_current_trace_as_it_found_it_however_it_ends(recorder, disabled):
    def scenario():
        first = tracing.trace("first", disabled=disabled)
        first.start(mark_as_current=True)
        unmarked = tracing.trace("unmarked", disabled=disabled)
        unmarked.start()
        assert tracing.get_current_trace() is first
        unmarked.finish(reset_current=True)  # it never became current: nothing to restore
        assert tracing.get_current_trace() is first
        twice = tracing.trace("twice", disabled=disabled)
        twice.start(mark_as_current=True)
        twice.finish(reset_current=True)
        twice.finish(reset_current=True)  # restored once: the second finish changes nothing, and does not fail
        assert tracing.get_current_trace() is first
        with pytest.raises(RuntimeError):
            with tracing.trace("inner", disabled=disabled) as inner:
                assert tracing.get_current_trace() is inner
                raise RuntimeError("boom")
        assert tracing.get_current_trace() is first
        kept = tracing.trace("kept", disabled=disabled)
        kept.start(mark_as_current=True)
        kept.finish()  # without reset_current: still current, as upstream's
        assert tracing.get_current_trace() is kept
        first.finish(reset_current=True)  # restores what was current before `first`
        assert tracing.get_current_trace() is None

    contextvars.copy_context().run(scenario)
    assert tracing.get_current_trace() is None


def test_upstreams_scope_accessors_set_read_and_restore_the_current_trace_and_span(recorder):
    def scenario():
        with tracing.trace("t") as t, tracing.agent_span("A") as agent:
            assert (tracing.Scope.get_current_trace(), tracing.Scope.get_current_span()) == (t, agent)
            other_trace, other_span = tracing.trace("other"), tracing.custom_span("other")
            trace_token = tracing.Scope.set_current_trace(other_trace)
            span_token = tracing.Scope.set_current_span(other_span)
            assert (tracing.get_current_trace(), tracing.get_current_span()) == (other_trace, other_span)
            tracing.Scope.reset_current_span(span_token)
            tracing.Scope.reset_current_trace(trace_token)
            assert (tracing.get_current_trace(), tracing.get_current_span()) == (t, agent)

    contextvars.copy_context().run(scenario)


@pytest.mark.parametrize("under", ["a recorded trace", "a disabled trace"])
def test_a_span_finished_twice_ends_once_and_restores_the_current_span_once(under):
    if under == "a recorded trace":
        tracing.add_trace_processor(Recorder())

    def scenario():
        with tracing.trace("t", disabled=under == "a disabled trace"):
            with tracing.agent_span("A") as agent:
                span = tracing.custom_span("twice")
                span.start(mark_as_current=True)
                span.finish(reset_current=True)
                span.finish(reset_current=True)  # nothing left to restore: no error, the agent span stays current
                assert tracing.get_current_span() is agent

    contextvars.copy_context().run(scenario)


def test_recording_is_true_only_under_a_trace_that_has_a_processor(recorder):
    assert not tracing.recording()
    with tracing.trace("x"):
        assert tracing.recording()
        with tracing.custom_span("disabled one", disabled=True):
            assert not tracing.recording()


@pytest.mark.parametrize("how", ["function", "environment", "argument"])
def test_tracing_can_be_disabled_like_upstream(recorder, monkeypatch, how):
    if how == "function":
        tracing.set_tracing_disabled(True)
    elif how == "environment":
        monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    with tracing.trace("off", disabled=how == "argument") as t:
        assert isinstance(t, tracing.NoOpTrace) and t.export() is None
        with tracing.agent_span("A") as span:
            assert isinstance(span, tracing.NoOpSpan)
        with tracing.run_trace(Config()) as task:
            assert task is None
    assert recorder.events == []
    tracing.set_tracing_disabled(False)


def test_run_config_tracing_disabled_opens_no_file(tmp_path):
    path = tmp_path / "never.jsonl"
    with tracing.run_trace(Config(tracing_disabled=True, trace_path=str(path))) as task:
        assert task is None
    assert not path.exists()


# --- run_trace: the Runner's entry point -------------------------------------------------------------------


def test_a_run_with_a_trace_path_writes_its_own_trace_and_closes_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    config = Config(trace_path=str(path), trace_id="trace_" + "ab" * 16, group_id="conv-7",
                    trace_metadata={"ticket": 12})
    with tracing.run_trace(config) as task:
        assert tracing.get_current_span() is task and tracing.recording()
        with tracing.agent_span("A"):
            pass
    assert tracing.get_current_trace() is None and tracing.get_current_span() is None
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["event"] for line in lines] == ["trace_start", "span_start", "span_start", "span_end", "span_end",
                                                 "trace_end"]
    assert lines[0] == {"event": "trace_start", "object": "trace", "id": "trace_" + "ab" * 16,
                        "workflow_name": "Help desk", "group_id": "conv-7", "metadata": {"ticket": 12}}
    if os.name == "posix":
        assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    with tracing.trace("after the run"):  # the run's processor is gone: nothing more reaches the file
        with tracing.custom_span("later"):
            pass
    assert len(path.read_text(encoding="utf-8").splitlines()) == 6


def test_the_environment_chooses_the_file_and_the_config_wins_over_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIAGENTS_TRACE", str(tmp_path / "env.jsonl"))
    with tracing.run_trace(Config()):
        pass
    with tracing.run_trace(Config(trace_path=str(tmp_path / "config.jsonl"))):
        pass
    assert len((tmp_path / "env.jsonl").read_text().splitlines()) == 4  # appended, one run each
    assert len((tmp_path / "config.jsonl").read_text().splitlines()) == 4


def test_a_nested_run_writing_to_the_same_file_or_view_adds_no_second_processor(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENTS_TRACE", str(tmp_path / "t.jsonl"))
    monkeypatch.setenv("MINIAGENTS_DEBUG", "1")
    with tracing.run_trace(Config()):
        with tracing.function_span("ask_expert"):
            with tracing.run_trace(Config(trace_path=os.path.join(str(tmp_path), ".", "t.jsonl"))):
                with tracing.handoff_span("A", "B"):
                    pass
    ends = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [e["span_data"].get("type") for e in ends if e["event"] == "span_end"] == [
        "handoff", "custom", "function", "custom"]
    assert capsys.readouterr().err.count("handoff A -> B") == 1


def test_a_trace_file_that_cannot_be_opened_is_a_user_error_when_the_run_starts(tmp_path):
    with pytest.raises(UserError, match="cannot open the trace file .*for appending"):
        with tracing.run_trace(Config(trace_path=str(tmp_path / "no" / "such" / "dir" / "t.jsonl"))):
            pytest.fail("the run must not start")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("reader", [False, True])
def test_a_fifo_as_the_trace_file_is_a_user_error_at_once(tmp_path, reader):
    """Opening a FIFO waits for a reader, for ever: a trace file is a regular file, refused otherwise."""
    os.mkfifo(tmp_path / "fifo")
    held = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        with pytest.raises(UserError, match="for appending: it is not a regular file"):
            with tracing.run_trace(Config(trace_path=str(tmp_path / "fifo"))):
                pytest.fail("the run must not start")
    finally:
        if held is not None:
            os.close(held)


@pytest.mark.parametrize("path, message", [("t\0.jsonl", "cannot hold a NUL character"),
                                           (5, "must be a str or an os.PathLike, got int")])
def test_a_trace_path_that_is_not_a_file_name_is_a_user_error_when_the_run_starts(tmp_path, path, message):
    with pytest.raises(UserError, match=message):
        with tracing.run_trace(Config(trace_path=path)):
            pytest.fail("the run must not start")
    with tracing.run_trace(Config(trace_path=str(tmp_path / "outer.jsonl"))):  # compared with the caller's file
        with pytest.raises(UserError, match=message):
            with tracing.run_trace(Config(trace_path=path)):
                pytest.fail("the nested run must not start")


def test_a_run_inside_the_callers_trace_nests_there_and_adds_its_file_for_its_own_spans(tmp_path, recorder):
    path = tmp_path / "inner.jsonl"
    with tracing.trace("outer") as outer:
        with tracing.custom_span("before"):
            pass
        with tracing.run_trace(Config(trace_path=str(path))) as task:
            with tracing.agent_span("A"):
                pass
    assert task.trace_id == outer.trace_id and task.parent_id is None
    file_events = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    assert file_events == ["span_start", "span_start", "span_end", "span_end"]  # no outer trace, no "before"
    assert [n for n, _ in recorder.events].count("span_end") == 3  # the global processor saw everything


def test_a_nested_run_in_a_tool_nests_under_the_tool_and_keeps_the_stricter_sensitive_data_rule(recorder):
    with tracing.run_trace(Config(trace_include_sensitive_data=False)):
        with tracing.function_span("ask_expert") as tool_span:
            with tracing.run_trace(Config(trace_include_sensitive_data=True)) as inner:
                with tracing.function_span("inner_tool", input='{"q": 1}', output="secret answer"):
                    pass
    assert inner.parent_id == tool_span.span_id
    inner_tool = [e for e in recorder.ended("function") if e["span_data"]["name"] == "inner_tool"][0]
    assert inner_tool["span_data"]["input"] is None and inner_tool["span_data"]["output"] is None


def test_an_error_escaping_the_run_is_recorded_on_its_task_span(recorder):
    with pytest.raises(MaxTurnsExceeded):
        with tracing.run_trace(Config()):
            raise MaxTurnsExceeded("Max turns (3) exceeded")
    task = recorder.ended()[0]
    assert task["error"] == {"message": "MaxTurnsExceeded: Max turns (3) exceeded",
                             "data": {"type": "MaxTurnsExceeded"}}


# --- Sensitive data and secrets ----------------------------------------------------------------------------


def test_without_sensitive_data_processors_never_see_model_or_tool_inputs_and_outputs(recorder):
    help_desk_runs(Config(trace_include_sensitive_data=False))
    generations, functions = recorder.ended("generation"), recorder.ended("function")
    assert generations and functions
    for name, event in recorder.events:
        data = event.get("span_data") or {}
        if data.get("type") in ("generation", "function"):
            assert data["input"] is None and data["output"] is None, (name, data)
    assert generations[0]["span_data"]["usage"]["input_tokens"] == 42  # counts are not sensitive
    assert generations[0]["span_data"]["model_config"] == {"temperature": 0}


def test_with_sensitive_data_the_items_and_arguments_are_recorded(recorder):
    help_desk_runs(Config(trace_include_sensitive_data=True))
    first = recorder.ended("generation")[0]["span_data"]
    assert first["input"] == [{"role": "user", "content": "Where is order A-1? I want a refund."}]
    assert first["output"][0]["name"] == "lookup_order"
    assert recorder.ended("function")[0]["span_data"]["input"] == '{"order_id":"A-1"}'


def test_an_api_key_never_reaches_a_trace_file(tmp_path):
    secret = "sk-proj-DoNotLeakMe123"
    path = tmp_path / "keys.jsonl"
    tracing.set_tracing_export_api_key(secret)
    settings_with_secrets = ModelSettings(temperature=0.2, extra_headers={"Authorization": f"Bearer {secret}"},
                                          extra_query={"key": secret}, extra_body={"api_key": secret},
                                          extra_args={"api_key": secret},
                                          metadata={"api_key": secret, "Authorization": f"Bearer {secret}",
                                                    "team": "A"})
    with tracing.trace("wf", tracing={"api_key": secret}) as t:
        with tracing.run_trace(Config(trace_path=str(path))):
            model_call([], [], (1, 1), settings=settings_with_secrets)
            with tracing.generation_span(model="m", model_config={"api_key": secret, "top_p": 0.5}):
                pass
    text = path.read_text(encoding="utf-8")
    assert secret not in text and t.tracing_api_key is None and secret not in json.dumps(t.to_json())
    configs = [r["span_data"]["model_config"] for r in map(json.loads, text.splitlines())
               if r["event"] == "span_end" and r["span_data"]["type"] == "generation"]
    assert configs == [{"temperature": 0.2, "metadata": {"api_key": "***", "Authorization": "***", "team": "A"}},
                       {"top_p": 0.5}]


# A key's shape ("sk-" and at least 8 more characters), so that it never is a word the record itself is made of.
SECRET = st.text(string.ascii_letters + string.digits + "-_.~+/=", min_size=8, max_size=40).map(lambda s: "sk-" + s)
CREDENTIAL_KEYS = st.sampled_from(["api_key", "Authorization", "X-Api-Key", "client_secret", "accessToken", "password",
                                   "sig", "Cookie", "refresh-token"])
DEPTHS = st.lists(st.sampled_from(["note", "ctx", "user", 0]), max_size=6)  # 0: inside a list


def at(path, value):
    """`value` nested along `path`: each name an object's key, each 0 a list."""
    for step in reversed(path):
        value = [value] if step == 0 else {step: value}
    return value


def leaked(text, *secrets):
    """The secrets found in a text, as they are, as JSON escapes them, or percent-encoded."""
    return [s for s in secrets if s in text or json.dumps(s)[1:-1] in text or quote(s, safe="") in text]


@settings(max_examples=60, deadline=None)
@given(env_secret=SECRET, named_secret=SECRET, bearer_secret=SECRET, depth=DEPTHS, name=CREDENTIAL_KEYS,
       variable=st.sampled_from(["OPENAI_API_KEY", "HF_TOKEN", "ACME_CLIENT_SECRET", "my_service_password"]))
def test_no_credential_reaches_a_trace_file_or_the_live_view_wherever_it_is_put(tmp_path_factory, env_secret,
                                                                                named_secret, bearer_secret, depth,
                                                                                name, variable):
    """An environment credential's value (in texts, in keys, percent-encoded in a URL), a credential-named key's
    value and a Bearer token, at a generated depth of trace metadata, a custom span's data, a tool's output and
    the model settings: none is in the file or on the live view, and the text around them is kept."""
    path, console = tmp_path_factory.mktemp("secrets") / "t.jsonl", io.StringIO()
    prose = f"the {variable} is {env_secret}; send Bearer {bearer_secret} to https://h/cb?s={quote(env_secret)}"
    hidden = at(depth, {name: named_secret, "text": prose, env_secret: "a key named by the secret"})
    config = Config(trace_path=str(path), workflow_name=f"wf {env_secret}", trace_metadata=hidden)
    with mock.patch.dict(os.environ, {variable: env_secret}):
        tracing.set_trace_processors([tracing.ConsoleTraceProcessor(console)])
        try:
            with tracing.run_trace(config):
                with tracing.custom_span(env_secret, {"data": hidden}):
                    pass
                with tracing.function_span("tool", input=json.dumps({"q": prose}), output=prose):
                    pass
                with tracing.generation_span(model=env_secret, model_config=ModelSettings(metadata={"m": hidden})) as gen:
                    gen.span_data.output = [assistant_message(prose)]
        finally:
            tracing.set_trace_processors([])
    text = path.read_text(encoding="utf-8")
    assert leaked(text, env_secret, named_secret, bearer_secret) == []
    assert leaked(console.getvalue(), env_secret, named_secret, bearer_secret) == []
    outputs = [r["span_data"]["output"] for r in map(json.loads, text.splitlines()) if r.get("event") == "span_end"
               and r["span_data"]["type"] == "function"]
    assert outputs == [f"the {variable} is ***; send Bearer *** to https://h/cb?s=***"]
    assert f'"{name}": "***"' in text and "[miniagents] trace 'wf ***'" in console.getvalue()


def test_a_processor_of_your_own_never_sees_a_credential_named_model_setting(recorder):
    """Your processor gets spans as they are, but the settings are hidden as they are made: at any depth."""
    settings = ModelSettings(metadata={"team": "A", "ctx": [{"client_secret": "s3cret-value", "n": 1}]})
    with tracing.trace("wf"):
        with tracing.generation_span(model="m", model_config=settings):
            pass
    assert recorder.ended("generation")[0]["span_data"]["model_config"] == {
        "metadata": {"team": "A", "ctx": [{"client_secret": "***", "n": 1}]}}


def test_an_environment_key_read_with_its_newline_is_hidden_where_it_is_echoed_without(tmp_path, monkeypatch):
    monkeypatch.setenv("ACME_TOKEN", "tok-0123456789abcdef\n")  # as `export ACME_TOKEN=$(cat key.txt)` may leave it
    path = tmp_path / "t.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        with tracing.function_span("tool", input="{}", output="the token is tok-0123456789abcdef."):
            pass
    text = path.read_text(encoding="utf-8")
    assert "tok-0123456789abcdef" not in text and "the token is ***." in text


def test_a_token_a_tool_exports_or_changes_during_a_trace_is_hidden_from_the_next_record_on(tmp_path, monkeypatch):
    """The environment is read for each record: a token exported in the middle of a run (a tool that logs in), or
    given a new value, is hidden from the tool's own output on, in the same trace."""
    monkeypatch.setenv("ACME_TOKEN", "tok-0000000000000000")
    path = tmp_path / "t.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        for step, token, key in [(1, "tok-0000000000000000", None),
                                 (2, "tok-1111111111111111", "key-0123456789abcdef")]:
            monkeypatch.setenv("ACME_TOKEN", token)
            if key:
                monkeypatch.setenv("ACME_API_KEY", key)
            with tracing.function_span("login", input="{}", output=f"step {step}: {token} {key}"):
                pass
    text = path.read_text(encoding="utf-8")
    assert "step 1: *** None" in text and "step 2: *** ***" in text


@pytest.mark.parametrize("name, secret", [
    ("PGPASSWORD", True), ("DB_PASS", True), ("GITHUB_PAT", True), ("LDAP_BIND_PW", True), ("MYSQL_PWD", True),
    ("DOCKER_CREDS", True), ("CI_JOB_JWT", True), ("OPENAI_API_KEY", True), ("PWD", False), ("OLDPWD", False),
    ("PGPASSFILE", False), ("SSH_ASKPASS", False), ("SSH_AUTH_SOCK", False), ("DBUS_SESSION_BUS_ADDRESS", False),
    ("PASSWORD_STORE_DIR", False), ("TOKENIZERS_PARALLELISM", False), ("TIKTOKEN_CACHE_DIR", False),
    ("PASSENGER_APP_ENV", False)])
def test_a_variable_is_a_secret_when_its_name_says_it_holds_one_not_where_one_is(name, secret):
    """A password's or token's name (a word of it), not a path's (`..._FILE`, `..._DIR`, `SSH_ASKPASS`), nor a word
    that only contains one (`TOKENIZERS`, `PASSENGER`): their values, often paths, would be hidden from every trace."""
    from miniagents.models.protocol import is_secret_variable

    assert is_secret_variable(name) is secret


def test_passwords_of_variables_the_adapters_do_not_name_and_of_urls_never_reach_a_trace(tmp_path, monkeypatch):
    """A database's password variable (`PGPASSWORD`, `DB_PASS`), a token whose name only ends in `_PAT`, and the
    password of a URL (a `DATABASE_URL` echoed by a tool) are hidden; the working folder (`PWD`) is not a secret."""
    variables = {"PGPASSWORD": "pg-0123456789", "DB_PASS": "db-0123456789", "GITHUB_PAT": "ghp_0123456789"}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PWD", "/home/user/project")
    echoed = " ".join(variables.values()) + " postgres://app:pa55-word@db:5432/x in /home/user/project"
    urls = ["postgres://admin:P@ssw0rd!@db:5432/app", "redis://default:it'sAsecret99@cache:6379/0 to a@b"]
    shown = written(tmp_path / "t.jsonl", tool_output=echoed, input=json.dumps(urls))
    assert shown[0]["output"] == "*** *** *** postgres://app:***@db:5432/x in /home/user/project"
    assert json.loads(shown[0]["input"]) == ["postgres://admin:***@db:5432/app", "redis://default:***@cache:6379/0 to a@b"]


def test_an_authorization_value_in_json_inside_json_or_a_header_pair_never_reaches_a_trace(tmp_path, monkeypatch):
    """A request logged as JSON text inside JSON (its quotes escaped), a header pair's repr, and a secret of a
    character outside the BMP that `json.dumps` writes as two escapes."""
    monkeypatch.setenv("APP_PASSWORD", "correct\U0001f434battery-staple")
    texts = [json.dumps({"request": json.dumps({"headers": {"Authorization": "Basic dXNlcjpzM2NyZXQtcHc="}})}),
             repr([("Authorization", "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b")]),
             json.dumps({"db_pw": "correct\U0001f434battery-staple"})]
    shown = written(tmp_path / "t.jsonl", tool_output="\n".join(texts))
    assert leaked(json.dumps(shown), "dXNlcjpzM2NyZXQtcHc=", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
                  "battery-staple") == []


def test_a_bearer_word_in_prose_and_short_environment_values_are_kept(tmp_path, monkeypatch):
    """What looks like a credential only by chance stays: "bearer of" (no token of 8 characters), and an
    environment value shorter than 8 characters (XDG_SESSION_TYPE=x11 would hide every "x11")."""
    monkeypatch.setenv("XDG_SESSION_TYPE", "x11")
    path = tmp_path / "t.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        with tracing.function_span("tool", input="{}", output="the bearer of news runs x11"):
            pass
    assert "the bearer of news runs x11" in path.read_text(encoding="utf-8")


def written(path, **spans):
    """The span_data of each span a file shows ended, in order, after writing one function span per input/output
    and a generation span with `output`."""
    with tracing.run_trace(Config(trace_path=str(path), trace_metadata=spans.get("metadata"))):
        with tracing.function_span("tool", input=spans.get("input", "{}"), output=spans.get("tool_output")):
            pass
        with tracing.generation_span(model="m") as gen:
            gen.span_data.output = spans.get("output")
    return [r["span_data"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
            if r["event"] == "span_end"]


ORDINARY = st.one_of(st.sampled_from(["Use sorted(words, key=len).", "def f(token=None, key=k): pass",
                                      "password=hunter in the exercise", "x = {'auth': 1}; y=2"]),
                     st.text(string.ascii_letters + string.digits + " =(),._-", max_size=40))


@settings(max_examples=40, deadline=None)
@given(text=ORDINARY, env_secret=SECRET)
def test_ordinary_data_with_credential_like_names_and_key_equals_reaches_a_trace_unchanged(tmp_path_factory, text,
                                                                                           env_secret):
    """Outside configuration, a name is data: a code interpreter's `code`, an item's `session_id` and
    `status_code`, a logprob's `token`; and `name=value` in prose or code is kept (only a URL's query is searched
    by name), while an environment secret is still hidden."""
    tokens = [text[:3], text[3:]]
    items = [{"type": "code_interpreter_call", "id": "ci", "code": text, "status": "completed",
              "session_id": "conv-42", "status_code": 500},
             {"type": "message", "role": "assistant", "content": [
                 {"type": "output_text", "text": text, "annotations": [],
                  "logprobs": [{"token": t, "bytes": list(t.encode()), "top_logprobs": []} for t in tokens]}]}]
    with mock.patch.dict(os.environ, {"OPENAI_API_KEY": env_secret}):
        shown = written(tmp_path_factory.mktemp("t") / "t.jsonl", input=text, tool_output=f"{text} {env_secret}",
                        output=items)
    assert shown[0]["input"] == text and shown[0]["output"] == f"{text} ***"
    assert shown[1]["output"] == items


@settings(max_examples=40, deadline=None)
@given(secret=SECRET, cut=st.integers(1, 10), data=st.data())
def test_a_secret_split_across_text_parts_or_spelled_by_logprobs_never_reaches_a_trace(tmp_path_factory, secret,
                                                                                        cut, data):
    """A message's text parts are searched joined, and a part a secret was cut out of loses its logprobs, whose
    tokens and bytes would spell it again."""
    at = data.draw(st.integers(1, len(secret) - 1))
    tokens = [secret[i:i + cut] for i in range(0, len(secret), cut)]
    logprobs = [{"token": t, "bytes": list(t.encode()), "top_logprobs": []} for t in tokens]
    content = [{"type": "output_text", "text": "key: " + secret[:at], "annotations": [], "logprobs": logprobs[:1]},
               {"type": "output_text", "text": secret[at:] + ".", "annotations": []},
               {"type": "output_text", "text": secret, "annotations": [], "logprobs": logprobs}]
    with mock.patch.dict(os.environ, {"HF_TOKEN": secret}):
        shown = written(tmp_path_factory.mktemp("t") / "t.jsonl",
                        output=[{"type": "message", "role": "assistant", "content": content},
                                {"type": "message", "role": "assistant", "content": content[2:]}])
    parts = shown[1]["output"][0]["content"]
    assert leaked(json.dumps(parts), secret) == [] and [p.get("logprobs") for p in parts] == [[], None, []]
    assert "".join(p["text"] for p in parts) == "key: ***.***"
    assert shown[1]["output"][1]["content"] == [{**content[2], "text": "***", "logprobs": []}]


# Texts made of what the redaction's searches look for (and what a case-blind search folds to it), and plain text.
ODD_SECRET = 'sk-te"st-012345\n'  # a secret JSON escapes
FRAGMENTS = st.sampled_from(["sk-test-0123456789", "sk-test-", "0123456789", ODD_SECRET, "Bearer ", "bearer",
                             "Basic x", "baſic x", "\u212aey", "to\u212aen x", "digest\tx", "Authorızation: ",
                             "?key=v", "?a=b&sig=zz", "https://h/p?code=abc", "db://u:pw@h", "db:\\/\\/u:pw@h",
                             "db://a@s:pw@h", "db://h?t=1:0&a@b", "db:\\//u:pw@h", "db:/\\/u:pw@h", ":\\/",
                             "?x?sig=zz", "_", "\\", "\\u0073k-test-0123456789",
                             "sk-test\\/0123456789", '"', "\n", "\x01", "\u3000", "İ", "é", " ", "word"])
TEXTS = st.one_of(st.sampled_from(["", "word", "é"]), st.lists(FRAGMENTS, min_size=1, max_size=2).map("".join))
KEYS = st.one_of(TEXTS, st.sampled_from(["text", "type", "logprobs", "data", "metadata", "model_config", "api_key"]),
                 st.integers(-2, 2), st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXTS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(KEYS, inner, max_size=4),
        st.fixed_dictionaries({"type": st.just("custom"), "data": inner}),
        st.lists(st.fixed_dictionaries({"type": st.just("output_text"), "text": TEXTS},
                                       optional={"logprobs": st.just([{"token": "x"}])}), min_size=2, max_size=3)),
    max_leaves=8)


@dataclasses.dataclass
class Labelled(list):
    """A dataclass that is a list: JSON and the walk both read it as the list."""

    label: str = "batch-7"


LABELLED = Labelled()
LABELLED.append("a")


def _quick_and_walked(value, secret):
    """What the redaction makes of `value` with its shortcut, and with the walk alone."""
    from miniagents.tracing import redaction

    secrets = redaction._search((secret,) if secret else (), ())
    quick = redaction.redacted(value, secrets)
    with mock.patch.object(redaction, "_as_it_is", lambda value, secrets: None):
        return quick, redaction.redacted(value, secrets)


PARTS = [{"type": "output_text", "text": "key: sk-test-"}, {"type": "output_text", "text": "0123456789."}]


@pytest.mark.parametrize("value, secret, shown", [
    (["sk-test-0123456789"], "sk-test-0123456789", ["***"]),
    ([ODD_SECRET + "!"], ODD_SECRET, ["***!"]),
    (["\\u0073k-test-0123456789"], "sk-test-0123456789", ["***"]),
    (PARTS, "sk-test-0123456789", [{"type": "output_text", "text": "key: ***."}, {"type": "output_text", "text": ""}]),
    (["Baſic dXNlcjpwYXNz"], None, ["Baſic ***"]),
    (["To\u212aen 0123456789abcdef"], None, ["To\u212aen ***"]),
    (["see https://h/p?sig=abc&x=1"], None, ["see https://h/p?sig=***&x=1"]),
    (["postgres://app:pw-1@db/x"], None, ["postgres://app:***@db/x"]),
    (['{"dsn": "mysql:\\/\\/root:pw-1@db\\/shop"}'], None, ['{"dsn": "mysql://root:***@db/shop"}']),
    (["已连接postgres://app:pw-1@db/x", "dsn_redis://u:pw-1@c"], None,
     ["已连接postgres://app:***@db/x", "dsn_redis://u:***@c"]),
    (["postgres://admin@srv:pw-1@srv.example.com/db"], None, ["postgres://admin@srv:***@srv.example.com/db"]),
    (["https://cal.example.com?start=10:00&to=ann@example.com"], None,
     ["https://cal.example.com?start=10:00&to=ann@example.com"]),
    (["db is postgres:\\//admin:pw-1@db", "x:\\/ then postgres:/\\/admin:pw-1@db"], None,
     ["db is postgres://admin:***@db", "x:/ then postgres://admin:***@db"]),
    (["see /a?x?token=abc1234567 ok"], None, ["see /a?x?token=*** ok"]),
    ([{"type": "custom", "data": {"api_key": "k-1"}}], None, [{"type": "custom", "data": {"api_key": "***"}}]),
    ([{True: 1, None: 2, 1.5: 3}], None, [{"true": 1, "null": 2, "1.5": 3}]),
    ([{"text": ("hi",), "logprobs": [{"token": "hi"}]}], None, [{"text": ["hi"], "logprobs": [{"token": "hi"}]}]),
    ([LABELLED], None, [["a"]]),
], ids=["secret", "escaped-secret", "secret-behind-escapes", "split-secret", "folded-scheme", "kelvin-sign",
        "query", "url-password", "url-password-escaped-slashes", "url-password-after-a-letter",
        "url-password-user-at-server", "no-url-password-in-a-query", "url-password-slashes-escaped-in-a-mix",
        "query-after-a-question-mark", "custom-data", "keys", "text-no-string",
        "dataclass-list"])
def test_a_list_the_shortcut_reads_back_hides_what_the_walk_hides(value, secret, shown):
    """Each probe of the shortcut finds what its search would change, so the list is walked."""
    assert _quick_and_walked(value, secret) == (shown, shown)


@settings(max_examples=1000, deadline=None)
@given(value=VALUES, secret=st.sampled_from([None, "sk-test-0123456789", 'sk-te"st-012345\n']))
def test_a_list_read_back_from_its_json_text_is_what_the_walk_would_make_of_it(value, secret):
    """The shortcut (a list whose JSON text shows nothing to hide is read back as it is) gives what the walk over
    every value gives, whatever the list holds: secrets split or escaped, authorization words folded, queries,
    configuration, numbers JSON cannot write, keys that are not text."""
    quick, walked = _quick_and_walked([value], secret)
    assert json.dumps(quick) == json.dumps(walked)


def test_a_dataclass_or_any_mapping_in_metadata_has_its_credentials_hidden_by_name(tmp_path):
    """A dataclass instance (by its fields), a MappingProxyType and a UserDict are read as a dict is."""
    @dataclasses.dataclass
    class Db:
        host: str
        password: str
    metadata = {"db": Db("db1", "hunter2pw"), "proxy": types.MappingProxyType({"api_key": "hunter2pw"}),
                "user": collections.UserDict({"client_secret": "hunter2pw", "n": 1})}
    path = tmp_path / "t.jsonl"
    written(path, metadata=metadata)
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["metadata"] == {
        "db": {"host": "db1", "password": "***"}, "proxy": {"api_key": "***"},
        "user": {"client_secret": "***", "n": 1}}


def test_authorization_values_of_every_scheme_and_secrets_behind_json_escapes_never_reach_a_trace(tmp_path,
                                                                                               monkeypatch):
    """`Basic`, `Token`, `Digest` as `Bearer`: a text that starts with one, or after `Authorization:`; a secret
    in JSON text that escapes `/`; and prose that only uses the words is kept."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    texts = ["Authorization: Basic dXNlcjpzdXBlcnNlY3JldHBhc3N3b3Jk", "Token 0123456789abcdef",
             'Digest username="a", response="6629fae49393a05397450978507c4ef1"',
             json.dumps({"k": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}).replace("/", "\\/"),
             "the basic token counting"]
    shown = written(tmp_path / "t.jsonl", input=json.dumps(texts), output=texts)
    assert shown[1]["output"] == ["Authorization: Basic ***", "Token ***", "Digest ***", '{"k": "***"}',
                                  "the basic token counting"]
    for secret in ("dXNlcjpzdXBlcnNlY3JldHBhc3N3b3Jk", "EXAMPLEKEY"):  # in the JSON text of the input too
        assert secret not in json.dumps(shown), secret


def test_a_secret_percent_encoded_with_hex_of_both_cases_in_one_value_never_reaches_a_trace(tmp_path, monkeypatch):
    """Clients write a percent-encoding's hex in either case, and may mix them in one value (`%2f...%2B`)."""
    monkeypatch.setenv("ACME_API_KEY", "sk-live/AbC+dEf/0123456789xyz")
    mixed = "echo sk-live%2fAbC%2BdEf%2F0123456789xyz"
    shown = written(tmp_path / "t.jsonl", output=[mixed], tool_output=mixed)
    assert shown[1]["output"] == ["echo ***"] and shown[0]["output"] == "echo ***"


def test_every_line_of_a_trace_file_is_strict_json_whatever_the_data(tmp_path):
    """NaN and the infinities (which json.dumps writes bare, as no JSON reader takes them) are written as the text
    json.dumps would have written, quoted: the line stays strict JSON and still says what the number was; what JSON
    cannot hold at all (an object, a key that is not a string) is written as its str()."""
    path = tmp_path / "t.jsonl"

    class Score:
        def __str__(self):
            return "a score"

    data = {"nan": float("nan"), "deep": [{"inf": float("inf")}, -float("inf")], "ok": 0.5, "obj": Score(),
            (1, 2): "tuple key", 3: "int key", "t": (True, None, 7)}
    with tracing.run_trace(Config(trace_path=str(path))):
        with tracing.custom_span("scores", data):
            pass

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    records = [json.loads(line, parse_constant=refuse) for line in path.read_text(encoding="utf-8").splitlines()]
    assert records[-3]["span_data"]["data"] == {"nan": "NaN", "deep": [{"inf": "Infinity"}, "-Infinity"], "ok": 0.5,
                                                "obj": "a score", "(1, 2)": "tuple key", "3": "int key",
                                                "t": [True, None, 7]}


def test_a_span_whose_data_no_json_holds_keeps_its_line_saying_so(tmp_path, monkeypatch):
    """A number of 5,000 digits, an object whose str() raises, nesting past Python's limit: the span's line is
    still written (its ids and times, its kind and name, and an error saying its data could not be), so the tree
    keeps it, and nothing of its data reaches the file."""
    monkeypatch.setenv("ACME_API_KEY", "key-0123456789abcdef")

    class Unprintable:
        def __str__(self):
            raise RuntimeError("key-0123456789abcdef")

    deep = []
    for _ in range(5000):
        deep = [deep]
    path = tmp_path / "t.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        for name, data in [("digits", {"n": 10 ** 5000}), ("unprintable", {"o": Unprintable()}), ("deep", {"d": deep}),
                           ("key-0123456789abcdef", {"fine": 1})]:
            with tracing.custom_span(name, data):
                pass
    text = path.read_text(encoding="utf-8")
    ended = [json.loads(line) for line in text.splitlines() if '"span_end"' in line]
    assert [record["span_data"].get("name") for record in ended[:4]] == ["digits", "unprintable", "deep", "***"]
    assert [record["error"] for record in ended[:3]] == [
        {"message": f"this record's data could not be written ({kind})", "data": None}
        for kind in ("ValueError", "RuntimeError", "RecursionError")]
    shown = render(read(text.splitlines())[0])
    assert "key-0123456789abcdef" not in text and "unfinished" not in shown and "could not be written" in shown


def test_the_file_round_trips_non_ascii_text_and_lone_surrogates(tmp_path):
    path = tmp_path / "text.jsonl"
    with tracing.run_trace(Config(trace_path=str(path))):
        with tracing.function_span("t", input="{}", output="21°C in Zürich \ud800 ✓"):
            pass
    ends = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert ends[2]["span_data"]["output"] == "21°C in Zürich \ud800 ✓"


# --- The live view on stderr -------------------------------------------------------------------------------


def test_miniagents_debug_prints_a_compact_live_view_on_stderr(monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENTS_DEBUG", "1")
    help_desk_runs(Config())
    err = normalized(capsys.readouterr().err).splitlines()
    assert err[:6] == ["[miniagents] trace 'Help desk' trace_ID",
                       "[miniagents]   run 'Help desk'",
                       "[miniagents]     agent Triage tools: lookup_order; handoffs: Billing",
                       "[miniagents]       turn 1 (Triage)",
                       "[miniagents]         guardrail no_card_numbers [T] passed",
                       "[miniagents]         model gpt-4o-mini [T] 42 in / 9 out tokens -> call lookup_order"]
    assert "[miniagents]         tool refund({\"order_id\":\"A-1\"}) [T] -> An error occurred while running the " \
           "tool. Please try again.  !! Error running tool {\"tool_name\": \"refund\", \"error\": \"ValueError\"}" in err


def test_describe_names_each_kind_of_span_on_one_line():
    record = {"span_data": {"type": "custom", "name": "approval",
                            "data": {"tool_name": "refund", "call_id": "c3", "decision": "rejected"}},
              "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01.500000+00:00"}
    assert describe(record) == "approval refund (call c3) [1.50 s] rejected"
    assert describe({"span_data": {"type": "custom", "name": "cache", "data": {"hit": True}}}) == \
        'cache [unfinished] {"hit": true}'
    assert describe({"span_data": {"type": "generation", "model": "m", "output": [  # a message that gives only
        {"role": "assistant", "content": "Shipped."}, {"type": "reasoning"}]}}, timing=False) == \
        'model m -> "Shipped.", reasoning'  # its role, as a custom model may write it


# --- The name miniagents.trace: upstream's function -------------------------------------------------------


def run_python(code):
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


IN_A_TRACE = ("with miniagents.trace('x') as t:\n"
              "    assert miniagents.get_current_trace() is t\n"
              "assert miniagents.trace is miniagents.tracing.trace\n"
              "from miniagents import trace\n"
              "assert trace is miniagents.tracing.trace\n"
              "print('ok')\n")


def test_miniagents_trace_is_upstreams_function_from_the_tracing_shell():
    assert run_python("import miniagents\n" + IN_A_TRACE) == "ok"


def test_importing_miniagents_or_running_untraced_loads_no_tracing_printer_or_capability():
    """Tracing is a shell: a run asks for it only through its seams, so neither the import nor a plain run loads
    it; reading traces back and capabilities load only when used."""
    assert run_python("import sys, miniagents\n"
                      "from miniagents import Agent, Runner\n"
                      "from miniagents.testing import ScriptedModel, assistant_message\n"
                      "Runner.run_sync(Agent(name='a', model=ScriptedModel([[assistant_message('hi')]])), 'hi')\n"
                      "print([m for m in ('miniagents.tracing', 'miniagents.tracing.tree', 'miniagents.capabilities') "
                      "if m in sys.modules])") == "[]"


def test_a_trace_path_set_after_its_run_config_was_made_writes_the_trace(tmp_path):
    """The tracing shell is loaded when a RunConfig asks for it as it is made, and also when the run starts: a
    trace_path given later wrote nothing in a process that had not loaded the shell yet."""
    path = tmp_path / "late.jsonl"
    assert run_python("import sys\n"
                      "from miniagents import Agent, Runner, RunConfig\n"
                      "from miniagents.testing import ScriptedModel, assistant_message\n"
                      "config = RunConfig()\n"
                      f"config.trace_path = {str(path)!r}\n"
                      "assert 'miniagents.tracing' not in sys.modules\n"
                      "agent = Agent(name='a', model=ScriptedModel([[assistant_message('hi')]]))\n"
                      "print(Runner.run_sync(agent, 'hi', run_config=config).final_output)") == "hi"
    events = [json.loads(line)["event"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert events[0] == "trace_start" and events[-1] == "trace_end" and "span_start" in events


def test_the_tracing_page_shows_the_tree_the_printer_prints():
    with open(os.path.join(ROOT, "docs", "tracing.md"), encoding="utf-8") as f:
        page = f.read()
    shown = page.split("$ python -m miniagents.tracing run.jsonl", 1)[1].split("```", 1)[0].split("\n", 1)[1]
    two_runs = HELP_DESK_TREE.split("\ntrace 'Help desk'")[:2]
    assert normalized(shown).rstrip("\n") == "\ntrace 'Help desk'".join(two_runs)


def test_model_settings_nested_past_what_the_redaction_walks_are_not_shown_and_the_traced_run_goes_on(tmp_path):
    """A custom model takes settings of any depth; traced, their redaction (a recursive walk) was a bare
    RecursionError out of the run, which untraced succeeded."""
    from miniagents import Agent, ModelResponse, Runner, RunConfig

    class Model:
        def get_response(self, *args, **kwargs):
            return ModelResponse(output=[assistant_message("Hi")], usage=Usage(requests=1))

        def stream_response(self, *args, **kwargs):
            yield from ()

    deep: dict = {}
    for _ in range(3000):
        deep = {"a": deep}
    agent = Agent(name="A", model=Model(), model_settings=ModelSettings(temperature=0.5, metadata={"m": deep}))
    path = tmp_path / "run.jsonl"
    assert Runner.run_sync(agent, "Hi", run_config=RunConfig(trace_path=str(path))).final_output == "Hi"
    [config] = [r["span_data"]["model_config"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
                if r["event"] == "span_end" and r["span_data"]["type"] == "generation"]
    assert config == {"error": "the settings nest too deep to show"}
