"""Recording: `Recorder` writes every call of the models it wraps to one recording file, as it happens.

`recorder.wrap(model)` gives a `Model` that passes each call through to `model` unchanged and, once the model
has answered, writes the call as one line (format.py): the request as the model received it and the response,
a streamed one as its events. Nothing is written before the answer is whole: a call that fails, or a stream
that is abandoned or broken, leaves no line (a retry that then succeeds is the line). Each line is flushed as
soon as it is written, so a run that crashes keeps the calls it made. What is written has been through
redaction.py: no API key or credential header, and whatever the user's `redact=` removes.

One recorder per file: a `Recorder` holds its file (an exclusive lock on it, and this process's list of files
being recorded) from the moment it opens it until `close()`, and a second `Recorder` on the same file (by any
path to it, in any thread or process) is refused with a `RecordingError` before it changes a byte of it, so
no run's calls are lost to another's truncation and no line is interleaved with another's. The lock is the
system's (`flock`; `msvcrt.locking` on Windows), so it ends with the process that held it, however it ended.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterator, Optional

from ..errors import UserError, needs
from ..items import ModelResponse, preview
from ..steps import model_events
from . import format, redaction
from .errors import RecordingError


_recording: set = set()  # (device, inode) of each file a Recorder of this process holds open
_recording_lock = threading.RLock()  # reentrant: a Recorder collected while it is held closes under it


def _lock(fd: int) -> bool:
    """Take the system's exclusive lock on the open file `fd` without waiting; False when another holds it."""
    try:
        import fcntl
    except ImportError:  # Windows: lock one byte far past any recording's end (a lock there blocks no read)
        msvcrt = needs("msvcrt" if os.name == "nt" else "fcntl", "Recorder (the lock on its file)")
        position = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            os.lseek(fd, 2 ** 62, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, position, os.SEEK_SET)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # held; any other error (a file system without locks) is said as it is
        return False
    return True


class Recorder:
    """Records the calls of the models it wraps into the file at `path` (created, or emptied, readable by its
    owner only). `redact` is a function from text to text applied to every string recorded (see redaction.py).
    A context manager: leaving the `with` block closes the file; so does `close()`."""

    def __init__(self, path: Any, *, redact: Optional[Callable[[str], str]] = None):
        self.path = format.path_name(path)
        self._hook = redaction.user_hook(redact)
        self._lock = threading.Lock()
        self.count = 0  # calls written so far
        self._file: Any = None
        self._held: Optional[tuple] = None  # the file's (device, inode) while this recorder holds it
        self._pid = os.getpid()  # a process forked from this one shares the file, not the right to write it
        fd = format.open_regular(self.path, os.O_WRONLY | os.O_CREAT, "write")  # not truncated: another may hold it
        try:
            self._hold(fd)
            if hasattr(os, "fchmod"):  # Windows before Python 3.13 has none, nor owner-only modes
                os.fchmod(fd, 0o600)  # a file that existed kept its mode (0644: anyone could read the run)
            os.ftruncate(fd, 0)
            self._file = os.fdopen(fd, "wb", buffering=0)  # unbuffered: each write's bytes are on file, or not
        except OSError as error:
            self._release()
            os.close(fd)
            raise RecordingError(f"cannot write the recording {self.path!r}: {error.strerror or error}") from None
        except BaseException:
            self._release()
            os.close(fd)
            raise
        self._end = self._weight = 0  # the file's size (where its last whole line ends), and its `format.weight`
        self._write(format.encode(format.header()))

    def _hold(self, fd: int) -> None:
        """Claim the open file for this recorder, or RecordingError when another recorder holds it."""
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        with _recording_lock:
            if key in _recording or not _lock(fd):
                raise RecordingError(f"another Recorder is writing the recording {self.path!r} (in this process or "
                                     "another): two would lose each other's calls; close that one first, or record "
                                     "to another path")
            _recording.add(key)
            self._held = key

    def _release(self) -> None:
        with _recording_lock:
            if self._held is not None:
                _recording.discard(self._held)
                self._held = None

    def wrap(self, model: Any) -> "RecordingModel":
        """`model`, recorded: a `Model` to give an agent (`Agent(model=...)`) or a run (`RunConfig(model=...)`).
        A model object, not a name: a run looks a name up itself, past the recorder."""
        if not callable(getattr(model, "get_response", None)):  # the rule RunConfig(model=...) keeps
            given = preview(repr(model)) if isinstance(model, str) else type(model).__name__
            raise UserError(f"Recorder.wrap() takes a model object (with get_response), got {given}: make the model "
                            "(OpenAIResponsesModel(name), ...) and wrap that")
        return RecordingModel(model, self)

    def close(self) -> None:
        """Close the file (its lock goes with it): another recorder may then record to it."""
        with self._lock:
            self._shut()

    def _shut(self) -> None:
        """Close the file and give it back; called with the lock held."""
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None
                self._release()

    def __del__(self) -> None:  # a recorder never closed still gives its file back when it is collected
        try:
            if getattr(self, "_file", None) is not None:
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, *args: Any) -> tuple:
        """A call's request as it will be written (taken before the model is called, so nothing the run does to
        the objects afterwards changes it), and the credentials its settings hid by name."""
        record = format.request_record(*args)
        deep = format.depth(record) >= format.MAX_DEPTH  # record() refuses it, before a walk recursing that deep
        return record, [] if deep else redaction.hide_credentials(record)

    def record(self, model: Any, stream: bool, request: dict, response: dict, hidden: list) -> None:
        """Write one answered call as the next line; `hidden`: the credentials its settings hid by name, searched
        for by value everywhere else in the call."""
        if format.depth([request, response]) > format.MAX_DEPTH:  # as the line would nest: redaction recurses
            raise RecordingError(f"cannot record call {self.count + 1} to {self.path!r}: it nests more than "
                                 f"{format.MAX_DEPTH} levels deep, and a replay of the recording would refuse it")
        secrets = (redaction.environment_secrets() + redaction.model_secrets(model) + hidden
                   + redaction.url_passwords([request, response]))
        request = self._hook(redaction.without_secrets(request, secrets))
        if "events" in response:  # a secret may come cut across deltas: each streamed text is searched whole
            response = {"events": self._hook.events(redaction.stream_without_secrets(response["events"], secrets))}
        else:
            response = self._hook(redaction.without_secrets(response, secrets))
        with self._lock:
            number = self.count + 1
            try:
                data = format.encode_call({"n": number, "model": model_name(model), "stream": stream,
                                           "request": request, "response": response})
                if self._weight + format.weight(data) > format.MAX_BYTES:
                    raise ValueError(f"the recording would grow past {format.MAX_BYTES // 2 ** 20} MiB (counting each "
                                     f"object and array as {format.CONTAINER_BYTES} bytes)")
            except ValueError as error:
                raise RecordingError(f"cannot record call {number} to {self.path!r}: {error}, and a replay of the "
                                     "recording would refuse it") from None
            self._write(data)
            self.count = number

    def _write(self, data: bytes) -> None:
        """Append one line: whole, or not at all (a write that fails part-way is cut back to the last whole line,
        so the next line does not join its torn end and the number is not used up). Called with the lock held
        (or from __init__)."""
        if self._file is None:
            raise RecordingError(f"the recorder of {self.path!r} is closed: a wrapped model cannot record any more")
        if os.getpid() != self._pid:  # two processes writing one file would number and interleave lines apart
            raise RecordingError(f"the recorder of {self.path!r} was made in another process (this one was forked "
                                 "from it): make a Recorder, on another path, in this process")
        try:
            written = 0
            while written < len(data):  # an unbuffered write may take part of the bytes
                written += self._file.write(data[written:])
        except BaseException as error:  # a full disk, or an interrupt (Ctrl-C) part-way: the same torn line
            why = f"cannot write the recording {self.path!r}: {getattr(error, 'strerror', None) or error}"
            try:
                self._file.truncate(self._end)
                self._file.seek(self._end)
            except OSError:  # the torn line stays: no later line may join it
                self._shut()
                why += "; cutting the torn line off failed too, so the recorder is closed"
            if not isinstance(error, OSError):
                raise
            raise RecordingError(why) from None
        self._end += written
        self._weight += format.weight(data)


def model_name(model: Any) -> str:
    """The name a recording shows for a model: an adapter's model name, else its class."""
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


class RecordingModel:
    """A `Model` that records every call of `wrapped` through its `Recorder` (`Recorder.wrap` makes one); every
    other attribute is the wrapped model's."""

    def __init__(self, wrapped: Any, recorder: Recorder):
        self.wrapped, self.recorder = wrapped, recorder

    def get_response(self, system_instructions: Optional[str], input: list, model_settings: Any, tools: list,
                     output_schema: Any, handoffs: list, tracing: Any = None, *,
                     previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                     prompt: Any = None) -> ModelResponse:
        request, hidden = self.recorder.request(system_instructions, input, model_settings, tools, output_schema,
                                                handoffs, previous_response_id, conversation_id, prompt)
        response = self.wrapped.get_response(system_instructions, input, model_settings, tools, output_schema,
                                             handoffs, tracing, previous_response_id=previous_response_id,
                                             conversation_id=conversation_id, prompt=prompt)
        if isinstance(response, ModelResponse):  # anything else is left for the run to refuse, unrecorded
            self.recorder.record(self.wrapped, False, request, format.response_record(response), hidden)
        return response

    def stream_response(self, system_instructions: Optional[str], input: list, model_settings: Any, tools: list,
                        output_schema: Any, handoffs: list, tracing: Any = None, *,
                        previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                        prompt: Any = None) -> Iterator[dict]:
        request, hidden = self.recorder.request(system_instructions, input, model_settings, tools, output_schema,
                                                handoffs, previous_response_id, conversation_id, prompt)
        events = []
        for event in model_events(self.wrapped.stream_response(  # no iterable: the run's UserError, unrecorded
                system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt)):
            events.append(format.plain(event))  # as it came, before the run holds it
            yield event
        if any(isinstance(event, dict) and event.get("type") == "response.completed" for event in events):
            self.recorder.record(self.wrapped, True, request, {"events": events}, hidden)
        # else the stream broke off (the run says so): like a failed call, it leaves no line

    def __getattr__(self, name: str) -> Any:
        """Every other attribute is the wrapped model's: its `model` name (which traces show), `get_retry_advice`
        (which the run's retries ask)."""
        if name == "wrapped":  # not set yet (an object being built by copy or pickle): no attribute to pass on
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def __deepcopy__(self, memo: dict) -> "RecordingModel":
        """A model is a shared service (here: one recording): copying an agent keeps its model."""
        return self
