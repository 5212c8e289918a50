"""Shared plumbing of the HTTP adapters: one POST, the options every adapter checks, the
message order both vendors require. What a provider answered is read in ``_http_reading``.
"""

from __future__ import annotations

import base64
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from afp_runtime._secrets import hold, redact
from afp_runtime.errors import ConfigError, InvalidValue, shown
from afp_runtime.messages import (
    MAX_TOKEN_COUNT,
    Message,
    ModelParams,
    ModelReply,
    ModelRequest,
    ToolSchema,
)
from afp_runtime.models._http_reading import (
    HTTPX_ERRORS,
    VendorError,
    bad_response,
    error_from_event,
    error_from_exception,
    error_from_response,
    load_json,
    stream_cut_short,
    vendor_error,
)
from afp_runtime.models._sse import (
    Assembler,
    ErrorEvent,
    EventShapeError,
    is_event_stream,
    read_events,
)
from afp_runtime.models.base import DeltaSink, EncodedRequest, ReplyDelta

#: Words of the synthetic answer given to a tool call that no tool message answers.
NO_RESULT_TEXT = (
    "[no result was recorded for this tool call; the call may never have run, "
    "so do not assume its effect]"
)


class ReplyShapeError(Exception):
    """Raised by a decoder when a 2xx body is valid JSON but not the reply shape."""


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
    ``_decode``, ``_assembler`` and ``_context_length`` (and may override ``_overloaded``).
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
        stream: bool = False,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{self.provider}: model must be a non-empty string", field="model")
        if client is not None and transport is not None:
            raise ConfigError(
                f"{self.provider}: give either client or transport, not both", field="client"
            )
        if not isinstance(stream, bool):
            raise ConfigError(f"{self.provider}: stream must be true or false", field="stream")
        self.model = model
        #: Whether requests ask for a streamed reply (docs/loop.md#streaming-replies).
        self.stream = stream
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
    def _assembler(self, on_delta: DeltaSink | None) -> Assembler:
        """A fresh assembler of the provider's streamed reply (``_sse``)."""

    @abstractmethod
    def _context_length(self, vendor: VendorError) -> bool:
        """Whether a vendor error says the prompt was too long."""

    def _overloaded(self, vendor: VendorError) -> bool:
        return False

    async def send(
        self, request: EncodedRequest | ModelRequest, *, on_delta: DeltaSink | None = None
    ) -> ModelReply:
        """POST exactly the encoded body and decode the reply.

        A ``text/event-stream`` answer is read event by event, each fragment going to
        ``on_delta`` as it arrives (docs/loop.md#streaming-replies); any other answer is read
        whole, and ``on_delta`` receives the whole reply text as one fragment (when non-empty).

        Raises:
            ModelCallError: classified per docs/loop.md#model-call-errors-and-retry; httpx errors
            are chained as the cause.
        """
        encoded = request if isinstance(request, EncodedRequest) else self.encode(request)
        headers = {
            "accept": "text/event-stream" if self.stream else "application/json",
            "content-type": encoded.content_type,
            **self._headers(),
        }
        try:
            async with self._client().stream(
                "POST", self.base_url + encoded.path, content=encoded.body, headers=headers
            ) as response:
                if 200 <= response.status_code < 300 and is_event_stream(response):
                    return await self._read_stream(response, on_delta)
                await response.aread()
        except HTTPX_ERRORS as exc:
            raise error_from_exception(self.provider, exc) from exc
        reply = self._reply_from(response)
        if on_delta is not None and reply.content:
            on_delta(ReplyDelta(text=reply.content))
        return reply

    def _reply_from(self, response: httpx.Response) -> ModelReply:
        """The reply a whole (read) response holds; raises ModelCallError."""
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
        if not isinstance(data, dict):
            raise bad_response(
                self.provider, status, f"the body is {type(data).__name__}, not a JSON object"
            )
        return self._decoded(status, data)

    def _decoded(self, status: int, data: dict[str, Any]) -> ModelReply:
        try:
            return self._decode(data)
        except ReplyShapeError as exc:
            vendor = vendor_error(data)
            said = f"; the body holds an error: {shown(vendor.message)}" if vendor.message else ""
            raise bad_response(self.provider, status, f"{exc}{said}") from exc
        except InvalidValue as exc:
            raise bad_response(self.provider, status, exc.message) from exc

    async def _read_stream(
        self, response: httpx.Response, on_delta: DeltaSink | None
    ) -> ModelReply:
        """Assemble a streamed reply; the caller classifies httpx errors (a stall, a cut)."""
        status = response.status_code
        assembler = self._assembler(on_delta)
        try:
            finished = await read_events(response, assembler)
        except EventShapeError as exc:
            raise bad_response(self.provider, status, f"in the event stream, {exc}") from exc
        except ErrorEvent as exc:
            raise error_from_event(
                self.provider,
                exc.vendor,
                context_length=self._context_length,
                overloaded=self._overloaded,
            ) from exc
        if not finished:
            raise stream_cut_short(self.provider, status, assembler.terminal)
        return self._decoded(status, assembler.body())

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
