"""Chat Completions adapter: converters (pure) and the model over a real socket."""
import json
import re

import pytest

from miniagents.errors import ModelBehaviorError, ModelHTTPError, UserError
from miniagents.models.chat_completions import (
    ChatStreamTranslator, OpenAIChatCompletionsModel, build_body, chat_tool,
    items_to_messages, message_to_items, tool_output_content)
from miniagents.models.endpoint import wire_tool_choice
from miniagents.schema import wire_schema
from miniagents.models.interface import ModelSettings
from openai_server import chat_chunks, chat_completion, sse

TOOL = {"type": "function", "name": "convert_currency", "description": "Convert an amount.",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number"}, "round": {"type": ["integer", "null"], "default": 2}},
            "required": ["amount", "round"], "additionalProperties": False}, "strict": True}
HANDOFF = {"type": "function", "name": "transfer_to_billing", "description": "Handoff to billing.",
           "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
           "strict": True}
CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_q1", "name": "convert_currency",
        "arguments": '{"amount":40,"round":null}', "status": "completed"}
OUTPUT = {"type": "function_call_output", "call_id": "call_q1", "output": '{"result": 6480.5}'}
ASSISTANT = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Converting.", "annotations": []}]}


def wire_tool_choice_chat(choice):
    return wire_tool_choice(choice, chat=True)


def model(server, **kw):
    return OpenAIChatCompletionsModel("gpt-test", base_url=server.url, api_key="sk-test", **kw)


def call(m, input, settings=None, tools=(), output_schema=None, handoffs=(), **kw):
    return m.get_response("You convert.", input, settings or ModelSettings(), list(tools), output_schema,
                          list(handoffs), **kw)


def stream(m, input, settings=None, tools=(), **kw):
    return list(m.stream_response("You convert.", input, settings or ModelSettings(), list(tools), None, [],
                                  **kw))

# --------------------------------------------------------------------------- converters


def test_text_and_calls_become_one_assistant_message_and_outputs_tool_messages():
    msgs = items_to_messages([{"role": "user", "content": "40 EUR?"}, ASSISTANT, CALL, OUTPUT], "Be brief.")
    assert msgs == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "40 EUR?"},
        {"role": "assistant", "content": "Converting.", "tool_calls": [{"id": "call_q1", "type": "function",
         "function": {"name": "convert_currency", "arguments": '{"amount":40,"round":null}'}}]},
        {"role": "tool", "tool_call_id": "call_q1", "content": '{"result": 6480.5}'}]


def test_developer_role_only_when_asked():
    msgs = items_to_messages([{"role": "developer", "content": "x"}], "inst", system_role="developer")
    assert [m["role"] for m in msgs] == ["developer", "developer"]
    assert [m["role"] for m in items_to_messages([{"role": "developer", "content": "x"}], "i")] == ["system"] * 2


def test_empty_arguments_sent_as_braces_and_no_empty_tool_calls_list():
    msgs = items_to_messages([{**CALL, "arguments": ""}, OUTPUT, ASSISTANT])
    assert msgs[0]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert "tool_calls" not in msgs[2]


def test_arguments_held_as_an_object_are_sent_as_json_text_with_their_letters_as_written():
    """A call item whose arguments are an object (a custom model's, an imported history's) is sent as JSON text the
    model reads as it wrote it: "Zürich", not "Z\\u00fcrich" (six characters for one, and another text)."""
    arguments = {"city": "Zürich", "note": "☃ \U0001f600", "n": [1, None]}
    msgs = items_to_messages([{**CALL, "arguments": arguments}, OUTPUT])
    sent = msgs[0]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"city": "Zürich", "note": "☃ \U0001f600", "n": [1, null]}' and json.loads(sent) == arguments


def test_structured_tool_output_is_json_string_and_text_parts_are_joined():
    msgs = items_to_messages([CALL, {**OUTPUT, "output": {"a": 1}}])
    assert msgs[1]["content"] == '{"a": 1}'
    msgs = items_to_messages([CALL, {**OUTPUT, "output": [{"type": "input_text", "text": "hi"}]}])
    assert msgs[1]["content"] == "hi"


def test_images_and_files_a_tool_returned_follow_the_tool_messages_in_a_user_message():
    second = {**CALL, "call_id": "call_2"}
    picture = [{"type": "input_text", "text": "a cat"}, {"type": "input_image", "image_url": "data:x", "detail": "low"}]
    messages = items_to_messages([CALL, second, {**OUTPUT, "output": picture},
                                  {**OUTPUT, "call_id": "call_2", "output": [{"type": "input_image", "file_id": "f"}]},
                                  {"role": "user", "content": "thanks"}])
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "user", "user"]
    assert messages[1]["content"] == "a cat\n[1 attachment(s) in the next message]"
    assert messages[2]["content"] == "[input_image not shown: Chat Completions cannot send it]"
    assert messages[3]["content"] == [{"type": "text", "text": "Returned by tool call call_q1:"},
                                      {"type": "image_url", "image_url": {"url": "data:x", "detail": "low"}}]
    assert messages[4] == {"role": "user", "content": "thanks"}


def test_a_tool_outputs_text_part_with_no_text_is_an_empty_line_of_the_tool_message():
    parts = [{"type": "input_text", "text": "first"}, {"type": "input_text", "text": None},
             {"type": "output_text", "text": ""}, {"type": "text", "text": "last"}]
    assert tool_output_content({**OUTPUT, "output": parts}) == ("first\n\n\nlast", [])


def test_reasoning_dropped_or_echoed_on_tool_call_turn():
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need rate."}]}
    assert items_to_messages([reasoning, CALL, OUTPUT])[0] == {
        "role": "assistant", "content": None, "tool_calls": [items_to_messages([CALL])[0]["tool_calls"][0]]}
    echoed = items_to_messages([reasoning, CALL, OUTPUT], reasoning_field="reasoning_content")
    assert echoed[0]["reasoning_content"] == "Need rate."
    two_parts = dict(reasoning, summary=reasoning["summary"] * 2)
    assert items_to_messages([two_parts, CALL, OUTPUT], reasoning_field="r")[0]["r"] == "Need rate.\nNeed rate."


@pytest.mark.parametrize("item", [{"type": "item_reference", "id": "x"}, {"type": "web_search_call"},
                                  {"type": "compaction"}, "text"])
def test_unknown_items_raise_user_error(item):
    with pytest.raises(UserError, match="Unhandled item"):
        items_to_messages([item])


@pytest.mark.parametrize("item", [
    {"type": "reasoning", "summary": 5}, {"type": "reasoning", "summary": [], "content": {"text": "x"}},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": 5}]},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": None}]}])
def test_a_reasoning_or_refusal_no_chat_message_can_say_is_a_user_error_not_a_bare_type_error(item):
    """What a custom model gave, kept in a session's history, reached a Chat model's request: list(5) and a join of a
    refusal that is no text raised bare TypeErrors (a content of {"text": ...} was read as its keys: nothing)."""
    with pytest.raises(UserError, match="^Unhandled item type or structure for Chat Completions: "):
        items_to_messages([item])


@pytest.mark.parametrize("item, where", [
    ({"type": "message", "role": "assistant", "content": [{"type": "text", "text": 5}]}, "assistant message"),
    ({"role": "system", "content": [{"type": "text", "text": ["Be brief."]}]}, "system message")])
def test_a_text_part_whose_text_is_no_string_is_a_user_error_naming_the_part(item, where):
    """A "text" part (Chat's own kind, which no entry checks as it checks input_text and output_text) was joined:
    a bare TypeError."""
    with pytest.raises(UserError, match=f"^{where}: content part 'text' has a text that is no string$"):
        items_to_messages([item])


def test_user_image_part_and_file_id_image_rejected():
    msgs = items_to_messages([{"role": "user", "content": [
        {"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "https://x/y.png",
                                                "detail": "low"}]}])
    assert msgs[0]["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}
    with pytest.raises(UserError):
        items_to_messages([{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}])


@pytest.mark.parametrize("part, sent", [
    ({"type": "input_file", "file_id": "file_1"}, {"file_id": "file_1"}),
    ({"type": "input_file", "file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
     {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}),
])
def test_a_user_file_part_is_sent_by_its_id_or_its_data(part, sent):
    msgs = items_to_messages([{"role": "user", "content": [part]}])
    assert msgs[0]["content"] == [{"type": "file", "file": sent}]
    with pytest.raises(UserError, match="cannot be sent to Chat Completions"):  # neither: nothing to send
        items_to_messages([{"role": "user", "content": [{"type": "input_file", "filename": "a.pdf"}]}])


def test_user_parts_already_in_chat_form_are_sent_as_they_are():
    parts = [{"type": "text", "text": "hear this"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
             {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]
    assert items_to_messages([{"role": "user", "content": parts}]) == [{"role": "user", "content": parts}]


@pytest.mark.parametrize("role", ["system", "developer"])
def test_a_system_message_part_that_is_not_text_is_a_user_error_naming_the_part(role):
    item = {"role": role, "content": [{"type": "input_text", "text": "Be brief."},
                                      {"type": "input_image", "image_url": "https://x/y.png"}]}
    with pytest.raises(UserError, match=f"^{role} message: content part 'input_image' cannot be sent to Chat "
                                        r"Completions \(only text is supported here\)$"):
        items_to_messages([item])


def test_a_system_message_without_content_is_sent_as_empty_text():
    assert items_to_messages([{"role": "system"}]) == [{"role": "system", "content": ""}]


def test_an_assistant_refusal_in_the_history_is_sent_as_the_messages_refusal():
    refused = {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    beside_text = {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "Well,", "annotations": []}, {"type": "refusal", "refusal": "no."}]}
    assert items_to_messages([refused, {"role": "user", "content": "why"}, beside_text]) == [
        {"role": "assistant", "content": None, "refusal": "I can't."}, {"role": "user", "content": "why"},
        {"role": "assistant", "content": "Well,", "refusal": "no."}]


def test_strict_tool_schema_strips_default_into_description():
    tool = chat_tool(TOOL)
    params = tool["function"]["parameters"]
    assert "default" not in json.dumps(params)
    assert params["properties"]["round"]["description"] == "Default: 2."
    assert TOOL["parameters"]["properties"]["round"]["default"] == 2  # caller's schema untouched
    assert tool["function"]["strict"] is True


def test_wire_schema_handles_prefix_items_oneof_and_property_named_default():
    schema = {"type": "object", "properties": {
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
        "default": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}},
        "required": ["pair", "default"], "additionalProperties": False}
    out = wire_schema(schema, strict=True)
    assert out["properties"]["pair"] == {"type": "array", "minItems": 2,
                                         "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
    assert out["properties"]["default"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert wire_schema(schema, strict=False) is schema
    assert wire_schema(None, strict=True) == {"type": "object", "properties": {}, "required": [],
                                              "additionalProperties": False}


@pytest.mark.parametrize("keyword, value", [
    ("minLength", 1), ("maxLength", 9), ("patternProperties", {"^x": {"type": "string"}}),
    ("propertyNames", {"pattern": "^x"}), ("unevaluatedProperties", False), ("minProperties", 1),
    ("maxProperties", 3), ("uniqueItems", True), ("contains", {"type": "string"}), ("minContains", 1),
    ("maxContains", 2), ("unevaluatedItems", False), ("not", {"type": "null"}), ("if", {"required": ["a"]}),
    ("then", {"required": ["b"]}), ("else", {"required": ["c"]}), ("dependentRequired", {"a": ["b"]}),
    ("dependentSchemas", {"a": {"required": ["b"]}}), ("$id", "https://example.com/s")])
def test_every_keyword_strict_endpoints_reject_is_left_out_of_a_strict_schema_sent(keyword, value):
    """Valid JSON Schema that strict endpoints refuse with a 400: a strict request leaves it out, at every depth;
    a schema that is not strict is sent as given."""
    inner = {"type": "string", keyword: value}
    schema = {"type": "object", keyword: value, "properties": {"a": inner, "b": {"type": "array", "items": inner}},
              "required": ["a", "b"], "additionalProperties": False}
    sent = json.dumps(wire_schema(schema, strict=True))
    assert f'"{keyword}"' not in sent and '"type": "string"' in sent
    assert wire_schema(schema, strict=False) is schema


def test_bad_tool_name_and_hosted_tool_rejected():
    with pytest.raises(UserError, match="must match"):
        chat_tool({**TOOL, "name": "has space"})
    with pytest.raises(UserError, match="not a function tool"):
        chat_tool({"type": "web_search"})


def test_tool_choice_forms():
    assert wire_tool_choice_chat("auto") == "auto"
    assert wire_tool_choice_chat("convert") == {"type": "function", "function": {"name": "convert"}}
    assert wire_tool_choice_chat({"type": "function", "name": "x"}) == {"type": "function", "function": {"name": "x"}}
    with pytest.raises(UserError, match=r"^tool_choice 42 cannot be expressed in Chat Completions$"):
        wire_tool_choice_chat(42)
    with pytest.raises(UserError, match=r"^tool_choice 42 cannot be expressed in the Responses API$"):
        wire_tool_choice(42, chat=False)
    allowed = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "x"}]}
    assert wire_tool_choice_chat(allowed) == {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "x"}}]}}
    assert wire_tool_choice(wire_tool_choice_chat(allowed), chat=False) == allowed  # and back, for Responses


def test_body_settings_mapping():
    settings = ModelSettings(temperature=0.2, max_tokens=50, parallel_tool_calls=False, tool_choice="required",
                             reasoning={"effort": "low"}, top_logprobs=2, extra_body={"seed": 7})
    body = build_body("m", None, [{"role": "user", "content": "hi"}], settings, [TOOL], None, [],
                      max_tokens_field="max_tokens")
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body
    assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "low" and body["logprobs"] is True and body["seed"] == 7
    assert "stream" not in body and "stream_options" not in body  # a plain request unless asked to stream
    streamed = build_body("m", None, [], ModelSettings(), [], None, [], stream=True)
    assert streamed["stream"] is True and "stream_options" not in streamed  # usage only when asked for
    no_tools = build_body("m", None, [], ModelSettings(parallel_tool_calls=True, tool_choice="auto"), [], None, [])
    assert "parallel_tool_calls" not in no_tools and "tool_choice" not in no_tools and "tools" not in no_tools


@pytest.mark.parametrize("settings", [ModelSettings(truncation="auto"), ModelSettings(response_include=["x"]),
                                      ModelSettings(reasoning={"summary": "auto"}),
                                      ModelSettings(tool_choice="required")])
def test_settings_chat_cannot_express_raise(settings):
    with pytest.raises(UserError):
        build_body("m", None, [], settings, [], None, [])


@pytest.mark.parametrize("name, value", [("truncation", "auto"), ("response_include", ["x"]),
                                         ("context_management", {"k": 1})])
def test_a_responses_only_setting_is_refused_by_name_and_value(name, value):
    with pytest.raises(UserError) as caught:
        build_body("m", None, [], ModelSettings(**{name: value}), [], None, [])
    assert str(caught.value) == (f"ModelSettings.{name}={value!r} is a Responses API feature; Chat Completions "
                                 "cannot express it (use OpenAIResponsesModel or unset it)")


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("settings, chat, said", [
    (ModelSettings(tool_choice=nested(20_000)), True, "tool_choice <dict> cannot be expressed in Chat Completions"),
    (ModelSettings(tool_choice=[nested(20_000)]), False, "tool_choice <list> cannot be expressed in the Responses API"),
    (ModelSettings(tool_choice=10**5000), True, " cannot be expressed in Chat Completions"),  # <int> on 3.11+
    (ModelSettings(tool_choice={"type": "allowed_tools", "allowed_tools": nested(20_000)}), True,
     "tool_choice=<dict> needs tools, but this agent has none"),
    (ModelSettings(context_management=nested(20_000)), True, "ModelSettings.context_management=<dict> is a "),
    (ModelSettings(response_include=[nested(20_000)]), True, "ModelSettings.response_include=<list> is a "),
    (ModelSettings(tool_choice=list(range(100_000))), True, "tool_choice [0, 1, 2"),
])
def test_a_setting_too_deep_or_too_long_to_print_is_named_by_its_kind_in_the_error(settings, chat, said):
    """Its repr, for the message, was a bare RecursionError (or ValueError: an int past 4,300 digits); a long one
    was quoted whole."""
    with pytest.raises(UserError, match=re.escape(said)) as caught:
        if chat:
            build_body("m", None, [], settings, [], None, [])
        else:
            wire_tool_choice(settings.tool_choice, chat=False)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("option", ["model", "tool_call_content", "response_format_type", "timeout", "max_retries",
                                    "attempt_timeout", "max_response_bytes"])
@pytest.mark.parametrize("value", [[nested(20_000)], [10**5000]])
def test_an_adapter_option_python_cannot_print_is_refused_with_its_kind_named(option, value):
    """The ValueError's own message was a bare RecursionError (or, for the int, str()'s ValueError: no option named)."""
    options = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k", option: value}
    with pytest.raises(ValueError, match="must be") as refused:
        OpenAIChatCompletionsModel(**options)
    assert "<list>" in str(refused.value) or "[[" in str(refused.value) or "[1000" in str(refused.value)
    assert len(str(refused.value)) < 300


def test_prompt_cache_options_is_refused_as_no_adapters_setting():
    with pytest.raises(UserError) as caught:
        build_body("m", None, [], ModelSettings(prompt_cache_options={"k": 1}), [], None, [])
    assert str(caught.value) == ("ModelSettings.prompt_cache_options: not supported by these adapters; pass it in "
                                 "extra_body if your server takes it")


def test_each_setting_chat_completions_takes_is_in_the_body_in_its_form():
    settings = ModelSettings(temperature=0.5, top_p=0.9, frequency_penalty=0.1, presence_penalty=0.2,
                             metadata={"k": "v"}, store=False, prompt_cache_retention="24h", verbosity="low",
                             max_tokens=7, top_logprobs=3, reasoning={"effort": "low"})
    body = build_body("m", "Be brief.", [{"role": "user", "content": "hi"}], settings, [], None, [])
    assert body == {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                               {"role": "user", "content": "hi"}],
                    "temperature": 0.5, "top_p": 0.9, "frequency_penalty": 0.1, "presence_penalty": 0.2,
                    "metadata": {"k": "v"}, "store": False, "prompt_cache_retention": "24h", "verbosity": "low",
                    "max_completion_tokens": 7, "logprobs": True, "top_logprobs": 3, "reasoning_effort": "low"}
    with pytest.raises(UserError) as caught:
        build_body("m", None, [], ModelSettings(reasoning={"summary": "auto"}), [], None, [])
    assert str(caught.value) == "reasoning.summary is a Responses API feature; Chat Completions cannot express it"


def test_truncation_disabled_is_what_chat_completions_does_anyway_so_it_is_accepted_and_not_sent():
    body = build_body("m", None, [], ModelSettings(truncation="disabled"), [], None, [])
    assert body == build_body("m", None, [], ModelSettings(), [], None, [])


def test_output_schema_becomes_response_format():
    schema = {"name": "final_output", "strict": True, "schema": {"type": "object", "properties": {
        "a": {"type": "integer", "default": 1}}, "required": ["a"], "additionalProperties": False}}
    body = build_body("m", None, [], ModelSettings(), [], schema, [])
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "final_output"
    assert "default" not in body["response_format"]["json_schema"]["schema"]["properties"]["a"]


def test_content_sent_as_a_list_of_text_parts_is_joined_into_one_text():
    parts = {"role": "assistant", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]}
    assert message_to_items(parts)[0]["content"][0]["text"] == "Hi there"


def test_message_to_items_order_and_shapes():
    items = message_to_items({"role": "assistant", "content": "ok", "reasoning_content": "think",
                              "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": ""}}]})
    assert [i["type"] for i in items] == ["reasoning", "message", "function_call"]
    assert items[0]["summary"] == [{"type": "summary_text", "text": "think"}]
    assert items[1]["content"] == [{"type": "output_text", "text": "ok", "annotations": [], "logprobs": []}]
    assert items[2]["call_id"].startswith("call_") and items[2]["arguments"] == "{}"
    refusal = message_to_items({"role": "assistant", "content": None, "refusal": "No."})
    assert refusal[0]["content"] == [{"type": "refusal", "refusal": "No."}]
    with pytest.raises(ModelBehaviorError):
        message_to_items({"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]})

# --------------------------------------------------------------------------- non-streaming over sockets


def test_tool_turn_request_body_and_parsed_response(server):
    server.reply(chat_completion(None, [("call_q2", "convert_currency", '{"amount":1,"round":null}')],
                                 usage={"prompt_tokens": 96, "completion_tokens": 31, "total_tokens": 127,
                                        "prompt_tokens_details": {"cached_tokens": 8},
                                        "completion_tokens_details": {"reasoning_tokens": 4}}))
    resp = call(model(server), [{"role": "user", "content": "40 EUR?"}, CALL, OUTPUT],
                ModelSettings(parallel_tool_calls=True), [TOOL], handoffs=[HANDOFF])
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert req["body"] == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You convert."},
            {"role": "user", "content": "40 EUR?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_q1", "type": "function",
             "function": {"name": "convert_currency", "arguments": '{"amount":40,"round":null}'}}]},
            {"role": "tool", "tool_call_id": "call_q1", "content": '{"result": 6480.5}'}],
        "tools": [chat_tool(TOOL), chat_tool(HANDOFF)],
        "parallel_tool_calls": True}
    assert resp.output == [{"type": "function_call", "id": "__fake_id__", "call_id": "call_q2",
                            "name": "convert_currency", "arguments": '{"amount":1,"round":null}',
                            "status": "completed"}]
    u = resp.usage
    assert (u.requests, u.input_tokens, u.output_tokens, u.total_tokens) == (1, 96, 31, 127)
    assert (u.input_tokens_details.cached_tokens, u.output_tokens_details.reasoning_tokens) == (8, 4)


def test_text_reply_and_missing_usage_is_none_safe(server):
    server.reply({"choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]})
    resp = call(model(server), [{"role": "user", "content": "hi"}])
    assert resp.output[0]["content"][0]["text"] == "Hi"
    assert (resp.usage.requests, resp.usage.input_tokens, resp.usage.total_tokens) == (1, 0, 0)


def test_max_tokens_field_defaults_per_endpoint(server):
    server.reply(chat_completion("a")).reply(chat_completion("b"))
    call(model(server), [], ModelSettings(max_tokens=5))
    call(model(server, max_tokens_field="max_completion_tokens"), [], ModelSettings(max_tokens=5))
    assert server.bodies[0]["max_tokens"] == 5 and server.bodies[1]["max_completion_tokens"] == 5
    assert OpenAIChatCompletionsModel("m", base_url="https://api.openai.com/v1", api_key="k").max_tokens_field \
        == "max_completion_tokens"


@pytest.mark.parametrize("base_url, field, usage, reasoning", [
    ("https://api.openai.com/v1", "max_completion_tokens", True, None),
    ("https://me.openai.azure.com/openai", "max_completion_tokens", False, None),
    ("https://api.deepseek.com", "max_tokens", False, "reasoning_content"),
    ("http://localhost:8080/v1", "max_tokens", False, None)])
def test_each_hosts_defaults(base_url, field, usage, reasoning):
    """What a host is known to want: OpenAI's own and Azure's token field, usage in OpenAI's streams, and
    DeepSeek's reasoning echoed on a tool-call turn; any other server gets the plain Chat Completions body."""
    m = OpenAIChatCompletionsModel("m", base_url=base_url, api_key="k")
    assert (m.max_tokens_field, m.include_usage, m.reasoning_field) == (field, usage, reasoning)
    explicit = OpenAIChatCompletionsModel("m", base_url=base_url, api_key="k", max_tokens_field="x",
                                          include_usage=not usage, reasoning_field="r")
    assert (explicit.max_tokens_field, explicit.include_usage, explicit.reasoning_field) == ("x", not usage, "r")


def test_previous_response_id_rejected_before_sending(server):
    with pytest.raises(UserError):
        call(model(server), [], previous_response_id="resp_1")
    assert server.requests == []


def test_http_error_is_readable_and_key_never_leaks(server):
    server.reply({"error": {"message": "Incorrect API key provided: sk-test", "type": "invalid_request_error",
                            "code": "invalid_api_key", "param": None}}, status=401,
                 headers={"x-request-id": "req_9"})
    m = model(server)
    with pytest.raises(ModelHTTPError) as info:
        call(m, [])
    err = info.value
    assert (err.status, err.code, err.request_id) == (401, "invalid_api_key", "req_9")
    for text in (str(err), repr(err), repr(m), repr(m.transport), json.dumps(err.body)):
        assert "sk-test" not in text
    assert len(server.requests) == 1  # 401 is not retried


def test_in_band_error_on_200_body(server):
    server.reply({"error": {"message": "upstream failed", "code": 502}})
    with pytest.raises(ModelHTTPError, match="upstream failed") as info:
        call(model(server), [])
    assert info.value.code == "502"

# --------------------------------------------------------------------------- streaming over sockets


def _completed(events):
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    return events[-1]["response"]


def test_stream_text_events_and_usage(server):
    server.reply_sse(sse(*chat_chunks("Hello there world")))
    events = stream(model(server, include_usage=True), [{"role": "user", "content": "hi"}])
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == "Hello there world "
    resp = _completed(events)
    assert resp["output"][0]["content"][0]["text"] == "Hello there world "
    assert resp["usage"]["input_tokens"] == 10
    body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.requests[0]["headers"]["accept"] == "text/event-stream"


def test_stream_options_not_sent_by_default_to_compatible_servers(server):
    server.reply_sse(sse(*chat_chunks("x", usage=False)))
    resp = _completed(stream(model(server), []))
    assert "stream_options" not in server.bodies[0] and resp["usage"] is None


def test_stream_tool_calls_split_at_every_byte_with_keepalive_comments(server):
    chunks = chat_chunks("Checking", [("call_a", "convert_currency", '{"amount":40,"round":null}'),
                                      ("call_b", "transfer_to_billing", "")])
    lines = sse(*chunks)
    lines.insert(2, ": keep-alive\n\n")
    server.reply_sse(lines, chunk_size=1)
    events = stream(model(server), [])
    out = _completed(events)["output"]
    assert [i["type"] for i in out] == ["message", "function_call", "function_call"]
    assert (out[1]["call_id"], out[1]["arguments"]) == ("call_a", '{"amount":40,"round":null}')
    assert (out[2]["call_id"], out[2]["name"], out[2]["arguments"]) == ("call_b", "transfer_to_billing", "{}")
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"
             and e["item"].get("type") == "function_call"]
    assert added == [{**call, "arguments": "", "status": "in_progress"} for call in out[1:]]  # as each opened
    # Output items are numbered from 0 in the order they open, as the Responses API numbers them.
    opened = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    assert opened == [0, 1, 2]


def test_stream_in_band_error_event(server):
    server.reply_sse(sse(chat_chunks("hi")[0], {"error": {"message": "provider overloaded", "code": 502}},
                         done=False))
    with pytest.raises(ModelHTTPError, match="provider overloaded"):
        stream(model(server), [])
    assert len(server.requests) == 1  # in-band stream errors are not retried


def test_stream_dropped_mid_stream_is_an_error_not_a_partial_result(server):
    data = "".join(sse(*chat_chunks("Hello there world")))
    server.reply_sse([data], drop_after=data.index("there") + 20)
    with pytest.raises(ModelHTTPError, match="truncated|broken") as info:
        stream(model(server), [])
    assert info.value.code == "truncated"
    assert len(server.requests) == 1  # events were delivered: never retried


def test_stream_eof_without_finish_reason_or_done(server):
    server.reply_sse(sse(*chat_chunks("Hello")[:2], done=False))
    with pytest.raises(ModelHTTPError, match="truncated"):
        stream(model(server), [])


def test_a_stream_with_no_event_at_all_is_a_truncated_stream_error(server):
    server.reply_sse([])
    with pytest.raises(ModelHTTPError, match="the stream ended before a finish_reason or \\[DONE\\]") as info:
        stream(model(server), [])
    assert info.value.code == "truncated"


def test_stream_eof_after_finish_reason_without_done_is_success(server):
    server.reply_sse(sse(*chat_chunks("Hello"), done=False))
    assert _completed(stream(model(server), []))["output"][0]["content"][0]["text"] == "Hello "

# --------------------------------------------------------------------------- accumulator quirks


def _finish(chunks, saw_done=True):
    t = ChatStreamTranslator()
    for c in chunks:
        t.feed(c)
    return t.finish(saw_done)[-1]["response"]["output"]


def _delta(*tool_calls, finish=None):
    return {"choices": [{"index": 0, "delta": {"tool_calls": list(tool_calls)}, "finish_reason": finish}]}


def test_vllm_repeated_names_and_no_ids():
    out = _finish([_delta({"index": 0, "function": {"name": "f", "arguments": '{"a"'}}),
                   _delta({"index": 0, "function": {"name": "f", "arguments": ":1}"}}),
                   _delta({"index": 0, "function": {"arguments": ""}}, finish="tool_calls")])
    assert len(out) == 1 and out[0]["name"] == "f" and out[0]["arguments"] == '{"a":1}'
    assert out[0]["call_id"].startswith("call_")


def test_an_id_repeated_on_every_delta_is_set_once():
    out = _finish([_delta({"index": 0, "id": "call_1", "function": {"name": "f", "arguments": '{"a"'}}),
                   _delta({"index": 0, "id": "call_1", "function": {"arguments": ":1}"}}, finish="tool_calls")])
    assert [(o["call_id"], o["arguments"]) for o in out] == [("call_1", '{"a":1}')]


def test_ollama_every_call_at_index_zero_with_distinct_ids():
    out = _finish([_delta({"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}),
                   _delta({"index": 0, "id": "call_2", "function": {"name": "g", "arguments": {"x": 1}}},
                          finish="tool_calls")])
    assert [(o["call_id"], o["name"], o["arguments"]) for o in out] == [("call_1", "f", "{}"),
                                                                         ("call_2", "g", '{"x": 1}')]


def test_an_id_that_comes_after_the_name_is_the_calls_id_not_a_second_call():
    t = ChatStreamTranslator()
    events = t.feed(_delta({"index": 0, "function": {"name": "f", "arguments": ""}}))  # announced: an id made up
    events += t.feed(_delta({"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}},
                            finish="tool_calls"))
    events += t.finish(True)
    out, added = events[-1]["response"]["output"], [e for e in events if e["type"] == "response.output_item.added"]
    assert len(added) == 1 and [(o["name"], o["arguments"]) for o in out] == [("f", "{}")]
    named = {e["item"]["call_id"] for e in events if e["type"].startswith("response.output_item")} | {out[0]["call_id"]}
    assert named == {added[0]["item"]["call_id"]}  # the id the events named first is the call's throughout


def test_a_call_at_index_zero_before_its_id_and_a_call_with_another_name_and_an_id_stay_two_calls():
    first = {"index": 0, "function": {"name": "f", "arguments": '{"a":1}'}}
    second = {"index": 0, "id": "call_B", "function": {"name": "g", "arguments": '{"b":2}'}}
    out = _finish([_delta(first), _delta(second, finish="tool_calls")])
    assert [(o["name"], o["arguments"]) for o in out] == [("f", '{"a":1}'), ("g", '{"b":2}')]
    assert out[1]["call_id"] == "call_B"


def test_two_calls_with_one_id_at_two_indexes_stay_two_calls_as_in_a_whole_message():
    calls = [{"index": i, "id": "call_1", "function": {"name": "f", "arguments": f'{{"city":"{city}"}}'}}
             for i, city in enumerate(["Paris", "Rome"])]
    out = _finish([_delta(calls[0]), _delta(calls[1], finish="tool_calls")])
    assert [(o["call_id"], o["arguments"]) for o in out] == [("call_1", '{"city":"Paris"}'),
                                                             ("call_1", '{"city":"Rome"}')]
    assert out == message_to_items({"tool_calls": calls})


def test_lm_studio_empty_later_names_and_missing_index():
    out = _finish([_delta({"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}),
                   _delta({"index": 0, "function": {"name": "", "arguments": '{"q":'}}),
                   _delta({"function": {"arguments": '"x"}'}}, finish="tool_calls")])
    assert [(o["name"], o["arguments"]) for o in out] == [("f", '{"q":"x"}')]


def test_finish_reason_tool_calls_without_calls_and_call_without_name_raise():
    with pytest.raises(ModelBehaviorError):
        _finish([{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}])
    with pytest.raises(ModelBehaviorError, match=r"^The model streamed a tool call without a function name "
                                                 r"\(call 2\)\.$"):
        _finish([_delta({"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}),
                 _delta({"index": 1, "id": "sk-test\x1b[2J", "function": {"arguments": "{}"}}, finish="tool_calls")])


def test_reasoning_sent_as_both_reasoning_content_and_reasoning_is_read_once_streamed_or_not(server):
    both = {"reasoning_content": "Let me think.", "reasoning": "Let me think."}
    server.reply_sse(sse(*_chunks_of(both, {"content": "4"})))
    server.reply(chat_completion("4", **both))
    streamed, whole = _completed(stream(model(server), []))["output"], call(model(server), []).output
    assert streamed == whole and whole[0]["summary"][0]["text"] == "Let me think."


def test_azure_empty_choices_and_other_indexes_skipped():
    out = _finish([{"choices": [], "prompt_filter_results": []},
                   {"choices": [{"index": 1, "delta": {"content": "no"}}]},
                   {"choices": [{"index": 0, "delta": {"content": "yes"}, "finish_reason": "stop"}]}])
    assert out[0]["content"][0]["text"] == "yes"

# --------------------------------------------------------------------------- lone surrogates are repaired where they enter


def _utf8_safe(value):
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate
    return value


def test_lone_surrogates_in_a_whole_answer_become_replacement_characters_and_pairs_join(server):
    server.reply(chat_completion("pair \ud83d\ude00 lone \ud800", [("call_\udc00", "f", '{"q": "\ud800"}')]))
    message, call_item = _utf8_safe(call(model(server), []).output)
    assert message["content"][0]["text"] == "pair 😀 lone \ufffd"
    assert json.loads(call_item["arguments"]) == {"q": "\ufffd"} and call_item["call_id"] == "call_\ufffd"


def _chunks_of(*deltas, finish="stop"):
    return [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas] + [
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]


@pytest.mark.parametrize("pieces,text", [(["a\ud83d", "\ude00b"], "a😀b"), (["a\ud800", "b"], "a\ufffdb"),
                                         (["a\ud83d"], "a\ufffd"), (["\udc00", "\ud83d", "\ude00"], "\ufffd😀")])
def test_streamed_text_split_inside_a_surrogate_pair_comes_out_joined(server, pieces, text):
    server.reply_sse(sse(*_chunks_of(*({"content": p} for p in pieces))))
    events = _utf8_safe(stream(model(server), []))
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == text
    assert _completed(events)["output"][0]["content"][0]["text"] == text


def test_streamed_arguments_split_inside_a_surrogate_pair_come_out_joined(server):
    head = {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"q": "\ud83d'}}]}
    tail = {"tool_calls": [{"index": 0, "function": {"arguments": '\ude00 \udfff"}'}}]}
    server.reply_sse(sse(*_chunks_of(head, tail, finish="tool_calls")))
    events = _utf8_safe(stream(model(server), []))
    assert json.loads(_completed(events)["output"][0]["arguments"]) == {"q": "😀 \ufffd"}
    assert "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta") == \
        '{"q": "😀 \ufffd"}'

# --------------------------------------------------------------------------- empty and malformed answers are typed errors


@pytest.mark.parametrize("body,message", [
    ({"choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "length"}]},
     "The model's answer is empty: the token limit was reached before anything was written (finish_reason "
     "'length'); raise max_tokens (a reasoning model spends tokens thinking first)."),
    ({"choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "content_filter"}]},
     "The model's answer is empty: the provider's content filter blocked it (finish_reason 'content_filter')."),
    ({"choices": [{"index": 0, "message": {}}]},
     "The model's answer is empty: no text, no tool call and no finish_reason."),
    ({"choices": [{"index": 0, "message": {"content": None}, "finish_reason": "sk-echoed\x1b[2J"}]},
     "The model's answer is empty: no text, no tool call, and a finish_reason that is not 'stop'."),
    ({"choices": []}, "The model's answer is empty: the response has no choices."),
    ({"id": "x"}, "The model's answer is empty: the response has no choices."),
    ({"choices": [{"message": {"content": "hi"}, "finish_reason": "tool_calls"}]},
     "The model's answer says finish_reason 'tool_calls' but carries no tool call."),
])
def test_empty_answers_are_typed_errors_with_the_reason(server, body, message):
    server.reply(body)
    with pytest.raises(ModelBehaviorError) as info:
        call(model(server), [])
    assert str(info.value) == message


def test_an_explicitly_empty_answer_is_accepted(server):
    server.reply({"choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "stop"}]})
    assert call(model(server), []).output == []


@pytest.mark.parametrize("chunks,message", [
    ([{}], "The model's answer is empty: the stream carried no choices."),
    ([{"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}], "finish_reason 'length'"),
    ([{"choices": [{"index": 0, "delta": {}, "finish_reason": "weird"}]}], "a finish_reason that is not 'stop'"),
])
def test_empty_streams_are_typed_errors_with_the_reason(server, chunks, message):
    server.reply_sse(sse(*chunks))
    with pytest.raises(ModelBehaviorError) as info:
        stream(model(server), [])
    assert message in str(info.value)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("content", [None, "The transfer was appro"])
def test_finish_reason_error_is_a_failed_generation_not_an_answer(server, streamed, content):
    """OpenRouter, after a stream began: a 200 answer whose finish_reason 'error' says generating it failed."""
    if streamed:
        server.reply_sse(sse(*chat_chunks(content, finish_reason="error")))
    else:
        server.reply(chat_completion(content, finish_reason="error"))
    with pytest.raises(ModelHTTPError, match="finish_reason 'error'"):
        stream(model(server), []) if streamed else call(model(server), [])


@pytest.mark.parametrize("body,where", [
    ({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": {"n": 1}}},
     "usage.prompt_tokens is an object, expected a non-negative number"),
    ({"choices": [{"message": {"content": "hi"}}], "usage": {"total_tokens": "12"}},
     "usage.total_tokens is a string, expected a non-negative number"),
    ({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 10 ** 400}},  # past any float
     "usage.prompt_tokens is a number, expected a non-negative number at most 1.8e+308 (a float's largest)"),
    ({"choices": ["hi"]}, "choices[0] is a string, expected an object"),
    ({"choices": [{"message": ["hi"]}]}, "choices[0].message is an array, expected an object"),
    ({"choices": [{"message": {"tool_calls": ["f"]}}]}, "choices[0].message.tool_calls[0] is a string, expected an object"),
    ({"choices": [{"message": {"tool_calls": [{"function": "f"}]}}]},
     "choices[0].message.tool_calls[0].function is a string, expected an object"),
    ({"choices": [{"message": {"content": [{"type": "text", "text": 5}]}}]},
     "choices[0].message.content[0].text is a number, expected a string"),
    ({"choices": [{"message": {"content": 5}}]}, "choices[0].message.content is a number, expected a string"),
])
def test_malformed_answers_name_the_field(server, body, where):
    server.reply(body)
    with pytest.raises(ModelBehaviorError) as info:
        call(model(server), [])
    assert str(info.value) == f"The model's answer is malformed: {where}."


@pytest.mark.parametrize("chunk,where", [
    ("hi", "a stream chunk is a string"),
    ({"choices": [5]}, "a stream chunk's choices[0] is a number"),
    ({"choices": [{"delta": "hi"}]}, "a stream chunk's choices[0].delta is a string"),
    ({"choices": [{"delta": {"tool_calls": [None]}}]}, "a stream chunk's choices[0].delta.tool_calls[0] is null"),
    ({"choices": [{"delta": {"tool_calls": [{"index": [0]}]}}]},
     "a stream chunk's choices[0].delta.tool_calls[0].index is an array, expected an integer"),
    ({"choices": [], "usage": {"prompt_tokens": [1]}}, "a stream chunk's usage.prompt_tokens is an array"),
    ({"choices": [], "usage": {"completion_tokens": 10 ** 400}}, "a stream chunk's usage.completion_tokens is a number"),
])
def test_malformed_stream_chunks_name_the_field(server, chunk, where):
    server.reply_sse(["data: " + json.dumps(chunk) + "\n\n", "data: [DONE]\n\n"])
    with pytest.raises(ModelBehaviorError) as info:
        stream(model(server), [])
    assert str(info.value).startswith(f"The model's answer is malformed: {where}")


def test_a_streamed_reasoning_summary_part_opens_empty_as_openai_sends_it():
    t = ChatStreamTranslator()
    events = t.start() + t.feed({"choices": [{"index": 0, "delta": {"reasoning_content": "Think."}}]})
    added = [e for e in events if e["type"] == "response.reasoning_summary_part.added"]
    assert [e["part"] for e in added] == [{"type": "summary_text", "text": ""}]  # the text comes in its deltas
