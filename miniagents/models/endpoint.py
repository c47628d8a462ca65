"""What both HTTP adapters share: the `EndpointModel` base class and the request pieces both APIs spell alike.

Where it sits: `OpenAIResponsesModel` and `OpenAIChatCompletionsModel` subclass `EndpointModel` (the endpoint's
settings, its transport, one call); the pure helpers below turn kernel tool specs, `tool_choice`, output schemas
and settings into request fields, so each adapter only says how its API nests them.
Never: modify the caller's tools or schemas, or import http.client/ssl/urllib at import time.
"""
from __future__ import annotations

import itertools
import json
import re
import threading
from typing import Any, Iterator, Optional

from ..context import Usage
from ..errors import ModelHTTPError, ModelTimeoutError, UserError
from ..items import described
from ..schema import check_tool_name, wire_schema
from . import http
from .connection import make_transport, resolve_base_url
from .interface import ModelResponse, ModelSettings, provider_retries_disabled
from .protocol import http_error, is_validation_error, with_note

SENT_AS_IS = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "metadata", "store",
              "prompt_cache_retention")  # settings both APIs take under the same name

# ----------------------------------------------------------------------------- pure: request pieces


def kernel_spec(value: Any) -> Any:
    """What the kernel passes for a tool, handoff or output schema, as plain data: its `spec()` (the objects
    the kernel sends have one), or the value itself (a spec already)."""
    spec = getattr(value, "spec", None)
    return spec() if callable(spec) else value


def function_spec(tool: Any) -> dict:
    """A function tool or handoff (or its spec) → `{name, description?, parameters, strict}`; `UserError` if it
    cannot be sent (a hosted tool, which only the Responses API runs, included)."""
    tool = kernel_spec(tool)
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
        raise UserError(f"tool {kind!r} is not a function tool; only function tools can be sent to this API "
                        "(hosted tools need the Responses API: OpenAIResponsesModel)")
    name = check_tool_name(tool.get("name"))
    strict = bool(tool.get("strict"))
    spec: dict = {"name": name}
    if tool.get("description"):
        spec["description"] = tool["description"]
    spec["parameters"] = wire_schema(tool.get("parameters"), strict)
    spec["strict"] = strict
    return spec


def wire_tool_choice(choice: Any, chat: bool) -> Any:
    """`ModelSettings.tool_choice`, in either API's form, → the form of Chat (`chat`) or Responses.

    None means "not sent". Chat nests a function name (`{"function": {"name"}}`) and `allowed_tools`;
    Responses keeps both flat. A choice already in the target form is sent as given.
    """
    if choice is None or choice in ("auto", "required", "none"):
        return choice

    def named(name: str) -> dict:
        return {"type": "function", "function": {"name": name}} if chat else {"type": "function", "name": name}
    if isinstance(choice, str):
        return named(choice)
    if isinstance(choice, dict) and choice.get("type") == "function" and function_name(choice):
        return named(function_name(choice))
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        if ("allowed_tools" in choice) == chat:
            return choice
        inner = choice.get("allowed_tools", choice)
        allowed = {"mode": inner.get("mode", "auto"),
                   "tools": [named(function_name(t)) for t in inner.get("tools", [])]}
        return {"type": "allowed_tools", **({"allowed_tools": allowed} if chat else allowed)}
    api = "Chat Completions" if chat else "the Responses API"
    raise UserError(f"tool_choice {described(choice)} cannot be expressed in {api}")


def output_format(output_schema: Any) -> Optional[dict]:
    """The output schema (object or spec) as `{name, schema, strict}` (each API nests it its own way); None for
    text."""
    output_schema = kernel_spec(output_schema)
    if not output_schema:
        return None
    strict = bool(output_schema.get("strict"))
    return {"name": output_schema.get("name") or "final_output",
            "schema": wire_schema(output_schema.get("schema"), strict), "strict": strict}


def add_tools(body: dict, settings: ModelSettings, wire_tools: list, choice: Any) -> None:
    """Put `tools`, `tool_choice` and `parallel_tool_calls` in `body`; a forced choice needs tools."""
    if wire_tools:
        body["tools"] = wire_tools
        if choice is not None:
            body["tool_choice"] = choice
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    elif choice not in (None, "auto", "none"):
        raise UserError(f"tool_choice={described(settings.tool_choice)} needs tools, but this agent has none")


def reasoning_of(settings: ModelSettings) -> Optional[dict]:
    """`ModelSettings.reasoning` (a dict, or an object with `effort` and `summary`) as a dict of what is set."""
    r = settings.reasoning
    return r if isinstance(r, dict) or r is None else {
        k: getattr(r, k) for k in ("effort", "summary") if getattr(r, k, None) is not None}


def add_settings(body: dict, settings: ModelSettings, names: tuple) -> None:
    """Copy the named settings that are set into `body` under the same names."""
    for name in names:
        if getattr(settings, name) is not None:
            body[name] = getattr(settings, name)


NOT_SENT = {  # ModelSettings fields neither adapter expresses: refused, never silently dropped
    "prompt_cache_options": "not supported by these adapters; pass it in extra_body if your server takes it",
    "preserve_raw_usage": "not supported: usage is always read into Usage",
}


def add_extras(body: dict, settings: ModelSettings, stream: bool) -> dict:
    """The last touch of every body: the stream flag, then `extra_args` and `extra_body` (they win)."""
    for name, advice in NOT_SENT.items():
        if getattr(settings, name) is not None:
            raise UserError(f"ModelSettings.{name}: {advice}")
    if stream:
        body["stream"] = True
    body.update(settings.extra_args or {})
    body.update(settings.extra_body or {})
    return body

# ----------------------------------------------------------------------------- forms servers disagree on
# Some parts of a body have a second form, for servers that refuse OpenAI's or silently ignore it. An adapter
# names its parts in `FORMS` (part -> (OpenAI's form, the other)) and says how a body looks in a form
# (`_in_forms`), which parts an error points at (`_refused`) and which an answer shows were ignored (`_ignored`).
# A call switches a part once when the server refuses or ignores it, and what worked is remembered per endpoint.

_accepted_forms: dict = {}  # (path, base_url, model) -> {part: form} that endpoint took, for the rest of the process


def refusal_text(err: ModelHTTPError) -> str:
    """What a refusal of the request's shape (a 4xx, or a 5xx validation error) says, lowercased; "" for others."""
    if err.status is None or err.status < 400 or (err.status >= 500 and not is_validation_error(err)):
        return ""
    return f"{err.message} {json.dumps(err.body, ensure_ascii=False)}".lower()


def function_name(spec: dict) -> Optional[str]:
    """The function a tool, a tool call or a `tool_choice` names, in either API's form (flat, or nested in
    `function`)."""
    return spec.get("name") or (spec.get("function") or {}).get("name")


def forced_tool(body: dict) -> Optional[str]:
    """The tool a body forces by name (`tool_choice` in either API's object form); None when it forces none."""
    choice = body.get("tool_choice")
    return function_name(choice) if isinstance(choice, dict) and choice.get("type") == "function" else None


def with_required_tool(body: dict) -> dict:
    """`body` forcing its named tool as `"required"` with only that tool offered: servers that read `tool_choice`
    only as a string (llama.cpp's llama-server) drop the object form and fall back to "auto"."""
    tools = [t for t in body.get("tools") or [] if function_name(t) == forced_tool(body)]
    return {**body, "tool_choice": "required", "tools": tools} if tools else body  # no such tool: as it was


def schema_note(schema: Any) -> str:
    """The output schema stated in words, for servers that do not read it where the API puts it."""
    return "Reply with one JSON object, and nothing else, that matches this JSON schema: " + json.dumps(
        schema, ensure_ascii=False)


def too_deep() -> ModelHTTPError:
    return http_error(None, "the answer is nested deeper than it can be read", type="invalid_response")


def is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except (ValueError, RecursionError):
        return False


FENCE = re.compile(r"```[^`\n]*\n(.*?)```", re.S)  # one code fence: its info string (```json), then its text
MAX_FENCES = 8  # fences tried in one answer, so a text of many fences costs a few parses, not one per fence


def unfenced(text: str) -> str:
    """A structured answer as JSON: the text when it parses; else the first code fence (any language) whose
    text parses, the outermost first (a fence inside a JSON string stays in it); else the text unchanged."""
    if is_json(text):
        return text
    first, last = text.find("```"), text.rfind("```")
    newline = text.find("\n", first)
    opens = first != -1 and 0 <= newline < last and "`" not in text[first + 3:newline]
    outer = [text[newline + 1:last]] if opens else []
    for inner in outer + [m.group(1) for m in itertools.islice(FENCE.finditer(text), MAX_FENCES)]:
        if is_json(inner):
            return inner.strip()
    return text


def unfence_items(items: list) -> list:
    """Output items with each message text `unfenced` (for a request that asked for JSON)."""
    out = []
    for item in items:
        if item.get("type") == "message":
            item = {**item, "content": [{**p, "text": unfenced(p["text"])} if p.get("type") == "output_text" else p
                                        for p in item.get("content") or []]}
        out.append(item)
    return out


# ----------------------------------------------------------------------------- the base class


class EndpointModel:
    """Both adapters' constructor and call: endpoint settings, a lazily built transport, a safe repr.

    A subclass sets `path` and supplies `_body(instructions, input, settings, tools, output_schema,
    handoffs, stream, **ids) -> dict`, `_response(exchange) -> ModelResponse` (its parsed JSON in `data`) and
    `_events(exchange) -> Iterator[event]` (the exchange iterates SSE pairs), and the forms its body's parts
    may take (`FORMS`, see "forms servers disagree on"). Errors that come back in-band get the exchange's
    `explain` here, so every one names what was tried.
    """

    path = ""  # the endpoint under base_url
    model_source: Optional[str] = None  # set by the provider when it chose the name: a 404 then says so

    def __init__(self, model: str, *, base_url: Optional[str] = None,
                 api_key: Optional[str] = None, organization: Optional[str] = None, project: Optional[str] = None,
                 default_headers: Optional[dict] = None, timeout: float = 600.0, max_retries: int = 2,
                 api_version: Optional[str] = None, attempt_timeout: Optional[float] = None,
                 max_response_bytes: int = http.MAX_RESPONSE_BYTES):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {described(model)}")
        http.check_bounds(attempt_timeout, max_response_bytes, timeout, max_retries)
        self.model = model
        self.base_url = resolve_base_url(base_url)
        self.timeout, self.max_retries = timeout, max_retries
        self._client_args = dict(api_key=api_key, organization=organization, project=project,
                                 default_headers=default_headers, timeout=timeout,
                                 max_retries=max_retries, api_version=api_version,
                                 attempt_timeout=attempt_timeout, max_response_bytes=max_response_bytes)
        self._transport: Optional[http.HTTPTransport] = None
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> "EndpointModel":
        """A model is a shared service (its connections, its lock): copying an agent keeps its model."""
        return self

    @property
    def transport(self) -> http.HTTPTransport:
        with self._lock:
            if self._transport is None:
                self._transport = make_transport(self.base_url, **self._client_args)
            return self._transport

    def __repr__(self) -> str:
        shown = http.shown_base_url(self.base_url, self._client_args["api_key"])
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown!r})"

    def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                     tracing=None, *, previous_response_id=None, conversation_id=None,
                     prompt=None) -> ModelResponse:
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, False,
                          previous_response_id=previous_response_id, conversation_id=conversation_id,
                          prompt=prompt)
        return next(self._call(body, model_settings, False))

    def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                        tracing=None, *, previous_response_id=None, conversation_id=None,
                        prompt=None) -> Iterator[dict]:
        body = self._body(system_instructions, input, model_settings, tools, output_schema, handoffs, True,
                          previous_response_id=previous_response_id, conversation_id=conversation_id,
                          prompt=prompt)
        yield from self._call(body, model_settings, True)

    def _call(self, body: dict, settings: ModelSettings, stream: bool) -> Iterator[Any]:
        """The answer to `body` in the forms this endpoint takes (forced, else remembered, else OpenAI's): a plain
        call yields one `ModelResponse`, a stream its events. A part the server refuses, or that its answer shows
        it ignored, is switched and the body sent once more (each part once at most, with a fresh retry budget);
        what worked is remembered. A stream is held back to its end only while its answer must show whether the
        server took a part (a forced tool, an output schema) it has not taken before. An answer set aside so was
        generated and billed all the same: its usage is added to the answer's returned (`spent`), so the run's usage
        and its token limits see it."""
        key = (self.path, self.base_url, self.model)
        forms = {part: pair[0] for part, pair in self.FORMS.items()}
        forms.update({**_accepted_forms.get(key, {}), **self._forced})
        switched: list = []  # the parts switched so far
        said: list = []  # why each was, for the error when the last form is refused too
        spent = Usage(requests=0)  # the usage of the answers set aside so far, their requests too
        while True:
            sent = self._in_forms(body, forms)
            checked = [part for part in self._checked(sent, forms) if part not in self._forced and part not in switched]
            try:
                exchange = self._post(sent, settings, stream)
            except ModelHTTPError as err:
                parts = [part for part in self._refused(body, forms, err) if part not in switched]
                if not parts and said:
                    times = "twice" if len(said) == 1 else f"{len(said) + 1} times"
                    raise with_note(err, f"[sent {times}: {'; then '.join(said)}]") from None
                if not parts:
                    raise
                self._switch(forms, parts, switched, said, "refused", err.message[:300])
                continue
            held = stream and any(_accepted_forms.get(key, {}).get(part) != forms[part] for part in checked)
            if not stream:
                try:
                    answer = self._response(exchange)
                except (ModelHTTPError, ModelTimeoutError) as err:
                    raise exchange.explain(err) from None
                except RecursionError:  # a body that parsed, nested deeper than its reading can follow
                    raise exchange.explain(too_deep()) from None
                answer.output = items = self._cleaned(sent, answer.output)
                answer.usage.add(spent)
            elif held:
                answer = list(self._relayed(sent, exchange, spent))
                items = answer[-1]["response"]["output"]
            else:
                items = yield from self._relayed(sent, exchange, spent)
            shown = {part: self._ignored(part, sent, items) for part in checked}  # None: the answer shows neither
            ignored = [part for part, was in shown.items() if was]
            if ignored and (held or not stream):
                spent = answer.usage if not stream else Usage.from_json(answer[-1]["response"].get("usage"))
                self._switch(forms, ignored, switched, said, "ignored", "")
                continue
            learned = {**{part: forms[part] for part in switched + [part for part in checked if shown[part] is False]},
                       **{part: self.FORMS[part][1] for part in ignored}}  # what a live stream showed: for next time
            if learned:
                _accepted_forms[key] = {**_accepted_forms.get(key, {}), **learned}
            if held:
                yield from answer
            elif not stream:
                yield answer
            return

    def _relayed(self, sent: dict, exchange: Any, spent: Usage) -> Iterator[dict]:
        """A stream's events as they come, each item one carries (`output_item.done`, the completed response's)
        `_cleaned`, as the run gets it, so the events agree with the result; the text events (deltas, a part's
        `.done`) stay as the model wrote them; the completed response's usage with `spent` added. Returns the
        completed response's items."""
        items: list = []
        try:
            for event in self._events(exchange):
                if event.get("type") == "response.output_item.done":
                    event = {**event, "item": self._cleaned(sent, [event["item"]])[0]}
                elif event.get("type") == "response.completed":
                    items = event["response"]["output"] = self._cleaned(sent, event["response"]["output"])
                    if spent.requests:  # (a stream's usage as the server sent it, when nothing was set aside)
                        usage = Usage.from_json(event["response"].get("usage"))
                        usage.add(spent)
                        event["response"]["usage"] = usage.to_json()
                yield event
        except (ModelHTTPError, ModelTimeoutError) as err:
            raise exchange.explain(err) from None
        except RecursionError:
            raise exchange.explain(too_deep()) from None
        finally:
            exchange.close()  # a stream left after its last event is not read to the server's leisure
        return items

    def _switch(self, forms: dict, parts: list, switched: list, said: list, how: str, why: str) -> None:
        """Put `parts` in their other form, and say why for the error a refusal of that form too would raise."""
        named = " and ".join(self._named(part, forms[part]) for part in parts)
        verb = "was" if len(parts) == 1 else "were"
        said.append(f"{named} {verb} {how}{' first' if not said else ''}{': ' + why if why else ''}")
        for part in parts:
            openai, other = self.FORMS[part]
            forms[part] = other if forms[part] == openai else openai
        switched += parts

    # -- the forms of a body: what each adapter says of its own (see "forms servers disagree on")

    FORMS = {"tool_choice": ("object", "required")}  # part -> (OpenAI's form, the other)
    _forced: dict = {}  # part -> the form the user chose: never switched

    def _named(self, part: str, form: Any) -> str:
        return f"{part} {form}"

    def _in_forms(self, body: dict, forms: dict) -> dict:
        return with_required_tool(body) if forms["tool_choice"] == "required" else body

    def _refused(self, body: dict, forms: dict, err: ModelHTTPError) -> list:
        """The parts of `body` (present in it, and not forced) that the refusal `err` points at."""
        return ["tool_choice"] if with_required_tool(body) is not body and "tool_choice" in refusal_text(err) else []

    def _checked(self, sent: dict, forms: dict) -> list:
        """The parts of a body as sent whose answer shows whether the server took them: a tool forced by name (one
        the body offers: forcing another has no second form)."""
        return ["tool_choice"] if with_required_tool(sent) is not sent else []

    def _ignored(self, part: str, sent: dict, items: list) -> Optional[bool]:
        """Whether the answer (its output items) shows the server ignored `part` (no call of the forced tool), or took
        it; None when it shows neither (neither is then resent nor remembered)."""
        return not any(i.get("type") == "function_call" and i.get("name") == forced_tool(sent) for i in items)

    def _cleaned(self, sent: dict, items: list) -> list:
        """The answer's items as the run gets them: message texts `unfenced` when JSON was asked for."""
        return unfence_items(items) if self._schema(sent) is not None else items

    def _schema(self, body: dict) -> Optional[dict]:
        """The output schema a body asks for; None when it asks for text."""
        return None

    def _post(self, body: dict, settings: ModelSettings, stream: bool) -> http.Exchange:
        """Send one request (retried by the transport, unless the run retries this call itself: see
        miniagents.retry); raises an explained error."""
        return self.transport.post(self.path, body, stream=stream, not_found_hint=self._model_hint(),
                                   headers=dict(settings.extra_headers or {}),
                                   query=dict(settings.extra_query or {}), timeout=settings.timeout,
                                   max_retries=0 if provider_retries_disabled.get() else None)

    def _model_hint(self) -> str:
        if self.model_source == "default":
            return (f"No model name was given, so the default {self.model!r} was asked for: pass model=... "
                    "(to the Agent or the model) or set OPENAI_DEFAULT_MODEL. ")
        if self.model_source == "env":
            return f"The model name {self.model!r} came from OPENAI_DEFAULT_MODEL. "
        return ""
