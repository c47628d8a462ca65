"""The recording file: a versioned first line, one plain JSON line per model call, text readable as written, the same
bytes on every supported Python (a shipped recording is re-recorded and compared byte for byte, and replayed), and
every malformed file refused with a `RecordingError` that names the file and the line."""
import json
import os
import pathlib
import stat
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, Runner, function_tool
from miniagents.recording import Recorder, RecordingError, Replay, VERSION, VERSIONS, format
from miniagents.testing import ScriptedModel, assistant_message, function_call
from replay_support import QUESTION, chat_model, help_desk, network_closed, script_plain

GOLDEN = pathlib.Path(__file__).parent / "golden" / "help_desk_chat.jsonl"


def record_help_desk(server, path) -> None:
    script_plain(server)
    with Recorder(path) as recorder:
        Runner.run_sync(help_desk(recorder.wrap(chat_model(server))), QUESTION)


def test_the_first_line_names_the_version_and_each_call_is_one_line(server, tmp_path):
    record_help_desk(server, tmp_path / "run.jsonl")
    lines = (tmp_path / "run.jsonl").read_text(encoding="utf-8").split("\n")
    assert json.loads(lines[0]) == {"version": VERSION, "kind": "miniagents recording"} and VERSION in VERSIONS
    calls = [json.loads(line) for line in lines[1:] if line]
    assert lines[-1] == "" and len(calls) == 2
    assert [(c["n"], c["model"], c["stream"]) for c in calls] == [(1, "help-desk-model", False),
                                                                  (2, "help-desk-model", False)]
    assert list(calls[0]["request"]) == list(format.REQUEST_FIELDS)
    assert calls[0]["request"]["tools"][0] == help_desk(None).tools[0].spec()
    assert calls[1]["response"]["output"][0]["content"][0]["text"].startswith("Order A-1 shipped")


def test_a_recording_is_readable_by_its_owner_only(server, tmp_path):
    record_help_desk(server, tmp_path / "run.jsonl")
    assert stat.S_IMODE(os.stat(tmp_path / "run.jsonl").st_mode) == 0o600


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="no owner-only modes")
def test_recording_into_a_file_anyone_could_read_makes_it_readable_by_its_owner_only(tmp_path):
    (tmp_path / "run.jsonl").write_text("an earlier file\n")
    os.chmod(tmp_path / "run.jsonl", 0o644)
    with Recorder(tmp_path / "run.jsonl") as recorder:
        assert stat.S_IMODE(os.stat(tmp_path / "run.jsonl").st_mode) == 0o600  # before a call is written
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message("Ann Lee")]]))), "Hi")
    assert stat.S_IMODE(os.stat(tmp_path / "run.jsonl").st_mode) == 0o600


def test_recording_again_into_a_file_replaces_it(tmp_path):
    for answer in ("first", "second"):
        with Recorder(tmp_path / "run.jsonl") as recorder:
            Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message(answer)]]))), "Hi")
    assert Runner.run_sync(Agent(name="A", model=Replay(tmp_path / "run.jsonl")), "Hi").final_output == "second"


@function_tool
def weather(city: str) -> str:
    """The weather."""
    return f"21°C in {city}, 晴れ"


def record_weather(path, question, answer="Sunny, 21°C.", instructions=None):
    steps = [[function_call("weather", {"city": "Zürich"}, call_id="c1")], [assistant_message(answer)]]
    with Recorder(path) as recorder:
        return Runner.run_sync(Agent(name="A", instructions=instructions, tools=[weather],
                                     model=recorder.wrap(ScriptedModel(steps))), question)


def test_text_is_written_as_it_reads(tmp_path):
    record_weather(tmp_path / "run.jsonl", "Wetter in Zürich?")
    text = (tmp_path / "run.jsonl").read_bytes().decode("utf-8")
    assert "Wetter in Zürich?" in text and "21°C in Zürich, 晴れ" in text and "\\u" not in text


def test_a_lone_surrogate_is_written_escaped_and_replays(tmp_path):
    # an agent's instructions may hold a lone surrogate (a badly decoded file), which cannot be written as UTF-8 (a
    # model's answer, run input and tool outputs are repaired where they enter the run: the instructions are not)
    instructions = "Be brief. \ud800"
    recorded = record_weather(tmp_path / "run.jsonl", "Weather?", instructions=instructions)
    lines = (tmp_path / "run.jsonl").read_bytes().decode("utf-8").splitlines()
    assert len(lines) == 3 and all("\\ud800" in line and "\\u00fc" in line for line in lines[1:])  # escaped, whole
    model = Replay(tmp_path / "run.jsonl")
    replayed = Runner.run_sync(Agent(name="A", instructions=instructions, tools=[weather], model=model), "Weather?")
    model.assert_complete()
    assert replayed.final_output == recorded.final_output
    assert [i.raw_item for i in replayed.new_items] == [i.raw_item for i in recorded.new_items]


def test_a_custom_models_lone_surrogate_is_recorded_repaired_as_the_run_keeps_it(tmp_path):
    recorded = record_weather(tmp_path / "run.jsonl", "Weather?", "Sunny, 21°C. \ud800")
    assert recorded.final_output == "Sunny, 21°C. \ufffd"
    assert "\\u" not in (tmp_path / "run.jsonl").read_bytes().decode("utf-8")
    replayed = Runner.run_sync(Agent(name="A", tools=[weather], model=Replay(tmp_path / "run.jsonl")), "Weather?")
    assert replayed.final_output == recorded.final_output


def test_a_value_json_cannot_write_is_recorded_as_its_plain_form_never_its_repr():
    """Model settings may hold values of the program's own (an enum, a set, a dataclass in `extra_body`): each is
    written as its plain form, the same in every run; only a value with none is named by its type."""
    import dataclasses
    import enum

    class Mode(enum.Enum):
        FAST = "fast"

    @dataclasses.dataclass
    class Budget:
        tokens: int

    written = json.loads(format.json_text({"mode": Mode.FAST, "tags": {"b", "a"}, "budget": Budget(5),
                                           "handle": object()}))
    assert written == {"mode": "fast", "tags": ["a", "b"], "budget": {"tokens": 5}, "handle": "<object>"}


def test_the_shipped_recording_is_what_this_python_records_byte_for_byte(server, tmp_path):
    """The same run, recorded now, is the file recorded when it was shipped: no key order, float, escaping or
    newline differs between Pythons (CI runs this on 3.9 and 3.13). Re-make it: python tests/recording/test_format.py"""
    record_help_desk(server, tmp_path / "run.jsonl")
    assert (tmp_path / "run.jsonl").read_bytes() == GOLDEN.read_bytes()


def test_the_shipped_recording_replays_offline():
    replay = Replay(GOLDEN)
    with network_closed():
        result = Runner.run_sync(help_desk(replay), QUESTION)
    replay.assert_complete()
    assert result.final_output == "Order A-1 shipped on 2 May; it should arrive this week."
    assert [item.type for item in result.new_items] == ["tool_call_item", "tool_call_output_item",
                                                        "message_output_item"]


def write(tmp_path, *lines) -> pathlib.Path:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(line if isinstance(line, bytes) else (json.dumps(line) + "\n").encode() for line in lines))
    return path


HEADER = {"version": 1, "kind": "miniagents recording"}


def call(n=1, **changes):
    request = {field: [] if field in ("input", "tools", "handoffs") else None for field in format.REQUEST_FIELDS}
    line = {"n": n, "model": "m", "stream": False, "request": request,
            "response": {"output": [], "usage": None, "response_id": None, "request_id": None}}
    line.update(changes)
    return line


@pytest.mark.parametrize("lines, message", [
    ((), "is empty"),
    ((b"not json\n",), "line 1 is not JSON"),
    (([1, 2],), "line 1 is not a JSON object"),
    (({"version": 1},), "line 1 does not start a miniagents recording"),
    (({"version": 2, "kind": "miniagents recording"},), "a recording of version 2; this miniagents reads version(s) [1]"),
    (({"version": "1", "kind": "miniagents recording"},), "a recording of version '1'"),
    ((HEADER, call(), b"{\"n\": 2,\n"), "line 3 is not JSON"),
    ((HEADER, call(n=2)), 'line 2: expected call number 1 ("n"), found 2'),
    ((HEADER, call(request={"input": []})), "line 2: the request lacks instructions, tools, handoffs"),
    ((HEADER, call(response={"events": [{"type": "response.created"}]})), "needs a response.completed event"),
    ((HEADER, call(response={"events": "x"})), '"events" must be a list of objects'),
    ((HEADER, call(response={"text": "hi"})), 'a response needs "output" (a list) and "usage", or "events"'),
    ((HEADER, call(response={"output": [], "usage": None, "response_id": 5})), '"response_id" must be a string'),
    ((HEADER, b"\xff\xfe\n"), "line 2 is not JSON"),
])
def test_a_malformed_recording_is_refused_with_the_file_and_line(tmp_path, lines, message):
    path = write(tmp_path, *lines)
    with pytest.raises(RecordingError) as caught:
        Replay(path)
    assert message in str(caught.value) and repr(str(path)) in str(caught.value)


def test_a_missing_or_oversized_recording_is_refused_before_anything_is_served(tmp_path, monkeypatch):
    with pytest.raises(RecordingError, match="cannot read the recording .*nothing.jsonl.*No such file"):
        Replay(tmp_path / "nothing.jsonl")
    path = write(tmp_path, HEADER, call())
    monkeypatch.setattr(format, "MAX_BYTES", 100)
    with pytest.raises(RecordingError, match="is larger than 0 MiB; it is not read"):
        Replay(path)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1, exclude_min=True, exclude_max=True), line=st.sampled_from([1, 2, 3]))
def test_a_recording_cut_off_inside_a_line_is_named_truncated_at_that_line(tmp_path, cut, line):
    """A process killed while writing, a disk that filled: the last line ends part-way, without its newline."""
    path = write(tmp_path, HEADER, call(), call(n=2))
    data = path.read_bytes()
    starts = [0] + [at + 1 for at, byte in enumerate(data) if byte == ord("\n")]
    start, end = starts[line - 1], starts[line] - 1
    path.write_bytes(data[:start + max(1, int(cut * (end - start)))])
    with pytest.raises(RecordingError, match=f"is truncated at line {line}: the line ends part-way, without its "
                                             "newline"):
        Replay(path)


def test_a_last_line_without_its_newline_that_reads_whole_is_served(tmp_path):
    path = write(tmp_path, HEADER, json.dumps(call()).encode())  # written by hand, say
    assert Replay(path).remaining == 1


@pytest.mark.parametrize("lines", [({"version": "9" * 100_000, "kind": "miniagents recording"},),
                                   (HEADER, call(n="1" * 100_000))])
def test_a_hostile_value_is_shown_shortened_in_the_error(tmp_path, lines):
    with pytest.raises(RecordingError) as caught:
        Replay(write(tmp_path, *lines))
    assert len(str(caught.value)) < 400 and "…" in str(caught.value)


def test_a_line_over_the_line_cap_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    """Decoded JSON can take fifty times its text's memory ({} after {}): a hostile line is measured, not read."""
    path = write(tmp_path, HEADER, call(junk=[{}] * 500))
    monkeypatch.setattr(format, "MAX_LINE_BYTES", 1000)
    decode = json.loads
    monkeypatch.setattr(format.json, "loads", lambda text, **kwargs: pytest.fail("a line over the cap was decoded")
                        if len(text) > 1000 else decode(text, **kwargs))
    with pytest.raises(RecordingError, match="line 2 is larger than 0 MiB; it is not read"):
        Replay(path)


def test_a_call_over_the_line_cap_is_a_recording_error_when_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(format, "MAX_LINE_BYTES", 2000)
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("x" * 2000)], [assistant_message("Short.")]]))
        with pytest.raises(RecordingError, match="cannot record call 1 .*: it is larger than 0 MiB, and a replay"):
            Runner.run_sync(Agent(name="A", model=model), "Hi")
        Runner.run_sync(Agent(name="A", model=model), "Hi")
    assert Replay(tmp_path / "run.jsonl").remaining == 1


@pytest.mark.parametrize("path, message", [("run\0.jsonl", "cannot hold a NUL character"),
                                           (None, "must be a str or an os.PathLike, got NoneType")])
def test_a_path_that_is_not_a_file_name_is_a_recording_error(tmp_path, path, message):
    with pytest.raises(RecordingError, match=message):
        Recorder(path)
    with pytest.raises(RecordingError, match=message):
        Replay(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("reader", [False, True])
def test_a_fifo_or_a_directory_is_refused_at_once(tmp_path, reader):
    """Opening a FIFO waits for its other end, for ever: a recording is a regular file, refused otherwise, with or
    without a process reading the FIFO."""
    os.mkfifo(tmp_path / "fifo")
    held = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        for make in (Recorder, Replay):
            with pytest.raises(RecordingError, match="it is not a regular file"):
                make(tmp_path / "fifo")
    finally:
        if held is not None:
            os.close(held)
    with pytest.raises(RecordingError, match="cannot read the recording .*: it is not a regular file"):
        Replay(tmp_path)


def test_a_recorder_that_cannot_write_or_is_closed_says_so(tmp_path):
    with pytest.raises(RecordingError, match="cannot write the recording .*no-such-folder.*No such file"):
        Recorder(tmp_path / "no-such-folder" / "run.jsonl")
    recorder = Recorder(tmp_path / "run.jsonl")
    model = recorder.wrap(ScriptedModel([[assistant_message("Hi")]]))
    recorder.close()
    with pytest.raises(RecordingError, match="is closed: a wrapped model cannot record any more"):
        Runner.run_sync(Agent(name="A", model=model), "Hi")


def test_a_value_that_is_not_json_is_written_by_its_kind_never_its_repr(tmp_path):
    class Opaque:
        pass

    from miniagents import ModelSettings
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message("Hi")]])),
                              model_settings=ModelSettings(extra_args={"thing": Opaque(), "tags": ("a", "b")})), "Hi")
    settings = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[1])["request"]["settings"]
    assert settings == {"extra_args": {"thing": "<Opaque>", "tags": ["a", "b"]}}


def test_a_value_json_cannot_hold_is_a_recording_error(tmp_path):
    from miniagents import ModelSettings
    with Recorder(tmp_path / "run.jsonl") as recorder:
        agent = Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message("Hi")]])),
                      model_settings=ModelSettings(temperature=float("nan")))
        with pytest.raises(RecordingError, match="cannot be written as JSON: Out of range float values"):
            Runner.run_sync(agent, "Hi")


if __name__ == "__main__":  # re-make the shipped recording (after a deliberate change of the format)
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
    from openai_server import OpenAITestServer

    srv = OpenAITestServer()
    try:
        GOLDEN.parent.mkdir(exist_ok=True)
        record_help_desk(srv, GOLDEN)
    finally:
        srv.close()
    print(f"wrote {GOLDEN}")
