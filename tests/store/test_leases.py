"""Host leases, agent claims and commit fencing in the SQLite store, as its rows show them
(docs/host.md#ownership-and-leases;
docs/architecture.md#decision-12-one-lease-row-per-host-process,
docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once). Two stores on one
file stand for two host processes; the backend-neutral contracts are in
afp_runtime/testing/store_leases.py."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from afp_runtime.errors import LeaseLost
from afp_runtime.messages import user
from afp_runtime.records import TurnWrite, Txn
from afp_runtime.store.sqlite import SCHEMA_VERSION, SqliteStore
from afp_runtime.testing.store_conformance import T0, bundle, items_at, run_start

TTL = 30_000


async def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """One statement on a separate connection in a worker thread."""

    def run() -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(path)
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return await anyio.to_thread.run_sync(run)


async def row_counts(path: Path) -> dict[str, int]:
    """Rows per table a turn's commit writes to."""
    counts = {}
    for table in ("runs", "bundles", "key_index", "items", "bodies", "inbox", "tool_journal"):
        counts[table] = (await raw(path, f"SELECT COUNT(*) FROM {table}"))[0][0]
    return counts


async def lease_row(path: Path, host_id: str) -> tuple[int, int, int] | None:
    """(lease_epoch, expires_at_ms, renewed_at_ms) of a host's row."""
    rows = await raw(
        path,
        "SELECT lease_epoch, expires_at_ms, renewed_at_ms FROM host_leases WHERE host_id=?",
        (host_id,),
    )
    return rows[0] if rows else None


@pytest.fixture(name="path")
def fixture_path(tmp_path: Path) -> Path:
    return tmp_path / "afp.sqlite3"


@pytest.fixture(name="a")
async def fixture_a(path: Path) -> AsyncIterator[SqliteStore]:
    """Host A's writer connection, with agents ``ops`` and ``billing``."""
    store = await SqliteStore.open(path, now_ms=T0)
    await store.ensure_agent("ops", now_ms=T0)
    await store.ensure_agent("billing", now_ms=T0)
    yield store
    await store.aclose()


@pytest.fixture(name="b")
async def fixture_b(path: Path, a: SqliteStore) -> AsyncIterator[SqliteStore]:
    """Host B's own connection to the same file."""
    store = await SqliteStore.open(path, now_ms=T0)
    yield store
    await store.aclose()


def a_turn_seed(agent_id: str, run_id: str, *, pos: int = 0) -> Txn:
    """A run's ``seed`` commit with one user message: rows in runs, bundles, items."""
    return Txn(
        agent_id=agent_id,
        run_start=run_start(agent_id, run_id),
        bundles=[bundle(run_id, 0, "seed", TurnWrite(value=1))],
        items=items_at(pos, [user(f"hello from {run_id}")]),
    )


async def test_migration_6_adds_the_lease_table_and_the_claim_columns(
    a: SqliteStore, path: Path
) -> None:
    """The schema has host_leases and the agents' claim columns, recorded as migration 6."""
    agents = {row[1] for row in await raw(path, "PRAGMA table_info(agents)")}
    leases = [row[1] for row in await raw(path, "PRAGMA table_info(host_leases)")]
    assert {"claim_host", "claim_epoch"} <= agents
    assert leases == ["host_id", "lease_epoch", "expires_at_ms", "renewed_at_ms"]
    assert SCHEMA_VERSION >= 6
    assert await raw(path, "SELECT name FROM migrations WHERE version=6") == [
        ("host leases and agent claims",)
    ]


async def test_the_same_host_id_takes_its_lease_over_at_once(a: SqliteStore, path: Path) -> None:
    """A new host gets epoch 1; the same id again gets epoch 2 at once though the row is live
    (docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once); a conditional
    acquire leaves a live row alone and takes an expired one."""
    assert await a.acquire_lease("h", now_ms=T0, ttl_ms=TTL) == 1
    assert await a.acquire_lease("h", now_ms=T0 + 1, ttl_ms=TTL) == 2
    assert await lease_row(path, "h") == (2, T0 + 1 + TTL, T0 + 1)
    assert await a.acquire_lease("h", now_ms=T0 + 2, ttl_ms=TTL, only_if_expired=True) is None
    assert await lease_row(path, "h") == (2, T0 + 1 + TTL, T0 + 1)
    expired = T0 + 1 + TTL
    assert await a.acquire_lease("h", now_ms=expired, ttl_ms=TTL, only_if_expired=True) == 3


async def test_renewal_extends_the_lease_until_its_epoch_is_raised(
    a: SqliteStore, b: SqliteStore, path: Path
) -> None:
    """Renewal moves the expiry; once someone raised the epoch it reports the loss and writes
    nothing."""
    epoch = await a.acquire_lease("h", now_ms=T0, ttl_ms=TTL)
    assert epoch == 1
    renewal = await a.renew_lease("h", epoch, now_ms=T0 + 10_000, ttl_ms=TTL)
    assert renewal.renewed and await lease_row(path, "h") == (1, T0 + 40_000, T0 + 10_000)
    assert await b.acquire_lease("h", now_ms=T0 + 11_000, ttl_ms=TTL) == 2  # a restart
    lost = await a.renew_lease("h", epoch, now_ms=T0 + 20_000, ttl_ms=TTL)
    assert not lost.renewed
    assert await lease_row(path, "h") == (2, T0 + 41_000, T0 + 11_000)


async def test_claim_agents_claims_many_in_one_transaction(a: SqliteStore, b: SqliteStore) -> None:
    """Start-up claims every agent it may in one transaction, skipping those held elsewhere."""
    for n in range(600):
        await a.ensure_agent(f"agent-{n}", now_ms=T0)
    ids = [f"agent-{n}" for n in range(600)]
    eb = await b.acquire_lease("b", now_ms=T0, ttl_ms=TTL)
    assert eb is not None and await b.claim_agent("agent-7", "b", eb, now_ms=T0)
    ea = await a.acquire_lease("a", now_ms=T0, ttl_ms=TTL)
    assert ea is not None
    before = a.transactions
    claimed = await a.claim_agents(ids, "a", ea, now_ms=T0)
    assert a.transactions == before + 1
    assert claimed == set(ids) - {"agent-7"}


async def test_expired_leases_of_other_hosts_are_taken_over_once(
    a: SqliteStore, b: SqliteStore, path: Path
) -> None:
    """A renewal past another host's expiry raises that host's epoch by 1 in the same
    transaction; a live lease, the renewer's own, and a lease no claim rests on are left."""
    ea = await a.acquire_lease("a", now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await a.claim_agent("ops", "a", ea, now_ms=T0)
    await raw(path, "INSERT INTO host_leases VALUES ('idle', 4, ?, ?)", (T0, T0))
    eb = await b.acquire_lease("b", now_ms=T0, ttl_ms=TTL)
    assert eb is not None
    live = await b.renew_lease("b", eb, now_ms=T0 + TTL - 1, ttl_ms=TTL)
    assert live.renewed and live.taken_over == ()
    before = b.transactions
    taken = await b.renew_lease("b", eb, now_ms=T0 + TTL, ttl_ms=TTL)
    assert taken.renewed and taken.taken_over == ("a",) and b.transactions == before + 1
    assert await lease_row(path, "a") == (ea + 1, T0 + TTL, T0)
    assert await lease_row(path, "idle") == (4, T0, T0)
    again = await b.renew_lease("b", eb, now_ms=T0 + TTL + 10_000, ttl_ms=TTL)
    assert again.taken_over == () and await lease_row(path, "a") == (ea + 1, T0 + TTL, T0)
    # The dead host, waking, finds its lease lost; its claim is stale for everyone.
    assert not (await a.renew_lease("a", ea, now_ms=T0 + TTL + 1, ttl_ms=TTL)).renewed
    assert await b.claim_agent("ops", "b", eb, now_ms=T0 + TTL + 1)


async def test_a_commit_for_an_agent_claimed_elsewhere_raises_lease_lost(
    a: SqliteStore, b: SqliteStore, path: Path
) -> None:
    """Once B claimed the agent, A's fenced commit raises LeaseLost naming agent and host, and
    writes nothing at all."""
    ea = await a.acquire_lease("a", now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await a.claim_agent("ops", "a", ea, now_ms=T0)
    a.fence_with("a", ea)
    eb = await b.acquire_lease("b", now_ms=T0 + TTL, ttl_ms=TTL)
    assert eb is not None and await b.claim_agent("ops", "b", eb, now_ms=T0 + TTL)
    before = await row_counts(path)
    transactions = a.transactions
    with pytest.raises(LeaseLost, match="ops") as caught:
        await a.commit(a_turn_seed("ops", "run-1"))
    assert caught.value.context == {"agent_id": "ops", "host_id": "a", "lease_epoch": ea}
    assert "claimed by 'b'" in str(caught.value)
    assert await row_counts(path) == before and a.transactions == transactions
    assert await a.runs() == []


async def _cancel_after(scope: anyio.CancelScope, checkpoints: int) -> None:
    for _ in range(checkpoints):
        await anyio.lowlevel.checkpoint()
    scope.cancel()


async def test_a_lease_write_cancelled_anywhere_leaves_the_connection_usable(
    a: SqliteStore, path: Path
) -> None:
    """A keeper or worker cancelled at a stop may be inside ``BEGIN``; the release that
    follows must still write (a cancelled BEGIN is rolled back after it runs)."""
    epoch = await a.acquire_lease("h", now_ms=T0, ttl_ms=TTL)
    assert epoch is not None
    for checkpoints in range(12):
        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as scope:
                tg.start_soon(_cancel_after, scope, checkpoints)
                await a.renew_lease("h", epoch, now_ms=T0 + checkpoints, ttl_ms=TTL)
        assert (await a.renew_lease("h", epoch, now_ms=T0, ttl_ms=TTL)).renewed
    assert await a.release_lease("h", epoch)
    assert (await raw(path, "SELECT expires_at_ms FROM host_leases"))[0][0] == 0
