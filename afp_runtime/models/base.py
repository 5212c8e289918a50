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


TokenSink = Callable[[str], None]


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
        self, request: EncodedRequest | ModelRequest, *, on_token: TokenSink | None = None
    ) -> ModelReply:
        """Send one request and return the reply; raises ModelCallError."""
        ...

    async def aclose(self) -> None:
        """Release an owned client."""
        ...
