"""How long a call lasts against a server that never finishes, with timeout=1.0 and max_retries=0: figures, never
pass/fail (tests/adapters/test_http_bounds.py asserts the same bounds with generous margins).

Each server drips something every 0.1 s for 12 s at most (tests/openai_server.py `drip=`), so a call the
transport does not bound lasts about 12 s. Run: `.venv/bin/python benchmarks/http_bounds.py`.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from miniagents import AgentsException, ModelSettings, OpenAIChatCompletionsModel  # noqa: E402
from openai_server import OpenAITestServer, chunk  # noqa: E402

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
SCENARIOS = {
    "100 Continue every 0.1 s": (b"", b"HTTP/1.1 100 Continue\r\n\r\n", False),
    "a plain body, one byte every 0.1 s": (HEAD + b"Content-Length: 100000\r\n\r\n", b" ", False),
    "a stream of keep-alive comments only": (SSE_HEAD, chunk(b": keep-alive\n\n"), True),
}


def seconds_until_it_ends(server: OpenAITestServer, head: bytes, repeat: bytes, streamed: bool) -> tuple:
    server.replies.append({"drip": head, "repeat": repeat, "every": 0.1})
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key="sk-bench", timeout=1.0, max_retries=0)
    user = [{"role": "user", "content": "hi"}]
    started = time.monotonic()
    try:
        if streamed:
            list(model.stream_response(None, user, ModelSettings(), [], None, []))
        else:
            model.get_response(None, user, ModelSettings(), [], None, [])
        outcome = "answered"
    except AgentsException as err:
        outcome = type(err).__name__
    return time.monotonic() - started, outcome


def main(repeats: int = 3) -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    server = OpenAITestServer()
    try:
        for name, (head, repeat, streamed) in SCENARIOS.items():
            runs = [seconds_until_it_ends(server, head, repeat, streamed) for _ in range(repeats)]
            times = [t for t, _ in runs]
            print(f"{name}: ended after median {statistics.median(times):.2f} s, max {max(times):.2f} s "
                  f"({', '.join(sorted({o for _, o in runs}))}; {repeats} runs)")
    finally:
        server.close()


if __name__ == "__main__":
    main()
