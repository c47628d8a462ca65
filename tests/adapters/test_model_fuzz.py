"""Fuzz: answers that are valid JSON but the wrong shape never escape the adapters as anything but an
`AgentsException`, and what the adapters do return is what the kernel can read.

Each case takes a well-formed answer (a chat completion, a chat stream, a Responses object, a Responses
stream), changes one to three places in it to any JSON value (or removes a key), and serves it over a real
socket to both adapters, plain and streamed. The normal suite runs `FUZZ_EXAMPLES` cases per adapter and
mode (4 × 60); for the long run set the environment variable, e.g.
`MINIAGENTS_FUZZ_EXAMPLES=2500 pytest tests/test_model_fuzz.py` (10,000 cases).
"""
import json
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from miniagents.context import Usage
from miniagents.errors import AgentsException
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import (OpenAITestServer, call_item, chat_chunks, chat_completion, response_event_list,
                           response_obj, text_item)

FUZZ_EXAMPLES = int(os.environ.get("MINIAGENTS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_EXAMPLES <= 60,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

strings = st.text(st.sampled_from("ab \"{}:\\é😀\ud800\udc00\ud83d\ude00\x00"), max_size=8)
leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 2 ** 70), st.floats(), strings)
json_values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(strings, kids, max_size=3),
                           max_leaves=6)


@st.composite
def mutated(draw, value, depth=0):
    """`value` with one place changed: replaced by any JSON value, or (in an object) its key removed."""
    if not isinstance(value, (dict, list)) or not value or (depth and draw(st.integers(0, 3)) == 0):
        return draw(json_values)
    if isinstance(value, dict):
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.integers(0, 5)) == 0:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: draw(mutated(value[key], depth + 1))}
    i = draw(st.integers(0, len(value) - 1))
    return value[:i] + [draw(mutated(value[i], depth + 1))] + value[i + 1:]


@st.composite
def answers(draw, base):
    value = draw(base)
    for _ in range(draw(st.integers(1, 3))):
        value = draw(mutated(value))
    return value


usages = st.sampled_from([None, {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12,
                                 "prompt_tokens_details": {"cached_tokens": 1},
                                 "completion_tokens_details": {"reasoning_tokens": 2}}])
calls = st.lists(st.tuples(st.sampled_from(["call_1", "call_2"]), st.sampled_from(["f", "transfer_to_b"]),
                           st.sampled_from(['{"a": 1}', "", '{"q": "x"}'])), max_size=2)
texts = st.sampled_from([None, "", "Hello there", "pair 😀"])
chat_bodies = st.builds(lambda text, tool_calls, usage, reasoning: chat_completion(
    text, tool_calls, usage=usage or {}, **({"reasoning_content": reasoning} if reasoning else {})),
    texts, calls, usages, st.sampled_from([None, "thinking"]))
chat_streams = st.builds(lambda text, tool_calls, usage: chat_chunks(text, tool_calls, usage=usage or False),
                         texts, calls, usages)
reasoning_item = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}]}
outputs = st.lists(st.sampled_from([text_item("hi"), call_item("call_1", "f", '{"a": 1}'), reasoning_item]),
                   max_size=3)
responses_bodies = st.builds(response_obj, outputs)


responses_streams = st.builds(response_event_list, outputs)


@pytest.fixture(scope="module")
def fuzz_server():
    srv = OpenAITestServer()
    yield srv
    srv.close()


def serve(server, body=None, events=None, done=True):
    """Queue one answer: a JSON body, or each event as one `data:` line (whatever JSON value it is)."""
    server.replies.clear()
    if events is None:
        server.reply(raw=json.dumps(body))
        return
    events = events if isinstance(events, list) else [events]
    server.reply_sse(["data: " + json.dumps(e) + "\n\n" for e in events] + (["data: [DONE]\n\n"] if done else []))


def readable_items(items):
    """What the kernel reads from output items is there, with the right types, and all of it encodes."""
    json.dumps(items, ensure_ascii=False).encode("utf-8")
    for item in items:
        assert isinstance(item, dict) and isinstance(item["type"], str)
        if item["type"] == "message":
            for part in item.get("content") or []:
                assert isinstance(part, dict)
                if part.get("type") == "output_text":
                    assert isinstance(part["text"], str)
        elif item["type"] == "function_call":
            assert isinstance(item["name"], str) and item["name"] and isinstance(item["arguments"], str)
            assert item.get("call_id") is None or isinstance(item["call_id"], str)


def outcome(call):
    """Run one call; an AgentsException is a fine outcome, any other exception fails the test."""
    try:
        result = call()
    except AgentsException as err:
        event(f"typed error: {type(err).__name__}")  # shown by --hypothesis-show-statistics
        return None
    event("an answer")
    return result


def ask(model):
    return model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])


def stream_completed(model):
    events = list(model.stream_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, []))
    assert all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in events)
    json.dumps(events, ensure_ascii=False).encode("utf-8")
    assert events[-1]["type"] == "response.completed"
    return events[-1]["response"]


def check_plain(response):
    if response is not None:
        readable_items(response.output)
        assert isinstance(response.usage, Usage) and all(
            isinstance(v, int) for v in (response.usage.input_tokens, response.usage.output_tokens,
                                         response.usage.total_tokens))


def check_streamed(final):
    if final is not None:
        readable_items(final["output"])
        Usage.from_json(final.get("usage"))
        assert final.get("id") is None or isinstance(final["id"], str)


ADAPTERS = {"chat": (OpenAIChatCompletionsModel, chat_bodies, chat_streams, True),
            "responses": (OpenAIResponsesModel, responses_bodies, responses_streams, False)}


@pytest.mark.parametrize("api", sorted(ADAPTERS))
@given(data=st.data())
@FUZZ
def test_plain_answers(fuzz_server, api, data):
    model, bodies, _, _ = ADAPTERS[api]
    serve(fuzz_server, data.draw(answers(bodies)))
    check_plain(outcome(lambda: ask(model("m", base_url=fuzz_server.url, max_retries=0))))


@pytest.mark.parametrize("api", sorted(ADAPTERS))
@given(data=st.data())
@FUZZ
def test_streamed_answers(fuzz_server, api, data):
    model, _, streams, done = ADAPTERS[api]
    serve(fuzz_server, events=data.draw(answers(streams)), done=done)
    check_streamed(outcome(lambda: stream_completed(model("m", base_url=fuzz_server.url, max_retries=0))))
