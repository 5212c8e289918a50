"""The writes of the recall index on SQLite (docs/recall.md): entries written in the transaction
of the window visit that removed them (and by a rebuild), as plain synchronous code.

``index_txn`` runs inside ``writes.write_txn`` on the connection's thread; the rows it reads are
O(window), and only for a transaction whose window visit set the window.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from afp_runtime.records import ListRef, Txn
from afp_runtime.store import recall_rows
from afp_runtime.store import rows as common
from afp_runtime.store.recall_rows import Removed

_INSERT = (
    f"INSERT OR IGNORE INTO recall_entries (agent, {recall_rows.ENTRY_COLUMNS})"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The run that appended a position: the last one whose first position is at or before it.
_SAID = (
    "SELECT r.first_pos, r.started_at_ms, i.accepted_at_ms FROM runs r"
    " LEFT JOIN inbox i ON i.message_id = r.message_id"
    " WHERE r.agent = ? AND r.first_pos IS NOT NULL AND r.first_pos <= ?"
    " ORDER BY r.first_pos DESC, r.run DESC LIMIT 1"
)


def index_txn(conn: sqlite3.Connection, agent: int, agent_id: str, txn: Txn) -> None:
    """Index what the window visits of ``txn`` removed; called before its checkpoint is
    written, so the stored one is still the window before it."""
    found = conn.execute("SELECT state FROM conversations WHERE agent=?", (agent,)).fetchone()
    old = common.decode_state(found[0], agent_id).history if found else ListRef()
    removed, kept = recall_rows.removals(old, txn.bundles, txn.folded)
    if removed:
        write_entries(conn, agent=agent, agent_id=agent_id, parts=[(removed, kept)])


def write_entries(
    conn: sqlite3.Connection,
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
        rows = _items(conn, agent_id, {r.pos for r in removed}, with_bodies=True)
        kept_fps = {bytes(row[1]) for row in _items(conn, agent_id, kept, with_bodies=False)}
        said = {}
        for r in removed:
            run = conn.execute(_SAID, (agent, r.pos)).fetchone()
            if run is not None:
                said[r.pos] = (int(run[0]), int(run[1]), run[2])
        for entry in recall_rows.entries(agent_id, removed, rows, kept_fps, said):
            cursor = conn.execute(_INSERT, recall_rows.entry_values(agent, entry))
            if cursor.rowcount:
                conn.execute(
                    "INSERT INTO recall_text (rowid, body) VALUES (?, ?)",
                    (-(cursor.lastrowid or 0), entry.text()),
                )
                added += 1
    return added


def _items(
    conn: sqlite3.Connection, agent_id: str, positions: set[int], *, with_bodies: bool
) -> list[Any]:
    columns, joins = ("i.pos, i.fp", "")
    if with_bodies:
        columns, joins = (
            "i.pos, i.fp, i.flags, i.injected_by, b.body",
            " LEFT JOIN bodies b ON b.fp = i.fp",
        )
    found: list[Any] = []
    for ranges in common.chunks(recall_rows.position_ranges(positions)):
        sql, params = common.ranges_read(columns, joins, ranges, lambda _n: "?")
        found += conn.execute(sql, [agent_id, *params]).fetchall()
    return found
