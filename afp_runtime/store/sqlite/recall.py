"""The recall index on SQLite (docs/recall.md): an FTS5 search ranked by bm25, and the rebuild
of stores made before it; the writes are ``recall_index``'s."""

from __future__ import annotations

from functools import partial
from typing import Any

from afp_runtime.store import recall_rows
from afp_runtime.store.recall_values import RecallHit
from afp_runtime.store.sqlite._core import SqliteCore
from afp_runtime.store.sqlite.recall_index import write_entries

# How many messages hold a word, counted no further than past the candidates.
_HOLDING = (
    "SELECT COUNT(*) FROM (SELECT 1 FROM recall_text WHERE recall_text MATCH ?"
    f" ORDER BY rowid LIMIT {recall_rows.CANDIDATES + 1})"
)


def _search(*, since: bool, until: bool, ranked: bool) -> str:
    """The newest ``CANDIDATES`` matches of the agent (the FTS index walked by rowid, which is
    ``-entry``: newest first, read forwards, each joined to its entry, an order CROSS JOIN
    keeps), ranked by bm25 there (unless not ``ranked``: bm25 counts every message holding each
    word, which for a common word is a read of most of the index); then the best ``limit`` of
    them with their columns (docs/recall.md#ranking)."""
    score = "bm25(recall_text)" if ranked else "0.0"
    bounds = (" AND e.said_at_ms >= ?" if since else "") + (
        " AND e.said_at_ms < ?" if until else ""
    )
    return (
        f"WITH found AS (SELECT e.entry AS entry, {score} AS score"
        " FROM recall_text CROSS JOIN recall_entries e ON e.entry = -recall_text.rowid"
        " WHERE recall_text MATCH ? AND e.agent = (SELECT agent FROM agents WHERE agent_id = ?)"
        f"{bounds} ORDER BY recall_text.rowid LIMIT {recall_rows.CANDIDATES})"
        " SELECT e.kind, e.fingerprint, e.run_id, e.stage_id, e.role, e.content, e.tool_calls,"
        " e.tool_name, e.said_at_ms, 0.0 - found.score FROM found"
        " JOIN recall_entries e ON e.entry = found.entry"
        " ORDER BY found.score, e.said_at_ms DESC, e.entry DESC LIMIT ?"
    )


class Recall(SqliteCore):
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
        # What each word is held by (counted up to past the candidates): a word nothing holds
        # makes "all words" match nothing, so the search goes to "any word" at once, without it.
        holding: dict[str, int] = {}
        for word in words:
            match = recall_rows.fts5_query([word], any_word=False)
            [(holding[word],)] = await self._fetch(_HOLDING, (match,))
        held = tuple(word for word in words if holding[word])
        tries = [(words, False)] if len(held) == len(words) else []
        if len(words) > 1 and held:
            tries.append((held, True))
        bounds = [b for b in (since_ms, until_ms) if b is not None]
        rows: list[Any] = []
        for tried, any_word in tries:
            ranked = all(holding[word] <= recall_rows.CANDIDATES for word in tried)
            sql = _search(since=since_ms is not None, until=until_ms is not None, ranked=ranked)
            match = recall_rows.fts5_query(tried, any_word=any_word)
            rows = await self._fetch(sql, (match, agent_id, *bounds, limit))
            if rows:
                break
        return [recall_rows.cut(recall_rows.hit(agent_id, row), max_chars) for row in rows]

    async def reindex_recall(self, agent_id: str | None = None) -> int:
        """Rebuild the recall index of one agent (every agent when None) from the commit log:
        what is indexed already stays, what is missing is added (docs/recall.md#rebuilding).
        Returns how many entries were added."""
        sql = "SELECT agent, agent_id FROM agents"
        params: tuple[Any, ...] = ()
        if agent_id is not None:
            sql, params = sql + " WHERE agent_id = ?", (agent_id,)
        added = 0
        for agent, text_id in await self._fetch(sql + " ORDER BY agent", params):
            parts = await recall_rows.rebuilt_parts(self, text_id)  # type: ignore[arg-type]

            added += await self._write(
                partial(write_entries, agent=agent, agent_id=text_id, parts=parts)
            )
        return added
