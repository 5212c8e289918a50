"""An agent's durable schedules and their delivering commit (docs/host.md#schedules)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from afp_runtime.store import schedule_rows as rows
from afp_runtime.store.sqlite._core import SqliteCore, chunks
from afp_runtime.store.sqlite.writes import check_fence
from afp_runtime.store.values import Ack, ScheduleDelivered, ScheduleEntry, ScheduleRow

_COLUMNS = ", ".join(f"s.{name}" for name in rows.SCHEDULE_FIELDS)


class Schedules(SqliteCore):
    """Schedules: listed, put, removed, found due, delivered exactly once."""

    async def schedules(self, agent_id: str) -> list[ScheduleRow]:
        """The agent's schedules, by name."""
        found = await self._fetch(
            f"SELECT {_COLUMNS} FROM schedules s JOIN agents a ON a.agent = s.agent"
            " WHERE a.agent_id = ? ORDER BY s.name",
            (agent_id,),
        )
        return [rows.schedule_row(agent_id, r) for r in found]

    async def put_schedule(
        self, agent_id: str, entry: ScheduleEntry, *, now_ms: int
    ) -> ScheduleRow:
        """Create or replace the schedule of ``entry.name`` (``ScheduleStore.put_schedule``)."""

        def put(conn: sqlite3.Connection) -> ScheduleRow:
            agent = self._ids.rowid(conn, "agent", agent_id)
            conn.execute(
                "INSERT INTO schedules (agent, name, definition, source, anchor_ms, last_due_ms,"
                " next_due_ms, paused, revision, delivered, created_at_ms, updated_at_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?)"
                " ON CONFLICT (agent, name) DO UPDATE SET definition = excluded.definition,"
                " source = excluded.source, anchor_ms = excluded.anchor_ms,"
                " last_due_ms = excluded.last_due_ms, next_due_ms = excluded.next_due_ms,"
                " paused = excluded.paused, revision = schedules.revision + 1,"
                " updated_at_ms = excluded.updated_at_ms",
                (
                    agent,
                    entry.name,
                    rows.definition_bytes(entry),
                    entry.source,
                    entry.anchor_ms,
                    entry.last_due_ms,
                    entry.next_due_ms,
                    int(entry.paused),
                    now_ms,
                    now_ms,
                ),
            )
            return _read_row(conn, agent, agent_id, entry.name)

        return await self._write(put, full=True)

    async def remove_schedule(self, agent_id: str, name: str) -> bool:
        """Remove the schedule; False when there was none of that name."""

        def remove(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM schedules WHERE name = ?"
                " AND agent = (SELECT agent FROM agents WHERE agent_id = ?)",
                (name, agent_id),
            )
            return cursor.rowcount > 0

        return await self._write(remove, full=True)

    async def due_schedules(self, agent_ids: Sequence[str], *, now_ms: int) -> list[ScheduleRow]:
        """The unpaused schedules of ``agent_ids`` due at ``now_ms``, earliest first."""
        found: list[ScheduleRow] = []
        for part in chunks(list(agent_ids)):
            marks = ", ".join("?" * len(part))
            found += [
                rows.schedule_row(r[0], r[1:])
                for r in await self._fetch(
                    f"SELECT a.agent_id, {_COLUMNS} FROM schedules s"
                    " JOIN agents a ON a.agent = s.agent"
                    " WHERE s.next_due_ms IS NOT NULL AND s.paused = 0 AND s.next_due_ms <= ?"
                    f" AND a.agent_id IN ({marks})",
                    (now_ms, *part),
                )
            ]
        return sorted(found, key=lambda row: (row.next_due_ms or 0, row.agent_id, row.name))

    async def next_schedule_due(self, agent_ids: Sequence[str]) -> int | None:
        """The earliest next due instant of the unpaused schedules of ``agent_ids``."""
        earliest: int | None = None
        for part in chunks(list(agent_ids)):
            marks = ", ".join("?" * len(part))
            found = await self._fetch(
                "SELECT MIN(s.next_due_ms) FROM schedules s JOIN agents a ON a.agent = s.agent"
                f" WHERE s.next_due_ms IS NOT NULL AND s.paused = 0 AND a.agent_id IN ({marks})",
                part,
            )
            value = found[0][0] if found else None
            if value is not None and (earliest is None or value < earliest):
                earliest = int(value)
        return earliest

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
        """The delivering commit (``ScheduleStore.deliver_schedule``): one transaction at
        ``synchronous=FULL``, as a post is."""
        fence = self._fence

        def deliver(conn: sqlite3.Connection) -> ScheduleDelivered | None:
            if fence is not None:  # before any write: a lost claim delivers nothing
                check_fence(conn, agent_id, *fence)
            agent = self._ids.rowid(conn, "agent", agent_id)
            moved = conn.execute(
                "UPDATE schedules SET last_due_ms = ?, next_due_ms = ?, revision = revision + 1,"
                " updated_at_ms = ? WHERE agent = ? AND name = ? AND revision = ?",
                (through_ms, next_due_ms, now_ms, agent, name, revision),
            )
            if moved.rowcount != 1:
                return None
            acks = _post_due(conn, agent, name, due, text, now_ms)
            fresh = sum(not ack.duplicate for _, ack in acks)
            conn.execute(
                "UPDATE schedules SET delivered = delivered + ? WHERE agent = ? AND name = ?",
                (fresh, agent, name),
            )
            return ScheduleDelivered(acks=acks, row=_read_row(conn, agent, agent_id, name))

        delivered = await self._write(deliver, full=True)
        if delivered is not None and delivered.acks:
            self.wakeful_commits += 1
        return delivered


def _post_due(
    conn: sqlite3.Connection,
    agent: int,
    name: str,
    due: Sequence[tuple[int, str]],
    text: str,
    now_ms: int,
) -> tuple[tuple[int, Ack], ...]:
    """One inbox message per due instant, at the agent's next positions; an instant whose
    message exists already (its key found) is acknowledged as that message."""
    acks: list[tuple[int, Ack]] = []
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(position), 0) FROM inbox WHERE agent = ?", (agent,)
    ).fetchone()
    position = int(last)
    for due_ms, message_id in due:
        key = rows.idempotency_key(name, due_ms)
        found = conn.execute(
            "SELECT message_id, accepted_at_ms, position FROM inbox"
            " WHERE agent = ? AND idempotency_key = ?",
            (agent, key),
        ).fetchone()
        if found is not None:
            ack = Ack(
                message_id=found[0], accepted_at_ms=found[1], position=found[2], duplicate=True
            )
            acks.append((due_ms, ack))
            continue
        position += 1
        conn.execute(
            "INSERT INTO inbox (message_id, agent, position, text, status, accepted_at_ms,"
            " idempotency_key, sender) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)",
            (message_id, agent, position, text, now_ms, key, rows.sender(name)),
        )
        acks.append((due_ms, Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)))
    return tuple(acks)


def _read_row(conn: sqlite3.Connection, agent: int, agent_id: str, name: str) -> ScheduleRow:
    found = conn.execute(
        f"SELECT {_COLUMNS} FROM schedules s WHERE s.agent = ? AND s.name = ?", (agent, name)
    ).fetchone()
    return rows.schedule_row(agent_id, found)
