"""The durable inbox, the owner check and the tool journal."""

from __future__ import annotations

from typing import Any

import aiosqlite

from afp_runtime.errors import IdempotencyConflict, InvalidValue, NotOwner
from afp_runtime.store.sqlite._core import SqliteCore, encoder, map_decoder, rows_of
from afp_runtime.store.values import Ack, InboxRow, JournalEntry


async def check_owner(
    db: aiosqlite.Connection,
    agent: int,
    agent_id: str,
    sender: str | None,
    *,
    shared: bool,
    claim: bool,
) -> None:
    # docs/host.md#the-owner-check: once a conversation has an owner, every message and
    # answer must name that owner; one that names nobody is refused like another's.
    if shared:
        return
    rows = await rows_of(db, "SELECT owner FROM agents WHERE agent=?", (agent,))
    owner = rows[0][0] if rows else None
    if owner is None:
        if claim and sender is not None:
            await db.execute("UPDATE agents SET owner=? WHERE agent=?", (sender, agent))
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
        if not 1 <= len(text) <= 32_000:
            raise InvalidValue(
                f"a message must hold 1 to 32,000 code points, not {len(text)}", field="text"
            )
        async with self._transaction(full=True) as db:
            agent = await self._agent_rowid(db, agent_id)
            await check_owner(db, agent, agent_id, sender, shared=shared, claim=True)
            if idempotency_key is not None:
                rows = await rows_of(
                    db,
                    "SELECT message_id, text, accepted_at_ms, position FROM inbox"
                    " WHERE agent=? AND idempotency_key=?",
                    (agent, idempotency_key),
                )
                if rows:
                    found_id, found_text, accepted, position = rows[0]
                    if found_text != text:
                        raise IdempotencyConflict(
                            f"idempotency key {idempotency_key!r} was used for another text",
                            message_id=found_id,
                        )
                    return Ack(
                        message_id=found_id,
                        accepted_at_ms=accepted,
                        position=position,
                        duplicate=True,
                    )
            rows = await rows_of(
                db, "SELECT COALESCE(MAX(position), 0) + 1 FROM inbox WHERE agent=?", (agent,)
            )
            position = int(rows[0][0])
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
        return Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)

    async def owner(self, agent_id: str) -> str | None:
        """The conversation's owner (``identity.owner``), None until a message names one."""
        rows = await self._fetch("SELECT owner FROM agents WHERE agent_id=?", (agent_id,))
        return rows[0][0] if rows else None

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order, optionally of one status."""
        sql = (
            "SELECT i.message_id, i.position, i.text, i.status, i.accepted_at_ms, i.turn,"
            " i.idempotency_key, i.sender, i.time FROM inbox i JOIN agents a ON a.agent=i.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if status is not None:
            sql += " AND i.status=?"
            params += (status,)
        rows = await self._fetch(sql + " ORDER BY i.position", params)
        return [
            InboxRow(
                message_id=r[0],
                agent_id=agent_id,
                position=r[1],
                text=r[2],
                status=r[3],
                accepted_at_ms=r[4],
                turn=r[5],
                idempotency_key=r[6],
                sender=r[7],
                time=map_decoder.decode(r[8]) if r[8] is not None else None,
            )
            for r in rows
        ]

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""
        rows = await self._fetch(
            "SELECT a.agent_id FROM inbox i JOIN agents a ON a.agent=i.agent WHERE i.message_id=?",
            (message_id,),
        )
        if not rows:
            return None
        for row in await self.inbox(rows[0][0]):
            if row.message_id == message_id:
                return row
        return None

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """Per tool call of a turn (its inbox message): whether it started, its outcome."""
        rows = await self._fetch(
            "SELECT j.call_id, j.state, j.outcome FROM tool_journal j"
            " JOIN agents a ON a.agent=j.agent WHERE a.agent_id=? AND j.message_id=?",
            (agent_id, message_id),
        )
        started: set[str] = set()
        finished: dict[str, bytes] = {}
        for call_id, state, outcome in rows:
            if state == "started":
                started.add(call_id)
            else:
                finished[call_id] = outcome
        return {
            call_id: JournalEntry(started=call_id in started, finished=finished.get(call_id))
            for call_id in started | set(finished)
        }
