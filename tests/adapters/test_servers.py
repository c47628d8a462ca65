"""The servers people run refuse different forms of "this assistant message has no text": a whole tool-using
run, plain and streamed, passes against an emulation of each (tests/openai_server.py `EMULATED`), through the
public API only; the form that worked is remembered per base URL and model for the rest of the process."""
import asyncio

import pytest

from miniagents import Agent, ModelHTTPError, OpenAIChatCompletionsModel, Runner, function_tool
from miniagents.models import chat_completions
from openai_server import EMULATED, chat_chunks, chat_completion, sse

lookups = []


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    lookups.append(city)
    return f"Sunny in {city}"


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    """Each test starts with no remembered content form (the memory is per process)."""
    monkeypatch.setattr(chat_completions, "_accepted_forms", {})
    lookups.clear()


def script(server, streamed):
    """One run's replies: a tool call (no text), then the final answer."""
    call = [("call_1", "get_weather", '{"city": "Paris"}')]
    if streamed:
        server.reply_sse(sse(*chat_chunks(None, call))).reply_sse(sse(*chat_chunks("It is sunny in Paris.")))
    else:
        server.reply(chat_completion(None, call)).reply(chat_completion("It is sunny in Paris."))


def run(server, streamed, **model_options):
    model = OpenAIChatCompletionsModel("smol", base_url=server.url, api_key="sk-test", **model_options)
    agent = Agent(name="Weather", instructions="Answer briefly.", tools=[get_weather], model=model)
    if not streamed:
        return Runner.run_sync(agent, "Weather in Paris?").final_output

    async def main():
        result = Runner.run_streamed(agent, "Weather in Paris?")
        async for _ in result.stream_events():
            pass
        return result.final_output.strip()  # streamed text arrives word by word, each with its space
    return asyncio.run(main())


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
    monkeypatch.setitem(chat_completions._accepted_forms, (server.url, "smol"), {"content": ""})
    server.emulate("bedrock-gateway")
    script(server, streamed)
    assert run(server, streamed) == "It is sunny in Paris."
    assert [assistant_content(r) for r in server.requests[1:]] == ["", None]
    assert chat_completions._accepted_forms[(server.url, "smol")] == {"content": None}


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
    from miniagents import OpenAIProvider

    assert OpenAIProvider(base_url=server.url, tool_call_content="").get_model("m").tool_call_content == ""
    assert OpenAIProvider(base_url=server.url).get_model("m").tool_call_content == "auto"
