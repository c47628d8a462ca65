"""agents.run holds the runner machinery upstream code customises."""
from agents.run import AgentRunner, DEFAULT_MAX_TURNS, Runner, get_default_agent_runner, set_default_agent_runner

assert DEFAULT_MAX_TURNS == 10
assert isinstance(get_default_agent_runner(), AgentRunner)
print("ok")
