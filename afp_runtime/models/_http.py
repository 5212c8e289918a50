"""Shared plumbing of the HTTP adapters: one POST, error classification, tolerant JSON reading.

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

``Retry-After`` is read as delay-seconds or as an HTTP-date; the date form is measured against
the response's own ``Date`` header, and is treated as absent when that header is missing.

Provider JSON is read strictly when it is well formed; lone surrogate escapes and bytes that are
not UTF-8 are replaced with U+FFFD instead of failing the reply (docs/loop.md#the-model-port).
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec

from afp_runtime._secrets import hold, redact
from afp_runtime.errors import ConfigError, InvalidValue, ModelCallError, shown
from afp_runtime.messages import (
    MAX_TOKEN_COUNT,
    Message,
    ModelParams,
    ModelReply,
    ModelRequest,
    ToolSchema,
)
from afp_runtime.models.base import EncodedRequest, TokenSink

#: Exceptions of httpx that a request can raise; each is mapped to a ModelCallError.
HTTPX_ERRORS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    httpx.StreamError,
    httpx.InvalidURL,
    httpx.CookieConflict,
)

#: Words of the synthetic answer given to a tool call that no tool message answers.
NO_RESULT_TEXT = (
    "[no result was recorded for this tool call; the call may never have run, "
    "so do not assume its effect]"
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


class ReplyShapeError(Exception):
    """Raised by a decoder when a 2xx body is valid JSON but not the reply shape."""


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


def pair_tool_results(messages: Sequence[Message]) -> list[Message]:
    """Put each call's answer right after the assistant message that made it.

    Both vendors require the answers to follow their calls. An answer found later in the list
    is moved up; a call that nothing answers (an imported dangling call,
    docs/loop.md#checkpoint-validation) gets a synthetic tool message saying no result was recorded.
    Any other message keeps its place.
    """
    answers: dict[str, list[int]] = {}
    for index, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id is not None:
            answers.setdefault(message.tool_call_id, []).append(index)
    used: set[int] = set()
    out: list[Message] = []
    for index, message in enumerate(messages):
        if index in used:
            continue
        out.append(message)
        for call in message.tool_calls:
            found = next((i for i in answers.get(call.id, ()) if i > index and i not in used), None)
            if found is None:
                out.append(
                    Message(
                        role="tool",
                        content=NO_RESULT_TEXT,
                        tool_call_id=call.id,
                        tool_name=call.name,
                    )
                )
            else:
                used.add(found)
                out.append(messages[found])
    return out


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
    detail = f": {shown(scrub(vendor.message))}" if vendor.message else ""
    retry_after = parse_retry_after(
        response.headers.get("retry-after"), response.headers.get("date")
    )

    def error(kind: str, what: str, retryable: bool) -> ModelCallError:
        return ModelCallError(
            f"{provider}: {what} (HTTP {status}){detail}",
            error_kind=kind,
            provider=provider,
            status=status,
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
    location = response.headers.get("location")
    where = f" to {shown(location)}" if location else ""
    return error("bad-request", f"unexpected status{where}; check the base URL", False)


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


def bad_response(provider: str, status: int, reason: str) -> ModelCallError:
    """A 2xx whose body does not decode into a reply: ``bad-response``, retryable."""
    return ModelCallError(
        f"{provider}: the reply body does not decode ({reason})",
        error_kind="bad-response",
        provider=provider,
        status=status,
        retryable=True,
    )


def resolve_api_key(provider: str, api_key: str | None, api_key_env: str | None) -> str | None:
    """The key given, else the one in ``api_key_env`` (read now), else None.

    Raises:
        ConfigError: ``api_key_env`` names a variable that is unset or empty.
    """
    if api_key is not None:
        hold(api_key)  # docs/host.md#secrets-in-errors-and-logs: never shown, even echoed
        return api_key
    if api_key_env is None:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise ConfigError(
            f"{provider}: the environment variable {api_key_env} holding the API key is not set",
            variable=api_key_env,
        )
    hold(key)
    return key


def check_base_url(provider: str, base_url: str) -> str:
    """Validate an http(s) base URL and return it without a trailing slash.

    Raises:
        ConfigError: the URL does not parse or is not http(s) with a host.
    """
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ConfigError(
            f"{provider}: base_url {shown(base_url)} is not a URL", field="base_url"
        ) from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"{provider}: base_url {shown(base_url)} must be an http(s) URL with a host",
            field="base_url",
        )
    if url.password:
        # httpx sends user information as Basic credentials: the password and the header's
        # token are held, so an endpoint that echoes either cannot show it.
        hold(url.password)
        pair = f"{url.username}:{url.password}".encode()
        hold(base64.b64encode(pair).decode("ascii"))
    return base_url.rstrip("/")


def check_timeout(provider: str, timeout_s: float) -> float:
    """A finite positive timeout in seconds; else ConfigError."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise ConfigError(f"{provider}: timeout_s must be a number of seconds", field="timeout_s")
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ConfigError(
            f"{provider}: timeout_s must be positive and finite, not {timeout_s!r}",
            field="timeout_s",
        )
    return float(timeout_s)


def check_max_tokens(provider: str, max_tokens: int | None) -> int | None:
    """None or a positive int; else ConfigError."""
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
        raise ConfigError(
            f"{provider}: max_tokens must be a positive int, not {max_tokens!r}",
            field="max_tokens",
        )
    return max_tokens


def sampling(params: ModelParams, *, stop: str) -> dict[str, Any]:
    """The sampling dials the request's params set, by the vendor's names (``stop``: its key
    for stop sequences)."""
    stops = list(params.stop) if params.stop is not None else None
    dials = {"temperature": params.temperature, "top_p": params.top_p, stop: stops}
    return {key: value for key, value in dials.items() if value is not None}


def tool_fields(tool: ToolSchema, *, schema_key: str) -> dict[str, Any]:
    """A tool as the vendors list it: its name, its input schema under ``schema_key``, and its
    description when it has one."""
    wire: dict[str, Any] = {"name": tool.name, schema_key: tool.input_schema}
    if tool.description:
        wire["description"] = tool.description
    return wire


def token_count(usage: Mapping[str, Any], key: str, where: str = "usage") -> int | None:
    """A non-negative int usage field, None when absent or null.

    Raises:
        ReplyShapeError: the field holds anything else.
    """
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ReplyShapeError(f"{where}.{key} is {shown(value)}, not a token count")
    return value


class HttpModel(ABC):
    """Base of the HTTP adapters: owns or borrows an httpx client and posts encoded bodies.

    Subclasses set ``provider`` and ``encoder`` and implement ``encode``, ``_headers``,
    ``_decode`` and ``_context_length`` (and may override ``_overloaded``).
    """

    provider: str = "http"
    encoder: str | None = None
    deterministic = True

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        timeout_s: float,
        client: httpx.AsyncClient | None,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{self.provider}: model must be a non-empty string", field="model")
        if client is not None and transport is not None:
            raise ConfigError(
                f"{self.provider}: give either client or transport, not both", field="client"
            )
        self.model = model
        self.base_url = check_base_url(self.provider, base_url)
        self.timeout_s = check_timeout(self.provider, timeout_s)
        # An adapter that makes its own client makes it at its first send and drops it at
        # aclose(), so an agent closed by one ``afp.open`` block works in the next one.
        self._borrowed = client
        self._transport = transport
        self._owned: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={redact(self.base_url)!r})"

    @abstractmethod
    def encode(self, request: ModelRequest) -> EncodedRequest:
        """The provider's request body for ``request`` (pure)."""

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The provider's request headers (credentials included)."""

    @abstractmethod
    def _decode(self, data: dict[str, Any]) -> ModelReply:
        """The reply a provider's decoded JSON body holds."""

    @abstractmethod
    def _context_length(self, vendor: VendorError) -> bool:
        """Whether a vendor error says the prompt was too long."""

    def _overloaded(self, vendor: VendorError) -> bool:
        return False

    async def send(
        self, request: EncodedRequest | ModelRequest, *, on_token: TokenSink | None = None
    ) -> ModelReply:
        """POST exactly the encoded body and decode the reply.

        Without streaming, ``on_token`` receives the whole reply text once (when non-empty).

        Raises:
            ModelCallError: classified per docs/loop.md#model-call-errors-and-retry; httpx errors
            are chained as the cause.
        """
        encoded = request if isinstance(request, EncodedRequest) else self.encode(request)
        headers = {
            "accept": "application/json",
            "content-type": encoded.content_type,
            **self._headers(),
        }
        try:
            response = await self._client().post(
                self.base_url + encoded.path, content=encoded.body, headers=headers
            )
        except HTTPX_ERRORS as exc:
            raise error_from_exception(self.provider, exc) from exc
        status = response.status_code
        if not 200 <= status < 300:
            raise error_from_response(
                self.provider,
                response,
                context_length=self._context_length,
                overloaded=self._overloaded,
            )
        try:
            data = load_json(response.content)
        except ValueError as exc:
            raise bad_response(
                self.provider,
                status,
                f"not valid JSON: {exc}; body starts {shown(response.content[:120])}",
            ) from exc
        try:
            if not isinstance(data, dict):
                raise ReplyShapeError(f"the body is {type(data).__name__}, not a JSON object")
            reply = self._decode(data)
        except ReplyShapeError as exc:
            vendor = vendor_error(data)
            said = f"; the body holds an error: {shown(vendor.message)}" if vendor.message else ""
            raise bad_response(self.provider, status, f"{exc}{said}") from exc
        except InvalidValue as exc:
            raise bad_response(self.provider, status, exc.message) from exc
        if on_token is not None and reply.content:
            on_token(reply.content)
        return reply

    def _client(self) -> httpx.AsyncClient:
        if self._borrowed is not None:
            return self._borrowed
        if self._owned is None:
            self._owned = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_s), transport=self._transport
            )
        return self._owned

    async def aclose(self) -> None:
        """Close the client if this adapter created it (a later send makes a new one); a
        borrowed client is left open."""
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.aclose()
