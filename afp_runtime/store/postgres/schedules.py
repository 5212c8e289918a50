"""An agent's durable schedules and their delivering commit on Postgres
(docs/host.md#schedules)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from afp_runtime.store import checks
from afp_runtime.store import schedule_rows as rows
from afp_runtime.store.postgres._core import POSTS_CHANNEL, PostgresCore
from afp_runtime.store.values import Ack, ScheduleDelivered, ScheduleEntry, ScheduleRow

_COLUMNS = ", ".join(f"s.{name}" for name in rows.SCHEDULE_FIELDS)


class Schedules(PostgresCore):
    """Schedules: listed, put, removed, found due, delivered exactly once."""

    async def schedules(self, agent_id: str) -> list[ScheduleRow]:
        """The agent's schedules, by name."""
        found = await self._fetch(
            f"SELECT {_COLUMNS} FROM schedules s JOIN agents a ON a.agent = s.agent"
            " WHERE a.agent_id = $1 ORDER BY s.name",
            agent_id,
        )
        return [rows.schedule_row(agent_id, tuple(r)) for r in found]

    async def put_schedule(
        self, agent_id: str, entry: ScheduleEntry, *, now_ms: int
    ) -> ScheduleRow:
        """Create or replace the schedule of ``entry.name`` (``ScheduleStore.put_schedule``)."""

        async def put(conn: asyncpg.Connection) -> ScheduleRow:
            agent = await self._agent_id(conn, agent_id, lock=False)
            found = await conn.fetchrow(
                "INSERT INTO schedules AS s (agent, name, definition, source, anchor_ms,"
                " last_due_ms, next_due_ms, paused, revision, delivered, created_at_ms,"
                " updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, 0, $9, $9)"
                " ON CONFLICT (agent, name) DO UPDATE SET definition = excluded.definition,"
                " source = excluded.source, anchor_ms = excluded.anchor_ms,"
                " last_due_ms = excluded.last_due_ms, next_due_ms = excluded.next_due_ms,"
                " paused = excluded.paused, revision = s.revision + 1,"
                f" updated_at_ms = excluded.updated_at_ms RETURNING {_COLUMNS}",
                agent,
                entry.name,
                rows.definition_bytes(entry),
                entry.source,
                entry.anchor_ms,
                entry.last_due_ms,
                entry.next_due_ms,
                int(entry.paused),
                now_ms,
            )
            return rows.schedule_row(agent_id, tuple(found))

        return await self._write(put, full=True)

    async def remove_schedule(self, agent_id: str, name: str) -> bool:
        """Remove the schedule; False when there was none of that name."""

        async def remove(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "DELETE FROM schedules WHERE name = $1"
                " AND agent = (SELECT agent FROM agents WHERE agent_id = $2)",
                name,
                agent_id,
            )
            return bool(status != "DELETE 0")

        return await self._write(remove, full=True)

    async def due_schedules(self, agent_ids: Sequence[str], *, now_ms: int) -> list[ScheduleRow]:
        """The unpaused schedules of ``agent_ids`` due at ``now_ms``, earliest first."""
        found = await self._fetch(
            f"SELECT a.agent_id, {_COLUMNS} FROM schedules s JOIN agents a ON a.agent = s.agent"
            " WHERE s.next_due_ms IS NOT NULL AND s.paused = 0 AND s.next_due_ms <= $1"
            " AND a.agent_id = ANY($2::text[]) ORDER BY s.next_due_ms, a.agent_id, s.name",
            now_ms,
            list(agent_ids),
        )
        return [rows.schedule_row(r[0], tuple(r)[1:]) for r in found]

    async def next_schedule_due(self, agent_ids: Sequence[str]) -> int | None:
        """The earliest next due instant of the unpaused schedules of ``agent_ids``."""
        found = await self._fetch(
            "SELECT MIN(s.next_due_ms) FROM schedules s JOIN agents a ON a.agent = s.agent"
            " WHERE s.next_due_ms IS NOT NULL AND s.paused = 0"
            " AND a.agent_id = ANY($1::text[])",
            list(agent_ids),
        )
        value = found[0][0] if found else None
        return None if value is None else int(value)

    async def deliver_schedule(
        self,
        agent_id: str,
        name: str,
        *,
        revision: int,
        due: Sequence[tuple[int, str]],
        text: str,
        through_ms: int,
        next_due_ms: int | None,
        now_ms: int,
    ) -> ScheduleDelivered | None:
        """The delivering commit (``ScheduleStore.deliver_schedule``): one transaction,
        committed with ``synchronous_commit=on``; the agent's row locked first, so positions
        never race with a post."""
        fence = self._fence

        async def deliver(conn: asyncpg.Connection) -> ScheduleDelivered | None:
            found = await conn.fetchrow(
                "SELECT agent, claim_host, claim_epoch FROM agents WHERE agent_id = $1 FOR UPDATE",
                agent_id,
            )
            if fence is not None:  # before any write: a lost claim delivers nothing
                lease = await conn.fetchval(
                    "SELECT lease_epoch FROM host_leases WHERE host_id = $1 FOR SHARE", fence[0]
                )
                row = None if found is None else (found[1], found[2], lease)
                checks.check_fence(row, agent_id, *fence)
            if found is None:
                return None
            agent = int(found[0])
            status = await conn.execute(
                "UPDATE schedules SET last_due_ms = $1, next_due_ms = $2,"
                " revision = revision + 1, updated_at_ms = $3"
                " WHERE agent = $4 AND name = $5 AND revision = $6",
                through_ms,
                next_due_ms,
                now_ms,
                agent,
                name,
                revision,
            )
            if status != "UPDATE 1":
                return None
            acks = await _post_due(conn, agent, name, due, text, now_ms)
            fresh = sum(not ack.duplicate for _, ack in acks)
            after = await conn.fetchrow(
                f"UPDATE schedules s SET delivered = delivered + $1 WHERE agent = $2"
                f" AND name = $3 RETURNING {_COLUMNS}",
                fresh,
                agent,
                name,
            )
            if fresh:
                # Delivered at COMMIT to every host listening (docs/host.md#schedules).
                await conn.execute("SELECT pg_notify($1, $2)", POSTS_CHANNEL, agent_id)
            return ScheduleDelivered(acks=acks, row=rows.schedule_row(agent_id, tuple(after)))

        return await self._write(deliver, full=True)


async def _post_due(
    conn: asyncpg.Connection,
    agent: int,
    name: str,
    due: Sequence[tuple[int, str]],
    text: str,
    now_ms: int,
) -> tuple[tuple[int, Ack], ...]:
    """One inbox message per due instant, at the agent's next positions; an instant whose
    message exists already (its key found) is acknowledged as that message."""
    acks: list[tuple[int, Ack]] = []
    position = int(
        await conn.fetchval("SELECT COALESCE(MAX(position), 0) FROM inbox WHERE agent = $1", agent)
    )
    for due_ms, message_id in due:
        key = rows.idempotency_key(name, due_ms)
        found = await conn.fetchrow(
            "SELECT message_id, accepted_at_ms, position FROM inbox"
            " WHERE agent = $1 AND idempotency_key = $2",
            agent,
            key,
        )
        if found is not None:
            ack = Ack(
                message_id=found[0], accepted_at_ms=found[1], position=found[2], duplicate=True
            )
            acks.append((due_ms, ack))
            continue
        position += 1
        await conn.execute(
            "INSERT INTO inbox (message_id, agent, position, text, status, accepted_at_ms,"
            " idempotency_key, sender) VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7)",
            message_id,
            agent,
            position,
            text,
            now_ms,
            key,
            rows.sender(name),
        )
        acks.append((due_ms, Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)))
    return tuple(acks)
