"""Runner-managed model retries (miniagents.retry): upstream's settings, policies and decisions."""
import asyncio
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniagents import (Agent, ModelHTTPError, ModelRetryAdvice, ModelRetryBackoffSettings, ModelRetrySettings,
                        ModelSettings, ModelTimeoutError, RetryDecision, RetryPolicyContext, RunConfig, Runner,
                        RunState, UsageLimitExceeded, UsageLimits, UserError, retry_policies)
from miniagents import retry
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call

pytestmark = pytest.mark.with_shells  # the retry shell's plugin


def unavailable():
    return ModelHTTPError(503, "try later", request_id="req_1")


def agent(model, **settings):
    return Agent(name="A", model=model, model_settings=ModelSettings(**settings))


def context(error=None, attempt=1, max_retries=3, stream=False, advice=None, **ids):
    error = error or unavailable()
    return RetryPolicyContext(error, attempt, max_retries, stream, retry.normalize(error, advice), advice,
                              ids.get("previous_response_id"), ids.get("conversation_id"))


def test_a_failed_call_is_retried_when_the_policy_says_so():
    model = ScriptedModel([unavailable(), [assistant_message("ok")]])
    settings = ModelRetrySettings(max_retries=2, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))
    result = Runner.run_sync(agent(model, retry=settings), "hi")
    assert result.final_output == "ok" and len(model.calls) == 2


def test_the_budget_bounds_the_retries_and_the_last_error_is_raised():
    model = ScriptedModel([unavailable(), unavailable(), unavailable()])
    settings = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))
    with pytest.raises(ModelHTTPError):
        Runner.run_sync(agent(model, retry=settings), "hi")
    assert len(model.calls) == 2 and model.remaining_steps == 1


def test_without_retry_settings_or_policy_nothing_is_retried():
    for settings in (None, ModelRetrySettings(max_retries=3)):
        model = ScriptedModel([unavailable(), [assistant_message("never")]])
        with pytest.raises(ModelHTTPError):
            Runner.run_sync(agent(model, retry=settings), "hi")
        assert len(model.calls) == 1


def test_provider_suggested_follows_the_models_advice_and_its_veto():
    step = ModelStep(error=unavailable(), retry_advice=ModelRetryAdvice(suggested=True, retry_after=0))
    model = ScriptedModel([step, [assistant_message("ok")]])
    settings = {"max_retries": 1, "policy": retry_policies.provider_suggested()}  # a dict, as upstream allows
    assert Runner.run_sync(agent(model, retry=settings), "hi").final_output == "ok"
    vetoed = ModelStep(error=unavailable(), retry_advice=ModelRetryAdvice(suggested=False))
    model = ScriptedModel([vetoed, [assistant_message("never")]])
    either = retry_policies.any(retry_policies.provider_suggested(), retry_policies.http_status([503]))
    with pytest.raises(ModelHTTPError):
        Runner.run_sync(agent(model, retry=ModelRetrySettings(max_retries=1, policy=either)), "hi")
    assert len(model.calls) == 1


def test_a_streamed_call_is_retried_only_before_its_first_event():
    model = ScriptedModel([unavailable(), [assistant_message("ok")]])
    settings = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))

    async def go():
        result = Runner.run_streamed(agent(model, retry=settings), "hi")
        async for _ in result.stream_events():
            pass
        return result

    assert asyncio.run(go()).final_output == "ok" and len(model.calls) == 2
    calls = []

    def stream_then_fail():
        calls.append(1)
        yield {"type": "response.created"}
        raise unavailable()

    with pytest.raises(ModelHTTPError):
        list(retry.stream_response(None, settings, stream_then_fail, {}, threading.Event(), lambda: None))
    assert len(calls) == 1


class StreamReturnsNone:
    """A custom model whose `stream_response` returns no iterable."""

    def get_response(self, *args, **kwargs):  # pragma: no cover - only streamed here
        raise AssertionError

    def stream_response(self, *args, **kwargs):
        return None


def test_a_custom_stream_response_that_returns_no_iterable_is_the_kernels_user_error_under_retries_too():
    """The retry shell iterated the stream itself: a bare TypeError ("'NoneType' object is not iterable"), where a
    run without retries raises the kernel's UserError saying what the model returned."""
    settings = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0}, policy=retry_policies.network_error())
    result = Runner.run_streamed(agent(StreamReturnsNone(), retry=settings), "hi")

    async def read():
        async for _ in result.stream_events():
            pass

    with pytest.raises(UserError, match="stream_response must return an iterable of events, not NoneType$"):
        asyncio.run(read())


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("delay, cancelled_during", [(0, "the failing call"), (3, "the wait")])
def test_a_cancelled_run_ends_the_backoff_at_once_and_makes_no_new_attempt(streamed, delay, cancelled_during):
    """The run's cancel reaches the wait (`caller.abortable`): however long, it ends, and the call is not made
    again, whether the cancel came while the failing call ran or while the retry waited."""
    failing, release = threading.Event(), threading.Event()

    def fail(call):
        failing.set()
        if cancelled_during == "the failing call":
            release.wait(30)
        return unavailable()

    model = ScriptedModel([fail, [assistant_message("never")]])
    backoff = {"initial_delay": delay, "max_delay": delay, "jitter": False}
    settings = ModelRetrySettings(max_retries=1, backoff=backoff, policy=retry_policies.http_status([503]))

    async def drain():
        result = Runner.run_streamed(agent(model, retry=settings), "hi")
        async for _ in result.stream_events():
            pass

    async def main():
        run = asyncio.ensure_future(drain() if streamed else Runner.run(agent(model, retry=settings), "hi"))
        await asyncio.get_running_loop().run_in_executor(None, failing.wait, 30)
        run.cancel()
        await asyncio.sleep(0.05)  # the task takes its cancel (which cancels the run) before the failing call ends
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())  # waits for the run's worker thread to end
    assert len(model.calls) == 1 and model.remaining_steps == 1


@pytest.mark.parametrize("streamed", [False, True])
def test_a_run_cancelled_before_its_model_call_makes_no_retry(streamed):
    """A cancel that came before the call (here while the instructions ran) is already the run's (`Aborts.cancelled`):
    a custom model's failing call is not retried, as a cancel during the call or the wait stops the retries."""
    runs = []

    def instructions(context, agent):
        runs[0].cancel()
        return "Be brief."

    model = ScriptedModel([unavailable(), [assistant_message("never")]])
    settings = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))
    chosen = Agent(name="A", instructions=instructions, model=model, model_settings=ModelSettings(retry=settings))

    async def drain():
        runs.append(Runner.run_streamed(chosen, "hi"))
        async for _ in runs[0].stream_events():
            pass

    if streamed:
        asyncio.run(drain())
    else:
        runs.append(RunState(None, "hi", chosen))
        Runner.run_sync(chosen, runs[0])
    assert len(model.calls) == 1 and model.remaining_steps == 1


def test_the_adapter_is_told_not_to_retry_while_the_run_manages_retries():
    seen = []

    def call():
        seen.append(retry.provider_retries_disabled.get())
        return "answer"

    policy = retry_policies.network_error()
    never = threading.Event()
    for settings in (ModelRetrySettings(max_retries=2, policy=policy), None, ModelRetrySettings(max_retries=0)):
        assert retry.get_response(None, settings, call, {}, never, lambda: None) == "answer"
    assert seen == [True, False, True] and retry.provider_retries_disabled.get() is False


def test_ready_made_policies():
    assert retry_policies.never()(context()) is False
    assert retry_policies.http_status([503])(context()) is True
    assert retry_policies.http_status([429])(context()) is False
    assert retry_policies.network_error()(context(ModelHTTPError(None, "reset"))) is True
    assert retry_policies.network_error()(context(ModelTimeoutError(5))) is True
    assert retry_policies.retry_after()(context(advice=ModelRetryAdvice(retry_after=1.5))) == RetryDecision(True, 1.5)
    assert retry_policies.retry_after()(context()) == RetryDecision(False)
    both = retry_policies.all(retry_policies.http_status([503]), lambda c: RetryDecision(True, delay=0.5))
    assert both(context()) == RetryDecision(True, delay=0.5)
    assert retry_policies.all(retry_policies.http_status([503]), retry_policies.never())(context()).retry is False


def test_decide_keeps_upstreams_vetoes():
    settings = ModelRetrySettings(max_retries=2, policy=lambda c: True, backoff={"jitter": False})
    assert retry.decide(settings, context()).delay == 0.25
    assert retry.decide(settings, context(attempt=3, max_retries=2)).retry is False
    assert retry.decide(settings, context(ModelHTTPError(None, "x", code="cancelled"))).retry is False
    assert retry.decide(settings, context(), streamed_already=True).retry is False
    assert retry.decide(settings, context(previous_response_id="r1")).retry is False  # bound to server state
    approve = ModelRetrySettings(max_retries=2, policy=lambda c: RetryDecision(True, approve_unsafe_replay=True))
    assert retry.decide(approve, context(previous_response_id="r1")).retry is True
    unsafe = ModelRetryAdvice(replay_safety="unsafe")
    assert retry.decide(settings, context(advice=unsafe)).retry is False
    assert retry.decide(settings, context(stream=True, advice=unsafe)).retry is False
    assert retry.decide(approve, context(stream=True, advice=unsafe)).retry is False
    safe = ModelRetryAdvice(replay_safety="safe")
    assert retry.decide(settings, context(conversation_id="c", advice=safe)).retry is True


def test_the_wait_is_the_policys_delay_else_the_servers_retry_after_else_the_backoff():
    settings = ModelRetrySettings(max_retries=2, policy=lambda c: True, backoff={"jitter": False})
    told = ModelRetryAdvice(retry_after=1.5)
    assert retry.decide(settings, context(advice=told)).delay == 1.5
    assert retry.decide(settings, context()).delay == 0.25
    timed = ModelRetrySettings(max_retries=2, policy=lambda c: RetryDecision(True, delay=0.1))
    assert retry.decide(timed, context(advice=told)).delay == 0.1


@pytest.mark.parametrize("asked, waited", [(-1, 0.0), (float("nan"), 0.0), ("soon", 0.0), (float("inf"), 60.0),
                                           pytest.param(10 ** 400, 60.0, id="10**400"), (61, 60.0), (1.5, 1.5)])
def test_a_wait_asked_for_is_a_number_from_zero_to_the_adapters_longest_retry_after(asked, waited):
    """A policy's delay or a server's retry_after that is no number >= 0 is no wait; none is longer than the
    longest retry-after the adapters wait for (MAX_SERVER_DELAY)."""
    by_policy = ModelRetrySettings(max_retries=2, policy=lambda c: RetryDecision(True, delay=asked))
    assert retry.decide(by_policy, context()).delay == waited
    by_server = ModelRetrySettings(max_retries=2, policy=retry_policies.provider_suggested())
    assert retry.decide(by_server, context(advice=ModelRetryAdvice(suggested=True, retry_after=asked))).delay == waited


def test_the_backoff_stops_growing_at_its_ceiling_however_many_retries():
    assert ModelRetryBackoffSettings(jitter=False).delay(1100) == 2.0
    assert ModelRetryBackoffSettings(multiplier=10 ** 300, max_delay=5).delay(3, rand=lambda: 1.0) == 5
    assert ModelRetryBackoffSettings(initial_delay=0, multiplier=1e300, jitter=False).delay(10 ** 6) == 0


@given(st.integers(1, 20), st.floats(0, 5), st.floats(0, 10), st.floats(1, 4), st.floats(0, 1))
def test_backoff_stays_within_its_ceiling_and_jitter_band(attempt, initial, ceiling, multiplier, rand):
    settings = ModelRetryBackoffSettings(initial_delay=initial, max_delay=ceiling, multiplier=multiplier)
    base = min(initial * multiplier ** (attempt - 1), ceiling)
    delay = settings.delay(attempt, rand=lambda: rand)
    assert 0 <= delay <= ceiling and base * 0.875 - 1e-9 <= delay <= base * 1.125 + 1e-9
    assert ModelRetryBackoffSettings(initial, ceiling, multiplier, jitter=False).delay(attempt) == base


def test_bad_settings_are_user_errors():
    for bad in (dict(max_retries="2"), dict(backoff=3), dict(policy="always"), dict(backoff={"initial_delay": -1}),
                dict(backoff={"initial_delay": float("nan")}), dict(backoff={"max_delay": float("inf")}),
                dict(backoff={"multiplier": 10 ** 400})):
        with pytest.raises(UserError):
            ModelRetrySettings(**bad)
    with pytest.raises(UserError, match="ModelSettings.retry"):
        Runner.run_sync(agent(ScriptedModel([[assistant_message("x")]]), retry=3), "hi")
    assert ModelRetrySettings(max_retries=1, backoff={"max_delay": 1}).to_json_dict() == {
        "max_retries": 1, "backoff": {"initial_delay": None, "max_delay": 1, "multiplier": None, "jitter": None}}


@pytest.mark.parametrize("bad", [dict(max_retries="9" * 10 ** 6), dict(backoff={"initial_delay": [0.5] * 10 ** 5}),
                                 dict(backoff={"max_delay": "9" * 10 ** 6})], ids=["max_retries", "initial", "max"])
def test_a_huge_bad_setting_is_shown_cut_short_in_its_user_error(bad):
    """A setting read from a config file can be of any size: its error names it and shows its start, as jitter's."""
    with pytest.raises(UserError, match="must be") as caught:
        ModelRetrySettings(**bad)
    assert len(str(caught.value)) < 250


# --- What an attack found: runner-managed retries did not hear the server's Retry-After -------------------------


@pytest.mark.parametrize("headers, waits, requests", [
    ({"Retry-After": "1"}, 1.0, 2),  # waited as asked, as the adapter's own retries wait
    ({"retry-after-ms": "600"}, 0.6, 2),
    ({"Retry-After": "3600"}, None, 1),  # longer than the adapter ever waits: the call fails now
    ({"x-should-retry": "false"}, None, 1),  # the server says a retry cannot help
    ({"Retry-After": "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"}, 0.0, 2),  # a date no datetime holds: none
])
def test_provider_suggested_retries_follow_the_servers_retry_headers(server, headers, waits, requests):
    import time

    from miniagents import OpenAIChatCompletionsModel
    from openai_server import chat_completion

    server.reply({"error": {"message": "slow down"}}, status=429, headers=headers).reply(chat_completion("ok"))
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key="sk-test-123456789")
    settings = ModelRetrySettings(max_retries=2, policy=retry_policies.provider_suggested())
    started = time.monotonic()
    if waits is None:
        with pytest.raises(ModelHTTPError, match="HTTP 429"):
            Runner.run_sync(agent(model, retry=settings), "hi")
    else:
        assert Runner.run_sync(agent(model, retry=settings), "hi").final_output == "ok"
        assert time.monotonic() - started >= waits  # the backoff here is a millisecond (conftest's fast_retries)
    assert len(server.requests) == requests


# --- What an attack found: the run's retries were not requests, so request_limit=1 allowed four model calls ---------


def run_to_end(model, settings, limits, streamed, state=None):
    """The run of an agent whose calls `settings` retries, under `limits`, streamed or not (from `state` if given)."""
    config = RunConfig(usage_limits=limits)
    if not streamed:
        return Runner.run_sync(agent(model, retry=settings), state or "hi", run_config=config)

    async def drain():
        result = Runner.run_streamed(agent(model, retry=settings), state or "hi", run_config=config)
        async for _ in result.stream_events():
            pass
        return result
    return asyncio.run(drain())


@given(failures=st.integers(0, 6), limit=st.one_of(st.none(), st.integers(1, 8)), streamed=st.booleans())
def test_each_retry_is_a_request_checked_against_request_limit_before_it_is_sent(failures, limit, streamed):
    """Upstream counts every attempt in usage.requests: a retry is checked against request_limit before it is sent
    (the limit is never passed) and counted; the stop's state resumes, and the run then has made one request per
    model call, however many failed."""
    model = ScriptedModel([unavailable() for _ in range(failures)] + [[assistant_message("ok")]])
    settings = ModelRetrySettings(max_retries=9, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))
    limits = UsageLimits(request_limit=limit)
    try:
        result = run_to_end(model, settings, limits, streamed)
    except UsageLimitExceeded as stop:
        assert limit is not None and failures + 1 > limit
        assert (stop.limit, stop.value, stop.count) == ("request_limit", limit, limit + 1)
        assert len(model.calls) == stop.state.context_wrapper.usage.requests == limit  # the limit, never more
        result = run_to_end(model, settings, UsageLimits(), streamed, stop.state)
    else:
        assert limit is None or failures + 1 <= limit
    assert result.final_output == "ok"
    assert len(model.calls) == result.context_wrapper.usage.requests == failures + 1


def test_an_agent_tools_retries_count_against_its_callers_request_limit_and_the_caller_resumes():
    """The inner run's retries are requests of the shared usage: the caller's limit stops the inner run (and the
    caller) before the retry that would pass it, and the caller's state resumes the inner run where it stopped."""
    settings = ModelRetrySettings(max_retries=3, backoff={"initial_delay": 0}, policy=retry_policies.http_status([503]))
    inner_model = ScriptedModel([unavailable(), unavailable(), [assistant_message("inner ok")]])
    inner = agent(inner_model, retry=settings)
    outer_model = ScriptedModel([[function_call("inner", {"input": "x"}, call_id="c1")], [assistant_message("done")]])
    outer = Agent(name="Outer", model=outer_model, tools=[inner.as_tool("inner", "Ask the inner agent.")])
    with pytest.raises(UsageLimitExceeded) as stop:
        Runner.run_sync(outer, "hi", run_config=RunConfig(usage_limits=UsageLimits(request_limit=3)))
    assert len(outer_model.calls) + len(inner_model.calls) == stop.value.state.context_wrapper.usage.requests == 3
    result = Runner.run_sync(outer, stop.value.state, run_config=RunConfig(usage_limits=UsageLimits(request_limit=9)))
    assert result.final_output == "done" and len(inner_model.calls) == 3
    assert result.context_wrapper.usage.requests == len(outer_model.calls) + len(inner_model.calls) == 5


# --- What an attack found: retry settings given as dicts, and a model's advice, taken as they came --------------------


@pytest.mark.parametrize("retry_settings, message", [
    ({"max_retries": 2, "polcy": None}, r"ModelSettings.retry has no field 'polcy' \(the fields of ModelRetrySettings"),
    ({"max_retries": 2, "backoff": {"initial": 1}}, "ModelRetrySettings.backoff has no field 'initial'"),
    ({"max_retries": 2, "backoff": {"jitter": "no"}},
     "ModelRetryBackoffSettings.jitter must be a bool or None, got 'no'"),
])
def test_retry_settings_given_as_a_dict_with_a_mistake_are_a_user_error_naming_it(retry_settings, message):
    """A key a dict of settings does not have was a bare TypeError (ModelRetrySettings.__init__() got an unexpected
    keyword argument), and jitter "no" was jitter on: each is a UserError before the model is called."""
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent(model, retry=retry_settings), "hi")
    assert model.calls == ()


def test_a_runs_retry_settings_keep_the_fields_they_leave_unset_from_the_agents():
    """Upstream merges retry settings field by field: a run's backoff once replaced the agent's settings whole, so
    the agent's max_retries and policy were lost and a flaky call was not retried."""
    model = ScriptedModel([unavailable(), [assistant_message("ok")]])
    own = ModelRetrySettings(max_retries=2, policy=retry_policies.http_status([503]), backoff={"multiplier": 3})
    run = RunConfig(model_settings=ModelSettings(retry=ModelRetrySettings(backoff={"initial_delay": 0})))
    assert Runner.run_sync(agent(model, retry=own), "hi", run_config=run).final_output == "ok"
    assert len(model.calls) == 2


@pytest.mark.parametrize("override", [
    ModelRetrySettings(max_retries=5, backoff=ModelRetryBackoffSettings(jitter=False)),
    {"max_retries": 5, "backoff": {"jitter": False}},
], ids=["settings", "dict"])
def test_model_settings_resolve_layers_retry_settings_and_their_backoff_field_by_field(override):
    policy = retry_policies.network_error()
    own = ModelSettings(retry=ModelRetrySettings(max_retries=2, policy=policy, backoff={"initial_delay": 0.5}))
    retry_settings = own.resolve(ModelSettings(retry=override)).retry
    assert retry_settings == ModelRetrySettings(max_retries=5, policy=policy,
                                                backoff=ModelRetryBackoffSettings(initial_delay=0.5, jitter=False))
    assert ModelSettings(retry={"max_retries": 2}).resolve(ModelSettings(retry={"policy": policy})).retry == {
        "max_retries": 2, "policy": policy}  # dicts stay dicts, read by the retry shell when a turn asks
    assert own.resolve(ModelSettings(retry=7)).retry == 7  # no settings: refused by the shell when a turn asks


class Advising(ScriptedModel):
    def __init__(self, steps, advice):
        super().__init__(steps)
        self.advice = advice

    def get_retry_advice(self, request):
        return self.advice(request)


@pytest.mark.parametrize("advice, message", [
    (lambda request: {"suggested": True}, "Advising.get_retry_advice must return a ModelRetryAdvice or None, got dict"),
    (lambda request: ModelRetryAdvice(suggested=True, normalized={"is_timeout": True}),
     "Advising.get_retry_advice gave a ModelRetryAdvice whose normalized is not a ModelRetryNormalizedError or None: "
     "dict"),
])
def test_a_models_retry_advice_of_the_wrong_kind_is_a_user_error_naming_it(advice, message):
    """It was a bare AttributeError ('dict' object has no attribute 'retry_after') from deep in the retry loop."""
    model = Advising([TimeoutError("slow"), [assistant_message("never")]], advice)
    settings = ModelRetrySettings(max_retries=2, policy=retry_policies.network_error())
    with pytest.raises(UserError, match=message):
        Runner.run_sync(agent(model, retry=settings), "hi")
    assert len(model.calls) == 1


def test_an_async_get_retry_advice_is_awaited_as_an_async_policy_is():
    async def advice(request):
        return ModelRetryAdvice(suggested=True, retry_after=0)

    model = Advising([unavailable(), [assistant_message("ok")]], advice)
    settings = ModelRetrySettings(max_retries=1, policy=retry_policies.provider_suggested())
    assert Runner.run_sync(agent(model, retry=settings), "hi").final_output == "ok"
    assert len(model.calls) == 2


def test_the_retrying_model_a_plugin_sees_can_be_copied():
    """A plugin's `model_call` sees the turn's model, a `RetryingModel` when the run retries (unless another shell
    wraps it again): copy.copy of it was a bare RecursionError (its `__getattr__` asked for `wrapped` before the copy
    had one)."""
    import copy

    model, settings = ScriptedModel([]), ModelRetrySettings(max_retries=1, policy=retry_policies.http_status([503]))
    copied = copy.copy(retry.RetryingModel(model, settings, None))
    assert isinstance(copied, retry.RetryingModel) and copied.wrapped is model and copied.settings is settings


def test_a_deep_copy_of_the_retrying_model_is_still_the_retrying_model():
    """copy.deepcopy asks the object for `__deepcopy__`: the `RetryingModel` passed the question on to its model,
    and the copy was the bare model (no retries, none counted); a copy of its run (connections, locks) is no use:
    it is shared, as the library's models are."""
    import copy

    class Pickled(ScriptedModel):  # a model with a state of its own: Python < 3.11 asked the object for it too
        def __getstate__(self):
            return {}

    settings = ModelRetrySettings(max_retries=1, policy=retry_policies.http_status([503]))
    run = object()  # the run it counts retries in
    for model in (ScriptedModel([]), Pickled([])):
        retrying = retry.RetryingModel(model, settings, run)
        copied, deep = copy.copy(retrying), copy.deepcopy([retrying])[0]
        assert copied.wrapped is model and copied.run is run and deep.wrapped is model and deep.run is run
