"""Reading what an HTTP provider answered: error classification, ``Retry-After``, tolerant
JSON.

Classification follows docs/loop.md#model-call-errors-and-retry. A status outside 2xx becomes a
``ModelCallError``:

- a context-window overflow the adapter recognises in the vendor's error body:
  ``context-length``, not retryable (checked before the other 4xx rules);
- 401, 403: ``auth``; any other 4xx (408 included): ``bad-request``; neither retryable;
- 429: ``rate-limited``; 5xx (529 included): ``server``; both retryable;
- 1xx and 3xx, which a non-redirecting client can still see: ``bad-request``, not retryable.
  Our choice (docs/loop.md#error-classification): a redirect means the base URL is wrong, so a
  retry cannot help.

Every httpx exception becomes a ``ModelCallError`` with the cause chained. Transport failures
(timeouts, resets, refused connections, TLS errors, a body cut short) are ``network`` and
retryable; a body httpx cannot decode (bad gzip) is ``bad-response``; a redirect loop, an
invalid URL or a cookie conflict is ``bad-request``; stream misuse is ``network``. A 2xx whose body
is not the reply shape is ``bad-response``, retryable.

Inside a streamed 2xx reply (docs/loop.md#streaming-replies), an error event is classified as
the same error in a JSON body would be (``error_from_event``), and a stream that ends before its
terminal event is ``network``, retryable, like a body cut short (``stream_cut_short``).

``Retry-After`` is read as delay-seconds or as an HTTP-date; the date form is measured against
the response's own ``Date`` header, and is treated as absent when that header is missing.

Provider JSON is read strictly when it is well formed; lone surrogate escapes and bytes that are
not UTF-8 are replaced with U+FFFD instead of failing the reply (docs/loop.md#the-model-port).
"""

from __future__ import annotations

import email.utils
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec

from afp_runtime.errors import ModelCallError, shown

#: Exceptions of httpx that a request can raise; each is mapped to a ModelCallError.
HTTPX_ERRORS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    httpx.StreamError,
    httpx.InvalidURL,
    httpx.CookieConflict,
)

# How an httpx exception is classified, first match wins: kind, what went wrong, retryable.
_EXCEPTION_KINDS: tuple[tuple[Any, str, str, bool], ...] = (
    (httpx.TimeoutException, "network", "the request timed out", True),
    (httpx.RemoteProtocolError, "network", "the connection broke or the body was cut short", True),
    (httpx.TransportError | httpx.StreamError, "network", "the request failed in transport", True),
    (httpx.DecodingError, "bad-response", "the response body could not be decoded", True),
    (httpx.TooManyRedirects, "bad-request", "too many redirects; check the base URL", False),
    (
        httpx.InvalidURL | httpx.CookieConflict,
        "bad-request",
        "the request could not be built",
        False,
    ),
)

_SURROGATE = re.compile("[\ud800-\udfff]")
_DELAY_SECONDS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*")


class VendorError(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of a vendor error body that classification reads (all optional)."""

    message: str = ""
    type: str = ""
    code: str = ""


def scrub(text: str) -> str:
    """Replace every surrogate code point with U+FFFD, so the text encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def _scrub_tree(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k): _scrub_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_tree(v) for v in value]
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def load_json(data: bytes | str) -> Any:
    """Decode provider JSON, replacing lone surrogates and invalid UTF-8 with U+FFFD.

    The strict msgspec decoder reads well-formed input; only when it refuses do we retry with
    the standard library, which accepts ``\\ud800``-style escapes, and scrub the result.
    NaN, infinities and out-of-range numbers are refused either way.

    Raises:
        ValueError: the data is not JSON (``msgspec.DecodeError`` is a ValueError).
    """
    try:
        try:
            return msgspec.json.decode(data)
        except (msgspec.DecodeError, UnicodeError):
            pass
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        return _scrub_tree(value)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def parse_retry_after(value: str | None, date: str | None) -> float | None:
    """Seconds a ``Retry-After`` value asks us to wait, or None when absent or unreadable.

    Args:
        value: the header value: delay-seconds, or an HTTP-date.
        date: the response's ``Date`` header, the reference for the HTTP-date form.
    """
    if value is None:
        return None
    match = _DELAY_SECONDS.fullmatch(value)
    if match:
        return float(match.group(1))
    if date is None:
        return None
    retry_at = _http_date(value)
    now = _http_date(date)
    if retry_at is None or now is None:
        return None
    return max(0.0, (retry_at - now).total_seconds())


def _http_date(text: str) -> datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def vendor_error(data: Any) -> VendorError:
    """Read ``{"error": {...}}``, ``{"error": "..."}`` or a top-level ``message`` body."""
    if not isinstance(data, dict):
        return VendorError()
    inner = data.get("error")
    if isinstance(inner, str):
        return VendorError(message=inner)
    source = inner if isinstance(inner, dict) else data

    def text(key: str) -> str:
        item = source.get(key)
        return item if isinstance(item, str) else "" if item is None else str(item)

    return VendorError(message=text("message"), type=text("type"), code=text("code"))


def error_from_response(
    provider: str,
    response: httpx.Response,
    *,
    context_length: Callable[[VendorError], bool],
    overloaded: Callable[[VendorError], bool] = lambda _: False,
) -> ModelCallError:
    """Classify a response whose status is not 2xx (docs/loop.md#model-call-errors-and-retry).

    Args:
        provider: names the provider in the message.
        response: the read response.
        context_length: recognises the vendor's context-window overflow.
        overloaded: recognises a vendor "overloaded" error whatever its status.
    """
    status = response.status_code
    try:
        vendor = vendor_error(load_json(response.content))
    except ValueError:
        vendor = VendorError(message=response.content[:200].decode("utf-8", errors="replace"))
    retry_after = parse_retry_after(
        response.headers.get("retry-after"), response.headers.get("date")
    )
    location = response.headers.get("location")
    where = f" to {shown(location)}" if location else ""
    return _classified(
        provider,
        status,
        vendor,
        f"HTTP {status}",
        retry_after=retry_after,
        elsewhere=f"unexpected status{where}; check the base URL",
        context_length=context_length,
        overloaded=overloaded,
    )


def error_from_event(
    provider: str,
    vendor: VendorError,
    *,
    context_length: Callable[[VendorError], bool],
    overloaded: Callable[[VendorError], bool] = lambda _: False,
) -> ModelCallError:
    """Classify an error event inside a 2xx stream as the same error in a JSON body would be.

    The event has no status of its own: the vendor's error type stands for the status the
    provider gives that error in a body (``_EVENT_STATUS``); an unknown type counts as a
    server failure (the provider accepted the request and then failed), retryable. The error
    carries no ``status``: the HTTP status was a success.
    """
    status = _EVENT_STATUS.get(vendor.type) or _EVENT_STATUS.get(vendor.code) or 500
    return _classified(
        provider,
        status,
        vendor,
        f"error event {shown(vendor.type or vendor.code or 'untyped')} mid-stream",
        retry_after=None,
        elsewhere="unexpected error event",
        context_length=context_length,
        overloaded=overloaded,
        record_status=False,
    )


# The status each vendor error type comes with in a JSON body (Anthropic's and OpenAI's
# documented types), read for an error event that arrives inside a stream.
_EVENT_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "context_length_exceeded": 400,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
}


def _classified(
    provider: str,
    status: int,
    vendor: VendorError,
    said: str,
    *,
    retry_after: float | None,
    elsewhere: str,
    context_length: Callable[[VendorError], bool],
    overloaded: Callable[[VendorError], bool],
    record_status: bool = True,
) -> ModelCallError:
    detail = f": {shown(scrub(vendor.message))}" if vendor.message else ""

    def error(kind: str, what: str, retryable: bool) -> ModelCallError:
        return ModelCallError(
            f"{provider}: {what} ({said}){detail}",
            error_kind=kind,
            provider=provider,
            status=status if record_status else None,
            retryable=retryable,
            retry_after_s=retry_after if retryable else None,
        )

    if 400 <= status < 500 and status != 429 and context_length(vendor):
        return error("context-length", "the prompt does not fit the model's context window", False)
    if status == 429:
        return error("rate-limited", "rate limited", True)
    if status >= 500 or overloaded(vendor):
        return error("server", "the provider failed or is overloaded", True)
    if status in (401, 403):
        return error("auth", "the credentials were refused", False)
    if 400 <= status < 500:
        return error("bad-request", "the request was refused", False)
    return error("bad-request", elsewhere, False)


def error_from_exception(provider: str, exc: Exception) -> ModelCallError:
    """Map one httpx exception to a ModelCallError; the caller chains ``exc`` as the cause."""
    name = type(exc).__name__
    reason = f"{name}: {exc}" if str(exc) else name
    if isinstance(exc, httpx.HTTPStatusError):
        return error_from_response(provider, exc.response, context_length=lambda _: False)
    kind, what, retryable = next(
        ((k, w, r) for types, k, w, r in _EXCEPTION_KINDS if isinstance(exc, types)),
        ("network", "the request failed", True),
    )
    return ModelCallError(
        f"{provider}: {what} ({shown(reason)})",
        error_kind=kind,
        provider=provider,
        retryable=retryable,
    )


def stream_cut_short(provider: str, status: int, terminal: str) -> ModelCallError:
    """A stream that ended cleanly before its terminal event: ``network``, retryable, as a
    body cut short is (docs/loop.md#streaming-replies)."""
    return ModelCallError(
        f"{provider}: the reply stream ended before its terminal event {terminal}",
        error_kind="network",
        provider=provider,
        status=status,
        retryable=True,
    )


def bad_response(provider: str, status: int, reason: str) -> ModelCallError:
    """A 2xx whose body does not decode into a reply: ``bad-response``, retryable."""
    return ModelCallError(
        f"{provider}: the reply body does not decode ({reason})",
        error_kind="bad-response",
        provider=provider,
        status=status,
        retryable=True,
    )
