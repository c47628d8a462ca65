"""`http.client`'s response with bounds a server cannot stretch: a deadline on every receive, a cap on 1xx answers.

Where it sits: `http.py` calls `pace(conn, seconds)` on each connection before an attempt. Why: http.client's
socket timeout bounds one send or receive, so a server that sends a byte, or a `100 Continue`, just before each
timeout keeps a call alive forever; here each send and receive first asks `seconds()` how long it may wait (the
exchange's deadline decides), and the interim answers before the real one are counted.
Imported by `http.py` only when a request is made (it imports http.client).
"""
from __future__ import annotations

import http.client
import io
from typing import Callable

MAX_INTERIM_RESPONSES = 16  # 1xx answers (100 Continue, 102 Processing, 103 Early Hints) skipped before refusing


class TooManyInterimResponses(Exception):
    """The server sent more than `MAX_INTERIM_RESPONSES` 1xx answers before its real one."""


class _PacedReader(io.RawIOBase):
    """A socket's receiving side where each receive waits at most `pace()` seconds (`pace` raises once none is
    left). It reads through the socket's own `makefile` object, so the socket stays open while it is in use, as
    http.client expects when it hands a connection over to the response."""

    def __init__(self, sock, pace: Callable[[], float]):
        super().__init__()
        self._sock, self._pace = sock, pace
        self._file = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(self._pace())
        return self._file.readinto(buffer)

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


class _PacedSocket:
    """What a response is built from: http.client only calls `makefile("rb")` on it."""

    def __init__(self, sock, pace: Callable[[], float]):
        self._sock, self._pace = sock, pace

    def makefile(self, mode: str):
        return io.BufferedReader(_PacedReader(self._sock, self._pace))


class BoundedResponse(http.client.HTTPResponse):
    """An `HTTPResponse` that skips every interim 1xx answer (http.client skips only 100 and takes a 103 for the
    answer), at most `MAX_INTERIM_RESPONSES` of them."""

    interim = 0

    def _read_status(self):
        while True:
            version, status, reason = super()._read_status()
            if not 100 <= status < 200 or status == 101:  # 101 Switching Protocols is final (never asked for)
                return version, status, reason
            self.interim += 1
            if self.interim > MAX_INTERIM_RESPONSES:
                raise TooManyInterimResponses(f"the server sent more than {MAX_INTERIM_RESPONSES} interim (1xx) "
                                              "responses before its answer")
            http.client.parse_headers(self.fp)  # an interim answer's headers (at most 100 lines): skipped


def pace(conn: http.client.HTTPConnection, seconds: Callable[[], float]) -> None:
    """Make every send and receive of `conn` (the proxy's CONNECT answer included) wait at most `seconds()`, and
    every response it reads a `BoundedResponse`. Set again for each attempt: `seconds` belongs to one exchange."""
    def send(data) -> None:
        if conn.sock is not None:
            conn.sock.settimeout(seconds())
        http.client.HTTPConnection.send(conn, data)

    def make_response(sock, *args, **kwargs) -> BoundedResponse:
        return BoundedResponse(_PacedSocket(sock, seconds), *args, **kwargs)
    conn.send, conn.response_class = send, make_response
