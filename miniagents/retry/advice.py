"""A model's side of the retry contract: what a model reports about a failure (`ModelRetryAdvice`), asked through
its optional `get_retry_advice` (`ScriptedModel` answers it), and `http_advice`, the kernel's HTTP adapters' own
rule, for the errors they raise. The flag that tells an adapter the run retries a call itself,
`provider_retries_disabled`, is the kernel's (models/interface.py): the adapters read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import ModelHTTPError, ModelTimeoutError
from ..models.protocol import retry_after, should_retry


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


def http_advice(error: Exception) -> Optional[ModelRetryAdvice]:
    """The HTTP adapters' own retry rule applied to a failed call (what their transport retries), for a model that
    gives no advice of its own (`retry_policies.provider_suggested()`); None for failures it has no opinion on."""
    if isinstance(error, ModelTimeoutError):
        return ModelRetryAdvice(suggested=True, reason="the request timed out")
    if not isinstance(error, ModelHTTPError):
        return None
    if error.code == "cancelled":
        return ModelRetryAdvice(suggested=False, reason="the run was cancelled")
    if error.status is None:
        return ModelRetryAdvice(suggested=True, reason="the connection failed")
    delay = retry_after(error.retry_headers)  # a delay past the longest the adapter waits: should_retry says no
    return ModelRetryAdvice(suggested=should_retry(error.status, error.retry_headers, error),
                            retry_after=delay if delay is not None and delay > 0 else None,
                            reason=f"HTTP {error.status}")
