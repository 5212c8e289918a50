"""The Model port (docs/loop.md#the-model-port): a pure ``encode`` of the request body and an async
``send``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import msgspec

from afp_runtime.messages import ModelReply, ModelRequest


class EncodedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The exact request an adapter sends: body bytes, content type and URL path."""

    body: bytes
    path: str
    content_type: str = "application/json"


class ReplyDelta(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One fragment of a reply as it arrives (docs/loop.md#streaming-replies).

    A fragment carries reply text, or a piece of one tool call: ``tool_call_index`` is the
    call's place in the reply (0-based), its ``tool_call_id`` and ``tool_name`` come with the
    first fragment of that call, and ``arguments`` is a piece of its JSON arguments text.
    Fragments are a live signal only: the assembled ``ModelReply`` is what is committed.
    """

    text: str = ""
    tool_call_index: int | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    arguments: str = ""


DeltaSink = Callable[[ReplyDelta], None]
"""Receives each fragment of a reply; must not block (it runs on the event loop)."""


@runtime_checkable
class Model(Protocol):
    """A model endpoint.

    ``encode`` is pure (same request and settings give the same bytes when ``deterministic``);
    ``send`` sends exactly the bytes ``encode`` produced, so a receipt's wire digest covers what
    left the process. Every adapter has ``aclose`` (a no-op when it owns no client).
    """

    provider: str
    model: str
    encoder: str | None
    deterministic: bool

    def settings(self) -> Mapping[str, Any]:
        """Body-shaping settings, never credentials."""
        ...

    def encode(self, request: ModelRequest) -> EncodedRequest:
        """Encode the request body for the wire."""
        ...

    async def send(
        self, request: EncodedRequest | ModelRequest, *, on_delta: DeltaSink | None = None
    ) -> ModelReply:
        """Send one request and return the reply; raises ModelCallError. ``on_delta`` receives
        the reply's fragments as they arrive (a model that does not stream gives its text as
        one fragment)."""
        ...

    async def aclose(self) -> None:
        """Release an owned client."""
        ...
