"""The recall index on Postgres (docs/recall.md): a full-text search of the ``simple``
configuration ranked by ``ts_rank_cd``, and the rebuild of stores made before it; the writes
are ``recall_index``'s."""

from __future__ import annotations

from typing import Any

import asyncpg

from afp_runtime.store import recall_rows
from afp_runtime.store.postgres._core import PostgresCore
from afp_runtime.store.postgres.recall_index import write_entries
from afp_runtime.store.recall_rows import Removed
from afp_runtime.store.recall_values import RecallHit


def _search(words: int, *, any_word: bool, since: bool, until: bool) -> str:
    """The search of ``words`` words: each a phrase of its tokens (``phraseto_tsquery``, never
    operators), all of them (``&&``) or any (``||``); ``$1`` the agent id, then the words, the
    bounds and the limit."""
    joiner = " || " if any_word else " && "
    query = joiner.join(f"phraseto_tsquery('simple', ${n})" for n in range(2, 2 + words))
    bounds = ""
    n = 2 + words
    if since:
        bounds += f" AND e.said_at_ms >= ${n}"
        n += 1
    if until:
        bounds += f" AND e.said_at_ms < ${n}"
        n += 1
    # The newest CANDIDATES matches of the agent, ranked there (docs/recall.md#ranking).
    return (
        "SELECT e.kind, e.fingerprint, e.run_id, e.stage_id, e.role, e.content, e.tool_calls,"
        " e.tool_name, e.said_at_ms, c.rank FROM (SELECT e.entry, ts_rank_cd(e.words, q.q) AS rank"
        f" FROM recall_entries e, (SELECT {query} AS q) q"
        " WHERE e.agent = (SELECT agent FROM agents WHERE agent_id = $1) AND e.words @@ q.q"
        f"{bounds} ORDER BY e.entry DESC LIMIT {recall_rows.CANDIDATES}) c"
        " JOIN recall_entries e ON e.entry = c.entry"
        f" ORDER BY c.rank DESC, e.said_at_ms DESC, e.entry DESC LIMIT ${n}"
    )


class Recall(PostgresCore):
    """``recall`` and ``reindex_recall`` of the port."""

    async def recall(
        self,
        agent_id: str,
        query: str,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 10,
        max_chars: int | None = None,
    ) -> list[RecallHit]:
        """The indexed messages of ``agent_id`` that match ``query``, best first
        (docs/recall.md#search).

        Raises:
            InvalidValue: the query or a bound is refused (docs/recall.md#queries).
        """
        words = recall_rows.query_words(query)
        recall_rows.check_limits(limit, max_chars)
        bounds = [b for b in (since_ms, until_ms) if b is not None]
        rows: list[Any] = []
        for any_word in (False, True) if len(words) > 1 else (False,):
            sql = _search(
                len(words),
                any_word=any_word,
                since=since_ms is not None,
                until=until_ms is not None,
            )
            rows = await self._fetch(sql, agent_id, *words, *bounds, limit)
            if rows:
                break
        return [recall_rows.cut(recall_rows.hit(agent_id, row), max_chars) for row in rows]

    async def reindex_recall(self, agent_id: str | None = None) -> int:
        """Rebuild the recall index of one agent (every agent when None) from the commit log:
        what is indexed already stays, what is missing is added (docs/recall.md#rebuilding).
        Returns how many entries were added."""
        sql = "SELECT agent, agent_id FROM agents"
        params: tuple[str, ...] = ()
        if agent_id is not None:
            sql, params = sql + " WHERE agent_id = $1", (agent_id,)
        added = 0
        for agent, text_id in await self._fetch(sql + " ORDER BY agent", *params):
            parts = await recall_rows.rebuilt_parts(self, text_id)  # type: ignore[arg-type]

            async def work(
                conn: asyncpg.Connection,
                agent: int = agent,
                text_id: str = text_id,
                parts: list[tuple[list[Removed], set[int]]] = parts,
            ) -> int:
                return await write_entries(conn, agent=agent, agent_id=text_id, parts=parts)

            added += await self._write(work)
        return added
