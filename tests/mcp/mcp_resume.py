"""Resume a paused MCP run in a process of its own (used by tests/mcp/test_mcp_run.py).

    python mcp_resume.py STATE_JSON_PATH SESSION_DB_PATH SERVER_LOG_PATH

The agent is built as the test builds it (`build_agent`), with a fresh server of the same name; the session is the
same SQLite file, so its ledger is shared. Prints one JSON object: the final output, or the error's type and text.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this repository's package, with no PYTHONPATH

from miniagents import Agent, AgentsException, Runner, RunState, SQLiteSession  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message  # noqa: E402
from mcp_support import make_server  # noqa: E402


def build_agent(model, log_path):
    server = make_server(log=log_path, name="notes", require_approval={"record": "always"})
    return Agent(name="Scribe", instructions="Record notes.", mcp_servers=[server], model=model)


def main(state_path, db_path, log_path):
    agent = build_agent(ScriptedModel([[assistant_message("recorded it")]]), log_path)
    state = RunState.from_string(agent, Path(state_path).read_text(encoding="utf-8"))
    try:
        result = Runner.run_sync(agent, state, session=SQLiteSession("notes", db_path))
        print(json.dumps({"final": result.final_output, "connected_after": agent.mcp_servers[0].connected}))
    except AgentsException as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
