"""Listings (agents, runs, bundles, folded spans, ledger rows) and a run's log, on Postgres."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from afp_runtime.errors import NotFound
from afp_runtime.records import LedgerRow, RunLog, StoredFoldedSpan
from afp_runtime.store import rows as common
from afp_runtime.store.postgres._core import PostgresCore
from afp_runtime.store.postgres.runlog import PostgresRunLog
from afp_runtime.store.values import AgentRow, RunRow, StoredBundle

T = TypeVar("T")

PROFILE_SINCE = 6
"""The schema version that added ``agents.profile``."""


# The columns ``rows.run_row`` reads, in its order.
RUN_COLUMNS = (
    "r.run_id, a.agent_id, r.turn, r.kind, r.message_id, r.status,"
    " r.started_at_ms, r.recovered_from, r.ended_at_ms, r.usage,"
    " (SELECT COUNT(*) FROM bundles b WHERE b.run = r.run), r.answer, r.error_kind, r.error,"
    " r.cost"
)


class Runs(PostgresCore):
    """What the API and CLI list, and the served reads of one run."""

    async def agents(self) -> list[AgentRow]:
        """Every agent with a summary of its conversation, by id."""
        # A reader of a database made before migration 6 has no profile column to read.
        profile = "a.profile" if self._stored_version >= PROFILE_SINCE else "NULL"
        found = await self._fetch(
            f"SELECT a.agent_id, a.created_at_ms, c.state, {profile} FROM agents a"
            ' JOIN conversations c ON c.agent = a.agent ORDER BY a.agent_id COLLATE "C"'
        )
        return [common.agent_row(*row) for row in found]

    async def runs(self, agent_id: str | None = None, *, run_id: str | None = None) -> list[RunRow]:
        """Runs in start order: all, one agent's, or one by id."""
        sql = f"SELECT {RUN_COLUMNS} FROM runs r JOIN agents a ON a.agent = r.agent"
        args: tuple[Any, ...] = ()
        if agent_id is not None:
            sql, args = sql + " WHERE a.agent_id = $1", (agent_id,)
        elif run_id is not None:
            sql, args = sql + " WHERE r.run_id = $1", (run_id,)
        # As SQLite's: one agent's in written order, all agents' by when they started.
        order = " ORDER BY r.run" if agent_id is not None else " ORDER BY r.started_at_ms, r.run"
        return [common.run_row(r) for r in await self._fetch(sql + order, *args)]

    async def bundles(self, run_id: str, *, from_seq: int = 0) -> list[StoredBundle]:
        """A run's commit log from ``from_seq``, in commit order."""
        found = await self._fetch(
            "SELECT b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes FROM bundles b"
            " JOIN runs r ON r.run = b.run WHERE r.run_id = $1 AND b.seq >= $2 ORDER BY b.seq",
            run_id,
            from_seq,
        )
        return common.stored_bundles(run_id, found)

    async def last_bundle(self, run_id: str) -> StoredBundle | None:
        """The last committed bundle of a run (what a recovery looks at), or None."""
        found = await self._fetch(
            "SELECT b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes FROM bundles b"
            " JOIN runs r ON r.run = b.run WHERE r.run_id = $1 ORDER BY b.seq DESC LIMIT 1",
            run_id,
        )
        return common.stored_bundles(run_id, found)[0] if found else None

    async def folded_spans(
        self, agent_id: str, *, summary_fingerprint: str | None = None
    ) -> list[StoredFoldedSpan]:
        """The conversation's folded spans, oldest first (or those of one summary)."""
        found = await self._fetch(
            "SELECT f.span FROM folded_spans f JOIN agents a ON a.agent = f.agent"
            " WHERE a.agent_id = $1 AND ($2::bytea IS NULL OR f.summary_fp = $2) ORDER BY f.idx",
            agent_id,
            None if summary_fingerprint is None else common.fp_key(summary_fingerprint),
        )
        return common.folded_spans(agent_id, found)

    async def ledger(
        self, agent_id: str, *, kind: str | None = None, turn: int | None = None
    ) -> list[LedgerRow]:
        """The conversation's ledger rows, typed, oldest first, optionally filtered
        (docs/storage.md#typed-ledger-rows)."""
        found = await self._fetch(
            'SELECT l.idx, l."row" FROM ledger_rows l JOIN agents a ON a.agent = l.agent'
            " WHERE a.agent_id = $1 AND ($2::text IS NULL OR l.kind = $2)"
            " AND ($3::bigint IS NULL OR l.turn = $3) ORDER BY l.idx",
            agent_id,
            kind,
            turn,
        )
        return common.ledger_rows(agent_id, found)

    async def read_run(self, run_id: str, read: Callable[[RunLog], T]) -> T:
        """``read`` over the run's log in a worker thread (docs/served.md#the-runlog-interface);
        each read the log makes is one query run back on the event loop, so only the keys
        and bodies ``read`` asks for are fetched.

        Raises:
            NotFound: there is no such run.
        """

        def work() -> T:
            try:
                log = PostgresRunLog(self._fetch, run_id)
            except KeyError:
                raise NotFound(f"there is no run {run_id!r}", what="run", value=run_id) from None
            return read(log)

        return await anyio.to_thread.run_sync(work)
