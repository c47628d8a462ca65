"""One worker process of the session concurrency tests (tests/test_session_contract.py).

    python tests/helpers/session_worker.py SPEC_JSON SESSION_ID ACTION [ARGS...]

SPEC_JSON is a backend spec of tests/session_backends.py. The worker opens the session, writes "ready", waits
for "go" on stdin (so the test can start every worker before any of them acts), then:
    append NAME N        N add_items of one 3-item turn each: user "NAME-i", call "NAME-i", its output
    claim RUN CALL       claim_call once; writes "won" or "lost <output as JSON>"
    claim-and-hang RUN CALL   claim_call; writes "won"/"lost ..." and then sleeps until killed, never settling
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from session_backends import open_session  # noqa: E402


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main(spec_json: str, session_id: str, action: str, *args: str) -> None:
    session = open_session(json.loads(spec_json), session_id)
    say("ready")
    if sys.stdin.readline() != "go\n":
        return
    if action == "append":
        name, count = args[0], int(args[1])
        for i in range(count):
            call_id = f"{name}-{i}"
            session.add_items([{"role": "user", "content": call_id},
                               {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"},
                               {"type": "function_call_output", "call_id": call_id, "output": "ok"}])
        say("done")
    elif action in ("claim", "claim-and-hang"):
        won, output = session.claim_call(args[0], args[1])
        say("won" if won else "lost " + json.dumps(output))
        if action == "claim-and-hang":
            time.sleep(120)
    session.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
