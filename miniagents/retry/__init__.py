"""Runner-managed model retries (a shell): `ModelRetrySettings`, the policies that decide, the loop that retries.

`ModelSettings(retry=ModelRetrySettings(max_retries=2, policy=retry_policies.provider_suggested()))` asks
the run to call the model again when a call fails and the policy says so. The model adapters have their own
transport retries (connection errors, 429, 5xx); `provider_suggested()` follows what the adapter would
have decided, which it reports as `ModelRetryAdvice` (`Model.get_retry_advice`, optional on any model; the
kernel's HTTP adapters' rule is `advice.http_advice`, applied to the errors they raise).
While the run manages the retries of a call, the adapter is told not to retry on its own
(`provider_retries_disabled`), so a failure is never retried twice over.

Never: retry a call that already streamed an event to the reader, retry an abort, replay a request bound
to server-side state (`previous_response_id`, `conversation_id`) unless the provider says it is safe or
the policy explicitly approves it. Names and fields are upstream's; decisions are plain data, policies
may be sync or `async def`. The run reaches this shell through the `model` seam (`RetryPlugin`): a turn whose
settings ask for retries calls a `RetryingModel` around its model.

Every wait is bounded: the backoff's settings are finite numbers >= 0 and it stops growing at `max_delay`; a wait
a policy or a server asks for is at most `MAX_SERVER_DELAY` (the adapters' longest `retry-after`), and one that is
not a number >= 0 (negative, NaN) is no wait, as a negative one is upstream's. Cancelling the run (during the call,
the wait, or before the call began) ends a wait at once and no attempt follows: the run returns as cancelled. Each
retry is one more request of the run, as upstream counts it, checked against the run's `UsageLimits` before it is
sent (`count_retry`).
"""
from __future__ import annotations

import dataclasses
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from .. import caller, seams
from ..context import COUNTING, from_fields
from ..errors import ModelHTTPError, ModelTimeoutError, UsageLimitExceeded, UserError
from ..items import described
from ..models.interface import provider_retries_disabled  # the flag that tells an adapter the run retries
from ..models.protocol import MAX_SERVER_DELAY
from ..steps import model_events
from .advice import ModelRetryAdvice, ModelRetryAdviceRequest, ModelRetryNormalizedError, http_advice  # noqa: F401

logger = logging.getLogger(__name__)  # under the package's logger, whatever a copy is named
DEFAULT_INITIAL_DELAY = 0.25
DEFAULT_MAX_DELAY = 2.0
DEFAULT_MULTIPLIER = 2.0



@dataclass
class ModelRetryBackoffSettings:
    """How long to wait before a retry the policy did not time: `initial_delay * multiplier**(attempt-1)`, at
    most `max_delay`, with +-12.5% jitter unless `jitter=False` (None: 0.25 s, 2 s, 2.0, jitter on)."""

    initial_delay: Optional[float] = None
    max_delay: Optional[float] = None
    multiplier: Optional[float] = None
    jitter: Optional[bool] = None

    def __post_init__(self):
        for name in ("initial_delay", "max_delay", "multiplier"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 <= value <= sys.float_info.max):  # NaN and inf are refused
                raise UserError(f"ModelRetryBackoffSettings.{name} must be a finite number >= 0 or None: {value!r:.80}")
        if self.jitter is not None and not isinstance(self.jitter, bool):  # "no" was jitter on
            raise UserError(f"ModelRetryBackoffSettings.jitter must be a bool or None, got {self.jitter!r:.80}")

    def to_json_dict(self) -> dict:
        return dataclasses.asdict(self)

    def delay(self, attempt: int, rand: Optional[Callable[[], float]] = None) -> float:
        """The wait before retry number `attempt` (1-based); `rand` (default `random.random`) draws the jitter."""
        initial = DEFAULT_INITIAL_DELAY if self.initial_delay is None else self.initial_delay
        ceiling = DEFAULT_MAX_DELAY if self.max_delay is None else self.max_delay
        multiplier = DEFAULT_MULTIPLIER if self.multiplier is None else float(self.multiplier)  # ** overflows at once
        try:
            base = min(initial * multiplier ** max(attempt - 1, 0), ceiling)
        except OverflowError:  # grown past any ceiling long ago
            base = ceiling if initial else 0.0
        if self.jitter is False:
            return base
        if rand is None:
            import random  # only a retry that waits needs it

            rand = random.random
        return min(max(base * (0.875 + rand() * 0.25), 0.0), ceiling)


@dataclass
class ModelRetrySettings:
    """Runner-managed retries of a failed model call: at most `max_retries` after the first attempt, when
    `policy` (a `RetryPolicy`) says so; `backoff` (settings or a dict of them) times the waits."""

    max_retries: Optional[int] = None
    backoff: Union[ModelRetryBackoffSettings, dict, None] = None
    policy: Optional[Callable[..., Any]] = field(default=None, repr=False)

    def __post_init__(self):
        if self.max_retries is not None and (isinstance(self.max_retries, bool)
                                             or not isinstance(self.max_retries, int)):
            raise UserError(f"ModelRetrySettings.max_retries must be an int or None, got {described(self.max_retries)}")
        if isinstance(self.backoff, dict):
            self.backoff = from_fields(ModelRetryBackoffSettings, self.backoff, "ModelRetrySettings.backoff")
        elif self.backoff is not None and not isinstance(self.backoff, ModelRetryBackoffSettings):
            raise UserError("ModelRetrySettings.backoff must be ModelRetryBackoffSettings, a dict or None, "
                            f"got {type(self.backoff).__name__}")
        if self.policy is not None and not callable(self.policy):
            raise UserError(f"ModelRetrySettings.policy must be callable, got {type(self.policy).__name__}")

    def to_json_dict(self) -> dict:
        return {"max_retries": self.max_retries,
                "backoff": self.backoff.to_json_dict() if self.backoff is not None else None}


@dataclass
class RetryDecision:
    """A policy's answer: retry or not, after `delay` seconds (None: the backoff's or the server's delay).
    `approve_unsafe_replay` lets a request the provider marked replay-unsafe be sent again."""

    retry: bool
    delay: Optional[float] = None
    reason: Optional[str] = None
    approve_unsafe_replay: bool = False


@dataclass
class RetryPolicyContext:
    """What a `RetryPolicy` is given: the error, the attempt (1 for the first retry), the budget, the
    normalized facts and the provider's advice."""

    error: Exception
    attempt: int
    max_retries: int
    stream: bool
    normalized: ModelRetryNormalizedError
    provider_advice: Optional[ModelRetryAdvice] = None
    previous_response_id: Optional[str] = None
    conversation_id: Optional[str] = None

    @property
    def replay_safety(self) -> str:
        """"safe", "unsafe" or "unknown", as the provider said."""
        safety = self.provider_advice.replay_safety if self.provider_advice is not None else None
        return safety if safety in ("safe", "unsafe") else "unknown"

    @property
    def response_started(self) -> bool:
        return bool(self.provider_advice is not None and self.provider_advice.response_started)

    @property
    def stateful_request(self) -> bool:
        return bool(self.previous_response_id or self.conversation_id)


RetryPolicy = Callable[[RetryPolicyContext], Any]  # -> bool | RetryDecision, or an awaitable of one


def _decision(value: Any) -> RetryDecision:
    return value if isinstance(value, RetryDecision) else RetryDecision(retry=bool(value))


class _Veto(RetryDecision):
    """A provider's explicit "do not retry": no other policy in `any()`/`all()` overrides it."""


class RetryPolicies:
    """The ready-made policies (`retry_policies.network_error()`, ...) and their combinations."""

    @staticmethod
    def never() -> RetryPolicy:
        return lambda context: False

    @staticmethod
    def provider_suggested() -> RetryPolicy:
        """Retry when the model adapter says the failure is worth retrying (its own transport's rule)."""

        def policy(context: RetryPolicyContext) -> RetryDecision:
            advice = context.provider_advice
            if advice is None or advice.suggested is None:
                return RetryDecision(False)
            if advice.suggested is False:
                return _Veto(False, reason=advice.reason)
            return RetryDecision(True, delay=advice.retry_after, reason=advice.reason,
                                 approve_unsafe_replay=advice.replay_safety == "safe")
        return policy

    @staticmethod
    def network_error() -> RetryPolicy:
        return lambda context: context.normalized.is_network_error or context.normalized.is_timeout

    @staticmethod
    def retry_after() -> RetryPolicy:
        """Retry when the server said how long to wait, after that long."""

        def policy(context: RetryPolicyContext) -> RetryDecision:
            delay = context.normalized.retry_after
            if delay is None and context.provider_advice is not None:
                delay = context.provider_advice.retry_after
            return RetryDecision(True, delay=delay) if delay is not None else RetryDecision(False)
        return policy

    @staticmethod
    def http_status(statuses: Iterable[int]) -> RetryPolicy:
        allowed = frozenset(statuses)
        return lambda context: context.normalized.status_code in allowed

    @staticmethod
    def any(*policies: RetryPolicy) -> RetryPolicy:
        """Retry when one policy says so (a provider veto wins); the first positive decision's timing."""

        def policy(context: RetryPolicyContext) -> RetryDecision:
            decisions = [_decision(caller.call(p, context)) for p in policies]
            veto = next((d for d in decisions if isinstance(d, _Veto)), None)
            return veto or next((d for d in decisions if d.retry), RetryDecision(False))
        return policy

    @staticmethod
    def all(*policies: RetryPolicy) -> RetryPolicy:
        """Retry only when every policy says so; the last delay and reason given win."""

        def policy(context: RetryPolicyContext) -> RetryDecision:
            merged = RetryDecision(bool(policies))
            for p in policies:
                decision = _decision(caller.call(p, context))
                if not decision.retry:
                    return decision
                merged.delay = decision.delay if decision.delay is not None else merged.delay
                merged.reason = decision.reason or merged.reason
                merged.approve_unsafe_replay = merged.approve_unsafe_replay or decision.approve_unsafe_replay
            return merged
        return policy


retry_policies = RetryPolicies()


# --- The loop the run wraps around a model call ---------------------------------------------------------


def normalize(error: Exception, advice: Optional[ModelRetryAdvice]) -> ModelRetryNormalizedError:
    """The facts a policy reads, from miniagents' model errors, overridden by what the provider normalized."""
    http = error if isinstance(error, ModelHTTPError) else None
    facts = ModelRetryNormalizedError(
        status_code=http.status if http else None, error_code=http.code if http else None, message=str(error),
        request_id=http.request_id if http else None, retry_after=getattr(error, "retry_after", None),
        is_abort=bool(http and http.code == "cancelled"),
        is_network_error=bool(http and http.status is None and http.code != "cancelled"),
        is_timeout=isinstance(error, (ModelTimeoutError, TimeoutError)))
    if advice is not None:
        if advice.retry_after is not None:
            facts.retry_after = advice.retry_after
        if advice.normalized is not None:
            for name, value in dataclasses.asdict(advice.normalized).items():
                if value not in (None, False):
                    setattr(facts, name, value)
    return facts


def decide(settings: Optional[ModelRetrySettings], context: RetryPolicyContext,
           streamed_already: bool = False) -> RetryDecision:
    """Whether to retry this failure: the budget, the absolute vetoes, then the policy and the replay rules."""
    advice = context.provider_advice
    reason = advice.reason if advice is not None else None
    if settings is None or settings.policy is None or context.attempt > context.max_retries:
        return RetryDecision(False, reason=reason)
    if context.normalized.is_abort or streamed_already:
        return RetryDecision(False, reason=reason)
    unsafe = context.replay_safety == "unsafe"
    if unsafe and context.stream:
        return RetryDecision(False, reason=reason)
    decision = _decision(caller.call(settings.policy, context))
    if not decision.retry:
        return decision
    approved = decision.approve_unsafe_replay or context.replay_safety == "safe"
    if (context.stateful_request or unsafe) and not approved:
        return RetryDecision(False, reason=decision.reason or reason)
    delay = decision.delay
    if delay is None:
        delay = context.normalized.retry_after
    if delay is None:
        delay = (settings.backoff or ModelRetryBackoffSettings()).delay(context.attempt)
    else:  # asked for by the policy or the server: maybe no number >= 0, maybe for ever
        delay = bounded(delay)
    return RetryDecision(True, delay=delay, reason=decision.reason or reason,
                         approve_unsafe_replay=decision.approve_unsafe_replay)


def bounded(delay: Any) -> float:
    """A wait a policy or a server asked for, in seconds: at most `MAX_SERVER_DELAY` (`inf` included), and none for
    what is not a number >= 0 (a negative number, NaN, a string)."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not delay >= 0:
        return 0.0
    return float(min(delay, MAX_SERVER_DELAY))


def _failure_context(model: Any, settings: ModelRetrySettings, error: Exception, attempt: int, stream: bool,
                     ids: dict) -> RetryPolicyContext:
    request = ModelRetryAdviceRequest(error, attempt, stream, ids.get("previous_response_id"),
                                      ids.get("conversation_id"))
    ask = getattr(model, "get_retry_advice", None)
    advice = caller.call(ask, request) if callable(ask) else http_advice(error)  # as a policy, it may be async
    if not isinstance(advice, (ModelRetryAdvice, type(None))):
        raise UserError(f"{getattr(ask, '__qualname__', 'get_retry_advice')} must return a ModelRetryAdvice or "
                        f"None, got {type(advice).__name__}")  # the model's own method, through any wrapper
    if advice is not None and not isinstance(advice.normalized, (ModelRetryNormalizedError, type(None))):
        raise UserError(f"{getattr(ask, '__qualname__', 'get_retry_advice')} gave a ModelRetryAdvice whose "
                        f"normalized is not a ModelRetryNormalizedError or None: {type(advice.normalized).__name__}")
    return RetryPolicyContext(error, attempt, max(settings.max_retries or 0, 0), stream, normalize(error, advice),
                              advice, request.previous_response_id, request.conversation_id)


def _wait(decision: RetryDecision, attempt: int, settings: ModelRetrySettings, cancelled: threading.Event) -> None:
    """The decision's delay, ended at once by the run's cancel (`cancelled`, set by `caller.abortable`), which also
    stops the retry: `caller.Cancelled`, as an aborted request raises, and no new attempt starts. A cancel that came
    before the call began (while the instructions ran: a custom model's call is made all the same) is no abort this
    call heard, but the run's aborts are marked with it (`Aborts.cancelled`)."""
    logger.debug("retrying the failed model call in %.2fs (retry %d of %d)", decision.delay or 0.0, attempt,
                 settings.max_retries or 0)
    if getattr(caller.CANCEL_CALLBACKS.get(), "cancelled", False) or cancelled.wait(decision.delay or 0.0):
        raise caller.Cancelled()


def _runner_managed(settings: Optional[ModelRetrySettings]) -> bool:
    """Whether the run decides retries of this call (then the adapter makes one attempt per call)."""
    return settings is not None and (settings.max_retries is not None and settings.max_retries <= 0
                                     or settings.policy is not None and (settings.max_retries or 0) > 0)


def as_settings(value: Any) -> Optional[ModelRetrySettings]:
    """`ModelSettings.retry` as `ModelRetrySettings` (a dict of its fields is accepted, as upstream)."""
    if value is None or isinstance(value, ModelRetrySettings):
        return value
    if isinstance(value, dict):
        return from_fields(ModelRetrySettings, value, "ModelSettings.retry")
    raise UserError(f"ModelSettings.retry must be ModelRetrySettings, a dict of its fields or None, "
                    f"got {type(value).__name__}")


def count_retry(run: Any) -> None:
    """A retry is one more request of the run (upstream counts each attempt): checked against the run's usage limits
    and counted before it is sent, as the kernel checks and counts a turn's first (`steps.check_request_limit`),
    under the same lock (a run sharing the usage never sees the room it takes). Past a limit the run stops with
    `UsageLimitExceeded`, which carries the run's state, to resume with a higher limit: the call is made again."""
    usage, limits = run.state.context_wrapper.usage, run.config.usage_limits
    with COUNTING:
        limit = limits.exceeded(usage, requests=1) if limits is not None else None
        if limit is None:
            usage.requests += 1
    if limit is not None:
        stop = UsageLimitExceeded(*limit)
        stop.state = run.state
        raise stop


def get_response(model: Any, settings: Any, call: Callable[[], Any], ids: dict, cancelled: threading.Event,
                 count: Callable[[], None]) -> Any:
    """`call()` (one model call), retried as `settings` and its policy decide, until `cancelled` is set; `count()`
    before each retry is sent (`count_retry`)."""
    settings = as_settings(settings)
    token = provider_retries_disabled.set(_runner_managed(settings))
    try:
        attempt = 1
        while True:
            try:
                return call()
            except Exception as error:
                if settings is None:
                    raise
                decision = decide(settings, _failure_context(model, settings, error, attempt, False, ids))
                if not decision.retry:
                    raise
                _wait(decision, attempt, settings, cancelled)
                count()
                attempt += 1
    finally:
        provider_retries_disabled.reset(token)


def stream_response(model: Any, settings: Any, call: Callable[[], Iterable], ids: dict,
                    cancelled: threading.Event, count: Callable[[], None]) -> Iterator[Any]:
    """The events of `call()` (one streamed model call); a failure before the first event may be retried, until
    `cancelled` is set; `count()` before each retry is sent."""
    settings = as_settings(settings)
    token = provider_retries_disabled.set(_runner_managed(settings))
    try:
        attempt = 1
        while True:
            started = False
            try:
                for event in model_events(call()):  # no iterable: the kernel's UserError, not a bare TypeError
                    started = True
                    yield event
                return
            except Exception as error:
                if settings is None:
                    raise
                decision = decide(settings, _failure_context(model, settings, error, attempt, True, ids), started)
                if not decision.retry:
                    raise
                _wait(decision, attempt, settings, cancelled)
                count()
                attempt += 1
    finally:
        provider_retries_disabled.reset(token)


class RetryingModel:
    """A turn's model, with each call retried as `settings` (`ModelSettings.retry`) and its policy decide, each retry
    counted in `run`'s usage; every other attribute is the wrapped model's."""

    def __init__(self, model: Any, settings: ModelRetrySettings, run: Any):
        self.wrapped, self.settings, self.run = model, settings, run

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        cancelled = threading.Event()  # the run's cancel sets it, from the first attempt to the last
        with caller.abortable(cancelled.set):
            return get_response(self.wrapped, self.settings, lambda: self.wrapped.get_response(*args, **kwargs),
                                kwargs, cancelled, lambda: count_retry(self.run))

    def stream_response(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        cancelled = threading.Event()  # the run's cancel sets it, from the first attempt to the last event
        with caller.abortable(cancelled.set):
            yield from stream_response(self.wrapped, self.settings,
                                       lambda: self.wrapped.stream_response(*args, **kwargs), kwargs, cancelled,
                                       lambda: count_retry(self.run))

    def __deepcopy__(self, memo: dict) -> "RetryingModel":
        """A model is a shared service, not data (as the library's models are); a copy of its run is no use."""
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # what copy asks of this object (__deepcopy__, __setstate__), never passed on:
            raise AttributeError(name)  # a copy being built has no `wrapped` yet to ask (a RecursionError)
        return getattr(self.wrapped, name)


class RetryPlugin(seams.Plugin):
    """On the `model` seam: a turn whose settings have `retry` calls its model through a `RetryingModel`."""

    def model(self, run: Any, setup: Any, model: Any) -> Any:
        settings = as_settings(setup.settings.retry)
        return model if settings is None else RetryingModel(model, settings, run)


seams.register(RetryPlugin())
