"""Ids and timestamps for traces and spans (upstream's `agents.tracing.util`), and opening a trace file."""
from __future__ import annotations

import errno
import os
import stat
from typing import Optional

from ..errors import UserError

TRUE = ("1", "true", "yes", "on")  # how an environment variable says yes
NOT_REGULAR = "it is not a regular file (a folder, a FIFO, a device or a socket)"


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


def open_regular(name: str, flags: int, doing: str) -> int:
    """The trace file `name` opened with `flags` (created readable by its owner only: it may hold model inputs and
    tool arguments), if it is a regular file: opened without waiting (a FIFO's open waits for its other end, for
    ever), checked, then made blocking; `UserError` saying what it was opened for (`"appending"`, `"reading"`)
    otherwise."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(name, flags | nonblocking | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as error:  # ENXIO: a FIFO no one reads
        why = NOT_REGULAR if error.errno == errno.ENXIO else error.strerror or error
        raise UserError(f"cannot open the trace file {name!r} for {doing}: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"cannot open the trace file {name!r} for {doing}: {NOT_REGULAR}")
    if nonblocking:
        os.set_blocking(fd, True)
    return fd
