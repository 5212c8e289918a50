"""Agents and their conversations: creating one, commits, checkpoints and history."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from afp_runtime.records import ConversationState, Txn
from afp_runtime.store import rows as common
from afp_runtime.store.mixins import Loading
from afp_runtime.store.sqlite import writes
from afp_runtime.store.sqlite._core import SqliteCore, encoder
from afp_runtime.store.values import DefinitionSummary


class Conversations(Loading, SqliteCore):
    """Agents, commits, checkpoints and the resolved history."""

    async def commit(self, txn: Txn) -> None:
        """Write ``txn`` in one transaction; nothing of it is written if any part fails."""
        if txn.empty():
            return
        fence = self._fence
        await self._write(lambda conn: writes.write_txn(conn, txn, self._ids, fence), full=txn.full)

    async def ensure_agent(
        self, agent_id: str, *, now_ms: int, definition: DefinitionSummary | None = None
    ) -> None:
        """Create the agent and its empty conversation when it does not exist yet, and record
        ``definition`` as its summary when given and different from the stored one."""
        cell = common.encode_profile(definition) if definition is not None else None
        if agent_id in self._ids.agents and (cell is None or self._profiles.get(agent_id) == cell):
            return  # agent rows are never deleted: a cached rowid is an agent that exists
        empty = encoder.encode(ConversationState(agent_id=agent_id, checkpointed_at_ms=now_ms))

        def work(conn: sqlite3.Connection) -> int:
            found = conn.execute("SELECT agent FROM agents WHERE agent_id=?", (agent_id,))
            row = found.fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO agents (agent_id, created_at_ms) VALUES (?, ?)",
                    (agent_id, now_ms),
                )
                rowid = cursor.lastrowid or 0
                conn.execute("INSERT INTO conversations VALUES (?, ?)", (rowid, empty))
            else:
                rowid = int(row[0])
            if cell is not None:
                conn.execute(
                    "UPDATE agents SET profile=? WHERE agent=? AND profile IS NOT ?",
                    (cell, rowid, cell),
                )
            return rowid

        # One hop, and with other writers' commits in one group (docs/storage.md#group-commit).
        self._ids.agents[agent_id] = await self._write(work)
        if cell is not None:
            self._profiles[agent_id] = cell

    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint of ``agent_id`` without its messages, or None."""
        rows = await self._fetch(
            "SELECT c.state FROM conversations c JOIN agents a ON a.agent=c.agent"
            " WHERE a.agent_id=?",
            (agent_id,),
        )
        return common.decode_state(rows[0][0], agent_id) if rows else None

    @staticmethod
    def _placeholder(n: int) -> str:
        return "?"

    async def _read_rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return await self._fetch(sql, params)
