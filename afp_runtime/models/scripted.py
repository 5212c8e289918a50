"""The scripted model: replies from a list or a function, for tests, demos and scenarios.

Its encoder ``scripted/1`` is the canonical JSON of the request, so what it "sent" is exactly
what a receipt digests. It records every request it received, in order. A ``StreamedReply``
entry hands its reply to ``on_delta`` in fragments cut as it says (docs/loop.md#streaming-replies).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import ModelCallError
from afp_runtime.messages import ModelReply, ModelRequest, canonical_json
from afp_runtime.models.base import DeltaSink, EncodedRequest, ReplyDelta


class StreamedReply(msgspec.Struct, frozen=True, kw_only=True):
    """A scripted reply sent in fragments, as a streaming provider would.

    Attributes:
        reply: the reply ``send`` returns, exactly as a plain entry would.
        sizes: fragment lengths in characters, used in turn and the last one repeated; the text
            is cut first, then each tool call's argument text (its ``argsText``, else the
            compact JSON of its ``args``) from the start of the list again. A call's first
            fragment carries its id and name (a call with no argument text still gets one).
        pause: awaited before each fragment with its 0-based index, e.g. to let a test kill the
            process mid-stream or raise where a scenario crashes; None: no pause.
    """

    reply: ModelReply
    sizes: tuple[int, ...] = (1,)
    pause: Callable[[int], Awaitable[None]] | None = None

    def __post_init__(self) -> None:
        if not self.sizes or any(size < 1 for size in self.sizes):
            raise ValueError(f"sizes must be a non-empty list of lengths >= 1, not {self.sizes}")

    def fragments(self) -> list[ReplyDelta]:
        """The reply cut into fragments, in the order they are sent."""
        out = [ReplyDelta(text=piece) for piece in _cut(self.reply.content, self.sizes)]
        for number, call in enumerate(self.reply.tool_calls):
            text = call.args_text if call.args_text is not None else _args_text(call.args)
            pieces = _cut(text, self.sizes) or [""]
            out.append(
                ReplyDelta(
                    tool_call_index=number,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    arguments=pieces[0],
                )
            )
            out.extend(ReplyDelta(tool_call_index=number, arguments=p) for p in pieces[1:])
        return out


def _cut(text: str, sizes: tuple[int, ...]) -> list[str]:
    pieces: list[str] = []
    start = 0
    while start < len(text):
        size = sizes[min(len(pieces), len(sizes) - 1)]
        pieces.append(text[start : start + size])
        start += size
    return pieces


def _args_text(args: Mapping[str, Any]) -> str:
    return msgspec.json.encode(args).decode("utf-8")


ScriptEntry = ModelReply | ModelCallError | StreamedReply
ScriptHandler = Callable[[ModelRequest, int], "ScriptEntry | Awaitable[ScriptEntry]"]

_request_decoder = msgspec.json.Decoder(ModelRequest)


class ScriptedModel:
    """A model whose replies come from a script.

    Args:
        replies: a sequence of replies (a ``ModelCallError`` entry is raised for that call, a
            ``StreamedReply`` is sent in fragments), or
            a function ``(request, call_number) -> reply`` (sync or async); call numbers are
            1-based over this model's life.
        model: the model id reported on receipts.
        keep: how many of the latest requests (and bodies) ``requests`` and ``bodies`` keep;
            bounded so a long-running scripted agent does not grow without limit.

    Raises (from ``send``):
        ModelCallError: with ``error_kind='script-exhausted'`` naming the call number when a
            list of replies runs out (not retryable), or the scripted error of that call.
    """

    provider = "scripted"
    encoder: str | None = "scripted/1"
    deterministic = True

    def __init__(
        self,
        replies: Sequence[ScriptEntry] | ScriptHandler,
        *,
        model: str = "scripted",
        keep: int = 1_000,
    ) -> None:
        self.model = model
        self._handler: ScriptHandler | None = replies if callable(replies) else None
        self._replies: list[ScriptEntry] = [] if callable(replies) else list(replies)
        self.calls = 0
        self.requests: deque[ModelRequest] = deque(maxlen=keep)
        self.bodies: deque[bytes] = deque(maxlen=keep)
        self.closed = 0
        self._last_encoded: tuple[bytes, ModelRequest] | None = None

    def settings(self) -> Mapping[str, Any]:
        return {}

    def encode(self, request: ModelRequest) -> EncodedRequest:
        encoded = EncodedRequest(body=canonical_json(request), path="/scripted")
        # encode is pure, so the request behind the bytes just made need not be decoded again.
        self._last_encoded = (encoded.body, request)
        return encoded

    async def send(
        self, request: EncodedRequest | ModelRequest, *, on_delta: DeltaSink | None = None
    ) -> ModelReply:
        encoded = request if isinstance(request, EncodedRequest) else self.encode(request)
        last = self._last_encoded
        if last is not None and last[0] is encoded.body:
            decoded = last[1]
        else:
            decoded = _request_decoder.decode(encoded.body)
        self.calls += 1
        self.bodies.append(encoded.body)
        self.requests.append(decoded)
        entry = await self._next(decoded, self.calls)
        if isinstance(entry, ModelCallError):
            raise entry
        if isinstance(entry, StreamedReply):
            return await _stream(entry, on_delta)
        if on_delta is not None and isinstance(entry, ModelReply) and entry.content:
            on_delta(ReplyDelta(text=entry.content))
        return entry

    async def _next(self, request: ModelRequest, number: int) -> ScriptEntry:
        if self._handler is not None:
            result = self._handler(request, number)
            if inspect.isawaitable(result):
                result = await result
            return result
        if number > len(self._replies):
            raise ModelCallError(
                f"the scripted model has no reply left for call {number} "
                f"(the script holds {len(self._replies)})",
                error_kind="script-exhausted",
                provider=self.provider,
                call=number,
            )
        return self._replies[number - 1]

    async def aclose(self) -> None:
        self.closed += 1


async def _stream(entry: StreamedReply, on_delta: DeltaSink | None) -> ModelReply:
    """Hand the entry's fragments to ``on_delta`` in order (pausing before each as it says)."""
    for index, fragment in enumerate(entry.fragments()):
        if entry.pause is not None:
            await entry.pause(index)
        if on_delta is not None:
            on_delta(fragment)
    return entry.reply
