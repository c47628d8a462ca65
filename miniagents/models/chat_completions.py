"""The Chat Completions adapter: kernel items ⇄ `/chat/completions`, blocking and streamed.

Where it sits: the kernel calls `OpenAIChatCompletionsModel.get_response`/`stream_response` with
Responses-shaped items; the pure functions here translate at the edge (items → messages, tools,
tool_choice, output schema → response_format, settings → body; message/chunks → items/events) and
`http.py` moves the bytes. A stream is translated into Responses-shaped events so the kernel sees one
format. Never: send what the API cannot express (raise `UserError` first), send reasoning items, send
`"tool_calls": []` or empty arguments, or trust `finish_reason` to say whether calls were made.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelBehaviorError, ModelHTTPError, UserError
from .http import error_from_body, parse_sse_json
from .interface import ModelResponse, ModelSettings
from .provider import EndpointModel, host_of
from .responses import FAKE_ID, check_function_tool, wire_schema



def new_call_id() -> str:
    return "call_" + os.urandom(12).hex()

# ----------------------------------------------------------------------------- tools, choice, format


def chat_tool(tool: dict) -> dict:
    """A kernel tool spec (flat) → the nested Chat shape, with the strict wire schema."""
    check_function_tool(tool)
    strict = bool(tool.get("strict"))
    fn: dict = {"name": tool["name"]}
    if tool.get("description"):
        fn["description"] = tool["description"]
    fn["parameters"] = wire_schema(tool.get("parameters"), strict)
    if strict:
        fn["strict"] = True
    return {"type": "function", "function": fn}


def chat_tool_choice(choice: Any) -> Any:
    """`ModelSettings.tool_choice` → Chat's form; None means "not sent"."""
    if choice is None or choice in ("auto", "required", "none"):
        return choice
    if isinstance(choice, str):
        return {"type": "function", "function": {"name": choice}}
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            name = choice.get("name") or (choice.get("function") or {}).get("name")
            if name:
                return {"type": "function", "function": {"name": name}}
        if choice.get("type") == "allowed_tools":
            if "allowed_tools" in choice:
                return choice
            tools = [{"type": "function", "function": {"name": t.get("name") or t["function"]["name"]}}
                     for t in choice.get("tools", [])]
            return {"type": "allowed_tools", "allowed_tools": {"mode": choice.get("mode", "auto"),
                                                               "tools": tools}}
    raise UserError(f"tool_choice {choice!r} cannot be expressed in Chat Completions")


def chat_response_format(output_schema: Optional[dict]) -> Optional[dict]:
    if not output_schema:
        return None
    strict = bool(output_schema.get("strict"))
    return {"type": "json_schema", "json_schema": {
        "name": output_schema.get("name") or "final_output",
        "schema": wire_schema(output_schema.get("schema"), strict), "strict": strict}}

# ----------------------------------------------------------------------------- items ⇄ messages


def _text_of(content: Any, where: str, allowed=("input_text", "output_text", "text")) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    texts = []
    for part in content if isinstance(content, list) else [content]:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            raise UserError(f"{where}: content part {kind!r} cannot be sent to Chat Completions "
                            "(only text is supported here)")
        texts.append(part.get("text") or "")
    return "\n".join(texts)


def _user_part(part: dict) -> dict:
    kind = part.get("type")
    if kind == "input_text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and part.get("image_url"):
        image = {"url": part["image_url"]}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file" and (part.get("file_data") or part.get("file_id")):
        return {"type": "file", "file": {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k)}}
    if kind in ("text", "image_url", "file", "input_audio"):
        return part
    raise UserError(f"user content part {part!r:.200} cannot be sent to Chat Completions")


def _reasoning_text(item: dict) -> str:
    parts = list(item.get("summary") or []) + list(item.get("content") or [])
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def items_to_messages(items: list, instructions: Optional[str] = None, *, system_role: str = "system",
                      reasoning_field: Optional[str] = None) -> list:
    """Kernel input items → Chat messages (REFERENCE §6). Pure; raises `UserError` on what Chat can't say.

    Text plus calls make ONE assistant message; each output is a `tool` message with string content;
    reasoning items are dropped, or echoed as `reasoning_field` on the next assistant message that
    carries tool calls (DeepSeek thinking mode wants `reasoning_content`).
    """
    messages: list = [{"role": system_role, "content": instructions}] if instructions else []
    open_asst: Optional[dict] = None
    reasoning: Optional[str] = None
    for item in items:
        if not isinstance(item, dict):
            raise UserError(f"Unhandled item type or structure: {item!r:.200}")
        kind, role = item.get("type"), item.get("role")
        if kind in (None, "message") and role == "assistant":
            content = item.get("content")
            parts = content if isinstance(content, list) else []
            text = content if isinstance(content, str) else _text_of(
                [p for p in parts if p.get("type") != "refusal"], "assistant message")
            open_asst = {"role": "assistant", "content": text or None}
            refusal = "".join(p.get("refusal", "") for p in parts if p.get("type") == "refusal")
            if refusal:
                open_asst["refusal"] = refusal
            messages.append(open_asst)
        elif kind in (None, "message") and role in ("user", "system", "developer"):
            open_asst = None
            content = item.get("content")
            if role == "user":
                sent = content if isinstance(content, str) else [_user_part(p) for p in content or []]
                messages.append({"role": "user", "content": sent})
            else:
                messages.append({"role": system_role if role == "developer" else "system",
                                 "content": _text_of(content, f"{role} message")})
        elif kind == "function_call":
            if open_asst is None:
                open_asst = {"role": "assistant", "content": None}
                messages.append(open_asst)
            args = item.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False) if args else ""
            open_asst.setdefault("tool_calls", []).append({
                "id": item.get("call_id") or item.get("id"), "type": "function",
                "function": {"name": item["name"], "arguments": args or "{}"}})
            if reasoning_field and reasoning:
                open_asst[reasoning_field], reasoning = reasoning, None
        elif kind == "function_call_output":
            open_asst = None
            output = item.get("output")
            if not isinstance(output, str):
                output = (_text_of(output, f"output of call {item.get('call_id')}")
                          if isinstance(output, list) else json.dumps(output, ensure_ascii=False))
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": output})
        elif kind == "reasoning":
            open_asst, reasoning = None, _reasoning_text(item) or None
        else:
            raise UserError(f"Unhandled item type or structure for Chat Completions: {item!r:.200}")
    return messages


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
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False) if args else ""
        items.append({"type": "function_call", "id": FAKE_ID, "call_id": call.get("id") or new_call_id(),
                      "name": fn["name"], "arguments": args or "{}", "status": "completed"})
    return items


def messages_to_items(messages: list) -> list:
    """Chat messages (no system) → input items; the inverse of `items_to_messages` for transcripts."""
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


def chat_usage(usage: Optional[dict]) -> Optional[dict]:
    """Chat usage → the Responses shape `Usage.from_json` reads; None stays None."""
    if not isinstance(usage, dict):
        return None
    prompt = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    inp, out = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": usage.get("total_tokens") or inp + out,
            "input_tokens_details": {"cached_tokens": prompt},
            "output_tokens_details": {"reasoning_tokens": reasoning}}

# ----------------------------------------------------------------------------- request body


def build_body(model: str, instructions: Optional[str], input: list, settings: ModelSettings,
               tools: list, output_schema: Optional[dict], handoffs: list, *, stream: bool = False,
               system_role: str = "system", max_tokens_field: str = "max_completion_tokens",
               include_usage: bool = False, reasoning_field: Optional[str] = None) -> dict:
    """The JSON body for one call; `UserError` for any setting Chat Completions cannot express."""
    for name in ("truncation", "response_include", "context_management", "prompt_cache_options"):
        value = getattr(settings, name)
        if value is not None and not (name == "truncation" and value == "disabled"):
            raise UserError(f"ModelSettings.{name}={value!r} is a Responses API feature; Chat Completions "
                            "cannot express it (use OpenAIResponsesModel or unset it)")
    body: dict = {"model": model, "messages": items_to_messages(
        input, instructions, system_role=system_role, reasoning_field=reasoning_field)}
    wire_tools = [chat_tool(t) for t in list(tools or []) + list(handoffs or [])]
    choice = chat_tool_choice(settings.tool_choice)
    if wire_tools:
        body["tools"] = wire_tools
        if choice is not None:
            body["tool_choice"] = choice
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    elif choice not in (None, "auto", "none"):
        raise UserError(f"tool_choice={settings.tool_choice!r} needs tools, but this agent has none")
    fmt = chat_response_format(output_schema)
    if fmt:
        body["response_format"] = fmt
    for name in ("temperature", "top_p", "frequency_penalty", "presence_penalty", "metadata", "store",
                 "verbosity", "prompt_cache_retention"):
        if getattr(settings, name) is not None:
            body[name] = getattr(settings, name)
    if settings.max_tokens is not None:
        body[max_tokens_field] = settings.max_tokens
    if settings.top_logprobs is not None:
        body["logprobs"], body["top_logprobs"] = True, settings.top_logprobs
    reasoning = settings.reasoning
    if reasoning is not None:
        get = reasoning.get if isinstance(reasoning, dict) else (lambda k: getattr(reasoning, k, None))
        if get("summary") is not None:
            raise UserError("reasoning.summary is a Responses API feature; Chat Completions cannot express it")
        if get("effort") is not None:
            body["reasoning_effort"] = get("effort")
    if stream:
        body["stream"] = True
        if settings.include_usage if settings.include_usage is not None else include_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(settings.extra_args or {})
    body.update(settings.extra_body or {})
    return body

# ----------------------------------------------------------------------------- streaming


class ChatStreamTranslator:
    """Accumulates chat.completion.chunk deltas (WIRE §6.2) and emits Responses-shaped events.

    Pure (no I/O): `feed(chunk)` and `finish(saw_done)` return lists of events; `finish` ends with
    `response.completed` carrying the same items `message_to_items` gives for the whole message.
    """

    def __init__(self):
        self.text, self.refusal, self.reasoning = "", "", ""
        self.calls: list = []   # slots: {"index", "id", "name", "arguments", "announced", "out"}
        self.usage: Optional[dict] = None
        self.finish_reason: Optional[str] = None
        self._open: dict = {}   # "reasoning"/"message" -> output_index
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
            if isinstance(delta.get("content"), str) and delta["content"]:
                events += self._text("content", delta["content"])
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                events += self._text("refusal", delta["refusal"])
            for tc in delta.get("tool_calls") or []:
                events += self._call(tc)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return events

    def _reasoning(self, piece: str) -> list:
        events = [] if "reasoning" in self._open else self._item(
            "reasoning", {"type": "reasoning", "id": FAKE_ID, "summary": []}) + [
            {"type": "response.reasoning_summary_part.added", "item_id": FAKE_ID,
             "output_index": self._open["reasoning"], "summary_index": 0,
             "part": {"type": "summary_text", "text": ""}}]
        self.reasoning += piece
        return events + [{"type": "response.reasoning_summary_text.delta", "item_id": FAKE_ID,
                          "output_index": self._open["reasoning"], "summary_index": 0, "delta": piece}]

    def _text(self, kind: str, piece: str) -> list:
        events = [] if "message" in self._open else self._item("message", {
            "type": "message", "id": FAKE_ID, "role": "assistant", "status": "in_progress", "content": []})
        part = "output_text" if kind == "content" else "refusal"
        if part not in self._open:
            self._open[part] = len([k for k in ("output_text", "refusal") if k in self._open])
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []} \
                if kind == "content" else {"type": "refusal", "refusal": ""}
            events.append({"type": "response.content_part.added", "item_id": FAKE_ID,
                           "output_index": self._open["message"], "content_index": self._open[part],
                           "part": empty})
        if kind == "content":
            self.text += piece
            name = "response.output_text.delta"
        else:
            self.refusal += piece
            name = "response.refusal.delta"
        return events + [{"type": name, "item_id": FAKE_ID, "output_index": self._open["message"],
                          "content_index": self._open[part], "delta": piece}]

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
        events = []
        if not slot["announced"] and slot["name"]:
            events = self._announce(slot)
        elif slot["announced"] and args:
            events = [{"type": "response.function_call_arguments.delta", "item_id": FAKE_ID,
                       "output_index": slot["out"], "delta": args}]
        return events

    def _announce(self, slot: dict) -> list:
        slot["announced"], slot["id"] = True, slot["id"] or new_call_id()
        slot["out"], self._count = self._count, self._count + 1
        events = [{"type": "response.output_item.added", "output_index": slot["out"], "item": {
            "type": "function_call", "id": FAKE_ID, "call_id": slot["id"], "name": slot["name"],
            "arguments": "", "status": "in_progress"}}]
        if slot["arguments"]:
            events.append({"type": "response.function_call_arguments.delta", "item_id": FAKE_ID,
                           "output_index": slot["out"], "delta": slot["arguments"]})
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
        by_type = {"reasoning": self._open.get("reasoning"), "message": self._open.get("message")}
        calls = iter(self.calls)
        for item in items:
            if item["type"] == "function_call":
                index = next(calls)["out"]
                events += [{"type": "response.function_call_arguments.done", "item_id": FAKE_ID,
                            "output_index": index, "arguments": item["arguments"]}]
            elif item["type"] == "reasoning":
                index = by_type["reasoning"]
                events += [{"type": "response.reasoning_summary_text.done", "item_id": FAKE_ID,
                            "output_index": index, "summary_index": 0, "text": self.reasoning},
                           {"type": "response.reasoning_summary_part.done", "item_id": FAKE_ID,
                            "output_index": index, "summary_index": 0, "part": item["summary"][0]}]
            else:
                index = by_type["message"]
                for ci, part in enumerate(item["content"]):
                    if part["type"] == "output_text":
                        events.append({"type": "response.output_text.done", "item_id": FAKE_ID,
                                       "output_index": index, "content_index": ci, "text": part["text"]})
                    events.append({"type": "response.content_part.done", "item_id": FAKE_ID,
                                   "output_index": index, "content_index": ci, "part": part})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events + [{"type": "response.completed", "response": {
            "id": None, "object": "response", "status": "completed", "output": items,
            "usage": chat_usage(self.usage)}}]

# ----------------------------------------------------------------------------- the model


class OpenAIChatCompletionsModel(EndpointModel):
    """`Model` over `POST {base_url}/chat/completions` (OpenAI and every compatible server).

    Per-endpoint choices (constructor keywords): `system_role` ("system", or "developer" for newer
    OpenAI models), `max_tokens_field` (default `max_completion_tokens` for api.openai.com and Azure,
    `max_tokens` elsewhere — Ollama reads only that), `include_usage` (`stream_options`; default on
    only for api.openai.com, `ModelSettings.include_usage` overrides), `reasoning_field` (echo
    reasoning on tool-call turns: default "reasoning_content" for api.deepseek.com, else off).
    """

    def __init__(self, model: str, *, system_role: str = "system", max_tokens_field: Optional[str] = None,
                 include_usage: Optional[bool] = None, reasoning_field: Optional[str] = None, **endpoint):
        super().__init__(model, **endpoint)
        host = host_of(self.base_url)
        official = host == "api.openai.com" or host.endswith(".azure.com")
        self.system_role = system_role
        self.max_tokens_field = max_tokens_field or ("max_completion_tokens" if official else "max_tokens")
        self.include_usage = (host == "api.openai.com") if include_usage is None else include_usage
        self.reasoning_field = reasoning_field or ("reasoning_content" if host == "api.deepseek.com" else None)

    def _body(self, instructions, input, settings, tools, output_schema, handoffs, stream, ids) -> dict:
        for name, value in ids.items():
            if value:
                raise UserError(f"{name} is a Responses API feature; Chat Completions needs the full "
                                "transcript (use OpenAIResponsesModel, or drop it)")
        return build_body(self.model, instructions, list(input), settings, tools, output_schema, handoffs,
                          stream=stream, system_role=self.system_role, max_tokens_field=self.max_tokens_field,
                          include_usage=self.include_usage, reasoning_field=self.reasoning_field)

    def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                     tracing=None, *, previous_response_id=None, conversation_id=None, prompt=None):
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, False,
                          {"previous_response_id": previous_response_id, "conversation_id": conversation_id,
                           "prompt": prompt})
        data, headers = self.transport.post_json("/chat/completions", body, **self._call_options(model_settings))
        if not isinstance(data, dict) or data.get("error") or data.get("object") == "error":
            raise error_from_body(200, data, headers.get("x-request-id"))
        choices = [c for c in data.get("choices") or [] if c.get("index", 0) == 0]
        if not choices:
            raise ModelBehaviorError(f"chat completion had no choices: {json.dumps(data)[:300]}")
        items = message_to_items(choices[0].get("message") or {})
        return ModelResponse(output=items, usage=Usage.from_json(chat_usage(data.get("usage"))),
                             response_id=None, request_id=headers.get("x-request-id"))

    def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                        tracing=None, *, previous_response_id=None, conversation_id=None,
                        prompt=None) -> Iterator[dict]:
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, True,
                          {"previous_response_id": previous_response_id, "conversation_id": conversation_id,
                           "prompt": prompt})
        translator, saw_done, started = ChatStreamTranslator(), False, False
        for _event, data in self.transport.post_stream("/chat/completions", body,
                                                       **self._call_options(model_settings)):
            if not started:
                started = True
                yield from translator.start()
            payload = parse_sse_json(data)
            if payload == "[DONE]":
                saw_done = True
            elif not saw_done:
                yield from translator.feed(payload)
        if not started:
            yield from translator.start()
        yield from translator.finish(saw_done)
