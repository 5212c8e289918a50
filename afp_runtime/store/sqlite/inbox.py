"""The durable inbox, the owner check and the tool journal."""

from __future__ import annotations

from typing import Any

import aiosqlite

from afp_runtime.store import checks
from afp_runtime.store import rows as common
from afp_runtime.store.sqlite._core import SqliteCore, encoder, on_thread, rows_of
from afp_runtime.store.values import Ack, InboxRow, JournalEntry

_INBOX_COLUMNS = ", ".join(f"i.{name}" for name in common.INBOX_FIELDS)


async def check_owner(
    db: aiosqlite.Connection,
    agent: int,
    agent_id: str,
    sender: str | None,
    *,
    shared: bool,
    claim: bool,
) -> None:
    """The owner check on an open transaction; with ``claim`` a first sender becomes the owner."""
    if shared:
        return
    found = await rows_of(db, "SELECT owner FROM agents WHERE agent=?", (agent,))
    owner = found[0][0] if found else None
    if owner is None and claim and sender is not None:
        await db.execute("UPDATE agents SET owner=? WHERE agent=?", (sender, agent))
    checks.check_owner(owner, agent_id, sender)


class Inbox(SqliteCore):
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
        """Accept a person's message durably (a ``synchronous=FULL`` commit), then acknowledge.

        ``time`` is the message's ``{now?, zone?, window?}`` (docs/time.md#the-clock-row), validated
        by the caller and kept as sent.

        The first message naming a ``sender`` makes it the conversation's owner (write-once,
        docs/host.md#ownership-and-leases); later messages from another principal are refused unless
        ``shared``. Messages without a sender are always accepted (single-user local use).

        Raises:
            InvalidValue: the text is empty or longer than 32,000 code points.
            IdempotencyConflict: the key was used before with other text.
            NotOwner: ``sender`` is not the owner; nothing is stored.
        """
        checks.check_text(text)
        checks.check_sender(sender)
        checks.check_idempotency_key(idempotency_key)
        async with self._transaction(full=True) as db:
            agent: int = await on_thread(db, self._ids.rowid, "agent", agent_id)
            await check_owner(db, agent, agent_id, sender, shared=shared, claim=True)
            if idempotency_key is not None:
                found = await rows_of(
                    db,
                    "SELECT message_id, text, accepted_at_ms, position FROM inbox"
                    " WHERE agent=? AND idempotency_key=?",
                    (agent, idempotency_key),
                )
                if found:
                    return checks.duplicate_ack(found[0], text, idempotency_key)
            found = await rows_of(
                db, "SELECT COALESCE(MAX(position), 0) + 1 FROM inbox WHERE agent=?", (agent,)
            )
            position = int(found[0][0])
            await db.execute(
                "INSERT INTO inbox (message_id, agent, position, text, status, accepted_at_ms,"
                " idempotency_key, sender, time) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                (
                    message_id,
                    agent,
                    position,
                    text,
                    now_ms,
                    idempotency_key,
                    sender,
                    None if time is None else encoder.encode(time),
                ),
            )
        self.wakeful_commits += 1
        return Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)

    async def owner(self, agent_id: str) -> str | None:
        """The conversation's owner (``identity.owner``), None until a message names one."""
        found = await self._fetch("SELECT owner FROM agents WHERE agent_id=?", (agent_id,))
        return found[0][0] if found else None

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order, optionally of one status."""
        sql = (
            f"SELECT {_INBOX_COLUMNS} FROM inbox i JOIN agents a ON a.agent=i.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if status is not None:
            sql += " AND i.status=?"
            params += (status,)
        found = await self._fetch(sql + " ORDER BY i.position", params)
        return [common.inbox_row(agent_id, r) for r in found]

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""
        found = await self._fetch(
            f"SELECT a.agent_id, {_INBOX_COLUMNS} FROM inbox i"
            " JOIN agents a ON a.agent=i.agent WHERE i.message_id=?",
            (message_id,),
        )
        return common.inbox_row(found[0][0], found[0][1:]) if found else None

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """Per tool call of a turn (its inbox message): whether it started, its outcome."""
        found = await self._fetch(
            "SELECT j.call_id, j.state, j.outcome FROM tool_journal j"
            " JOIN agents a ON a.agent=j.agent WHERE a.agent_id=? AND j.message_id=?",
            (agent_id, message_id),
        )
        return common.journal_entries(found)
