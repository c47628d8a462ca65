"""Chat Completions answers → kernel items and Responses-shaped stream events.

Where it sits: `chat_completions.py` sends the request; what comes back is translated here, so the kernel
sees one format. `message_to_items` turns a whole assistant message into output items;
`ChatStreamTranslator` accumulates `chat.completion.chunk` deltas (WIRE §6.2) into the same items while
emitting the Responses API's stream events. Pure: no I/O.
Never: trust `finish_reason` to say whether calls were made, or accept a truncated stream as complete.
"""
from __future__ import annotations

import json
from typing import Optional

from ..errors import ModelBehaviorError, ModelHTTPError
from ..items import new_call_id
from .endpoint import FAKE_ID
from .http import error_from_body


def message_to_items(message: dict) -> list:
    """One Chat assistant message → output items: reasoning, message (text/refusal), function calls."""
    items: list = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        items.append({"type": "reasoning", "id": FAKE_ID,
                      "summary": [{"type": "summary_text", "text": reasoning}]})
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    parts: list = []
    if content:
        parts.append({"type": "output_text", "text": content, "annotations": [], "logprobs": []})
    if message.get("refusal"):
        parts.append({"type": "refusal", "refusal": message["refusal"]})
    if parts:
        items.append({"type": "message", "id": FAKE_ID, "role": "assistant", "status": "completed",
                      "content": parts})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        if not fn.get("name"):
            raise ModelBehaviorError(f"model sent a tool call without a function name: {call!r:.200}")
        items.append({"type": "function_call", "id": FAKE_ID, "call_id": call.get("id") or new_call_id(),
                      "name": fn["name"], "arguments": json_text(fn.get("arguments")) or "{}",
                      "status": "completed"})
    return items


def json_text(value) -> str:
    """Tool-call arguments as a string: strings as they are, anything else as JSON ("" for empty)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False) if value else ""


def chat_usage(usage: Optional[dict]) -> Optional[dict]:
    """Chat usage → the Responses shape `Usage.from_json` reads; None stays None."""
    if not isinstance(usage, dict):
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    inp, out = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": usage.get("total_tokens") or inp + out,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": reasoning}}


def _event(kind: str, output_index: int, **fields) -> dict:
    return {"type": kind, "item_id": FAKE_ID, "output_index": output_index, **fields}


class ChatStreamTranslator:
    """Accumulates chunk deltas and emits Responses-shaped events.

    `start()`, `feed(chunk)` and `finish(saw_done)` return lists of events; `finish` ends with
    `response.completed` carrying the same items `message_to_items` gives for the whole message.
    """

    def __init__(self):
        self.text, self.refusal, self.reasoning = "", "", ""
        self.calls: list = []   # slots: {"index", "id", "name", "arguments", "announced", "out"}
        self.usage: Optional[dict] = None
        self.finish_reason: Optional[str] = None
        self._open: dict = {}   # "reasoning"/"message" -> output_index; "output_text"/"refusal" -> content_index
        self._count = 0

    def start(self) -> list:
        return [{"type": "response.created", "response": {"id": None, "status": "in_progress", "output": []}}]

    def _item(self, key: str, item: dict) -> list:
        self._open[key] = self._count
        self._count += 1
        return [{"type": "response.output_item.added", "output_index": self._open[key], "item": item}]

    def feed(self, chunk: dict) -> list:
        if not isinstance(chunk, dict):
            return []
        if chunk.get("error") or chunk.get("object") == "error":
            raise error_from_body(None, chunk)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        events: list = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str) and delta[key]:
                    events += self._reasoning(delta[key])
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str) and delta[key]:
                    events += self._text(key, delta[key])
            for tc in delta.get("tool_calls") or []:
                events += self._call(tc)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return events

    def _reasoning(self, piece: str) -> list:
        events = [] if "reasoning" in self._open else self._item(
            "reasoning", {"type": "reasoning", "id": FAKE_ID, "summary": []}) + [
            _event("response.reasoning_summary_part.added", self._open["reasoning"], summary_index=0,
                   part={"type": "summary_text", "text": ""})]
        self.reasoning += piece
        return events + [_event("response.reasoning_summary_text.delta", self._open["reasoning"],
                                summary_index=0, delta=piece)]

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
        if kind == "content":
            self.text += piece
        else:
            self.refusal += piece
        return events + [_event(f"response.{part}.delta", self._open["message"],
                                content_index=self._open[part], delta=piece)]

    def _call(self, tc: dict) -> list:
        index, cid = tc.get("index"), tc.get("id") or None
        fn = tc.get("function") or {}
        slot = next((s for s in self.calls if cid and s["id"] == cid), None)
        if slot is None and index is not None:
            same = [s for s in self.calls if s["index"] == index]
            slot = same[-1] if same else None
            if slot is not None and cid and slot["id"] and slot["id"] != cid:
                slot = None  # Ollama: every call at index 0, told apart by id
        if slot is None and index is None and not cid and self.calls:
            slot = self.calls[-1]
        if slot is None:
            slot = {"index": index, "id": None, "name": None, "arguments": "", "announced": False}
            self.calls.append(slot)
        if cid and not slot["id"]:
            slot["id"] = cid
        if fn.get("name") and not slot["name"]:
            slot["name"] = fn["name"]
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        slot["arguments"] += args or ""
        if not slot["announced"] and slot["name"]:
            return self._announce(slot)
        if slot["announced"] and args:
            return [_event("response.function_call_arguments.delta", slot["out"], delta=args)]
        return []

    def _announce(self, slot: dict) -> list:
        slot["announced"], slot["id"] = True, slot["id"] or new_call_id()
        slot["out"], self._count = self._count, self._count + 1
        events = [{"type": "response.output_item.added", "output_index": slot["out"], "item": {
            "type": "function_call", "id": FAKE_ID, "call_id": slot["id"], "name": slot["name"],
            "arguments": "", "status": "in_progress"}}]
        if slot["arguments"]:
            events.append(_event("response.function_call_arguments.delta", slot["out"], delta=slot["arguments"]))
        return events

    def message(self) -> dict:
        """The accumulated assistant message, in the non-streamed response's shape."""
        msg: dict = {"role": "assistant", "content": self.text or None}
        if self.refusal:
            msg["refusal"] = self.refusal
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.calls:
            msg["tool_calls"] = [{"id": s["id"], "type": "function",
                                  "function": {"name": s["name"], "arguments": s["arguments"]}}
                                 for s in self.calls]
        return msg

    def finish(self, saw_done: bool) -> list:
        """Close the stream: validate how it ended, emit the `.done` events and `response.completed`."""
        if not saw_done and self.finish_reason is None:
            raise ModelHTTPError(None, "the stream ended before a finish_reason or [DONE]: the response is "
                                 "truncated (connection dropped or server failed mid-stream)",
                                 type="stream_error", code="truncated")
        if self.finish_reason == "tool_calls" and not self.calls:
            raise ModelBehaviorError("finish_reason was 'tool_calls' but the stream carried no tool call")
        events: list = []
        for slot in self.calls:
            if not slot["name"]:
                raise ModelBehaviorError(f"streamed tool call {slot['id'] or slot['index']} has no name")
            if not slot["announced"]:
                events += self._announce(slot)
        items = message_to_items(self.message())
        calls = iter(self.calls)
        for item in items:
            if item["type"] == "function_call":
                index = next(calls)["out"]
                events.append(_event("response.function_call_arguments.done", index, arguments=item["arguments"]))
            elif item["type"] == "reasoning":
                index = self._open.get("reasoning")
                events += [_event("response.reasoning_summary_text.done", index, summary_index=0,
                                  text=self.reasoning),
                           _event("response.reasoning_summary_part.done", index, summary_index=0,
                                  part=item["summary"][0])]
            else:
                index = self._open.get("message")
                for ci, part in enumerate(item["content"]):
                    if part["type"] == "output_text":
                        events.append(_event("response.output_text.done", index, content_index=ci,
                                             text=part["text"]))
                    events.append(_event("response.content_part.done", index, content_index=ci, part=part))
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events + [{"type": "response.completed", "response": {
            "id": None, "object": "response", "status": "completed", "output": items,
            "usage": chat_usage(self.usage)}}]
