"""The write side of a ``Txn``, as plain synchronous code on a ``sqlite3.Connection``.

The store runs ``write_txn`` on its connection's own thread in one hop: BEGIN, every insert and
update, COMMIT (or ROLLBACK) without returning to the event loop in between; concurrent waiters'
``Txn``s share that transaction, each in a savepoint (``group.write_group``). A transaction
used to cost a thread round trip per statement; now it costs one (issue 8: commits are the
loop's hot path, several per iteration under ``sync`` durability).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.errors import StoreError
from afp_runtime.messages import message_body
from afp_runtime.records import (
    CommitBundle,
    InboxUpdate,
    Item,
    JournalRow,
    RunStart,
    Txn,
    crashed_at_ms,
)
from afp_runtime.store import checks, recall_rows
from afp_runtime.store import rows as common
from afp_runtime.store.rows import NOT_DISPATCHED, TURN_CLOSED, fp_key
from afp_runtime.store.sqlite import recall_index

__all__ = ["NOT_DISPATCHED", "RowIds", "check_fence", "fp_key", "write_txn"]

_encoder = msgspec.msgpack.Encoder()


class RowIds:
    """Rowids of agents and runs, cached across transactions (cleared after a rollback)."""

    def __init__(self) -> None:
        self.agents: dict[str, int] = {}
        self.runs: dict[str, int] = {}

    def clear(self) -> None:
        self.agents.clear()
        self.runs.clear()

    def mark(self) -> tuple[int, int]:
        """How many rowids are cached now (``undo`` forgets the ones cached after)."""
        return len(self.agents), len(self.runs)

    def undo(self, mark: tuple[int, int]) -> None:
        """Forget the rowids cached since ``mark`` (dicts keep insertion order, and an id is
        only ever added, never replaced): they came from a rolled-back savepoint."""
        for cache, kept in zip((self.agents, self.runs), mark, strict=True):
            for text_id in list(itertools.islice(reversed(cache), len(cache) - kept)):
                del cache[text_id]

    def rowid(self, conn: sqlite3.Connection, table: str, text_id: str) -> int:
        """The rowid of the agent (``table="agent"``) or run of ``text_id``, cached."""
        cache = self.agents if table == "agent" else self.runs
        rowid = cache.get(text_id)
        if rowid is None:
            sql = f"SELECT {table} FROM {table}s WHERE {table}_id=?"
            found = conn.execute(sql, (text_id,)).fetchone()
            if found is None:
                raise StoreError(f"no {table} {text_id!r} in the store", **{f"{table}_id": text_id})
            rowid = cache[text_id] = int(found[0])
        return rowid


def check_fence(conn: sqlite3.Connection, agent_id: str, host_id: str, epoch: int) -> None:
    """Raise ``LeaseLost`` unless the agent is claimed by ``(host_id, epoch)`` and the host's
    lease row still carries ``epoch``: one indexed read, on every fenced commit."""
    row = conn.execute(
        "SELECT a.claim_host, a.claim_epoch, l.lease_epoch FROM agents a"
        " LEFT JOIN host_leases l ON l.host_id = ? WHERE a.agent_id = ?",
        (host_id, agent_id),
    ).fetchone()
    checks.check_fence(row, agent_id, host_id, epoch)


def write_txn(
    conn: sqlite3.Connection, txn: Txn, ids: RowIds, fence: tuple[str, int] | None
) -> None:
    """Every write of ``txn``, in order, on an open transaction."""
    if fence is not None:  # before any write: a lost lease writes nothing
        check_fence(conn, txn.agent_id, *fence)
    agent = ids.rowid(conn, "agent", txn.agent_id)
    if txn.run_start is not None:
        _insert_run(conn, agent, txn.run_start, ids)
    if txn.replace_conversation:
        _archive_conversation(conn, agent, txn)
    if txn.items:
        _insert_items(conn, agent, txn.items)
    if txn.bundles:
        _insert_bundles(conn, txn.bundles, ids)
    if txn.conversation is not None and not txn.replace_conversation and recall_rows.touches(txn):
        # Before the checkpoint moves on: what left the window is indexed in this transaction.
        recall_index.index_txn(conn, agent, txn.agent_id, txn)
    if txn.conversation is not None:
        conn.execute(
            "UPDATE conversations SET state=? WHERE agent=?",
            (_encoder.encode(txn.conversation), agent),
        )
    _end_runs(conn, txn)
    for update in txn.inbox:
        _update_inbox(conn, agent, update)
    if txn.journal:
        _insert_journal(conn, agent, txn.journal)
    if txn.ledger:
        _insert_ledger(conn, agent, txn.ledger)
    if txn.questions:
        conn.executemany(
            "INSERT INTO questions (question_id, agent, message_id, run_id, turn, kind, prompt,"
            " tool_call_ids, asked_at_ms, status, repeat, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [common.question_values(agent, q) for q in txn.questions],
        )
    for span in txn.folded:
        conn.execute(
            "INSERT INTO folded_spans SELECT ?, COALESCE(MAX(idx) + 1, 0), ?, ?"
            " FROM folded_spans WHERE agent=?",
            (agent, fp_key(span.summary_fingerprint), _encoder.encode(span), agent),
        )


def _insert_run(conn: sqlite3.Connection, agent: int, start: RunStart, ids: RowIds) -> None:
    cursor = conn.execute(
        "INSERT INTO runs (run_id, agent, turn, kind, message_id, recovered_from,"
        " status, started_at_ms, first_pos) VALUES (?, ?, ?, ?, ?, ?, 'running', ?,"
        # The position its first message gets (docs/recall.md#when-it-was-said).
        " (SELECT MAX(COALESCE(MAX(pos) + 1, 0), 0) FROM items WHERE agent=?))",
        (
            start.run_id,
            agent,
            start.turn,
            start.kind,
            start.message_id,
            start.recovered_from,
            start.started_at_ms,
            agent,
        ),
    )
    ids.runs[start.run_id] = cursor.lastrowid or 0


def _insert_bundles(conn: sqlite3.Connection, bundles: Sequence[CommitBundle], ids: RowIds) -> None:
    rows = [
        (
            ids.rowid(conn, "run", bundle.run_id),
            bundle.seq,
            bundle.stage,
            bundle.iteration,
            bundle.committed_at_ms,
            common.bundle_writes(bundle),
        )
        for bundle in bundles
    ]
    conn.executemany("INSERT INTO bundles VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.executemany(
        "INSERT INTO key_index VALUES (?, ?, ?, ?)",
        [
            (row[0], write.key, bundle.seq, write.verb)
            for row, bundle in zip(rows, bundles, strict=True)
            for write in bundle.writes
        ],
    )


def _end_runs(conn: sqlite3.Connection, txn: Txn) -> None:
    """The run a crash left running, and the run ``txn`` ends."""
    crashed_at = crashed_at_ms(txn)
    if txn.crashed_run is not None and crashed_at is not None:
        # Only a run nothing ended (a shutdown ends its runs ``cancelled`` itself).
        conn.execute(
            "UPDATE runs SET status='crashed', ended_at_ms=? WHERE run_id=? AND status='running'",
            (crashed_at, txn.crashed_run),
        )
    if txn.run_end is not None:
        conn.execute(
            "UPDATE runs SET status=?, ended_at_ms=?, usage=?, answer=?, error_kind=?, error=?,"
            " cost=? WHERE run_id=?",
            common.run_end_values(txn.run_end),
        )


def _update_inbox(conn: sqlite3.Connection, agent: int, update: InboxUpdate) -> None:
    conn.execute(
        "UPDATE inbox SET status=?, turn=COALESCE(?, turn) WHERE message_id=?",
        (update.status, update.turn, update.message_id),
    )
    if update.status in TURN_CLOSED:
        # The journal only settles calls of an unfinished turn
        # (docs/loop.md#tool-calls-in-flight-at-a-crash); once the turn is closed its
        # settlements live in the commit log, so the rows (each holding a result body) are
        # dropped rather than kept for ever.
        conn.execute(
            "DELETE FROM tool_journal WHERE agent=? AND message_id=?",
            (agent, update.message_id),
        )


def _insert_items(conn: sqlite3.Connection, agent: int, items: list[Item]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO bodies VALUES (?, ?)",
        [(bytes.fromhex(i.fingerprint), message_body(i.message)) for i in items],
    )
    conn.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?)",
        [common.item_values(agent, i) for i in items],
    )


def _insert_ledger(conn: sqlite3.Connection, agent: int, rows: list[dict[str, Any]]) -> None:
    found = conn.execute(
        "SELECT COALESCE(MAX(idx) + 1, 0) FROM ledger_rows WHERE agent=?", (agent,)
    ).fetchone()
    start = int(found[0])
    conn.executemany(
        "INSERT INTO ledger_rows VALUES (?, ?, ?, ?, ?)",
        [
            (agent, start + i, str(row.get("kind")), row.get("turn"), _encoder.encode(row))
            for i, row in enumerate(rows)
        ],
    )


def _archive_conversation(conn: sqlite3.Connection, agent: int, txn: Txn) -> None:
    """Copy the current checkpoint, spans and ledger to the archive; the new conversation
    starts with only the spans and rows ``txn`` brings."""
    state = conn.execute("SELECT state FROM conversations WHERE agent=?", (agent,)).fetchone()
    spans = conn.execute(
        "SELECT span FROM folded_spans WHERE agent=? ORDER BY idx", (agent,)
    ).fetchall()
    ledger = conn.execute(
        "SELECT row FROM ledger_rows WHERE agent=? ORDER BY idx", (agent,)
    ).fetchall()
    conn.execute(
        "INSERT INTO archived_conversations VALUES (?, ?, ?, ?, ?)",
        (
            agent,
            txn.conversation.checkpointed_at_ms if txn.conversation else 0,
            state[0],
            _encoder.encode([row[0] for row in spans]),
            _encoder.encode([row[0] for row in ledger]),
        ),
    )
    conn.execute("DELETE FROM folded_spans WHERE agent=?", (agent,))
    conn.execute("DELETE FROM ledger_rows WHERE agent=?", (agent,))


def _insert_journal(conn: sqlite3.Connection, agent: int, rows: Sequence[JournalRow]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO tool_journal VALUES (?, ?, ?, ?, ?, ?)",
        [(agent, r.message_id, r.tool_call_id, r.state, r.run_id, r.outcome) for r in rows],
    )
