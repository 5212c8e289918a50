"""Agents leaving and entering a Postgres store whole (docs/storage.md#moving-between-stores).

An export reads every table of one agent in one ``REPEATABLE READ`` read-only transaction (one
snapshot, so a host writing meanwhile cannot tear it); an import writes every dump it is given
in one transaction, in batches that keep each statement well inside ``statement_timeout``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import Any

import anyio
import asyncpg

from afp_runtime.errors import NotFound
from afp_runtime.store import dump_tables as sql
from afp_runtime.store.dump import AgentDump, CopyCounts, tallied
from afp_runtime.store.postgres._core import PostgresCore
from afp_runtime.store.postgres.runlog import numbered

_BATCH = 2_000  # rows per statement


def _batches(rows: Sequence[Any]) -> list[Sequence[Any]]:
    return [rows[start : start + _BATCH] for start in range(0, len(rows), _BATCH)]


class Moving(PostgresCore):
    """``export_agent`` and ``import_agents`` of the port."""

    async def export_agent(self, agent_id: str) -> AgentDump:
        """Every row of ``agent_id`` from one snapshot, checked (``dump_tables.build_dump``,
        in a worker thread: it hashes every body).

        Raises:
            NotFound: the store holds no such agent.
            StoreDamaged: a row does not read back; the message names it.
        """

        async def read(conn: asyncpg.Connection) -> tuple[Any, dict[str, list[Any]], list[Any]]:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                found = await conn.fetchrow(numbered(sql.AGENT_SELECT), agent_id)
                if found is None:
                    raise NotFound(
                        f"no agent {agent_id!r} in the store", what="agent", value=agent_id
                    )
                agent = found[0]
                tables = {t.name: await conn.fetch(numbered(t.select()), agent) for t in sql.TABLES}
                bodies = await conn.fetch(numbered(sql.BODIES_SELECT), agent)
            return tuple(found)[1:], tables, bodies

        agent_row, tables, bodies = await self._read(read)
        return await anyio.to_thread.run_sync(sql.build_dump, agent_row, tables, bodies)

    async def import_agents(self, dumps: AsyncIterable[AgentDump]) -> CopyCounts:
        """Write every dump in one transaction (waiting for the WAL flush at COMMIT): all of
        them, or none when anything fails or the copy is cancelled
        (docs/storage.md#moving-between-stores).

        Raises:
            CopyRefused: the store holds one of the agents, or one of their run, inbox
                message or question ids, already; nothing was written.
        """

        async def work(conn: asyncpg.Connection) -> CopyCounts:
            counts = CopyCounts()
            seen: set[bytes] = set()
            async for dump in dumps:
                new_bodies = await _write_dump(conn, dump)
                fresh = {b.fp for b in dump.bodies} - seen
                seen |= fresh
                counts = tallied(counts, dump, bodies=len(fresh), new_bodies=new_bodies)
            return counts

        return await self._write(work, full=True, shield=False)


async def _taken(conn: asyncpg.Connection, table: str, column: str, ids: list[str]) -> list[str]:
    found = await conn.fetch(f"SELECT {column} FROM {table} WHERE {column} = ANY($1::text[])", ids)
    return [row[0] for row in found]


async def _write_dump(conn: asyncpg.Connection, dump: AgentDump) -> int:
    """Write one agent's rows on the open transaction; the number of bodies that were new."""
    taken = {"agents": await _taken(conn, "agents", "agent_id", [dump.agent_id])}
    for name, column, _ in sql.UNIQUE_IDS:
        taken[name] = await _taken(conn, name, column, sql.ids_in(dump, name))
    sql.refuse_taken(dump.agent_id, taken)
    agent = await conn.fetchval(
        numbered(sql.AGENT_INSERT) + " RETURNING agent",
        dump.agent_id,
        dump.created_at_ms,
        dump.owner,
        dump.profile,
    )
    await conn.execute(numbered(sql.STATE_INSERT), agent, dump.state)
    new_bodies = 0
    for batch in _batches(dump.bodies):
        status = await conn.execute(
            "INSERT INTO bodies (fp, body) SELECT * FROM unnest($1::bytea[], $2::bytea[])"
            " ON CONFLICT DO NOTHING",
            [b.fp for b in batch],
            [b.body for b in batch],
        )
        new_bodies += int(status.rsplit(" ", 1)[-1])  # "INSERT 0 <rows>"
    runs: dict[str, int] = {}
    for table in sql.TABLES:
        insert = numbered(table.insert())
        for rows in _batches(sql.params_of(table, dump, int(agent), runs)):
            await conn.executemany(insert, rows)
        if table.name == "runs":
            found = await conn.fetch(numbered(sql.RUN_IDS_SELECT), agent)
            runs = {run_id: int(run) for run, run_id in found}
    return new_bodies
