"""Chat Completions answers → kernel items and Responses-shaped stream events.

Where it sits: `chat_completions.py` sends the request; what comes back is translated here, so the kernel
sees one format. `message_to_items` turns a whole assistant message into output items;
`ChatStreamTranslator` accumulates `chat.completion.chunk` deltas (an id and name once, argument fragments
to be concatenated) into the same items while emitting the Responses API's stream events. Pure: no I/O.
Items, and a message's text and refusal, are numbered in the order they open, as the Responses API numbers them:
every event of one carries the index it opened at, and `response.completed` lists them in that order (a stream
that opens them as a whole message orders them, reasoning, text, refusal, calls, gives the same items).
Never: trust `finish_reason` to say whether calls were made, or accept a truncated stream as complete.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from ..errors import ModelBehaviorError
from ..items import FAKE_ID, clean_text, new_call_id
from . import shapes
from .protocol import http_error


def message_to_items(message: Any, where: str = "choices[0].message") -> list:
    """One Chat assistant message → output items: reasoning, message (text/refusal), function calls."""
    message = shapes.obj(message, where)
    items: list = []
    reasoning = reasoning_of(message)
    if reasoning:  # OpenRouter's structured reasoning_details are not read
        items.append({"type": "reasoning", "id": FAKE_ID,
                      "summary": [{"type": "summary_text", "text": reasoning}]})
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(shapes.text(shapes.obj(p, f"{where}.content[{i}]").get("text", ""),
                                      f"{where}.content[{i}].text") for i, p in enumerate(content))
    content = shapes.opt_str(content, f"{where}.content")
    refusal = shapes.opt_str(message.get("refusal"), f"{where}.refusal")
    parts: list = []
    if content:
        parts.append({"type": "output_text", "text": content, "annotations": [], "logprobs": []})
    if refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    if parts:
        items.append({"type": "message", "id": FAKE_ID, "role": "assistant", "status": "completed",
                      "content": parts})
    for i, call in enumerate(shapes.arr(message.get("tool_calls"), f"{where}.tool_calls")):
        call = shapes.obj(call, f"{where}.tool_calls[{i}]")
        fn = shapes.obj(_or_empty(call.get("function")), f"{where}.tool_calls[{i}].function")
        name = shapes.opt_str(fn.get("name"), f"{where}.tool_calls[{i}].function.name")
        if not name:
            raise ModelBehaviorError(f"The model sent a tool call without a function name ({where}.tool_calls[{i}]).")
        items.append({"type": "function_call", "id": FAKE_ID,
                      "call_id": shapes.opt_str(call.get("id"), f"{where}.tool_calls[{i}].id") or new_call_id(),
                      "name": name, "arguments": json_text(fn.get("arguments")) or "{}", "status": "completed"})
    return items


def reasoning_of(message: dict) -> str:
    """The reasoning text a message or a stream's delta carries: `reasoning_content` (DeepSeek, llama.cpp), else
    `reasoning` (Ollama, vLLM, OpenRouter); a server that sends both sends the same text twice."""
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str) and message[key]:
            return message[key]
    return ""


def check_answered(items: list, finish_reason: Optional[str]) -> None:
    """Refuse an answer whose generation failed (`error`: OpenRouter's failure after a stream began, so what came
    is partial); one with nothing in it, unless the server said it stopped on purpose (`stop`); and one that says
    it called tools but carries no call. An unknown finish_reason is the server's text: never quoted."""
    if finish_reason == "error":
        raise http_error(None, "the server ended the answer with finish_reason 'error': generating it failed",
                         type="server_error")
    if finish_reason == "tool_calls" and not any(item["type"] == "function_call" for item in items):
        raise ModelBehaviorError("The model's answer says finish_reason 'tool_calls' but carries no tool call.")
    if items or finish_reason == "stop":
        return
    reason = {None: "no text, no tool call and no finish_reason",
              "length": "the token limit was reached before anything was written (finish_reason 'length'); "
                        "raise max_tokens (a reasoning model spends tokens thinking first)",
              "content_filter": "the provider's content filter blocked it (finish_reason 'content_filter')",
              }.get(finish_reason, "no text, no tool call, and a finish_reason that is not 'stop'")
    raise ModelBehaviorError(f"The model's answer is empty: {reason}.")


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


def json_text(value) -> str:
    """Tool-call arguments as a string: strings as they are, anything else as JSON ("" for empty)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False) if value else ""


def chat_usage(usage: Any, where: str = "usage") -> Optional[dict]:
    """Chat usage (`prompt_tokens`, ...) → the Responses shape `Usage.from_json` reads, checked; None stays None."""
    return shapes.usage(usage, where, shapes.CHAT_USAGE)


def _event(kind: str, output_index: int, **fields) -> dict:
    return {"type": kind, "item_id": FAKE_ID, "output_index": output_index, **fields}


class ChatStreamTranslator:
    """Accumulates chunk deltas and emits Responses-shaped events.

    `start()`, `feed(chunk)` and `finish(saw_done)` return lists of events; `finish` ends with
    `response.completed` carrying the items `message_to_items` gives for the whole message, in the order they
    opened. Every
    chunk is checked as it comes (`shapes`); text is cleaned as it streams (`shapes.Deltas`).
    """

    def __init__(self):
        self.text, self.refusal, self.reasoning = shapes.Deltas(), shapes.Deltas(), shapes.Deltas()
        self.calls: list = []   # slots: {"index", "id", "made_up", "name", "arguments" (Deltas), "announced", "out"}
        self._by_id: dict = {}      # a server's call id -> the last slot it named
        self._by_index: dict = {}   # an index -> the last slot opened at it
        self.usage: Optional[dict] = None
        self.finish_reason: Optional[str] = None
        self.saw_choice = False
        self._open: dict = {}   # "reasoning"/"message" -> output_index; "output_text"/"refusal" -> content_index
        self._count = 0

    def start(self) -> list:
        return [{"type": "response.created", "response": {"id": None, "status": "in_progress", "output": []}}]

    def _item(self, key: str, item: dict) -> list:
        self._open[key] = self._count
        self._count += 1
        return [{"type": "response.output_item.added", "output_index": self._open[key], "item": item}]

    def feed(self, chunk: Any) -> list:
        chunk = shapes.obj(chunk, "a stream chunk")
        if chunk.get("usage") is not None:
            self.usage = chat_usage(chunk["usage"], "a stream chunk's usage")
        events: list = []
        for i, choice in enumerate(shapes.arr(chunk.get("choices"), "a stream chunk's choices")):
            choice = shapes.obj(choice, f"a stream chunk's choices[{i}]")
            if choice.get("index", 0) != 0:
                continue
            self.saw_choice = True
            delta = shapes.obj(_or_empty(choice.get("delta")), "a stream chunk's choices[0].delta")
            if reasoning_of(delta):
                events += self._reasoning(reasoning_of(delta))
            for key in ("content", "refusal"):
                if shapes.opt_str(delta.get(key), f"a stream chunk's choices[0].delta.{key}"):
                    events += self._text(key, delta[key])
            for j, tc in enumerate(shapes.arr(delta.get("tool_calls"), "a stream chunk's choices[0].delta.tool_calls")):
                events += self._call(shapes.obj(tc, f"a stream chunk's choices[0].delta.tool_calls[{j}]"),
                                     f"a stream chunk's choices[0].delta.tool_calls[{j}]")
            reason = shapes.opt_str(choice.get("finish_reason"), "a stream chunk's choices[0].finish_reason")
            if reason:
                self.finish_reason = clean_text(reason)
        return events

    def _reasoning(self, piece: str) -> list:
        events = [] if "reasoning" in self._open else self._item(
            "reasoning", {"type": "reasoning", "id": FAKE_ID, "summary": []}) + [
            _event("response.reasoning_summary_part.added", self._open["reasoning"], summary_index=0,
                   part={"type": "summary_text", "text": ""})]
        return events + self._reasoning_delta(self.reasoning.add(piece))

    def _reasoning_delta(self, piece: str) -> list:
        return [_event("response.reasoning_summary_text.delta", self._open["reasoning"], summary_index=0,
                       delta=piece)] if piece else []

    def _text(self, kind: str, piece: str) -> list:
        events = [] if "message" in self._open else self._item("message", {
            "type": "message", "id": FAKE_ID, "role": "assistant", "status": "in_progress", "content": []})
        part = "output_text" if kind == "content" else "refusal"
        if part not in self._open:
            self._open[part] = len([k for k in ("output_text", "refusal") if k in self._open])
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []} \
                if kind == "content" else {"type": "refusal", "refusal": ""}
            events.append(_event("response.content_part.added", self._open["message"],
                                 content_index=self._open[part], part=empty))
        return events + self._text_delta(part, (self.text if kind == "content" else self.refusal).add(piece))

    def _text_delta(self, part: str, piece: str) -> list:
        return [_event(f"response.{part}.delta", self._open["message"], content_index=self._open[part],
                       delta=piece)] if piece else []

    def _call(self, tc: dict, where: str) -> list:
        index = tc.get("index")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise shapes.malformed(f"{where}.index", index, "an integer")
        cid = clean_text(shapes.opt_str(tc.get("id"), f"{where}.id") or "") or None
        fn = shapes.obj(_or_empty(tc.get("function")), f"{where}.function")
        name = clean_text(shapes.opt_str(fn.get("name"), f"{where}.function.name") or "")
        slot = self._by_id.get(cid)
        if slot is not None and index not in (None, slot["index"]):
            slot = None  # the same id at another index is another call, as in a whole message
        if slot is None and index is not None:
            slot = self._by_index.get(index)
            if slot is not None and cid and slot["id"] not in (None, cid) and (
                    not slot["made_up"] or name not in ("", slot["name"])):
                slot = None  # Ollama: every call at index 0, told apart by id (before its id came, by its name)
        if slot is None and index is None and not cid and self.calls:
            slot = self.calls[-1]
        if slot is None:
            slot = {"index": index, "id": None, "made_up": False, "name": None, "arguments": shapes.Deltas(),
                    "announced": False}
            self.calls.append(slot)
            self._by_index[index] = slot
        if cid and (not slot["id"] or slot["made_up"]):  # an id made up when the name came stays the call's (its
            slot["id"], slot["made_up"] = slot["id"] or cid, False  # events named it): the server's finds the call
            self._by_id[cid] = slot
        if name and not slot["name"]:
            slot["name"] = name
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        piece = slot["arguments"].add(args or "")
        if not slot["announced"] and slot["name"]:
            return self._announce(slot)
        return self._arguments_delta(slot, piece)

    def _arguments_delta(self, slot: dict, piece: str) -> list:
        if slot["announced"] and piece:
            return [_event("response.function_call_arguments.delta", slot["out"], delta=piece)]
        return []

    def _announce(self, slot: dict) -> list:
        if not slot["id"]:
            slot["id"], slot["made_up"] = new_call_id(), True
        slot["announced"] = True
        slot["out"], self._count = self._count, self._count + 1
        return [{"type": "response.output_item.added", "output_index": slot["out"], "item": {
            "type": "function_call", "id": FAKE_ID, "call_id": slot["id"], "name": slot["name"],
            "arguments": "", "status": "in_progress"}}] + self._arguments_delta(slot, slot["arguments"].emitted)

    def message(self) -> dict:
        """The accumulated assistant message, in the non-streamed response's shape."""
        msg: dict = {"role": "assistant", "content": self.text.value or None}
        if self.refusal.value:
            msg["refusal"] = self.refusal.value
        if self.reasoning.value:
            msg["reasoning_content"] = self.reasoning.value
        if self.calls:
            msg["tool_calls"] = [{"id": s["id"], "type": "function",
                                  "function": {"name": s["name"], "arguments": s["arguments"].value}}
                                 for s in self.calls]
        return msg

    def _flush(self) -> list:
        """Deltas for text held back at the very end (a lone high surrogate, now U+FFFD)."""
        events = self._reasoning_delta(self.reasoning.flush()) if "reasoning" in self._open else []
        for part, text in (("output_text", self.text), ("refusal", self.refusal)):
            if part in self._open:
                events += self._text_delta(part, text.flush())
        for slot in self.calls:
            events += self._arguments_delta(slot, slot["arguments"].flush())
        return events

    def finish(self, saw_done: bool) -> list:
        """Close the stream: validate how it ended, emit the `.done` events and `response.completed`."""
        if not saw_done and self.finish_reason is None:
            raise http_error(None, "the stream ended before a finish_reason or [DONE]: the response is "
                             "truncated (connection dropped or server failed mid-stream)",
                             type="stream_error", code="truncated")
        if not self.saw_choice:
            raise ModelBehaviorError("The model's answer is empty: the stream carried no choices.")
        events: list = []
        for n, slot in enumerate(self.calls, 1):
            if not slot["name"]:  # named by its place: its id is the server's text (a key it echoes, a control)
                raise ModelBehaviorError(f"The model streamed a tool call without a function name (call {n}).")
            if not slot["announced"]:
                events += self._announce(slot)
        events += self._flush()
        items = message_to_items(self.message())
        check_answered(items, self.finish_reason)
        calls = iter(self.calls)
        placed = sorted(zip([next(calls)["out"] if item["type"] == "function_call" else self._open[item["type"]]
                             for item in items], items), key=lambda pair: pair[0])
        for index, item in placed:
            if item["type"] == "function_call":
                events.append(_event("response.function_call_arguments.done", index, arguments=item["arguments"]))
            elif item["type"] == "reasoning":
                events += [_event("response.reasoning_summary_text.done", index, summary_index=0,
                                  text=self.reasoning.value),
                           _event("response.reasoning_summary_part.done", index, summary_index=0,
                                  part=item["summary"][0])]
            else:
                item["content"].sort(key=lambda part: self._open[part["type"]])
                for part in item["content"]:
                    field, ci = ("text" if part["type"] == "output_text" else "refusal"), self._open[part["type"]]
                    events += [_event(f"response.{part['type']}.done", index, content_index=ci, **{field: part[field]}),
                               _event("response.content_part.done", index, content_index=ci, part=part)]
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events + [{"type": "response.completed", "response": {
            "id": None, "object": "response", "status": "completed", "output": [item for _, item in placed],
            "usage": self.usage}}]
