"""The package's logger (named as the package is: miniagents, or a vendored copy's name) and
`enable_verbose_stdout_logging`, upstream's switch for seeing it.

The kernel logs warnings (a tool that raised, an ignored output item) and debug lines (retries) here;
nothing is printed unless the application configures logging or calls `enable_verbose_stdout_logging()`.
Never log a secret or a tool's arguments at a level above DEBUG.
"""
from __future__ import annotations

import logging
import sys
import threading

logger = logging.getLogger(__name__.rsplit(".", 2)[0])  # the kernel package's logger, whatever a copy is named
_handler = None
_lock = threading.Lock()


def enable_verbose_stdout_logging() -> None:
    """Log everything miniagents logs (DEBUG and up) to stdout; calling it again adds no second handler."""
    global _handler
    with _lock:
        logger.setLevel(logging.DEBUG)
        stream = sys.stdout if sys.stdout is not None else sys.stderr
        if _handler is None:
            _handler = logging.StreamHandler(stream)
        else:
            _handler.setStream(stream)
        logger.addHandler(_handler)  # a no-op when it is already there
