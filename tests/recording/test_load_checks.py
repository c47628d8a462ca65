"""A recording's content is checked when it is loaded (issue 30): what a replay will hand the run (usage counts,
output items, a streamed response.completed) must have the shapes the run reads, and no value may be NaN,
Infinity or nested deeper than the run can walk. Anything else is a `RecordingError` naming the file and the
line, raised by `Replay(path)`, never a ValueError, OverflowError, TypeError, AttributeError or RecursionError
in the middle of a run.

Generated: a real recording (plain or streamed), one value anywhere in one of its calls replaced by a hostile
one (or removed); every such file is refused at load or replays with no error other than a typed one."""
import asyncio
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, AgentsException, Runner, function_tool
from miniagents.recording import Recorder, RecordingError, Replay
from miniagents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"Order {order_id} shipped."


def agent(model) -> Agent:
    return Agent(name="Desk", instructions="Answer.", tools=[lookup], model=model)


def steps():
    return [[function_call("lookup", {"order_id": "A-1"}, call_id="c1")], [assistant_message("It shipped.")]]


def base_recording(path, streamed: bool) -> list:
    """A real recording of a two-call run (a tool call, then an answer); its lines as decoded JSON."""
    with Recorder(path) as recorder:
        model = recorder.wrap(ScriptedModel(steps()))
        if streamed:
            async def drain():
                result = Runner.run_streamed(agent(model), "Where is A-1?")
                async for _ in result.stream_events():
                    pass
            asyncio.run(drain())
        else:
            Runner.run_sync(agent(model), "Where is A-1?")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path, lines: list) -> None:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")


def replays_cleanly(path) -> None:
    """Load the file; if it loads, replay it in each mode: it must end, or raise a typed error (an AgentsException),
    never anything else."""
    try:
        Replay(path)
    except RecordingError as error:
        assert "line" in str(error) and repr(str(path)) in str(error)
        return
    for streamed in (False, True):
        try:
            if streamed:
                async def drain():
                    result = Runner.run_streamed(agent(Replay(path)), "Where is A-1?")
                    async for _ in result.stream_events():
                        pass
                asyncio.run(drain())
            else:
                Runner.run_sync(agent(Replay(path)), "Where is A-1?")
        except AgentsException:
            pass


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '"12"', '"many"', "[1]", "{}", "-3", "true",
                                   "1e400"])
def test_a_usage_count_that_is_not_a_finite_non_negative_number_is_refused_at_load(tmp_path, streamed, value):
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed)
    marker = "__VALUE__"
    for field in ("input_tokens", "requests"):
        call = json.loads(json.dumps(lines[1]))
        usage = call["response"]["events"][-1]["response"]["usage"] if streamed else call["response"]["usage"]
        usage[field] = marker
        write(path, [lines[0], json.dumps(call).replace(json.dumps(marker), value), lines[2]])
        with pytest.raises(RecordingError, match=r"line 2\b"):
            Replay(path)


@pytest.mark.parametrize("value", ["1e400", "-1e400", "2.5E+308"])
@pytest.mark.parametrize("where", ["logprob", "settings"])
def test_a_number_past_the_largest_float_is_refused_at_load_wherever_it_is(tmp_path, value, where):
    """Valid JSON that float() reads as inf is Infinity, which the docs promise a replay refuses: a logprob of
    -1e400 was served, and a run with a session failed writing it (a bare ValueError)."""
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    marker = "__VALUE__"
    if where == "logprob":
        lines[2]["response"]["output"][0]["content"][0]["logprobs"] = [
            {"token": "It", "logprob": marker, "bytes": [], "top_logprobs": []}]
    else:
        lines[2]["request"]["settings"] = {"temperature": marker}
    write(path, [lines[0], lines[1], json.dumps(lines[2]).replace(json.dumps(marker), value)])
    with pytest.raises(RecordingError, match=rf"line 3 is not JSON: {re.escape(value)} is not a finite number"):
        Replay(path)
    write(path, [lines[0], lines[1], json.dumps(lines[2]).replace(json.dumps(marker), "1e300")])
    Replay(path)  # the largest floats stay numbers


def test_a_refused_number_is_quoted_cut_short(tmp_path):
    """A line may hold 64 MiB: a number of 100,000 digits was copied whole into the error's message."""
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    lines[2]["response"]["x"] = "__VALUE__"
    write(path, [lines[0], lines[1], json.dumps(lines[2]).replace('"__VALUE__"', "1" + "0" * 100_000 + ".5")])
    with pytest.raises(RecordingError, match=r"line 3 is not JSON: 10+… is not a finite number") as caught:
        Replay(path)
    assert len(str(caught.value)) < 400


def test_a_usage_count_past_the_largest_float_says_so(tmp_path):
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    lines[2]["response"]["usage"]["input_tokens"] = 10 ** 399
    write(path, lines)
    with pytest.raises(RecordingError, match=r"line 3: response.usage.input_tokens is a number, expected a "
                                             r"non-negative number at most 1\.8e\+308 \(a float's largest\)"):
        Replay(path)


@pytest.mark.parametrize("output", ["Hello", 5, {"type": "message"}, ["message"], [{"type": 5}], [None],
                                    [{"type": "function_call", "name": "lookup", "arguments": {"order_id": "A-1"}}],
                                    [{"type": "message", "content": "Hello"}]])
def test_output_that_is_not_a_list_of_items_is_refused_at_load(tmp_path, output):
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    lines[2]["response"]["output"] = output
    write(path, lines)
    with pytest.raises(RecordingError, match=r"line 3\b"):
        Replay(path)


@pytest.mark.parametrize("output", ["Hello there", 7, [1, 2], [{"no": "type"}]])
def test_a_streamed_completed_output_that_is_not_a_list_of_items_is_refused_at_load(tmp_path, output):
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=True)
    lines[2]["response"]["events"][-1]["response"]["output"] = output
    write(path, lines)
    with pytest.raises(RecordingError, match=r"line 3\b"):
        Replay(path)


@pytest.mark.parametrize("where", ["input", "settings", "events", "output"])
@pytest.mark.parametrize("depth", [150, 5000, 200000])
def test_deeply_nested_json_is_refused_at_load(tmp_path, where, depth):
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=where == "events")
    call = lines[1]
    marker = "__DEEP__"
    if where == "input":
        call["request"]["input"][0]["content"] = marker
    elif where == "settings":
        call["request"]["settings"] = {"extra_body": marker}
    elif where == "events":
        call["response"]["events"][0]["deep"] = marker
    else:
        call["response"]["output"][0]["extra"] = marker
    write(path, [lines[0], json.dumps(call).replace(json.dumps(marker), deep(depth)), lines[2]])
    with pytest.raises(RecordingError, match=r"line 2\b"):
        Replay(path)


def test_a_moderately_nested_value_still_loads_and_replays(tmp_path):
    """Nesting a tool schema or a request really has (tens of levels) is fine."""
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    lines[2]["response"]["output"][0]["extra"] = json.loads(deep(40))
    write(path, lines)
    Runner.run_sync(agent(Replay(path)), "Where is A-1?")


HOSTILE = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "-1", "1e400", "1.5", "0", "true", "null", '""', '"12"', "[]",
                     "{}", "[null]", '["x"]', '{"type": 5}', '{"type": "message"}', '[{"type": "message"}]',
                     '{"type": "response.completed"}', str(2 ** 70), deep(3000), '{"a":' * 2000 + "1" + "}" * 2000]),
    st.integers(-10 ** 20, 10 ** 20).map(str),
    st.text(max_size=5).map(json.dumps))


def paths(value, prefix=()):
    """Every place in a decoded JSON value: (keys and indexes from the top)."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from paths(inner, prefix + (index,))


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    folder = tmp_path_factory.mktemp("base")
    return {streamed: base_recording(folder / f"{streamed}.jsonl", streamed) for streamed in (False, True)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), streamed=st.booleans(), line=st.sampled_from([1, 2]), hostile=HOSTILE,
       remove=st.booleans())
def test_a_recording_with_any_value_made_hostile_is_refused_at_load_or_replays_with_typed_errors_only(
        recordings, tmp_path_factory, data, streamed, line, hostile, remove):
    lines = json.loads(json.dumps(recordings[streamed]))
    call = lines[line]
    where = data.draw(st.sampled_from([p for p in paths(call) if p]))
    parent = call
    for step in where[:-1]:
        parent = parent[step]
    if remove and isinstance(parent, dict):
        del parent[where[-1]]
        text = json.dumps(call)
    else:
        marker = "__HOSTILE__"
        parent[where[-1]] = marker
        text = json.dumps(call).replace(json.dumps(marker), hostile)
    path = tmp_path_factory.mktemp("hostile") / "run.jsonl"
    write(path, [json.dumps(x) if i != line else text for i, x in enumerate(lines)])
    replays_cleanly(path)


def test_the_nesting_bound_is_exact(tmp_path):
    """A line nested exactly `MAX_DEPTH` levels loads; one level more is refused."""
    from miniagents.recording import format
    path = tmp_path / "run.jsonl"
    lines = base_recording(path, streamed=False)
    for levels, loads in ((format.MAX_DEPTH, True), (format.MAX_DEPTH + 1, False)):
        call = json.loads(json.dumps(lines[2]))
        call["response"]["output"][0]["extra"] = json.loads(deep(levels - 4))  # below line, response, output, item
        write(path, [lines[0], lines[1], call])
        assert format.depth(call) == levels
        if loads:
            Replay(path)
        else:
            with pytest.raises(RecordingError, match=f"line 3 is nested more than {format.MAX_DEPTH} levels deep"):
                Replay(path)
