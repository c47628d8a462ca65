"""No credential reaches a recording of a streamed call, however the stream cut it: a key the model echoes is
redacted from the recorded events even when it arrives split across text deltas or tool-argument deltas, at any
offset, and a streamed replay hands none of it to the run's stream events (issue 30).

Generated: the secret (the wrapped adapter's API key, or a credential environment variable's value), the text
around it, where it stands, and every cut of that text into deltas."""
import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, Runner, function_tool
from miniagents.recording import REDACTED, Recorder, Replay
from miniagents.recording import redaction
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from openai_server import OpenAITestServer, sse
from replay_support import event_forms, network_closed, run

SECRET = st.text(string.ascii_letters + string.digits + "-_.~+/=", min_size=8, max_size=40).map(lambda s: "sk-" + s)
AROUND = st.text(string.ascii_letters + string.digits + " .,:;!?-_/=+", max_size=30)
ENV_NAME = "ACME_SERVICE_TOKEN"


@function_tool
def note(text: str) -> str:
    """Keep a note."""
    return "noted"


def cuts(text: str):
    """A strategy: `text` cut into pieces at generated places (empty pieces included)."""
    return st.lists(st.integers(0, len(text)), max_size=12).map(
        lambda points: [text[a:b] for a, b in zip([0] + sorted(points), sorted(points) + [len(text)])])


@st.composite
def echoes(draw, secret):
    """(a text with `secret` in it, its deltas; tool arguments with `secret` in them, their deltas)."""
    text = draw(AROUND) + secret + draw(AROUND) + draw(st.sampled_from(["", secret, secret[:5]]))
    escaped = draw(st.lists(st.booleans(), min_size=len(secret), max_size=len(secret)))
    if not draw(st.booleans()):
        escaped = [False] * len(secret)
    inside = "".join((f"\\u{ord(ch):04x}" if ch != "/" or draw(st.booleans()) else "\\/") if escape else ch
                     for ch, escape in zip(secret, escaped))  # JSON may spell any character as an escape
    arguments = '{"text": "' + draw(AROUND) + inside + draw(AROUND) + '"}'
    assert secret in json.loads(arguments)["text"]
    return text, draw(cuts(text)), arguments, draw(cuts(arguments))


def streamed_events(text: str, text_deltas: list, arguments: str, argument_deltas: list) -> list:
    """A Responses stream: a message whose text comes as `text_deltas`, then a tool call whose arguments come as
    `argument_deltas`, then response.completed with both items whole."""
    message, call = assistant_message(text, item_id="msg_1"), function_call("note", arguments, call_id="call_1",
                                                                        item_id="fc_1")
    events = [{"type": "response.created", "response": {"id": "r1", "output": []}},
              {"type": "response.output_item.added", "output_index": 0, "item": {**message, "content": []}}]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                "delta": piece} for piece in text_deltas]
    events += [{"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                "text": text},
               {"type": "response.output_item.done", "output_index": 0, "item": message},
               {"type": "response.output_item.added", "output_index": 1, "item": {**call, "arguments": ""}}]
    events += [{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
                "delta": piece} for piece in argument_deltas]
    events += [{"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1,
                "arguments": arguments},
               {"type": "response.output_item.done", "output_index": 1, "item": call},
               {"type": "response.completed", "response": {"id": "r1", "output": [message, call], "usage": None}}]
    return events


def joined_deltas(events: list) -> list:
    """Each streamed text of `events` whole: the deltas of one item (and part) joined, in order."""
    texts: dict = {}
    for event in events:
        if isinstance(event, dict) and isinstance(event.get("delta"), str):
            key = json.dumps([event.get(k) for k in ("type", "item_id", "output_index", "content_index")])
            texts[key] = texts.get(key, "") + event["delta"]
    return list(texts.values())


def recorded_events(path) -> list:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [event for line in lines for event in line["response"].get("events", [])]


def assert_nowhere(secret: str, path, replayed_events: list, replayed) -> None:
    text = path.read_text(encoding="utf-8")
    assert secret not in text and json.dumps(secret)[1:-1] not in text
    for whole in joined_deltas(recorded_events(path)):
        assert secret not in whole, "the deltas of the file, joined, show the secret"
    for whole in joined_deltas(replayed_events):
        assert secret not in whole, "a streamed replay handed the secret to the run's stream events"
    assert secret not in json.dumps(replayed_events)
    for event in recorded_events(path) + replayed_events:  # nor behind JSON escapes
        for field in ("arguments", "delta"):
            if isinstance(event.get(field), str) and event[field].startswith("{"):
                assert secret not in json.dumps(decoded(event[field]), ensure_ascii=False)
    for whole in joined_deltas(recorded_events(path)) + joined_deltas(replayed_events):
        assert secret not in json.dumps(decoded(whole), ensure_ascii=False)
    assert secret not in json.dumps([item.to_input_item() for item in replayed.new_items])
    assert secret not in str(replayed.final_output)


def decoded(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


async def drain(agent, question):
    result = Runner.run_streamed(agent, question)
    return result, [event.data for event in [e async for e in result.stream_events()]
                    if event.type == "raw_response_event"]


def replay_streamed(path):
    import asyncio
    with network_closed():
        return asyncio.run(drain(Agent(name="Desk", tools=[note], model=Replay(path)), "Say it back."))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), secret=SECRET)
def test_an_environment_credential_split_across_deltas_never_reaches_the_file_or_the_replay(
        tmp_path_factory, monkeypatch, data, secret):
    monkeypatch.setenv(ENV_NAME, secret)
    text, text_deltas, arguments, argument_deltas = data.draw(echoes(secret))
    path = tmp_path_factory.mktemp("stream") / "run.jsonl"
    steps = [ModelStep(stream_events=streamed_events(text, text_deltas, arguments, argument_deltas)),
             [assistant_message("Done.")]]
    with Recorder(path) as recorder:
        recorded, _ = run("streamed", Agent(name="Desk", tools=[note], model=recorder.wrap(ScriptedModel(steps))),
                          "Say it back.")
    replayed, events = replay_streamed(path)
    assert replayed.final_output == recorded.final_output == "Done."
    assert_nowhere(secret, path, events, replayed)
    [first, *_] = [line for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert REDACTED in "".join(joined_deltas(json.loads(first)["response"]["events"]))


def chat_stream(text_deltas: list, arguments_deltas: list) -> list:
    """Chat Completions chunks: the text as `text_deltas`, then one tool call whose arguments come as
    `arguments_deltas`."""
    base = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta, finish=None):
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    out = [chunk({"role": "assistant", "content": None})]
    out += [chunk({"content": piece}) for piece in text_deltas]
    out.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "note", "arguments": ""}}]}))
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in arguments_deltas]
    out.append(chunk({}, "tool_calls"))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), key=SECRET)
def test_the_adapters_api_key_echoed_across_stream_chunks_never_reaches_the_file_or_the_replay(
        tmp_path_factory, data, key):
    """Through the Chat Completions adapter over a socket: the key is the model's own `api_key=`."""
    from miniagents import OpenAIChatCompletionsModel
    text, text_deltas, arguments, argument_deltas = data.draw(echoes(key))
    path = tmp_path_factory.mktemp("stream") / "run.jsonl"
    server = OpenAITestServer()
    try:
        server.reply_sse(sse(*chat_stream(text_deltas, argument_deltas)))
        server.reply_sse(sse(*chat_stream(["Done."], [])[:2],
                             {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                              "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=key)
        with Recorder(path) as recorder:
            recorded, _ = run("streamed", Agent(name="Desk", tools=[note], model=recorder.wrap(model)),
                              "Say it back.")
    finally:
        server.close()
    assert recorded.final_output == "Done."
    replayed, events = replay_streamed(path)
    assert replayed.final_output == "Done."
    assert_nowhere(key, path, events, replayed)


def test_a_recording_made_before_the_fix_is_redacted_when_it_is_replayed(tmp_path, monkeypatch):
    """An old file that holds a split credential: a replay on a machine that knows the credential still hands none
    of it to the run."""
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv(ENV_NAME, secret)
    events = streamed_events(f"your key is {secret}.", ["your key is sk-li", "ve-0123", "456789abcdef."],
                             json.dumps({"text": "ok"}), ['{"text": "ok"}'])
    for event in events:  # the old recorder redacted whole strings only
        for field in ("text", "item", "response"):
            if field in event:
                event[field] = json.loads(json.dumps(event[field]).replace(secret, REDACTED))
    request = {"instructions": None, "input": [{"role": "user", "content": "Say it back."}], "tools": [note.spec()],
               "handoffs": [], "output_schema": None, "settings": {}, "previous_response_id": None,
               "conversation_id": None, "prompt": None}
    lines = [{"version": 1, "kind": "miniagents recording"},
             {"n": 1, "model": "m", "stream": True, "request": request, "response": {"events": events}}]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert secret not in path.read_text() and secret in "".join(joined_deltas(events))
    with pytest.raises(Exception):  # the recording ends after its first call: the run asks for a second one
        replay_streamed(path)
    replay = Replay(path)
    served = list(replay.stream_response(None, [{"role": "user", "content": "Say it back."}], _settings(), [note],
                                         None, []))
    assert secret not in "".join(joined_deltas(served)) and REDACTED in "".join(joined_deltas(served))


def _settings():
    from miniagents import ModelSettings
    return ModelSettings()


@given(secret=SECRET, data=st.data())
@settings(max_examples=200, deadline=None)
def test_redacting_split_deltas_keeps_every_other_character_where_it_was(secret, data):
    """The rewrite is exact: joining the redacted deltas gives the joined text with each secret replaced, and a
    delta that held no part of a secret is unchanged."""
    text = data.draw(AROUND) + secret + data.draw(AROUND) + secret + data.draw(AROUND)
    pieces = data.draw(cuts(text))
    events = [{"type": "response.output_text.delta", "output_index": 0, "delta": piece} for piece in pieces]
    out = redaction.stream_without_secrets(events, [secret])
    joined = "".join(event["delta"] for event in out)
    assert joined == redaction.without_secrets(text, [secret]) and secret not in joined
    assert len(out) == len(events)
    position = 0
    spans = [(i, i + len(secret)) for i in range(len(text)) if text.startswith(secret, i)]
    for before, after in zip(events, out):
        start, end = position, position + len(before["delta"])
        position = end
        if not any(a < end and start < b for a, b in spans):
            assert after == before


def test_the_redact_hook_sees_each_streamed_text_whole(tmp_path):
    """A name the hook hides, cut across two deltas, is hidden too: that text comes whole in its first delta; a
    text the hook changes alike piece by piece keeps its deltas."""
    hide = lambda text: text.replace("Ada Lovelace", "<name>")  # noqa: E731
    events = streamed_events("Dear Ada Lovelace, hello", ["Dear Ada Lo", "velace, ", "hello"],
                             '{"text": "Ada Lovelace"}', ['{"text": "Ada Lovelace"}'])
    steps = [ModelStep(stream_events=events), [assistant_message("Done.")]]
    with Recorder(tmp_path / "run.jsonl", redact=hide) as recorder:
        run("streamed", Agent(name="Desk", tools=[note], model=recorder.wrap(ScriptedModel(steps))), "Hi")
    recorded = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[1])["response"]["events"]
    assert "Lovelace" not in (tmp_path / "run.jsonl").read_text()
    texts = [e["delta"] for e in recorded if e["type"] == "response.output_text.delta"]
    assert texts == ["Dear <name>, hello", "", ""]
    arguments = [e["delta"] for e in recorded if e["type"] == "response.function_call_arguments.delta"]
    assert arguments == ['{"text": "<name>"}']


def test_deltas_the_redact_hook_changed_lose_their_logprobs():
    """A delta the hook changed on its own, and the deltas of a text it changed whole (a name cut in two), lose the
    logprobs that spell what it hid; a delta it left alone keeps them."""
    hide = redaction.user_hook(lambda text: text.replace("Ada Lovelace", "<name>"))
    logprobs = [{"token": "x", "logprob": -0.1, "bytes": [120], "top_logprobs": []}]
    delta = lambda item, text: {"type": "response.output_text.delta", "item_id": item, "output_index": 0,  # noqa
                                "content_index": 0, "delta": text, "logprobs": logprobs}
    events = [delta("m1", "Ada Lovelace!"), delta("m2", "Dear Ada Lo"), delta("m2", "velace"), delta("m3", "Hi")]
    assert [(e["delta"], e["logprobs"]) for e in hide.events(events)] == [
        ("<name>!", []), ("Dear <name>", []), ("", []), ("Hi", logprobs)]


# --- Beyond deltas: other ways a reader joins strings, and keys ----------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), secret=SECRET, streamed=st.booleans())
def test_a_secret_split_across_a_messages_content_parts_is_redacted(tmp_path_factory, monkeypatch, data, secret,
                                                                     streamed):
    """A message's text is its output_text parts joined (that is the final output): a key cut across two parts,
    or across the deltas of two parts, is redacted too."""
    monkeypatch.setenv(ENV_NAME, secret)
    text = data.draw(AROUND) + secret + data.draw(AROUND)
    at = data.draw(st.integers(1, len(text) - 1))
    parts = [text[:at], text[at:]]
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": part, "annotations": []} for part in parts]}
    if streamed:
        events = [{"type": "response.created", "response": {"id": "r1", "output": []}}]
        for i, part in enumerate(parts):  # each part's delta, then the part whole in its done event
            events += [{"type": event, "item_id": "msg_1", "output_index": 0, "content_index": i, field: value}
                       for event, field, value in (("response.output_text.delta", "delta", part),
                                                   ("response.content_part.done", "part", message["content"][i]))]
        events.append({"type": "response.completed", "response": {"id": "r1", "output": [message], "usage": None}})
        step = ModelStep(stream_events=events)
    else:
        step = [message]
    path = tmp_path_factory.mktemp("parts") / "run.jsonl"
    with Recorder(path) as recorder:
        recorded, _ = run("streamed" if streamed else "sync",
                          Agent(name="Desk", model=recorder.wrap(ScriptedModel([step]))), "Say it back.")
    assert recorded.final_output == text
    line = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    output = line["response"]["events"][-1]["response"]["output"] if streamed else line["response"]["output"]
    assert secret not in "".join(part["text"] for part in output[0]["content"])
    if streamed:
        assert secret not in "".join(e["delta"] for e in line["response"]["events"] if "delta" in e)
        assert secret not in "".join(e["part"]["text"] for e in line["response"]["events"] if "part" in e)
    replayed, _ = run("sync", Agent(name="Desk", model=Replay(path)), "Say it back.")
    assert secret not in replayed.final_output and REDACTED in replayed.final_output


@pytest.mark.parametrize("kind", ["content_part", "reasoning_summary_part"])
def test_a_secret_split_across_the_done_events_of_two_parts_is_cut_and_their_logprobs_dropped(kind):
    """Each part's done event carries the part whole; an item's parts joined are its text, so a secret cut across two
    of them is cut out of both, and their logprobs (whose tokens spell it) go."""
    secret = "sk-live-0123456789abcdef"
    texts = ["The key is " + secret[:10], secret[10:] + " ok.", "Bye."]
    tokens = lambda text: [{"token": text, "logprob": -0.1, "bytes": list(text.encode()), "top_logprobs": []}]  # noqa
    events = [{"type": f"response.{kind}.done", "item_id": "it_1", "output_index": 0, "content_index": i,
               "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": tokens(text)}}
              for i, text in enumerate(texts)]
    parts = [event["part"] for event in redaction.stream_without_secrets(events, [secret])]
    assert [part["text"] for part in parts] == ["The key is " + REDACTED, " ok.", "Bye."]
    assert [part["logprobs"] for part in parts] == [[], [], tokens("Bye.")]


def test_a_secret_as_a_key_of_an_output_item_is_redacted(tmp_path, monkeypatch):
    """A server may put anything in an output item's fields, its names included: a key there is redacted too."""
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv(ENV_NAME, secret)
    message = {**assistant_message("Hi"), secret: {"note": secret}}
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="Desk", model=recorder.wrap(ScriptedModel([[message]]))), "Hi")
    assert secret not in (tmp_path / "run.jsonl").read_text(encoding="utf-8")


@given(data=st.data())
@settings(max_examples=300, deadline=None)
def test_overlapping_secrets_cut_anyhow_leave_no_secret_in_any_joined_text(data):
    """Secrets over a two-letter alphabet (so they overlap, nest and repeat), in a text made of their pieces, cut
    anyhow: the joined deltas, and the joined content parts, hold none of them."""
    secrets = data.draw(st.lists(st.text("ab", min_size=8, max_size=12), min_size=1, max_size=3))
    pieces = data.draw(st.lists(st.one_of(st.sampled_from(secrets), st.text("abx", max_size=6)), max_size=8))
    text = "".join(pieces)
    cut = data.draw(cuts(text))
    events = [{"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
               "content_index": data.draw(st.integers(0, 1)), "delta": piece} for piece in cut]
    joined = "".join(e["delta"] for e in redaction.stream_without_secrets(events, secrets))
    parts = redaction.without_secrets([{"type": "output_text", "text": piece} for piece in cut], secrets)
    for whole in (joined, "".join(part["text"] for part in parts)):
        assert not any(secret in whole for secret in secrets)
        assert whole.replace(REDACTED, "").count("x") == text.count("x")  # only what a secret covered is gone
