"""Transport (retries, error bodies, timeouts, keep-alive, SSE framing) and the provider."""
import gc
import os
import socket
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

import miniagents
from miniagents.errors import AgentsException, ModelHTTPError, ModelTimeoutError, UserError
from miniagents.models import http, protocol
from miniagents.models import connection as connection_mod
from miniagents.upstream import providers as provider_mod
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.provider import DefaultProvider
from miniagents.upstream.providers import OpenAIProvider, set_default_openai_api, set_default_openai_key
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import chat_chunks, chat_completion, sse

USER = [{"role": "user", "content": "hi"}]


def chat(server, **kw):
    return OpenAIChatCompletionsModel("m", base_url=server.url, api_key="sk-secret-123", **kw)


def ask(m, settings=None):
    return m.get_response(None, USER, settings or ModelSettings(), [], None, [])


def text_of(resp):
    return resp.output[0]["content"][0]["text"]

# --------------------------------------------------------------------------- retries over sockets


def test_429_with_retry_after_is_retried_and_then_succeeds(server, monkeypatch):
    slept = []
    monkeypatch.setattr(http.CancelSwitch, "sleep", lambda switch, seconds: slept.append(seconds))
    server.reply({"error": {"message": "Rate limit", "code": "rate_limit_exceeded"}}, status=429,
                 headers={"retry-after": "0.01"}).reply(chat_completion("ok"))
    assert text_of(ask(chat(server))) == "ok"
    assert len(server.requests) == 2 and slept == [0.01]
    assert len({r["client_port"] for r in server.requests}) == 1  # retried on its connection, none left open aside


def test_500_then_success(server):
    server.reply({"error": {"message": "oops"}}, status=500).reply(chat_completion("ok"))
    assert text_of(ask(chat(server))) == "ok"


def test_retries_exhausted_gives_the_last_error(server):
    for _ in range(3):
        server.reply({"error": {"message": "overloaded", "type": "server_error"}}, status=503)
    with pytest.raises(ModelHTTPError, match="overloaded") as info:
        ask(chat(server))
    assert info.value.status == 503 and len(server.requests) == 3  # max_retries=2 → 3 attempts


def test_insufficient_quota_429_is_not_retried(server):
    server.reply({"error": {"message": "You exceeded your quota", "type": "insufficient_quota",
                            "code": "insufficient_quota"}}, status=429)
    with pytest.raises(ModelHTTPError, match="quota"):
        ask(chat(server))
    assert len(server.requests) == 1


def test_x_should_retry_overrides_status(server):
    server.reply({"error": {"message": "no"}}, status=500, headers={"x-should-retry": "false"})
    with pytest.raises(ModelHTTPError):
        ask(chat(server))
    server.reply({"error": {"message": "again"}}, status=400, headers={"x-should-retry": "true"})
    server.reply(chat_completion("ok"))
    assert text_of(ask(chat(server))) == "ok" and len(server.requests) == 3


def test_retry_after_beyond_cap_fails_fast(server):
    server.reply({"error": {"message": "later"}}, status=429, headers={"retry-after": "3600"})
    started = time.monotonic()
    with pytest.raises(ModelHTTPError):
        ask(chat(server))
    assert len(server.requests) == 1 and time.monotonic() - started < 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_fail_at_once(server, status):
    server.reply({"error": {"message": "bad"}}, status=status)
    with pytest.raises(ModelHTTPError):
        ask(chat(server))
    assert len(server.requests) == 1


def test_html_502_page_gives_readable_error(server):
    page = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
    for _ in range(3):
        server.reply(status=502, raw=page, content_type="text/html")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server))
    assert info.value.status == 502 and "502 Bad Gateway" in info.value.message
    assert "<" not in info.value.message


@pytest.mark.parametrize("raw,expected", [(b"", "empty body"), (b"model not loaded", "model not loaded"),
                                          (b'{"error": "lm studio says no"}', "lm studio says no"),
                                          (b'{"object": "error", "message": "old vllm", "code": 400}', "old vllm")])
def test_error_bodies_of_every_shape(server, raw, expected):
    server.reply(status=400, raw=raw)
    with pytest.raises(ModelHTTPError, match=expected):
        ask(chat(server))


PYDANTIC_422 = {"detail": [{"type": "missing", "loc": ["body", "messages", 0, "content"], "msg": "Field required",
                            "input": {"role": "assistant"}},
                           {"type": "string_type", "loc": ["body", "model"], "msg": "Input should be a valid string",
                            "input": 7}]}


@pytest.mark.parametrize("status,body,expected", [
    (404, {"detail": "Not Found"}, "HTTP 404: Not Found"),
    (422, PYDANTIC_422, "HTTP 422: body.messages.0.content: Field required; body.model: Input should be a valid "
                        "string"),
    (400, [{"error": {"code": 400, "message": "Request contains an invalid argument.",
                      "status": "INVALID_ARGUMENT"}}], "HTTP 400: code=400 Request contains an invalid argument."),
    (400, {"error": None, "message": "a message beside a null error"}, "HTTP 400: a message beside a null error"),
    (400, {"detail": ["first", {"unexpected": 1}]}, 'HTTP 400: first; {"unexpected": 1}'),
], ids=["fastapi-detail-string", "fastapi-detail-pydantic-list", "gemini-list", "null-error-and-message",
        "detail-list-of-anything"])
def test_the_server_s_own_message_is_shown_from_every_common_error_shape(server, status, body, expected):
    server.reply(body, status=status)
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server))
    assert str(info.value).startswith(expected + " ")
    assert "empty body" not in str(info.value) and info.value.body == body


NGINX = ("<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1>"
         "<p>If you see this page, the nginx web server is successfully installed.</p></body></html>")


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_web_page_served_with_200_is_reported_as_not_json_with_the_base_url_to_check(server, streamed):
    server.reply(status=200, raw=NGINX, content_type="text/html")
    model = chat(server)
    with pytest.raises(ModelHTTPError) as info:
        list(model.stream_response(None, USER, ModelSettings(), [], None, [])) if streamed else ask(model)
    assert info.value.type == "invalid_response" and len(server.requests) == 1
    assert str(info.value).startswith(
        f"HTTP 200: type=invalid_response the answer is not JSON (text/html: Welcome to nginx! Welcome to nginx! If "
        f"you see this page, the nginx web server is successfully installed.); check that base_url='{server.url}' is "
        "an OpenAI-compatible API (its address usually ends in /v1) (POST ")


@pytest.mark.parametrize("cls", [OpenAIChatCompletionsModel, OpenAIResponsesModel])
@pytest.mark.parametrize("body,said", [
    ({"error": {"message": "model llama3 is not loaded"}}, "HTTP 200: model llama3 is not loaded ("),
    ({"object": "error", "message": "vLLM says no", "code": 400}, "HTTP 200: code=400 vLLM says no ("),
    (chat_completion("hi"), "HTTP 200: type=invalid_response the server answered a streamed request with "
                            "application/json, not an event stream: it ignores stream: true; call the model without "
                            "streaming ("),
    ({"id": "r", "status": "completed", "output": [], "error": None},
     "HTTP 200: type=invalid_response the server answered a streamed request with application/json"),
])
def test_a_streamed_request_answered_with_json_says_what_the_server_said_not_a_stream_cut_short(server, cls, body,
                                                                                                said):
    """A server that reports an error in a 200 JSON body, or ignores stream: true, sent no stream at all: its words
    (or that) are the error, with its status, which no retry rule retries; not a truncated stream."""
    server.reply(body)
    with pytest.raises(ModelHTTPError) as info:
        list(cls("m", base_url=server.url, api_key="sk-secret-123").stream_response(None, USER, ModelSettings(), [],
                                                                                   None, []))
    assert str(info.value).startswith(said) and info.value.status == 200 and len(server.requests) == 1


@pytest.mark.parametrize("raw,said", [(b"OK", "text/plain: OK"), (b"", "text/plain: an empty body"),
                                      (b"x" * 500, "text/plain: " + "x" * 200 + "…)")])
def test_any_plain_answer_that_is_not_json_says_so_and_is_cut_short(server, raw, said):
    server.reply(status=200, raw=raw, content_type="text/plain")
    with pytest.raises(ModelHTTPError, match="the answer is not JSON") as info:
        ask(chat(server))
    assert f"({said}" in str(info.value)


def test_slow_response_past_timeout_raises_model_timeout(server):
    server.reply(chat_completion("late"), delay=0.6).reply(chat_completion("late"), delay=0.6)
    with pytest.raises(ModelTimeoutError) as info:
        ask(chat(server, timeout=0.2, max_retries=1))
    assert info.value.timeout_seconds == 0.2 and len(server.requests) == 2
    assert isinstance(info.value, AgentsException)


def test_per_call_timeout_from_settings(server):
    server.reply(chat_completion("late"), delay=0.5)
    with pytest.raises(ModelTimeoutError):
        ask(chat(server, max_retries=0), ModelSettings(timeout=0.1))


def test_connection_refused_is_retried_then_reported():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    m = OpenAIChatCompletionsModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-secret-123")
    with pytest.raises(ModelHTTPError, match="connection") as info:
        ask(m)
    assert info.value.type == "connection_error" and "sk-secret" not in str(info.value)


def test_keep_alive_connection_reused_across_calls_and_streams(server):
    server.reply(chat_completion("a")).reply_sse(sse(*chat_chunks("b"))).reply(chat_completion("c"))
    m = chat(server)
    ask(m)
    list(m.stream_response(None, USER, ModelSettings(), [], None, []))
    ask(m)
    assert len({r["client_port"] for r in server.requests}) == 1


def test_streamed_runs_and_short_lived_threads_share_one_keep_alive_connection(server):
    """Each streamed run drives its own thread, as a web server may run each request: a connection that finished
    a request is the next one's on any thread (one socket was left open per thread that had ended)."""
    import asyncio
    import threading
    from miniagents import Agent, Runner
    from openai_server import prose
    server.otherwise = prose("hi")
    m = chat(server)

    async def streamed_runs():
        for _ in range(5):
            result = Runner.run_streamed(Agent(name="A", model=m), "hi")
            assert [e async for e in result.stream_events()] and result.final_output == "hi "
    asyncio.run(streamed_runs())
    for _ in range(5):
        thread = threading.Thread(target=ask, args=(m,))
        thread.start()
        thread.join()
    assert len(server.requests) == 10 and len({r["client_port"] for r in server.requests}) == 1
    assert len(m.transport._conns) == 1


def test_connections_in_use_at_once_leave_at_most_the_pools_size_open(server):
    """Requests at once each take a connection; when they end, MAX_IDLE_CONNECTIONS stay open for the next ones
    and the rest are closed."""
    n = http.MAX_IDLE_CONNECTIONS + 3
    for _ in range(n):
        server.reply_sse(sse(*chat_chunks("b")))
    m = chat(server)
    exchanges = [m.transport.post("/chat/completions", {"stream": True}, stream=True) for _ in range(n)]
    conns = [exchange._conn for exchange in exchanges]
    assert len(set(map(id, conns))) == n and all(conn.sock is not None for conn in conns)
    for exchange in exchanges:
        list(exchange)
    assert len(m.transport._conns) == http.MAX_IDLE_CONNECTIONS
    assert sum(conn.sock is not None for conn in conns) == http.MAX_IDLE_CONNECTIONS


def test_bytes_a_server_sent_on_an_idle_connection_are_never_the_next_requests_answer():
    """A server answers, then sends an answer nobody asked for on the same keep-alive socket: the connection is not
    reused (the next request, on any thread, read that answer as its own), and the next request gets its own."""
    import json
    import threading

    def answer(text):
        body = json.dumps(chat_completion(text)).encode()
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)

    def serve(conn, first):
        with conn, conn.makefile("rb") as reader:
            while True:
                length = 0
                try:
                    for line in iter(reader.readline, b"\r\n"):
                        if not line:
                            return
                        length = int(line.split(b":")[1]) if line.lower().startswith(b"content-length:") else length
                except OSError:  # the client hung up on the connection it would not reuse
                    return
                question = json.loads(reader.read(length))["messages"][-1]["content"]
                conn.sendall(answer(f"reply to {question}"))
                if first:  # once the client has read its answer (else it reads both at once, never seeing this one)
                    time.sleep(0.2)
                    conn.sendall(answer("an answer to nothing"))
                    stale.set()
                    first = False

    listener, stale = socket.create_server(("127.0.0.1", 0)), threading.Event()

    def accept():
        for n in range(2):
            threading.Thread(target=serve, args=(listener.accept()[0], n == 0), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    m = OpenAIChatCompletionsModel("m", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", api_key="k" * 8)
    ask_as = lambda text: text_of(m.get_response(None, [{"role": "user", "content": text}], ModelSettings(), [],  # noqa
                                                 None, []))
    assert ask_as("alice") == "reply to alice" and stale.wait(10)
    assert ask_as("bob") == "reply to bob"
    m.transport.close()
    listener.close()


def test_an_idle_connection_is_reused_in_a_process_with_over_1023_descriptors_open(server):
    """The check before reuse asked select.select, which refuses a descriptor past 1023: every request reconnected."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may open only {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    gc.collect()  # a file an earlier test left to the collector would free its descriptor midway
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    for fd in range(3, 1024):  # every number below 1024 taken, so the connection's socket is past it
        try:
            os.fstat(fd)
        except OSError:
            held.append(os.dup2(held[0], fd))
    try:
        m = chat(server)
        for text in ("a", "b", "c"):
            server.reply(chat_completion(text))
            assert text_of(ask(m)) == text
        assert m.transport._conns[0].sock.fileno() > 1023 and len({r["client_port"] for r in server.requests}) == 1
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_stale_keep_alive_socket_is_replaced_without_counting_a_retry(server):
    server.reply(chat_completion("a"), close_after=True).reply(chat_completion("b"))
    m = chat(server, max_retries=0)
    ask(m)
    time.sleep(0.05)
    assert text_of(ask(m)) == "b" and len(server.requests) == 2


def test_stream_retried_before_first_event_but_not_after(server):
    server.reply({"error": {"message": "warming up"}}, status=503).reply_sse(sse(*chat_chunks("ok")))
    events = list(chat(server).stream_response(None, USER, ModelSettings(), [], None, []))
    assert events[-1]["type"] == "response.completed" and len(server.requests) == 2


def test_headers_sent(server):
    server.reply(chat_completion("ok"))
    ask(OpenAIChatCompletionsModel("m", base_url=server.url + "/", api_key="k1", organization="org_1",
                                   project="proj_1", default_headers={"X-Title": "demo"}))
    h = server.requests[0]["headers"]
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert (h["authorization"], h["openai-organization"], h["openai-project"], h["x-title"]) == (
        "Bearer k1", "org_1", "proj_1", "demo")
    assert h["content-type"] == "application/json" and "gzip" not in h.get("accept-encoding", "")


def test_extra_headers_and_query_per_call(server):
    server.reply(chat_completion("ok"))
    ask(chat(server), ModelSettings(extra_headers={"X-Trace": "1"}, extra_query={"debug": "yes"}))
    assert server.requests[0]["headers"]["x-trace"] == "1" and server.requests[0]["query"] == {"debug": "yes"}

# --------------------------------------------------------------------------- pure helpers


def test_backoff_follows_openai_python_constants(monkeypatch):
    monkeypatch.setattr(protocol, "INITIAL_RETRY_DELAY", 0.5)
    monkeypatch.setattr(protocol, "MAX_RETRY_DELAY", 8.0)
    assert [protocol.retry_delay(n, rand=lambda: 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert protocol.retry_delay(0, rand=lambda: 1.0) == 0.375
    assert protocol.retry_delay(3, {"retry-after-ms": "250"}) == 0.25
    assert protocol.retry_delay(0, {"retry-after": "0"}, rand=lambda: 0.0) == 0.5  # not in (0, cap]: backoff


@given(retries_so_far=st.integers(0, 10 ** 6))
def test_the_backoff_stays_at_its_ceiling_after_any_number_of_attempts(retries_so_far):
    """max_retries may be any int >= 0: the 1,025th attempt waits MAX_RETRY_DELAY, not an OverflowError."""
    assert 0 < protocol.retry_delay(retries_so_far, rand=lambda: 0.0) <= protocol.MAX_RETRY_DELAY
    assert protocol.retry_delay(1024, rand=lambda: 0.0) == protocol.MAX_RETRY_DELAY


def test_retry_after_http_date():
    assert protocol.retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:30 GMT"}, now=1767225600.0) == 30.0
    assert protocol.retry_after({"retry-after": "soon"}) is None


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_a_retry_after_no_wait_can_keep_is_none_and_the_other_header_is_read(value):
    """inf and nan were delays: a reader was told to wait "inf s"; the other header, if readable, is the one."""
    assert protocol.retry_after({"retry-after": value}) is None
    assert protocol.retry_after({"retry-after-ms": value, "retry-after": "2"}) == 2.0


HTTP_DATES = st.builds("{}, {:02d} {} {} {:02d}:{:02d}:{:02d} {}".format,
                       st.sampled_from(["Mon", "Thu", "Xyz"]), st.integers(0, 99), st.sampled_from(["Jan", "Dec"]),
                       st.one_of(st.integers(0, 9999), st.integers(2 ** 63, 10 ** 30)),  # a year a C long overflows
                       st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
                       st.sampled_from(["GMT", "-0000", "+2359", "-9999", "+99999999999999999999"]))
RETRY_AFTER = st.one_of(HTTP_DATES, st.text(max_size=40), st.floats().map(repr), st.integers().map(str))


@given(value=RETRY_AFTER)
def test_any_retry_after_is_a_delay_or_none_and_the_wait_stays_bounded(value):
    """A server's Retry-After may say anything (a date in year 10**30 overflows what a datetime holds): it is read
    as a number of seconds or as no delay, and never raises; the wait it leads to is at most MAX_SERVER_DELAY."""
    for headers in ({"retry-after": value}, {"retry-after-ms": value}):
        delay = protocol.retry_after(headers)
        assert delay is None or isinstance(delay, float)
        assert isinstance(protocol.should_retry(429, headers), bool)
        assert 0 <= protocol.retry_delay(3, headers) <= protocol.MAX_SERVER_DELAY


def test_a_retry_after_date_past_any_year_is_no_delay_and_the_request_is_retried(server):
    server.reply({"error": {"message": "slow down"}}, status=429,
                 headers={"Retry-After": "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"})
    server.reply(chat_completion("ok"))
    assert protocol.retry_after({"retry-after": "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"}) is None
    assert text_of(ask(chat(server))) == "ok" and len(server.requests) == 2


def test_error_fields_stringify_codes_and_messages():
    err = protocol.error_from_body(400, b'{"error": {"message": {"detail": "x"}, "code": 400}}')
    assert err.code == "400" and err.message == '{"detail": "x"}'


def test_sse_framing_all_line_endings_multiline_comments_and_eof():
    stream = b": hi\r\nevent: a\r\ndata: 1\rdata: 2\n\ndata: [DONE]\n\nid: 7\nretry: 5\ndata:tail"
    assert list(protocol.iter_sse(protocol.iter_lines([stream]))) == [("a", "1\n2"), ("message", "[DONE]"),
                                                               ("message", "tail")]


def test_sse_a_comment_inside_an_event_does_not_split_it():
    stream = b'data: {"a":\n: keep-alive\ndata: 1}\n\n'
    assert list(protocol.iter_sse(protocol.iter_lines([stream]))) == [("message", '{"a":\n1}')]


# --------------------------------------------------------------------------- provider and endpoints


def test_provider_picks_responses_for_openai_and_chat_elsewhere(monkeypatch):
    monkeypatch.setattr(provider_mod, "_default_api", None)
    assert isinstance(OpenAIProvider(api_key="k").get_model("gpt-4.1"), OpenAIResponsesModel)
    assert isinstance(OpenAIProvider(base_url="http://localhost:11434/v1").get_model("qwen3"),
                      OpenAIChatCompletionsModel)
    assert isinstance(OpenAIProvider(base_url="http://x/v1", use_responses=True).get_model("m"),
                      OpenAIResponsesModel)
    set_default_openai_api("chat_completions")
    assert isinstance(OpenAIProvider(api_key="k").get_model("gpt-4.1"), OpenAIChatCompletionsModel)
    with pytest.raises(ValueError):
        set_default_openai_api("soap")


def test_the_default_provider_sends_a_name_as_written_to_the_adapter_the_host_calls_for(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.reply(chat_completion("ok"))
    provider = DefaultProvider()
    m = provider.get_model("org/llama3")  # a local server's model id: no prefix routing in the kernel
    assert provider.get_model("org/llama3") is m  # one model per name: its connections are reused
    assert (m.model, type(m)) == ("org/llama3", OpenAIChatCompletionsModel)
    ask(m)
    assert server.bodies[0]["model"] == "org/llama3"
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    assert isinstance(DefaultProvider().get_model("gpt-4.1"), OpenAIResponsesModel)


def test_provider_reads_environment_lazily(server, monkeypatch):
    monkeypatch.setattr(provider_mod, "_default_api", None)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "llama3")
    server.reply(chat_completion("ok"))
    m = OpenAIProvider().get_model(None)
    assert m.model == "llama3" and isinstance(m, OpenAIChatCompletionsModel)
    ask(m)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-env"
    assert server.bodies[0]["model"] == "llama3"


def test_default_key_beats_env_and_openai_without_key_is_user_error(server, monkeypatch):
    monkeypatch.setattr(connection_mod, "_default_key", None)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        ask(OpenAIChatCompletionsModel("m", base_url="https://api.openai.com/v1"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    set_default_openai_key("sk-default")
    server.reply(chat_completion("ok"))
    ask(OpenAIChatCompletionsModel("m", base_url=server.url))
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-default"


def test_local_server_without_key_gets_a_dummy_bearer(server, monkeypatch):
    monkeypatch.setattr(connection_mod, "_default_key", None)
    server.reply(chat_completion("ok"))
    ask(OpenAIChatCompletionsModel("m", base_url=server.url))
    assert server.requests[0]["headers"]["authorization"] == "Bearer no-key"
    assert server.requests[0]["headers"]["user-agent"] == f"miniagents/{miniagents.__version__} (python stdlib)"


def test_azure_api_key_header_and_api_version_query(server):
    server.reply(chat_completion("ok"))
    m = OpenAIChatCompletionsModel("my-deployment", base_url=server.url + "/openai/deployments/my-deployment",
                                   api_key="azure-key", api_version="2024-10-21")
    ask(m)
    req = server.requests[0]
    assert req["path"] == "/v1/openai/deployments/my-deployment/chat/completions"
    assert req["query"] == {"api-version": "2024-10-21"}
    assert req["headers"]["api-key"] == "azure-key" and "authorization" not in req["headers"]


def test_key_never_in_repr():
    for obj in (OpenAIProvider(api_key="sk-secret-123"),
                OpenAIChatCompletionsModel("m", api_key="sk-secret-123"),
                OpenAIResponsesModel("m", api_key="sk-secret-123")):
        assert "sk-secret" not in repr(obj)
    m = OpenAIResponsesModel("m", api_key="sk-secret-123")
    assert "sk-secret" not in repr(m.transport)


@pytest.mark.parametrize("field", ["prompt_cache_options", "preserve_raw_usage"])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_model_settings_the_adapters_cannot_send_are_refused_before_any_request(server, field, api):
    from miniagents import ModelSettings, UserError

    model = (OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel)(
        "m", base_url=server.url, api_key="sk-test")
    settings = ModelSettings(**{field: True})
    with pytest.raises(UserError, match=field):
        model.get_response(None, [{"role": "user", "content": "hi"}], settings, [], None, [])
    assert server.requests == []



@pytest.mark.parametrize("base_url", ["ftp://example.com/v1", "http:///v1", "localhost:8080/v1"])
def test_a_base_url_that_is_not_an_http_url_with_a_host_is_refused_before_any_request(base_url):
    model = OpenAIChatCompletionsModel("m", base_url=base_url, api_key="k")
    with pytest.raises(ValueError, match="base_url must be an http"):
        model.transport


@pytest.mark.parametrize("base_url", [5, b"http://127.0.0.1:9/v1"])
def test_a_base_url_that_is_no_text_is_a_user_error_where_the_model_is_made(base_url):
    """It was a bare AttributeError or TypeError (`rstrip`) out of the adapter (or the upstream shell's provider)."""
    with pytest.raises(UserError, match="The base URL \\(base_url=\\) must be text, got"):
        OpenAIChatCompletionsModel("m", base_url=base_url, api_key="k")


@pytest.mark.parametrize("path", ["/v1 ", "/v 1", "/v1\x7f", "/v1?key=sk-query-secret-77&x=\x01"])
def test_a_base_url_with_a_space_or_control_character_is_refused_when_made_not_retried_as_a_connection_error(
        server, path):
    """http.client refuses such a target on every request (InvalidURL, the query's key quoted in it): it was sent
    three times and reported as a connection the server closed (a trailing space in OPENAI_BASE_URL, say)."""
    model = OpenAIChatCompletionsModel("m", base_url=server.url[:-len("/v1")] + path, api_key="sk-test")
    with pytest.raises(ValueError, match="base_url must be an http.* no space or control character") as info:
        model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    assert "sk-query-secret" not in str(info.value) and server.requests == []


@pytest.mark.parametrize("status, retried", [(408, True), (409, True), (429, True), (500, True), (503, True),
                                             (400, False), (401, False), (404, False), (422, False)])
def test_which_statuses_are_retried_as_openai_python_does(status, retried):
    """408, 409, 429 and 5xx are retried; other 4xx are not (a generated mutant turning 408 into 409 went
    uncaught by any quick test)."""
    from miniagents.models.protocol import should_retry
    assert should_retry(status, {}) is retried


def test_a_model_nobody_keeps_closes_its_pooled_connections_when_collected(server):
    import gc
    server.reply(chat_completion("hi"))
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k")
    model.get_response(None, [{"role": "user", "content": "hi"}], ModelSettings(), [], None, [])
    sockets = [conn.sock for conn in model.transport._conns]  # kept here: only the transport can close them
    assert sockets and all(s.fileno() >= 0 for s in sockets)
    del model
    gc.collect()
    assert [s.fileno() for s in sockets] == [-1] * len(sockets)
