"""What can go wrong with a recording, as typed errors: a file that cannot be written or read, and a replayed run
that asks something the recording does not hold."""
from __future__ import annotations

import json
from typing import Any

from ..errors import AgentsException
from ..items import preview
from .redaction import REDACTED

ABSENT = object()  # where a request has no value at all (a field, a list element, a key) that the other one has


class RecordingError(AgentsException):
    """A recording that cannot be written (the path, the disk) or read (not a recording, a version this miniagents
    does not read, a malformed line); the message names the file and, when reading, the line."""


class ReplayMismatch(RecordingError):
    """A replayed run sent a request that differs from the recorded one: `request` is its number in the recording
    (1-based), `field` the first place they differ (`"instructions"`, `"input[2].content"`, `"tools[0].name"`,
    `"settings.temperature"`), `recorded` and `received` the two values there (`ABSENT` where one has none). Where
    the recording hid a part of its value (`REDACTED`), the message does not show the received one: that part (a
    secret only the recording run knew) may stand in it."""

    def __init__(self, request: int, field: str, recorded: Any, received: Any):
        self.request, self.field, self.recorded, self.received = request, field, recorded, received
        hid = recorded is not ABSENT and REDACTED in json.dumps(recorded, ensure_ascii=False)
        told = "a value not shown here (what the recording hid may stand in it)" if hid else shown(received)
        super().__init__(f"request {request} differs from the recording at {field}: recorded {shown(recorded)}, "
                         f"received {told}")


class ReplayExhausted(RecordingError):
    """A replayed run asked for request number `request`, past the last one the recording holds (`recorded`)."""

    def __init__(self, request: int, recorded: int):
        self.request, self.recorded = request, recorded
        super().__init__(f"request {request} is past the end of the recording, which holds {recorded} request(s)")


class ReplayIncomplete(RecordingError):
    """`Replay.assert_complete()`: the run ended before it asked for every recorded request (`unserved`, their
    numbers)."""

    def __init__(self, unserved: list):
        self.unserved = unserved
        super().__init__(f"{len(unserved)} recorded request(s) were not asked for: {unserved[:10]}")


def shown(value: Any) -> str:
    """A value of a request as JSON text, at most 200 characters: an error message stays readable and bounded."""
    return "(absent)" if value is ABSENT else preview(json.dumps(value, ensure_ascii=False))
