"""The write side of a ``Txn`` on an open Postgres transaction.

The first statement locks the agent's row (``FOR UPDATE``); a fenced store then reads its
host's lease row ``FOR SHARE`` and checks the claim (``checks.check_fence``) before writing
anything. Both locks are held until COMMIT, so an epoch raised or a claim moved by another
host waits for this transaction, or this one sees it and writes nothing.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from afp_runtime.errors import StoreError
from afp_runtime.messages import message_body
from afp_runtime.records import Txn, crashed_at_ms
from afp_runtime.store import checks, recall_rows
from afp_runtime.store import rows as common
from afp_runtime.store.rows import TURN_CLOSED, encoder, fp_key


async def write_txn(conn: asyncpg.Connection, txn: Txn, fence: tuple[str, int] | None) -> None:
    """Every write of ``txn``, in order, on an open transaction.

    Raises:
        LeaseLost: the fence no longer holds; nothing was written.
        StoreError: the agent or a bundle's run is unknown.
    """
    row = await conn.fetchrow(
        "SELECT agent, claim_host, claim_epoch FROM agents WHERE agent_id = $1 FOR UPDATE",
        txn.agent_id,
    )
    if fence is not None:
        host_id, epoch = fence
        lease = await conn.fetchval(
            "SELECT lease_epoch FROM host_leases WHERE host_id = $1 FOR SHARE", host_id
        )
        claim = None if row is None else (row["claim_host"], row["claim_epoch"], lease)
        checks.check_fence(claim, txn.agent_id, host_id, epoch)
    if row is None:
        raise StoreError(f"no agent {txn.agent_id!r} in the store", agent_id=txn.agent_id)
    agent = int(row["agent"])
    runs: dict[str, int] = {}
    if txn.run_start is not None:
        s = txn.run_start
        runs[s.run_id] = await conn.fetchval(
            "INSERT INTO runs (run_id, agent, turn, kind, message_id, recovered_from, status,"
            " started_at_ms) VALUES ($1, $2, $3, $4, $5, $6, 'running', $7) RETURNING run",
            s.run_id,
            agent,
            s.turn,
            s.kind,
            s.message_id,
            s.recovered_from,
            s.started_at_ms,
        )
    if txn.replace_conversation:
        await _archive_conversation(conn, agent, txn)
    if txn.items:
        await _insert_items(conn, agent, txn)
    if txn.bundles:
        await _insert_bundles(conn, txn, runs)
    if txn.conversation is not None and not txn.replace_conversation and recall_rows.touches(txn):
        # Before the checkpoint moves on: what left the window is indexed in this transaction.
        from afp_runtime.store.postgres import recall_index  # it imports this module

        await recall_index.index_txn(conn, agent, txn)
    await _update_runs(conn, agent, txn)
    if txn.journal:
        await conn.executemany(
            "INSERT INTO tool_journal VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            [
                (agent, r.message_id, r.tool_call_id, r.state, r.run_id, r.outcome)
                for r in txn.journal
            ],
        )
    if txn.ledger:
        start = await conn.fetchval(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM ledger_rows WHERE agent = $1", agent
        )
        await conn.executemany(
            "INSERT INTO ledger_rows VALUES ($1, $2, $3, $4, $5)",
            [
                (agent, start + i, str(r.get("kind")), r.get("turn"), encoder.encode(r))
                for i, r in enumerate(txn.ledger)
            ],
        )
    if txn.questions:
        await _insert_questions(conn, agent, txn)
    for span in txn.folded:
        await conn.execute(
            "INSERT INTO folded_spans SELECT $1, COALESCE(MAX(idx) + 1, 0), $2, $3"
            " FROM folded_spans WHERE agent = $1",
            agent,
            fp_key(span.summary_fingerprint),
            encoder.encode(span),
        )


async def _run_of(conn: asyncpg.Connection, run_id: str, runs: dict[str, int]) -> int:
    run = runs.get(run_id)
    if run is None:
        run = await conn.fetchval("SELECT run FROM runs WHERE run_id = $1", run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in the store", run_id=run_id)
        runs[run_id] = run
    return int(run)


async def _insert_bundles(conn: asyncpg.Connection, txn: Txn, runs: dict[str, int]) -> None:
    bundles: list[tuple[Any, ...]] = []
    keys: list[tuple[Any, ...]] = []
    for b in txn.bundles:
        run = await _run_of(conn, b.run_id, runs)
        bundles.append(
            (run, b.seq, b.stage, b.iteration, b.committed_at_ms, common.bundle_writes(b))
        )
        keys.extend((run, w.key, b.seq, w.verb) for w in b.writes)
    await conn.executemany("INSERT INTO bundles VALUES ($1, $2, $3, $4, $5, $6)", bundles)
    if keys:
        await conn.executemany("INSERT INTO key_index VALUES ($1, $2, $3, $4)", keys)


async def _insert_items(conn: asyncpg.Connection, agent: int, txn: Txn) -> None:
    await conn.executemany(
        "INSERT INTO bodies VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [(bytes.fromhex(i.fingerprint), message_body(i.message)) for i in txn.items],
    )
    await conn.executemany(
        "INSERT INTO items VALUES ($1, $2, $3, $4, $5)",
        [common.item_values(agent, i) for i in txn.items],
    )


async def _update_runs(conn: asyncpg.Connection, agent: int, txn: Txn) -> None:
    """The checkpoint, the crashed and ended runs, and the inbox of ``txn``."""
    if txn.conversation is not None:
        await conn.execute(
            "UPDATE conversations SET state = $1 WHERE agent = $2",
            encoder.encode(txn.conversation),
            agent,
        )
    crashed_at = crashed_at_ms(txn)
    if txn.crashed_run is not None and crashed_at is not None:
        # Only a run nothing ended (a shutdown ends its runs ``cancelled`` itself).
        await conn.execute(
            "UPDATE runs SET status = 'crashed', ended_at_ms = $1"
            " WHERE run_id = $2 AND status = 'running'",
            crashed_at,
            txn.crashed_run,
        )
    if txn.run_end is not None:
        status, ended, usage, answer, error_kind, error, cost, run_id = common.run_end_values(
            txn.run_end
        )
        await conn.execute(
            "UPDATE runs SET status = $1, ended_at_ms = $2, usage = $3, answer = $4,"
            " error_kind = $5, error = $6, cost = $7 WHERE run_id = $8",
            *(status, ended, usage, text_cell(answer), error_kind, text_cell(error), cost, run_id),
        )
    for update in txn.inbox:
        await conn.execute(
            "UPDATE inbox SET status = $1, turn = COALESCE($2, turn) WHERE message_id = $3",
            update.status,
            update.turn,
            update.message_id,
        )
        if update.status in TURN_CLOSED:
            # A closed turn's settlements live in the commit log (docs/storage.md#the-tool-journal).
            await conn.execute(
                "DELETE FROM tool_journal WHERE agent = $1 AND message_id = $2",
                agent,
                update.message_id,
            )


async def _insert_questions(conn: asyncpg.Connection, agent: int, txn: Txn) -> None:
    rows = [common.question_values(agent, q) for q in txn.questions]
    await conn.executemany(
        "INSERT INTO questions (question_id, agent, message_id, run_id, turn, kind, prompt,"
        " tool_call_ids, asked_at_ms, status, repeat, detail)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        [(*row[:6], text_cell(row[6]), *row[7:]) for row in rows],
    )


def text_cell(value: str | None) -> str | None:
    """A copy of model- or tool-written text for a ``TEXT`` column, which cannot hold U+0000:
    each one becomes U+FFFD (docs/storage.md#postgres-text-and-u0000). The committed messages,
    stored as bytes, keep it exactly."""
    return value.replace("\x00", "\ufffd") if value is not None and "\x00" in value else value


async def _archive_conversation(conn: asyncpg.Connection, agent: int, txn: Txn) -> None:
    """Copy the current checkpoint, spans and ledger to the archive; the new conversation
    starts with only the spans and rows ``txn`` brings."""
    state = await conn.fetchval("SELECT state FROM conversations WHERE agent = $1", agent)
    spans = await conn.fetch("SELECT span FROM folded_spans WHERE agent = $1 ORDER BY idx", agent)
    ledger = await conn.fetch('SELECT "row" FROM ledger_rows WHERE agent = $1 ORDER BY idx', agent)
    await conn.execute(
        "INSERT INTO archived_conversations VALUES ($1, $2, $3, $4, $5)",
        agent,
        txn.conversation.checkpointed_at_ms if txn.conversation else 0,
        state,
        encoder.encode([r[0] for r in spans]),
        encoder.encode([r[0] for r in ledger]),
    )
    await conn.execute("DELETE FROM folded_spans WHERE agent = $1", agent)
    await conn.execute("DELETE FROM ledger_rows WHERE agent = $1", agent)
