"""Server-sent events: one agent's stream and the host-wide one (docs/api.md#the-event-stream).

Frames are ``id: <bootId>-<seq>``, ``event: <type>``, ``data: <envelope JSON>`` and a blank
line; a ``stream.gap`` marker and a ``model.delta`` fragment have no ``id`` (the client's
``Last-Event-ID`` stays on the last event it saw). An idle stream gets a ``: keep-alive``
comment every ``keepalive_s`` seconds of real time (network time, not the injected clock). The
first frame of every stream is an ``: open`` comment, sent as soon as the subscription is
registered, so a client knows from then on it misses nothing.

``Last-Event-ID`` resumes from the host's ring buffer; a client whose id is from another boot
or older than the buffer first gets ``stream.gap`` (``restarted``/``evicted``). A client that
reads too slowly loses its oldest queued events and gets ``stream.gap`` (``slow-client``);
publishing never waits for it. A stream ends when the host stops; with ``follow=false`` it ends
once it has sent the history the ring holds (after ``Last-Event-ID``, or all of it without one).
More than ``max_streams`` open streams is 429 ``too-many-streams``; a ``Last-Event-ID`` longer than
200 characters is 400 ``invalid-header``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
import anyio.lowlevel
import msgspec
from litestar import get
from litestar.datastructures import State
from litestar.response import Stream

from afp_runtime._logging import get_logger
from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import (
    AGENT_ID,
    EVENT_PREFIX,
    PathText,
    header,
    query,
    query_flag,
    query_text,
)
from afp_runtime.api._problems import ApiError
from afp_runtime.host import Delivered, StreamGap, Subscription
from afp_runtime.records import ModelDelta

log = get_logger()

_LAST_EVENT_ID_LIMIT = 200
_encoder = msgspec.json.Encoder()


def frame(item: Delivered, *, boot_id: str, typed: bool = True) -> bytes:
    """One SSE frame for an event or a gap marker; ``typed=False`` leaves out the ``event:``
    line, so a browser's ``EventSource`` hears every frame as a ``message`` (the envelope still
    names its type)."""
    if isinstance(item, StreamGap):
        head = b"event: stream.gap\ndata: " if typed else b"data: "
        return head + _encoder.encode(item) + b"\n\n"
    kind = f"event: {item.type}\n" if typed else ""
    if isinstance(item.payload, ModelDelta):
        # A fragment is live only (not numbered, not in the ring): with no id line the client's
        # Last-Event-ID stays on the last event a resume can continue from.
        return f"{kind}data: ".encode() + _encoder.encode(item) + b"\n\n"
    head = f"id: {boot_id}-{item.id}\n{kind}data: ".encode()
    return head + _encoder.encode(item) + b"\n\n"


async def _frames(
    ctx: ApiContext, subscription: Subscription, *, typed: bool
) -> AsyncIterator[bytes]:
    boot_id = ctx.host.events.boot_id
    ended = False
    try:
        yield b": open\n\n"
        while True:
            with anyio.move_on_after(ctx.keepalive_s) as idle:
                item = await subscription.next()
            if idle.cancelled_caught:
                yield b": keep-alive\n\n"
                continue
            if item is None:
                ended = True
                return
            # A replay yields many frames without waiting on anything: let the server's
            # disconnect watcher run between them, so a client that went away stops the
            # stream at once instead of being written to (and logged about) frame after frame.
            await anyio.lowlevel.checkpoint()
            yield frame(item, boot_id=boot_id, typed=typed)
    finally:
        subscription.close()
        ctx.open_streams -= 1
        if not ended:
            log.info("event stream client went away", pending=subscription.pending)


def _prefixes(types: str | None) -> list[str] | None:
    if types is None:
        return None
    prefixes = types.split(",")
    for prefix in prefixes:
        if EVENT_PREFIX.fullmatch(prefix) is None:
            raise ApiError(
                400,
                "invalid-query",
                f"types must be a comma list (no spaces, no empty entries) of event type "
                f"prefixes matching {EVENT_PREFIX.pattern}",
                field="types",
                value=types,
            )
    return prefixes


def event_stream(
    ctx: ApiContext,
    *,
    agent_ids: list[str] | None,
    types: str | None,
    last_event_id: str | None,
    follow: str | None,
    typed: bool = True,
) -> Stream:
    """The events of these agents (all when None) as a server-sent event stream; the API's
    streams and the inspector's live pages share it, and its limit on open streams
    (``typed``: see ``frame``)."""
    prefixes = _prefixes(types)
    following = query_flag("follow", follow) if follow is not None else True
    if ctx.open_streams >= ctx.max_streams:
        raise ApiError(
            429, "too-many-streams", f"at most {ctx.max_streams} event streams may be open"
        )
    if last_event_id is not None and len(last_event_id) > _LAST_EVENT_ID_LIMIT:
        raise ApiError(
            400,
            "invalid-header",
            f"Last-Event-ID holds at most {_LAST_EVENT_ID_LIMIT} characters",
            field="Last-Event-ID",
            value=last_event_id[:_LAST_EVENT_ID_LIMIT],
        )
    resume_from = last_event_id or None
    subscription = ctx.host.events.subscribe(
        agent_ids=agent_ids, types=prefixes, last_event_id=resume_from, follow=following
    )
    ctx.open_streams += 1
    return Stream(
        _frames(ctx, subscription, typed=typed),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@get("/v1/agents/{agent_id:str}/events", media_type="text/event-stream")
async def agent_events(
    state: State,
    agent_id: PathText,
    types: Annotated[str | None, query("types")] = None,
    follow: Annotated[str | None, query("follow")] = None,
    last_event_id: Annotated[str | None, header("Last-Event-ID")] = None,
) -> Stream:
    """The agent's live events as server-sent events; resumable with ``Last-Event-ID``."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    return event_stream(
        ctx, agent_ids=[agent_id], types=types, last_event_id=last_event_id, follow=follow
    )


@get("/v1/events", media_type="text/event-stream")
async def all_events(
    state: State,
    agent: Annotated[list[str] | None, query("agent")] = None,
    types: Annotated[str | None, query("types")] = None,
    follow: Annotated[str | None, query("follow")] = None,
    last_event_id: Annotated[str | None, header("Last-Event-ID")] = None,
) -> Stream:
    """Every agent's live events (filters ``agent``, repeatable, and ``types``)."""
    ctx = context_of(state)
    for agent_id in agent or []:
        query_text("agent", agent_id, AGENT_ID)
    return event_stream(
        ctx, agent_ids=agent, types=types, last_event_id=last_event_id, follow=follow
    )


HANDLERS = [agent_events, all_events]
