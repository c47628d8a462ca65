"""A Responses stream's deltas against its `response.completed`: the text, refusal and call arguments a reader
watched stream in must be what the run gets at the end, whether or not the server also sent `output_item.done`
events, with or without `output_index`, however the deltas were cut (inside a surrogate pair, inside a UTF-8
character on the wire). A stream that says one thing and completes with another is a `ModelBehaviorError`."""
import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from miniagents.errors import ModelBehaviorError
from miniagents.items import clean_text
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import OpenAITestServer, response_obj, sse

KEY = "sk-deltas-secret-0123456789"
REASONING = {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAAAB"}
DELTA = {"text": "response.output_text.delta", "refusal": "response.refusal.delta",
         "arguments": "response.function_call_arguments.delta"}
PROPERTY = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EVERY_SHAPE = pytest.mark.parametrize("shape,indexed,done", [(shape, indexed, done) for shape in sorted(DELTA)
                                                             for indexed in (True, False) for done in (True, False)])
values = st.text(st.sampled_from('ab {}":\\é€😀\ud83d\ude00\x00\n'), max_size=12)


@pytest.fixture(scope="module")
def deltas_server():
    srv = OpenAITestServer()
    yield srv
    srv.close()


def final_item(shape, value, llama=False):
    """The item a response completes with: a message (text or refusal) or a call; llama.cpp's calls have no id."""
    if shape == "arguments":
        item = {"type": "function_call", "id": "fc_1", "call_id": "fc_1" if llama else "call_1", "name": "pay",
                "arguments": value, "status": "completed"}
        return {k: v for k, v in item.items() if not (llama and k == "id")}
    part = {"type": "output_text", "text": value, "annotations": []} if shape == "text" else {
        "type": "refusal", "refusal": value}
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [part]}


def utf16_pieces(text, cuts):
    """`text` cut at code-unit positions, so a cut can fall between the halves of a surrogate pair."""
    units = text.encode("utf-16-le", "surrogatepass")
    at = sorted({2 * (c % (len(units) // 2 + 1)) for c in cuts})
    return [units[a:b].decode("utf-16-le", "surrogatepass") for a, b in zip([0] + at, at + [len(units)])]


def wire(events, named):
    """SSE lines as a server writes them: UTF-8 (a cut on the wire can fall inside a character), a lone surrogate
    as its JSON escape; `named` events give their type only in the `event:` line."""
    lines = []
    for event in events:
        if named and event["type"].endswith(".delta"):
            lines.append(f"event: {event['type']}\n")
            event = {k: v for k, v in event.items() if k != "type"}
        data = re.sub("[\ud800-\udfff]", lambda m: "\\u%04x" % ord(m.group()), json.dumps(event, ensure_ascii=False))
        lines.append(f"data: {data}\n\n")
    return lines


@st.composite
def streams(draw, shape, indexed, done, agree):
    """(place, streamed, completed, lines, chunk size): one item streamed as deltas at `position` (a reasoning item
    before it at 0), with or without `output_item.done` (carrying what the response completes with), indexed
    (`output_index`, `content_index`) or by `item_id` only (llama.cpp), the completed output given or left for the
    `.done` items to fill."""
    streamed = draw(values)
    if agree:  # the same, or going on past the deltas: a tail llama.cpp held back (a stop word, a tag)
        completed = streamed + draw(st.sampled_from(["", "", "</s", "<tool_call>", "x"]))
    else:
        completed = draw(values | st.builds(lambda at, c: streamed[:at] + c + streamed[at + 1:], st.integers(0, 12),
                                            st.sampled_from("x😀\"")))
        if clean_text(completed).startswith(clean_text(streamed)):  # going on past the deltas is no contradiction
            assume(streamed)
            completed = "!" + completed
    position = draw(st.integers(0, 1))
    filled = done and draw(st.booleans())  # the completed response carries no output: the .done items are it
    llama = not indexed and draw(st.booleans())
    item = final_item(shape, completed, llama)
    item_id = item.get("id") or item["call_id"]
    where = {"output_index": position} if indexed else {}
    events = [{"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}}]
    events.append({"type": "response.output_item.added", **where, "item": final_item(shape, "", llama)})
    for piece in utf16_pieces(streamed, draw(st.lists(st.integers(0, 40), max_size=6))):
        events.append({"type": DELTA[shape], "item_id": item_id, **where, "delta": piece,
                       **({"content_index": 0} if indexed and shape != "arguments" else {})})
    if done:
        events.append({"type": "response.output_item.done", **where, "item": item})
    output = [REASONING, item] if position else [item]
    events.append({"type": "response.completed",
                   "response": {"id": "r", "status": "completed"} if filled else response_obj(output)})
    place = f"output index {position}" if indexed else f"the item {item_id!r}"
    return place, streamed, completed, wire(events, draw(st.booleans())), draw(st.sampled_from([None, 1, 5]))


def stream(server, lines, chunk_size=None):
    server.replies.clear()
    server.reply_sse(lines, chunk_size=chunk_size)
    model = OpenAIResponsesModel("gpt-test", base_url=server.url, api_key=KEY, max_retries=0)
    return list(model.stream_response(None, [{"role": "user", "content": "pay"}], ModelSettings(), [], None, []))


def value_of(item, shape):
    return item["arguments"] if shape == "arguments" else item["content"][0][shape]


@EVERY_SHAPE
@given(data=st.data())
@PROPERTY
def test_deltas_that_agree_with_the_completed_response_pass_however_cut(deltas_server, shape, indexed, done, data):
    _, streamed, completed, lines, chunk_size = data.draw(streams(shape, indexed, done, agree=True))
    events = stream(deltas_server, lines, chunk_size)
    watched = "".join(e["delta"] for e in events if e["type"] == DELTA[shape])
    held = "\ud800" <= streamed[-1:] <= "\udbff"  # a lone high surrogate at the very end is held back, not emitted
    assert watched + ("\ufffd" if held else "") == clean_text(streamed)
    assert value_of(events[-1]["response"]["output"][-1], shape) == clean_text(completed)


@EVERY_SHAPE
@given(data=st.data())
@PROPERTY
def test_deltas_that_disagree_with_the_completed_response_are_refused_however_cut(deltas_server, shape, indexed, done,
                                                                                   data):
    place, _, _, lines, chunk_size = data.draw(streams(shape, indexed, done, agree=False))
    with pytest.raises(ModelBehaviorError, match="contradicts itself") as info:
        stream(deltas_server, lines, chunk_size)
    said = str(info.value)
    assert f"as {shape} for {place} is not what its response.completed carries there" in said, said


PAY = {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0}


@pytest.mark.parametrize("deltas,output,said", [
    ([{**PAY, "delta": '{"amount": '}, {**PAY, "delta": "5}"}], [final_item("arguments", '{"amount": 500}')],
     "what it streamed as arguments for output index 0 is not what its response.completed carries there (they "
     "part at character 12)."),
    ([{**PAY, "delta": '{"amount": 5}'}], [], "it streamed arguments for output index 0, and its "
                                            "response.completed carries no arguments there."),
    ([{**PAY, "delta": '{"amount": 5}'}], [final_item("text", '{"amount": 5}')],
     "it streamed arguments for output index 0, and its response.completed carries no arguments there."),
    ([{"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Paid 5."}],
     [final_item("text", "Paid 500.")], "what it streamed as text for the item 'msg_1' is not what"),
    ([{"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 1,
       "delta": "I can't."}],
     [{**final_item("text", "I can't."), "content": final_item("text", "I can't.")["content"] * 2}],
     "it streamed refusal for output index 0, and its response.completed carries no refusal there."),
    ([{**PAY, "output_index": None, "delta": "{}"}], [{**final_item("arguments", "{}"), "id": ["fc_1"]}],
     "it streamed arguments for the item 'fc_1', and its response.completed carries no arguments there."),
])
def test_what_a_contradicting_stream_is_told(server, deltas, output, said):
    with pytest.raises(ModelBehaviorError) as info:
        stream(server, sse(*deltas, {"type": "response.completed", "response": response_obj(output)}, done=False))
    assert said in str(info.value), str(info.value)


def test_the_error_never_quotes_the_text_it_names(server):
    streamed, completed = f"Paid. Your key is {KEY}. " + "a" * 5000, f"Paid! Your key is {KEY}. " + "b" * 5000
    deltas = [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": streamed[i:i + 7]} for i in range(0, len(streamed), 7)]
    with pytest.raises(ModelBehaviorError) as info:
        stream(server, sse(*deltas, {"type": "response.completed",
                                     "response": response_obj([final_item("text", completed)])}, done=False))
    said = str(info.value)
    assert KEY not in said and "Paid" not in said and "(they part at character 4)" in said and len(said) < 200, said


def test_a_message_with_several_parts_is_compared_part_by_part(server):
    parts = [{"type": "output_text", "text": "Paid "}, {"type": "refusal", "refusal": "No."},
             {"type": "output_text", "text": "5."}]
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": parts}
    place = {"item_id": "msg_1", "output_index": 0}
    deltas = [{"type": "response.output_text.delta", **place, "content_index": 0, "delta": "Paid "},
              {"type": "response.refusal.delta", **place, "content_index": 1, "delta": "No."},
              {"type": "response.output_text.delta", **place, "content_index": 2, "delta": "5."}]
    completed = {"type": "response.completed", "response": response_obj([message])}
    assert stream(server, sse(*deltas, completed, done=False))[-1]["response"]["output"] == [message]
    no_index = [{"type": "response.output_text.delta", "item_id": "msg_1", "delta": d} for d in ("Paid", " 5.")]
    assert stream(server, sse(*no_index, completed, done=False))[-1]["response"]["output"] == [message]
    deltas[2]["delta"] = "500."
    with pytest.raises(ModelBehaviorError, match="as text for output index 0 is not"):
        stream(server, sse(*deltas, completed, done=False))


def test_deltas_the_run_does_not_act_on_or_that_name_no_place_are_not_compared(server):
    reasoning = {**REASONING, "summary": [{"type": "summary_text", "text": "Thought about it."}]}
    events = [{"type": "response.reasoning_summary_text.delta", "item_id": "rs_0", "output_index": 0,
               "summary_index": 0, "delta": "Something else."},
              {"type": "response.output_text.delta", "delta": "Paid 5."},  # no index, no item id: no place
              {"type": "response.completed", "response": response_obj([reasoning, final_item("text", "Paid 5.")])}]
    assert stream(server, sse(*events, done=False))[-1]["response"]["output"][0] == reasoning


def test_ollamas_text_and_the_call_after_it_at_one_output_index_pass(server):
    """Ollama streams a message's text, then the call after it, both at output_index 0, and completes with the call
    first: each delta's item_id names its item."""
    text = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
    args = {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0}
    completed = [final_item("arguments", '{"amount": 5}'), final_item("text", "Paying.")]
    events = stream(server, sse({**text, "delta": "Pay"}, {**text, "delta": "ing."}, {**args, "delta": '{"amount": 5}'},
                                {"type": "response.completed", "response": response_obj(completed)}, done=False))
    assert [item["type"] for item in events[-1]["response"]["output"]] == ["function_call", "message"]
    with pytest.raises(ModelBehaviorError, match="for the item 'fc_1'|for output index 0"):
        stream(server, sse({**text, "delta": "Paying."}, {**args, "delta": '{"amount": 500}'},
                           {"type": "response.completed", "response": response_obj(completed)}, done=False))


def test_deltas_sent_to_one_place_under_many_item_ids_cost_one_look_at_its_parts_not_one_each(server, monkeypatch):
    """A hostile server: 3000 empty deltas, each under an item_id of its own, all at output_index 0, and a message of
    3000 parts there; each was checked against every part joined again (9 million parts read; 20,000 of each took
    a minute), now the place's completed value is read once."""
    from miniagents.models import responses
    looked = []
    monkeypatch.setattr(responses, "_ended_as", lambda *a, _real=responses._ended_as: (looked.append(1), _real(*a))[1])
    n = 3000
    message = {**final_item("text", ""), "content": [{"type": "output_text", "text": "", "annotations": []}] * n}
    deltas = [{"type": "response.output_text.delta", "item_id": f"x{i}", "output_index": 0, "delta": ""}
              for i in range(n)]
    events = stream(server, sse(*deltas, {"type": "response.completed", "response": response_obj([message])},
                                done=False))
    assert len(events[-1]["response"]["output"][0]["content"]) == n and len(looked) <= 2
