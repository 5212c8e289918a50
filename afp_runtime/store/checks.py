"""The checks every backend makes the same way, whose answer depends only on the call's input or
on rows already read in its transaction: a message's text, sender and idempotency key, the
owner check, the fence check, and the ack of an idempotent repeat
(docs/storage.md#the-store-port).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from afp_runtime.errors import IdempotencyConflict, InvalidValue, LeaseLost, NotOwner
from afp_runtime.store.values import Ack


def check_text(text: object) -> None:
    """Raise ``InvalidValue`` unless an inbox message is text of 1 to 32,000 code points that
    UTF-8 can hold (no lone surrogate)."""
    if not isinstance(text, str):
        raise InvalidValue(f"a message must be text, not {type(text).__name__}", field="text")
    if not 1 <= len(text) <= 32_000:
        raise InvalidValue(
            f"a message must hold 1 to 32,000 code points, not {len(text)}", field="text"
        )
    if "\x00" in text:
        raise InvalidValue(
            f"a message holds U+0000 (NUL) at {text.index(chr(0))}, which a message may not hold",
            field="text",
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidValue(
                f"a message holds a surrogate code point at {exc.start}, which UTF-8 cannot hold",
                field="text",
            ) from None


_IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def check_sender(sender: str | None) -> None:
    """Raise ``InvalidValue`` unless a sending principal is None or 1 to 128 code points: an
    empty or overlong one could own a conversation that no API client can then name."""
    if sender is not None and not (
        isinstance(sender, str) and 1 <= len(sender) <= 128 and "\x00" not in sender
    ):
        raise InvalidValue(
            "from (the sending principal) must be 1 to 128 code points, none of them U+0000",
            field="from",
        )


def check_idempotency_key(key: str | None) -> None:
    """Raise ``InvalidValue`` unless an idempotency key is None or 1 to 128 characters of
    ``[A-Za-z0-9._:-]`` (docs/api.md#request-bodies-and-field-limits)."""
    if key is not None and not (isinstance(key, str) and _IDEMPOTENCY_KEY.fullmatch(key)):
        raise InvalidValue(
            "an idempotency key must be 1 to 128 characters of [A-Za-z0-9._:-]",
            field="idempotencyKey",
        )


def check_owner(owner: str | None, agent_id: str, sender: str | None) -> None:
    """docs/host.md#the-owner-check: once a conversation has an ``owner``, every message and
    answer must name that owner; one that names nobody is refused like another's."""
    if owner is None:
        return
    if sender is None:
        raise NotOwner(
            f"agent {agent_id!r} belongs to a principal; name it (from) to write to it",
            agent_id=agent_id,
            principal=None,
        )
    if owner != sender:
        raise NotOwner(
            f"agent {agent_id!r} belongs to another principal; {sender!r} may not write to it",
            agent_id=agent_id,
            principal=sender,
        )


def duplicate_ack(row: Sequence[Any], text: str, key: str) -> Ack:
    """The original ack of a message posted again under ``key``, from its ``(message_id, text,
    accepted_at_ms, position)`` row.

    Raises:
        IdempotencyConflict: the key was used for another text.
    """
    found_id, found_text, accepted, position = row
    if found_text != text:
        raise IdempotencyConflict(
            f"idempotency key {key!r} was used for another text", message_id=found_id
        )
    return Ack(message_id=found_id, accepted_at_ms=accepted, position=position, duplicate=True)


def check_fence(row: Sequence[Any] | None, agent_id: str, host_id: str, epoch: int) -> None:
    """Raise ``LeaseLost`` unless the ``(claim_host, claim_epoch, lease_epoch)`` row read in the
    commit's transaction says the agent is claimed by ``(host_id, epoch)`` and the host's lease
    row still carries ``epoch``. Expiry is not checked: a lease nobody took over is still this
    host's to renew."""
    if row is not None and row[0] == host_id and row[1] == epoch and row[2] == epoch:
        return
    raise LeaseLost(
        f"host {host_id!r} (lease epoch {epoch}) no longer holds agent {agent_id!r}: "
        f"{_fence_problem(row, epoch)}; nothing was written",
        agent_id=agent_id,
        host_id=host_id,
        lease_epoch=epoch,
    )


def _fence_problem(row: Sequence[Any] | None, epoch: int) -> str:
    if row is None:
        return "the agent is not in the store"
    if row[0] is None:
        return "the agent is not claimed"
    if row[2] != epoch:
        return f"the host's lease epoch is now {row[2]}"
    return f"the agent is claimed by {row[0]!r} under lease epoch {row[1]}"
