"""A small MCP server over stdio, for the tests: the protocol as it should be spoken, and each way a server can
misbehave, on request. Standard library only; run it with `sys.executable`.

    python mcp_test_server.py [--mode MODE]... [--log FILE] [--version V] [--page-size N] [--plan FILE]

Tools (each answers in a thread of its own, so calls overlap): add, echo, fail, slow, record, media, optional,
dotted.name, structured, ask_client, change_tools, log, pid, and the misbehaving ones: garbage, not_rpc,
unknown_id, huge, close_stdout, hang, crash, flood_stderr.

Modes (at start): odd_tools, slow_list, garbage_first, exit_at_start, silent, no_tools_capability, ping_first, stderr_flood,
spawn_child, a daemon (a grandchild that leaves the server's session with setsid and sleeps) started as
daemon_child (the server's child), daemon_orphan (its launcher exits: it is orphaned) or daemon_clean_env (with an
empty environment) or daemon_forks_on_term (it ignores SIGTERM, and forks a child that sleeps on each),
ignore_eof, ignore_term, stop_reading (exit_soon: and exit a second later),
close_stdin (then, half a second later, last words on stderr and exit 3), close_stdin_and_run (and go on),
repeat_cursor, print_env, plan (replay --plan).
"""
import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time

DAEMON = "import os, time; os.setsid(); print(os.getpid(), flush=True); time.sleep(600)"
DAEMON_FORKS_ON_TERM = """
import os, signal, time
os.setsid()
signal.signal(signal.SIGTERM, lambda *_: os.fork() or time.sleep(600))
print(os.getpid(), flush=True)
while True:
    time.sleep(600)
"""
OUT = sys.stdout.buffer
WRITE = threading.Lock()


def raw(data: bytes) -> None:
    with WRITE:
        OUT.write(data)
        OUT.flush()


def send(message: dict) -> None:
    raw(json.dumps(message).encode("utf-8") + b"\n")


def schema(properties: dict, required=None) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required}


TOOLS = [
    {"name": "add", "description": "Add two integers.", "inputSchema": schema({"a": {"type": "integer"},
                                                                                "b": {"type": "integer"}})},
    {"name": "echo", "title": "Echo", "description": "Say the text back.",
     "inputSchema": schema({"text": {"type": "string"}})},
    {"name": "fail", "description": "Fail with a message (isError).", "inputSchema": schema({"message": {"type": "string"}})},
    {"name": "slow", "description": "Sleep, then answer.", "inputSchema": schema({"seconds": {"type": "number"}})},
    {"name": "record", "description": "Append a note to the log file.", "inputSchema": schema({"note": {"type": "string"}})},
    {"name": "media", "description": "Every kind of content.", "inputSchema": {"type": "object"}},
    {"name": "optional", "description": "One optional parameter.",
     "inputSchema": schema({"a": {"type": "string"}, "b": {"type": "integer"}}, required=["a"])},
    {"name": "dotted.name", "description": "A name the model APIs refuse.", "inputSchema": schema({})},
    {"name": "structured", "description": "Structured content only.", "inputSchema": schema({})},
    {"name": "ask_client", "description": "Ask the client for sampling, elicitation, roots and a ping.",
     "inputSchema": schema({})},
    {"name": "change_tools", "description": "Add a tool and say the list changed.", "inputSchema": schema({})},
    {"name": "log", "description": "Send log messages, then answer.", "inputSchema": schema({})},
    {"name": "pid", "description": "The server's process id.", "inputSchema": schema({})},
    {"name": "garbage", "description": "Print a line that is not JSON.", "inputSchema": schema({})},
    {"name": "not_rpc", "description": "Print JSON that is not JSON-RPC.", "inputSchema": schema({})},
    {"name": "unknown_id", "description": "Answer another id.", "inputSchema": schema({})},
    {"name": "huge", "description": "Print one line of `size` bytes.", "inputSchema": schema({"size": {"type": "integer"}})},
    {"name": "close_stdout", "description": "Close stdout and keep running.", "inputSchema": schema({})},
    {"name": "hang", "description": "Never answer.", "inputSchema": schema({})},
    {"name": "crash", "description": "Exit in the middle of the call.", "inputSchema": schema({})},
    {"name": "flood_stderr", "description": "Write `size` bytes to stderr, then answer.",
     "inputSchema": schema({"size": {"type": "integer"}})},
]
EXTRA = {"name": "extra", "description": "Added by change_tools.", "inputSchema": schema({})}


class Server:
    def __init__(self, options):
        self.options, self.modes = options, set(options.mode or [])
        self.tools = list(TOOLS)
        if "odd_tools" in self.modes:  # entries a client must survive: left out, or offered as given
            deep = {"type": "object"}
            for _ in range(200):
                deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
            self.tools += [{"name": "deep", "inputSchema": deep}, {"description": "no name", "inputSchema": {}},
                           {"name": "odd_required", "inputSchema": {"type": "object", "properties": {"a": {}},
                                                                    "required": [["a"], 3]}},
                           {"name": "required_not_a_list", "inputSchema": {"type": "object", "properties": {"a": {}},
                                                                           "required": 5}},
                           {"name": "lone\ud800surrogate", "inputSchema": {}},
                           {"name": "not_a_schema", "inputSchema": "object"}, {"name": "", "inputSchema": {}},
                           {"name": "no_schema"}, 42, {"name": "x" * 100, "inputSchema": {}},
                           {"name": "anyof_root", "inputSchema": {"anyOf": [{"type": "object"}, {"type": "null"}]}},
                           {"name": "defs_not_an_object", "inputSchema": {"type": "object", "properties": {},
                                                                          "$defs": [True]}}]
        self.answers = {}  # id of a request we sent -> its answer
        self.answered = threading.Condition()
        self.asked = 0

    def text(self, request_id, text, **extra):
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}], **extra}})

    def ask(self, method, params=None):
        """A request to the client; its answer (waits at most 5 s)."""
        with self.answered:
            self.asked += 1
            request_id = f"s{self.asked}"
        send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        with self.answered:
            self.answered.wait_for(lambda: request_id in self.answers, timeout=5)
            return self.answers.get(request_id, "no answer")

    def call(self, request_id, name, args):
        if name == "add":
            return self.text(request_id, str(args["a"] + args["b"]), structuredContent={"sum": args["a"] + args["b"]})
        if name == "echo":
            return self.text(request_id, args["text"])
        if name == "fail":
            return self.text(request_id, args["message"], isError=True)
        if name == "slow":  # "twice": the answer is sent twice
            time.sleep(args["seconds"])
            for _ in range(2 if args.get("twice") else 1):
                self.text(request_id, f"slept {args['seconds']}")
            return None
        if name == "record":
            if self.options.log:
                with open(self.options.log, "a", encoding="utf-8") as log:
                    log.write(args["note"] + "\n")
            return self.text(request_id, f"recorded {args['note']}")
        if name == "media":
            png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
            return send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [
                {"type": "text", "text": "here is everything", "__deepcopy__": "no method", "__html__": "<b>"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "audio", "data": base64.b64encode(b"RIFF" * 10).decode(), "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///x/notes.md", "name": "notes.md", "mimeType": "text/markdown",
                 "description": "the notes"},
                {"type": "resource", "resource": {"uri": "file:///x/a.txt", "mimeType": "text/plain", "text": "A!"}},
                {"type": "resource", "resource": {"uri": "file:///x/b.bin", "blob": base64.b64encode(b"12345678").decode()}},
                {"type": "hologram"}]}})
        if name == "optional":
            return self.text(request_id, json.dumps(args, sort_keys=True))
        if name == "dotted.name":
            return self.text(request_id, "dotted")
        if name == "structured":
            return send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [], "structuredContent": {"x": 1}}})
        if name == "ask_client":
            answers = {m: self.ask(m) for m in ("sampling/createMessage", "elicitation/create", "roots/list", "ping")}
            return self.text(request_id, json.dumps(answers, sort_keys=True))
        if name == "change_tools":
            if EXTRA not in self.tools:
                self.tools.append(EXTRA)
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return self.text(request_id, "changed")
        if name == "log":
            for level in ("debug", "info", "error"):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": level, "logger": "test", "data": f"a {level} message"}})
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}})
            return self.text(request_id, "logged")
        if name == "pid":
            return self.text(request_id, json.dumps({"pid": os.getpid(), "child": getattr(self, "child", None)}))
        if name == "garbage":
            return raw(b"this is not JSON at all\n")
        if name == "not_rpc":
            return raw(b'{"hello": "world"}\n')
        if name == "unknown_id":  # with {"error": ...}: an error answer to that id
            answer = {"error": args["error"]} if "error" in args else {"result": {}}
            return send({"jsonrpc": "2.0", "id": 424242, **answer})
        if name == "huge":
            block = b"x" * 65536
            with WRITE:
                OUT.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"pad": "' % request_id)
                try:
                    for _ in range(args["size"] // len(block)):
                        OUT.write(block)
                    OUT.write(b'"}}\n')
                    OUT.flush()
                except OSError:  # the client stopped reading: as expected
                    os._exit(0)
            return None
        if name == "close_stdout":
            OUT.flush()
            os.close(1)
            time.sleep(60)
            return None
        if name == "hang":
            return None
        if name == "crash":
            sys.stderr.write("crashing on purpose\n")
            sys.stderr.flush()
            os._exit(7)
        if name == "flood_stderr":
            chunk = b"E" * 65535 + b"\n"
            for _ in range(args["size"] // len(chunk)):
                sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.write(b"the last line of the flood\n")
            sys.stderr.buffer.flush()
            return self.text(request_id, "flooded")
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})

    def initialize(self, message):
        capabilities = {} if "no_tools_capability" in self.modes else {"tools": {"listChanged": True}}
        if "ping_first" in self.modes:  # the client must answer a ping at any time, even before it is initialized
            capabilities["experimental"] = {"ping": self.ask("ping")}
        version = self.options.version or message["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": version, "capabilities": capabilities,
            "serverInfo": {"name": "test-server", "version": "1"}}})

    def handle(self, message):
        request_id, method = message.get("id"), message.get("method")
        if method is None:  # an answer to one of our requests
            with self.answered:
                self.answers[request_id] = message.get("result", message.get("error"))
                self.answered.notify_all()
            return
        if request_id is None:  # a notification
            if method == "notifications/cancelled" and self.options.log:
                with open(self.options.log, "a", encoding="utf-8") as log:
                    log.write(f"cancelled {message['params']['requestId']}\n")
            return
        if method == "initialize":
            if "silent" in self.modes:
                return None
            if "ping_first" in self.modes:  # answered once the client answered a ping (read by this loop)
                return threading.Thread(target=self.initialize, args=(message,), daemon=True).start()
            return self.initialize(message)
        if method == "tools/list":
            if "slow_list" in self.modes:
                time.sleep(30)
            size = self.options.page_size or len(self.tools)
            cursor = str((message.get("params") or {}).get("cursor") or "0")
            start = int(cursor) if cursor.isdigit() else 0
            result = {"tools": self.tools[start:start + size]}
            if "repeat_cursor" in self.modes:
                result["nextCursor"] = "again"
            elif start + size < len(self.tools):
                result["nextCursor"] = str(start + size)
            return send({"jsonrpc": "2.0", "id": request_id, "result": result})
        if method == "tools/call":
            params = message["params"]
            threading.Thread(target=self.call, args=(request_id, params["name"], params.get("arguments") or {}),
                             daemon=True).start()
            return None
        if method == "ping":
            return send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}})

    def replay(self):
        """--plan: read the plan's number of requests, then write its chunks (answers in any order, notifications,
        pings to the client, blank lines), then report how many pings the client answered."""
        plan = json.load(open(self.options.plan, encoding="utf-8"))
        requests = [json.loads(sys.stdin.buffer.readline()) for _ in range(plan["requests"])]
        stream = b""
        for event in plan["events"]:
            kind = event[0]
            if kind == "answer":
                request = requests[event[1]]
                stream += json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"method": request["method"]}
                                      }).encode() + b"\n"
            elif kind == "notify":
                stream += json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
                    "level": "info", "data": event[1]}}).encode() + b"\n"
            elif kind == "ping":
                stream += json.dumps({"jsonrpc": "2.0", "id": f"p{event[1]}", "method": "ping"}).encode() + b"\n"
            elif kind == "blank":
                stream += b"\n"
        cuts = sorted({min(len(stream), int(f * len(stream))) for f in plan["cuts"]} | {0, len(stream)})
        for start, end in zip(cuts, cuts[1:]):
            raw(stream[start:end])
            time.sleep(0.0005)
        pings = sum(event[0] == "ping" for event in plan["events"])
        answers = [json.loads(sys.stdin.buffer.readline()) for _ in range(pings)]
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {
            "level": "info", "data": {"pings answered": sorted(a["id"] for a in answers if a.get("result") == {})}}})
        sys.stdin.buffer.read()

    @staticmethod
    def daemon(how):
        """Start a process that calls setsid (it leaves the server's session and process group), then sleeps;
        its pid, once it has left."""
        daemon = [sys.executable, "-c", DAEMON_FORKS_ON_TERM if how == "forks_on_term" else DAEMON]
        if how == "orphan":  # started by a launcher that exits at once: its parent is no longer the server
            daemon = [sys.executable, "-c", f"import subprocess; subprocess.Popen({daemon!r})"]
        started = subprocess.Popen(daemon, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   env={} if how == "clean_env" else None)
        pid = int(started.stdout.readline())
        if how == "orphan":
            started.wait()
        return pid

    def serve(self):
        if "print_env" in self.modes:
            sys.stderr.write(json.dumps(dict(os.environ)) + "\n")
            sys.stderr.flush()
            time.sleep(0.3)  # so the client has read it before any answer (its stderr is read by another thread)
        if "exit_at_start" in self.modes:
            sys.stderr.write("cannot start: no configuration\n")
            sys.exit(2)
        if "garbage_first" in self.modes:
            raw(b"Starting the server...\n")
        if "ignore_term" in self.modes:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if "spawn_child" in self.modes:
            self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid
        for how in ("child", "orphan", "clean_env", "forks_on_term"):
            if f"daemon_{how}" in self.modes:
                self.child = self.daemon(how)
        if "stderr_flood" in self.modes:
            def flood():
                line = b"noise " * 1000 + b"\n"
                while True:
                    sys.stderr.buffer.write(line)
            threading.Thread(target=flood, daemon=True).start()
        if self.options.plan:
            return self.replay()
        for line in sys.stdin.buffer:
            message = json.loads(line)
            self.handle(message)
            if "stop_reading" in self.modes and message.get("method") == "notifications/initialized":
                if "exit_soon" in self.modes:
                    threading.Timer(1.0, os._exit, (5,)).start()
                time.sleep(600)
            if "close_stdin" in self.modes and message.get("method") == "notifications/initialized":
                os.close(0)
                time.sleep(0.5)
                sys.stderr.write("my last words\n")
                sys.exit(3)
            if "close_stdin_and_run" in self.modes and message.get("method") == "notifications/initialized":
                os.close(0)
                time.sleep(600)
        if "ignore_eof" in self.modes:
            time.sleep(600)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", action="append")
    parser.add_argument("--log")
    parser.add_argument("--version")
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--plan")
    Server(parser.parse_args()).serve()


if __name__ == "__main__":
    main()
