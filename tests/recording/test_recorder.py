"""What the recorder writes and when: a call once its answer is whole (a failed call, a broken or abandoned stream
leave no line), the response as the model gave it (before the run changed anything), retries the run manages still
asking the wrapped model for advice; kernel-made call ids pair up in a replay; and a run that does not record
loads nothing of the recording shell."""
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, ModelHTTPError, ModelRetryAdvice, ModelRetrySettings, ModelSettings, Runner
from miniagents import retry_policies
from miniagents.recording import ABSENT, Recorder, RecordingError, Replay, ReplayMismatch
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from replay_support import lookup_order, run_items
from support import ROOT


def calls(path) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().splitlines()[1:]]


def test_a_failed_call_leaves_no_line_and_its_error_passes_through(tmp_path):
    boom = ModelHTTPError(500, "the server fell over")
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel([boom, [assistant_message("Back again.")]]))
        with pytest.raises(ModelHTTPError) as caught:
            Runner.run_sync(Agent(name="A", model=model), "Hi")
        assert caught.value is boom
        Runner.run_sync(Agent(name="A", model=model), "Hi")
    assert [c["n"] for c in calls(tmp_path / "run.jsonl")] == [1] and recorder.count == 1


def test_a_retry_the_run_manages_is_recorded_once_and_still_gets_the_models_advice(tmp_path):
    """The retry shell asks the model it wraps (the recording one) for advice: the wrapped model's is passed on."""
    retry = ModelSettings(retry=ModelRetrySettings(max_retries=1, policy=retry_policies.provider_suggested()))
    steps = [ModelStep(error=ModelHTTPError(503, "busy"), retry_advice=ModelRetryAdvice(suggested=True)),
             [assistant_message("Done.")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        result = Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel(steps)), model_settings=retry),
                                 "Hi")
    assert result.final_output == "Done."
    [call] = calls(tmp_path / "run.jsonl")
    assert call["request"]["settings"]["retry"] == {"max_retries": 1, "backoff": None}
    replayed = Runner.run_sync(Agent(name="A", model=Replay(tmp_path / "run.jsonl"), model_settings=retry), "Hi")
    assert replayed.final_output == "Done."


def test_the_recording_model_is_the_wrapped_one_to_whoever_reads_it_and_survives_a_deep_copy(tmp_path, server):
    """Traces read a model's `model` name; a deep-copied agent keeps its model (one recording, one place in it)."""
    import copy

    from replay_support import chat_model
    with Recorder(tmp_path / "run.jsonl") as recorder:
        wrapped = recorder.wrap(chat_model(server))
        assert wrapped.model == "help-desk-model" and wrapped.base_url == server.url
        agent = Agent(name="A", model=wrapped)
        assert copy.deepcopy(agent).model is wrapped
    replay = Replay(tmp_path / "run.jsonl")
    assert copy.deepcopy(Agent(name="A", model=replay)).model is replay
    with pytest.raises(AttributeError):
        wrapped.no_such_attribute


def events(text="Hello there"):
    return ModelStep(stream_events=[{"type": "response.output_text.delta", "delta": text}, {
        "type": "response.completed", "response": {"id": "r1", "output": [assistant_message(text)], "usage": None}}])


def test_an_abandoned_or_broken_stream_leaves_no_line(tmp_path):
    class Broken(ScriptedModel):
        def stream_response(self, *args, **kwargs):
            yield {"type": "response.output_text.delta", "delta": "Hel"}
            raise ModelHTTPError(None, "the connection dropped")

    with Recorder(tmp_path / "run.jsonl") as recorder:
        stream = recorder.wrap(ScriptedModel([events()])).stream_response(None, [], ModelSettings(), [], None, [])
        assert next(stream)["delta"] == "Hello there"
        stream.close()  # the reader stopped (a cancelled run): the call is not whole
        broken = recorder.wrap(Broken()).stream_response(None, [], ModelSettings(), [], None, [])
        with pytest.raises(ModelHTTPError):
            list(broken)
        whole = list(recorder.wrap(ScriptedModel([events("Whole")])).stream_response(
            None, [], ModelSettings(), [], None, []))
    assert [c["response"]["events"] for c in calls(tmp_path / "run.jsonl")] == [whole]


def test_the_response_is_recorded_as_the_model_gave_it_and_made_up_ids_pair_in_a_replay(tmp_path):
    """A server that numbers calls per response says "call_0" every time: the run gives the second one a fresh,
    random id. The recording keeps what the model said; a replay pairs the replayed run's fresh id with it."""
    steps = [[function_call("lookup_order", {"order_id": "A-1"}, call_id="call_0")],
             [function_call("lookup_order", {"order_id": "B-7"}, call_id="call_0")],
             [assistant_message("Both shipped.")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        recorded = Runner.run_sync(Agent(name="A", tools=[lookup_order], model=recorder.wrap(ScriptedModel(steps))),
                                   "A-1 and B-7?")
    lines = calls(tmp_path / "run.jsonl")
    assert lines[1]["response"]["output"][0]["call_id"] == "call_0"
    fresh = lines[2]["request"]["input"][3]["call_id"]
    assert fresh != "call_0" and recorded.new_items[2].raw_item["call_id"] == fresh
    replayed = Runner.run_sync(Agent(name="A", tools=[lookup_order], model=Replay(tmp_path / "run.jsonl")),
                               "A-1 and B-7?")
    assert replayed.final_output == "Both shipped."
    again = replayed.new_items[2].raw_item["call_id"]
    assert again != fresh  # random in every run: the one thing a replay's items do not share with the recording
    assert json.loads(json.dumps(run_items(replayed)).replace(again, fresh)) == json.loads(
        json.dumps(run_items(recorded)))


MADE_UP = ["call_" + letter * 24 for letter in "abcd"]


def made_up_recording(path, *inputs) -> None:
    """A recording whose requests hold the given inputs (call ids the kernel made up, as a run would have them)."""
    with Recorder(path) as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("ok")] for _ in inputs]))
        for input in inputs:
            model.get_response(None, input, ModelSettings(), [], None, [])


def output_of(call_id):
    return {"type": "function_call_output", "call_id": call_id, "output": "done"}


def test_a_made_up_id_pairs_with_one_replayed_id_across_the_whole_replay(tmp_path):
    x, y, z, _ = MADE_UP
    made_up_recording(tmp_path / "run.jsonl", [output_of(x)], [output_of(x)])
    replay = Replay(tmp_path / "run.jsonl")
    replay.get_response(None, [output_of(y)], ModelSettings(), [], None, [])
    with pytest.raises(ReplayMismatch) as caught:  # x stands for y now, not for z
        replay.get_response(None, [output_of(z)], ModelSettings(), [], None, [])
    assert (caught.value.request, caught.value.field, caught.value.recorded, caught.value.received) == (
        2, "input[0].call_id", x, z)


def test_two_recorded_made_up_ids_never_pair_with_one_replayed_id(tmp_path):
    x, y, z, _ = MADE_UP
    made_up_recording(tmp_path / "run.jsonl", [output_of(x), output_of(y)])
    with pytest.raises(ReplayMismatch) as caught:
        Replay(tmp_path / "run.jsonl").get_response(None, [output_of(z), output_of(z)], ModelSettings(), [], None, [])
    assert (caught.value.field, caught.value.recorded, caught.value.received) == ("input[1].call_id", y, z)


def test_an_id_a_server_gave_is_compared_as_it_is(tmp_path):
    made_up_recording(tmp_path / "run.jsonl", [output_of("call_0")])
    with pytest.raises(ReplayMismatch) as caught:
        Replay(tmp_path / "run.jsonl").get_response(None, [output_of("call_1")], ModelSettings(), [], None, [])
    assert (caught.value.field, caught.value.recorded, caught.value.received) == ("input[0].call_id", "call_0",
                                                                                "call_1")


@pytest.mark.parametrize("recorded, received", [(1, 1.0), (True, 1), (0, False), ("1", 1), (None, ABSENT)])
def test_values_of_different_json_types_differ(recorded, received):
    from miniagents.recording.replay import first_difference
    assert first_difference({"x": recorded}, {"x": received} if received is not ABSENT else {}) == (
        "x", recorded, received)


def test_the_ids_a_request_chains_to_are_compared(tmp_path):
    steps = [[function_call("lookup_order", {"order_id": "A-1"}, call_id="c1")], [assistant_message("Shipped.")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", tools=[lookup_order], model=recorder.wrap(ScriptedModel(steps))), "A-1?")
    with pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(Agent(name="A", tools=[lookup_order], model=Replay(tmp_path / "run.jsonl")), "A-1?",
                        previous_response_id="resp-0")
    assert (caught.value.field, caught.value.recorded, caught.value.received) == (
        "previous_response_id", None, "resp-0")


def test_a_run_that_does_not_record_loads_nothing_of_the_recording_shell():
    code = ("import sys\n"
            "from miniagents import Agent, Runner\n"
            "from miniagents.testing import ScriptedModel, assistant_message\n"
            "Runner.run_sync(Agent(name='A', model=ScriptedModel([[assistant_message('Hi')]])), 'Hi')\n"
            "import miniagents.seams as seams\n"
            "print(sorted(m for m in sys.modules if m.startswith('miniagents.recording')), seams.plugins)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] ()"


def test_importing_the_shell_registers_no_plugin():
    import miniagents.recording  # noqa: F401
    from miniagents import seams
    assert not any("recording" in type(p).__module__ for p in seams.plugins)


# --- One recorder per file (issue 30): a second one on the same path is refused, never truncates it ------------------


def record_one(recorder, answer):
    Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message(answer)]]))), "Hi")


def test_a_second_recorder_on_a_path_being_recorded_is_refused_and_the_first_keeps_its_calls(tmp_path):
    path = tmp_path / "run.jsonl"
    with Recorder(path) as first:
        record_one(first, "first")
        for other in (path, tmp_path / "." / "run.jsonl"):
            with pytest.raises(RecordingError, match="another Recorder is writing .*run.jsonl"):
                Recorder(other)
        if hasattr(os, "symlink"):
            os.symlink(path, tmp_path / "link.jsonl")
            with pytest.raises(RecordingError, match="another Recorder is writing"):
                Recorder(tmp_path / "link.jsonl")
        record_one(first, "again")
    assert [c["response"]["output"][0]["content"][0]["text"] for c in calls(path)] == ["first", "again"]
    with Recorder(path) as later:  # once the first is closed, recording again replaces the file, as before
        record_one(later, "later")
    assert [c["n"] for c in calls(path)] == [1]


@pytest.mark.parametrize("failure, raised, said", [
    (OSError(5, "Input/output error"), RecordingError, "cannot write the recording .*run.jsonl.*: Input/output error"),
    (KeyboardInterrupt(), KeyboardInterrupt, None),
])
def test_a_recorder_interrupted_preparing_its_file_gives_the_file_back(tmp_path, monkeypatch, failure, raised, said):
    path, truncate = tmp_path / "run.jsonl", os.ftruncate

    def failing(fd, length):
        raise failure

    monkeypatch.setattr(os, "ftruncate", failing)
    with pytest.raises(raised, match=said):
        Recorder(path)
    monkeypatch.setattr(os, "ftruncate", truncate)
    with Recorder(path) as later:  # not held by the recorder that failed
        record_one(later, "later")
    assert [c["n"] for c in calls(path)] == [1]


def test_of_two_recorders_started_at_once_in_two_threads_one_records_and_the_other_is_refused(tmp_path):
    import threading
    for attempt in range(20):
        path = tmp_path / f"run{attempt}.jsonl"
        start, both_tried, outcomes, lock = threading.Barrier(2), threading.Event(), [], threading.Lock()

        def tried(outcome):
            with lock:
                outcomes.append(outcome)
                if len(outcomes) == 2:
                    both_tried.set()

        def open_and_record(answer):
            start.wait()
            try:
                recorder = Recorder(path)
            except RecordingError as error:
                tried(("refused", str(error)))
                return
            tried(("recording", answer))
            record_one(recorder, answer)
            both_tried.wait(30)  # held open until the other thread has tried
            recorder.close()

        threads = [threading.Thread(target=open_and_record, args=(answer,)) for answer in ("one", "two")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(kind for kind, _ in outcomes) == ["recording", "refused"], outcomes
        winner = next(answer for kind, answer in outcomes if kind == "recording")
        assert Runner.run_sync(Agent(name="A", model=Replay(path)), "Hi").final_output == winner


CHILD = """
import sys
from miniagents import Agent, Runner
from miniagents.recording import Recorder, RecordingError
from miniagents.testing import ScriptedModel, assistant_message
try:
    recorder = Recorder(sys.argv[1])
except RecordingError as error:
    print("refused:", error, flush=True)
    sys.exit(3)
Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message("child")]]))), "Hi")
print("recording", flush=True)
sys.stdin.readline()  # hold the recorder open until the parent says
recorder.close()
"""


def test_a_recorder_in_another_process_is_seen_and_its_file_is_left_whole(tmp_path):
    path = tmp_path / "run.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert child.stdout.readline().strip() == "recording"
        with pytest.raises(RecordingError, match="another Recorder is writing"):
            Recorder(path)
        second = subprocess.run([sys.executable, "-c", CHILD, str(path)], input="", capture_output=True,
                                text=True, cwd=ROOT, timeout=60)
        assert second.returncode == 3 and "another Recorder is writing" in second.stdout
    finally:
        child.communicate("\n", timeout=60)
    assert child.returncode == 0
    assert Runner.run_sync(Agent(name="A", model=Replay(path)), "Hi").final_output == "child"
    with Recorder(path) as recorder:  # the other process has closed it: this one may record
        record_one(recorder, "parent")
    assert Runner.run_sync(Agent(name="A", model=Replay(path)), "Hi").final_output == "parent"


def test_a_recorder_in_a_process_that_was_killed_does_not_block_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    assert child.stdout.readline().strip() == "recording"
    child.kill()
    child.wait(60)
    child.stdin.close()
    child.stdout.close()
    with Recorder(path) as recorder:
        record_one(recorder, "after the crash")
    assert Runner.run_sync(Agent(name="A", model=Replay(path)), "Hi").final_output == "after the crash"


def test_a_recorder_that_was_never_closed_gives_its_file_back_when_it_is_collected(tmp_path):
    import gc
    recorder = Recorder(tmp_path / "run.jsonl")
    record_one(recorder, "forgotten")
    del recorder
    gc.collect()
    with Recorder(tmp_path / "run.jsonl") as again:
        record_one(again, "again")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_recorder_inherited_by_a_forked_process_refuses_to_write_there(tmp_path):
    """A process forked from the recording one (multiprocessing's default on Linux) shares the open file: writing
    from both would number and interleave lines apart, so the child's calls are refused, and the parent's file
    stays whole."""
    path = tmp_path / "run.jsonl"
    with Recorder(path) as recorder:
        record_one(recorder, "parent")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: try to record, report what happened, leave at once
            os.close(read)
            try:
                record_one(recorder, "child")
                said = b"recorded"
            except RecordingError as error:
                said = b"refused: " + str(error).encode()
            except BaseException as error:  # noqa: BLE001
                said = repr(error).encode()
            os.write(write, said)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            said = f.read().decode()
        os.waitpid(pid, 0)
        record_one(recorder, "parent again")
    assert said.startswith("refused: ") and "another process" in said
    assert [c["response"]["output"][0]["content"][0]["text"] for c in calls(path)] == ["parent", "parent again"]


def test_a_recorded_custom_model_that_returns_no_model_response_is_the_runs_user_error(tmp_path):
    from miniagents import Agent, Model, Runner, UserError

    class ReturnsNone(Model):
        def get_response(self, *args, **kwargs):
            return None

    with Recorder(str(tmp_path / "run.jsonl")) as recorder:
        with pytest.raises(UserError, match="must return a ModelResponse, not NoneType"):
            Runner.run_sync(Agent(name="A", model=recorder.wrap(ReturnsNone())), "hi")


def test_a_recorded_custom_stream_response_that_returns_no_iterable_is_the_runs_user_error(tmp_path):
    """The recorder iterated the stream itself: a bare TypeError ("'NoneType' object is not iterable")."""
    import asyncio

    from miniagents import Model, UserError

    class StreamsNone(Model):
        def get_response(self, *args, **kwargs):  # pragma: no cover - only streamed here
            raise AssertionError

        def stream_response(self, *args, **kwargs):
            return None

    async def read(result):
        async for _ in result.stream_events():
            pass

    with Recorder(str(tmp_path / "run.jsonl")) as recorder:
        result = Runner.run_streamed(Agent(name="A", model=recorder.wrap(StreamsNone())), "hi")
        with pytest.raises(UserError, match="stream_response must return an iterable of events, not NoneType$"):
            asyncio.run(read(result))


def test_a_stream_that_ends_without_response_completed_leaves_no_line_and_the_recording_still_replays(tmp_path):
    """The run refuses such a stream (its own error, not the recorder's); the calls before it still replay."""
    import asyncio

    from miniagents import AgentsException
    cut_off = ModelStep(stream_events=[{"type": "response.output_text.delta", "delta": "part", "item_id": "m",
                                        "output_index": 0, "content_index": 0}])
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("First.")], cut_off, events("Third.")]))
        Runner.run_sync(Agent(name="A", model=model), "one")

        async def drain(question):
            result = Runner.run_streamed(Agent(name="A", model=model), question)
            async for _ in result.stream_events():
                pass
            return result.final_output
        with pytest.raises(AgentsException, match="without a response.completed event") as caught:
            asyncio.run(drain("two"))
        assert not isinstance(caught.value, RecordingError)
        assert asyncio.run(drain("three")) == "Third."
    assert [c["n"] for c in calls(tmp_path / "run.jsonl")] == [1, 2] and recorder.count == 2
    assert Replay(tmp_path / "run.jsonl").remaining == 2


def nested(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("output, why", [
    ([{"type": "message", "role": "assistant", "id": "m", "content": "Hi"}], "content is a string, expected an array"),
    ([{"type": "message", "role": "assistant", "id": "m", "content": [
        {"type": "output_text", "text": "Hi", "annotations": [], "extra": nested(120)}]}],
     "nests more than 100 levels"),
    ([{"type": "message", "role": "assistant", "id": "m", "content": [
        {"type": "output_text", "text": "Hi", "annotations": "none"}]}], "annotations is a string, expected an array"),
])
def test_a_response_a_replay_would_refuse_is_a_recording_error_when_recorded_and_uses_up_no_number(tmp_path, output,
                                                                                                    why):
    """The run may accept what the adapters' wire checks (which a replay keeps) refuse: a custom model's message
    content as a string, a value nested past the replay's bound. The recorder says so when it records, naming why,
    and writes no line: the recording stays one a replay reads, numbered without a gap."""
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("Before.")], ModelStep(output=output),
                                             [assistant_message("After.")]]))
        Runner.run_sync(Agent(name="A", model=model), "one")
        with pytest.raises(RecordingError, match=f"cannot record call 2 to .*{why}.*a replay of the recording would "
                                                 "refuse it"):
            Runner.run_sync(Agent(name="A", model=model), "two")
        Runner.run_sync(Agent(name="A", model=model), "three")
    assert [c["n"] for c in calls(tmp_path / "run.jsonl")] == [1, 2]
    assert Replay(tmp_path / "run.jsonl").remaining == 2


def test_a_recording_that_would_grow_past_what_a_replay_reads_is_a_recording_error_when_recorded(tmp_path,
                                                                                                  monkeypatch):
    from miniagents.recording import format
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("Short.")], [assistant_message("x" * 2000)]]))
        Runner.run_sync(Agent(name="A", model=model), "one")
        monkeypatch.setattr(format, "MAX_BYTES", os.path.getsize(tmp_path / "run.jsonl") + 1000)
        with pytest.raises(RecordingError, match="cannot record call 2 .*would grow past"):
            Runner.run_sync(Agent(name="A", model=model), "two")
    assert Replay(tmp_path / "run.jsonl").remaining == 1


def test_objects_and_arrays_weigh_against_the_size_a_replay_reads_when_recorded_and_when_loaded(tmp_path,
                                                                                                 monkeypatch):
    """Decoded, an array or object takes 20 to 40 times its text's memory: each weighs `CONTAINER_BYTES` more against
    `MAX_BYTES`, counted before any line is decoded; a recorder counts alike, so it writes no file a replay refuses."""
    from miniagents.recording import format
    steps = [[assistant_message("Short.")], [{**assistant_message("Hi"), "extra": [[]] * 40}]]
    with Recorder(tmp_path / "full.jsonl") as recorder:
        for prompt in ("one", "two"):
            Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel(steps))), prompt)
    data = (tmp_path / "full.jsonl").read_bytes()
    assert format.weight(data) - len(data) == format.CONTAINER_BYTES * (data.count(b"[") + data.count(b"{"))
    monkeypatch.setattr(format, "MAX_BYTES", format.weight(data) - 1)  # its size fits, not its weight
    with pytest.raises(RecordingError, match="too many objects and arrays to read: counting each as 16 bytes"):
        Replay(tmp_path / "full.jsonl")
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = recorder.wrap(ScriptedModel(steps))
        Runner.run_sync(Agent(name="A", model=model), "one")
        with pytest.raises(RecordingError, match="cannot record call 2 .*would grow past .*counting each object"):
            Runner.run_sync(Agent(name="A", model=model), "two")
    assert Replay(tmp_path / "run.jsonl").remaining == 1


@pytest.mark.parametrize("given, shown", [("gpt-4.1-mini", "got 'gpt-4.1-mini'"), (None, "got NoneType"),
                                          (42, "got int")])
def test_wrapping_what_is_no_model_is_a_user_error_naming_it(tmp_path, given, shown):
    """A model name is for Agent(model=...), which looks it up: the recorder needs the model object it would call."""
    from miniagents import UserError
    with Recorder(tmp_path / "run.jsonl") as recorder:
        with pytest.raises(UserError, match=f"Recorder.wrap\\(\\) takes a model object .*{shown}"):
            recorder.wrap(given)


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1, exclude_max=True), repeat=st.booleans())
def test_a_write_that_fails_part_way_leaves_the_recording_whole_and_numbered(tmp_path, cut, repeat):
    """A full disk (here: the file size limit, EFBIG as ENOSPC) stops a line at any byte: the recorder says so, cuts
    the torn line off and keeps the number for the next call; the file then replays with every whole call."""
    import resource
    import signal
    path = tmp_path / "run.jsonl"
    long_answer = [assistant_message("x" * 3000)]
    with Recorder(path) as recorder:
        model = recorder.wrap(ScriptedModel([[assistant_message("One.")], long_answer, long_answer,
                                             [assistant_message("Three.")]]))
        Runner.run_sync(Agent(name="A", model=model), "one")
        whole = os.path.getsize(path)
        handler, limits = signal.signal(signal.SIGXFSZ, signal.SIG_IGN), resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (whole + int(cut * 3000), limits[1]))
        try:
            for _ in range(2 if repeat else 1):  # a second failure cuts back to the same end
                with pytest.raises(RecordingError, match="cannot write the recording .*File too large"):
                    Runner.run_sync(Agent(name="A", model=model), "two")
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, limits)
            signal.signal(signal.SIGXFSZ, handler)
        assert os.path.getsize(path) == whole and recorder.count == 1
        Runner.run_sync(Agent(name="A", model=model), "three")
    assert [(c["n"], c["request"]["input"][0]["content"]) for c in calls(path)] == [(1, "one"), (2, "three")]
    assert Replay(path).remaining == 2


def test_a_write_an_interrupt_stops_part_way_is_cut_back_so_the_recording_goes_on_whole(tmp_path):
    """Ctrl-C (or any exception) inside the write leaves the same torn line a full disk does: it is cut off, the
    interrupt goes on up, and the next call's line starts where the last whole one ended."""
    class Interrupted:
        def __init__(self, file):
            self.file, self.armed = file, True

        def write(self, data):
            if self.armed:
                self.armed = False
                self.file.write(data[:-1])  # all but the newline
                raise KeyboardInterrupt
            return self.file.write(data)

        def __getattr__(self, name):
            return getattr(self.file, name)

    recorder = Recorder(tmp_path / "run.jsonl")
    model = recorder.wrap(ScriptedModel([[assistant_message("One.")], [assistant_message("Two.")]]))
    recorder._file = Interrupted(recorder._file)
    with pytest.raises(KeyboardInterrupt):
        Runner.run_sync(Agent(name="A", model=model), "one")
    Runner.run_sync(Agent(name="A", model=model), "two")
    recorder.close()
    assert [(c["n"], c["request"]["input"][0]["content"]) for c in calls(tmp_path / "run.jsonl")] == [(1, "two")]


def test_a_torn_line_that_cannot_be_cut_off_closes_the_recorder(tmp_path, monkeypatch):
    """When even cutting the torn line off fails, no later call may be glued onto it: the recorder closes."""
    class Failing:
        def __init__(self, file):
            self.file = file

        def write(self, data):
            self.file.write(data[:10])
            raise OSError(28, "No space left on device")

        def truncate(self, size):
            raise OSError(5, "Input/output error")

        def close(self):
            self.file.close()

    recorder = Recorder(tmp_path / "run.jsonl")
    model = recorder.wrap(ScriptedModel([[assistant_message("One.")], [assistant_message("Two.")]]))
    recorder._file = Failing(recorder._file)
    with pytest.raises(RecordingError, match="No space left on device; cutting the torn line off failed too, so the "
                                             "recorder is closed"):
        Runner.run_sync(Agent(name="A", model=model), "one")
    with pytest.raises(RecordingError, match="is closed"):
        Runner.run_sync(Agent(name="A", model=model), "two")
    with pytest.raises(RecordingError, match="is truncated at line 2"):
        Replay(tmp_path / "run.jsonl")
    Recorder(tmp_path / "run.jsonl").close()  # the file was given back


class DeepModel:
    """A custom model whose answer holds `levels` nested lists, as a hostile server's item may."""

    def __init__(self, levels: int):
        self.levels = levels

    def get_response(self, *args, **kwargs):
        from miniagents.context import Usage
        from miniagents.items import ModelResponse
        return ModelResponse(output=[{**assistant_message("Hi"), "extra": nested(self.levels)}],
                             usage=Usage(requests=1))

    def stream_response(self, *args, **kwargs):
        yield from ()


@pytest.mark.parametrize("where", ["response", "request"])
def test_a_call_nested_far_past_the_bound_is_a_recording_error_not_a_recursion_error(tmp_path, where):
    """Nested some hundreds of levels (which the run itself takes, and JSON writes), a call still fails to record as
    one nested 101 levels does, with a `RecordingError`: the redaction that walks it recursively is not reached. (A
    custom model's response deeper than Python copies is refused where it is made, before the recorder sees it.)"""
    model = DeepModel(0 if where == "request" else 200)
    settings = ModelSettings(extra_body={"deep": nested(600)}) if where == "request" else ModelSettings()
    with Recorder(tmp_path / "run.jsonl") as recorder:
        with pytest.raises(RecordingError, match="cannot record call 1 .*nests more than 100 levels deep"):
            Runner.run_sync(Agent(name="A", model=recorder.wrap(model), model_settings=settings), "one")
    assert Replay(tmp_path / "run.jsonl").remaining == 0


@pytest.mark.skipif(sys.platform == "win32", reason="flock is not Windows' lock")
def test_a_file_system_that_cannot_lock_is_said_as_it_is_not_blamed_on_another_recorder(tmp_path, monkeypatch):
    """Some file systems (FUSE mounts, NFS without its lock daemon) answer flock with ENOLCK or EOPNOTSUPP: the
    recording is refused with that reason, not with "another Recorder is writing" it, which sent the user looking
    for a process that does not exist."""
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(RecordingError) as caught:
        Recorder(tmp_path / "run.jsonl")
    path = str(tmp_path / "run.jsonl")
    assert str(caught.value) == f"cannot write the recording {path!r}: {os.strerror(errno.ENOLCK)}"
    monkeypatch.undo()
    with Recorder(tmp_path / "run.jsonl") as recorder:  # nothing was left held
        assert recorder.count == 0
