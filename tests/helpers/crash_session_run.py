"""Multi-turn session runs against a file database, forever, until killed (used by tests/test_crash.py).

    python tests/helpers/crash_session_run.py SPEC_JSON SEED

SPEC_JSON is a backend spec of tests/session_backends.py (a SQLite file, or PostgreSQL through psycopg).

Each run: 2-4 turns of 1-3 `lookup` calls (the tool sleeps a random 1-8 ms, so calls run concurrently and a
kill often lands while a turn is in flight), then a final message. Writes "ready" once imported, then waits for
"go" on stdin before it opens the session (so the test can start it early); writes "call <call_id>" whenever a
tool starts, one line each (os.write, so lines from tool threads never interleave). Stops by itself after 30 s
in case nobody kills it.
"""
import json
import os
import random
import sys
import time


def main(spec_json, seed):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from miniagents import Agent, Runner, function_tool
    from session_backends import import_driver, open_session
    from miniagents.testing import ScriptedModel, assistant_message, function_call

    rng = random.Random(seed)

    @function_tool
    def lookup(q: str) -> str:
        """Look something up."""
        os.write(1, f"call {q}\n".encode())
        time.sleep(rng.uniform(0.001, 0.008))
        return f"found {q}"

    def script(run):
        steps = []
        for turn in range(rng.randint(2, 4)):
            ids = [f"s{seed}r{run}t{turn}c{i}" for i in range(rng.randint(1, 3))]
            steps.append([function_call("lookup", {"q": call_id}, call_id=call_id) for call_id in ids])
        steps.append([assistant_message(f"run {run} done")])
        return steps

    spec = json.loads(spec_json)
    import_driver(spec)
    os.write(1, b"ready\n")  # imports done: the test may start this process early, then say "go"
    if sys.stdin.readline() != "go\n":
        return
    session = open_session(spec, "crash")
    deadline = time.monotonic() + 30
    run = 0
    while time.monotonic() < deadline:
        agent = Agent("Worker", tools=[lookup], model=ScriptedModel(script(run)))
        Runner.run_sync(agent, f"request {run}", session=session)
        run += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
