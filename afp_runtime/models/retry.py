"""Retrying one model call: exponential backoff with full jitter, Retry-After, bounded attempts.

The same encoded bytes are resent on every attempt (one receipt per epoch). Sleeps go through
the caller's clock, so tests never wait on the wall clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import msgspec

from afp_runtime.errors import ModelCallError, transient_resource_error
from afp_runtime.messages import ModelReply
from afp_runtime.models.base import DeltaSink, EncodedRequest, Model


class RetryPolicy(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """How a failed send is retried (docs/loop.md#model-call-errors-and-retry).

    Attributes:
        max_attempts: sends per epoch, first included (wire ``maxAttempts``).
        base_s: backoff base in seconds.
        cap_s: the largest backoff ceiling in seconds.
        retry_after_cap_s: the longest Retry-After honoured in-stage; longer ones stall the turn.
    """

    max_attempts: int = 5
    base_s: float = 1.0
    cap_s: float = 30.0
    retry_after_cap_s: float = 300.0


class Attempt(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One failed send: its status, error kind and how long we waited before the next."""

    error_kind: str
    waited_ms: int
    status: int | None = None


class Sleep(Protocol):
    def __call__(self, seconds: float) -> Awaitable[None]: ...


OnRetry = Callable[[int, ModelCallError, float], None]


def backoff_s(policy: RetryPolicy, attempt: int, unit: float) -> float:
    """Full jitter: uniform(0, min(cap, base * 2^(attempt-1))), ``unit`` drawn from [0, 1)."""
    return unit * min(policy.cap_s, policy.base_s * 2 ** (attempt - 1))


async def send_with_retries(
    model: Model,
    request: EncodedRequest,
    *,
    sleep: Sleep,
    random: Callable[[], float],
    policy: RetryPolicy,
    on_retry: OnRetry | None = None,
    on_delta: DeltaSink | None = None,
) -> tuple[ModelReply, tuple[Attempt, ...]]:
    """Send ``request`` until it succeeds, a non-retryable error occurs, or attempts run out.

    Returns:
        The reply and the failed attempts before it.

    Raises:
        ModelCallError: the last error, its ``attempts`` holding every failed attempt. An
            adapter that raises an exception of its own, or returns something that is not a
            ``ModelReply``, fails with ``error_kind="adapter"``, not retried: the same code would
            fail the same way; but an ``OSError`` of a transient resource shortage (``EMFILE``,
            ``ENOMEM``, ``ENOSPC``...) is ``resource`` and retried
            (docs/loop.md#error-classification).
    """
    failed: list[Attempt] = []
    attempt = 0
    while True:
        attempt += 1
        try:
            reply = await _checked_send(model, request, on_delta)
            return reply, tuple(failed)
        except ModelCallError as exc:
            retry_after = exc.retry_after_s
            too_long = retry_after is not None and retry_after > policy.retry_after_cap_s
            if not exc.retryable or attempt >= policy.max_attempts or too_long:
                failed.append(Attempt(error_kind=exc.error_kind, status=exc.status, waited_ms=0))
                exc.attempts = tuple(failed)
                raise
            wait = retry_after if retry_after is not None else backoff_s(policy, attempt, random())
            failed.append(
                Attempt(error_kind=exc.error_kind, status=exc.status, waited_ms=round(wait * 1000))
            )
            if on_retry is not None:
                on_retry(attempt, exc, wait)
            await sleep(wait)


async def _checked_send(
    model: Model, request: EncodedRequest, on_delta: DeltaSink | None
) -> ModelReply:
    try:
        reply = await model.send(request, on_delta=on_delta)
    except ModelCallError:
        raise
    except Exception as exc:
        provider = _provider(model)
        if transient_resource_error(exc) is not None:
            # Out of descriptors, memory or disk: retried like a network error, never held
            # (docs/loop.md#error-classification).
            raise ModelCallError(
                f"the model adapter ran out of a resource: {type(exc).__name__}: {exc}",
                error_kind="resource",
                provider=str(provider),
                retryable=True,
            ) from exc
        raise ModelCallError(
            f"the model adapter raised {type(exc).__name__}: {exc}",
            error_kind="adapter",
            provider=str(provider),
        ) from exc
    if not isinstance(reply, ModelReply):
        raise ModelCallError(
            f"the model adapter returned {type(reply).__name__}, not a ModelReply",
            error_kind="adapter",
            provider=str(_provider(model)),
        )
    return reply


def _provider(model: Model) -> object:
    """The name an adapter's failure is filed under (looked up only when one fails)."""
    return getattr(model, "provider", None) or type(model).__name__
