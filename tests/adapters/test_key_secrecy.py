"""The API key never appears in an exception (text, repr, args, fields, chained causes), a log line or a run's
`run_data`, whatever a server echoes back on any error path of either adapter, plain or streamed; and a key
that cannot be sent at all is refused without being quoted."""
import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, AgentsException, Runner, UserError
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import OpenAITestServer, chat_chunks, chat_completion

KEY = "sk-proj-Q7kd93jfKEYx81"


def leaks(err: BaseException) -> list:
    """Every text an exception exposes (itself and its causes) that contains the key."""
    found, seen = [], err
    while seen is not None:
        texts = [str(seen), repr(seen), repr(seen.args)] + [
            json.dumps(getattr(seen, name), default=repr, ensure_ascii=False)
            for name in ("message", "type", "code", "param", "request_id", "body", "retry_headers")
            if hasattr(seen, name)]
        if getattr(seen, "run_data", None) is not None:
            texts.append(repr(seen.run_data))
        found += [t for t in texts if KEY in t]
        seen = seen.__cause__ or seen.__context__
    return found


def around(text_before: str) -> str:
    return f"{text_before}{KEY} is not valid, {KEY}"


# One scenario = (reply kwargs for the test server, streamed?). Each echoes the key somewhere a server might.
def plain(status, **kw):
    return ({"status": status, **kw}, False)


def streamed(*lines):
    return ({"sse": list(lines)}, True)


def data(value):
    return "data: " + (value if isinstance(value, str) else json.dumps(value)) + "\n\n"


pad = st.sampled_from(["", "Incorrect API key provided: ", "x" * 1990, "x" * 1998, "x" * 2005])
SCENARIOS = [
    lambda p: plain(401, json={"error": {"message": around(p), "type": KEY, "code": KEY, "param": KEY}},
                    headers={"x-request-id": KEY, "retry-after": f"Bearer {KEY}"}),
    lambda p: plain(500, json={"error": {"message": around(p)}}),
    lambda p: plain(400, raw=around(p)),
    lambda p: plain(502, raw=f"<html><body><h1>{around(p)}</h1></body></html>", content_type="text/html"),
    lambda p: plain(400, json={KEY: {"nested": [around(p)]}}),
    lambda p: plain(200, json={"error": {"message": around(p), "code": 500}}),
    lambda p: plain(200, json={"object": "error", "message": around(p), "code": 400}),
    lambda p: plain(200, raw=around(p) + " {"),
    lambda p: plain(200, json={"choices": around(p)}),
    lambda p: plain(200, json={"choices": [{"index": 0, "message": {"content": [{"text": 5}], "refusal": KEY}}]}),
    lambda p: plain(200, json={"choices": [{"message": {"tool_calls": [{"id": KEY, "function": {"name": ""}}]}}]}),
    lambda p: plain(200, json={"status": "incomplete", "incomplete_details": {"reason": around(p)}, "output": []}),
    lambda p: plain(200, json={"status": "failed", "error": {"message": around(p), "code": KEY}, "output": []}),
    lambda p: plain(200, json={"output": around(p)}),
    lambda p: plain(200, json={"output": [{"type": "function_call", "name": KEY, "arguments": 7}]}),
    lambda p: plain(200, json={"usage": {"input_tokens": around(p)}, "choices": [], "output": []}),
    lambda p: streamed(data({"error": {"message": around(p), "code": 502}})),
    lambda p: streamed(data(chat_chunks("hi")[0]), data(around(p))),
    lambda p: streamed(data({"type": "error", "message": around(p), "code": KEY})),
    lambda p: streamed(data({"type": "response.failed", "response": {"error": {"message": around(p)}}})),
    lambda p: streamed(data({"type": "response.incomplete", "response": {"incomplete_details": {"reason": around(p)}}})),
    lambda p: streamed(data({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": KEY}]}}]})),
    lambda p: streamed(data({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": KEY}]},
                                          "finish_reason": "tool_calls"}]})),  # a call with no name
    lambda p: streamed(data({"type": "response.completed", "response": {"output": [{"type": KEY, "x": around(p)}],
                                                                         "usage": {"input_tokens": KEY}}})),
    lambda p: streamed(data({"choices": [{"index": 0, "delta": {"content": around(p)}}]})),  # then truncated
    lambda p: plain(404, json={"detail": around(p)}),
    lambda p: plain(422, json={"detail": [{"loc": ["body", KEY], "msg": around(p), "input": KEY}, around(p)]}),
    lambda p: plain(400, json=[{"error": {"message": around(p), "status": KEY}}]),
    lambda p: plain(200, raw=f"<html><title>{around(p)}</title><body>{KEY}</body></html>", content_type="text/html"),
    lambda p: ({"status": 200, "raw": f"<html><h1>{around(p)}</h1></html>", "content_type": "text/html"}, True),
    lambda p: ({"status": 200, "json": {"error": {"message": around(p), "code": KEY}}}, True),  # JSON, no stream
    lambda p: plain(200, raw=around(p), content_type="text/plain"),
    lambda p: ({"wire": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10000000000000\r\n\r\n"
                        + around(p).encode()}, False),  # over the size limit
]


@pytest.fixture(scope="module")
def key_server():
    srv = OpenAITestServer()
    yield srv
    srv.close()


@given(scenario=st.sampled_from(SCENARIOS), prefix=pad, adapter=st.sampled_from(["chat", "responses"]),
       key_in_url=st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_error_path_shows_the_key(key_server, caplog, scenario, prefix, adapter, key_in_url):
    reply, is_stream = scenario(prefix)
    key_server.replies[:] = [dict(reply) for _ in range(3)]  # enough for every retry
    base_url = key_server.url + (f"/{KEY}/v1" if key_in_url else "")
    cls = OpenAIChatCompletionsModel if adapter == "chat" else OpenAIResponsesModel
    model = cls("m", base_url=base_url, api_key=KEY)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        try:
            if is_stream:
                list(model.stream_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, []))
            else:
                model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
        except AgentsException as err:
            assert leaks(err) == []
    assert KEY not in caplog.text and KEY not in repr(model) and KEY not in repr(model.transport)


def test_a_failed_run_keeps_the_key_out_of_the_error_and_its_run_data(key_server):
    key_server.replies[:] = [{"status": 401, "json": {"error": {"message": around("Incorrect API key: ")}}}]
    agent = Agent(name="A", model=OpenAIChatCompletionsModel("m", base_url=key_server.url, api_key=KEY))
    with pytest.raises(AgentsException) as info:
        Runner.run_sync(agent, "hi")
    assert leaks(info.value) == []
    assert "Incorrect API key: *** is not valid, ***" in str(info.value)  # marked where it was, not just cut


@pytest.mark.parametrize("bad", [KEY + "\n", KEY + " ", " " + KEY, KEY[:6] + "é☃" + KEY[6:], KEY + "\x00",
                                 KEY[:4] + "\u2028" + KEY[4:]])
@pytest.mark.parametrize("cls", [OpenAIChatCompletionsModel, OpenAIResponsesModel])
def test_a_key_that_cannot_go_in_a_header_is_refused_without_being_quoted(bad, cls):
    model = cls("m", base_url="http://127.0.0.1:9/v1", api_key=bad)
    with pytest.raises(UserError) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert "cannot be sent in an HTTP header" in str(info.value)
    assert all(KEY[:8] not in text and KEY[-8:] not in text for text in (str(info.value), repr(info.value.args)))
    assert info.value.__cause__ is None and info.value.__context__ is None


@pytest.mark.parametrize("latin1", ["\u00ff", "\u00e9", "\u00a1", "\u00a1\u00e9\u00ff"])
def test_a_key_with_latin1_letters_up_to_u00ff_is_sent_as_written(key_server, latin1):
    """A header carries Latin-1: a key holding its printable letters, up to the last (U+00FF), reaches the server
    byte for byte; only what is past it (or a space, a control character) is refused."""
    key = KEY[:6] + latin1 + KEY[6:]
    key_server.replies[:] = [{"status": 200, "json": chat_completion("ok")}]
    del key_server.requests[:]
    model = OpenAIChatCompletionsModel("m", base_url=key_server.url, api_key=key)
    model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert [r["headers"]["authorization"] for r in key_server.requests] == [f"Bearer {key}"]


@pytest.mark.parametrize("bad", [5, KEY.encode()])
def test_a_key_that_is_no_text_is_a_user_error_where_it_is_set_or_sent_without_being_quoted(bad):
    """A key read as bytes (or a number): a bare TypeError or AttributeError out of the run's first request, and
    `set_default_openai_key` took it silently."""
    from miniagents.models.connection import set_default_endpoint

    with pytest.raises(UserError, match="must be text, got") as info:
        set_default_endpoint(api_key=bad)
    model = OpenAIResponsesModel("m", base_url="http://127.0.0.1:9/v1", api_key=bad)
    with pytest.raises(UserError, match="must be text, got") as sent:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert all(KEY[:8] not in str(error.value) for error in (info, sent))


def test_a_refused_form_resent_and_refused_again_keeps_the_key_out_of_both_messages(key_server):
    refusal = {"error": {"message": "response_format: use 'json_object' " + around("key "), "code": KEY}}
    key_server.replies[:] = [{"status": 400, "json": refusal}, {"status": 401, "json": refusal}]
    schema = {"name": "final_output", "strict": True, "schema": {"type": "object", "properties": {},
                                                                 "required": [], "additionalProperties": False}}
    model = OpenAIChatCompletionsModel("leaky", base_url=key_server.url, api_key=KEY)
    with pytest.raises(AgentsException) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], schema, [])
    assert "response_format json_schema was refused first" in str(info.value)
    assert leaks(info.value) == []


# --- What an attack found: a secret echoed percent-encoded, a credential header with a stray newline ------------


@pytest.mark.parametrize("how, secret, echoed", [
    ("api_key", "sk-ab/cd+ef=gh0123456789", "sk-ab%2Fcd%2Bef%3Dgh0123456789"),  # as a query value carries it
    ("api_key", "sk-ab/cd+ef=gh0123456789", "sk-ab%2fcd%2Bef%3dgh0123456789"),  # its hex's cases mixed
    ("api_key", "p@ss/w+rd0123", "p%40ss/w%2Brd0123"),  # as a path keeps its slashes
    ("extra_query", "ab/cd+ef== x", "ab%2Fcd%2Bef%3D%3D+x"),  # as urlencode sent it
])
def test_a_secret_a_server_echoes_percent_encoded_is_hidden(server, how, secret, echoed):
    server.reply({"error": {"message": f"bad key {echoed}"}}, status=401)
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=secret if how == "api_key" else KEY,
                                       max_retries=0)
    settings = ModelSettings(extra_query={"key": secret} if how == "extra_query" else None)
    with pytest.raises(AgentsException) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], settings, [], None, [])
    assert echoed not in str(info.value) and "bad key ***" in str(info.value)


@pytest.mark.parametrize("where", ["default_headers", "extra_headers"])
def test_a_header_that_cannot_be_sent_is_a_user_error_naming_it_never_quoting_it(server, where):
    headers = {"X-Goog-Api-Key": "AIzaSECRETVALUE99\n"}
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=KEY, max_retries=0,
                                       **({"default_headers": headers} if where == "default_headers" else {}))
    settings = ModelSettings(extra_headers=headers if where == "extra_headers" else None)
    with pytest.raises(UserError, match="The header 'X-Goog-Api-Key' has a character that cannot be sent") as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], settings, [], None, [])
    assert "AIzaSECRET" not in str(info.value) and server.requests == []


@pytest.mark.parametrize("where", ["default_headers", "extra_headers"])
@pytest.mark.parametrize("headers", [{"X-Trace": None}, {7: "a"}, {"": "a"}, {"X-Trace:": "a"}, {" X-Trace": "a"}])
def test_a_header_http_client_cannot_send_is_a_user_error_before_anything_is_sent(server, where, headers):
    """A value None was a bare TypeError from inside http.client, a name of another type an AttributeError, an
    empty name or one with a colon a "connection error", retried."""
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=KEY, max_retries=2,
                                       **({"default_headers": headers} if where == "default_headers" else {}))
    settings = ModelSettings(extra_headers=headers if where == "extra_headers" else None)
    with pytest.raises(UserError, match=f"The header {str(next(iter(headers)))!r} cannot be sent"):
        model.get_response(None, [{"role": "user", "content": "hi"}], settings, [], None, [])
    assert server.requests == []


@pytest.mark.parametrize("escaped", [
    "".join(f"\\u{ord(ch):04x}" for ch in KEY),  # every character written as a JSON escape
    KEY[:3] + "".join(f"\\u{ord(ch):04X}" for ch in KEY[3:6]) + KEY[6:],  # a few, in capitals
])
@pytest.mark.parametrize("parses", [True, False])
def test_a_secret_a_server_echoes_as_json_escapes_is_hidden_when_its_body_does_not_parse_too(server, escaped, parses):
    server.reply(raw='{"error": {"message": "bad key ' + escaped + ('"}}' if parses else '"'), status=401)
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=KEY, max_retries=0)
    with pytest.raises(AgentsException) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert not leaks(info.value) and escaped not in str(info.value) and "bad key ***" in str(info.value)


def test_a_secret_a_server_echoes_in_a_retry_header_is_hidden_there(server):
    """retry_headers is kept on the error for a retry policy (and shown by whoever prints it): redacted as the
    request id is, not as the server sent it."""
    server.reply({"error": {"message": "bad"}}, status=400, headers={"retry-after": f"Bearer {KEY}",
                                                                     "x-should-retry": "false"})
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=KEY, max_retries=0)
    with pytest.raises(AgentsException) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert info.value.retry_headers == {"retry-after": "***", "x-should-retry": "false"}  # the header sent, whole


def test_an_error_body_of_many_strings_has_its_secrets_forms_worked_out_once_not_once_per_string(server, monkeypatch):
    """A server's 400 that echoes a long request back (FastAPI's errors quote each field's input): every string of
    it is searched for the key, with the key's forms (percent-encoded, ...) worked out once for the whole body; per
    string, 20,000 strings cost as much as it, and an error body at the size cap took minutes."""
    from miniagents.models import protocol
    calls = []
    monkeypatch.setattr(protocol, "secret_values", lambda secret, _real=protocol.secret_values: (
        calls.append(1), _real(secret))[1])
    server.reply({"error": {"message": "bad", "detail": [{"input": f"x{i}"} for i in range(10_000)] + [KEY]}},
                 status=400)
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key=KEY, max_retries=0)
    with pytest.raises(AgentsException) as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert info.value.body["error"]["detail"][-1] == "***" and not leaks(info.value)
    assert len(calls) < 20
