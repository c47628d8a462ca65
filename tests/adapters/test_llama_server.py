"""What llama.cpp's llama-server does, emulated (tests/openai_server.py `llama_server`, and its answers verbatim):
a tool forced by name is resent as `"required"` with only that tool, an output schema the Responses endpoint
drops is resent in the instructions, a structured answer in a code fence is unwrapped, and the errors say what
to do (501, the 404s, a context too small). Both adapters, plain and streamed, through their public methods."""
import asyncio
import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings, strategies as st

from miniagents import (Agent, ModelHTTPError, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel,
                        RunConfig, Runner, UsageLimitExceeded, UsageLimits, function_tool)
from miniagents.context import Usage
from miniagents.models import endpoint, protocol
from miniagents.models.endpoint import unfenced
from openai_server import (FASTAPI_NOT_FOUND, HTTP_SERVER_501, IGNORED_ANSWER, LLAMA_SERVER_CONTEXT,
                           LLAMA_SERVER_NOT_FOUND, call_item, chat_chunks, chat_completion, response_events,
                           response_obj, sse, text_item)

ADAPTERS = {"chat": OpenAIChatCompletionsModel, "responses": OpenAIResponsesModel}
TOOLS = [{"type": "function", "name": name, "description": f"{name} it", "strict": True,
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"],
                         "additionalProperties": False}} for name in ("get_order_status", "cancel_order")]
SCHEMA = {"name": "final_output", "strict": True, "schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"],
    "additionalProperties": False}}
FORCED = ModelSettings(tool_choice="get_order_status")


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(endpoint, "_accepted_forms", {})
    monkeypatch.setattr(protocol, "INITIAL_RETRY_DELAY", 0.001)


def model(api, server, name="smol", **options):
    return ADAPTERS[api](name, base_url=server.url, api_key="sk-test", max_retries=2, **options)


def reply_call(server, api, streamed, name="get_order_status"):
    """Queue the answer a server that took the forced tool gives: one call of it."""
    if api == "chat":
        call = [("call_1", name, '{"order_id": "A1"}')]
        server.reply_sse(sse(*chat_chunks(None, call))) if streamed else server.reply(chat_completion(None, call))
    else:
        items = [call_item("call_1", name, '{"order_id": "A1"}')]
        server.reply_sse(response_events(items)) if streamed else server.reply(response_obj(items))


def reply_text(server, api, streamed, text):
    if api == "chat":
        server.reply_sse(sse(*chat_chunks(text))) if streamed else server.reply(chat_completion(text))
    else:
        items = [text_item(text)]
        server.reply_sse(response_events(items)) if streamed else server.reply(response_obj(items))


def ask(m, streamed, settings=FORCED, schema=None, instructions="Be brief."):
    """(output items, every event) of one call, plain or streamed."""
    args = (instructions, [{"role": "user", "content": "Where is A1?"}], settings, TOOLS, schema, [])
    if not streamed:
        return m.get_response(*args).output, []
    events = list(m.stream_response(*args))
    return events[-1]["response"]["output"], events


def calls(items):
    return [i["name"] for i in items if i["type"] == "function_call"]


def forced_form(body):
    """How a body forces its tool: 'object' (by name) or 'required' with the names of the tools it offers."""
    if isinstance(body.get("tool_choice"), dict):
        return "object"
    return body.get("tool_choice"), [t.get("name") or t["function"]["name"] for t in body["tools"]]


# --- a tool forced by name --------------------------------------------------------------------------------------

@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ADAPTERS)
def test_a_forced_tool_the_server_ignores_is_resent_as_required_with_only_that_tool(server, api, streamed):
    server.emulate("llama-server")
    reply_call(server, api, streamed)
    items, events = ask(model(api, server), streamed)
    assert calls(items) == ["get_order_status"]
    assert [forced_form(b) for b in server.bodies] == ["object", ("required", ["get_order_status"])]
    assert "answered" in server.requests[0]  # the emulation answered in prose: the object form was dropped
    if streamed:  # the first answer was held back: the reader sees one answer, the one with the call
        assert sum(e["type"] == "response.completed" for e in events) == 1
        assert IGNORED_ANSWER not in json.dumps(events)
    reply_call(server, api, streamed)
    assert calls(ask(model(api, server), streamed)[0]) == ["get_order_status"]
    assert forced_form(server.bodies[2]) == ("required", ["get_order_status"])  # remembered: sent so at once
    assert len(server.requests) == 3


@pytest.mark.parametrize("api", ADAPTERS)
def test_the_required_form_is_remembered_per_api_base_url_and_model(server, api):
    server.emulate("llama-server")
    reply_call(server, api, False)
    ask(model(api, server, "smol"), False)
    reply_call(server, api, False)
    ask(model(api, server, "other-model"), False)  # another model on the same server is asked afresh
    other = "responses" if api == "chat" else "chat"
    reply_call(server, other, False)
    ask(model(other, server, "smol"), False)  # and so is the other API
    assert [forced_form(b) for b in server.bodies] == [
        "object", ("required", ["get_order_status"]), "object", ("required", ["get_order_status"]), "object",
        ("required", ["get_order_status"])]


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ADAPTERS)
def test_a_server_that_takes_the_object_form_gets_one_request_and_then_live_streams(server, api, streamed):
    reply_call(server, api, streamed)
    assert calls(ask(model(api, server), streamed)[0]) == ["get_order_status"]
    assert len(server.requests) == 1 and forced_form(server.bodies[0]) == "object"
    assert endpoint._accepted_forms[(ADAPTERS[api].path, server.url, "smol")] == {"tool_choice": "object"}
    reply_text(server, api, True, "no call this time")  # a known endpoint: the stream is not held back
    events = model(api, server).stream_response("Be brief.", [{"role": "user", "content": "x"}], FORCED, TOOLS,
                                                None, [])
    first = next(events)
    assert first["type"] == "response.created" and len(server.requests) == 2
    assert calls(list(events)[-1]["response"]["output"]) == [] and len(server.requests) == 2  # never resent
    assert endpoint._accepted_forms[(ADAPTERS[api].path, server.url, "smol")] == {"tool_choice": "required"}


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_forced_tool_ignored_in_both_forms_is_the_models_answer_after_two_requests(server, api):
    reply_text(server, api, False, "prose")
    reply_text(server, api, False, "prose again")
    items, _ = ask(model(api, server), False)
    assert calls(items) == [] and items[-1]["content"][0]["text"] == "prose again" and len(server.requests) == 2
    reply_text(server, api, False, "prose, third time")
    ask(model(api, server), False)
    assert len(server.requests) == 3 and forced_form(server.bodies[2]) == ("required", ["get_order_status"])


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_call_of_another_tool_does_not_count_as_the_forced_one(server, api):
    reply_call(server, api, False, name="cancel_order")
    reply_call(server, api, False)
    assert calls(ask(model(api, server), False)[0]) == ["get_order_status"] and len(server.requests) == 2


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_server_that_refuses_the_object_form_gets_required_and_a_refusal_of_both_is_said(server, api):
    refused = {"error": {"message": "tool_choice must be a string", "type": "invalid_request_error"}}
    server.reply(refused, status=400)
    reply_call(server, api, False)
    assert calls(ask(model(api, server), False)[0]) == ["get_order_status"]
    assert [forced_form(b) for b in server.bodies] == ["object", ("required", ["get_order_status"])]
    endpoint._accepted_forms.clear()
    server.reply(refused, status=400).reply({"error": {"message": "tool_choice: 'required' is not supported"}},
                                            status=400)
    with pytest.raises(ModelHTTPError) as info:
        ask(model(api, server), False)
    assert "[sent twice: tool_choice object was refused first: tool_choice must be a string" in str(info.value)
    assert len(server.requests) == 4  # a refusal is never retried unchanged


@pytest.mark.parametrize("api", ADAPTERS)
def test_an_error_that_does_not_name_tool_choice_is_not_resent(server, api):
    server.reply({"error": {"message": "model 'smol' not loaded"}}, status=400)
    with pytest.raises(ModelHTTPError, match="not loaded"):
        ask(model(api, server), False)
    assert len(server.requests) == 1


def test_a_whole_run_with_a_forced_tool_on_llama_server_calls_it_then_answers(server):
    looked_up = []

    @function_tool
    def get_order_status(order_id: str) -> str:
        """Look up an order."""
        looked_up.append(order_id)
        return "in transit"

    server.emulate("llama-server")
    server.reply(chat_completion(None, [("call_1", "get_order_status", '{"order_id": "A1"}')]))
    server.reply(chat_completion("Order A1 is in transit."))
    agent = Agent(name="Desk", tools=[get_order_status], model=model("chat", server),
                  model_settings=ModelSettings(tool_choice="get_order_status"), reset_tool_choice=True)
    assert Runner.run_sync(agent, "Where is A1?").final_output == "Order A1 is in transit."
    assert looked_up == ["A1"] and [forced_form(b) for b in server.bodies[:2]] == [
        "object", ("required", ["get_order_status"])]


# --- structured output through the Responses adapter -------------------------------------------------------------

@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_an_output_schema_the_responses_endpoint_ignores_is_stated_in_the_instructions(server, streamed):
    server.emulate("llama-server")
    reply_text(server, "responses", streamed, '{"order_id": "A1"}')
    items, events = ask(model("responses", server), streamed, ModelSettings(), SCHEMA)
    assert items[-1]["content"][0]["text"] == '{"order_id": "A1"}' and len(server.requests) == 2
    first, second = server.bodies
    assert first["instructions"] == "Be brief." and first["text"] == second["text"]  # text.format kept
    assert second["instructions"].startswith("Be brief.\n\nReply with one JSON object")
    assert json.dumps(SCHEMA["schema"]) in second["instructions"]
    if streamed:
        assert IGNORED_ANSWER not in json.dumps(events)
    reply_text(server, "responses", streamed, '{"order_id": "B7"}')
    ask(model("responses", server), streamed, ModelSettings(), SCHEMA, instructions=None)
    assert len(server.requests) == 3 and server.bodies[2]["instructions"].startswith("Reply with one JSON object")


def test_a_responses_json_answer_is_taken_at_once_and_a_text_request_is_never_checked(server):
    reply_text(server, "responses", False, '```json\n{"order_id": "A1"}\n```')
    items, _ = ask(model("responses", server), False, ModelSettings(), SCHEMA)
    assert items[-1]["content"][0]["text"] == '{"order_id": "A1"}' and len(server.requests) == 1
    reply_text(server, "responses", False, "plain prose is fine without a schema")
    ask(model("responses", server, "other"), False, ModelSettings(), None)
    assert len(server.requests) == 2 and "instructions" in server.bodies[1]


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_structured_answer_in_a_code_fence_reaches_the_run_unwrapped(server, streamed):
    from dataclasses import dataclass

    @dataclass
    class Order:
        order_id: str

    answer = 'Here it is:\n```JSON\n{"response": {"order_id": "A1"}}\n```\nAnything else?'
    reply_text(server, "chat", streamed, answer)
    agent = Agent(name="Desk", output_type=Order, model=model("chat", server))
    if not streamed:
        assert Runner.run_sync(agent, "A1?").final_output == Order("A1")
        return
    import asyncio

    async def main():
        result = Runner.run_streamed(agent, "A1?")
        async for _ in result.stream_events():
            pass
        return result.final_output
    assert asyncio.run(main()) == Order("A1")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_streamed_answer_in_a_code_fence_is_unwrapped_in_each_item_event_as_in_the_result(server, api):
    reply_text(server, api, True, '```json\n{"order_id": "A1"}\n```')
    items, events = ask(model(api, server), True, ModelSettings(), SCHEMA)
    assert items[-1]["content"][0]["text"] == '{"order_id": "A1"}' and len(server.requests) == 1
    assert [e["item"] for e in events if e["type"] == "response.output_item.done"] == items


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(max_size=6), JSON, max_size=4),
       language=st.sampled_from(["", "json", "JSON", " json ", "jsonc", "js", "python", "text", "json5"]),
       before=st.sampled_from(["", "Sure!\n", "Here is the JSON:\n\n"]), after=st.sampled_from(["", "\n", "\nDone."]))
def test_a_fenced_json_answer_comes_out_as_its_json(value, language, before, after):
    text = json.dumps(value, indent=1)
    assert unfenced(text) == text  # JSON is never touched
    assert json.loads(unfenced(f"{before}```{language}\n{text}\n```{after}")) == value


@given(st.text(max_size=200))
def test_text_that_holds_no_json_comes_back_unchanged(text):
    out = unfenced(text)
    assert out == text or json.loads(out) is not None or out in ("null", "")


def test_fences_nested_in_json_strings_and_many_fences():
    inner = {"code": "```py\nprint(1)\n```", "more": "```"}
    text = "```json\n" + json.dumps(inner) + "\n```"
    assert json.loads(unfenced(text)) == inner  # the outermost fence, not the first closing one
    assert unfenced("no fence at all") == "no fence at all"
    assert unfenced("```\nnot json\n```") == "```\nnot json\n```"
    assert unfenced("```json {\"a\": 1}```") == "```json {\"a\": 1}```"  # no newline after the info string
    many = "```\nx\n```\n" * 5000 + '```\n{"a": 1}\n```'
    assert unfenced(many) == many  # only the outermost and the first fences are tried: the last is too far


# --- errors --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("api", ADAPTERS)
def test_http_501_is_not_retried_and_names_the_base_url(server, api):
    server.reply(raw=HTTP_SERVER_501, status=501, content_type="text/html;charset=utf-8")
    with pytest.raises(ModelHTTPError) as info:
        ask(model(api, server), False, ModelSettings())
    said = str(info.value)
    assert len(server.requests) == 1 and info.value.status == 501
    assert said.index("Unsupported method ('POST')") < said.index("is probably not an OpenAI-compatible API")
    assert f"base_url='{server.url}'" in said and said.endswith("1 attempt)")


@pytest.mark.parametrize("body", [LLAMA_SERVER_NOT_FOUND, FASTAPI_NOT_FOUND], ids=["llama-server", "fastapi"])
def test_a_404_on_the_responses_endpoint_suggests_chat_completions_and_one_on_chat_does_not(server, body):
    server.reply(body, status=404).reply(body, status=404)
    with pytest.raises(ModelHTTPError) as responses:
        ask(model("responses", server), False, ModelSettings())
    with pytest.raises(ModelHTTPError) as chat:
        ask(model("chat", server), False, ModelSettings())
    assert "use Chat Completions (OpenAIChatCompletionsModel)" in str(
        responses.value)
    assert "Chat Completions" not in str(chat.value) and len(server.requests) == 2


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_context_too_small_shows_the_servers_words_first_then_what_to_do(server, api):
    server.reply(LLAMA_SERVER_CONTEXT, status=400)
    with pytest.raises(ModelHTTPError) as info:
        ask(model(api, server), False, ModelSettings())
    said = str(info.value)
    assert said.startswith("HTTP 400: type=exceed_context_size_error code=400 request (5033 tokens) exceeds the "
                           "available context size (4096 tokens)")
    assert said.index("try increasing it") < said.index("does not fit the model's context") < said.index("(POST")
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_forced_tool_the_request_does_not_offer_is_never_sent_with_no_tools(server, api):
    """Forcing a name no offered tool has: ignored or refused, there is no "required" form to send; one request."""
    reply_text(server, api, False, "prose")
    items, _ = ask(model(api, server), False, ModelSettings(tool_choice="no_such_tool"))
    assert calls(items) == [] and len(server.requests) == 1 and server.bodies[0]["tools"]
    server.reply({"error": {"message": "tool_choice names no tool", "type": "invalid_request_error"}}, status=400)
    with pytest.raises(ModelHTTPError, match="tool_choice names no tool"):
        ask(model(api, server), False, ModelSettings(tool_choice="no_such_tool"))
    assert len(server.requests) == 2


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_forced_tool_and_an_output_schema_both_ignored_are_switched_in_one_resend(server, streamed):
    server.emulate("llama-server")
    items = [call_item("call_1", "get_order_status", '{"order_id": "A1"}')]
    server.reply_sse(response_events(items)) if streamed else server.reply(response_obj(items))
    out, _ = ask(model("responses", server), streamed, FORCED, SCHEMA)
    assert calls(out) == ["get_order_status"] and len(server.requests) == 2
    assert forced_form(server.bodies[1]) == ("required", ["get_order_status"])
    assert "Reply with one JSON object" in server.bodies[1]["instructions"]


# --- What an attack found: an answer set aside for a resend was billed, and the run's usage dropped it ------------

ORDER = call_item("call_1", "get_order_status", '{"order_id": "A1"}')
SET_ASIDE = {  # what each answer holds (a text or the forced call), the last the one returned; and how it is asked
    "chat: tool_choice ignored": ("chat", ["prose", ORDER], FORCED, None),
    "responses: tool_choice ignored": ("responses", ["prose", ORDER], FORCED, None),
    "responses: text.format ignored": ("responses", ["prose", '{"order_id": "A1"}'], ModelSettings(), SCHEMA),
    "responses: tool_choice ignored, a schema asked": ("responses", ['{"order_id": "A1"}', ORDER], FORCED, SCHEMA),
    "responses: tool_choice, then text.format": ("responses", ['{"order_id": "A1"}', "prose", ORDER], FORCED, SCHEMA),
}


def reply_billed(server, api, streamed, answer, tokens):
    """Queue `answer` (a text, or the forced call) billed `tokens` (input, output)."""
    inp, out = tokens
    if api == "chat":
        usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
        text, call = (None, [("call_1", answer["name"], answer["arguments"])]) if isinstance(answer, dict) else (
            answer, None)
        server.reply_sse(sse(*chat_chunks(text, call, usage=usage))) if streamed else server.reply(
            chat_completion(text, call, usage=usage))
    else:
        usage = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
        items = [answer if isinstance(answer, dict) else text_item(answer)]
        server.reply_sse(response_events(items, usage=usage)) if streamed else server.reply(
            response_obj(items, usage=usage))


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("case", SET_ASIDE)
def test_the_usage_of_an_answer_set_aside_for_a_resend_is_added_to_the_answer_returned(server, case, streamed):
    api, answers, settings, schema = SET_ASIDE[case]
    billed = [(1000 * (n + 1), 100 * (n + 1) + 7) for n in range(len(answers))]
    for answer, tokens in zip(answers, billed):
        reply_billed(server, api, streamed, answer, tokens)
    args = ("Be brief.", [{"role": "user", "content": "Where is A1?"}], settings, TOOLS, schema, [])
    if streamed:
        events = list(model(api, server).stream_response(*args))
        assert sum(e["type"] == "response.completed" for e in events) == 1  # the answers set aside stay unseen
        usage = Usage.from_json(events[-1]["response"]["usage"])
    else:
        usage = model(api, server).get_response(*args).usage
    assert len(server.requests) == len(answers) == usage.requests
    assert (usage.input_tokens, usage.output_tokens) == tuple(map(sum, zip(*billed)))
    assert usage.total_tokens == sum(map(sum, billed))


@dataclass
class Order:
    order_id: str


def run(agent, streamed, limits=None):
    """A whole run of `agent`, plain or streamed, under `limits`."""
    config = RunConfig(usage_limits=limits)
    if not streamed:
        return Runner.run_sync(agent, "A1?", run_config=config)

    async def main():
        result = Runner.run_streamed(agent, "A1?", run_config=config)
        async for _ in result.stream_events():
            pass
        return result
    return asyncio.run(main())


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_the_tokens_of_an_answer_set_aside_count_in_the_runs_usage_and_against_its_limits(server, streamed):
    reply_billed(server, "responses", streamed, "Sure! It is A1.", (1000, 500))
    reply_billed(server, "responses", streamed, '{"response": {"order_id": "A1"}}', (1100, 20))
    result = run(Agent(name="Desk", output_type=Order, model=model("responses", server)), streamed)
    assert result.final_output == Order("A1") and len(server.requests) == 2
    usage = result.context_wrapper.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2100, 520, 2620)

    @function_tool
    def get_order_status(order_id: str) -> str:
        return "shipped"

    reply_billed(server, "responses", streamed, "Let me look.", (10, 500))  # set aside: 500 output tokens billed
    reply_billed(server, "responses", streamed, ORDER, (10, 20))
    agent = Agent(name="Desk", output_type=Order, tools=[get_order_status], model=model("responses", server, "b"))
    with pytest.raises(UsageLimitExceeded, match="output_tokens_limit=500"):  # 520 spent: no third request
        run(agent, streamed, UsageLimits(output_tokens_limit=500))
    assert len(server.requests) == 4


# --- What an attack found: an empty text beside a call was taken for an output schema ignored --------------------


def reply_items(server, streamed, items):
    server.reply_sse(response_events(items)) if streamed else server.reply(response_obj(items))


@settings(max_examples=20, deadline=None)
@given(beside=st.one_of(st.text(" \t\r\n", max_size=4), st.sampled_from(["Let me look that up.", "{"])),
       streamed=st.booleans())
def test_a_turn_of_calls_or_an_empty_text_is_no_sign_of_the_output_schema_ignored(beside, streamed):
    """Whether the server read `text.format` shows only in a text the run reads as the output: a turn of calls
    (with an empty, blank or commentary text beside them) is not resent, and nothing is remembered from it."""
    from openai_server import OpenAITestServer

    endpoint._accepted_forms.clear()
    server = OpenAITestServer()
    try:
        items = [text_item(beside), ORDER]
        reply_items(server, streamed, items)
        out, _ = ask(model("responses", server), streamed, ModelSettings(), SCHEMA)
        assert calls(out) == ["get_order_status"] and len(server.requests) == 1
        reply_items(server, streamed, [text_item(" \n")])  # no call, no text: no sign either
        ask(model("responses", server), streamed, ModelSettings(), SCHEMA)
        assert len(server.requests) == 2 and "JSON schema" not in json.dumps(server.bodies)
        assert endpoint._accepted_forms == {}
    finally:
        server.close()


def test_a_stream_after_a_turn_of_calls_is_still_held_until_its_answer_shows_the_schema_read(server):
    """A first turn of calls teaches nothing, so the streamed answer after it is held back: it shows the schema
    ignored, and the reader gets only the answer to the request sent again with the schema in the instructions."""

    @function_tool
    def get_order_status(order_id: str) -> str:
        return "shipped"

    reply_items(server, True, [ORDER])
    reply_items(server, True, [text_item(IGNORED_ANSWER)])
    reply_items(server, True, [text_item('{"response": {"order_id": "A1"}}')])
    agent = Agent(name="Desk", output_type=Order, tools=[get_order_status], model=model("responses", server))
    result = run(agent, True)
    assert result.final_output == Order("A1") and len(server.requests) == 3
    assert ["JSON schema" in (body.get("instructions") or "") for body in server.bodies] == [False, False, True]
    assert IGNORED_ANSWER not in json.dumps([r.output for r in result.raw_responses])
