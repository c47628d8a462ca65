"""Generated conversations: whatever order a server answers in, however its bytes are cut into writes, and whatever
it interleaves (notifications, pings, blank lines), each waiting request gets its own answer, every ping is answered
and notifications arrive in order. And whatever junk a server writes, the client raises an `MCPError` or goes on,
never anything else, and leaves no process behind."""
import json
import sys
import threading
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from miniagents.mcp import MCPError
from miniagents.mcp.server import MCPServerStdio
from miniagents.mcp.stdio import StdioConnection, preview
from mcp_support import TEST_SERVER, ended


@st.composite
def plans(draw):
    """How many requests the client sends, and the events the server writes back: an answer to each request (in
    any order), notifications, pings to the client and blank lines; and where the byte stream is cut."""
    requests = draw(st.integers(1, 6))
    answers = [["answer", i] for i in draw(st.permutations(range(requests)))]
    extras = draw(st.lists(st.one_of(
        st.builds(lambda t: ["notify", t], st.text(max_size=30)),
        st.just(["ping"]), st.just(["blank"])), max_size=8))
    events = list(answers)
    for extra in extras:
        events.insert(draw(st.integers(0, len(events))), extra)
    pings = 0
    for event in events:
        if event[0] == "ping":
            event.append(pings)
            pings += 1
    cuts = draw(st.lists(st.floats(0, 1), max_size=25))
    return {"requests": requests, "events": events, "cuts": cuts}


@settings(max_examples=40, deadline=None)
@given(plan=plans())
def test_answers_in_any_order_and_any_chunking_reach_their_own_requests(plan, tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    notes, reported = [], threading.Event()

    def notified(method, params):
        notes.append(params["data"])
        if isinstance(params["data"], dict):
            reported.set()

    connection = StdioConnection("replay", sys.executable, [TEST_SERVER, "--plan", str(path)], None, None,
                                 grace=0.5, on_notification=notified)
    connection.start()
    got, errors = {}, []

    def ask(n):
        try:
            got[n] = connection.request(f"method/{n}", None, 20)["method"]
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(plan["requests"])]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == [] and got == {n: f"method/{n}" for n in range(plan["requests"])}
        assert reported.wait(20), notes
        expected = [event[1] for event in plan["events"] if event[0] == "notify"]
        assert notes[:-1] == expected
        pings = sorted(f"p{event[1]}" for event in plan["events"] if event[0] == "ping")
        assert notes[-1] == {"pings answered": pings}
    finally:
        connection.close()
    assert ended(connection.pid)


JUNK_SERVER = r'''
import json, sys
request = json.loads(sys.stdin.buffer.readline())
sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))
sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "junk", "version": "1"}}}).encode()
    + b"\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
'''

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)
rpc_like = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0"]), "id": json_values, "method": json_values, "result": json_values,
    "error": json_values, "params": json_values})
lines = st.one_of(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
                  json_values.map(lambda v: json.dumps(v).encode()),
                  rpc_like.map(lambda v: json.dumps(v).encode()))


@settings(max_examples=40, deadline=None)
@given(junk=st.lists(lines, min_size=1, max_size=4))
def test_whatever_a_server_writes_the_client_raises_an_mcp_error_or_goes_on(junk):
    data = b"".join(line + b"\n" for line in junk)
    server = MCPServerStdio({"command": sys.executable, "args": ["-c", JUNK_SERVER, data.hex()]},
                            client_session_timeout_seconds=10, shutdown_grace_seconds=0.5)
    started, start = [], StdioConnection.start

    def recording_start(connection):
        start(connection)
        started.append(connection.pid)

    with mock.patch.object(StdioConnection, "start", recording_start):
        try:
            server.connect()
            assert server.list_tools() == []  # no tools capability: a healthy connection answers without asking
        except MCPError:
            pass  # any other exception fails the test
        finally:
            server.cleanup()
    assert len(started) == 1 and ended(started[0])


@given(text=st.text(max_size=300), limit=st.integers(1, 250))
def test_a_preview_shows_at_most_limit_characters_and_counts_the_rest(text, limit):
    shown = preview(text, limit)
    assert shown.startswith(repr(text[:limit]))
    rest = shown[len(repr(text[:limit])):]
    assert rest == (f" (and {len(text) - limit} more characters)" if len(text) > limit else "")
    assert preview(text.encode("utf-8"), limit) == shown  # bytes are shown as their UTF-8 text
