"""Agents and their conversations on Postgres: creating one, commits, checkpoints, history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from afp_runtime.records import ConversationState, Txn
from afp_runtime.store import recall_rows
from afp_runtime.store.mixins import Loading
from afp_runtime.store.postgres import parts, writes
from afp_runtime.store.postgres.group import Grouping
from afp_runtime.store.rows import encoder


class Conversations(Loading, Grouping):
    """Agents, commits, checkpoints and the resolved history."""

    async def commit(self, txn: Txn) -> None:
        """Write ``txn`` in one transaction, with the commits of other agents made meanwhile, in
        one round trip (docs/storage.md#one-round-trip-per-commit); nothing of it is written if
        any part of it fails (a fenced store checks its claim inside that transaction first)."""
        if txn.empty():
            return
        fence = self._fence
        if txn.replace_conversation or recall_rows.touches(txn):
            # An import's archive of the conversation, and a window visit that sets the window
            # (what it removed is indexed, docs/recall.md), run alone, statement by statement.
            await self._write(lambda conn: writes.write_txn(conn, txn, fence), full=txn.full)
            return
        await self._commit_grouped(parts.Member(txn, fence))

    async def ensure_agent(self, agent_id: str, *, now_ms: int) -> None:
        """Create the agent and its empty conversation when it does not exist yet."""
        if agent_id in self._known_agents:
            return

        async def work(conn: asyncpg.Connection) -> None:
            agent = await conn.fetchval(
                "INSERT INTO agents (agent_id, created_at_ms) VALUES ($1, $2)"
                " ON CONFLICT (agent_id) DO NOTHING RETURNING agent",
                agent_id,
                now_ms,
            )
            if agent is not None:
                state = ConversationState(agent_id=agent_id, checkpointed_at_ms=now_ms)
                await conn.execute(
                    "INSERT INTO conversations VALUES ($1, $2)", agent, encoder.encode(state)
                )

        await self._write(work)
        self._known_agents.add(agent_id)

    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint of ``agent_id`` without its messages, or None."""
        found = await self._fetch(
            "SELECT c.state FROM conversations c JOIN agents a ON a.agent = c.agent"
            " WHERE a.agent_id = $1",
            agent_id,
        )
        return self._decode_state(found[0][0], agent_id) if found else None

    @staticmethod
    def _placeholder(n: int) -> str:
        return f"${n}"

    async def _read_rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return await self._fetch(sql, *params)
