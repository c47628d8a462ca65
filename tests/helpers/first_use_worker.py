"""One worker process of the first-use stress test (tests/state/test_session.py): many processes opening one
new session file at the same moment.

    python tests/helpers/first_use_worker.py NAME

Reads one trial per line on stdin, JSON: {"spec": a backend spec of tests/session_backends.py, "at": a
time.time()}. It waits until "at" (so that every worker of a trial starts at the same moment), opens a session
on the spec, adds one item (user message NAME), closes the session and answers one line: "stored", or
"failed TYPE: MESSAGE". The process stays up between trials, so a trial costs no interpreter start. An empty
line or the end of input ends it.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from session_backends import open_session, user  # noqa: E402


def main(name: str) -> None:
    for line in sys.stdin:
        if not line.strip():
            return
        trial = json.loads(line)
        time.sleep(max(0.0, trial["at"] - time.time()))
        try:
            session = open_session(trial["spec"], "s")
            try:
                session.add_items([user(name)])
            finally:
                session.close()
            answer = "stored"
        except Exception as exc:  # reported to the test, which fails on it
            answer = f"failed {type(exc).__module__}.{type(exc).__name__}: {exc}".replace("\n", " ")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(*sys.argv[1:])
