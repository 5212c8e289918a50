"""Posting a person's message (docs/host.md#a-message-reaches-its-host), for a door that holds no
driver and no host: ``afp send`` writes the row, and a host notices it.

A host's ``post`` and a driver's ``post`` take the same path (``post_message``): the message is
committed first, and a fresh one (never an idempotent repeat) emits ``inbox.accepted``.
"""

from __future__ import annotations

from typing import Any

from afp_runtime.loop import Emitter, IdFactory, post_message
from afp_runtime.records import Clock
from afp_runtime.store import Ack, Store


async def post(
    store: Store,
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
    """Accept a person's message durably; returns after the commit.

    ``time`` is stored as given: the door checks it first (an agent's definition checks it with
    ``check_message_time``; a door without one, with the time layer's wire check).

    Raises:
        InvalidValue: the text is empty or too long (field ``text``).
        IdempotencyConflict: the key was used before with other text.
        NotOwner: ``sender`` is not the conversation's owner (nothing is stored).
    """
    return await post_message(
        store,
        agent_id,
        text,
        message_id=ids.message_id(),
        now_ms=clock.now_ms(),
        idempotency_key=idempotency_key,
        sender=sender,
        shared=shared,
        time=time,
        emitter=emitter,
    )
