"""agents.testing errors and their attributes."""
from agents import Agent, Runner
from agents.testing import (InvalidModelStep, ModelStep, ScriptedModel, UnconsumedModelSteps, UnexpectedModelCall,
                            assistant_message)

model = ScriptedModel([ModelStep.raise_error(RuntimeError("provider down"))])
try:
    Runner.run_sync(Agent(name="A", model=model), "hi")
except RuntimeError as error:
    assert str(error) == "provider down"
else:
    raise AssertionError("expected the scripted error")

empty = ScriptedModel()
try:
    Runner.run_sync(Agent(name="A", model=empty), "hi")
except UnexpectedModelCall as error:
    assert str(error) == "Unexpected non-streaming model call #1: no scripted steps remain."
    assert error.call_index == 0 and error.call.input[-1]["content"] == "hi"
else:
    raise AssertionError("expected UnexpectedModelCall")

leftover = ScriptedModel([[assistant_message("a")], [assistant_message("b")]])
Runner.run_sync(Agent(name="A", model=leftover), "hi")
try:
    leftover.assert_complete()
except UnconsumedModelSteps as error:
    assert error.remaining_steps == 1
    assert str(error) == "1 scripted model step(s) were not consumed."
else:
    raise AssertionError("expected UnconsumedModelSteps")

try:
    ScriptedModel([{"output": [], "colour": "red"}])
except InvalidModelStep as error:
    assert error.reason == "unsupported_field" and error.input_index == 0
else:
    raise AssertionError("expected InvalidModelStep")
print("ok")
