"""Runner-managed retries with a scripted failure and the model's retry advice."""
from agents import Agent, ModelRetryAdvice, ModelRetrySettings, ModelSettings, Runner, retry_policies
from agents.testing import ModelStep, ScriptedModel, assistant_message

failure = RuntimeError("temporarily unavailable")
model = ScriptedModel([
    ModelStep.raise_error(failure, retry_advice=ModelRetryAdvice(suggested=True, retry_after=0)),
    [assistant_message("recovered")],
])
settings = ModelSettings(retry=ModelRetrySettings(max_retries=1, policy=retry_policies.provider_suggested()))
result = Runner.run_sync(Agent(name="A", model=model, model_settings=settings), "hi")
assert result.final_output == "recovered"
assert len(model.calls) == 2

no_retry = ScriptedModel([RuntimeError("down"), [assistant_message("never")]])
try:
    Runner.run_sync(Agent(name="A", model=no_retry), "hi")
except RuntimeError as error:
    assert str(error) == "down"
else:
    raise AssertionError("expected the error: retries are opt-in")
assert len(no_retry.calls) == 1
print("ok")
