"""Resume a paused, approved run in a fresh process (used by tests/test_approvals.py).

    python tests/helpers/resume_in_new_process.py STATE_JSON_PATH TOOL_LOG_PATH

`build_agent` is imported by the test too, so both processes define the very same agent and tools. The tool
appends a line to TOOL_LOG_PATH each time it runs. Prints one JSON object: the final output, how many model
calls this process made, how many scripted steps were left over, how often the tool ran in total (lines of the
log) and the input the model received.
"""
import json
import sys

from miniagents import Agent, Runner, RunState, function_tool


def build_agent(model, log_path):
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"delete_file {path}\n")
        return f"deleted {path}"

    @function_tool
    def list_files(folder: str) -> str:
        """List a folder."""
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"list_files {folder}\n")
        return "a.txt b.txt"

    return Agent("Janitor", instructions="Keep the disk tidy.", tools=[delete_file, list_files], model=model)


def main(state_path, log_path):
    from miniagents.testing import ScriptedModel, assistant_message

    # Two steps: an extra model call for the paused turn would consume the first and show up in the counts.
    model = ScriptedModel([[assistant_message("cleaned up")], [assistant_message("an extra call")]])
    agent = build_agent(model, log_path)
    with open(state_path, encoding="utf-8") as f:
        state = RunState.from_string(agent, f.read())
    result = Runner.run_sync(agent, state)
    with open(log_path, encoding="utf-8") as f:
        tool_runs = f.read().splitlines()
    print(json.dumps({"final_output": result.final_output, "model_calls": len(model.calls),
                      "remaining_steps": model.remaining_steps, "tool_runs": tool_runs,
                      "model_input": [dict(i) for i in model.calls[0].input] if model.calls else None}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
