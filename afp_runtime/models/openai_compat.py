"""The OpenAI-compatible adapter: chat completions at any base URL.

It serves OpenAI itself and the servers that speak its dialect (Ollama, vLLM, llama.cpp,
e.g. ``http://localhost:11434/v1``). The encoder ``openai-chat/1`` writes the body as canonical
JSON (keys sorted at every depth), so the same request and settings always give the same bytes.

Choices of this adapter, beyond the Model port (docs/loop.md#the-model-port):

- In-history ``system`` messages stay where they are, as ``system`` messages.
- An assistant message with calls and no text sends ``content: null``, as OpenAI itself does.
- Answers are moved right after their calls and a dangling call gets a synthetic answer
  (``_http.pair_tool_results``).
- ``tool_choice`` is sent only when tools are; a forced tool wins over ``params.tool_choice``.
- ``params.reasoning_budget`` has no chat-completions field and is not sent.
- ``extra_body`` keys fill the body under ours: request params and ``max_tokens`` win. Keys that
  would change the body's meaning (``model``, ``messages``, ``tools``, ``tool_choice``,
  ``stream``) are refused at construction; with ``stream`` on, our ``stream_options`` wins over
  one in ``extra_body``.
- A reply tool call without an id gets a fresh ``call_<hex>`` id; ``arguments`` given as an
  object (some local servers) is taken as is; absent or null arguments mean ``{}``.
- An empty reply text with a ``refusal`` string takes the refusal as its text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

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
from afp_runtime.models._http_reading import VendorError, load_json, scrub
from afp_runtime.models._openai_stream import OpenAIStream, fresh_call_id
from afp_runtime.models.base import DeltaSink, EncodedRequest

_PROVIDER = "openai-compatible"
_RESERVED = frozenset({"model", "messages", "tools", "tool_choice", "stream"})
_STOP: dict[str, StopReason] = {"stop": "end", "tool_calls": "tool-calls", "length": "max-tokens"}


class OpenAICompatModel(HttpModel):
    """A chat-completions endpoint (docs/loop.md#the-model-port).

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1``; ``/chat/completions`` is
            appended.
        model: the model id sent when a request names none.
        api_key: the bearer key; when None, the key is read from ``api_key_env`` (if given)
            at construction. With neither, no ``Authorization`` header is sent (local servers).
        api_key_env: the environment variable holding the key.
        max_tokens: ``max_tokens`` sent when the request's params set none.
        timeout_s: connect, read, write and pool timeout of an owned client, in seconds.
        extra_body: extra top-level body keys (e.g. ``{"seed": 7}``), copied at construction.
        stream: ask for a streamed reply (``"stream": true`` with
            ``stream_options.include_usage``; encoder ``openai-chat-stream/1``), read as its
            chunks arrive (docs/loop.md#streaming-replies).
        client: an httpx client to borrow (never closed by ``aclose``).
        transport: a transport for the client this adapter creates.

    Raises:
        ConfigError: a bad URL, timeout or max_tokens, a missing key variable, or an
            ``extra_body`` that is not JSON or sets a reserved key.
    """

    provider = _PROVIDER
    encoder: str | None = "openai-chat/1"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        max_tokens: int | None = None,
        timeout_s: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        stream: bool = False,
    ) -> None:
        self._api_key = resolve_api_key(_PROVIDER, api_key, api_key_env)
        self.max_tokens = check_max_tokens(_PROVIDER, max_tokens)
        self.extra_body = _checked_extra(extra_body)
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
            self.encoder = "openai-chat-stream/1"

    def settings(self) -> Mapping[str, Any]:
        """Body-shaping settings: the default ``maxTokens``, the ``extraBody`` and ``stream``
        (only when on, so the settings of an unstreamed adapter are as they always were)."""
        out: dict[str, Any] = {}
        if self.stream:
            out["stream"] = True
        if self.max_tokens is not None:
            out["maxTokens"] = self.max_tokens
        if self.extra_body:
            out["extraBody"] = self.extra_body
        return out

    def encode(self, request: ModelRequest) -> EncodedRequest:
        """The chat-completions body for ``request`` as canonical JSON bytes."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(_wire_message(m) for m in pair_tool_results(request.messages))
        body: dict[str, Any] = dict(self.extra_body)
        body["model"] = request.model or self.model
        body["messages"] = messages
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": tool_fields(tool, schema_key="parameters")}
                for tool in request.tools
            ]
            choice = _tool_choice(request)
            if choice is not None:
                body["tool_choice"] = choice
        params = request.params
        body.update(sampling(params, stop="stop"))
        max_tokens = params.max_tokens if params.max_tokens is not None else self.max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return EncodedRequest(body=canonical_json(body), path="/chat/completions")

    def _headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"authorization": f"Bearer {self._api_key}"}

    def _assembler(self, on_delta: DeltaSink | None) -> OpenAIStream:
        return OpenAIStream(on_delta)

    def _context_length(self, vendor: VendorError) -> bool:
        text = vendor.message.lower()
        return (
            vendor.code == "context_length_exceeded"
            or vendor.type == "exceed_context_size_error"
            or "maximum context length" in text
            or "context_length_exceeded" in text
        )

    def _decode(self, data: dict[str, Any]) -> ModelReply:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ReplyShapeError("the body has no choices[0]")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ReplyShapeError("choices[0].message is missing or not an object")
        content = _reply_text(message.get("content"))
        refusal = message.get("refusal")
        if not content and isinstance(refusal, str):
            content = scrub(refusal)
        raw_calls = message.get("tool_calls")
        if raw_calls is None:
            raw_calls = []
        if not isinstance(raw_calls, list):
            raise ReplyShapeError("choices[0].message.tool_calls is not a list")
        calls = tuple(_reply_call(i, raw) for i, raw in enumerate(raw_calls))
        finish = choices[0].get("finish_reason")
        stop: StopReason = _STOP.get(finish, "other") if isinstance(finish, str) else "other"
        return ModelReply(
            content=content,
            tool_calls=calls,
            usage=_usage(data.get("usage")),
            stop_reason=stop,
        )


def _checked_extra(extra_body: Mapping[str, Any] | None) -> dict[str, Any]:
    if not extra_body:
        return {}
    reserved = sorted(_RESERVED.intersection(extra_body))
    if reserved:
        raise ConfigError(
            f"{_PROVIDER}: extra_body may not set {', '.join(reserved)}; the adapter writes them",
            field="extra_body",
        )
    try:
        # A round trip through JSON copies the mapping and proves it encodes.
        copied = msgspec.json.decode(canonical_json(dict(extra_body)))
    except (msgspec.EncodeError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{_PROVIDER}: extra_body is not JSON-encodable: {exc}", field="extra_body"
        ) from exc
    return copied


def _tool_choice(request: ModelRequest) -> Any:
    if request.forced is not None:
        return {"type": "function", "function": {"name": request.forced}}
    choice = request.params.tool_choice
    if choice is None:
        return None
    if choice.type == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.type


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _arguments(call: ToolCall) -> str:
    if call.args_text is not None:
        return call.args_text
    return canonical_json(call.args).decode("utf-8")


def _reply_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return scrub(content)
    if isinstance(content, list):
        # Some servers answer with content parts; the text parts make the reply text.
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ]
        return scrub("".join(texts))
    raise ReplyShapeError(f"choices[0].message.content is {shown(content)}")


def _reply_call(index: int, raw: Any) -> ToolCall:
    where = f"choices[0].message.tool_calls[{index}]"
    if not isinstance(raw, dict):
        raise ReplyShapeError(f"{where} is not an object")
    function = raw.get("function")
    if not isinstance(function, dict):
        raise ReplyShapeError(f"{where}.function is missing")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ReplyShapeError(f"{where}.function.name is missing")
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = fresh_call_id()
    arguments = function.get("arguments")
    if arguments is None or isinstance(arguments, dict):
        return ToolCall(id=scrub(call_id), name=scrub(name), args=arguments or {})
    if not isinstance(arguments, str):
        raise ReplyShapeError(f"{where}.function.arguments is {shown(arguments)}")
    try:
        parsed = load_json(arguments)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolCall(id=scrub(call_id), name=scrub(name), args=parsed)
    return ToolCall(id=scrub(call_id), name=scrub(name), args={}, args_text=scrub(arguments))


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ReplyShapeError(f"usage is {shown(raw)}, not an object")
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    return Usage(
        input=token_count(raw, "prompt_tokens") or 0,
        output=token_count(raw, "completion_tokens") or 0,
        cache_read=(
            token_count(prompt, "cached_tokens", "usage.prompt_tokens_details")
            if isinstance(prompt, dict)
            else None
        ),
        reasoning=(
            token_count(completion, "reasoning_tokens", "usage.completion_tokens_details")
            if isinstance(completion, dict)
            else None
        ),
    )
