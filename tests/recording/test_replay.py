"""A run recorded against the Chat Completions adapter (over real sockets, tests/openai_server.py) replays offline,
with the network closed, under `Runner.run_sync`, `Runner.run` and `Runner.run_streamed`: the same run items,
the same final output, the same responses and (for a streamed recording) the same stream events. A changed
prompt, tool list or instructions fails at its first difference with `ReplayMismatch` naming the field."""
import json

import pytest

from miniagents import Agent, ModelHTTPError, ModelSettings, Runner, UserError, function_tool, handoff
from miniagents.recording import (Recorder, RecordingError, Replay, ReplayExhausted, ReplayIncomplete,
                                  ReplayMismatch)
from miniagents.recording.errors import ABSENT
from miniagents.testing import ScriptedModel, assistant_message, function_call
from replay_support import (INSTRUCTIONS, QUESTION, cancel_order, chat_model, help_desk,
                            network_closed, responses, run, run_items, script_plain, script_streamed)

MODES = ["sync", "async", "streamed"]


def record(server, path, mode):
    """Record one help-desk run against the test server (plain or streamed answers, as the mode needs)."""
    (script_streamed if mode == "streamed" else script_plain)(server)
    with Recorder(path) as recorder:
        result, events = run(mode, help_desk(recorder.wrap(chat_model(server))))
    server.close()  # nothing answers any more: a replay that tried the network would fail twice over
    return result, events


def test_the_network_guard_is_real(server):
    """The guard the replays run under does stop a real request (so a replay that passes under it is offline)."""
    script_plain(server)
    with network_closed(), pytest.raises(ModelHTTPError, match="NetworkClosed: the network is closed in this test"):
        Runner.run_sync(help_desk(chat_model(server, max_retries=0)), QUESTION)
    assert server.requests == []


@pytest.mark.parametrize("recorded_as", ["sync", "streamed"])
@pytest.mark.parametrize("replayed_as", MODES)
def test_a_replay_produces_the_recorded_runs_items_and_final_output(server, tmp_path, recorded_as, replayed_as):
    path = tmp_path / "run.jsonl"
    recorded, _ = record(server, path, recorded_as)
    assert len(server.requests) == 2
    replay = Replay(path)
    with network_closed():
        replayed, _ = run(replayed_as, help_desk(replay))
    replay.assert_complete()
    assert recorded.final_output.strip() == "Order A-1 shipped on 2 May; it should arrive this week."
    assert replayed.final_output == recorded.final_output
    assert run_items(replayed) == run_items(recorded)
    assert [kind for kind, _, _ in run_items(recorded)] == ["tool_call_item", "tool_call_output_item",
                                                            "message_output_item"]


@pytest.mark.parametrize("replayed_as", ["sync", "async"])
def test_a_plain_replay_has_the_recorded_responses(server, tmp_path, replayed_as):
    recorded, _ = record(server, tmp_path / "run.jsonl", "sync")
    with network_closed():
        replayed, _ = run(replayed_as, help_desk(Replay(tmp_path / "run.jsonl")))
    assert responses(replayed) == responses(recorded)
    assert replayed.context_wrapper.usage.to_json() == recorded.context_wrapper.usage.to_json()


def test_a_streamed_replay_yields_the_recorded_stream_events(server, tmp_path):
    recorded, recorded_events = record(server, tmp_path / "run.jsonl", "streamed")
    with network_closed():
        replayed, replayed_events = run("streamed", help_desk(Replay(tmp_path / "run.jsonl")))
    assert replayed_events == recorded_events
    assert sum(1 for e in recorded_events if e[0] == "raw") > 10  # chunk by chunk, not one event per answer
    assert responses(replayed) == responses(recorded)


def test_a_plain_recording_replayed_streamed_ends_each_stream_with_the_recorded_response(server, tmp_path):
    recorded, _ = record(server, tmp_path / "run.jsonl", "sync")
    with network_closed():
        _, events = run("streamed", help_desk(Replay(tmp_path / "run.jsonl")))
    completed = [e[1]["response"] for e in events if e[0] == "raw" and e[1]["type"] == "response.completed"]
    assert [c["output"] for c in completed] == [r[0] for r in responses(recorded)]
    assert {c["model"] for c in completed} == {"help-desk-model"}


def test_a_changed_prompt_names_the_input_field(server, tmp_path):
    record(server, tmp_path / "run.jsonl", "sync")
    with network_closed(), pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl")), "Where is order B-7?")
    error = caught.value
    assert (error.request, error.field, error.recorded, error.received) == (
        1, "input[0].content", QUESTION, "Where is order B-7?")
    assert str(error) == ('request 1 differs from the recording at input[0].content: recorded "Where is order A-1?", '
                          'received "Where is order B-7?"')


def test_a_changed_tool_list_names_the_tools_field(server, tmp_path):
    record(server, tmp_path / "run.jsonl", "sync")
    replay = Replay(tmp_path / "run.jsonl")
    with network_closed(), pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(help_desk(replay, tools=[help_desk(None).tools[0], cancel_order]), QUESTION)
    assert (caught.value.request, caught.value.field, caught.value.recorded) == (1, "tools[1]", ABSENT)
    assert caught.value.received["name"] == "cancel_order"
    assert "recorded (absent), received {" in str(caught.value)


def test_a_renamed_tool_names_its_name(server, tmp_path):
    record(server, tmp_path / "run.jsonl", "sync")
    with network_closed(), pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), tools=[cancel_order]), QUESTION)
    assert (caught.value.field, caught.value.recorded, caught.value.received) == (
        "tools[0].name", "lookup_order", "cancel_order")


def test_a_later_request_that_differs_names_its_number(server, tmp_path):
    """The tool's output is part of the second request: a tool that now answers differently fails at request 2."""
    record(server, tmp_path / "run.jsonl", "sync")

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's delivery status.

        Args:
            order_id: The order's id, like A-1.
        """
        return f"Order {order_id} is lost."
    with network_closed(), pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), tools=[lookup_order]), QUESTION)
    assert (caught.value.request, caught.value.field) == (2, "input[2].output")
    assert caught.value.received == "Order A-1 is lost."


def test_changed_instructions_fail_exact_and_pass_when_ignored(server, tmp_path):
    recorded, _ = record(server, tmp_path / "run.jsonl", "sync")
    edited = "You are a cheerful help desk."
    with network_closed():
        with pytest.raises(ReplayMismatch) as caught:
            Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), instructions=edited), QUESTION)
        replayed = Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl", match="ignore_instructions"),
                                             instructions=edited), QUESTION)
    assert (caught.value.field, caught.value.recorded, caught.value.received) == ("instructions", INSTRUCTIONS, edited)
    assert replayed.final_output == recorded.final_output


def test_order_mode_serves_the_responses_whatever_was_asked(server, tmp_path):
    recorded, _ = record(server, tmp_path / "run.jsonl", "sync")
    with network_closed():
        with pytest.raises(ReplayMismatch):
            Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), instructions="x"), "Something else")
        replayed = Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl", match="order"), instructions="x"),
                                   "Something else")
    assert replayed.final_output == recorded.final_output


def test_changed_settings_name_the_setting(server, tmp_path):
    script_plain(server)
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(help_desk(recorder.wrap(chat_model(server)),
                                  model_settings=ModelSettings(temperature=0.2, extra_headers={"X-Team": "desk"})),
                        QUESTION)
    with network_closed():
        with pytest.raises(ReplayMismatch) as caught:
            Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), model_settings=ModelSettings(
                temperature=0.7, extra_headers={"X-Team": "desk"})), QUESTION)
        with pytest.raises(ReplayMismatch) as header:
            Runner.run_sync(help_desk(Replay(tmp_path / "run.jsonl"), model_settings=ModelSettings(
                temperature=0.2, extra_headers={"X-Team": "sales"})), QUESTION)
    assert (caught.value.field, caught.value.recorded, caught.value.received) == ("settings.temperature", 0.2, 0.7)
    assert (header.value.field, header.value.received) == ('settings.extra_headers["X-Team"]', "sales")


def test_a_request_past_the_end_and_an_unfinished_replay_are_typed_errors(server, tmp_path):
    record(server, tmp_path / "run.jsonl", "sync")
    replay = Replay(tmp_path / "run.jsonl", match="order")
    with network_closed():
        Runner.run_sync(help_desk(replay), QUESTION)
        with pytest.raises(ReplayExhausted) as caught:
            Runner.run_sync(help_desk(replay), QUESTION)
    assert (caught.value.request, caught.value.recorded) == (3, 2)
    unfinished = Replay(tmp_path / "run.jsonl")
    Runner.run_sync(Agent(name="Help desk", instructions=INSTRUCTIONS, tools=help_desk(None).tools,
                          model=unfinished, tool_use_behavior="stop_on_first_tool"), QUESTION)
    assert unfinished.remaining == 1
    with pytest.raises(ReplayIncomplete) as incomplete:
        unfinished.assert_complete()
    assert incomplete.value.unserved == [2]


def test_an_unknown_match_mode_is_a_user_error(tmp_path):
    with Recorder(tmp_path / "empty.jsonl"):
        pass
    with pytest.raises(UserError, match="match= must be one of exact, ignore_instructions, order"):
        Replay(tmp_path / "empty.jsonl", match="loose")


def test_handoffs_and_the_output_schema_are_recorded_as_their_wire_specs_and_compared(tmp_path):
    """The model receives Handoff and output-schema objects; the recording holds their specs, and a replay compares
    them like any other field."""
    billing = Agent(name="Billing", instructions="Refunds.", output_type=int)
    steps = [[function_call("transfer_to_billing", {}, call_id="h1")], [assistant_message('{"response": 3}')]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel(steps))
        triage = Agent(name="Triage", handoffs=[handoff(billing.clone(model=model))], model=model)
        recorded = Runner.run_sync(triage, "Refund please")
    calls = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    assert calls[0]["request"]["handoffs"][0]["name"] == "transfer_to_billing"
    assert calls[0]["request"]["handoffs"][0]["type"] == "function"
    assert calls[1]["request"]["output_schema"]["name"] == "final_output"
    assert calls[1]["request"]["output_schema"]["schema"]["properties"]["response"]["type"] == "integer"
    replay = Replay(tmp_path / "run.jsonl")
    replayed = Runner.run_sync(Agent(name="Triage", handoffs=[handoff(billing.clone(model=replay))], model=replay),
                               "Refund please")
    assert (replayed.final_output, replayed.last_agent.name) == (recorded.final_output, "Billing") == (3, "Billing")
    changed = Replay(tmp_path / "run.jsonl")
    with pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(Agent(name="Triage", model=changed, handoffs=[handoff(
            billing.clone(model=changed, output_type=str))]), "Refund please")
    assert (caught.value.request, caught.value.field, caught.value.received) == (2, "output_schema", None)


def test_a_replayed_request_nested_past_what_a_recording_holds_is_a_recording_error_not_a_recursion_error(tmp_path):
    """No recorded request nests 100 levels (its line would nest 101): a replayed one that does (a deep extra_body)
    matches none, and says so with a `RecordingError` before the redaction that walks it recursively is reached."""
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message("Hi")]]))), "one")
    value: list = []
    for _ in range(600):
        value = [value]
    deep = Agent(name="A", model=Replay(tmp_path / "run.jsonl"), model_settings=ModelSettings(extra_body={"v": value}))
    with pytest.raises(RecordingError, match="nests more than 99 levels deep, past what a recording holds"):
        Runner.run_sync(deep, "one")
