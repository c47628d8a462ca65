"""The HTTP transport under attack (issues 30 and 31): a body of unknown length over the size cap, proxy
credentials, a key in the base URL's query string, a server's control characters, and a Python without `_ssl`.
Each is a typed error or a request that works, and no message shows a secret or a raw control character."""
import base64
import json
import socket
import subprocess
import sys
import textwrap
import threading
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from miniagents import AgentsException, UserError
from miniagents.errors import ModelBehaviorError, ModelHTTPError
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import OpenAITestServer, chat_completion
from support import ROOT
from test_key_secrecy import SCENARIOS, leaks as leaks_of, pad

USER = [{"role": "user", "content": "hi"}]


def ask(model, settings=None):
    return model.get_response(None, USER, settings or ModelSettings(), [], None, [])


def stream(model, settings=None):
    return list(model.stream_response(None, USER, settings or ModelSettings(), [], None, []))


@pytest.fixture(scope="module")
def shared_server():
    srv = OpenAITestServer()
    yield srv
    srv.close()


# --- A body of unknown length over max_response_bytes --------------------------------------------------------------


def padded(body: dict, size: int) -> bytes:
    """`body` as JSON padded with spaces to exactly `size` bytes (at least its own length)."""
    data = json.dumps(body).encode()
    return data + b" " * max(0, size - len(data))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(over=st.integers(-3, 3), framing=st.sampled_from(["close", "length", "chunked"]),
       status=st.sampled_from([200, 500]))
def test_a_body_over_the_cap_is_response_too_large_however_it_is_framed(shared_server, over, framing, status):
    """Just under, at and just over `max_response_bytes`, with a Content-Length, chunked, or neither (the body ends
    when the connection closes): over the cap is `ModelHTTPError(type="response_too_large")`, never a TypeError."""
    limit = 2000
    body = chat_completion("hello") if status == 200 else {"error": {"message": "the server fell over"}}
    data = padded(body, limit + over)
    head = b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n" % status
    if framing == "close":
        wire = head + b"Connection: close\r\n\r\n" + data
    elif framing == "length":
        wire = head + b"Content-Length: %d\r\n\r\n" % len(data) + data
    else:
        wire = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    shared_server.replies[:] = [{"wire": wire}]
    model = OpenAIChatCompletionsModel("m", base_url=shared_server.url, api_key="sk-test", max_retries=0,
                                       max_response_bytes=limit)
    if status == 200 and over <= 0:
        assert ask(model).output[0]["content"][0]["text"] == "hello"
        return
    with pytest.raises(ModelHTTPError) as caught:
        ask(model)
    if over > 0:  # an error status says its status, and that its body was too large
        assert f"the response is larger than max_response_bytes={limit}" in str(caught.value)
        assert caught.value.type == ("response_too_large" if status == 200 else None)
    else:
        assert caught.value.status == 500 and "the server fell over" in str(caught.value)


# --- Proxy credentials ------------------------------------------------------------------------------------------

CREDENTIAL = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_characters="\x7f"),
                     min_size=1, max_size=12)


PROXY_HINT = ("(the proxy 127.0.0.1 asks for credentials: give them in its URL, "
              "http_proxy=http://user:password@host:port, percent-encoded) (POST http://api.example.test:80/v1/chat/"
              "completions, 1 attempt)")  # what the transport writes itself, around the server's words


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=CREDENTIAL.filter(lambda u: ":" not in u), password=CREDENTIAL)
def test_plain_http_through_a_proxy_sends_its_credentials(shared_server, monkeypatch, user, password):
    """`http_proxy=http://user:pass@host:port` (percent-encoded as a URL must be): every request carries
    `Proxy-Authorization: Basic base64(user:pass)`, decoded, and no message ever shows them."""
    # a password that is a word the transport itself writes (hypothesis found "POST") is in the message by chance
    assume(password not in f"{PROXY_HINT} {shared_server.url}")
    proxy = shared_server.url.replace("http://", f"http://{quote(user, safe='')}:{quote(password, safe='')}@")
    monkeypatch.setenv("http_proxy", proxy.rsplit("/v1", 1)[0] if "/v1" in proxy else proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    shared_server.requests.clear()
    shared_server.replies[:] = [{"json": chat_completion("via the proxy")},
                                {"status": 407, "json": {"error": {
                                    "message": f"bad credentials {basic(user, password)} for {user}:{password}"}}}]
    model = OpenAIChatCompletionsModel("m", base_url="http://api.example.test/v1", api_key="sk-test", max_retries=0)
    assert ask(model).output[0]["content"][0]["text"] == "via the proxy"
    [sent] = shared_server.requests
    assert sent["headers"]["proxy-authorization"] == basic(user, password)
    with pytest.raises(ModelHTTPError) as caught:
        ask(model)
    texts = [str(caught.value), repr(caught.value.args), repr(model), repr(model.transport)]
    encoded = basic(user, password).split()[1]
    assert not [t for t in texts if encoded in t or (len(password) >= 4 and password in t)]
    assert "407" in str(caught.value) and "proxy" in str(caught.value).lower()


class ConnectProxy:
    """A proxy that records each CONNECT request's head, then refuses it (407 unless told another answer)."""

    def __init__(self, answer: bytes = b"407 Proxy Authentication Required"):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.heads: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                head = b""
                while b"\r\n\r\n" not in head:
                    piece = conn.recv(4096)
                    if not piece:
                        break
                    head += piece
                self.heads.append(head.decode("latin-1"))
                conn.sendall(b"HTTP/1.1 " + self.answer + b"\r\nContent-Length: 0\r\n\r\n")

    def close(self):
        """Wakes the thread's accept (closing alone leaves it blocked for ever, holding the socket) and waits."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # not every system lets a listening socket be shut down
            pass
        self.sock.close()
        self.thread.join(10)


def refused_tunnel(monkeypatch, credentials="", answer=b"407 Proxy Authentication Required"):
    """Ask through an HTTPS proxy (`credentials` as `user:password@`, percent-encoded) that refuses the tunnel with
    `answer`: the CONNECT heads it saw, and the error raised."""
    pytest.importorskip("ssl")
    proxy = ConnectProxy(answer)
    try:
        monkeypatch.setenv("https_proxy", f"http://{credentials}127.0.0.1:{proxy.port}")
        model = OpenAIChatCompletionsModel("m", base_url="https://api.example.test/v1", api_key="sk-test",
                                           max_retries=0)
        with pytest.raises(ModelHTTPError) as caught:
            ask(model)
    finally:
        proxy.close()
    return proxy.heads, caught.value


def test_the_https_tunnel_through_a_proxy_carries_its_credentials(monkeypatch):
    [head], error = refused_tunnel(monkeypatch, "ada%40acme:p%3Ass%20w0rd@")
    assert head.startswith("CONNECT api.example.test:443 HTTP/1.")
    assert f"Proxy-Authorization: {basic('ada@acme', 'p:ss w0rd')}\r\n" in head
    message = str(error)
    assert "p:ss w0rd" not in message and "p%3Ass" not in message and basic("ada@acme", "p:ss w0rd")[6:] not in message
    assert "407" in message


@pytest.mark.parametrize("answer, hint", [
    (b"407 Proxy Authentication Required", "; give the proxy's credentials in its URL, "
                                           "https_proxy=http://user:password@host:port (percent-encoded)"),
    (b"403 Forbidden", ""),
])
def test_a_proxy_refusing_the_tunnel_says_so_and_asks_for_credentials_only_on_407(monkeypatch, answer, hint):
    _, error = refused_tunnel(monkeypatch, answer=answer)
    said = f"the proxy refused the tunnel to api.example.test:443 (Tunnel connection failed: {answer.decode()}){hint}"
    assert f"{said} (POST https://api.example.test:443/v1/chat/completions, 1 attempt)" in str(error)  # no more


def test_a_proxy_url_with_a_bad_port_is_a_user_error_without_its_credentials(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://ada:hunter2-secret@proxy.example.test:80x80")
    model = OpenAIChatCompletionsModel("m", base_url="http://api.example.test/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(UserError) as caught:
        ask(model)
    assert "http_proxy" in str(caught.value) and "hunter2-secret" not in str(caught.value)


@pytest.mark.parametrize("proxy, port", [("http://proxy.example.test", 80), ("proxy.example.test:3128", 3128)])
def test_a_proxy_url_without_a_port_is_reached_on_port_80(monkeypatch, proxy, port):
    """As curl and urllib read it (a generated mutant making the default 81 survived the suite)."""
    monkeypatch.setenv("http_proxy", proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    model = OpenAIChatCompletionsModel("m", base_url="http://api.example.test/v1", api_key="sk-test", max_retries=0)
    found = model.transport.proxy()
    assert (found.host, found.port, found.authorization) == ("proxy.example.test", port, None)


# --- A key in the base URL's query string ---------------------------------------------------------------------

QUERY_KEY = "AIza+Sy/Q7kd93jf=KEY81"


def query_leaks(err: BaseException) -> list:
    """Every text of `err` (and its causes) that shows the query key, raw, percent-encoded or decoded."""
    forms = {QUERY_KEY, quote(QUERY_KEY, safe=""), QUERY_KEY.replace("+", " ")}
    found, seen = [], err
    while seen is not None:
        texts = [str(seen), repr(seen), repr(seen.args)] + [
            json.dumps(getattr(seen, name), default=repr, ensure_ascii=False)
            for name in ("message", "type", "code", "param", "request_id") if hasattr(seen, name)]
        found += [t for t in texts if any(form in t for form in forms)]
        seen = seen.__cause__ or seen.__context__
    return found


@given(scenario=st.sampled_from(SCENARIOS), prefix=pad, adapter=st.sampled_from(["chat", "responses"]),
       name=st.sampled_from(["key", "api-key", "sig", "access_token", "apiKey", "code"]),
       echoed=st.sampled_from(["raw", "decoded", "target"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_key_in_the_base_urls_query_string_is_in_no_message(shared_server, scenario, prefix, adapter, name,
                                                                  echoed):
    """Gemini's `?key=`, Azure's `?sig=`, `?code=`...: whatever the server echoes (the key as sent, decoded, or the
    whole request target), no message, repr or field shows it."""
    from test_key_secrecy import KEY
    encoded = quote(QUERY_KEY, safe="")
    shown = {"raw": encoded, "decoded": QUERY_KEY, "target": f"/v1/chat/completions?{name}={encoded}"}[echoed]
    reply, is_stream = scenario(prefix)
    reply = json.loads(json.dumps(reply, default=lambda b: b.decode("latin-1")).replace(KEY, shown))
    if "wire" in reply:
        reply["wire"] = reply["wire"].encode("latin-1")
    shared_server.replies[:] = [dict(reply) for _ in range(3)]
    cls = OpenAIChatCompletionsModel if adapter == "chat" else OpenAIResponsesModel
    model = cls("m", base_url=f"{shared_server.url}/v1?{name}={encoded}", api_key="sk-other-key-0123")
    try:
        stream(model) if is_stream else ask(model)
    except AgentsException as err:
        assert query_leaks(err) == []
    for text in (repr(model), repr(model.transport)):
        assert QUERY_KEY not in text and encoded not in text


def test_the_query_key_is_sent_and_an_echo_of_the_request_target_is_redacted(shared_server):
    encoded = quote(QUERY_KEY, safe="")
    shared_server.requests.clear()
    shared_server.replies[:] = [{"status": 404, "json": {"error": {"message": f"no route POST /v1/x?key={encoded}"}}}]
    model = OpenAIChatCompletionsModel("m", base_url=f"{shared_server.url}/v1?key={encoded}", api_key="x",
                                       max_retries=0)
    with pytest.raises(ModelHTTPError) as caught:
        ask(model)
    assert shared_server.requests[0]["query"] == {"key": QUERY_KEY}  # it was sent
    assert query_leaks(caught.value) == [] and "no route POST /v1/x?key=***" in str(caught.value)


def test_the_walkthrough_sidecar_redacts_the_query_key(tmp_path, shared_server):
    """`python demo.py --live --record`: the sidecar says why a chapter could not run; the model's secrets are
    redacted from it, the base URL's query key among them."""
    sys.path.insert(0, str(ROOT))
    try:
        import demo
    finally:
        sys.path.remove(str(ROOT))
    model = OpenAIChatCompletionsModel("m", base_url=f"{shared_server.url}/v1?key={quote(QUERY_KEY, safe='')}",
                                       api_key="sk-other-key-0123")
    model.transport  # made, as after the first call
    chapters = [{"chapter": 1, "title": "x", "calls": 0,
                 "could_not_run": f"HTTP 400 echoing {QUERY_KEY} and {quote(QUERY_KEY, safe='')}"}]
    demo.write_sidecar(str(tmp_path / "run.jsonl"), chapters, {}, model)
    text = (tmp_path / "run.jsonl.walkthrough.json").read_text(encoding="utf-8")
    assert QUERY_KEY not in text and quote(QUERY_KEY, safe="") not in text


# --- A server's control characters never reach a message raw -------------------------------------------------------

CONTROL = st.sampled_from(["\x1b[2J", "\r\n", "\n2024-01-01 ERROR forged log line\n", "\x07", "\x00", "\x85",
                           "\u2028", "\u202e", "\x9b31m", "\t", "\x08\x08\x08"])
HOSTILE_TEXT = st.lists(st.one_of(CONTROL, st.text("abc ", max_size=5)), min_size=1, max_size=6).map("".join)


def printable(err: BaseException) -> bool:
    """Whether every text `err` shows (and what a traceback of it shows: its cause, a context not suppressed)
    is printable."""
    seen = err
    while seen is not None:
        for text in [str(seen)] + [getattr(seen, name) for name in ("message", "type", "code", "param", "request_id")
                                   if isinstance(getattr(seen, name, None), str)]:
            if not text.isprintable():
                return False
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return True


def hostile_replies(text: str, header_text: str) -> list:
    """(reply, streamed?) pairs: the server's text in every place a message takes it from."""
    def data(value):
        return "data: " + json.dumps(value) + "\n\n"
    return [
        ({"status": 400, "json": {"error": {"message": text, "type": text, "code": text, "param": text}},
          "headers": {"x-request-id": header_text}}, False),
        ({"status": 400, "raw": text.encode("utf-8", "surrogatepass")}, False),
        ({"status": 502, "raw": f"<html><h1>{text}</h1></html>", "content_type": "text/html"}, False),
        ({"status": 422, "json": {"detail": [{"loc": ["body", text], "msg": text}]}}, False),
        ({"status": 200, "raw": text + " {", "content_type": header_text or "text/plain"}, False),
        ({"status": 200, "json": {"status": "incomplete", "incomplete_details": {"reason": text}, "output": []}},
         False),
        ({"status": 200, "json": {"status": "failed", "error": {"message": text, "code": text}, "output": []}}, False),
        ({"sse": [data({"error": {"message": text, "code": text}})]}, True),
        ({"sse": ["data: " + text.replace("\n", " ").replace("\r", " ") + "{\n\n"]}, True),
        ({"sse": [data({"type": "error", "message": text, "code": text})]}, True),
        ({"sse": [data({"type": "response.incomplete", "response": {"incomplete_details": {"reason": text}}})]},
         True),
        ({"wire": b"HTTP/1.1 200 OK\r\n" + text.replace("\r", "").replace("\n", "").encode("latin-1", "replace")
                  + b"\r\n\r\n"}, False),
        ({"wire": b"HTTP/1.1 " + text.replace("\r", "").replace("\n", "").encode("latin-1", "replace")
                  + b"\r\n\r\n"}, False),
    ]


HEADER_TEXT = st.lists(st.sampled_from(["\x1b[2J", "\x07", "ok", "\x7f"]), max_size=3).map("".join)


@given(text=HOSTILE_TEXT, header=HEADER_TEXT, which=st.integers(0, 12), adapter=st.sampled_from(["chat", "responses"]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_servers_control_characters_reach_no_message_raw(shared_server, text, header, which, adapter):
    reply, streamed = hostile_replies(text, header)[which]
    shared_server.replies[:] = [dict(reply) for _ in range(3)]
    cls = OpenAIChatCompletionsModel if adapter == "chat" else OpenAIResponsesModel
    model = cls("m", base_url=shared_server.url, api_key="sk-test-0123456", max_retries=0)
    try:
        stream(model) if streamed else ask(model)
    except AgentsException as err:
        assert printable(err), [str(err)]


def test_an_escaped_control_character_still_says_what_it_was(shared_server):
    shared_server.replies[:] = [{"status": 400, "json": {"error": {"message": "bad\r\n2024 INFO ok\x1b[2J"}}}]
    with pytest.raises(ModelHTTPError) as caught:
        ask(OpenAIChatCompletionsModel("m", base_url=shared_server.url, api_key="sk-test", max_retries=0))
    assert "bad\\r\\n2024 INFO ok\\x1b[2J" in str(caught.value)
    assert caught.value.body == {"error": {"message": "bad\r\n2024 INFO ok\x1b[2J"}}  # the data as it came


# --- A Python without _ssl (issue 31) --------------------------------------------------------------------------

NO_SSL = textwrap.dedent("""
    import sys

    class Blocker:  # this Python was built without _ssl
        def find_spec(self, name, path=None, target=None):
            if name in ("_ssl", "ssl"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Blocker())
    for name in ("ssl", "_ssl"):
        sys.modules.pop(name, None)
    from miniagents import Agent, Runner, MissingFeatureError
    from miniagents.models.chat_completions import OpenAIChatCompletionsModel
    model = OpenAIChatCompletionsModel("m", base_url="https://ada:pw-hunter2@api.example.test/v1?key=AIzaQUERYKEY123",
                                       api_key="sk-no-ssl-0123456789")
    try:
        Runner.run_sync(Agent(name="A", model=model), "hi")
    except MissingFeatureError as error:
        print("MissingFeatureError:", error)
    plain = OpenAIChatCompletionsModel("m", base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    try:
        Runner.run_sync(Agent(name="A", model=plain), "hi")
    except Exception as error:
        print("plain:", type(error).__name__)
""")


def test_https_without_ssl_is_a_missing_feature_error_naming_the_url_and_the_module():
    done = subprocess.run([sys.executable, "-c", NO_SSL], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert said.startswith("MissingFeatureError: "), said
    assert "https://api.example.test:443/v1" in said and "ssl" in said
    for secret in ("pw-hunter2", "AIzaQUERYKEY123", "sk-no-ssl-0123456789"):
        assert secret not in said
    assert "plain: ModelHTTPError" in said  # plain http still works (here: a refused connection, typed)


def test_proxy_credentials_never_reach_a_server_the_proxy_is_bypassed_for(shared_server, monkeypatch):
    """`no_proxy` sends a host's requests straight to it: its credentials for the proxy are not sent there."""
    monkeypatch.setenv("http_proxy", "http://ada:hunter2-secret@proxy.example.test:3128")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    shared_server.requests.clear()
    shared_server.replies[:] = [{"json": chat_completion("direct")}]
    model = OpenAIChatCompletionsModel("m", base_url=shared_server.url, api_key="sk-test", max_retries=0)
    assert ask(model).output[0]["content"][0]["text"] == "direct"
    assert "proxy-authorization" not in shared_server.requests[0]["headers"]


def test_a_credential_sent_in_extra_headers_or_extra_query_and_echoed_is_in_no_message(shared_server):
    secret, token = "hdr-secret-0123456789", "qry-token-9876543210"
    said = {"error": {"message": f"bad X-Api-Key {secret}, token {token}"}}
    shared_server.replies[:] = [{"status": 400, "json": said, "headers": {"x-request-id": secret}}]
    model = OpenAIChatCompletionsModel("m", base_url=shared_server.url, api_key="sk-test", max_retries=0)
    settings = ModelSettings(extra_headers={"X-Api-Key": secret}, extra_query={"access_token": token})
    with pytest.raises(ModelHTTPError) as caught:
        ask(model, settings)
    assert secret not in str(caught.value) and token not in str(caught.value)
    assert secret not in (caught.value.request_id or "")


ECHOED = "hdr-secret-5555666677"  # sent in extra_headers, echoed in an answer that is not an HTTP error


@pytest.mark.parametrize("adapter", [OpenAIChatCompletionsModel, OpenAIResponsesModel])
@pytest.mark.parametrize("answer", ["body", "stream-error", "stream-line", "failed", "incomplete"])
def test_a_credential_the_request_sent_is_in_no_in_band_error(shared_server, adapter, answer):
    """An error that comes in a 200 answer (an error body, an error event, a line that is not JSON, a failed or
    incomplete response) is redacted of what the request sent too, not only of what the transport holds."""
    said = {"message": f"bad X-Api-Key {ECHOED}"}
    response = {"id": "r", "status": answer, "output": [], "error": said,
                "incomplete_details": {"reason": f"key {ECHOED}"}}
    shared_server.replies[:] = [{"status": 200, "json": {"error": said}} if answer == "body" else
                                {"status": 200, "json": response} if answer in ("failed", "incomplete") else
                                {"sse": [f"data: {json.dumps({'type': 'error', 'error': said})}\n\n"]
                                 if answer == "stream-error" else [f"data: not json {ECHOED}\n\n"]}]
    if adapter is OpenAIChatCompletionsModel and answer in ("failed", "incomplete"):
        pytest.skip("a status only the Responses API has")
    model = adapter("m", base_url=shared_server.url, api_key="sk-test", max_retries=0)
    settings = ModelSettings(extra_headers={"X-Api-Key": ECHOED})
    with pytest.raises((ModelHTTPError, ModelBehaviorError)) as caught:
        (stream if answer.startswith("stream") else ask)(model, settings)
    assert "bad X-Api-Key" in str(caught.value) or "key ***" in str(caught.value) or "not JSON" in str(caught.value)
    assert ECHOED not in str(caught.value)


@pytest.mark.parametrize("base_url", ["http://user:9/SECRET@127.0.0.1:1/v1", "http://user:9?SECRET@127.0.0.1:1/v1",
                                      "http://user:9#SECRET@127.0.0.1:1/v1", "http://127.0.0.1:1/v1/SECRET/@cf/x"])
def test_a_base_url_read_two_ways_is_refused_before_a_request_shows_it(base_url):
    """A password of digits then an unencoded "/" reads, to http.client, as a port and a path: the request went to
    the user name as a host, and its error showed the password in the URL, while the repr showed another host. A
    URL whose host has two readings is refused, the password not shown (nor a path the repr would read as one)."""
    with pytest.raises(ValueError, match="is read two ways") as refused:
        OpenAIChatCompletionsModel("m", base_url=base_url, max_retries=0).transport
    assert "SECRET" not in str(refused.value)


@pytest.mark.parametrize("base_url", ["http://h:1/v1?key=SECRET%2FVALUE9", "http://h:1/v1?sig=SECRET%2FVALUE9&x=1",
                                      "http://user:SECRET%2FVALUE9@h:1/v1",
                                      "http://h:1/v1?X-Goog-Api-Key=SECRET%2FVALUE9",
                                      "http://[h:1/v1?key=SECRET%2FVALUE9", "http://h:x/v1?key=SECRET%2FVALUE9",
                                      # a password whose "/", "?" or "#" is not percent-encoded: shown, it was
                                      "http://user:SECRET/VALUE9@h:1/v1", "http://user:SECRET?VALUE9@h:1/v1",
                                      "http://user:SECRET#VALUE9@h:1/v1", "http://user:SECRET@VALUE/9@h:1/v1"])
def test_a_models_and_a_providers_repr_show_no_secret_of_the_base_url(base_url):
    """A repr is printed, logged and recorded: the base URL's password and credential-named query values are hidden
    (as written and decoded), the rest of it shown."""
    from miniagents.upstream.providers import MultiProvider, OpenAIProvider
    shown = [repr(OpenAIChatCompletionsModel("m", base_url=base_url)),
             repr(OpenAIResponsesModel("m", base_url=base_url)),
             repr(OpenAIProvider(base_url=base_url)), repr(MultiProvider(openai_base_url=base_url))]
    for text in shown:
        assert "SECRET" not in text and "/v1" in text, text
    try:  # a base URL that is not one is refused at the first request, shown the same way
        OpenAIChatCompletionsModel("m", base_url=base_url).transport
    except ValueError as refused:
        assert "SECRET" not in str(refused) and "base_url must be an http(s) URL" in str(refused)
