"""Reading a streamed reply: server-sent events in, one provider body out
(docs/loop.md#streaming-replies).

Each provider has an assembler that takes the events one by one, hands each fragment to the
``on_delta`` sink as it arrives, and at its terminal event holds the JSON body the same reply
would have had unstreamed. The adapter then decodes that body with its usual ``_decode``, so a
streamed reply follows exactly the rules of an unstreamed one (ids, arguments, usage, stop
reason, surrogates).

Events are read incrementally through ``httpx-sse`` over httpx's streaming response; the body
is never buffered whole.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx
from httpx_sse import EventSource, ServerSentEvent

from afp_runtime.errors import shown
from afp_runtime.models._http_reading import VendorError, load_json


class EventShapeError(Exception):
    """An event of a 2xx stream is not JSON or not the shape its type needs; the message
    names the event."""


class ErrorEvent(Exception):
    """The provider sent an error event mid-stream; ``vendor`` is what it said."""

    def __init__(self, vendor: VendorError) -> None:
        super().__init__(vendor.message)
        self.vendor = vendor


class Assembler(Protocol):
    """Builds one provider's reply body from its events."""

    #: How the terminal event is named in errors (``data: [DONE]``, ``message_stop``).
    terminal: str

    def feed(self, event: ServerSentEvent) -> bool:
        """Take one event; True once the terminal event has come.

        Raises:
            EventShapeError: a malformed event.
            ErrorEvent: an error event.
        """
        ...

    def body(self) -> dict[str, Any]:
        """The body the reply would have had unstreamed (after the terminal event)."""
        ...


def is_event_stream(response: httpx.Response) -> bool:
    """Whether the response is ``text/event-stream`` (else it is read as one JSON body)."""
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    return kind == "text/event-stream"


async def read_events(response: httpx.Response, assembler: Assembler) -> bool:
    """Feed every event of ``response`` to ``assembler`` until its terminal event.

    Returns:
        True when the terminal event came; False when the stream ended before it.

    Raises:
        EventShapeError, ErrorEvent: from the assembler. httpx errors (a stall past the read
        timeout, a connection cut) propagate to the caller's classification.
    """
    events = EventSource(response).aiter_sse()
    try:
        async for event in events:
            if assembler.feed(event):
                return True
    finally:
        await events.aclose()
    return False


def event_json(event: ServerSentEvent, what: str) -> dict[str, Any]:
    """The event's data as a JSON object, read like a provider body (surrogates scrubbed).

    Raises:
        EventShapeError: not JSON, or not an object; names ``what`` and the data's start.
    """
    try:
        data = load_json(event.data)
    except ValueError as exc:
        raise EventShapeError(
            f"{what} is not valid JSON: {exc}; data starts {shown(event.data[:120])}"
        ) from exc
    if not isinstance(data, dict):
        raise EventShapeError(f"{what} is {type(data).__name__}, not a JSON object")
    return data


def field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``data[key]`` when absent, null or of ``kind``; None for absent or null.

    Raises:
        EventShapeError: the value is of another type; names ``what`` and the key.
    """
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise EventShapeError(f"{what}.{key} is {shown(value)}")
    return value
