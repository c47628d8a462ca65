"""The server's request id (its `x-request-id` header) reaches every error an answer can end in, plain or streamed,
as the error's `request_id` and in its text, so a person can quote it to the provider; and a request id that
echoes a secret (the key, a credential sent in a header) shows it as `***`, like every other text of an error."""
import pytest

from miniagents.errors import ModelHTTPError
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.models.interface import ModelSettings
from miniagents.models.responses import OpenAIResponsesModel
from openai_server import sse

USER = [{"role": "user", "content": "hi"}]
KEY = "sk-proj-requestid-0123456789"
HEADER_SECRET = "hdr-secret-0123456789"

# (adapter, reply without its headers, streamed?): each ends in a ModelHTTPError read from the answer.
ANSWERS = {
    "status 400": ("chat", {"status": 400, "json": {"error": {"message": "bad request"}}}, False),
    "a web page with status 200": ("chat", {"status": 200, "raw": "<html>Welcome</html>",
                                            "content_type": "text/html"}, False),
    "a web page with status 200 (responses)": ("responses", {"status": 200, "raw": "It works!",
                                                             "content_type": "text/plain"}, False),
    "an error body with status 200": ("chat", {"status": 200, "json": {"error": {"message": "overloaded"}}}, False),
    "an error body with status 200 (responses)": ("responses", {"status": 200, "json": {
        "error": {"message": "overloaded", "code": 500}}}, False),
    "a failed response": ("responses", {"status": 200, "json": {
        "status": "failed", "error": {"message": "overloaded", "code": "server_error"}, "output": []}}, False),
    "an error in a chat stream": ("chat", {"sse": sse({"error": {"message": "overloaded", "code": 502}})}, True),
    "an error event in a responses stream": ("responses", {"sse": sse(
        {"type": "error", "message": "overloaded", "code": "server_error"}, done=False)}, True),
    "a failed response in a stream": ("responses", {"sse": sse(
        {"type": "response.failed", "response": {"error": {"message": "overloaded", "code": "server_error"}}},
        done=False)}, True),
}


def fail(server, answer, request_id, settings=None):
    adapter, reply, streamed = ANSWERS[answer]
    server.replies[:] = [dict(reply, headers={"x-request-id": request_id})]
    cls = OpenAIChatCompletionsModel if adapter == "chat" else OpenAIResponsesModel
    model = cls("m", base_url=server.url, api_key=KEY, max_retries=0)
    with pytest.raises(ModelHTTPError) as caught:
        if streamed:
            list(model.stream_response(None, USER, settings or ModelSettings(), [], None, []))
        else:
            model.get_response(None, USER, settings or ModelSettings(), [], None, [])
    return caught.value


@pytest.mark.parametrize("answer", list(ANSWERS))
def test_the_servers_request_id_is_in_the_error_and_its_text(server, answer):
    err = fail(server, answer, "req_7f3a9c")
    assert err.request_id == "req_7f3a9c"
    assert "(request id req_7f3a9c)" in str(err)


@pytest.mark.parametrize("answer", list(ANSWERS))
def test_a_request_id_echoing_the_key_or_a_header_credential_shows_stars_in_its_place(server, answer):
    err = fail(server, answer, f"req_{KEY}", ModelSettings(extra_headers={"X-Api-Key": HEADER_SECRET}))
    assert err.request_id == "req_***"
    assert "(request id req_***)" in str(err) and KEY not in str(err)
    err = fail(server, answer, f"req_{HEADER_SECRET}", ModelSettings(extra_headers={"X-Api-Key": HEADER_SECRET}))
    assert err.request_id == "req_***" and HEADER_SECRET not in str(err)


@pytest.mark.parametrize("answer", ["status 400", "an error body with status 200",
                                    "an error body with status 200 (responses)"])
def test_an_error_read_from_an_answers_body_keeps_the_answers_status(server, answer):
    assert fail(server, answer, "req_1").status == ANSWERS[answer][1]["status"]


@pytest.mark.parametrize("answer,where", [("a failed response", "in its response"),
                                          ("a failed response in a stream", "in the stream")])
def test_a_failed_response_says_where_the_server_reported_it(server, answer, where):
    assert str(fail(server, answer, "req_1")).startswith(f"the server reported an error {where}: overloaded")
