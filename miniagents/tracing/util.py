"""Ids and timestamps for traces and spans (upstream's `agents.tracing.util`)."""
from __future__ import annotations

import os
from typing import Optional

TRUE = ("1", "true", "yes", "on")  # how an environment variable says yes


def gen_trace_id() -> str:
    return f"trace_{os.urandom(16).hex()}"


def gen_span_id() -> str:
    return f"span_{os.urandom(12).hex()}"


def gen_group_id() -> str:
    return f"group_{os.urandom(12).hex()}"


_datetime: list = []  # (datetime, utc), imported on first use: `import miniagents` stays cheap


def time_iso(timestamp: Optional[float]) -> Optional[str]:
    """A `time.time()` value as upstream's ISO 8601 UTC text (formatted only when someone reads it)."""
    if timestamp is None:
        return None
    if not _datetime:
        from datetime import datetime, timezone

        _datetime.extend((datetime, timezone.utc))
    return _datetime[0].fromtimestamp(timestamp, _datetime[1]).isoformat()
