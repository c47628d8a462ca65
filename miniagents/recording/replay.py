"""Replaying: `Replay` is a `Model` that serves a recording offline, checking each request against the recorded one.

Requests are served in the recorded order. Before a response is served, the request the run sends is put
through the same redaction as a recorded one and compared with the next recorded request; the first
difference raises `ReplayMismatch` (its number, the field, both values). `match=` chooses what is compared:

- `"exact"` (the default): everything the model receives: instructions, input items, tools, handoffs, output
  schema, settings, previous response and conversation ids, prompt;
- `"ignore_instructions"`: all of that but the instructions (replay a run under edited instructions);
- `"order"`: nothing; the responses are served in order, whatever was asked.

A recording replays under `Runner.run_sync`, `Runner.run` and `Runner.run_streamed` alike, whichever way it was
made: a streamed call replayed plainly gets the response its `response.completed` event carried (as the run built it
when it was recorded), and a plain call replayed streamed gets that response as Responses stream events
(`miniagents.testing.response_events`: the offline model's shell, needed only then). A call recorded streamed and
replayed streamed gets its recorded events, so the run's stream events are the recorded run's.

One thing differs between a run and its replay by nature: a call id the kernel makes up (for a call that came
without one, or whose numbered id a server repeats in every response) is random in every run. A replay pairs
each recorded made-up id with the one the replayed run made in its place (`MadeUpIds`), so the requests still
compare; the run items carry the replayed run's own ids there.
"""
from __future__ import annotations

import copy
import re
import threading
from typing import Any, Callable, Iterator, Optional

from ..errors import UserError
from ..items import ModelResponse
from . import format, redaction
from .errors import ABSENT, RecordingError, ReplayExhausted, ReplayIncomplete, ReplayMismatch

MATCH_MODES = ("exact", "ignore_instructions", "order")


class Replay:
    """A `Model` that plays back the recording at `path` (read and checked whole here: `RecordingError`).
    `match` is one of `MATCH_MODES`; `redact` is the function the recording was made with, if any, so that a
    request compares with its recorded, redacted self."""

    def __init__(self, path: Any, *, match: str = "exact", redact: Optional[Callable[[str], str]] = None):
        if match not in MATCH_MODES:
            raise UserError(f"match= must be one of {', '.join(MATCH_MODES)}; got {match!r}")
        self.match = match
        self._hook = redaction.user_hook(redact)
        self._calls = format.load(path)
        self._next = 0
        self._ids = MadeUpIds()
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """How many recorded calls have not been asked for yet."""
        return len(self._calls) - self._next

    def assert_complete(self) -> None:
        """`ReplayIncomplete` unless the run asked for every recorded call."""
        if self.remaining:
            raise ReplayIncomplete([call["n"] for call in self._calls[self._next:]])

    def __deepcopy__(self, memo: dict) -> "Replay":
        """A model is a shared service (here: one place in one recording): copying an agent keeps its model."""
        return self

    def get_response(self, system_instructions: Optional[str], input: list, model_settings: Any, tools: list,
                     output_schema: Any, handoffs: list, tracing: Any = None, *,
                     previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                     prompt: Any = None) -> ModelResponse:
        call = self._take(system_instructions, input, model_settings, tools, output_schema, handoffs,
                          previous_response_id, conversation_id, prompt)
        return format.model_response(redaction.without_secrets(call["response"], redaction.environment_secrets()))

    def stream_response(self, system_instructions: Optional[str], input: list, model_settings: Any, tools: list,
                        output_schema: Any, handoffs: list, tracing: Any = None, *,
                        previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                        prompt: Any = None) -> Iterator[dict]:
        call = self._take(system_instructions, input, model_settings, tools, output_schema, handoffs,
                          previous_response_id, conversation_id, prompt)
        response = call["response"]
        secrets = redaction.environment_secrets()  # an older recording may hold a credential cut across deltas
        if "events" in response:
            return iter(redaction.stream_without_secrets(response["events"], secrets))
        from ..testing import response_events  # the offline model's shell: a copy may leave it out

        events = response_events(format.model_response(redaction.without_secrets(response, secrets)))
        for event in events:  # the made-up stream names the recorded model, not a scripted one
            if isinstance(event.get("response"), dict):
                event["response"]["model"] = call.get("model")
        return iter(events)

    def _take(self, *request: Any) -> dict:
        """The next recorded call, after its request was compared with this one (a copy: nothing the run does to
        what it is served reaches the recording)."""
        with self._lock:
            if self._next == len(self._calls):
                raise ReplayExhausted(len(self._calls) + 1, len(self._calls))
            call = self._calls[self._next]
            if self.match != "order":
                found: dict = {}
                recorded, received = self._redacted(call["request"], *request)
                difference = first_difference(self._comparable(recorded), self._comparable(received),
                                              same_id=lambda mine, theirs: self._ids.pair(mine, theirs, found))
                if difference is not None:
                    raise ReplayMismatch(call["n"], *difference)
                self._ids.pairs.update(found)
            self._next += 1
            return copy.deepcopy(call)

    def _redacted(self, recorded: dict, *request: Any) -> tuple:
        """The recorded request and the replayed run's, redacted alike: the run's as a recorded one was (the
        environment's secrets, the credentials its settings hide by name, the passwords its URLs reveal, the user's
        hook), and the recorded one of the same secrets, so an older recording that kept one still matches and no
        mismatch shows one."""
        received = format.request_record(*request)
        if format.depth(received) >= format.MAX_DEPTH:  # a line holding it would nest past MAX_DEPTH: none does
            raise RecordingError(f"the replayed run's request nests more than {format.MAX_DEPTH - 1} levels deep, "
                                 "past what a recording holds: it matches no recorded request")
        secrets = (redaction.environment_secrets() + redaction.hide_credentials(received)
                   + redaction.url_passwords([recorded, received]))
        return redaction.without_secrets(recorded, secrets), self._hook(redaction.without_secrets(received, secrets))

    def _comparable(self, request: dict) -> dict:
        if self.match == "ignore_instructions":
            return {field: value for field, value in request.items() if field != "instructions"}
        return request


MADE_UP_ID = re.compile(r"call_[0-9a-f]{24}")  # the call ids the kernel makes up (items.new_call_id)


class MadeUpIds:
    """The call ids the kernel makes up (for a call that came without one, or with a number a server repeats in
    every response) are random: a replayed run's differ from the recorded run's. A recorded made-up id stands for
    the replayed one first seen in its place, and for that one only, from then on."""

    def __init__(self):
        self.pairs: dict = {}  # recorded id -> replayed id

    def pair(self, recorded: str, received: str, found: dict) -> bool:
        """Whether the two ids are one made-up id (new pairs go into `found`, kept once the request matched)."""
        if not (MADE_UP_ID.fullmatch(recorded) and MADE_UP_ID.fullmatch(received)):
            return False
        known = {**self.pairs, **found}
        if recorded in known:
            return known[recorded] == received
        if received in known.values():
            return False
        found[recorded] = received
        return True


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def first_difference(recorded: Any, received: Any, path: str = "",
                     same_id: Optional[Callable[[str, str], bool]] = None) -> Optional[tuple]:
    """(the field's path, the recorded value, the received one) where two plain JSON values first differ, or None
    when they are equal. Objects are walked in the recorded order of their keys, then the received one's new keys;
    lists element by element; `true` never equals `1`, nor `1` equal `1.0`; a recorded string with `REDACTED` in
    it equals any string it could have been redacted from; two `call_id`s are equal when `same_id` says so."""
    if isinstance(recorded, dict) and isinstance(received, dict):
        for key in list(recorded) + [k for k in received if k not in recorded]:
            inner = (f"{path}.{key}" if IDENTIFIER.match(key) else f"{path}[{format.json_text(key)}]").lstrip(".")
            mine, theirs = recorded.get(key, ABSENT), received.get(key, ABSENT)
            if key == "call_id" and same_id is not None and isinstance(mine, str) and isinstance(theirs, str) \
                    and mine != theirs and same_id(mine, theirs):
                continue
            found = first_difference(mine, theirs, inner, same_id)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(received, list):
        for index in range(max(len(recorded), len(received))):
            found = first_difference(recorded[index] if index < len(recorded) else ABSENT,
                                     received[index] if index < len(received) else ABSENT, f"{path}[{index}]", same_id)
            if found is not None:
                return found
        return None
    if type(recorded) is type(received) and recorded == received:
        return None
    if isinstance(recorded, str) and isinstance(received, str) and redacted_match(recorded, received):
        return None
    return path, recorded, received


def redacted_match(recorded: str, received: str) -> bool:
    """Whether `received` is `recorded` with each `REDACTED` standing for some text: a secret the recording machine
    knew (its model's key), which a replay, offline, does not know to redact. The recorded pieces between the
    markers are found left to right, each at its first place after the last (no regex: one with many markers
    backtracks for ever on a request that does not match)."""
    if redaction.REDACTED not in recorded:
        return False
    first, *middle, last = recorded.split(redaction.REDACTED)
    end = len(received) - len(last)
    if end < len(first) or not received.startswith(first) or not received.endswith(last):
        return False
    at = len(first)
    for piece in middle:
        at = received.find(piece, at, end)
        if at < 0:
            return False
        at += len(piece)
    return True
