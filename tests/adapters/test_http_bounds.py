"""Every request has a finite worst case whatever the server does: a server that drips interim answers, keep-alive
comments or single bytes is cut at its deadline, and a server that announces or sends more than
`max_response_bytes` is refused with a typed error before anything that size is read. A stream that keeps
delivering events is never cut.

Timing assertions are generous (a 1 s deadline must end the call within 8 s, where the unbounded transport ran
until the server stopped dripping after 12 s); the precise figures are in benchmarks/http_bounds.py."""
import re
import socket
import time

import pytest

from miniagents import AgentsException
from miniagents.upstream.providers import OpenAIProvider
from miniagents.errors import ModelHTTPError, ModelTimeoutError
from miniagents.models import bounded
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import chat_chunks, chat_completion, chunk, response_events, sse, text_item

USER = [{"role": "user", "content": "hi"}]
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CHUNKED = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def chat(server, **kw):
    return OpenAIChatCompletionsModel("m", base_url=server.url, api_key="sk-test", **kw)


def ask(model, settings=None):
    return model.get_response(None, USER, settings or ModelSettings(), [], None, [])


def stream(model, settings=None):
    return list(model.stream_response(None, USER, settings or ModelSettings(), [], None, []))


def timed(call):
    """(the exception `call` raised, seconds it took)."""
    started = time.monotonic()
    with pytest.raises(AgentsException) as info:
        call()
    return info.value, time.monotonic() - started


def plain_json(body: bytes) -> bytes:
    return HEAD + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

# --------------------------------------------------------------------------- time: a finite worst case


DRIPS = {  # what never finishes, and whether it answers a streamed request
    "100-continue-every-0.1s": (dict(drip=b"", repeat=CONTINUE), False),
    "100-continue-every-0.1s-streamed": (dict(drip=b"", repeat=CONTINUE), True),
    "a-plain-body-one-byte-every-0.1s": (dict(drip=HEAD + b"Content-Length: 100000\r\n\r\n", repeat=b" "), False),
    "a-chunked-body-one-byte-every-0.1s": (dict(drip=CHUNKED, repeat=chunk(b" ")), False),
    "keep-alive-comments-only": (dict(drip=SSE_HEAD, repeat=chunk(b": keep-alive\n\n")), True),
    "a-data-line-that-never-ends": (dict(drip=SSE_HEAD + chunk(b"data: {"), repeat=chunk(b" ")), True),
}


@pytest.mark.parametrize("name", DRIPS)
def test_a_server_that_never_finishes_is_cut_at_the_deadline(server, monkeypatch, name):
    monkeypatch.setattr(bounded, "MAX_INTERIM_RESPONSES", 1000)  # the deadline, not the count, is under test here
    reply, streamed = DRIPS[name]
    server.replies.append({**reply, "every": 0.1})
    model = chat(server, timeout=1.0, max_retries=0)
    err, seconds = timed(lambda: stream(model) if streamed else ask(model))
    assert isinstance(err, ModelTimeoutError) and err.timeout_seconds == 1.0
    assert seconds < 8, f"took {seconds:.1f} s"
    assert len(server.requests) == 1


def test_the_deadlines_say_which_wait_ran_out(server):
    server.replies.append(dict(drip=b"", repeat=CONTINUE, every=0.1))
    err, _ = timed(lambda: ask(chat(server, timeout=0.5, max_retries=0)))
    assert "waiting for the response to start, within attempt_timeout (it bounds one whole attempt" in str(err)
    server.replies.append(dict(drip=HEAD + b"Content-Length: 100000\r\n\r\n", repeat=b" ", every=0.1))
    err, _ = timed(lambda: ask(chat(server, timeout=0.5, max_retries=0)))
    assert "The answer did not arrive whole within attempt_timeout" in str(err)
    server.replies.append(dict(drip=SSE_HEAD, repeat=chunk(b": keep-alive\n\n"), every=0.1))
    err, _ = timed(lambda: stream(chat(server, timeout=0.5, max_retries=0)))
    assert "The stream sent no event within the timeout (keep-alive comments do not count)." in str(err)
    assert "(POST " in str(err) and "1 attempt)" in str(err)


def test_attempt_timeout_is_its_own_setting_and_each_receive_keeps_the_timeout(server):
    # 0.1 s between bytes is well within a 5 s timeout: only the 1 s attempt_timeout can end this call
    server.replies.append(dict(drip=HEAD + b"Content-Length: 100000\r\n\r\n", repeat=b" ", every=0.1))
    err, seconds = timed(lambda: ask(chat(server, timeout=5, attempt_timeout=1.0, max_retries=0)))
    assert isinstance(err, ModelTimeoutError) and err.timeout_seconds == 1.0 and seconds < 4.5
    # a slow start within attempt_timeout, though past the timeout of each receive, still fails on the receive
    server.reply(chat_completion("late"), delay=1.0)
    err, _ = timed(lambda: ask(chat(server, timeout=0.3, attempt_timeout=30, max_retries=0)))
    assert err.timeout_seconds == 0.3 and str(err).startswith(
        "Model call timed out after 0.3 seconds. waiting for the response to start (POST")


def test_the_per_call_timeout_sets_the_attempt_deadline_when_attempt_timeout_is_unset(server):
    server.replies.append(dict(drip=HEAD + b"Content-Length: 100000\r\n\r\n", repeat=b" ", every=0.1))
    err, seconds = timed(lambda: ask(chat(server, max_retries=0), ModelSettings(timeout=1.0)))
    assert isinstance(err, ModelTimeoutError) and err.timeout_seconds == 1.0 and seconds < 8


def test_each_attempt_has_its_own_deadline(server):
    for _ in range(2):
        server.replies.append(dict(drip=b"", repeat=CONTINUE, every=0.1))
    server.reply(chat_completion("third time lucky"))
    started = time.monotonic()
    response = ask(chat(server, timeout=0.5))  # max_retries=2: three attempts of 0.5 s at most each
    assert response.output[0]["content"][0]["text"] == "third time lucky" and len(server.requests) == 3
    assert time.monotonic() - started < 8  # each drip lasts 12 s: only the deadline of each attempt ends it


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_stream_that_keeps_delivering_events_is_never_cut(server, api):
    # 25 events 0.1 s apart: 2.5 s in all, more than twice the 1 s timeout (and attempt deadline)
    if api == "chat":
        lines = sse(*(chat_chunks(" ".join(["word"] * 22))))
        model = chat(server, timeout=1.0, max_retries=0)
    else:
        lines = response_events([text_item("hi")] * 5)
        model = OpenAIResponsesModel("m", base_url=server.url, api_key="sk-test", timeout=1.0, max_retries=0)
    assert len(lines) >= 25
    server.reply_sse([": keep-alive\n\n"] + lines, pause=0.1)
    started = time.monotonic()
    events = stream(model)
    assert events[-1]["type"] == "response.completed" and time.monotonic() - started > 2.0

# --------------------------------------------------------------------------- interim (1xx) answers


def test_interim_answers_before_the_real_one_are_skipped(server):
    early_hints = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    processing = b"HTTP/1.1 102 Processing\r\n\r\n"
    server.reply(wire=CONTINUE * 3 + processing + early_hints + plain_json(b'{"choices": [{"index": 0, '
                 b'"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}'))
    assert ask(chat(server)).output[0]["content"][0]["text"] == "hello"


def test_more_interim_answers_than_the_limit_is_a_typed_error_and_not_retried(server):
    server.reply(wire=CONTINUE * (bounded.MAX_INTERIM_RESPONSES + 1) + plain_json(b"{}"), after="hang")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server))
    assert info.value.type == "invalid_response" and len(server.requests) == 1
    assert (f"the server sent more than {bounded.MAX_INTERIM_RESPONSES} interim (1xx) responses before its "
            "answer") in str(info.value)


def test_a_paced_response_holds_its_socket_open_while_it_reads_and_closing_it_hangs_up_at_once():
    """http.client closes a connection's socket while its response may still read it; the paced reader keeps the
    socket open until it is closed itself, and then hangs up there and then (not when the collector finds it)."""
    ours, theirs = socket.socketpair()
    with theirs:
        reader = bounded._PacedSocket(ours, lambda: 5.0).makefile("rb")
        theirs.sendall(b"HTTP/1.1 200 OK\r\n")
        ours.close()  # as HTTPConnection.close does
        assert reader.readline() == b"HTTP/1.1 200 OK\r\n" and ours.fileno() != -1
        reader.close()
        theirs.setblocking(False)
        assert ours.fileno() == -1 and theirs.recv(1) == b""  # the peer sees the end now, nothing left pending

# --------------------------------------------------------------------------- sizes: refused before they are read


@pytest.mark.parametrize("declared", [b"Content-Length: 10000000000000\r\n\r\n{",
                                      b"Transfer-Encoding: chunked\r\n\r\nffffffffff\r\n{\"a\"",
                                      b"Transfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\n{\"a\""],
                         ids=["content-length-10TB", "chunk-1TB", "chunk-2**63"])
def test_a_body_announced_larger_than_the_limit_is_refused_before_it_is_read(server, declared):
    server.reply(wire=HEAD + declared, after="hang")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server, timeout=30))  # refused at once: never waits for the announced bytes
    assert info.value.type == "response_too_large" and len(server.requests) == 1
    assert f"the response is larger than max_response_bytes={32 * 2 ** 20}" in str(info.value)


def test_an_error_status_with_a_body_over_the_limit_still_reports_the_status(server):
    server.reply(wire=b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10000000000000\r\n\r\n{", after="hang")
    with pytest.raises(ModelHTTPError) as info:
        ask(chat(server, timeout=30))
    assert info.value.status == 400 and "larger than max_response_bytes" in str(info.value)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_plain_body_up_to_the_limit_passes_and_one_byte_more_is_refused(server, framing):
    body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}'

    def wire(size):
        padded = body + b" " * (size - len(body))
        if framing == "content-length":
            return plain_json(padded)
        return CHUNKED + b"".join(chunk(padded[i:i + 100]) for i in range(0, size, 100)) + b"0\r\n\r\n"
    server.reply(wire=wire(1000)).reply(wire=wire(1001))
    model = chat(server, max_response_bytes=1000, max_retries=0)
    assert ask(model).output[0]["content"][0]["text"] == "hi"
    with pytest.raises(ModelHTTPError) as info:
        ask(model)
    assert info.value.type == "response_too_large" and "max_response_bytes=1000" in str(info.value)


@pytest.mark.parametrize("lines,what", [
    (["data: " + "x" * 2000 + "\n\n"], "a line"),
    ([": " + "x" * 2000 + "\n\n"], "a line"),
    (["data: " + "x" * 400 + "\n"] * 5 + ["\n"], "an event"),
], ids=["data-line", "comment-line", "event-of-many-lines"])
def test_a_stream_line_or_event_over_the_limit_is_refused(server, lines, what):
    server.reply_sse(sse(chat_chunks("hi")[0], done=False) + lines, chunk_size=64)
    with pytest.raises(ModelHTTPError) as info:
        stream(chat(server, max_response_bytes=1000))
    assert info.value.type == "response_too_large" and len(server.requests) == 1
    assert f"{what} of the stream is larger than max_response_bytes=1000" in str(info.value)


def test_a_stream_has_no_total_cap_only_each_event_has(server):
    server.reply_sse(sse(*chat_chunks(" ".join(["word"] * 100))))  # ~20 kB in all, each event well under 1000
    events = stream(chat(server, max_response_bytes=1000))
    assert events[-1]["type"] == "response.completed"


def test_the_limits_are_checked_and_reach_the_transport_from_the_provider():
    with pytest.raises(ValueError, match="max_response_bytes must be an int >= 1"):
        OpenAIChatCompletionsModel("m", base_url="http://127.0.0.1:9/v1", max_response_bytes=0)
    with pytest.raises(ValueError, match="attempt_timeout must be a finite number of seconds > 0"):
        OpenAIResponsesModel("m", base_url="http://127.0.0.1:9/v1", attempt_timeout=-1)
    with pytest.raises(ValueError, match="attempt_timeout"):
        OpenAIProvider(base_url="http://127.0.0.1:9/v1", attempt_timeout=0)
    model = OpenAIProvider(base_url="http://127.0.0.1:9/v1", attempt_timeout=7.0,
                           max_response_bytes=1234).get_model("m")
    assert (model.transport.attempt_timeout, model.transport.max_response_bytes) == (7.0, 1234)


@pytest.mark.parametrize("bounds, words", [
    ({"timeout": float("inf")}, "timeout must be a finite number of seconds > 0, got inf"),
    ({"timeout": None}, "timeout must be a finite number of seconds > 0, got None"),
    ({"timeout": -1}, "timeout must be a finite number of seconds > 0, got -1"),
    ({"timeout": float("nan")}, "timeout must be a finite number of seconds > 0, got nan"),
    ({"timeout": True}, "timeout must be a finite number of seconds > 0, got True"),
    ({"max_retries": None}, "max_retries must be an int >= 0, got None"),
    ({"max_retries": "2"}, "max_retries must be an int >= 0, got '2'"),
    ({"max_retries": -1}, "max_retries must be an int >= 0, got -1"),
])
def test_a_timeout_or_retry_count_no_clock_can_keep_is_refused_when_the_model_is_made(bounds, words):
    """They were taken, and failed at the first request (OverflowError, TypeError) or the first 500."""
    for make in (lambda: OpenAIChatCompletionsModel("m", base_url="http://127.0.0.1:9/v1", **bounds),
                 lambda: OpenAIProvider(base_url="http://127.0.0.1:9/v1", **bounds)):
        with pytest.raises(ValueError, match=re.escape(words)):
            make()


def test_a_model_settings_timeout_no_clock_can_keep_is_refused():
    from miniagents import ModelSettings

    with pytest.raises(ValueError, match="ModelSettings.timeout must be a finite number of seconds > 0, got inf"):
        ModelSettings(timeout=float("inf"))
