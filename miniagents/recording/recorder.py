"""Recording: `Recorder` writes every call of the models it wraps to one recording file, as it happens.

`recorder.wrap(model)` gives a `Model` that passes each call through to `model` unchanged and, once the model
has answered, writes the call as one line (format.py): the request as the model received it and the response,
a streamed one as its events. Nothing is written before the answer is whole: a call that fails, or a stream
that is abandoned or broken, leaves no line (a retry that then succeeds is the line). Each line is flushed as
soon as it is written, so a run that crashes keeps the calls it made. What is written has been through
redaction.py: no API key or credential header, and whatever the user's `redact=` removes.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterator, Optional

from ..items import ModelResponse
from . import format, redaction
from .errors import RecordingError


class Recorder:
    """Records the calls of the models it wraps into the file at `path` (created, or emptied, readable by its
    owner only). `redact` is a function from text to text applied to every string recorded (see redaction.py).
    A context manager: leaving the `with` block closes the file; so does `close()`."""

    def __init__(self, path: Any, *, redact: Optional[Callable[[str], str]] = None):
        self.path = os.fspath(path)
        self._hook = redaction.user_hook(redact)
        self._lock = threading.Lock()
        self.count = 0  # calls written so far
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        try:
            self._file: Any = os.fdopen(os.open(self.path, flags, 0o600), "wb")
        except OSError as error:
            raise RecordingError(f"cannot write the recording {self.path!r}: {error.strerror or error}") from None
        self._write(format.header())

    def wrap(self, model: Any) -> "RecordingModel":
        """`model`, recorded: a `Model` to give an agent (`Agent(model=...)`) or a run (`RunConfig(model=...)`)."""
        return RecordingModel(model, self)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, *args: Any) -> dict:
        """A call's request as it will be written (taken before the model is called, so nothing the run does to
        the objects afterwards changes it)."""
        record = format.request_record(*args)
        record["settings"] = redaction.without_credentials(record["settings"])
        return record

    def record(self, model: Any, stream: bool, request: dict, response: dict) -> None:
        """Write one answered call as the next line."""
        secrets = redaction.environment_secrets() + redaction.model_secrets(model)
        request = self._hook(redaction.without_secrets(request, secrets))
        if "events" in response:  # a secret may come cut across deltas: each streamed text is searched whole
            response = {"events": self._hook.events(redaction.stream_without_secrets(response["events"], secrets))}
        else:
            response = self._hook(redaction.without_secrets(response, secrets))
        with self._lock:
            self.count += 1
            self._write({"n": self.count, "model": model_name(model), "stream": stream, "request": request,
                         "response": response})

    def _write(self, line: dict) -> None:
        """Called with the lock held (or from __init__)."""
        if self._file is None:
            raise RecordingError(f"the recorder of {self.path!r} is closed: a wrapped model cannot record any more")
        try:
            self._file.write(format.encode(line))
            self._file.flush()
        except OSError as error:
            raise RecordingError(f"cannot write the recording {self.path!r}: {error.strerror or error}") from None


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
        request = self.recorder.request(system_instructions, input, model_settings, tools, output_schema, handoffs,
                                        previous_response_id, conversation_id, prompt)
        response = self.wrapped.get_response(system_instructions, input, model_settings, tools, output_schema,
                                             handoffs, tracing, previous_response_id=previous_response_id,
                                             conversation_id=conversation_id, prompt=prompt)
        self.recorder.record(self.wrapped, False, request, format.response_record(response))
        return response

    def stream_response(self, system_instructions: Optional[str], input: list, model_settings: Any, tools: list,
                        output_schema: Any, handoffs: list, tracing: Any = None, *,
                        previous_response_id: Optional[str] = None, conversation_id: Optional[str] = None,
                        prompt: Any = None) -> Iterator[dict]:
        request = self.recorder.request(system_instructions, input, model_settings, tools, output_schema, handoffs,
                                        previous_response_id, conversation_id, prompt)
        events = []
        for event in self.wrapped.stream_response(system_instructions, input, model_settings, tools, output_schema,
                                                  handoffs, tracing, previous_response_id=previous_response_id,
                                                  conversation_id=conversation_id, prompt=prompt):
            events.append(format.plain(event))  # as it came, before the run holds it
            yield event
        self.recorder.record(self.wrapped, True, request, {"events": events})

    def __getattr__(self, name: str) -> Any:
        """Every other attribute is the wrapped model's: its `model` name (which traces show), `get_retry_advice`
        (which the run's retries ask)."""
        if name == "wrapped":  # not set yet (an object being built by copy or pickle): no attribute to pass on
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def __deepcopy__(self, memo: dict) -> "RecordingModel":
        """A model is a shared service (here: one recording): copying an agent keeps its model."""
        return self
