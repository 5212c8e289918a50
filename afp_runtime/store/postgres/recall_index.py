"""The writes of the recall index on Postgres (docs/recall.md): entries written in the
transaction of the window visit that removed them (and by a rebuild).

A transaction whose window visit set the window is committed statement by statement
(``Conversations.commit``), not by ``afp_commit``: ``index_txn`` runs inside ``writes.write_txn``
before the checkpoint moves on. Such visits are a small share of commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from afp_runtime.records import ListRef, Txn
from afp_runtime.store import recall_rows
from afp_runtime.store import rows as common
from afp_runtime.store.postgres.writes import text_cell
from afp_runtime.store.recall_rows import Removed

# Every entry of a visit in one statement: one array per column.
_INSERT = (
    f"INSERT INTO recall_entries (agent, {recall_rows.ENTRY_COLUMNS})"
    " SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],"
    " $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[])"
    " ON CONFLICT (agent, pos) DO NOTHING RETURNING entry"
)
# The run that appended each position: the last one whose first position is at or before it.
_SAID = (
    "SELECT p.pos, r.first_pos, r.started_at_ms, i.accepted_at_ms FROM unnest($2::bigint[]) p(pos)"
    " CROSS JOIN LATERAL (SELECT first_pos, started_at_ms, message_id FROM runs"
    "   WHERE agent = $1 AND first_pos IS NOT NULL AND first_pos <= p.pos"
    "   ORDER BY first_pos DESC, run DESC LIMIT 1) r"
    " LEFT JOIN inbox i ON i.message_id = r.message_id"
)


async def index_txn(conn: asyncpg.Connection, agent: int, txn: Txn) -> None:
    """Index what the window visits of ``txn`` removed; called before its checkpoint is
    written, so the stored one is still the window before it."""
    blob = await conn.fetchval("SELECT state FROM conversations WHERE agent = $1", agent)
    old = common.decode_state(blob, txn.agent_id).history if blob is not None else ListRef()
    removed, kept = recall_rows.removals(old, txn.bundles, txn.folded)
    if removed:
        await write_entries(conn, agent=agent, agent_id=txn.agent_id, parts=[(removed, kept)])


async def write_entries(
    conn: asyncpg.Connection,
    *,
    agent: int,
    agent_id: str,
    parts: Sequence[tuple[Sequence[Removed], set[int]]],
) -> int:
    """Write the entries of each ``(removed, kept)`` part; those already indexed (by position)
    are left as they are. Returns how many were added."""
    added = 0
    for removed, kept in parts:
        if not removed:
            continue
        rows = await _items(conn, agent_id, {r.pos for r in removed}, with_bodies=True)
        kept_fps = {bytes(row[1]) for row in await _items(conn, agent_id, kept, with_bodies=False)}
        said = {
            int(row[0]): (int(row[1]), int(row[2]), row[3])
            for row in await conn.fetch(_SAID, agent, [r.pos for r in removed])
        }
        values = [
            _cells(recall_rows.entry_values(agent, entry)[1:])
            for entry in recall_rows.entries(agent_id, removed, rows, kept_fps, said)
        ]
        if values:
            columns = [list(column) for column in zip(*values, strict=True)]
            added += len(await conn.fetch(_INSERT, agent, *columns))
    return added


def _cells(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's text cells as a ``TEXT`` column holds them (U+0000 becomes U+FFFD)."""
    return tuple(text_cell(v) if isinstance(v, str) else v for v in values)


async def _items(
    conn: asyncpg.Connection, agent_id: str, positions: set[int], *, with_bodies: bool
) -> list[Any]:
    columns, joins = "i.pos, i.fp", ""
    if with_bodies:
        columns = "i.pos, i.fp, i.flags, i.injected_by, b.body"
        joins = " LEFT JOIN bodies b ON b.fp = i.fp"
    found: list[Any] = []
    for ranges in common.chunks(recall_rows.position_ranges(positions)):
        sql, params = common.ranges_read(columns, joins, ranges, lambda n: f"${n}")
        found += await conn.fetch(sql, agent_id, *params)
    return found
