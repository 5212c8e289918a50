"""The durable inbox, the owner check and the tool journal on Postgres."""

from __future__ import annotations

from typing import Any

import asyncpg

from afp_runtime.errors import StoreError
from afp_runtime.store import checks
from afp_runtime.store import rows as common
from afp_runtime.store.postgres._core import POSTS_CHANNEL, PostgresCore
from afp_runtime.store.rows import encoder
from afp_runtime.store.values import Ack, InboxRow, JournalEntry

_INBOX_COLUMNS = ", ".join(f"i.{name}" for name in common.INBOX_FIELDS)
_POST = "SELECT * FROM afp_post($1, $2, $3, $4, $5, $6, $7, $8, $9)"


async def owner_check(
    conn: asyncpg.Connection, agent: int, agent_id: str, sender: str | None, *, claim: bool
) -> None:
    """The owner check (docs/host.md#the-owner-check) on an open transaction, the agent's row
    locked; with ``claim`` a first sender becomes the owner."""
    owner = await conn.fetchval("SELECT owner FROM agents WHERE agent = $1 FOR UPDATE", agent)
    if owner is None and claim and sender is not None:
        await conn.execute("UPDATE agents SET owner = $1 WHERE agent = $2", sender, agent)
    checks.check_owner(owner, agent_id, sender)


class Inbox(PostgresCore):
    """A person's messages, accepted durably; the tool journal of a turn."""

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        message_id: str,
        now_ms: int,
        idempotency_key: str | None = None,
        sender: str | None = None,
        shared: bool = False,
        time: dict[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably (committed with ``synchronous_commit=on`` before
        the acknowledgement), under the owner check and the idempotency key, as
        ``CheckpointStore.post`` states: one call of ``afp_post``, one round trip.

        Raises:
            InvalidValue: the text is empty or longer than 32,000 code points.
            IdempotencyConflict: the key was used before with other text.
            NotOwner: ``sender`` is not the owner; nothing is stored.
        """
        checks.check_text(text)
        checks.check_sender(sender)
        checks.check_idempotency_key(idempotency_key)

        # One statement, its own transaction (docs/storage.md#one-round-trip-per-commit).
        found = await self._statement(
            lambda conn: conn.fetchrow(
                _POST,
                agent_id,
                message_id,
                text,
                now_ms,
                idempotency_key,
                sender,
                shared,
                None if time is None else encoder.encode(time),
                POSTS_CHANNEL,
            )
        )
        outcome = found["outcome"]
        if outcome == "agent":
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        if outcome == "owner":
            checks.check_owner(found["found_text"], agent_id, sender)
        if outcome == "duplicate":
            assert idempotency_key is not None
            first = (found["found_id"], found["found_text"], found["found_at_ms"])
            ack = checks.duplicate_ack((*first, found["found_position"]), text, idempotency_key)
        else:
            position = int(found["found_position"])
            ack = Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)
        self.transactions += 1
        self.full_transactions += 1
        return ack

    async def owner(self, agent_id: str) -> str | None:
        """The conversation's owner (``identity.owner``), None until a message names one."""
        found = await self._fetch("SELECT owner FROM agents WHERE agent_id = $1", agent_id)
        return found[0][0] if found else None

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order, optionally of one status."""
        found = await self._fetch(
            f"SELECT {_INBOX_COLUMNS} FROM inbox i JOIN agents a ON a.agent = i.agent"
            " WHERE a.agent_id = $1 AND ($2::text IS NULL OR i.status = $2) ORDER BY i.position",
            agent_id,
            status,
        )
        return [common.inbox_row(agent_id, r) for r in found]

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""
        found = await self._fetch(
            f"SELECT a.agent_id, {_INBOX_COLUMNS} FROM inbox i"
            " JOIN agents a ON a.agent = i.agent WHERE i.message_id = $1",
            message_id,
        )
        return common.inbox_row(found[0][0], tuple(found[0])[1:]) if found else None

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """Per tool call of a turn (its inbox message): whether it started, its outcome."""
        found = await self._fetch(
            "SELECT j.call_id, j.state, j.outcome FROM tool_journal j"
            " JOIN agents a ON a.agent = j.agent WHERE a.agent_id = $1 AND j.message_id = $2",
            agent_id,
            message_id,
        )
        return common.journal_entries(found)
