"""Accepting a person's message durably through any door (docs/host.md#posting-a-message):
a host, a driver, or a door that holds neither."""

from __future__ import annotations

from typing import Any

from afp_runtime.loop.events import Emitter
from afp_runtime.loop.ids import IdFactory
from afp_runtime.records import Clock, InboxAccepted
from afp_runtime.store import Ack, CheckpointStore

__all__ = ["post_message"]


async def post_message(
    store: CheckpointStore,
    agent_id: str,
    text: str,
    *,
    clock: Clock,
    ids: IdFactory,
    idempotency_key: str | None = None,
    sender: str | None = None,
    shared: bool = False,
    time: dict[str, Any] | None = None,
    emitter: Emitter | None = None,
) -> Ack:
    """Accept a person's message durably (``time`` already checked), then tell ``emitter``.

    The one posting path of a host, of a driver and of a door that holds neither (``app.post``:
    ``afp send`` writes the row and a host notices it; docs/host.md#a-message-reaches-its-host):
    a fresh message emits ``inbox.accepted``; an idempotent repeat returns the first message's
    ack and emits nothing, since no new message arrived. ``time`` is stored as given: a
    definition checks it with ``check_message_time``, a door without one with the time layer's
    wire check.

    Raises:
        InvalidValue / IdempotencyConflict / NotOwner: as the store's ``post`` (nothing stored).
    """
    now_ms = clock.now_ms()
    ack = await store.post(
        agent_id,
        text,
        message_id=ids.message_id(),
        now_ms=now_ms,
        idempotency_key=idempotency_key,
        sender=sender,
        shared=shared,
        time=time,
    )
    if emitter is not None and not ack.duplicate:
        emitter.emit(
            InboxAccepted(message_id=ack.message_id, position=ack.position, text_chars=len(text)),
            at_ms=now_ms,
            agent_id=agent_id,
        )
    return ack
