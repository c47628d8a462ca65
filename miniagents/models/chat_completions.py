"""The Chat Completions adapter: kernel items → `POST {base_url}/chat/completions`, blocking and streamed.

Where it sits: the kernel calls `OpenAIChatCompletionsModel` (an `EndpointModel`) with Responses-shaped
items; the pure functions here translate the request (items → messages, tools, tool_choice, output schema →
response_format, settings → body) and `chat_stream.py` translates the answer back (message or chunks →
items and Responses-shaped events), so the kernel sees one format.
Never: send what the API cannot express (raise `UserError` first), send reasoning items, send
`"tool_calls": []` or empty arguments.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelBehaviorError, ModelHTTPError, UserError
from ..items import clean_json, described
from . import shapes
from .chat_stream import ChatStreamTranslator, chat_usage, check_answered, json_text, message_to_items
from .connection import host_of
from .endpoint import (SENT_AS_IS, EndpointModel, add_extras, add_settings, add_tools, function_spec,
                       output_format, reasoning_of, refusal_text, schema_note, wire_tool_choice)
from .http import Exchange
from .protocol import error_from_body, parse_sse_json
from .interface import ModelResponse, ModelSettings


def chat_tool(tool: dict) -> dict:
    """A kernel tool spec (flat) → the nested Chat shape, with the strict wire schema."""
    fn = function_spec(tool)
    if not fn["strict"]:
        del fn["strict"]
    return {"type": "function", "function": fn}

# ----------------------------------------------------------------------------- items → messages


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
        if not isinstance(part.get("text") or "", str):  # (a "text" part's, which no entry checks: a bare TypeError)
            raise UserError(f"{where}: content part {kind!r} has a text that is no string")
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


def tool_output_content(item: dict) -> tuple:
    """A `function_call_output` as Chat can carry it: (the tool message's text, the images and files the tool
    returned as user content parts). A Chat tool message holds text only, so what a tool returned as
    `ToolOutputImage`/`ToolOutputFileContent` follows in a user message; what Chat cannot send at all (an image
    given only by `file_id`, a file by URL) is named in the text instead."""
    output = item.get("output")
    if isinstance(output, str):
        return output, []
    if not isinstance(output, list):
        return json.dumps(output, ensure_ascii=False), []
    texts, media = [], []
    for part in output:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            texts.append(part.get("text") or "")
            continue
        try:
            media.append(_user_part(part))
        except UserError:
            texts.append(f"[{kind or 'a part'} not shown: Chat Completions cannot send it]")
    if media:
        texts.append(f"[{len(media)} attachment(s) in the next message]")
    return "\n".join(texts), media


def items_to_messages(items: list, instructions: Optional[str] = None, *, system_role: str = "system",
                      reasoning_field: Optional[str] = None) -> list:
    """Kernel input items → Chat messages, as upstream converts them (so a transcript means the same on both
    APIs). Pure; raises `UserError` on what Chat can't say.

    Text plus calls make ONE assistant message; an assistant message without text carries `"content": null`
    (as OpenAI documents; `with_empty_content` gives the other form, for servers that refuse it); each output
    is a `tool` message with string content, and the images and files tools returned follow the turn's tool
    messages in one user message (`tool_output_content`); reasoning items are dropped, or echoed as
    `reasoning_field` on the next assistant message that carries tool calls (DeepSeek thinking mode wants
    `reasoning_content`).
    """
    messages: list = [{"role": system_role, "content": instructions}] if instructions else []
    open_asst: Optional[dict] = None
    reasoning: Optional[str] = None
    attachments: list = []  # (call id, parts) of tool outputs, sent once the turn's tool messages are done

    def attach() -> None:
        if attachments:
            ids = ", ".join(call_id for call_id, _ in attachments)
            said = f"Returned by tool call{'s' if len(attachments) > 1 else ''} {ids}:"
            messages.append({"role": "user", "content": [{"type": "text", "text": said}]
                             + [part for _, parts in attachments for part in parts]})
            attachments.clear()

    for item in items:
        if not isinstance(item, dict):
            raise UserError(f"Unhandled item type or structure: {item!r:.200}")
        kind, role = item.get("type"), item.get("role")
        if kind != "function_call_output":
            attach()
        if kind in (None, "message") and role == "assistant":
            content = item.get("content")
            parts = content if isinstance(content, list) else []
            text = content if isinstance(content, str) else _text_of(
                [p for p in parts if p.get("type") != "refusal"], "assistant message")
            open_asst = {"role": "assistant", "content": text or None}
            refusal = [p.get("refusal", "") for p in parts if p.get("type") == "refusal"]
            if not all(isinstance(said, str) for said in refusal):  # (a custom model's, kept in a session)
                raise UserError(f"Unhandled item type or structure for Chat Completions: {item!r:.200}")
            refusal = "".join(refusal)
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
            open_asst.setdefault("tool_calls", []).append({
                "id": item.get("call_id") or item.get("id"), "type": "function",
                "function": {"name": item["name"], "arguments": json_text(item.get("arguments")) or "{}"}})
            if reasoning_field and reasoning:
                open_asst[reasoning_field], reasoning = reasoning, None
        elif kind == "function_call_output":
            open_asst = None
            text, media = tool_output_content(item)
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": text})
            if media:
                attachments.append((item["call_id"], media))
        elif kind == "reasoning":
            parts = [item.get("summary") or [], item.get("content") or []]
            if not all(isinstance(part, list) for part in parts):  # (a custom model's summary of 5: a bare TypeError)
                raise UserError(f"Unhandled item type or structure for Chat Completions: {item!r:.200}")
            parts = parts[0] + parts[1]
            open_asst = None
            reasoning = "\n".join(p.get("text", "") for p in parts if isinstance(p, dict)) or None
        else:
            raise UserError(f"Unhandled item type or structure for Chat Completions: {item!r:.200}")
    attach()
    return messages


# ----------------------------------------------------------------------------- request body


def build_body(model: str, instructions: Optional[str], input: list, settings: ModelSettings,
               tools: list, output_schema: Optional[dict], handoffs: list, *, stream: bool = False,
               system_role: str = "system", max_tokens_field: str = "max_completion_tokens",
               include_usage: bool = False, reasoning_field: Optional[str] = None) -> dict:
    """The JSON body for one call, in the forms OpenAI documents (text-less assistant content `null`, the output
    schema as `json_schema`); `UserError` for any setting Chat Completions cannot express."""
    for name in ("truncation", "response_include", "context_management"):
        value = getattr(settings, name)
        if value is not None and not (name == "truncation" and value == "disabled"):
            raise UserError(f"ModelSettings.{name}={described(value)} is a Responses API feature; Chat Completions "
                            "cannot express it (use OpenAIResponsesModel or unset it)")
    body: dict = {"model": model, "messages": items_to_messages(
        input, instructions, system_role=system_role, reasoning_field=reasoning_field)}
    add_tools(body, settings, [chat_tool(t) for t in list(tools or []) + list(handoffs or [])],
              wire_tool_choice(settings.tool_choice, chat=True))
    if output_schema:
        body["response_format"] = {"type": "json_schema", "json_schema": output_format(output_schema)}
    add_settings(body, settings, SENT_AS_IS + ("verbosity",))
    if settings.max_tokens is not None:
        body[max_tokens_field] = settings.max_tokens
    if settings.top_logprobs is not None:
        body["logprobs"], body["top_logprobs"] = True, settings.top_logprobs
    reasoning = reasoning_of(settings) or {}
    if reasoning.get("summary") is not None:
        raise UserError("reasoning.summary is a Responses API feature; Chat Completions cannot express it")
    if reasoning.get("effort") is not None:
        body["reasoning_effort"] = reasoning["effort"]
    if stream and (settings.include_usage if settings.include_usage is not None else include_usage):
        body["stream_options"] = {"include_usage": True}
    return add_extras(body, settings, stream)

# ----------------------------------------------------------------------------- forms servers disagree on
# Besides a forced tool (endpoint.py), two parts of a Chat body have a second form, for servers that refuse
# OpenAI's: a text-less assistant message's content (`null`, or `""`), and the output schema (`json_schema`, or
# `json_object` with the schema beside it and in the system message).

EMPTY_CONTENT_FORMS = (None, "")
RESPONSE_FORMAT_TYPES = ("json_schema", "json_object")


def empty_content_form(body: dict) -> Any:
    """The form (`None` or `""`) the body's text-less assistant messages use; `...` when it has none."""
    for message in body.get("messages") or ():
        if message.get("role") == "assistant" and message.get("content") in EMPTY_CONTENT_FORMS:
            return message["content"]
    return ...


def with_empty_content(body: dict, form: Any) -> dict:
    """A copy of `body` whose text-less assistant messages carry `form` as their content."""
    messages = [{**m, "content": form} if m.get("role") == "assistant" and m.get("content") in EMPTY_CONTENT_FORMS
                else m for m in body["messages"]]
    return {**body, "messages": messages}


def json_schema_of(body: dict) -> Optional[dict]:
    """The schema a body asks for (`response_format` of type `json_schema`, or `json_object` with a `schema`)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        return fmt["json_schema"].get("schema") or {}
    return fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_object" else None


def with_json_object(body: dict, system_role: str = "system") -> dict:
    """A copy of `body` that asks for its `json_schema` output as `{"type": "json_object", "schema": ...}`
    (llama-cpp-python reads `schema` there) and states the schema at the end of the system message (one is put
    first if there is none), so a server that ignores `schema` still shows it to the model."""
    schema = json_schema_of(body)
    if schema is None:
        return body
    note = schema_note(schema)
    messages = list(body["messages"])
    first = messages[0] if messages else {}
    if first.get("role") in ("system", "developer") and isinstance(first.get("content"), str):
        messages[0] = {**first, "content": f"{first['content']}\n\n{note}"}
    else:
        messages.insert(0, {"role": system_role, "content": note})
    return {**body, "messages": messages, "response_format": {"type": "json_object", "schema": schema}}


def refuses_content(err: ModelHTTPError) -> bool:
    """Whether a refusal points at a message's content (llama-cpp-python: 500 "validation errors ... content";
    Ollama: 400 "invalid message content type: <nil>"; Bedrock-backed gateways: "text content blocks must be
    non-empty"), but not a content filter."""
    said = refusal_text(err)
    if "content_filter" in said or "content management" in said or "content policy" in said:
        return False
    return "content" in said or "<nil>" in said


def refuses_response_format(err: ModelHTTPError, sent: str) -> bool:
    """Whether a refusal points at the type of `response_format`, naming the type that was not sent as the one to
    use (llama-cpp-python, refusing json_schema: 500 "1 validation error ... ('body', 'response_format', 'type')
    ... Input should be 'text' or 'json_object'"; LM Studio, refusing json_object: "'response_format.type' must
    be 'json_schema' or 'text'"). A refused schema (OpenAI: "Invalid schema for response_format ...") names
    neither, so it is never sent again as json_object."""
    said = refusal_text(err)
    return "response_format" in said and RESPONSE_FORMAT_TYPES[sent == "json_schema"] in said


# ----------------------------------------------------------------------------- the model


class OpenAIChatCompletionsModel(EndpointModel):
    """`Model` over `POST {base_url}/chat/completions` (OpenAI and every compatible server).

    Per-endpoint choices (constructor keywords): `system_role` ("system", or "developer" for newer
    OpenAI models), `max_tokens_field` (default `max_completion_tokens` for api.openai.com and Azure,
    `max_tokens` elsewhere — Ollama reads only that), `include_usage` (`stream_options`; default on
    only for api.openai.com, `ModelSettings.include_usage` overrides), `reasoning_field` (echo
    reasoning on tool-call turns: default "reasoning_content" for api.deepseek.com, else off), and the forms of
    two parts (above): `tool_call_content` (None or "" forces one) and `response_format_type` ("json_schema" or
    "json_object" forces one); "auto" switches a part the server refuses.
    """

    path = "/chat/completions"

    def __init__(self, model: str, *, system_role: str = "system",
                 max_tokens_field: Optional[str] = None, include_usage: Optional[bool] = None,
                 reasoning_field: Optional[str] = None, tool_call_content: Any = "auto",
                 response_format_type: str = "auto", **endpoint):
        super().__init__(model, **endpoint)
        if tool_call_content != "auto" and tool_call_content not in EMPTY_CONTENT_FORMS:
            raise ValueError(f"tool_call_content must be 'auto', None or '', got {described(tool_call_content)}")
        if response_format_type != "auto" and response_format_type not in RESPONSE_FORMAT_TYPES:
            raise ValueError("response_format_type must be 'auto', 'json_schema' or 'json_object', "
                             f"got {described(response_format_type)}")
        host = host_of(self.base_url)
        official = host == "api.openai.com" or host.endswith(".azure.com")
        self.system_role = system_role
        self.max_tokens_field = max_tokens_field or ("max_completion_tokens" if official else "max_tokens")
        self.include_usage = (host == "api.openai.com") if include_usage is None else include_usage
        self.reasoning_field = reasoning_field or ("reasoning_content" if host == "api.deepseek.com" else None)
        self.tool_call_content, self.response_format_type = tool_call_content, response_format_type
        self._forced = {part: form for part, form in (("content", tool_call_content),
                                                      ("response_format", response_format_type)) if form != "auto"}

    def _body(self, instructions, input, settings, tools, output_schema, handoffs, stream, **ids) -> dict:
        for name, value in ids.items():
            if value:
                raise UserError(f"{name} is a Responses API feature; Chat Completions needs the full "
                                "transcript (use OpenAIResponsesModel, or drop it)")
        return build_body(self.model, instructions, list(input), settings, tools, output_schema, handoffs,
                          stream=stream, system_role=self.system_role, max_tokens_field=self.max_tokens_field,
                          include_usage=self.include_usage, reasoning_field=self.reasoning_field)

    FORMS = {**EndpointModel.FORMS, "content": EMPTY_CONTENT_FORMS, "response_format": RESPONSE_FORMAT_TYPES}

    def _named(self, part: str, form: Any) -> str:
        return f"assistant content {json.dumps(form)}" if part == "content" else super()._named(part, form)

    def _in_forms(self, body: dict, forms: dict) -> dict:
        body = super()._in_forms(body, forms)
        if forms["content"] is not None:
            body = with_empty_content(body, forms["content"])
        return with_json_object(body, self.system_role) if forms["response_format"] == "json_object" else body

    def _refused(self, body: dict, forms: dict, err: ModelHTTPError) -> list:
        parts = super()._refused(body, forms, err)
        if "content" not in self._forced and empty_content_form(body) is not ... and refuses_content(err):
            parts.append("content")
        if ("response_format" not in self._forced and json_schema_of(body) is not None
                and refuses_response_format(err, forms["response_format"])):
            parts.append("response_format")
        return parts

    def _schema(self, body: dict) -> Optional[dict]:
        return json_schema_of(body)

    def _response(self, exchange: Exchange) -> ModelResponse:
        data, request_id = exchange.data, exchange.request_id
        if not isinstance(data, dict) or data.get("error") or data.get("object") == "error":
            raise error_from_body(200, data, request_id, exchange.secret)
        data = clean_json(data)
        choices = shapes.arr(data.get("choices"), "choices")
        choices = [c for i, c in enumerate(choices) if shapes.obj(c, f"choices[{i}]").get("index", 0) == 0]
        if not choices:
            raise ModelBehaviorError("The model's answer is empty: the response has no choices.")
        message = choices[0].get("message")
        items = message_to_items({} if message is None else message)
        check_answered(items, shapes.opt_str(choices[0].get("finish_reason"), "choices[0].finish_reason"))
        return ModelResponse(output=items, usage=Usage.from_json(chat_usage(data.get("usage"))),
                             response_id=None, request_id=request_id)

    def _events(self, exchange: Exchange) -> Iterator[dict]:
        translator, saw_done, started = ChatStreamTranslator(), False, False
        for _event, data in exchange:
            if not started:
                started = True
                yield from translator.start()
            payload = parse_sse_json(data, exchange.secret)
            if payload == "[DONE]":
                saw_done = True
                break  # the answer is complete: never wait for a server that holds the connection open
            if isinstance(payload, dict) and (payload.get("error") or payload.get("object") == "error"):
                raise error_from_body(None, payload, exchange.request_id, exchange.secret)
            yield from translator.feed(payload)
        if not started:
            yield from translator.start()
        yield from translator.finish(saw_done)
