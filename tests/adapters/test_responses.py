"""Responses adapter: body building (pure) and the model over a real socket."""
import json

import pytest

from miniagents.errors import ModelBehaviorError, ModelHTTPError, UserError
from miniagents.models.interface import ModelSettings
from miniagents.models.endpoint import wire_tool_choice
from miniagents.models.responses import OpenAIResponsesModel, build_body, responses_tool
from openai_server import call_item, response_event_list, response_events, response_obj, sse, text_item

TOOL = {"type": "function", "name": "convert_currency", "description": "Convert an amount.",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number"}, "round": {"type": ["integer", "null"], "default": 2}},
            "required": ["amount", "round"], "additionalProperties": False}, "strict": True}
LOOSE = {"type": "function", "name": "lookup", "description": "", "parameters": {"type": "object",
         "properties": {"q": {"type": "string"}}}, "strict": False}
REASONING = {"type": "reasoning", "id": "rs_a0", "summary": [], "encrypted_content": "gAAAAB"}
CALL = call_item("call_q1", "convert_currency", '{"amount":40,"round":null}', iid="fc_a2")
OUTPUT = {"type": "function_call_output", "call_id": "call_q1", "output": '{"result": 6480.5}'}


def model(server, **kw):
    return OpenAIResponsesModel("gpt-test", base_url=server.url, api_key="sk-test", **kw)


def call(m, input, settings=None, tools=(), output_schema=None, **kw):
    return m.get_response("You convert.", input, settings or ModelSettings(), list(tools), output_schema, [], **kw)


def stream(m, input, settings=None, **kw):
    return list(m.stream_response("You convert.", input, settings or ModelSettings(), [], None, [], **kw))


def test_tool_turn_body_is_stateless_and_echoes_items_verbatim(server):
    server.reply(response_obj([text_item("6480.50 JPY")]))
    items = [{"role": "user", "content": "40 EUR?"}, REASONING, CALL, OUTPUT]
    resp = call(model(server), items, ModelSettings(parallel_tool_calls=False), [TOOL])
    req = server.requests[0]
    assert req["path"] == "/v1/responses"
    assert req["body"] == {"model": "gpt-test", "instructions": "You convert.", "input": items,
                           "tools": [responses_tool(TOOL)], "parallel_tool_calls": False}
    assert "store" not in req["body"]
    assert resp.response_id == "resp_1" and resp.output[0]["content"][0]["text"] == "6480.50 JPY"
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens, u.input_tokens_details.cached_tokens,
            u.output_tokens_details.reasoning_tokens) == (10, 5, 15, 2, 1)


def test_tools_are_flat_with_explicit_strict_and_stripped_default():
    strict, loose = responses_tool(TOOL), responses_tool(LOOSE)
    assert strict["strict"] is True and "default" not in str(strict["parameters"])
    assert strict["parameters"]["properties"]["round"]["description"] == "Default: 2."
    assert loose["strict"] is False and "description" not in loose and loose["parameters"] == LOOSE["parameters"]
    assert "function" not in strict


def test_tool_choice_forms():
    assert wire_tool_choice("lookup", chat=False) == {"type": "function", "name": "lookup"}
    assert wire_tool_choice({"type": "function", "function": {"name": "x"}}, chat=False) == {"type": "function",
                                                                                      "name": "x"}
    assert wire_tool_choice("none", chat=False) == "none"
    with pytest.raises(UserError):
        build_body("m", None, [], ModelSettings(tool_choice="required"), [], None, [])


def test_settings_output_schema_and_state_fields():
    schema = {"name": "final_output", "strict": True, "schema": {"type": "object", "properties": {
        "a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}}
    settings = ModelSettings(max_tokens=100, store=False, reasoning={"effort": "low", "summary": "auto"},
                             response_include=["reasoning.encrypted_content"], verbosity="low",
                             truncation="auto", metadata={"k": "v"}, extra_args={"service_tier": "flex"})
    body = build_body("m", "inst", "hi", settings, [], schema, [], stream=True, previous_response_id="resp_0")
    assert body["input"] == "hi" and body["max_output_tokens"] == 100 and body["store"] is False
    assert body["text"] == {"format": {"type": "json_schema", "name": "final_output", "schema": schema["schema"],
                                       "strict": True}, "verbosity": "low"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["reasoning"]["summary"] == "auto"
    assert body["previous_response_id"] == "resp_0" and body["stream"] is True
    assert body["truncation"] == "auto" and body["service_tier"] == "flex"


def test_items_from_chat_lose_fake_ids_and_item_reference_is_rejected():
    items = [{"type": "reasoning", "id": "__fake_id__", "summary": [{"type": "summary_text", "text": "t"}]},
             {"type": "message", "id": "__fake_id__", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "x", "annotations": [], "logprobs": []}]}]
    body = build_body("m", None, items, ModelSettings(), [], None, [])
    assert body["input"] == [{k: v for k, v in items[1].items() if k != "id"}]
    with pytest.raises(UserError):
        build_body("m", None, [{"type": "item_reference", "id": "x"}], ModelSettings(), [], None, [])


def test_previous_response_id_passes_through(server):
    server.reply(response_obj([text_item("ok")]))
    call(model(server), [OUTPUT], previous_response_id="resp_0")
    assert server.bodies[0]["previous_response_id"] == "resp_0"


def test_a_conversation_id_is_sent_as_the_requests_conversation(server):
    server.reply(response_obj([text_item("ok")]))
    call(model(server), [OUTPUT], conversation_id="conv_1")
    assert server.bodies[0]["conversation"] == "conv_1" and "conversation_id" not in server.bodies[0]


def test_failed_and_incomplete_responses_raise(server):
    server.reply(response_obj([], status="failed", error={"code": "server_error", "message": "boom"}))
    with pytest.raises(ModelHTTPError, match="boom"):
        call(model(server, max_retries=0), [])
    server.reply(response_obj([text_item("partial")], status="incomplete",
                              incomplete_details={"reason": "max_output_tokens"}))
    with pytest.raises(ModelBehaviorError, match="max_output_tokens"):
        call(model(server), [])


def test_missing_usage_is_none_safe(server):
    server.reply({"id": "resp_x", "status": "completed", "output": [text_item("hi")], "usage": None})
    resp = call(model(server), [])
    assert (resp.usage.requests, resp.usage.total_tokens) == (1, 0)

# --------------------------------------------------------------------------- streaming


def test_stream_passes_events_and_ends_with_completed(server):
    output = [REASONING, text_item("6480.50 JPY")]
    server.reply_sse(response_events(output))
    events = stream(model(server), [{"role": "user", "content": "hi"}])
    assert events[0]["type"] == "response.created"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["6480.50 JPY"]
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["output"] == output
    assert server.bodies[0]["stream"] is True


def test_stream_split_at_every_byte_with_comments_and_stray_done(server):
    lines = response_events([CALL])
    lines.insert(1, ": OPENROUTER PROCESSING\n\n")
    server.reply_sse(lines + ["data: [DONE]\n\n"], chunk_size=1)
    assert stream(model(server), [])[-1]["response"]["output"] == [CALL]


def test_minimal_server_completed_without_output_uses_collected_items(server):
    # llama.cpp style: no sequence_number/output_index, and an empty final output
    server.reply_sse(sse({"type": "response.output_item.done", "item": CALL},
                         {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
                         done=False))
    assert stream(model(server), [])[-1]["response"]["output"] == [CALL]


def test_items_streamed_out_of_order_fill_an_empty_output_in_the_order_of_their_index(server):
    message = text_item("Converting.")
    server.reply_sse(sse({"type": "response.output_item.done", "output_index": 1, "item": CALL},
                         {"type": "response.output_item.done", "output_index": 0, "item": message},
                         {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
                         done=False))
    assert stream(model(server), [])[-1]["response"]["output"] == [message, CALL]


@pytest.mark.parametrize("streamed,completed", [
    (CALL, {**CALL, "arguments": '{"amount":4000,"round":null}'}),
    (CALL, {**CALL, "call_id": "call_other"}),
    (text_item("Hello"), text_item("Goodbye"))])
def test_a_completed_output_that_contradicts_the_items_streamed_is_refused(server, streamed, completed):
    events = response_event_list([streamed])
    events[-1]["response"]["output"] = [completed]
    server.reply_sse(sse(*events, done=False, event_names=True))
    with pytest.raises(ModelBehaviorError, match="output index 0 is not the one its response.completed carries"):
        stream(model(server), [])


def test_a_completed_item_that_differs_from_the_one_streamed_only_in_its_id_and_status_is_the_same(server):
    events = response_event_list([REASONING, CALL])
    events[-1]["response"]["output"] = [REASONING, {**CALL, "id": "fc_other", "status": "incomplete"}]
    server.reply_sse(sse(*events, done=False, event_names=True))
    assert stream(model(server), [])[-1]["response"]["output"][1]["id"] == "fc_other"


def test_event_type_falls_back_to_event_line(server):
    server.reply_sse(["event: response.completed\n",
                      'data: {"response": {"id": "r", "status": "completed", "output": [], "usage": null}}\n\n'])
    assert stream(model(server), [])[-1]["type"] == "response.completed"


@pytest.mark.parametrize("event", [
    {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
    {"type": "error", "error": {"type": "server_error", "code": "rate_limit_exceeded", "message": "slow down"}},
    {"type": "response.failed", "response": {"id": "r", "status": "failed",
                                             "error": {"code": "rate_limit_exceeded", "message": "slow down"}}}])
def test_stream_error_endings_raise(server, event):
    server.reply_sse(sse({"type": "response.created", "response": {"id": "r"}}, event, done=False))
    with pytest.raises(ModelHTTPError, match="slow down") as info:
        stream(model(server), [])
    assert info.value.code == "rate_limit_exceeded"
    assert len(server.requests) == 1


def test_stream_incomplete_raises(server):
    server.reply_sse(sse({"type": "response.incomplete", "response": {
        "id": "r", "incomplete_details": {"reason": "content_filter"}}}, done=False))
    with pytest.raises(ModelBehaviorError, match="content_filter"):
        stream(model(server), [])


@pytest.mark.parametrize("status,fields,error,said", [
    ("incomplete", {"incomplete_details": {"reason": "max_output_tokens"}}, ModelBehaviorError, "max_output_tokens"),
    ("failed", {"error": {"code": "server_error", "message": "boom"}}, ModelHTTPError, "boom")])
def test_a_completed_event_whose_response_did_not_complete_raises_as_a_plain_answer_does(server, status, fields,
                                                                                          error, said):
    server.reply_sse(response_events([text_item("The transfer was appro")], status=status, **fields))
    with pytest.raises(error, match=said):
        stream(model(server), [])


@pytest.mark.parametrize("status", ["cancelled", "queued", "in_progress", "sk-test said " + "z" * 5000])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_response_whose_status_is_not_completed_is_no_answer_whatever_text_it_holds(server, status, streamed):
    """A cancelled (or queued, or still running) response's text may stop mid-sentence: taken as the final answer,
    it was a silent partial one. The status is said, capped, without the key."""
    response = response_obj([text_item("I have checked and the answer is")], status=status)
    if streamed:
        server.reply_sse(sse({"type": "response.completed", "response": response}, done=False))
    else:
        server.reply(response)
    with pytest.raises(ModelBehaviorError, match="not 'completed': its output is not taken as an answer") as info:
        stream(model(server), []) if streamed else call(model(server), [])
    assert "sk-test" not in str(info.value) and "answer is" not in str(info.value) and len(str(info.value)) < 200


def test_stream_eof_without_terminal_event_is_truncated(server):
    server.reply_sse(response_events([text_item("hi")])[:-2])
    with pytest.raises(ModelHTTPError, match="truncated"):
        stream(model(server), [])


def test_lone_surrogates_are_repaired_in_answers_and_stream_deltas(server):
    server.reply(response_obj([text_item("lone \ud800 pair \ud83d\ude00"), CALL | {"arguments": '{"q": "\udc00"}'}]))
    output = call(model(server), []).output
    assert output[0]["content"][0]["text"] == "lone \ufffd pair 😀" and output[1]["arguments"] == '{"q": "\ufffd"}'
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
    server.reply_sse(sse({**delta, "delta": "a\ud83d"}, {**delta, "delta": "\ude00b"},
                         {"type": "response.completed", "response": response_obj([text_item("a\ud83d\ude00b")])},
                         done=False))
    events = stream(model(server), [])
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["a", "😀b"]
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "a😀b"


@pytest.mark.parametrize("body,error,message", [
    ({}, ModelBehaviorError, "The model's answer is empty: the response has no 'output'."),
    ({"output": []}, ModelBehaviorError,
     "The model's answer is empty: no output items, and the response does not say it completed."),
    ({"object": "error", "message": "vLLM says no", "code": 400}, ModelHTTPError, "HTTP 200: code=400 vLLM says no"),
    ({"output": ["hi"]}, ModelBehaviorError, "The model's answer is malformed: output[0] is a string, expected an object."),
    ({"output": [{"type": "message", "content": [{"type": "output_text", "text": ["a"]}]}]}, ModelBehaviorError,
     "The model's answer is malformed: output[0].content[0].text is an array, expected a string."),
    ({"output": [{"type": "function_call", "name": "f", "arguments": {"a": 1}}]}, ModelBehaviorError,
     "The model's answer is malformed: output[0].arguments is an object, expected a string."),
    ({"output": [], "status": "completed", "usage": {"input_tokens": {"n": 1}}}, ModelBehaviorError,
     "The model's answer is malformed: usage.input_tokens is an object, expected a non-negative number."),
    ({"output": [], "status": "completed", "usage": {"output_tokens": 10 ** 400}}, ModelBehaviorError,
     "The model's answer is malformed: usage.output_tokens is a number, expected a non-negative number at most "
     "1.8e+308 (a float's largest)."),
])
def test_empty_and_malformed_answers_are_typed_errors(server, body, error, message):
    server.reply(body)
    with pytest.raises(error) as info:
        call(model(server), [])
    assert str(info.value).startswith(message)


def test_a_completed_response_with_no_output_is_an_empty_answer_not_an_error(server):
    server.reply({"id": "r", "status": "completed", "output": []})
    assert call(model(server), []).output == []


@pytest.mark.parametrize("events,message", [
    ([{"type": "response.completed"}],
     "The model's answer is empty: the response.completed event carries no response."),
    ([{"type": "response.output_item.done", "output_index": [0], "item": CALL},
      {"type": "response.completed", "response": {"id": "r"}}], None),
    ([{"type": "response.output_item.done", "item": "x"}],
     "The model's answer is malformed: response.output_item.done.item is a string, expected an object."),
    (["x"], "The model's answer is malformed: a stream event is a string, expected an object."),
    ([{"type": "response.completed",
       "response": {"status": "completed", "output": [], "usage": {"output_tokens": "5"}}}],
     "The model's answer is malformed: response.completed.response.usage.output_tokens is a string"),
    ([{"type": "response.completed",
       "response": {"status": "completed", "output": [], "usage": {"input_tokens": 10 ** 400}}}],
     "The model's answer is malformed: response.completed.response.usage.input_tokens is a number"),
    ([{"type": "response.completed", "response": "done"}],
     "The model's answer is malformed: response.completed.response is a string, expected an object."),
])
def test_stream_events_of_the_wrong_shape(server, events, message):
    server.reply_sse(["data: " + json.dumps(e) + "\n\n" for e in events])
    if message is None:  # an unhashable output_index: the item is kept by arrival order
        assert stream(model(server), [])[-1]["response"]["output"] == [CALL]
        return
    with pytest.raises(ModelBehaviorError) as info:
        stream(model(server), [])
    assert str(info.value).startswith(message)


# --- What a second attack on stream content found: items streamed with no index, some, twice, or none at all ---

CALL_A = {"type": "function_call", "id": "fc_A", "call_id": "call_A", "name": "f", "arguments": '{"a":1}'}
CALL_B = {"type": "function_call", "id": "fc_B", "call_id": "call_B", "name": "g", "arguments": '{"b":2}'}


def done(item, **where):
    return {"type": "response.output_item.done", "item": item, **where}


def completed(*output, **response):
    return {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": list(output),
                                                       **response}}


def final_output(server, *events):
    server.reply_sse(sse(*events, done=False))
    output = stream(model(server), [])[-1]["response"]["output"]
    return [(item["type"], item.get("call_id"), item.get("arguments")) for item in output]


@pytest.mark.parametrize("events, output", [
    ([done(CALL_A, output_index=1), done(CALL_B, output_index=2), completed()],  # a reasoning item at 0 never done
     [("function_call", "call_A", '{"a":1}'), ("function_call", "call_B", '{"b":2}')]),
    ([done(CALL_A), completed(CALL_A)], [("function_call", "call_A", '{"a":1}')]),  # llama.cpp: no output_index
    ([done(CALL_A, output_index=True), done(CALL_B, output_index=1), completed()],  # a bool is no index
     [("function_call", "call_B", '{"b":2}'), ("function_call", "call_A", '{"a":1}')]),
    ([done({"type": "message", "id": "m", "role": "assistant"}, output_index=0), completed()],  # no content
     [("message", None, None)]),
])
def test_items_streamed_with_no_index_or_only_some_done_are_the_answer_whole(server, events, output):
    assert final_output(server, *events) == output


@pytest.mark.parametrize("events", [
    [done(CALL_A), completed({**CALL_A, "arguments": '{"a":999}'})],  # llama.cpp: paired by call id
    [done(CALL_A, output_index=0), done(CALL_B, output_index=1), completed(CALL_A)],  # B streamed, then dropped
    [done(CALL_A, output_index=0), done(CALL_B, output_index=0), completed()],  # two items at one index
    [done({"type": "message", "id": "m", "role": "assistant"}, output_index=0),
     completed({"type": "message", "id": "m", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]})],
])
def test_a_stream_whose_items_the_completed_response_contradicts_or_loses_is_refused(server, events):
    server.reply_sse(sse(*events, done=False))
    with pytest.raises(ModelBehaviorError, match="contradicts itself"):
        stream(model(server), [])



@pytest.mark.parametrize("index", [-1, -5])
def test_an_item_streamed_at_a_negative_output_index_is_a_contradiction_never_an_index_error(server, index):
    """No item is at a negative index: read as Python's from the end, -1 was the last item and -5 an IndexError."""
    server.reply_sse(sse(done(CALL_A, output_index=index), completed(CALL_A), done=False))
    with pytest.raises(ModelBehaviorError, match=f"contradicts itself: the item it streamed at output index {index} "):
        stream(model(server), [])

@pytest.mark.parametrize("response", [{"id": "r"}, {"id": "r", "output": []}])
def test_an_empty_completed_response_is_refused_streamed_as_it_is_plain(server, response):
    server.reply(response)
    with pytest.raises(ModelBehaviorError, match="answer is empty"):
        model(server).get_response(None, [], ModelSettings(), [], None, [])
    server.reply_sse(sse({"type": "response.completed", "response": response}, done=False))
    with pytest.raises(ModelBehaviorError, match="answer is empty"):
        stream(model(server), [])
