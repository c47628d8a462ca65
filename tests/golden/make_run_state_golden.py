"""Write tests/golden/run_state_v1.json: a run paused with two approvals, as schema version 1 writes it.

    python tests/golden/make_run_state_golden.py           # check: exit 1 if the file differs from a fresh run
    python tests/golden/make_run_state_golden.py --write   # (re)write it, on purpose

The golden file pins what version 1 documents look like; tests/test_run_state.py loads it with agents defined
there (the same names and tools as below, on purpose written twice) and resumes it. Never regenerate it to make a
failing test pass: a released version must keep loading. A new schema version gets a new golden file.

The run: Triage hands off to Worker; Worker says a word, lists a folder (no approval needed, runs), and asks to
delete a file and to send an email (both need approval) -> paused with two interruptions.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from miniagents import Agent, Runner, Usage, function_tool  # noqa: E402
from miniagents.context import InputTokensDetails, OutputTokensDetails  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

GOLDEN = os.path.join(HERE, "run_state_v1.json")


def build_agents(model, log):
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        log.append(("delete_file", path))
        return f"deleted {path}"

    @function_tool(needs_approval=True)
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        log.append(("send_email", to))
        return f"sent to {to}"

    @function_tool
    def list_files(folder: str) -> list:
        """List a folder."""
        log.append(("list_files", folder))
        return ["report.txt", "old.log"]

    worker = Agent("Worker", instructions="Do the work.", handoff_description="Does the work.",
                   tools=[delete_file, send_email, list_files], model=model)
    triage = Agent("Triage", instructions="Route the request.", handoffs=[worker], model=model)
    return triage, worker


def make_document() -> dict:
    usage = Usage(requests=1, input_tokens=120, output_tokens=30, total_tokens=150,
                  input_tokens_details=InputTokensDetails(cached_tokens=20),
                  output_tokens_details=OutputTokensDetails(reasoning_tokens=5))
    model = ScriptedModel([
        [function_call("transfer_to_worker", {}, call_id="call_handoff")],
        [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Tidy /tmp."}]},
         assistant_message("Let me look first.", item_id="msg_1"),
         function_call("list_files", {"folder": "/tmp"}, call_id="call_list"),
         function_call("delete_file", {"path": "/tmp/old.log"}, call_id="call_delete"),
         function_call("send_email", {"to": "ops@example.com", "body": "Cleaned /tmp"}, call_id="call_email")],
    ])
    model.default_usage = usage  # every step's usage
    log: list = []
    triage, _ = build_agents(model, log)
    result = Runner.run_sync(triage, "Please tidy /tmp and tell ops.", context={"user": "ann", "ticket": 42},
                             max_turns=8)
    assert [i.call_id for i in result.interruptions] == ["call_delete", "call_email"], result.interruptions
    assert log == [("list_files", "/tmp")], log
    return result.to_state().to_json()


def main(argv) -> int:
    text = json.dumps(make_document(), ensure_ascii=False, indent=2) + "\n"
    if "--write" in argv:
        with open(GOLDEN, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {GOLDEN}")
        return 0
    try:
        with open(GOLDEN, encoding="utf-8") as f:
            same = f.read() == text
    except FileNotFoundError:
        same = False
    print("golden file is up to date" if same else "golden file differs from a fresh run (not rewritten; "
          "a released version's golden file must keep loading as it is)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
