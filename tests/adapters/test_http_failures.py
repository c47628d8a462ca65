"""When the network or the server misbehaves: typed errors a person can act on, retried where a retry can help,
streams that end at their last event, and requests that stop the moment a run is cancelled."""
import contextlib
import json
from http import client
import socket
import threading
import time

import pytest

from miniagents.errors import ModelHTTPError, ModelTimeoutError
from miniagents.models import http
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import CANCEL_CALLBACKS, ModelSettings
from miniagents.upstream.providers import OpenAIProvider
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import chat_chunks, chat_completion, response_events, sse, text_item

USER = [{"role": "user", "content": "hi"}]
KEY = "sk-secret-123"


def chat(base_url, **kw):
    return OpenAIChatCompletionsModel("m", base_url=base_url, api_key=KEY, **kw)


def ask(model, settings=None):
    return model.get_response(None, USER, settings or ModelSettings(), [], None, [])


def stream(model):
    return model.stream_response(None, USER, ModelSettings(), [], None, [])


def port_of(url):
    return int(url.split(":")[2].split("/")[0])


@contextlib.contextmanager
def free_port():
    """A port nothing listens on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    yield port


@contextlib.contextmanager
def unanswered_port():
    """A port whose listener never accepts and whose queue is full: connecting to it hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    try:
        yield port
    finally:
        for sock in fillers + [listener]:
            sock.close()


@contextlib.contextmanager
def listening(answer):
    """A TCP listener on loopback that calls `answer(conn)` for every connection it accepts; yields (port, the
    accepted connections)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            answer(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        listener.close()


def plain_text_listener():
    """A plain-TCP listener that answers every connection at once with a plain HTTP 400 (so a TLS client
    reads a non-TLS record); yields (port, accepted connection count)."""
    def answer(conn):
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        conn.close()
    return listening(answer)


def no_key_in(err):
    chain, seen = [], err
    while seen is not None:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for e in chain:
        assert KEY not in str(e) and KEY not in repr(e) and KEY not in repr(e.args)

# --------------------------------------------------------------------------- what every error says


def test_an_exhausted_retry_names_method_url_and_attempts(server):
    for _ in range(3):
        server.reply({"error": {"message": "overloaded"}}, status=503)
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server.url))
    assert str(info.value) == (f"HTTP 503: overloaded (POST http://127.0.0.1:{port_of(server.url)}"
                               "/v1/chat/completions, 3 attempts)")
    no_key_in(info.value)


@pytest.mark.parametrize("reply,expected", [
    ({"status": 400, "json": {"error": {"message": "bad", "code": "x"}}}, "HTTP 400: code=x bad"),
    ({"status": 200, "json": {"error": {"message": "upstream failed"}}}, "HTTP 200: upstream failed"),
    ({"sse": sse({"error": {"message": "provider overloaded", "code": 502}}, done=False)},
     "the server reported an error in the stream: provider overloaded"),
    ({"sse": sse(*chat_chunks("Hello")[:2], done=False)}, "the stream ended before a finish_reason or [DONE]"),
])
def test_errors_from_one_attempt_name_it_too(server, reply, expected):
    server.replies.append(reply)
    model = chat(server.url)
    with pytest.raises(ModelHTTPError) as info:
        list(stream(model)) if "sse" in reply else ask(model)
    assert expected in str(info.value)
    assert f"(POST http://127.0.0.1:{port_of(server.url)}/v1/chat/completions, 1 attempt)" in str(info.value)


def test_a_404_from_a_base_url_without_v1_says_what_it_should_be(server):
    root = server.url[:-len("/v1")]
    server.reply({"error": {"message": "Not Found"}}, status=404)
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(root))
    assert (f"Most OpenAI-compatible servers serve the API under /v1: try base_url='{root}/v1'. "
            f"(POST {root}/chat/completions, 1 attempt)") in str(info.value)


@pytest.mark.parametrize("endpoint,make", [("/chat/completions", chat),
                                           ("/responses", lambda url: OpenAIResponsesModel("m", base_url=url))])
def test_a_404_from_a_base_url_with_the_endpoint_in_it_says_what_it_should_be(server, endpoint, make):
    server.reply({"error": {"message": "Not Found"}}, status=404)
    with pytest.raises(ModelHTTPError) as info:
        ask(make(server.url + endpoint))
    assert (f"The base URL must stop before the endpoint: use base_url='{server.url}' (the adapter adds "
            f"{endpoint}).") in str(info.value)


def test_a_404_for_the_default_model_name_says_where_the_name_came_from(server, monkeypatch):
    for _ in range(3):
        server.reply({"error": {"message": "model 'gpt-4.1' not found", "code": "model_not_found"}}, status=404)
    provider = OpenAIProvider(base_url=server.url, api_key=KEY)
    with pytest.raises(ModelHTTPError) as info:
        ask(provider.get_model(None))
    assert ("No model name was given, so the default 'gpt-4.1' was asked for: pass model=... (to the Agent or "
            "the model) or set OPENAI_DEFAULT_MODEL.") in str(info.value)
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "llama3")
    with pytest.raises(ModelHTTPError, match="The model name 'llama3' came from OPENAI_DEFAULT_MODEL."):
        ask(provider.get_model(None))
    with pytest.raises(ModelHTTPError) as info:
        ask(provider.get_model("qwen3"))
    assert "OPENAI_DEFAULT_MODEL" not in str(info.value) and "model=" not in str(info.value)


def test_a_refused_connection_says_could_not_connect():
    with free_port() as port:
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(f"http://127.0.0.1:{port}/v1"))
    assert str(info.value) == (f"could not connect to 127.0.0.1:{port}: connection refused (is the server "
                               f"running, and on that port?) (POST http://127.0.0.1:{port}/v1/chat/completions, "
                               f"3 attempts) [type=connection_error]")
    assert (info.value.type, info.value.code) == ("connection_error", None)
    no_key_in(info.value)


def test_a_server_that_closes_without_an_answer_is_told_from_one_never_reached():
    """Both were a connection_error with no code: a reader (the demo's advice) could not tell a server that is not
    there from one that took the request and closed without a word (its log says why)."""
    def close_unanswered(conn):  # once the whole request is read: a close with some of it unread resets the
        # connection instead (http.client sends the headers and the body apart: one recv may end between them)
        with conn.makefile("rb") as request:
            request.readline()
            request.read(int(client.parse_headers(request).get("Content-Length", 0)))
        conn.close()

    with listening(close_unanswered) as (port, accepted):
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(f"http://127.0.0.1:{port}/v1", max_retries=0))
    assert (info.value.status, info.value.type, info.value.code) == (None, "connection_error", "no_response")
    assert "failed while sending the request: RemoteDisconnected" in str(info.value) and len(accepted) == 1
    no_key_in(info.value)


def test_https_pointed_at_a_plain_http_server_gets_a_hint_and_no_retry():
    with plain_text_listener() as (port, accepted):
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(f"https://127.0.0.1:{port}/v1"))
    assert f"could not connect to 127.0.0.1:{port}: the TLS handshake failed" in str(info.value)
    assert f"if that server speaks plain HTTP, use base_url='http://127.0.0.1:{port}/v1'" in str(info.value)
    assert "1 attempt)" in str(info.value) and len(accepted) == 1


@pytest.fixture
def no_proxy(monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_host_name_that_does_not_resolve_says_so(no_proxy):
    """`.invalid` never resolves (RFC 6761)."""
    with pytest.raises(ModelHTTPError) as info:
        ask(chat("http://no-such-host.invalid/v1", max_retries=0))
    assert str(info.value) == ("could not connect to no-such-host.invalid:80: the host name 'no-such-host.invalid' "
                               "could not be resolved (POST http://no-such-host.invalid:80/v1/chat/completions, "
                               "1 attempt) [type=connection_error]")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_host_name_that_does_not_resolve_is_the_one_named(no_proxy, monkeypatch, scheme):
    """The name looked up is the proxy's: the error named the server's, which the proxy resolves (or no one)."""
    monkeypatch.setenv(f"{scheme}_proxy", "http://no-such-proxy.invalid:8080")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(f"{scheme}://api.example.com/v1", max_retries=0))
    assert ("could not connect to no-such-proxy.invalid:8080 (the proxy): the host name 'no-such-proxy.invalid' "
            "could not be resolved") in str(info.value), str(info.value)


@contextlib.contextmanager
def self_signed_tls_listener(folder):
    """A TLS listener whose certificate no default trust store accepts; yields (port, accepted connection count)."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days",
                    "1", "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
                   check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(folder / "cert.pem"), str(folder / "key.pem"))

    def answer(conn):
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):  # the client refused the certificate
            conn.close()
    with listening(answer) as listened:
        yield listened


def test_a_tls_certificate_that_is_not_accepted_says_so_and_is_not_retried(tmp_path, no_proxy):
    with self_signed_tls_listener(tmp_path) as (port, accepted):
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(f"https://127.0.0.1:{port}/v1"))
    said = str(info.value)
    assert said.startswith(f"could not connect to 127.0.0.1:{port}: the TLS certificate was not accepted (")
    assert "CERTIFICATE_VERIFY_FAILED" in said and "1 attempt)" in said and len(accepted) == 1
    no_key_in(info.value)

# --------------------------------------------------------------------------- timeouts


def test_connecting_has_its_own_timeout_separate_from_the_read_timeout(monkeypatch):
    monkeypatch.setattr(http, "CONNECT_TIMEOUT", 0.2)
    with unanswered_port() as port:
        with pytest.raises(ModelTimeoutError) as info:
            ask(chat(f"http://127.0.0.1:{port}/v1", timeout=60, max_retries=0))
    assert info.value.timeout_seconds == 0.2
    assert str(info.value) == (f"Model call timed out after 0.2 seconds. Could not connect to 127.0.0.1:{port} "
                               f"within 0.2 s. (POST http://127.0.0.1:{port}/v1/chat/completions, 1 attempt)")


def test_a_slow_answer_is_bounded_by_the_read_timeout_not_the_connect_timeout(server, monkeypatch):
    monkeypatch.setattr(http, "CONNECT_TIMEOUT", 0.05)
    server.reply(chat_completion("late but fine"), delay=0.3)
    assert ask(chat(server.url, timeout=5)).output[0]["content"][0]["text"] == "late but fine"
    assert len(server.requests) == 1


def test_a_read_timeout_names_the_wait(server):
    server.reply(hang=True).reply(hang=True)
    with pytest.raises(ModelTimeoutError) as info:
        ask(chat(server.url, timeout=0.2, max_retries=1))
    assert "waiting for the response to start" in str(info.value) and "2 attempts)" in str(info.value)

# --------------------------------------------------------------------------- bodies that break off (typed, retried)


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
SHORT = HEAD + b"Content-Length: 500\r\n\r\n" + b'{"choices": [{"index": 0, "message": {"role": "assist'
BAD_CHUNK = HEAD + b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n"


@pytest.mark.parametrize("wire,after", [(SHORT, "close"), (SHORT, "reset"), (BAD_CHUNK, "close")],
                         ids=["shorter-than-content-length", "reset-mid-body", "bad-chunk-size"])
def test_a_broken_body_is_retried(server, wire, after):
    server.reply(wire=wire, after=after).reply(chat_completion("ok"))
    response = ask(chat(server.url))
    assert response.output[0]["content"][0]["text"] == "ok" and len(server.requests) == 2


def test_a_body_broken_on_every_attempt_is_a_typed_error(server):
    for _ in range(3):
        server.reply(wire=SHORT, after="close")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server.url))
    assert (info.value.type, info.value.code) == ("connection_error", "truncated")
    assert "broke off in the middle of the response" in str(info.value) and "3 attempts)" in str(info.value)


def test_a_body_that_stalls_midway_is_a_timeout_after_retries(server):
    server.reply(wire=SHORT, after="hang").reply(wire=SHORT, after="hang")
    with pytest.raises(ModelTimeoutError) as info:
        ask(chat(server.url, timeout=0.2, max_retries=1, attempt_timeout=60))
    assert "The server sent nothing more within the timeout." in str(info.value)
    assert len(server.requests) == 2

# --------------------------------------------------------------------------- a stream ends at its last event


@pytest.mark.parametrize("ping", [None, 0.05], ids=["silent", "pinging"])
def test_a_chat_stream_ends_at_done_even_if_the_server_holds_the_connection(server, ping):
    server.reply_sse(sse(*chat_chunks("Hello")), hold=True, ping_every=ping).reply(chat_completion("next"))
    model = chat(server.url, timeout=1.0)
    events = list(stream(model))
    assert events[-1]["type"] == "response.completed"
    assert ask(model).output[0]["content"][0]["text"] == "next"  # the held connection was let go


@pytest.mark.parametrize("ping", [None, 0.05], ids=["silent", "pinging"])
def test_a_responses_stream_ends_at_response_completed_even_if_held(server, ping):
    server.reply_sse(response_events([text_item("hi")]), hold=True, ping_every=ping)
    model = OpenAIResponsesModel("m", base_url=server.url, api_key=KEY, timeout=1.0)
    assert list(stream(model))[-1]["response"]["output"] == [text_item("hi")]

# --------------------------------------------------------------------------- cancelling


class Recording(list):
    """A callback list that also remembers every callable ever put in it."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def append(self, item):
        self.seen.append(item)
        super().append(item)


def cancel_when(condition, callbacks):
    """From another thread: wait (up to 10 s) until `condition()` and a callback is registered, then call
    every callback, twice."""
    def run():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (condition() and callbacks):
            time.sleep(0.01)
        for callback in list(callbacks) * 2:
            callback()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def cancellable():
    callbacks = Recording()
    token = CANCEL_CALLBACKS.set(callbacks)
    try:
        yield callbacks
    finally:
        CANCEL_CALLBACKS.reset(token)


def test_cancelling_a_call_blocked_on_a_silent_server_ends_it(server):
    server.reply(hang=True)
    with cancellable() as callbacks:
        thread = cancel_when(lambda: server.requests, callbacks)
        started = time.monotonic()
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(server.url, timeout=60))
    thread.join()
    assert info.value.code == "cancelled" and "the request was cancelled" in str(info.value)
    assert time.monotonic() - started < 10  # against a 60 s read timeout: it ended because of the cancel
    assert len(server.requests) == 1 and list(callbacks) == []  # never retried; the callback was removed


def test_cancelling_a_stream_blocked_between_events_ends_it(server):
    server.reply_sse(sse(*chat_chunks("Hello there")[:2], done=False), hold=True)
    got = []
    with cancellable() as callbacks:
        thread = cancel_when(lambda: got, callbacks)
        started = time.monotonic()
        with pytest.raises(ModelHTTPError) as info:
            for event in stream(chat(server.url, timeout=60)):
                got.append(event)
    thread.join()
    assert info.value.code == "cancelled" and got and time.monotonic() - started < 10
    assert len(server.requests) == 1 and list(callbacks) == []


def test_cancelling_a_call_blocked_connecting_ends_it(monkeypatch):
    monkeypatch.setattr(http, "CONNECT_TIMEOUT", 60)
    with unanswered_port() as port, cancellable() as callbacks:
        thread = cancel_when(lambda: True, callbacks)
        started = time.monotonic()
        with pytest.raises(ModelHTTPError) as info:
            ask(chat(f"http://127.0.0.1:{port}/v1", timeout=60))
    thread.join()
    assert info.value.code == "cancelled" and time.monotonic() - started < 10


def test_cancelling_during_a_retry_wait_ends_it(server):
    server.reply({"error": {"message": "busy"}}, status=503, headers={"retry-after": "50"})
    with cancellable() as callbacks:
        thread = cancel_when(lambda: server.requests, callbacks)
        started = time.monotonic()
        with pytest.raises(ModelHTTPError, match="cancelled"):
            ask(chat(server.url))
    thread.join()
    assert time.monotonic() - started < 10 and len(server.requests) == 1


def test_a_cancel_after_the_request_finished_touches_nothing(server):
    server.reply(chat_completion("a")).reply(chat_completion("b"))
    model = chat(server.url)
    with cancellable() as callbacks:
        ask(model)
    assert list(callbacks) == [] and len(callbacks.seen) == 1
    callbacks.seen[0]()
    callbacks.seen[0]()
    assert ask(model).output[0]["content"][0]["text"] == "b"
    assert server.requests[0]["client_port"] == server.requests[1]["client_port"]  # the socket was not shut


def test_without_a_callback_list_nothing_is_registered(server):
    server.reply(chat_completion("a"))
    assert CANCEL_CALLBACKS.get() is None
    assert ask(chat(server.url)).output[0]["content"][0]["text"] == "a"


@pytest.mark.parametrize("field", ["extra_body", "extra_args", "metadata"])
@pytest.mark.parametrize("value", ["not JSON", "nested past Python's reach", "holds itself", "nan", "inf"])
def test_a_body_that_json_cannot_hold_is_a_user_error_before_any_request(server, field, value):
    """A value nested deeper than json encodes was its bare RecursionError; a NaN or an infinity was sent as
    `NaN`/`Infinity`, which is no JSON: a server refused the whole body, or read it its own way."""
    from miniagents.errors import UserError

    bad: dict = {}
    if value == "not JSON":
        bad = {"when": object()}
    elif value in ("nan", "inf"):
        bad = {"temperature": float(value)}
    elif value == "holds itself":
        bad["me"] = bad
    else:
        for _ in range(20_000):
            bad = {"a": bad}
    with pytest.raises(UserError, match="^The request body cannot be sent as JSON: "):
        ask(chat(server.url), ModelSettings(**{field: {"x": bad}}))
    assert server.requests == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_sampling_setting_that_is_no_json_number_is_a_user_error_before_any_request(server, value):
    from miniagents.errors import UserError

    with pytest.raises(UserError, match="^The request body cannot be sent as JSON: Out of range float values"):
        ask(chat(server.url), ModelSettings(temperature=value))
    assert server.requests == []


@pytest.mark.parametrize("value", [{"a": 1}, ["a"], None, "nested past Python's reach"])
def test_a_query_parameter_that_is_no_string_or_number_is_a_user_error_before_any_request(server, value):
    """urlencode sent a dict's or a list's repr as the value (and a dict nested deeply was a bare RecursionError)."""
    from miniagents.errors import UserError

    if value == "nested past Python's reach":
        value = {}
        for _ in range(20_000):
            value = {"a": value}
    with pytest.raises(UserError, match=rf"^The query parameter 'x' cannot be sent \(its value a "
                                        rf"{type(value).__name__}\)"):
        ask(chat(server.url), ModelSettings(extra_query={"x": value, "ok": 1}))
    assert server.requests == []


def test_query_parameters_that_are_strings_or_numbers_are_sent(server):
    server.reply(chat_completion("a"))
    ask(chat(server.url), ModelSettings(extra_query={"s": "a b", "n": 3, "f": 0.5}))
    assert server.requests[0]["query"] == {"s": "a b", "n": "3", "f": "0.5"}


# --- What an attack on the adapters found: JSON nested past Python's reach, a Content-Type, a proxy URL ----------


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("how", ["body", "error body", "stream", "parsed but deep"])
def test_json_nested_deeper_than_python_reads_is_a_model_http_error(server, how):
    if how == "body":
        server.reply(raw=DEEP)
    elif how == "error body":
        server.reply(raw=DEEP, status=500)
    elif how == "stream":
        server.reply_sse([f"data: {DEEP}\n\n"])
    else:  # decoded by json, maybe too deep for what reads it next (how deep Python walks depends on its version)
        server.reply({**chat_completion("hi"), "extra": json.loads("[" * 900 + "]" * 900)})
    model = chat(server.url, max_retries=0)
    with pytest.raises(ModelHTTPError) if how != "parsed but deep" else contextlib.suppress(ModelHTTPError):
        list(stream(model)) if how == "stream" else ask(model)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("how", ["body", "stream"])
def test_an_answer_holding_a_number_json_has_not_is_a_model_http_error(server, how, constant):
    """Python's json reads NaN and Infinity, which JSON has not: a server's `-Infinity` logprob was kept in the
    run's items, then sent back in the next request, which no strict server reads, and no paused state could hold."""
    part = {"role": "assistant", "content": "hi", "logprob": "@"}
    if how == "body":
        text = json.dumps({**chat_completion("hi"), "choices": [{"index": 0, "message": part}]})
        server.reply(raw=text.replace('"@"', constant))
    else:
        line = json.dumps({"choices": [{"index": 0, "delta": part}]}).replace('"@"', constant)
        server.reply_sse([f"data: {line}\n\n"])
    with pytest.raises(ModelHTTPError, match="not JSON"):
        list(stream(chat(server.url, max_retries=0))) if how == "stream" else ask(chat(server.url, max_retries=0))


def test_a_structured_answer_nested_deeper_than_python_reads_is_left_as_it_came(server):
    from miniagents.models.endpoint import unfenced

    assert unfenced("[" * 50_000 + "]" * 50_000).startswith("[[[")


def test_a_content_type_that_holds_the_key_is_shown_without_it(server):
    key = "0123456789abcdef0123456789abcdef"
    server.reply(raw="<html>x</html>", content_type="text/" + key)
    with pytest.raises(ModelHTTPError) as info:
        ask(OpenAIChatCompletionsModel("m", base_url=server.url, api_key=key))
    assert key not in str(info.value) and "the answer is not JSON" in str(info.value)


@pytest.mark.parametrize("proxy", ["http://user:p[ss@127.0.0.1:9", "http://user:pa]ss@127.0.0.1:9", "[::1:9",
                                   # a password of digits then a "/": to urlsplit a port and a path, so the proxy
                                   # was the user name, its port the password's start (shown in the error)
                                   "http://user:1234/ss@127.0.0.1:9", "user:1234?ss@127.0.0.1:9"])
def test_a_proxy_url_with_a_stray_bracket_is_a_user_error_that_never_quotes_it(monkeypatch, proxy):
    from miniagents import UserError

    monkeypatch.setenv("http_proxy", proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(UserError, match="http_proxy is not a URL this transport can use") as info:
        ask(chat("http://203.0.113.1:9/v1", max_retries=0))
    assert "ss@" not in str(info.value) and "1234" not in str(info.value)


def test_the_secrets_of_a_transport_whose_proxy_url_is_unusable_are_read_without_the_proxys_error(monkeypatch):
    """What hides secrets (a recording's redaction reads them) still gets the key; the request says what is wrong."""
    monkeypatch.setenv("http_proxy", "http://ada:hunter2@proxy.example.test:80x80")
    assert KEY in chat("http://203.0.113.1:9/v1").transport.secret
