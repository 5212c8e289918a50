"""The Anthropic adapter: the Messages API (``POST /v1/messages``).

The encoder ``anthropic-messages/1`` writes the body as canonical JSON (keys sorted at every
depth), so the same request and settings always give the same bytes.

Choices of this adapter, beyond the Model port (docs/loop.md#the-model-port):

- ``system`` messages inside the history have no place in Anthropic's message list; their text
  is appended, in order, to the top-level ``system`` after the request's system text, separated
  by a blank line.
- Every message is sent as a list of content blocks. Empty text blocks are left out (the API
  refuses them), and a message left with no block is dropped before merging.
- Tool messages become ``tool_result`` blocks in a ``user`` message; answers are moved right after
  their calls and a dangling call gets a synthetic answer (``_http.pair_tool_results``).
  Consecutive messages of one role are merged into one.
- A call whose arguments never parsed (``argsText``) is sent with ``input: {}``: the API takes
  only an object.
- ``tool_choice`` is sent only when tools are; ``required`` maps to ``{"type": "any"}``.
- ``params.reasoning_budget`` is not sent: extended thinking needs its thinking blocks sent back,
  which a Message cannot carry.
- ``Usage.input`` counts every prompt token: ``input_tokens`` plus the cache reads and writes
  (Anthropic reports those apart), so ``cache_read`` is a part of ``input`` as with OpenAI.
- Reply text is the text blocks joined as they come; thinking blocks are not kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from afp_runtime.errors import ConfigError, shown
from afp_runtime.messages import (
    Message,
    ModelReply,
    ModelRequest,
    StopReason,
    ToolCall,
    Usage,
    canonical_json,
)
from afp_runtime.models._anthropic_stream import AnthropicStream
from afp_runtime.models._http import (
    HttpModel,
    ReplyShapeError,
    check_max_tokens,
    pair_tool_results,
    resolve_api_key,
    sampling,
    token_count,
    tool_fields,
)
from afp_runtime.models._http_reading import VendorError, scrub
from afp_runtime.models.base import DeltaSink, EncodedRequest

_PROVIDER = "anthropic"
_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "stop_sequence": "stop-sequence",
}


class AnthropicModel(HttpModel):
    """An Anthropic Messages endpoint (docs/loop.md#the-model-port).

    Args:
        model: the model id sent when a request names none.
        api_key: the key sent as ``x-api-key``; when None it is read from ``api_key_env`` at
            construction. With neither (``api_key_env=None``), no key header is sent.
        api_key_env: the environment variable holding the key.
        base_url: the API root; ``/v1/messages`` is appended.
        max_tokens: ``max_tokens`` sent when the request's params set none (the API needs one).
        timeout_s: connect, read, write and pool timeout of an owned client, in seconds.
        anthropic_version: the ``anthropic-version`` header.
        stream: ask for a streamed reply (``"stream": true``; encoder
            ``anthropic-messages-stream/1``), read as its events arrive
            (docs/loop.md#streaming-replies).
        client: an httpx client to borrow (never closed by ``aclose``).
        transport: a transport for the client this adapter creates.

    Raises:
        ConfigError: a bad URL, timeout or max_tokens, or a missing key variable.
    """

    provider = _PROVIDER
    encoder: str | None = "anthropic-messages/1"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        base_url: str = "https://api.anthropic.com",
        max_tokens: int = 4096,
        timeout_s: float = 120.0,
        anthropic_version: str = "2023-06-01",
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        stream: bool = False,
    ) -> None:
        self._api_key = resolve_api_key(_PROVIDER, api_key, api_key_env)
        checked = check_max_tokens(_PROVIDER, max_tokens)
        if checked is None:
            raise ConfigError(f"{_PROVIDER}: max_tokens is required", field="max_tokens")
        self.max_tokens = checked
        if not isinstance(anthropic_version, str) or not anthropic_version:
            raise ConfigError(
                f"{_PROVIDER}: anthropic_version must be a non-empty string",
                field="anthropic_version",
            )
        self.anthropic_version = anthropic_version
        super().__init__(
            model=model,
            base_url=base_url,
            timeout_s=timeout_s,
            client=client,
            transport=transport,
            stream=stream,
        )
        if self.stream:
            # Another body shape, another encoder: a conformance check re-encodes with it.
            self.encoder = "anthropic-messages-stream/1"

    def settings(self) -> Mapping[str, Any]:
        """Body-shaping settings: the default ``maxTokens``, the ``anthropicVersion`` and
        ``stream`` (only when on, so the settings of an unstreamed adapter are as they always
        were)."""
        out: dict[str, Any] = {
            "anthropicVersion": self.anthropic_version,
            "maxTokens": self.max_tokens,
        }
        if self.stream:
            out["stream"] = True
        return out

    def encode(self, request: ModelRequest) -> EncodedRequest:
        """The Messages body for ``request`` as canonical JSON bytes."""
        system = [request.system] if request.system else []
        turns: list[dict[str, Any]] = []
        for message in pair_tool_results(request.messages):
            if message.role == "system":
                if message.content:
                    system.append(message.content)
                continue
            role = "assistant" if message.role == "assistant" else "user"
            blocks = _blocks(message)
            if not blocks:
                continue
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        params = request.params
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": turns,
            "max_tokens": params.max_tokens if params.max_tokens is not None else self.max_tokens,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.tools:
            body["tools"] = [tool_fields(tool, schema_key="input_schema") for tool in request.tools]
            choice = _tool_choice(request)
            if choice is not None:
                body["tool_choice"] = choice
        body.update(sampling(params, stop="stop_sequences"))
        if self.stream:
            body["stream"] = True
        return EncodedRequest(body=canonical_json(body), path="/v1/messages")

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self._api_key is not None:
            headers["x-api-key"] = self._api_key
        return headers

    def _assembler(self, on_delta: DeltaSink | None) -> AnthropicStream:
        return AnthropicStream(on_delta)

    def _context_length(self, vendor: VendorError) -> bool:
        text = vendor.message.lower()
        return vendor.type == "invalid_request_error" and (
            "prompt is too long" in text or "exceed context limit" in text
        )

    def _overloaded(self, vendor: VendorError) -> bool:
        return vendor.type == "overloaded_error"

    def _decode(self, data: dict[str, Any]) -> ModelReply:
        if data.get("type") == "error":
            raise ReplyShapeError("the body is an error, not a message")
        content = data.get("content")
        if not isinstance(content, list):
            raise ReplyShapeError("the body has no content list")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                raise ReplyShapeError(f"content[{index}] is not an object")
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise ReplyShapeError(f"content[{index}].text is not a string")
                texts.append(text)
            elif kind == "tool_use":
                calls.append(_reply_call(index, block))
        stop = data.get("stop_reason")
        return ModelReply(
            content=scrub("".join(texts)),
            tool_calls=tuple(calls),
            usage=_usage(data.get("usage")),
            stop_reason=_STOP.get(stop, "other") if isinstance(stop, str) else "other",
        )


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.content:
            block["content"] = message.content
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
        for call in message.tool_calls
    )
    return blocks


def _tool_choice(request: ModelRequest) -> dict[str, Any] | None:
    if request.forced is not None:
        return {"type": "tool", "name": request.forced}
    choice = request.params.tool_choice
    if choice is None:
        return None
    if choice.type == "tool":
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice.type == "required" else choice.type}


def _reply_call(index: int, block: Mapping[str, Any]) -> ToolCall:
    call_id = block.get("id")
    name = block.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise ReplyShapeError(f"content[{index}].id is missing")
    if not isinstance(name, str) or not name:
        raise ReplyShapeError(f"content[{index}].name is missing")
    partial = block.get("partial_json")
    if "input" not in block and isinstance(partial, str):
        # A streamed input whose JSON pieces do not parse (_anthropic_stream): kept as text.
        return ToolCall(id=scrub(call_id), name=scrub(name), args={}, args_text=scrub(partial))
    raw = block.get("input")
    if raw is None or isinstance(raw, dict):
        return ToolCall(id=scrub(call_id), name=scrub(name), args=raw or {})
    # Not an object: keep what the model produced, as with unparsable OpenAI arguments.
    text = canonical_json(raw).decode("utf-8")
    return ToolCall(id=scrub(call_id), name=scrub(name), args={}, args_text=text)


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ReplyShapeError(f"usage is {shown(raw)}, not an object")
    cache_read = token_count(raw, "cache_read_input_tokens")
    cache_write = token_count(raw, "cache_creation_input_tokens")
    return Usage(
        input=(token_count(raw, "input_tokens") or 0) + (cache_read or 0) + (cache_write or 0),
        output=token_count(raw, "output_tokens") or 0,
        cache_read=cache_read,
        cache_write=cache_write,
    )
