"""A model's side of the retry contract: what an adapter reports about a failure, and when it must not retry on
its own. The run's retries are the retry shell's (miniagents/retry/): it asks a model's optional
`get_retry_advice`, which the HTTP adapters and `ScriptedModel` answer. Loaded with them, not with the package.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Optional

# True while the run retries a call itself: a model adapter reading it makes one attempt only.
provider_retries_disabled: contextvars.ContextVar = contextvars.ContextVar("miniagents_provider_retries_disabled",
                                                                          default=False)


@dataclass
class ModelRetryNormalizedError:
    """What a policy needs to know about a failure, whatever the model adapter raised."""

    status_code: Optional[int] = None
    error_code: Optional[str] = None
    message: Optional[str] = None
    request_id: Optional[str] = None
    retry_after: Optional[float] = None
    is_abort: bool = False
    is_network_error: bool = False
    is_timeout: bool = False


@dataclass
class ModelRetryAdvice:
    """A model adapter's opinion on retrying a failure: `suggested` (None: no opinion), the delay the server
    asked for, and whether replaying the request is "safe" or "unsafe" (None: unknown)."""

    suggested: Optional[bool] = None
    retry_after: Optional[float] = None
    replay_safety: Optional[str] = None
    reason: Optional[str] = None
    normalized: Optional[ModelRetryNormalizedError] = None
    response_started: bool = False


@dataclass
class ModelRetryAdviceRequest:
    """What the run asks a model's `get_retry_advice` about."""

    error: Exception
    attempt: int
    stream: bool
    previous_response_id: Optional[str] = None
    conversation_id: Optional[str] = None
