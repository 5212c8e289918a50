"""Listings (agents, runs, bundles, folded spans, ledger rows) and a run's log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from afp_runtime.errors import NotFound
from afp_runtime.records import LedgerRow, RunLog, StoredFoldedSpan
from afp_runtime.store import rows as common
from afp_runtime.store.sqlite import writes
from afp_runtime.store.sqlite._core import SqliteCore
from afp_runtime.store.sqlite.runlog import SqliteRunLog
from afp_runtime.store.values import AgentRow, RunRow, StoredBundle

T = TypeVar("T")

PROFILE_SINCE = 15
"""The schema version that added ``agents.profile``."""


# The columns ``rows.run_row`` reads, in its order.
RUN_COLUMNS = (
    "r.run_id, a.agent_id, r.turn, r.kind, r.message_id, r.status,"
    " r.started_at_ms, r.recovered_from, r.ended_at_ms, r.usage,"
    " (SELECT COUNT(*) FROM bundles b WHERE b.run = r.run), r.answer, r.error_kind, r.error,"
    " r.cost"
)


class Runs(SqliteCore):
    """What the API and CLI list, and the served reads of one run."""

    async def agents(self) -> list[AgentRow]:
        """Every agent with a summary of its conversation, by id."""
        # A reader of a file made before migration 15 has no profile column to read.
        profile = "a.profile" if self._stored_version >= PROFILE_SINCE else "NULL"
        rows = await self._fetch(
            f"SELECT a.agent_id, a.created_at_ms, c.state, {profile} FROM agents a"
            " JOIN conversations c ON c.agent=a.agent ORDER BY a.agent_id"
        )
        return [common.agent_row(*row) for row in rows]

    async def runs(self, agent_id: str | None = None, *, run_id: str | None = None) -> list[RunRow]:
        """Runs in start order: all, one agent's, or one by id."""
        sql = f"SELECT {RUN_COLUMNS} FROM runs r JOIN agents a ON a.agent=r.agent"
        params: tuple[Any, ...] = ()
        if agent_id is not None:
            sql += " WHERE a.agent_id=?"
            params = (agent_id,)
        elif run_id is not None:
            sql += " WHERE r.run_id=?"
            params = (run_id,)
        # One agent's runs in the order they were written; all agents' by when they started,
        # since an imported agent's runs get row ids after those already there.
        order = " ORDER BY r.run" if agent_id is not None else " ORDER BY r.started_at_ms, r.run"
        rows = await self._fetch(sql + order, params)
        return [common.run_row(r) for r in rows]

    async def bundles(self, run_id: str, *, from_seq: int = 0) -> list[StoredBundle]:
        """A run's commit log from ``from_seq``, in commit order."""
        rows = await self._fetch(
            "SELECT b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes FROM bundles b"
            " JOIN runs r ON r.run=b.run WHERE r.run_id=? AND b.seq>=? ORDER BY b.seq",
            (run_id, from_seq),
        )
        return common.stored_bundles(run_id, rows)

    async def last_bundle(self, run_id: str) -> StoredBundle | None:
        """The last committed bundle of a run (what a recovery looks at), or None."""
        rows = await self._fetch(
            "SELECT MAX(b.seq) FROM bundles b JOIN runs r ON r.run=b.run WHERE r.run_id=?",
            (run_id,),
        )
        if not rows or rows[0][0] is None:
            return None
        found = await self.bundles(run_id, from_seq=int(rows[0][0]))
        return found[0] if found else None

    async def folded_spans(
        self, agent_id: str, *, summary_fingerprint: str | None = None
    ) -> list[StoredFoldedSpan]:
        """The conversation's folded spans, oldest first (or those of one summary)."""
        sql = (
            "SELECT f.span FROM folded_spans f JOIN agents a ON a.agent=f.agent WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if summary_fingerprint is not None:
            sql += " AND f.summary_fp=?"
            params += (writes.fp_key(summary_fingerprint),)
        rows = await self._fetch(sql + " ORDER BY f.idx", params)
        return common.folded_spans(agent_id, rows)

    async def ledger(
        self, agent_id: str, *, kind: str | None = None, turn: int | None = None
    ) -> list[LedgerRow]:
        """The conversation's ledger rows, typed, oldest first, optionally filtered
        (docs/storage.md#typed-ledger-rows)."""
        sql = (
            "SELECT l.idx, l.row FROM ledger_rows l JOIN agents a ON a.agent=l.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if kind is not None:
            sql += " AND l.kind=?"
            params += (kind,)
        if turn is not None:
            sql += " AND l.turn=?"
            params += (turn,)
        rows = await self._fetch(sql + " ORDER BY l.idx", params)
        return common.ledger_rows(agent_id, rows)

    async def read_run(self, run_id: str, read: Callable[[RunLog], T]) -> T:
        """``read`` over the run's log in a worker thread, on a read-only connection of its
        own (docs/served.md#the-runlog-interface).

        Raises:
            NotFound: there is no such run.
        """

        def work() -> T:
            try:
                log = SqliteRunLog(self.path, run_id)
            except KeyError:
                raise NotFound(f"there is no run {run_id!r}", what="run", value=run_id) from None
            with log:
                return read(log)

        return await anyio.to_thread.run_sync(work)
