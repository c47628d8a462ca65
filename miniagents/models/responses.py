"""The Responses adapter: kernel items → `POST {base_url}/responses`, blocking and streamed.

Where it sits: the kernel's items already are Responses input items, so this module mostly echoes
them back verbatim and maps tools/settings/output schema to the request body (pure `build_body`).
Stateless by default (the kernel replays the transcript; `store` is sent only when set);
`previous_response_id` and `conversation_id` pass through. A stream's result is the
`response.completed` event; `response.failed`/`error` raise `ModelHTTPError`, `response.incomplete`
raises `ModelBehaviorError` (so does a non-streamed `incomplete`: never a silent partial answer).
The strict-schema cleaning (`wire_schema`, WIRE §9) and tool checks live here and serve both adapters.
Never: send Chat-shaped tools, `item_reference`s, or items with the Chat adapter's fake ids.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelBehaviorError, ModelHTTPError, UserError
from .http import error_from_body, parse_sse_json
from .interface import ModelResponse, ModelSettings
from .provider import EndpointModel

FAKE_ID = "__fake_id__"  # item id for items that Chat Completions gives no id (upstream's literal)
_STRICT_REJECTS = frozenset((
    "default", "prefixItems", "minLength", "maxLength", "patternProperties", "propertyNames",
    "unevaluatedProperties", "minProperties", "maxProperties", "uniqueItems", "contains", "minContains",
    "maxContains", "unevaluatedItems", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "$id"))
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
EMPTY_OBJECT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
_PASS_THROUGH = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "truncation", "metadata",
                 "store", "top_logprobs", "prompt_cache_retention", "context_management")


def wire_schema(schema: Optional[dict], strict: bool) -> dict:
    """The copy of a JSON schema to put on the wire: for strict, without what strict endpoints reject.

    A dropped `default` is mentioned in the description; `prefixItems` (tuples) becomes `items: anyOf`;
    `oneOf` becomes `anyOf`; a one-entry `allOf` is merged. The caller's schema is not modified.
    """
    if not schema:
        return dict(EMPTY_OBJECT)
    return _clean(schema) if strict else schema


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict = {}
    for key, value in node.items():
        if key in _STRICT_REJECTS:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key == "items" and value is False:
            continue
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out["anyOf" if key == "oneOf" else key] = _clean(value)
        else:
            out[key] = value
    if isinstance(node.get("prefixItems"), list) and "items" not in out:
        branches = []
        for sub in _clean(node["prefixItems"]):
            if sub not in branches:
                branches.append(sub)
        if branches:
            out["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if isinstance(out.get("allOf"), list) and len(out["allOf"]) == 1 and isinstance(out["allOf"][0], dict):
        out = {**{k: v for k, v in out.items() if k != "allOf"}, **out["allOf"][0]}
    if node.get("default") is not None:
        note = "Default: " + json.dumps(node["default"], ensure_ascii=False) + "."
        out["description"] = (str(out["description"]).rstrip() + " " + note) if out.get("description") else note
    return out


def check_function_tool(tool: dict) -> None:
    """Raise `UserError` for a tool an adapter cannot send (hosted tools, bad names)."""
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
        raise UserError(f"tool {kind!r} is not a function tool; only function tools can be sent to this API")
    name = tool.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not set(name) <= _NAME_CHARS:
        raise UserError(f"tool name {name!r} must match ^[A-Za-z0-9_-]{{1,64}}$")


def responses_tool(tool: dict) -> dict:
    """A kernel tool spec → the flat Responses shape, `strict` always explicit (omitted means "try strict")."""
    check_function_tool(tool)
    strict = bool(tool.get("strict"))
    out: dict = {"type": "function", "name": tool["name"]}
    if tool.get("description"):
        out["description"] = tool["description"]
    out["parameters"] = wire_schema(tool.get("parameters"), strict)
    out["strict"] = strict
    return out


def responses_tool_choice(choice: Any) -> Any:
    if choice is None or choice in ("auto", "required", "none"):
        return choice
    if isinstance(choice, str):
        return {"type": "function", "name": choice}
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if name:
            return {"type": "function", "name": name}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        if "allowed_tools" in choice:  # the Chat form
            inner = choice["allowed_tools"]
            return {"type": "allowed_tools", "mode": inner.get("mode", "auto"),
                    "tools": [{"type": "function", "name": t.get("name") or t["function"]["name"]}
                              for t in inner.get("tools", [])]}
        return choice
    raise UserError(f"tool_choice {choice!r} cannot be expressed in the Responses API")


def wire_item(item: Any) -> Any:
    """An input item as sent: verbatim, minus the fake ids the Chat adapter gives its items."""
    if not isinstance(item, dict):
        raise UserError(f"Unhandled item type or structure: {item!r:.200}")
    if item.get("type") == "item_reference":
        raise UserError("item_reference items need stored state; the kernel sends full transcripts")
    if item.get("id") == FAKE_ID:
        item = {k: v for k, v in item.items() if k != "id"}
    return item


def build_body(model: str, instructions: Optional[str], input: Any, settings: ModelSettings, tools: list,
               output_schema: Optional[dict], handoffs: list, *, stream: bool = False,
               previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
               prompt: Any = None) -> dict:
    """The JSON body for one call. Pure; `UserError` for what the API cannot express."""
    body: dict = {"model": model}
    if instructions:
        body["instructions"] = instructions
    if isinstance(input, str):
        body["input"] = input
    else:
        # Reasoning the Chat adapter produced has no id the Responses API could know: not resendable.
        body["input"] = [wire_item(i) for i in input
                         if not (isinstance(i, dict) and i.get("type") == "reasoning" and i.get("id") == FAKE_ID)]
    wire_tools = [responses_tool(t) for t in list(tools or []) + list(handoffs or [])]
    choice = responses_tool_choice(settings.tool_choice)
    if wire_tools:
        body["tools"] = wire_tools
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    if choice is not None and wire_tools:
        body["tool_choice"] = choice
    elif choice not in (None, "auto", "none"):
        raise UserError(f"tool_choice={settings.tool_choice!r} needs tools, but this agent has none")
    for name in _PASS_THROUGH:
        if getattr(settings, name) is not None:
            body[name] = getattr(settings, name)
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    if settings.reasoning is not None:
        r = settings.reasoning
        body["reasoning"] = r if isinstance(r, dict) else {
            k: getattr(r, k) for k in ("effort", "summary") if getattr(r, k, None) is not None}
    if settings.response_include:
        body["include"] = list(settings.response_include)
    text: dict = {}
    if output_schema:
        strict = bool(output_schema.get("strict"))
        text["format"] = {"type": "json_schema", "name": output_schema.get("name") or "final_output",
                          "schema": wire_schema(output_schema.get("schema"), strict), "strict": strict}
    if settings.verbosity is not None:
        text["verbosity"] = settings.verbosity
    if text:
        body["text"] = text
    if previous_response_id:
        body["previous_response_id"] = previous_response_id
    if conversation_id:
        body["conversation"] = conversation_id
    if prompt is not None:
        body["prompt"] = prompt
    if stream:
        body["stream"] = True
    body.update(settings.extra_args or {})
    body.update(settings.extra_body or {})
    return body


def check_final(response: dict, request_id: Optional[str] = None) -> dict:
    """Raise for a `failed` or `incomplete` response; return it otherwise."""
    status = response.get("status")
    if status == "failed" or (status is None and response.get("error")):
        raise error_from_body(None, {"error": response.get("error") or {"message": "response failed"}},
                              request_id)
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
        raise ModelBehaviorError(f"The model's response is incomplete (reason: {reason}); raise "
                                 "max_tokens or shorten the input.")
    return response


class OpenAIResponsesModel(EndpointModel):
    """`Model` over `POST {base_url}/responses`: OpenAI's own API (and Azure, Ollama, vLLM, llama.cpp)."""

    def _body(self, instructions, input, settings, tools, output_schema, handoffs, stream, **ids) -> dict:
        return build_body(self.model, instructions, input, settings, tools, output_schema, handoffs,
                          stream=stream, **ids)

    def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                     tracing=None, *, previous_response_id=None, conversation_id=None, prompt=None):
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, False,
                          previous_response_id=previous_response_id, conversation_id=conversation_id,
                          prompt=prompt)
        data, headers = self.transport.post_json("/responses", body, **self._call_options(model_settings))
        rid = headers.get("x-request-id")
        if not isinstance(data, dict) or ("output" not in data and data.get("error")):
            raise error_from_body(200, data, rid, self.transport._secret)
        check_final(data, rid)
        return ModelResponse(output=list(data.get("output") or []), usage=Usage.from_json(data.get("usage")),
                             response_id=data.get("id"), request_id=rid)

    def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                        tracing=None, *, previous_response_id=None, conversation_id=None,
                        prompt=None) -> Iterator[dict]:
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, True,
                          previous_response_id=previous_response_id, conversation_id=conversation_id,
                          prompt=prompt)
        collected: dict = {}
        completed = False
        for name, data in self.transport.post_stream("/responses", body, **self._call_options(model_settings)):
            event = parse_sse_json(data, self.transport._secret)
            if completed or event == "[DONE]" or not isinstance(event, dict):
                continue
            kind = event.get("type") or name
            event.setdefault("type", kind)
            if kind == "error":
                raise error_from_body(None, event, secret=self.transport._secret)
            if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
                key = event.get("output_index")
                collected[key if key is not None else event["item"].get("id") or len(collected)] = event["item"]
            if kind in ("response.failed", "response.incomplete"):
                check_final({**(event.get("response") or {}), "status": kind.split(".")[1]})
            if kind == "response.completed":
                response = dict(event.get("response") or {})
                if not response.get("output") and collected:  # minimal servers: use the collected items
                    response["output"] = list(collected.values())
                response.setdefault("output", [])
                completed = True  # keep reading to EOF so the connection can be reused
                yield {**event, "response": response}
                continue
            yield event
        if not completed:
            raise ModelHTTPError(None, "the stream ended before response.completed: the response is "
                                 "truncated (connection dropped or server failed mid-stream)",
                                 type="stream_error", code="truncated")
