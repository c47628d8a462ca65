"""A tool call and a handoff in one reply: the tool runs, then the handoff happens."""
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

calls = []


@function_tool
def log(note: str) -> str:
    """Log a note."""
    calls.append(note)
    return "logged"


expert = Agent(name="Expert", model=ScriptedModel([[assistant_message("expert answer")]]))
front_model = ScriptedModel([[function_call("log", {"note": "x"}, call_id="c1"),
                              function_call("transfer_to_expert", {}, call_id="h1")]])
front = Agent(name="Front", tools=[log], handoffs=[expert], model=front_model)
result = Runner.run_sync(front, "hard question")
assert calls == ["x"]
assert result.last_agent is expert and result.final_output == "expert answer"
assert len(result.raw_responses) == 2
print("ok")
