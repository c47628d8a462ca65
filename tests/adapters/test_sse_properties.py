"""Properties: SSE framing and the chat delta accumulator ignore how a stream is chunked; the item ⇄
message converters round-trip the transcripts the kernel produces."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from miniagents.errors import ModelHTTPError
from miniagents.models.chat_completions import ChatStreamTranslator, items_to_messages, message_to_items
from miniagents.models.protocol import iter_lines, iter_sse

text = st.text(st.sampled_from('ab :{}"\\\n\ré€😀\x00'), max_size=20)
line_text = st.text(st.sampled_from('ab :{}"é😀'), max_size=15)
endings = st.sampled_from(["\n", "\r\n", "\r"])


def split_at(data, cuts):
    cuts = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


@st.composite
def sse_streams(draw):
    """(wire bytes, expected events) for a random SSE stream with comments and multi-line data, each line ended
    its own way (a server may mix them): only a blank line right after a \r cannot be a lone \n, which would
    read as the \r's own \n."""
    out, expected = [], []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            out.append(":" + draw(line_text) + draw(endings))
        name = draw(st.one_of(st.none(), st.text(st.sampled_from("ab.:é"), min_size=1, max_size=8)))
        if name is not None:
            out.append("event: " + name + draw(endings))
        datas = draw(st.lists(line_text, min_size=1, max_size=3))
        out.extend("data: " + d + draw(endings) for d in datas)
        out.append(draw(st.sampled_from(["\r\n", "\r"] if out[-1].endswith("\r") else ["\n", "\r\n", "\r"])))
        expected.append((name or "message", "\n".join(datas)))
    return "".join(out).encode("utf-8"), expected


@given(sse_streams(), st.lists(st.integers(0, 10_000), max_size=12))
@settings(max_examples=120, deadline=None)
def test_sse_reader_is_independent_of_chunking(stream, cuts):
    data, expected = stream
    assert list(iter_sse(iter_lines(split_at(data, cuts)))) == expected
    assert list(iter_sse(iter_lines([bytes([b]) for b in data]))) == expected



@given(sse_streams(), st.lists(st.integers(0, 10_000), max_size=12))
@settings(max_examples=60, deadline=None)
def test_a_byte_order_mark_starting_a_stream_is_skipped_and_its_first_event_kept_however_it_is_cut(stream, cuts):
    """The SSE standard skips it; read as part of the first line, it made `data:` a field of another name, and the
    first event (a chat's first token, say) was lost without a word. Only the stream's first line loses one."""
    data, expected = stream
    assert list(iter_sse(iter_lines(split_at("\ufeff".encode() + data, cuts)))) == expected
    assert list(iter_sse(["\ufeffdata: 1", "", "\ufeffdata: 2", ""])) == [("message", "1")]

@given(sse_streams(), st.lists(st.integers(0, 10_000), max_size=12), st.integers(1, 120))
@settings(max_examples=200, deadline=None)
def test_the_size_limit_passes_a_stream_within_it_whole_and_refuses_one_past_it(stream, cuts, limit):
    data, expected = stream
    lines = list(iter_lines([data]))
    data_sizes = [0]  # the bytes of each event's data lines, as the reader counts them
    for line in lines:
        if line.partition(b":")[0] == b"data":
            data_sizes[-1] += len(line)
        elif not line:
            data_sizes.append(0)
    fits = max(map(len, lines), default=0) <= limit and max(data_sizes) <= limit
    try:
        got = list(iter_sse(iter_lines(split_at(data, cuts), limit), limit))
    except ModelHTTPError as err:
        assert not fits and err.type == "response_too_large" and f"max_response_bytes={limit}" in str(err)
    else:
        assert fits and got == expected


json_args = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), text, st.none()), max_size=3).map(
    lambda d: json.dumps(d, ensure_ascii=False))
names = st.text(st.sampled_from("abc_xyz"), min_size=1, max_size=8)


@st.composite
def chat_streams(draw):
    """(chunks, expected calls, expected text) in one of the styles real servers use (indexed, id-only,
    repeated names, all calls at index 0)."""
    style = draw(st.sampled_from(["openai", "vllm", "ollama", "no_index"]))
    calls = draw(st.lists(st.tuples(names, json_args), max_size=3))
    content = draw(text)
    chunks = []

    def delta(d, finish=None):
        chunks.append({"choices": [{"index": 0, "delta": d, "finish_reason": finish}]})

    pieces = split_at(content, draw(st.lists(st.integers(0, 100), max_size=4)))
    for p in pieces:
        if p:
            delta({"content": p})
    for i, (name, args) in enumerate(calls):
        cid = f"call_{i}"
        if style == "ollama":  # whole call in one delta, every call at index 0
            delta({"tool_calls": [{"index": 0, "id": cid, "function": {"name": name, "arguments": args}}]})
            continue
        head = {"id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
        if style == "vllm":
            head.pop("id")
        if style != "no_index":
            head["index"] = i
        delta({"tool_calls": [head]})
        for part in split_at(args, draw(st.lists(st.integers(0, 200), max_size=5))):
            frag = {"function": {"arguments": part}}
            if style == "vllm":
                frag["function"]["name"] = name  # vLLM repeats the name on every delta
            if style != "no_index":
                frag["index"] = i
            delta({"tool_calls": [frag]})
    delta({}, finish="tool_calls" if calls else "stop")
    return style, chunks, calls, content


@given(chat_streams())
@settings(max_examples=120, deadline=None)
def test_accumulator_rebuilds_calls_and_text_for_any_split(stream):
    style, chunks, calls, content = stream
    t = ChatStreamTranslator()
    events = [e for c in chunks for e in t.feed(c)]
    events += t.finish(saw_done=False)
    out = events[-1]["response"]["output"]
    got_calls = [(o["name"], o["arguments"]) for o in out if o["type"] == "function_call"]
    assert got_calls == [(n, a if a else "{}") for n, a in calls]
    got_text = "".join(p["text"] for o in out if o["type"] == "message" for p in o["content"])
    assert got_text == content
    streamed = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert streamed == content
    ids = [o["call_id"] for o in out if o["type"] == "function_call"]
    assert len(set(ids)) == len(ids)
    if style != "vllm":
        assert ids == [f"call_{i}" for i in range(len(calls))]


@st.composite
def opened_streams(draw):
    """(chunks, the whole message they stream, whether they open its parts in its order) for reasoning, text, a
    refusal and calls, each there or not, opened in any order; reasoning under either key, or both (a server that
    sends both sends the same text)."""
    order = [kind for kind in draw(st.permutations(["reasoning", "content", "refusal", "tool_calls"]))
             if draw(st.booleans())]
    message, chunks = {"role": "assistant", "content": None}, []
    for kind in order:
        if kind == "tool_calls":
            calls = draw(st.lists(st.tuples(names, json_args), min_size=1, max_size=3))
            message[kind] = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                             for i, (n, a) in enumerate(calls)]
            for i, (name, args) in enumerate(calls):
                pieces = [{"index": i, "id": f"call_{i}", "function": {"name": name, "arguments": ""}}] + [
                    {"index": i, "function": {"arguments": p}}
                    for p in split_at(args, draw(st.lists(st.integers(0, 200), max_size=3)))]
                chunks += [{"tool_calls": [piece]} for piece in pieces]
            continue
        said = draw(text.filter(bool))
        keys = draw(st.sampled_from([["reasoning_content"], ["reasoning"], ["reasoning_content", "reasoning"]])) \
            if kind == "reasoning" else [kind]
        message.update(dict.fromkeys(keys, said))
        chunks += [dict.fromkeys(keys, p) for p in split_at(said, draw(st.lists(st.integers(0, 30), max_size=3))) if p]
    finish = "tool_calls" if "tool_calls" in order else "stop"
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in chunks] + [
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    return chunks, message, order == [k for k in ("reasoning", "content", "refusal", "tool_calls") if k in order]


FAMILY = {"reasoning": "reasoning", "function_call_arguments": "function_call", "content_part": "message",
          "output_text": "message", "refusal": "message"}


@given(opened_streams())
@settings(max_examples=150, deadline=None)
def test_every_event_carries_the_index_its_item_or_part_opened_at_and_the_completed_output_is_in_that_order(stream):
    chunks, message, _ = stream
    t = ChatStreamTranslator()
    events = [e for c in chunks for e in t.feed(c)] + t.finish(saw_done=True)
    out = events[-1]["response"]["output"]
    added = [(e["output_index"], e["item"]["type"]) for e in events if e["type"] == "response.output_item.added"]
    assert added == [(i, item["type"]) for i, item in enumerate(out)]
    assert [(e["output_index"], e["item"]) for e in events if e["type"] == "response.output_item.done"] == \
        list(enumerate(out))
    for e in events:
        family = next((f for name, f in FAMILY.items() if e["type"].startswith(f"response.{name}")), None)
        if family:
            assert out[e["output_index"]]["type"] == family
        if "content_index" in e:
            part = e["part"]["type"] if "part" in e else e["type"].split(".")[1]
            assert out[e["output_index"]]["content"][e["content_index"]]["type"] == part
    opened = [(e["output_index"], e["content_index"]) for e in events if e["type"] == "response.content_part.added"]
    assert opened == [(e["output_index"], e["content_index"]) for e in events if e["type"] in (
        "response.output_text.done", "response.refusal.done")]


@given(opened_streams())
@settings(max_examples=150, deadline=None)
def test_a_streamed_answer_gives_the_items_of_the_same_answer_whole(stream):
    chunks, message, in_its_order = stream
    t = ChatStreamTranslator()
    for c in chunks:
        t.feed(c)
    out = t.finish(saw_done=True)[-1]["response"]["output"]
    whole = message_to_items(message)
    rank = ["reasoning", "message", "function_call", "output_text", "refusal"]
    reordered = [{**i, "content": sorted(i["content"], key=lambda p: rank.index(p["type"]))} if "content" in i else i
                 for i in sorted(out, key=lambda i: rank.index(i["type"]))]
    assert reordered == whole
    if in_its_order:
        assert out == whole


@st.composite
def transcripts(draw):
    """Kernel transcripts: user turns, assistant text and/or calls, each call answered by its output."""
    items, n = [], 0
    for _ in range(draw(st.integers(1, 4))):
        items.append({"role": "user", "content": draw(text)})
        for _ in range(draw(st.integers(0, 2))):
            said = draw(st.one_of(st.none(), text.filter(bool)))
            calls = draw(st.lists(st.tuples(names, json_args), max_size=3))
            if said is None and not calls:
                continue
            if said is not None:
                items.append({"type": "message", "id": "msg_x", "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": said, "annotations": []}]})
            ids = []
            for name, args in calls:
                n += 1
                ids.append(f"call_{n}")
                items.append({"type": "function_call", "id": f"fc_{n}", "call_id": ids[-1], "name": name,
                              "arguments": args, "status": "completed"})
            for cid in ids:
                items.append({"type": "function_call_output", "call_id": cid, "output": draw(text)})
    return items


def messages_to_items(messages: list) -> list:
    """Chat messages (no system) → input items: the inverse of `items_to_messages`, for the round trip."""
    items: list = []
    for msg in messages:
        if msg["role"] == "assistant":
            items.extend(message_to_items({k: v for k, v in msg.items() if k != "reasoning_content"}))
        elif msg["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": msg["tool_call_id"],
                          "output": msg["content"]})
        else:
            items.append({"role": msg["role"], "content": msg["content"]})
    return items


def normalise(item):
    item = {k: v for k, v in item.items() if k != "id"}
    if item.get("type") == "message":
        item["content"] = [{**p, "annotations": [], "logprobs": []} for p in item["content"]]
    return item


@given(transcripts())
@settings(max_examples=80, deadline=None)
def test_items_messages_round_trip(items):
    messages = items_to_messages(items)
    assert all(m.get("tool_calls") != [] for m in messages)
    back = messages_to_items(messages)
    assert [normalise(i) for i in back] == [normalise(i) for i in items]


class CountingBytes(bytes):
    """Bytes that add the length of every buffer the line splitter builds from them or scans to `work`."""

    work = [0]

    def _count(self, value):
        CountingBytes.work[0] += len(value)
        return value

    def splitlines(self, keepends=False):
        return bytes.splitlines(self._count(self), keepends)

    def __add__(self, other):
        return CountingBytes(self._count(bytes(self) + bytes(other)))

    def __radd__(self, other):
        return CountingBytes(self._count(bytes(other) + bytes(self)))


def test_splitting_a_long_line_costs_work_linear_in_its_length():
    """A 4 MB data line arriving in 1 KB chunks: the splitter scans and copies each byte a bounded number
    of times, not once per chunk (the old rescan-the-buffer design did about 8 GB of work here)."""
    line = b"data: " + b"x" * (4 * 1024 * 1024) + b"\n\n"
    chunks = [CountingBytes(line[i:i + 1024]) for i in range(0, len(line), 1024)]
    CountingBytes.work[0] = 0
    lines = list(iter_lines(chunks))
    assert lines == [line[:-2], b""]
    assert CountingBytes.work[0] <= 3 * len(line)


class CountingIndex(int):
    """An index that counts how often it is compared."""
    compared = [0]

    def __eq__(self, other):
        CountingIndex.compared[0] += 1
        return int(self) == other

    __hash__ = int.__hash__


def test_matching_streamed_call_fragments_to_their_calls_costs_work_linear_in_their_number():
    """2000 calls of two fragments each: a fragment finds its call by its id or index, not by comparing it with
    every call before (about two million comparisons)."""
    t = ChatStreamTranslator()
    CountingIndex.compared[0] = 0
    for i in range(2000):
        t.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": CountingIndex(i), "id": f"c{i}", "function": {"name": "f", "arguments": "{"}}]}}]})
        t.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": CountingIndex(i), "function": {"arguments": "}"}}]}}]})
    assert len(t.finish(saw_done=True)[-1]["response"]["output"]) == 2000
    assert CountingIndex.compared[0] <= 4 * 2000


def test_a_crlf_split_between_its_two_bytes_ends_one_line_and_loses_nothing_after_it():
    assert list(iter_lines([b"a\r", b"\nbc\r", b"\nd\n"])) == [b"a", b"bc", b"d"]
