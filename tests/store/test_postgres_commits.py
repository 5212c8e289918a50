"""Commits and posts on Postgres in one round trip, grouped
(docs/storage.md#one-round-trip-per-commit, docs/storage.md#round-trips): what the store sends
the server, counted by ``round_trips``; the durability level a group commits at; a store of the
schema before the commit function.

The backend-neutral side of grouped commits (each txn whole or absent, a failure its caller's
alone) is in the conformance suite (``afp_runtime.testing.store_group``), run on Postgres too.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec
import pytest

from afp_runtime.errors import IdempotencyConflict, NotOwner
from afp_runtime.records import ConversationState, Txn
from afp_runtime.store import open_store
from afp_runtime.store.postgres import PostgresStore
from afp_runtime.store.postgres.migrations import MIGRATIONS
from afp_runtime.store.postgres.writes import write_txn
from afp_runtime.store.rows import encoder
from afp_runtime.testing.store_conformance import fresh, new_agent, turn_txn
from afp_runtime.testing.store_group import commit_all, written_whole
from tests.store._postgres import FreshDatabase, admin

T0 = 1_700_000_000_000


@pytest.fixture(name="database")
async def fixture_database() -> AsyncIterator[FreshDatabase]:
    """A fresh, created database on the test server, dropped after the test."""
    database = FreshDatabase()
    await database.create()
    yield database
    await database.drop()


@pytest.fixture(name="store")
async def fixture_store(database: FreshDatabase) -> AsyncIterator[PostgresStore]:
    store = await open_store(database.url, now_ms=T0)
    assert isinstance(store, PostgresStore)
    try:
        yield store
    finally:
        await store.aclose()


def full(txn: Txn) -> Txn:
    """``txn`` marked as preceding an effect that leaves the process."""
    return msgspec.structs.replace(txn, full=True)


async def test_a_commit_and_a_post_are_one_round_trip_each(store: PostgresStore) -> None:
    """A turn's commit (run, bundle, item, checkpoint, journal) and an inbox post each send one
    statement and no BEGIN or COMMIT; a read sends one, with no reset after it."""
    agent_id = await new_agent(store)
    txn = turn_txn(agent_id, fresh("run"))

    before, transactions = store.round_trips, store.transactions
    await store.commit(txn)
    assert (store.round_trips - before, store.transactions - transactions) == (1, 1)
    assert await written_whole(store, txn)

    before = store.round_trips
    ack = await store.post(agent_id, "hello", message_id=fresh("msg"), now_ms=T0)
    assert store.round_trips - before == 1
    assert [row.message_id for row in await store.inbox(agent_id)] == [ack.message_id]

    before = store.round_trips
    await store.conversation_state(agent_id)
    assert store.round_trips - before == 1


async def test_round_trips_count_transaction_control(store: PostgresStore) -> None:
    """A write of several statements counts its BEGIN, each statement and its COMMIT."""
    before = store.round_trips
    await store.ensure_agent(fresh("agent"), now_ms=T0)
    # BEGIN, SET LOCAL synchronous_commit, two INSERTs, COMMIT.
    assert store.round_trips - before == 5


async def test_concurrent_commits_coalesce_into_fewer_calls(store: PostgresStore) -> None:
    """Forty agents committing at once take fewer calls (transactions, round trips) than
    commits, and every txn reads back whole."""
    agents = [await new_agent(store) for _ in range(40)]
    txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
    before, trips = store.transactions, store.round_trips

    assert set((await commit_all(store, txns)).values()) == {None}

    assert store.transactions - before < len(txns) // 2
    assert store.round_trips - trips == store.transactions - before
    for txn in txns:
        assert await written_whole(store, txn)


async def test_a_full_member_makes_its_group_durable(store: PostgresStore) -> None:
    """A group of commits none of which asked for durability commits no full transaction; one
    member that asks makes its whole group full."""
    agents = [await new_agent(store) for _ in range(10)]
    full_before = store.full_transactions
    outcomes = await commit_all(store, [turn_txn(a, fresh("run")) for a in agents])
    assert set(outcomes.values()) == {None}
    assert store.full_transactions == full_before

    more = [await new_agent(store) for _ in range(10)]
    txns = [turn_txn(a, fresh("run")) for a in more[:-1]] + [full(turn_txn(more[-1], fresh("run")))]
    before = store.transactions
    assert set((await commit_all(store, txns)).values()) == {None}
    # Grouped: fewer transactions than commits, and one full one, the full member's group.
    assert store.transactions - before < len(txns) // 2
    assert store.full_transactions - full_before == 1


@pytest.mark.parametrize(("durable", "level"), [(False, "off"), (True, "on")])
async def test_the_commit_function_sets_the_level_of_its_own_transaction(
    store: PostgresStore, database: FreshDatabase, durable: bool, level: str
) -> None:
    """Called without ``durable``, afp_commit turns synchronous_commit off for the transaction
    it runs in (and only it); with ``durable`` it leaves the server's level."""
    conn = await admin(database.url)
    try:
        # The test server runs with it off: this session's own level is on.
        await conn.execute("SET synchronous_commit TO on")
        async with conn.transaction():
            assert await conn.fetchval("SELECT afp_commit('{}'::afp_part[], $1)", durable) == []
            assert await conn.fetchval("SHOW synchronous_commit") == level
        assert await conn.fetchval("SHOW synchronous_commit") == "on"
    finally:
        await conn.close()


async def test_a_refused_post_writes_nothing(store: PostgresStore) -> None:
    """The owner check and an idempotency key used for other text refuse a post in its one
    call: NotOwner and IdempotencyConflict, nothing stored, the owner unchanged."""
    agent_id = await new_agent(store)
    first = await store.post(
        agent_id, "hello", message_id=fresh("msg"), now_ms=T0, sender="ann", idempotency_key="k1"
    )
    with pytest.raises(NotOwner):
        await store.post(agent_id, "hi", message_id=fresh("msg"), now_ms=T0, sender="bob")
    with pytest.raises(IdempotencyConflict):
        await store.post(
            agent_id,
            "other",
            message_id=fresh("msg"),
            now_ms=T0,
            sender="ann",
            idempotency_key="k1",
        )
    again = await store.post(
        agent_id, "hello", message_id=fresh("msg"), now_ms=T0, sender="ann", idempotency_key="k1"
    )
    assert again.duplicate and (again.message_id, again.position) == (
        first.message_id,
        first.position,
    )
    assert [row.message_id for row in await store.inbox(agent_id)] == [first.message_id]
    assert await store.owner(agent_id) == "ann"


async def test_a_store_of_schema_3_is_migrated_and_its_rows_read(
    database: FreshDatabase,
) -> None:
    """A database migrated to schema 3, with a turn written statement by statement as before,
    is migrated to the commit function at open: the old turn reads back whole and new commits
    go through the function."""
    conn = await admin(database.url)
    try:
        async with conn.transaction():
            await conn.execute(
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                " CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at_ms BIGINT NOT NULL);"
                " INSERT INTO meta VALUES ('schema_version', '3')"
            )
            for number, name, sql in MIGRATIONS[:3]:
                await conn.execute(sql)
                await conn.execute("INSERT INTO migrations VALUES ($1, $2, $3)", number, name, T0)
            agent = await conn.fetchval(
                "INSERT INTO agents (agent_id, created_at_ms) VALUES ('old', $1) RETURNING agent",
                T0,
            )
            empty = ConversationState(agent_id="old", checkpointed_at_ms=T0)
            await conn.execute(
                "INSERT INTO conversations VALUES ($1, $2)", agent, encoder.encode(empty)
            )
        old = turn_txn("old", fresh("run"))
        async with conn.transaction():
            await write_txn(conn, old, None)
    finally:
        await conn.close()

    store = await open_store(database.url, now_ms=T0)
    try:
        assert await written_whole(store, old)
        assert isinstance(store, PostgresStore)
        new = turn_txn(await new_agent(store), fresh("run"))
        before = store.round_trips
        await store.commit(new)
        assert store.round_trips - before == 1
        assert await written_whole(store, new)
    finally:
        await store.aclose()


async def _waiting_for_a_lock(url: str) -> bool:
    conn = await admin(url)
    try:
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%afp_commit%'"
        )
    finally:
        await conn.close()
    return bool(waiting)


async def test_a_part_chosen_as_a_deadlock_victim_is_written_again(
    store: PostgresStore, database: FreshDatabase
) -> None:
    """A group holding agent a's row waits for b's, held by another transaction that then waits
    for a's: Postgres rolls back the group's part of b to break the deadlock, and the store
    writes it again in the next group instead of failing its caller; both commits land."""
    a, b = sorted([await new_agent(store), await new_agent(store)])
    txns = [turn_txn(a, fresh("run")), turn_txn(b, fresh("run"))]
    other = await admin(database.url)
    try:
        # Only the group's session finds the deadlock (after its deadlock_timeout, 1 s).
        await other.execute("SET deadlock_timeout TO '60s'")
        outcomes: dict[str, BaseException | None] = {}
        async with anyio.create_task_group() as tg, other.transaction():
            await other.execute("SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE", b)
            async with store._group_lock:  # both commits queue, and go as one group
                tg.start_soon(_commit_into, store, txns, outcomes)
                await until_async(lambda: len(store._queue) == 2)
            await until_async(lambda: _waiting_for_a_lock(database.url))
            # Waits until the group gave b up and committed a.
            await other.execute("SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE", a)
        assert outcomes == {txn.run_start.run_id: None for txn in txns if txn.run_start}
    finally:
        await other.close()
    for txn in txns:
        assert await written_whole(store, txn)


async def test_one_agents_commits_go_in_groups_of_their_own(store: PostgresStore) -> None:
    """Two commits of one agent queued together are written by two calls, in the order they
    came (a part written again after a deadlock cannot land after its agent's next commit),
    while another agent's commit shares the first call."""
    a, b = await new_agent(store), await new_agent(store)
    first, second = turn_txn(a, fresh("run")), turn_txn(a, fresh("run"), pos=1)
    txns = [first, second, turn_txn(b, fresh("run"))]
    before = store.transactions
    outcomes: dict[str, BaseException | None] = {}
    async with anyio.create_task_group() as tg, store._group_lock:
        for queued, txn in enumerate(txns, 1):  # queued one after another, in this order
            tg.start_soon(_commit_into, store, [txn], outcomes)
            await until_async(lambda queued=queued: len(store._queue) == queued)
    assert set(outcomes.values()) == {None}
    assert store.transactions - before == 2
    assert first.run_start is not None and await store.bundles(first.run_start.run_id)
    for txn in txns[1:]:  # the second's checkpoint is the agent's: it came last
        assert await written_whole(store, txn)


async def _commit_into(
    store: PostgresStore, txns: list[Txn], outcomes: dict[str, BaseException | None]
) -> None:
    outcomes.update(await commit_all(store, txns))


async def until_async(check: Callable[[], Any]) -> None:
    """Wait, yielding, until ``check()`` (or the awaitable it returns) is true."""
    with anyio.fail_after(30):
        while True:
            found = check()
            if inspect.isawaitable(found):
                found = await found
            if found:
                return
            await anyio.sleep(0.01)
