"""What can go wrong with an MCP server, as typed errors that name the server and what it did.

Every error here is an `MCPError`, an `AgentsException`, so a run that meets one stops with it like with any other
miniagents error. `summary` is the one-line account (what a model is told when a single call failed); `message`
and `str()` add the end of the server's stderr, where a server usually says why it failed. Neither ever holds the
value of an environment variable the server was given (`redact`).
"""
from __future__ import annotations

import json
import re
from typing import Iterable, Optional

from ..caller import Cancelled
from ..errors import AgentsException

STDERR_SHOWN = 2000  # characters of the server's stderr a message shows (its last ones)


class MCPError(AgentsException):
    """Base of every MCP error. `server` is the server's name, `summary` one line saying what happened,
    `stderr` the end of what the server wrote to its stderr (may be empty)."""

    def __init__(self, summary: str, server: Optional[str] = None, stderr: str = ""):
        self.server, self.summary, self.stderr = server, summary, stderr
        tail = f"\n--- the end of the stderr of MCP server {server!r} ---\n{stderr}" if stderr else ""
        super().__init__(summary + tail)


class MCPServerStartError(MCPError):
    """The server's process could not be started (no such command, not executable, no such folder)."""


class MCPConnectionError(MCPError):
    """The connection is unusable: the server exited, closed its stdout, stopped reading its stdin, wrote
    something that is not a JSON-RPC message or a line over the size cap, answered a request never sent, or the
    client was cleaned up. The server must be connected again."""


class MCPTimeoutError(MCPError):
    """The server did not answer a request within `client_session_timeout_seconds`, or the request could not be sent
    within it (another message waited to be written to a server that reads its stdin slowly)."""


class MCPCancelledError(MCPError, Cancelled):
    """A request given up because the run was cancelled. Also a `caller.Cancelled`: a tool call it stopped is
    treated as one a cancel kept from finishing, and a run cancelled while listing tools returns as cancelled."""


class MCPProtocolError(MCPError):
    """The server answered, but not as the protocol says (a result of the wrong shape, a cursor that repeats, a
    tools listing over its caps)."""


class MCPVersionError(MCPProtocolError):
    """The server speaks a protocol version this client does not: `server_version` and `client_versions`."""

    def __init__(self, summary: str, server: Optional[str], stderr: str, server_version: object,
                 client_versions: Iterable[str]):
        self.server_version, self.client_versions = server_version, tuple(client_versions)
        super().__init__(summary, server, stderr)


class MCPRequestError(MCPError):
    """The server answered a request with a JSON-RPC error: `code` and `data` as it sent them."""

    def __init__(self, summary: str, server: Optional[str] = None, stderr: str = "", code: object = None,
                 data: object = None):
        self.code, self.data = code, data
        super().__init__(summary, server, stderr)


class MCPTransportNotProvidedError(MCPError):
    """A transport this client does not have (Streamable HTTP, SSE): only stdio is provided."""


def secret_forms(secrets: Iterable[str]) -> list:
    """The forms of each secret (a value of the environment given to a server) `redact` replaces, longest first: as
    it is, as repr() escapes it and its UTF-8 bytes (a value shown through str() of its container), and as JSON
    encoders escape it (a server that logs JSON): ASCII only or not, `/` as `\\/` (PHP), `&<>` as `\\u0026` (Go),
    hex in upper case (Jackson), in any mix, and each of those escaped again (a log line holding a JSON string). A
    finite set per value, so `redact` stays linear in the text. Values under 4 characters ("1", "on") are left:
    they are no secret, and replacing them would garble every message."""
    forms = set()
    for secret in (s for s in secrets if isinstance(s, str) and len(s) >= 4):
        escaped = {json.dumps(secret, ensure_ascii=only)[1:-1] for only in (True, False)}
        for change in (lambda f: f.replace("/", "\\/"),
                       lambda f: f.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"),
                       lambda f: re.sub(r"\\u[0-9a-f]{4}", lambda e: "\\u" + e.group()[2:].upper(), f)):
            escaped |= {change(form) for form in escaped}
        escaped |= {json.dumps(form, ensure_ascii=only)[1:-1] for form in escaped for only in (True, False)}
        forms |= {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "surrogatepass"))[2:-1], *escaped}
    return sorted(forms, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with each form of each secret (`secret_forms`) replaced by `***`, so a value never reaches a message
    even when the server prints it."""
    return hide(text, secret_forms(secrets))


def hide(text: str, forms: list) -> str:
    """`text` with every occurrence of `forms` replaced by `***`. Occurrences that overlap (two values, one's end the
    other's start) are hidden as one: replaced one form after the other, the first replaced would leave part of the
    second to show. Each form is searched as `str.replace` does (one occurrence after the other), so it stays linear."""
    spans = []
    for form in forms:
        at = text.find(form)
        while at >= 0:
            spans.append((at, at + len(form)))
            at = text.find(form, at + len(form))
    pieces, end = [], 0
    for start, stop in sorted(spans):
        if start < end:  # it overlaps the part hidden last, which grows
            end = max(end, stop)
        else:
            pieces += [text[end:start], "***"]
            end = stop
    return "".join(pieces) + text[end:]
