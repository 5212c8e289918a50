"""Agents leaving and entering a SQLite store whole (docs/storage.md#moving-between-stores).

An export reads every table of one agent inside one read transaction (a WAL snapshot, so a
host writing meanwhile cannot tear it) on the connection's own thread; an import writes every
dump it is given in one ``BEGIN IMMEDIATE`` transaction, one hop per dump.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterable, Sequence

from afp_runtime.errors import NotFound, StoreError
from afp_runtime.store import dump_tables as sql
from afp_runtime.store.dump import AgentDump, CopyCounts, tallied
from afp_runtime.store.sqlite._core import SqliteCore, chunks, on_thread


class Moving(SqliteCore):
    """``export_agent`` and ``import_agents`` of the port."""

    async def export_agent(self, agent_id: str) -> AgentDump:
        """Every row of ``agent_id`` from one snapshot, checked (``dump_tables.build_dump``).

        Raises:
            NotFound: the store holds no such agent.
            StoreDamaged: a row does not read back; the message names it.
        """

        def work(conn: sqlite3.Connection) -> AgentDump:
            conn.execute("BEGIN")
            try:
                found = conn.execute(sql.AGENT_SELECT, (agent_id,)).fetchone()
                if found is None:
                    raise NotFound(
                        f"no agent {agent_id!r} in the store", what="agent", value=agent_id
                    )
                agent = found[0]
                tables = {t.name: conn.execute(t.select(), (agent,)).fetchall() for t in sql.TABLES}
                bodies = conn.execute(sql.BODIES_SELECT, (agent,)).fetchall()
            finally:
                conn.execute("ROLLBACK")  # a read: nothing to keep
            return sql.build_dump(found[1:], tables, bodies)

        async with self._lock:  # on the connection's own thread
            try:
                dump: AgentDump = await on_thread(self._conn, work)
            except sqlite3.Error as exc:
                raise StoreError(f"a store read failed: {exc}") from exc
        return dump

    async def import_agents(self, dumps: AsyncIterable[AgentDump]) -> CopyCounts:
        """Write every dump in one ``FULL`` transaction: all of them, or none when anything
        fails (docs/storage.md#moving-between-stores).

        Raises:
            CopyRefused: the store holds one of the agents, or one of their run, inbox
                message or question ids, already; nothing was written.
        """
        counts = CopyCounts()
        seen: set[bytes] = set()
        async with self._transaction(full=True) as db:
            async for dump in dumps:
                new_bodies = await on_thread(db, _write_dump, dump)
                fresh = {b.fp for b in dump.bodies} - seen
                seen |= fresh
                counts = tallied(counts, dump, bodies=len(fresh), new_bodies=new_bodies)
        return counts


def _taken(conn: sqlite3.Connection, table: str, column: str, ids: Sequence[str]) -> list[str]:
    found: list[str] = []
    for chunk in chunks(ids):
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(f"SELECT {column} FROM {table} WHERE {column} IN ({marks})", chunk)
        found.extend(row[0] for row in rows)
    return found


def _write_dump(conn: sqlite3.Connection, dump: AgentDump) -> int:
    """Write one agent's rows on the open transaction; the number of bodies that were new."""
    taken = {"agents": _taken(conn, "agents", "agent_id", [dump.agent_id])}
    for name, column, _ in sql.UNIQUE_IDS:
        taken[name] = _taken(conn, name, column, sql.ids_in(dump, name))
    sql.refuse_taken(dump.agent_id, taken)
    cursor = conn.execute(
        sql.AGENT_INSERT, (dump.agent_id, dump.created_at_ms, dump.owner, dump.profile)
    )
    agent = int(cursor.lastrowid or 0)
    conn.execute(sql.STATE_INSERT, (agent, dump.state))
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO bodies (fp, body) VALUES (?, ?)",
        [(b.fp, b.body) for b in dump.bodies],
    )
    new_bodies = conn.total_changes - before
    runs: dict[str, int] = {}
    for table in sql.TABLES:
        conn.executemany(table.insert(), sql.params_of(table, dump, agent, runs))
        if table.name == "runs":
            runs = {run_id: run for run, run_id in conn.execute(sql.RUN_IDS_SELECT, (agent,))}
    return new_bodies
