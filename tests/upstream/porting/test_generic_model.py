"""The generic scripted model that examples.py runs upstream's example programs against (generic_model.py)."""
from dataclasses import dataclass
from typing import List, Literal

import miniagents.testing as testing
from generic_model import generic_model, sample
from miniagents.upstream import Agent, Runner, function_tool, handoff


def test_sample_fits_the_schema_first_choices_first():
    schema = {"type": "object", "$defs": {"P": {"type": "object", "properties": {"n": {"type": "integer",
                                                                                         "minimum": 3}}}},
              "properties": {"p": {"$ref": "#/$defs/P"}, "kind": {"enum": ["pass", "fail"]},
                             "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
                             "tags": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}}}
    assert sample(schema) == {"p": {"n": 3}, "kind": "pass", "maybe": 1.0, "tags": ["example"], "ok": False}


@dataclass
class Verdict:
    score: Literal["pass", "needs_improvement"]
    notes: List[str]


def test_it_calls_the_relevant_tool_hands_off_once_then_answers_in_the_output_type():
    calls = []

    @function_tool
    def get_weather(city: str) -> str:
        calls.append(("weather", city))
        return "sunny"

    @function_tool
    def send_email(to: str) -> str:
        calls.append(("email", to))
        return "sent"

    model = generic_model(testing)
    judge = Agent(name="judge", model=model, output_type=Verdict)
    agent = Agent(name="front", model=model, tools=[get_weather, send_email], handoffs=[handoff(judge)])
    result = Runner.run_sync(agent, "What is the weather in Oslo?")
    assert calls == [("weather", "example")]
    assert result.last_agent is judge and result.final_output == Verdict("pass", ["example"])
    again = Runner.run_sync(agent, result.to_input_list() + [{"role": "user", "content": "and tomorrow?"}])
    assert again.last_agent is agent  # one handoff per conversation
