"""The Responses adapter: kernel items → `POST {base_url}/responses`, blocking and streamed.

Where it sits: the kernel's items already are Responses input items, so this module mostly echoes them
back verbatim and maps tools/settings/output schema to the request body (pure `build_body`); the call
itself is `EndpointModel`'s. Stateless by default (the kernel replays the transcript; `store` is sent only
when set); `previous_response_id` and `conversation_id` pass through. A stream's result is the
`response.completed` event; `response.failed`/`error` raise `ModelHTTPError`, `response.incomplete`
raises `ModelBehaviorError` (so does a non-streamed `incomplete` or any status but `completed`, such as `cancelled`,
and a `response.completed` whose status says otherwise is checked as a plain answer: never a silent partial
answer), and so does a completed response other than what its stream carried (its items and its deltas: the answer
the reader watched is the one the run gets).
Never: send Chat-shaped tools, `item_reference`s, or items with the Chat adapter's fake ids.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelBehaviorError, UserError
from ..items import FAKE_ID, clean_json, preview
from . import shapes
from .endpoint import (SENT_AS_IS, EndpointModel, add_extras, add_settings, add_tools, function_spec, is_json,
                       kernel_spec, output_format, reasoning_of, schema_note, wire_tool_choice)
from .http import Exchange
from .protocol import error_from_body, http_error, parse_sse_json, redact
from .interface import ModelResponse, ModelSettings


def responses_tool(tool: Any) -> dict:
    """A tool or handoff the kernel offers → the flat Responses shape, `strict` always explicit (omitted means
    "try strict"); a hosted tool's configuration (`WebSearchTool`, ...) is sent as it is."""
    spec = kernel_spec(tool)
    if isinstance(spec, dict) and spec.get("type", "function") != "function":
        return dict(spec)
    return {"type": "function", **function_spec(spec)}


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
              wire_tool_choice(settings.tool_choice, chat=False))
    add_settings(body, settings, SENT_AS_IS + ("truncation", "top_logprobs", "context_management"))
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    if settings.reasoning is not None:
        body["reasoning"] = reasoning_of(settings)
    include = list(settings.response_include or [])
    for value in (i for t in tools or [] for i in getattr(t, "includes", ())):  # what hosted tools need back
        if value not in include:
            include.append(value)
    if include:
        body["include"] = include
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


def check_final(response: dict, exchange: Exchange) -> dict:
    """Raise for a response that did not complete (`failed`, `incomplete`, or any status but `completed`; no secret
    the exchange holds in what is said); return it otherwise (a minimal server may send no status)."""
    status = shapes.opt_str(response.get("status"), "status")
    if status == "failed" or (status is None and response.get("error")):
        where = "in the stream" if exchange.stream else "in its response"
        raise error_from_body(None, {"error": response.get("error") or {"message": "response failed"}},
                              exchange.request_id, exchange.secret, where)
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = shapes.obj({} if details is None else details, "incomplete_details").get("reason")
        reason = redact(reason, exchange.secret) if isinstance(reason, str) and reason else "unknown"
        raise ModelBehaviorError(f"The model's response is incomplete (reason: {reason}); raise "
                                 "max_tokens or shorten the input.")
    if status not in (None, "completed"):  # cancelled, queued, in_progress: what it holds may be a partial answer
        raise ModelBehaviorError(f"The model's response has status {preview(redact(status, exchange.secret), 40)!r}, "
                                 "not 'completed': its output is not taken as an answer.")
    return response


class OpenAIResponsesModel(EndpointModel):
    """`Model` over `POST {base_url}/responses`: OpenAI's own API (and Azure, Ollama, vLLM, llama.cpp).

    Besides a forced tool (endpoint.py), the output schema has a second form, for servers that ignore
    `text.format` (llama.cpp's llama-server drops it when it turns the request into a chat): an answer that is not
    JSON gets the request sent once more with the schema also stated in the instructions, remembered per endpoint.
    """

    path = "/responses"
    FORMS = {**EndpointModel.FORMS, "text.format": ("alone", "in the instructions too")}

    def _body(self, instructions, input, settings, tools, output_schema, handoffs, stream, **ids) -> dict:
        return build_body(self.model, instructions, input, settings, tools, output_schema, handoffs,
                          stream=stream, **ids)

    def _in_forms(self, body: dict, forms: dict) -> dict:
        body = super()._in_forms(body, forms)
        schema = self._schema(body)
        if schema is None or forms["text.format"] == "alone":
            return body
        return {**body, "instructions": "\n\n".join(filter(None, (body.get("instructions"), schema_note(schema))))}

    def _checked(self, sent: dict, forms: dict) -> list:
        schema = forms["text.format"] == "alone" and self._schema(sent) is not None
        return super()._checked(sent, forms) + (["text.format"] if schema else [])

    def _ignored(self, part: str, sent: dict, items: list) -> Optional[bool]:
        """The output schema: ignored when a text is not JSON, taken when every text is. A turn of function calls
        shows neither: the run reads no output from it (it runs the calls, and the text beside them is commentary,
        which a server that reads the schema may write too), and a resend would throw its calls away. Nor does an
        empty or blank text (a server's empty part beside a call)."""
        if part != "text.format":
            return super()._ignored(part, sent, items)
        texts = [p["text"] for i in items if i.get("type") == "message" for p in i.get("content") or []
                 if p.get("type") == "output_text" and p["text"].strip()]
        if not texts or any(i.get("type") == "function_call" for i in items):
            return None
        return not all(map(is_json, texts))

    def _schema(self, body: dict) -> Optional[dict]:
        fmt = (body.get("text") or {}).get("format") or {}
        return fmt.get("schema") if fmt.get("type") == "json_schema" else None

    def _model_hint(self) -> str:
        return super()._model_hint() + ("If this server does not offer the Responses API, use Chat Completions "
                                        "(OpenAIChatCompletionsModel). ")

    def _response(self, exchange: Exchange) -> ModelResponse:
        data, request_id = exchange.data, exchange.request_id
        if not isinstance(data, dict) or data.get("object") == "error" or ("output" not in data and data.get("error")):
            raise error_from_body(200, data, request_id, exchange.secret)
        data = clean_json(data)
        check_final(data, exchange)
        output = _output(data, {}, "output")
        return ModelResponse(output=output, usage=Usage.from_json(shapes.usage(data.get("usage"))),
                             response_id=shapes.opt_str(data.get("id"), "id"), request_id=request_id)

    def _events(self, exchange: Exchange) -> Iterator[dict]:
        collected: dict = {}
        deltas: dict = {}  # (its place, a shapes.Deltas) per streamed text, so split surrogate pairs come out joined
        for name, data in exchange:
            event = parse_sse_json(data, exchange.secret)
            if event == "[DONE]":
                continue
            event = shapes.obj(event, "a stream event")  # its type may be only the SSE event's name
            event = _cleaned({**event, "type": shapes.text(event.get("type") or name, "a stream event's type")}, deltas)
            kind = event["type"]
            if kind == "error":
                raise error_from_body(None, event, exchange.request_id, exchange.secret)
            if kind == "response.output_item.done":
                item = shapes.output_item(event.get("item"), f"{kind}.item")
                key = event.get("output_index")  # an int: where the server put the item
                if not _is_index(key):  # else a key that keeps the order they came in
                    key = item["id"] if isinstance(item.get("id"), str) else f"#{len(collected)}"
                elif key in collected:
                    raise ModelBehaviorError(f"The model's stream contradicts itself: it streamed two items at output "
                                             f"index {key}.")
                collected[key] = item
            if kind in ("response.failed", "response.incomplete"):
                response = event.get("response")
                check_final({**shapes.obj({} if response is None else response, f"{kind}.response"),
                             "status": kind.split(".")[1]}, exchange)
            if kind == "response.completed":
                yield {**event, "response": _completed(event.get("response"), collected, deltas, exchange)}
                return  # the answer is complete: never wait for a server that holds the connection open
            yield event
        raise http_error(None, "the stream ended before response.completed: the response is truncated "
                               "(connection dropped or server failed mid-stream)",
                         type="stream_error", code="truncated")


def _completed(response: Any, collected: dict, deltas: dict, exchange: Exchange) -> dict:
    """The final response of a stream, checked as a plain one is (`check_final`: a status that is "failed" or
    "incomplete" is no success, whatever the event's name; `_output`). What was streamed must be what the response
    says: an item an `output_item.done` carried must be the one the response holds at its index (or, a call a
    server streamed with no index, as llama.cpp does, the one with its call id), in what the run acts on
    (`_acted_on`), and so must each text streamed as deltas (`_check_deltas`), else the stream contradicts itself
    (`ModelBehaviorError`)."""
    if response is None:
        raise ModelBehaviorError("The model's answer is empty: the response.completed event carries no response.")
    response = check_final(dict(shapes.obj(response, "response.completed.response")), exchange)
    filled = not response.get("output") and collected  # the response's own output, or the streamed items
    output = response["output"] = _output(response, collected, "response.completed.response.output")
    calls = {item.get("call_id"): item for item in output if item["type"] == "function_call"}
    for key, item in collected.items() if not filled else ():
        there = (output[key] if 0 <= key < len(output) else None) if isinstance(key, int) else \
            calls.get(item.get("call_id"), item) if item["type"] == "function_call" else item
        if there is None or _acted_on(there) != _acted_on(item):
            raise ModelBehaviorError(f"The model's stream contradicts itself: the item it streamed at output index "
                                     f"{key} is not the one its response.completed carries there.")
    at_index = dict(enumerate(output)) if not filled else {k: v for k, v in collected.items() if isinstance(k, int)}
    _check_deltas(deltas, output, at_index, exchange.secret)
    response["usage"] = shapes.usage(response.get("usage"), "response.completed.response.usage")
    shapes.opt_str(response.get("id"), "response.completed.response.id")
    return response


def _output(response: dict, collected: dict, where: str) -> list:
    """An answer's output items: the response's, or for a stream whose completed response carries none (minimal
    servers) the items its `output_item.done` events carried, in the order of their `output_index`. An answer with
    no output, or an empty one that does not say it completed, is empty: `ModelBehaviorError`."""
    output = response.get("output")
    if not output and collected:
        output = [collected[key] for key in sorted(key for key in collected if isinstance(key, int))]
        output += [item for key, item in collected.items() if not isinstance(key, int)]
    if output is None:
        raise ModelBehaviorError("The model's answer is empty: the response has no 'output'.")
    output = shapes.output_items(output, where)
    if not output and response.get("status") != "completed":
        raise ModelBehaviorError("The model's answer is empty: no output items, and the response does not say it "
                                 "completed.")
    return output


def _acted_on(item: dict) -> tuple:
    """What the run acts on in an output item: its type, a call's call_id, name and arguments, a message's texts."""
    texts = [(p.get("text"), p.get("refusal")) for p in item.get("content") or ()] if item["type"] == "message" else []
    return item["type"], item.get("call_id"), item.get("name"), item.get("arguments"), texts


_STREAMED = {"response.output_text.delta": "text", "response.refusal.delta": "refusal",
             "response.function_call_arguments.delta": "arguments"}  # the deltas compared, and the field each fills


def _check_deltas(deltas: dict, output: list, at_index: dict, secret: Any) -> None:
    """Each text, refusal and call's arguments streamed as deltas must begin what the completed response carries
    at the place they were streamed to, else the stream contradicts itself (`ModelBehaviorError`, which names the
    place and where the two part, never the text: it could hold anything).

    Why: the reader watched the deltas (a person read the text, a UI showed the call being written), and the run
    acts on `response.completed`; a server that streams "pay 5" and completes with `{"amount": 500}` must not run
    the tool with arguments nobody streamed, whether it also sent `output_item.done` events or not (OpenAI sends
    both: its deltas then agree with the item the `.done` carried, which `_completed` compares too). A completed
    value that goes on past the deltas is no contradiction: llama.cpp holds back a tail that may be a stop word or
    a tag, and sends it only in the `.done` events and the completed response. The place is the completed item
    whose id is the delta's `item_id` (llama.cpp sends no index, and gives its calls the item id as call_id only;
    Ollama streams a message's text and the call after it at one index), else the item at its `output_index`
    (`at_index`); a delta with neither names no place and is not compared, nor is a kind of delta the run does not
    act on (reasoning). The text compared is the one the stream's `Deltas` already hold, so nothing more is
    kept."""
    by_id = {}  # a server's id may be any JSON value: only a string names an item
    for item in output:
        key = item.get("id") or item.get("call_id")
        if isinstance(key, str):
            by_id[key] = item
    ended_as: dict = {}  # (item, field, part) -> its completed value: deltas sent to one place under many names
    for (kind, item_id, index, part, _), pieces in deltas.values():  # (item_id) cost one join, not one join each
        field = _STREAMED.get(kind)
        if field is None or not (_is_index(index) or isinstance(item_id, str)):
            continue
        named = isinstance(item_id, str) and item_id in by_id
        item = by_id[item_id] if named else at_index.get(index) if _is_index(index) else None
        place = (id(item), field, part if _is_index(part) else None)
        ended = ended_as[place] = ended_as[place] if place in ended_as else _ended_as(item, field, part)
        streamed = pieces.value
        if ended is not None and ended.startswith(streamed):  # a tail held back (llama.cpp's stop words, tags)
            continue
        where = f"output index {index}" if _is_index(index) else f"the item {preview(redact(item_id, secret), 60)!r}"
        if ended is None:
            raise ModelBehaviorError(f"The model's stream contradicts itself: it streamed {field} for {where}, and "
                                     f"its response.completed carries no {field} there.")
        at = next((i for i, (a, b) in enumerate(zip(streamed, ended)) if a != b), min(len(streamed), len(ended)))
        raise ModelBehaviorError(f"The model's stream contradicts itself: what it streamed as {field} for {where} is "
                                 f"not what its response.completed carries there (they part at character {at}).")


def _ended_as(item: Any, field: str, part: Any) -> Optional[str]:
    """An item's `field` as the response completed it: a call's arguments, or a message's text or refusal (the part
    at the delta's `content_index`, or every part of that kind joined when the delta names none); None when the
    item is not there or has no such field."""
    if item is None or item["type"] != ("function_call" if field == "arguments" else "message"):
        return None
    if field == "arguments":
        return item["arguments"]
    kind, content = "output_text" if field == "text" else "refusal", item.get("content") or ()
    if not _is_index(part):
        return "".join(p[field] for p in content if p.get("type") == kind)
    there = content[part] if 0 <= part < len(content) else {}
    return there[field] if there.get("type") == kind else None


def _is_index(value: Any) -> bool:
    """Whether a stream event's `output_index` or `content_index` is one: an int (a bool is none)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _cleaned(event: dict, deltas: dict) -> dict:
    """An event with its strings cleaned (`items.clean_json`); a `delta` through its text's `Deltas`, kept with the
    place it was streamed to (type, item_id, output_index, content_index, summary_index) for `_check_deltas`."""
    delta = event.get("delta")
    out = clean_json(event)
    if isinstance(delta, str):
        place = tuple(out.get(k) for k in ("type", "item_id", "output_index", "content_index", "summary_index"))
        out["delta"] = deltas.setdefault(tuple(map(repr, place)), (place, shapes.Deltas()))[1].add(delta)
    return out
