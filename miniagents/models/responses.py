"""The Responses adapter: kernel items → `POST {base_url}/responses`, blocking and streamed.

Where it sits: the kernel's items already are Responses input items, so this module mostly echoes them
back verbatim and maps tools/settings/output schema to the request body (pure `build_body`); the call
itself is `EndpointModel`'s. Stateless by default (the kernel replays the transcript; `store` is sent only
when set); `previous_response_id` and `conversation_id` pass through. A stream's result is the
`response.completed` event; `response.failed`/`error` raise `ModelHTTPError`, `response.incomplete`
raises `ModelBehaviorError` (so does a non-streamed `incomplete`: never a silent partial answer).
Never: send Chat-shaped tools, `item_reference`s, or items with the Chat adapter's fake ids.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelBehaviorError, ModelHTTPError, UserError
from .endpoint import (FAKE_ID, SENT_AS_IS, EndpointModel, add_extras, add_settings, add_tools, function_spec,
                       output_format, wire_tool_choice)
from .http import error_from_body, parse_sse_json
from .interface import ModelResponse, ModelSettings


def responses_tool(tool: dict) -> dict:
    """A kernel tool spec → the flat Responses shape, `strict` always explicit (omitted means "try strict")."""
    return {"type": "function", **function_spec(tool)}


def responses_tool_choice(choice: Any) -> Any:
    return wire_tool_choice(choice, chat=False)


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
    add_tools(body, settings, [responses_tool(t) for t in list(tools or []) + list(handoffs or [])],
              responses_tool_choice(settings.tool_choice))
    add_settings(body, settings, SENT_AS_IS + ("truncation", "top_logprobs", "context_management"))
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
        text["format"] = {"type": "json_schema", **output_format(output_schema)}
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
    return add_extras(body, settings, stream)


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

    path = "/responses"

    def _body(self, instructions, input, settings, tools, output_schema, handoffs, stream, **ids) -> dict:
        return build_body(self.model, instructions, input, settings, tools, output_schema, handoffs,
                          stream=stream, **ids)

    def _response(self, data: Any, request_id: Optional[str]) -> ModelResponse:
        if not isinstance(data, dict) or ("output" not in data and data.get("error")):
            raise error_from_body(200, data, request_id, self.transport.secret)
        check_final(data, request_id)
        return ModelResponse(output=list(data.get("output") or []), usage=Usage.from_json(data.get("usage")),
                             response_id=data.get("id"), request_id=request_id)

    def _events(self, sse: Iterator) -> Iterator[dict]:
        collected: dict = {}
        completed = False
        for name, data in sse:
            event = parse_sse_json(data, self.transport.secret)
            if completed or event == "[DONE]" or not isinstance(event, dict):
                continue
            kind = event.get("type") or name
            event.setdefault("type", kind)
            if kind == "error":
                raise error_from_body(None, event, secret=self.transport.secret)
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
