"""Agents and their conversations on Postgres: creating one, commits, checkpoints, history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from afp_runtime.records import ConversationState, Txn
from afp_runtime.store import recall_rows
from afp_runtime.store import rows as common
from afp_runtime.store.mixins import Loading
from afp_runtime.store.postgres import parts, writes
from afp_runtime.store.postgres.group import Grouping
from afp_runtime.store.rows import encoder
from afp_runtime.store.values import DefinitionSummary


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

    async def ensure_agent(
        self, agent_id: str, *, now_ms: int, definition: DefinitionSummary | None = None
    ) -> None:
        """Create the agent and its empty conversation when it does not exist yet, and record
        ``definition`` as its summary when given and different from the stored one."""
        cell = common.encode_profile(definition) if definition is not None else None
        if agent_id in self._known_agents and (
            cell is None or self._profiles.get(agent_id) == cell
        ):
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
            if cell is not None:
                await conn.execute(
                    "UPDATE agents SET profile = $1 WHERE agent_id = $2"
                    " AND profile IS DISTINCT FROM $1",
                    cell,
                    agent_id,
                )

        await self._write(work)
        self._known_agents.add(agent_id)
        if cell is not None:
            self._profiles[agent_id] = cell

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
