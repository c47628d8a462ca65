"""A small OpenAI-compatible test server over real sockets (127.0.0.1, random port, threaded).

Tests script the replies (`server.reply(...)`, `server.reply_sse(...)`), then point an adapter at
`server.url`. Every request is recorded (path, query, headers, parsed JSON body, client port — so
keep-alive reuse is visible). Faults are part of a scripted reply: status + headers (429 with
`retry-after`), a raw body (HTML 502 page, empty, plain string), a silent close after replying, a delay
(past the client's timeout), SSE written in tiny chunks (every byte), keep-alive comments, a dropped
connection mid-stream, raw bytes on the wire (`wire=`: a body shorter than its Content-Length, bad chunk
sizes) followed by a close, a reset or silence, silence instead of any answer (`hang=True`), a stream
that stays open after its last event (`hold=True`, optionally pinging), a stream whose lines come one by one
with a pause between them (`pause=`), and raw bytes dripped forever (`drip=`: a head, then `repeat` every
`every` seconds until the client hangs up, or for `for_seconds` at most: a server that never finishes).
Replies are consumed in order; with none left the server answers 500 "no scripted reply" (or what
`server.otherwise(body)` returns, e.g. `prose(text)`: the same text to every request, plain or streamed).
`server.emulate(name)` makes it refuse requests the way a real server does (see `EMULATED`): a refused
request is recorded with what was answered (`"refused"`) and consumes no scripted reply; an emulation may also
answer a request itself, as that server would (`"answered"`: llama-server ignoring what it does not read).
"""
from __future__ import annotations

import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse(*events, done=True, event_names=False) -> list:
    """SSE lines for JSON payloads (strings pass through as raw lines, e.g. ': keep-alive')."""
    lines = []
    for ev in events:
        if isinstance(ev, str):
            lines.append(ev + "\n")
            continue
        if event_names and isinstance(ev, dict) and "type" in ev:
            lines.append(f"event: {ev['type']}\n")
        lines.append("data: " + json.dumps(ev) + "\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return lines


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):
        srv = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        parts = urlsplit(self.path)
        record = {"path": parts.path, "query": dict(parse_qsl(parts.query)),
                  "headers": {k.lower(): v for k, v in self.headers.items()},
                  "body": body, "client_port": self.client_address[1]}
        refusal = srv.judge(body) if srv.judge is not None and isinstance(body, dict) else None
        with srv.lock:
            srv.requests.append(record)
            if isinstance(refusal, dict):  # an answer of the emulated server's own (a dict: a reply as queued)
                record["answered"] = reply = refusal
            elif refusal is not None:
                record["refused"] = {"status": refusal[0], "json": refusal[1]}
                reply = {"status": refusal[0], "json": refusal[1]}
            else:
                reply = srv.replies.pop(0) if srv.replies else srv.otherwise(body) if srv.otherwise else {
                    "status": 500, "json": {"error": {"message": "no scripted reply", "type": "server_error"}}}
        if reply.get("delay"):
            time.sleep(reply["delay"])
        if reply.get("hang"):
            self._hang()
        elif "drip" in reply:
            self._drip(reply)
        elif "wire" in reply:
            self._wire(reply)
        elif "sse" in reply:
            self._stream(reply)
        else:
            self._plain(reply)

    def _hang(self):
        """Say nothing until the server closes (a silent server, for timeouts and cancelling)."""
        self.server.owner.closing.wait(60)
        self.close_connection = True

    def _drip(self, reply):
        """A server that never finishes: `drip` bytes, then `repeat` every `every` s until the client hangs up."""
        owner, until = self.server.owner, time.monotonic() + reply.get("for_seconds", 12)
        try:
            self.wfile.write(reply["drip"])
            self.wfile.flush()
            while time.monotonic() < until and not owner.closing.wait(reply["every"]):
                self.wfile.write(reply["repeat"])
                self.wfile.flush()
        except OSError:
            pass  # the client hung up: what the test waits for
        self.close_connection = True

    def _wire(self, reply):
        self.wfile.write(reply["wire"])
        self.wfile.flush()
        after = reply.get("after", "close")
        if after == "hang":
            self._hang()
        elif after == "reset":  # RST instead of FIN: the client's read fails with ConnectionResetError
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _plain(self, reply):
        data = reply["raw"] if "raw" in reply else json.dumps(reply.get("json", {})).encode()
        if isinstance(data, str):
            data = data.encode()
        self.send_response(reply.get("status", 200))
        self.send_header("Content-Type", reply.get("content_type", "application/json"))
        self.send_header("Content-Length", str(len(data)))
        for k, v in (reply.get("headers") or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        if reply.get("close_after"):  # hang up without saying so: the client's pooled socket goes stale
            self.close_connection = True

    def _stream(self, reply):
        self.send_response(reply.get("status", 200))
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (reply.get("headers") or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if reply.get("pause"):  # each line its own chunk, a pause after each
            for line in reply["sse"]:
                self.wfile.write(chunk(line.encode()))
                self.wfile.flush()
                time.sleep(reply["pause"])
            self.wfile.write(b"0\r\n\r\n")
            return
        data = "".join(reply["sse"]).encode()
        cut = reply.get("drop_after")  # bytes of the stream to send before dropping the connection
        step = reply.get("chunk_size") or len(data) or 1
        for start in range(0, len(data) if cut is None else min(cut, len(data)), step):
            piece = data[start:start + step if cut is None else min(start + step, cut)]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        if cut is not None:
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        if reply.get("hold"):  # the answer is complete, but the server keeps the stream open
            owner, until = self.server.owner, time.monotonic() + 3  # pings for 3 s at most, then silence
            while reply.get("ping_every") and time.monotonic() < until and not owner.closing.wait(reply["ping_every"]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b": ping\n\n"), b": ping\n\n"))
                self.wfile.flush()
            self._hang()
            return
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # clients that hang up (timeout tests) are expected
        pass


class OpenAITestServer:
    def __init__(self):
        self.requests: list = []
        self.replies: list = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.judge = None  # body -> None (accept) or (status, json body) to refuse it
        self.otherwise = None  # body -> the reply when no scripted one is left (None: a 500 "no scripted reply")
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def reply(self, json_body=None, *, status=200, **kw) -> "OpenAITestServer":
        """Queue one plain reply (JSON by default; `raw=` bytes/str for other bodies)."""
        self.replies.append({"status": status, "json": json_body if json_body is not None else {}, **kw})
        return self

    def reply_sse(self, lines, **kw) -> "OpenAITestServer":
        """Queue one streamed reply; `chunk_size=1` splits at every byte, `drop_after=n` cuts the socket."""
        self.replies.append({"sse": list(lines), **kw})
        return self

    def emulate(self, name: str) -> "OpenAITestServer":
        """Refuse requests as the named real server does (a key of `EMULATED`)."""
        self.judge = EMULATED[name]
        return self

    @property
    def bodies(self) -> list:
        return [r["body"] for r in self.requests]

    def close(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------------------------------------------------------------------------- real servers' refusals
# What each server answers when an assistant message (one that carries tool calls, or any) says "no text"
# in a form it does not take (`null`, `""`, or no `content` key at all), or when it is asked for structured
# output in a `response_format` type it does not take.

def _error(message, type_="invalid_request_error"):
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


def _assistant_contents(body):
    """(index, content or the string "<missing>") for every assistant message of a Chat body."""
    return [(i, m["content"] if "content" in m else "<missing>")
            for i, m in enumerate(body.get("messages") or []) if isinstance(m, dict) and m.get("role") == "assistant"]


def llama_cpp_python(body):
    """llama-cpp-python's server (FastAPI): its request model is validated by pydantic, and its catch-all handler
    reports a failed validation as a 500 whose message is FastAPI's text for it ("N validation errors:" then one
    line per error, every error at once). An assistant message's content must be a string; `response_format.type`
    must be 'text' or 'json_object' (a `schema` beside it is read). A message without `content` passes validation
    and breaks the chat template."""
    errors = []
    for i, content in _assistant_contents(body):
        if content is None:
            errors += [{"type": "string_type", "loc": ("body", "messages", i, "ChatCompletionRequestAssistantMessage",
                                                       "content"), "msg": "Input should be a valid string",
                        "input": None}] + [
                {"type": "literal_error", "loc": ("body", "messages", i, f"ChatCompletionRequest{role}Message",
                                                  "role"), "msg": f"Input should be '{role.lower()}'",
                 "input": "assistant", "ctx": {"expected": f"'{role.lower()}'"}} for role in ("System", "User", "Tool")]
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in ("text", "json_object"):
        errors.append({"type": "literal_error", "loc": ("body", "response_format", "type"),
                       "msg": "Input should be 'text' or 'json_object'", "input": fmt.get("type"),
                       "ctx": {"expected": "'text' or 'json_object'"}})
    if errors:
        count = f"{len(errors)} validation error{'s' if len(errors) != 1 else ''}"
        text = f"{count}:\n" + "".join(f"  {e}\n" for e in errors)
        return 500, _error(text, "internal_server_error")
    if any(content == "<missing>" for _, content in _assistant_contents(body)):
        return 500, _error("'dict object' has no attribute 'content'", "internal_server_error")
    return None


def ollama(body):
    """Ollama's OpenAI-compatible endpoint (Go): a null content decodes to nil and is refused."""
    for _, content in _assistant_contents(body):
        if content is None or content == "<missing>":
            return 400, _error("invalid message content type: <nil>")
    return None


def bedrock_gateway(body):
    """A gateway in front of Bedrock: an empty string becomes an empty text block, which Bedrock refuses."""
    for i, content in _assistant_contents(body):
        if content == "":
            return 400, _error(f"messages.{i}.content.0.text: text content blocks must be non-empty")
    return None


def lm_studio(body):
    """LM Studio: `response_format.type` must be json_schema or text."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in ("json_schema", "text"):
        return 400, _error("'response_format.type' must be 'json_schema' or 'text'")
    return None


IGNORED_ANSWER = "I'm sorry, but as a help desk I cannot look that up."  # what a model says that was not steered


def llama_server(body):
    """llama.cpp's llama-server (seen on a 2026 build): it reads `tool_choice` only as a string, so an object (a tool
    forced by name, either API's form) is dropped with a warning in its log and the request runs as "auto"; its
    Responses endpoint turns the request into a chat and drops `text.format`. A small model left to itself answers
    in prose, which this answers (plain or streamed, in the API's shape); anything else gets the scripted reply."""
    responses = "input" in body
    ignored = isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "function"
    fmt = (body.get("text") or {}).get("format") or {}
    if responses and fmt.get("type") == "json_schema" and "JSON schema" not in (body.get("instructions") or ""):
        ignored = True  # the schema reached the model nowhere
    if not ignored:
        return None
    if responses:
        reply = response_obj([text_item(IGNORED_ANSWER)])
        return {"sse": response_events(reply["output"])} if body.get("stream") else {"status": 200, "json": reply}
    if body.get("stream"):
        return {"sse": sse(*chat_chunks(IGNORED_ANSWER))}
    return {"status": 200, "json": chat_completion(IGNORED_ANSWER)}


EMULATED = {"llama-cpp-python": llama_cpp_python, "ollama": ollama, "bedrock-gateway": bedrock_gateway,
            "lm-studio": lm_studio, "llama-server": llama_server}

# What real servers answered, verbatim (llama-server and python -m http.server as run on this project's machine;
# llama-cpp-python's is FastAPI's own 404).
LLAMA_SERVER_CONTEXT = {"error": {"code": 400, "message": "request (5033 tokens) exceeds the available context size "
                                  "(4096 tokens), try increasing it", "type": "exceed_context_size_error",
                                  "n_prompt_tokens": 5033, "n_ctx": 4096}}
LLAMA_SERVER_NOT_FOUND = {"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}
FASTAPI_NOT_FOUND = {"detail": "Not Found"}
HTTP_SERVER_501 = ('<!DOCTYPE HTML>\n<html lang="en">\n    <head>\n        <meta charset="utf-8">\n        <title>Error '
                   'response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: '
                   '501</p>\n        <p>Message: Unsupported method (\'POST\').</p>\n        <p>Error code explanation: '
                   '501 - Server does not support this operation.</p>\n    </body>\n</html>\n')


# ---------------------------------------------------------------------------- canned wire replies

def prose(text):
    """For `server.otherwise`: every request answered with `text`, streamed when it asks for a stream (Chat)."""
    return lambda body: {"sse": sse(*chat_chunks(text))} if body.get("stream") else {"status": 200,
                                                                                     "json": chat_completion(text)}


def chat_completion(content=None, tool_calls=None, *, usage=None, finish_reason=None, **message):
    msg = {"role": "assistant", "content": content, **message}
    if tool_calls:
        msg["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                             for cid, name, args in tool_calls]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
            "usage": usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5,
                                                      "total_tokens": 15}}


def chat_chunks(text=None, tool_calls=None, *, usage=None, finish_reason=None):
    """The chunks an OpenAI-style server streams for a text and/or tool-call reply."""
    base = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None},
                                 "finish_reason": None}]}]
    for piece in (text or "").split(" ") if text else []:
        out.append({**base, "choices": [{"index": 0, "delta": {"content": piece + " "}, "finish_reason": None}]})
    for i, (cid, name, args) in enumerate(tool_calls or []):
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": cid,
                    "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": None}]})
        for j in range(0, len(args), 3):
            out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {
                "arguments": args[j:j + 3]}}]}, "finish_reason": None}]})
    out.append({**base, "choices": [{"index": 0, "delta": {},
                                     "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}]})
    if usage is not False:
        out.append({**base, "choices": [], "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5,
                                                              "total_tokens": 15}})
    return out


def response_obj(output, *, status="completed", usage=None, rid="resp_1", **extra):
    return {"id": rid, "object": "response", "status": status, "output": output,
            "usage": usage if usage is not None else {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                                                      "input_tokens_details": {"cached_tokens": 2},
                                                      "output_tokens_details": {"reasoning_tokens": 1}},
            **extra}


def text_item(text, iid="msg_1"):
    return {"type": "message", "id": iid, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call_item(call_id, name, args, iid="fc_1"):
    return {"type": "function_call", "id": iid, "call_id": call_id, "name": name, "arguments": args,
            "status": "completed"}


def response_events(output, **kw):
    """A Responses stream (event: + data: lines, no [DONE]) ending in response.completed."""
    return sse(*response_event_list(output, **kw), done=False, event_names=True)


def response_event_list(output, **kw):
    """The events of a Responses stream for `output`, as dicts."""
    resp = response_obj(output, **kw)
    events = [{"type": "response.created", "response": {**resp, "status": "in_progress", "output": []}}]
    for i, item in enumerate(output):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        if item["type"] == "message":
            events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": i,
                           "content_index": 0, "delta": item["content"][0]["text"]})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": resp})
    return events
