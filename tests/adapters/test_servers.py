"""The servers people run refuse different forms of "this assistant message has no text", and some refuse
structured output asked for as `json_schema`: a whole run, plain and streamed, passes against an emulation of
each (tests/openai_server.py `EMULATED`), through the public API only; the form that worked is remembered per
base URL and model for the rest of the process."""
import asyncio
import json
from dataclasses import dataclass

import pytest

from miniagents import Agent, ModelHTTPError, OpenAIChatCompletionsModel, Runner, function_tool
from miniagents.models import chat_completions, endpoint
from openai_server import EMULATED, chat_chunks, chat_completion, sse

lookups = []


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    lookups.append(city)
    return f"Sunny in {city}"


def chat_key(server):
    """Where the forms an endpoint took are remembered: (API path, base URL, model)."""
    return ("/chat/completions", server.url, "smol")


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    """Each test starts with no remembered content form (the memory is per process)."""
    monkeypatch.setattr(endpoint, "_accepted_forms", {})
    lookups.clear()


def script(server, streamed):
    """One run's replies: a tool call (no text), then the final answer."""
    call = [("call_1", "get_weather", '{"city": "Paris"}')]
    if streamed:
        server.reply_sse(sse(*chat_chunks(None, call))).reply_sse(sse(*chat_chunks("It is sunny in Paris.")))
    else:
        server.reply(chat_completion(None, call)).reply(chat_completion("It is sunny in Paris."))


def final_output(agent, streamed):
    """The answer to "Weather in Paris?", from `run_sync` or from a streamed run read to its end."""
    if not streamed:
        return Runner.run_sync(agent, "Weather in Paris?").final_output

    async def main():
        result = Runner.run_streamed(agent, "Weather in Paris?")
        async for _ in result.stream_events():
            pass
        return result.final_output
    return asyncio.run(main())


def run(server, streamed, **model_options):
    model = OpenAIChatCompletionsModel("smol", base_url=server.url, api_key="sk-test", **model_options)
    agent = Agent(name="Weather", instructions="Answer briefly.", tools=[get_weather], model=model)
    answer = final_output(agent, streamed)
    return answer.strip() if streamed else answer  # streamed text arrives word by word, each with its space


def assistant_content(request):
    """The content the request's tool-call assistant message carried ('<missing>' when it had none)."""
    [message] = [m for m in request["body"]["messages"] if m.get("tool_calls")]
    return message.get("content", "<missing>")


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name,accepted", [("llama-cpp-python", ""), ("ollama", "")])
def test_a_server_that_refuses_null_gets_the_empty_string_once_and_the_form_is_remembered(
        server, name, accepted, streamed):
    server.emulate(name)
    script(server, streamed)
    assert run(server, streamed) == "It is sunny in Paris." and lookups == ["Paris"]
    first, refused, resent = server.requests
    assert "refused" not in first and "tool_calls" not in str(first["body"]["messages"])
    assert assistant_content(refused) is None and refused["refused"]["status"] in (400, 500)
    assert assistant_content(resent) == accepted and "refused" not in resent
    assert refused["body"] == {**resent["body"], "messages": [
        {**m, "content": None} if m.get("tool_calls") else m for m in resent["body"]["messages"]]}

    script(server, streamed)  # a second run in the same process (a new model object) sends "" at once
    assert run(server, streamed) == "It is sunny in Paris."
    later = server.requests[3:]
    assert len(later) == 2 and all("refused" not in r for r in later)
    assert assistant_content(later[1]) == accepted


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_gateway_that_refuses_the_empty_string_gets_null(server, streamed):
    server.emulate("bedrock-gateway")
    script(server, streamed)
    assert run(server, streamed) == "It is sunny in Paris."
    assert [assistant_content(r) for r in server.requests[1:]] == [None]
    assert not any("refused" in r for r in server.requests)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_remembered_empty_string_that_a_gateway_refuses_falls_back_to_null(server, monkeypatch, streamed):
    monkeypatch.setitem(endpoint._accepted_forms, chat_key(server), {"content": ""})
    server.emulate("bedrock-gateway")
    script(server, streamed)
    assert run(server, streamed) == "It is sunny in Paris."
    assert [assistant_content(r) for r in server.requests[1:]] == ["", None]
    assert endpoint._accepted_forms[chat_key(server)] == {"content": None}


def test_a_forced_form_is_never_resent_and_a_validation_error_is_never_retried(server):
    server.emulate("llama-cpp-python")
    script(server, streamed=False)
    with pytest.raises(ModelHTTPError) as info:
        run(server, False, tool_call_content=None)
    assert len(server.requests) == 2  # the refused request went out once: no retry, no resend
    assert info.value.status == 500 and "validation errors" in info.value.message
    assert "(POST http://127.0.0.1:" in str(info.value) and "/v1/chat/completions, 1 attempt)" in str(info.value)


def test_a_forced_empty_string_is_sent_as_is(server):
    server.emulate("llama-cpp-python")
    script(server, streamed=False)
    assert run(server, False, tool_call_content="") == "It is sunny in Paris."
    assert [assistant_content(r) for r in server.requests[1:]] == [""]


def test_when_both_forms_are_refused_the_error_says_so(server):
    server.judge = lambda body: EMULATED["ollama"](body) or EMULATED["bedrock-gateway"](body)
    script(server, streamed=False)
    with pytest.raises(ModelHTTPError) as info:
        run(server, False)
    assert [assistant_content(r) for r in server.requests[1:]] == [None, ""]
    text = str(info.value)
    assert "text content blocks must be non-empty" in text
    assert "assistant content null was refused first: invalid message content type: <nil>" in text


def test_an_error_that_is_not_about_content_is_not_resent(server):
    script(server, streamed=False)
    server.replies.insert(1, {"status": 400, "json": {"error": {"message": "context_length_exceeded"}}})
    with pytest.raises(ModelHTTPError, match="context_length_exceeded"):
        run(server, False)
    assert len(server.requests) == 2


def test_a_content_filters_refusal_is_not_taken_for_a_refused_content_form_and_not_resent(server):
    script(server, streamed=False)
    server.replies.insert(1, {"status": 400, "json": {"error": {
        "message": "The message content was blocked by the content_filter", "code": "content_filter"}}})
    with pytest.raises(ModelHTTPError, match="content_filter"):
        run(server, False)
    assert len(server.requests) == 2 and endpoint._accepted_forms == {}



def test_a_content_refusal_of_a_request_with_no_text_less_message_is_not_resent(server):
    # Only a text-less assistant message has another form to try; an assistant message with text has none.
    server.replies.append({"status": 400, "json": {"error": {"message": "'content' field must be a string"}}})
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
               {"role": "user", "content": "Weather in Paris?"}]
    model = OpenAIChatCompletionsModel("smol", base_url=server.url, api_key="sk-test")
    with pytest.raises(ModelHTTPError, match="must be a string"):
        Runner.run_sync(Agent(name="Weather", model=model), history)
    assert len(server.requests) == 1

def test_the_option_is_checked():
    with pytest.raises(ValueError, match="tool_call_content"):
        OpenAIChatCompletionsModel("m", base_url="http://localhost:1/v1", tool_call_content="none")


def test_llama_cpp_python_also_refuses_a_missing_content(server):
    """The emulation matches the real server on the third form too (why the adapter never omits it)."""
    server.emulate("llama-cpp-python")
    status, body = EMULATED["llama-cpp-python"]({"messages": [{"role": "assistant", "tool_calls": []}]})
    assert status == 500 and "has no attribute 'content'" in body["error"]["message"]


def test_the_provider_passes_the_option_on(server):
    from miniagents.upstream.providers import OpenAIProvider

    assert OpenAIProvider(base_url=server.url, tool_call_content="").get_model("m").tool_call_content == ""
    assert OpenAIProvider(base_url=server.url).get_model("m").tool_call_content == "auto"


# --------------------------------------------------------------------------- response_format: json_schema, json_object


@dataclass
class Forecast:
    city: str
    sky: str


FORECAST = '{"response": {"city": "Paris", "sky": "sunny"}}'


def forecast_run(server, streamed, tools=(), **model_options):
    model = OpenAIChatCompletionsModel("smol", base_url=server.url, api_key="sk-test", **model_options)
    agent = Agent(name="Forecaster", instructions="Answer briefly.", output_type=Forecast, tools=list(tools),
                  model=model)
    return final_output(agent, streamed)


def reply_forecast(server, streamed):
    if streamed:
        server.reply_sse(sse(*chat_chunks(FORECAST)))
    else:
        server.reply(chat_completion(FORECAST))


def json_object_form(body):
    """The schema the json_object form carries, checked against what it states in the system message."""
    assert body["response_format"]["type"] == "json_object" and "json_schema" not in body["response_format"]
    schema = body["response_format"]["schema"]
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"] == (
        "Answer briefly.\n\nReply with one JSON object, and nothing else, that matches this JSON schema: "
        + json.dumps(schema))
    return schema


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_server_that_refuses_json_schema_gets_json_object_once_and_the_form_is_remembered(server, streamed):
    server.emulate("llama-cpp-python")
    reply_forecast(server, streamed)
    assert forecast_run(server, streamed) == Forecast("Paris", "sunny")
    refused, resent = server.requests
    assert refused["refused"]["status"] == 500 and "refused" not in resent
    message = refused["refused"]["json"]["error"]["message"]
    assert "('body', 'response_format', 'type')" in message and "Input should be 'text' or 'json_object'" in message
    sent_format = refused["body"]["response_format"]
    assert sent_format["type"] == "json_schema" and json_object_form(resent["body"]) == sent_format["json_schema"][
        "schema"]
    assert refused["body"]["messages"][0] == {"role": "system", "content": "Answer briefly."}

    reply_forecast(server, streamed)  # a second run in the same process (a new model object): json_object at once
    assert forecast_run(server, streamed) == Forecast("Paris", "sunny")
    [later] = server.requests[2:]
    assert "refused" not in later and json_object_form(later["body"])


def test_a_refusal_of_both_forms_at_once_switches_both_in_one_resend(server):
    server.emulate("llama-cpp-python")  # it reports every validation error of a request at once
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
               {"type": "function_call_output", "call_id": "call_1", "output": "Sunny in Paris"}]
    server.reply(chat_completion(FORECAST))
    model = OpenAIChatCompletionsModel("smol", base_url=server.url, api_key="sk-test")
    agent = Agent(name="Forecaster", instructions="Answer briefly.", output_type=Forecast, model=model)
    assert Runner.run_sync(agent, history).final_output == Forecast("Paris", "sunny")
    refused, resent = server.requests
    assert "5 validation errors" in refused["refused"]["json"]["error"]["message"]
    assert assistant_content(refused) is None and refused["body"]["response_format"]["type"] == "json_schema"
    assert assistant_content(resent) == "" and json_object_form(resent["body"]) and "refused" not in resent
    assert endpoint._accepted_forms[chat_key(server)] == {"content": "", "response_format": "json_object"}


def test_a_forced_json_schema_is_never_resent(server):
    server.emulate("llama-cpp-python")
    with pytest.raises(ModelHTTPError) as info:
        forecast_run(server, False, response_format_type="json_schema")
    assert len(server.requests) == 1 and info.value.status == 500 and "1 validation error:" in info.value.message
    assert "/v1/chat/completions, 1 attempt)" in str(info.value)  # a validation error: not retried either


def test_a_forced_json_object_is_sent_at_once(server):
    server.emulate("llama-cpp-python")
    reply_forecast(server, False)
    assert forecast_run(server, False, response_format_type="json_object") == Forecast("Paris", "sunny")
    [request] = server.requests
    assert json_object_form(request["body"]) and endpoint._accepted_forms == {}


def test_a_remembered_json_object_that_a_server_refuses_goes_back_to_json_schema(server, monkeypatch):
    monkeypatch.setitem(endpoint._accepted_forms, chat_key(server), {"response_format": "json_object"})
    server.emulate("lm-studio")
    reply_forecast(server, False)
    assert forecast_run(server, False) == Forecast("Paris", "sunny")
    refused, resent = server.requests
    assert refused["refused"]["json"]["error"]["message"] == "'response_format.type' must be 'json_schema' or 'text'"
    assert resent["body"]["response_format"]["type"] == "json_schema"
    assert resent["body"]["messages"][0] == {"role": "system", "content": "Answer briefly."}  # no schema note
    assert endpoint._accepted_forms[chat_key(server)] == {"response_format": "json_schema"}


def test_a_refused_schema_is_not_resent_as_json_object(server):
    server.reply({"error": {"message": "Invalid schema for response_format 'final_output': In context=(), "
                                       "'additionalProperties' is required to be supplied and to be false.",
                            "type": "invalid_request_error", "param": "response_format"}}, status=400)
    with pytest.raises(ModelHTTPError, match="Invalid schema for response_format"):
        forecast_run(server, False)
    assert len(server.requests) == 1


def test_when_both_response_formats_are_refused_the_error_says_so(server):
    server.judge = lambda body: EMULATED["llama-cpp-python"](body) or EMULATED["lm-studio"](body)
    with pytest.raises(ModelHTTPError) as info:
        forecast_run(server, False)
    assert [r["body"]["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    text = str(info.value)
    assert text.startswith("HTTP 400: type=invalid_request_error 'response_format.type' must be 'json_schema' or "
                           "'text' (POST ")
    assert "[sent twice: response_format json_schema was refused first: 1 validation error:" in text
    assert endpoint._accepted_forms == {}


def test_a_request_without_an_output_schema_is_unchanged_by_a_remembered_json_object(server, monkeypatch):
    monkeypatch.setitem(endpoint._accepted_forms, chat_key(server), {"response_format": "json_object"})
    script(server, streamed=False)
    assert run(server, False) == "It is sunny in Paris."
    assert all("response_format" not in r["body"] for r in server.requests)
    assert server.requests[0]["body"]["messages"][0] == {"role": "system", "content": "Answer briefly."}


def test_the_response_format_option_is_checked_and_passed_on_by_the_provider(server):
    from miniagents.upstream.providers import OpenAIProvider

    with pytest.raises(ValueError, match="response_format_type must be 'auto', 'json_schema' or 'json_object'"):
        OpenAIChatCompletionsModel("m", base_url="http://localhost:1/v1", response_format_type="json")
    model = OpenAIProvider(base_url=server.url, response_format_type="json_object").get_model("m")
    assert model.response_format_type == "json_object"
    assert OpenAIProvider(base_url=server.url).get_model("m").response_format_type == "auto"


def test_a_tool_using_structured_run_on_llama_cpp_python_learns_each_form_once(server):
    server.emulate("llama-cpp-python")
    call = [("call_1", "get_weather", '{"city": "Paris"}')]
    for _ in range(2):
        server.reply(chat_completion(None, call)).reply(chat_completion(FORECAST))
    assert forecast_run(server, False, tools=[get_weather]) == Forecast("Paris", "sunny")
    assert ["refused" in r for r in server.requests] == [True, False, True, False]  # format, then content
    assert forecast_run(server, False, tools=[get_weather]) == Forecast("Paris", "sunny")
    later = server.requests[4:]
    assert len(later) == 2 and not any("refused" in r for r in later)
    assert json_object_form(later[0]["body"]) and assistant_content(later[1]) == ""
