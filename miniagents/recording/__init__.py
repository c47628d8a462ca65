"""Recording a run and replaying it offline (a shell): `Recorder`, `Replay` and their errors.

    with Recorder("run.jsonl") as recorder:                  # record: wrap the real model
        Runner.run_sync(agent.clone(model=recorder.wrap(model)), "Hi!")
    replay = Replay("run.jsonl")                             # replay: no server, no key, no network
    Runner.run_sync(agent.clone(model=replay), "Hi!")        # the same items, final output and stream events

A recording is a JSON-lines file (format.py): a versioned header, then one line per model call with the
request as the model received it and its response (a streamed one as its events). Credentials never reach it
(redaction.py). `Replay` compares every request with the recorded one and raises `ReplayMismatch` at the first
difference (replay.py). Nothing here takes part in a run that does not record: a `Recorder` wraps a model, and
the kernel never imports this shell.
"""
from .errors import ABSENT, RecordingError, ReplayExhausted, ReplayIncomplete, ReplayMismatch
from .format import VERSION, VERSIONS
from .recorder import Recorder, RecordingModel
from .redaction import REDACTED
from .replay import MATCH_MODES, Replay

__all__ = ["ABSENT", "Recorder", "RecordingModel", "Replay", "RecordingError", "ReplayMismatch", "ReplayExhausted",
           "ReplayIncomplete", "MATCH_MODES", "REDACTED", "VERSION", "VERSIONS"]
