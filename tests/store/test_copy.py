"""Copying agents between stores through the port (docs/storage.md#moving-between-stores):
real SQLite files and a real Postgres server, sources with real history
(``tests/store/_copy_world.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.errors import CopyRefused, NotFound, StoreDamaged
from afp_runtime.store import CopyCounts, Store, copy_agents, open_store
from tests.store._copy_world import CASES, HEALTHY, build_source, doctor, shown, verdicts
from tests.store._postgres import FreshDatabase, admin

LATER = 10**13  # a clock past every lease the tests take


@pytest.fixture(name="database")
async def fixture_database() -> AsyncIterator[FreshDatabase]:
    """A database of the test's own on the Postgres test server."""
    async with FreshDatabase() as database:
        yield database


async def _copy(source: Any, destination: Any, agent_ids: list[str] | None = None) -> CopyCounts:
    """Open both stores by location, copy, close them."""
    src = await open_store(source, create=False)
    dst = await open_store(destination)
    try:
        return await copy_agents(src, dst, agent_ids, now_ms=LATER)
    finally:
        await src.aclose()
        await dst.aclose()


async def _shown_at(location: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    store = await open_store(location, read_only=True)
    try:
        return await shown(store), await doctor(store)
    finally:
        await store.aclose()


async def _on_file(path: Path, sql: str) -> None:
    """Run one statement on the SQLite file behind the store's back (damage)."""

    def work() -> None:
        with sqlite3.connect(path) as conn:
            conn.execute(sql)
        conn.close()

    await anyio.to_thread.run_sync(work)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.timeout(120)
async def test_sqlite_to_postgres_and_back_shows_every_agent_the_same(
    case: str, tmp_path: Path, database: FreshDatabase
) -> None:
    """SQLite → Postgres → SQLite: every served view, receipt and conformance report of every
    epoch, the conversations, inbox, questions, ledgers, folds with their originals, journal,
    runs and bundles are equal to the source's, and every doctor check is clean."""
    source = tmp_path / "source.db"
    await build_source(source, case)
    there = await _copy(source, database.url)
    back = await _copy(database.url, tmp_path / "back.db")
    expected, health = await _shown_at(source)
    assert health == HEALTHY
    assert sorted(a["agentId"] for a in expected["agents"]) == ["demo", "scenario", "waiting"]
    assert expected["demo"]["folded"] and all(
        span["retained"] == "conversation" and span["messages"]
        for span in expected["demo"]["folded"]
    )
    found = verdicts(expected)
    assert len(found) > 16 and set(found) == {"verified"}
    for location in (database.url, tmp_path / "back.db"):
        copied, copied_health = await _shown_at(location)
        assert copied_health == HEALTHY
        assert copied == expected
    assert there == back
    runs = [r for a in ("demo", "scenario", "waiting") for r in expected[a]["runs"]]
    assert (there.agents, there.runs) == (3, len(runs))
    assert there.bundles == sum(r["bundles"] for r in runs)
    assert there.bodies == there.new_bodies > 0


async def test_sqlite_to_sqlite_and_postgres_to_postgres_copy_whole_agents(
    tmp_path: Path, database: FreshDatabase
) -> None:
    """A copy between two stores of one backend (SQLite files, Postgres databases) is whole."""
    source = tmp_path / "source.db"
    await build_source(source, "time-rows-and-questions")
    await _copy(source, tmp_path / "copy.db")
    async with FreshDatabase() as other:
        await _copy(source, database.url)
        await _copy(database.url, other.url)
        expected, _ = await _shown_at(source)
        for location in (tmp_path / "copy.db", other.url):
            copied, health = await _shown_at(location)
            assert (copied, health) == (expected, HEALTHY)


async def test_agents_already_in_the_destination_are_refused_and_others_may_join(
    tmp_path: Path, database: FreshDatabase
) -> None:
    """A destination holding an agent refuses a copy naming it (and changes nothing); choosing
    the other agents copies them beside it; unknown agents are NotFound."""
    source = tmp_path / "source.db"
    await build_source(source, "findings")
    first = await _copy(source, database.url, ["demo"])
    assert first.agents == 1
    before, _ = await _shown_at(database.url)
    with pytest.raises(CopyRefused, match="'demo'") as refused:
        await _copy(source, database.url)
    assert "scenario" not in str(refused.value) and "--agents" in str(refused.value)
    assert (await _shown_at(database.url))[0] == before
    with pytest.raises(NotFound, match="'nobody'"):
        await _copy(source, database.url, ["scenario", "nobody"])
    rest = await _copy(source, database.url, ["waiting", "scenario"])
    assert rest.agents == 2
    expected, _ = await _shown_at(source)
    assert (await _shown_at(database.url)) == (expected, HEALTHY)
    with pytest.raises(CopyRefused, match="same store"):
        await _copy(source, source)


DAMAGE = {
    "tampered body": (
        "UPDATE bodies SET body = CAST(body || ' ' AS BLOB) WHERE fp = (SELECT fp FROM items"
        " WHERE agent = (SELECT agent FROM agents WHERE agent_id = 'scenario') LIMIT 1)",
        "no longer matches its fingerprint",
    ),
    "missing body": (
        "DELETE FROM bodies WHERE fp = (SELECT fp FROM items"
        " WHERE agent = (SELECT agent FROM agents WHERE agent_id = 'scenario') ORDER BY pos DESC"
        " LIMIT 1)",
        "which is missing",
    ),
    "missing item": (
        "DELETE FROM items WHERE agent = (SELECT agent FROM agents WHERE agent_id = 'scenario')"
        " AND pos = (SELECT MAX(pos) FROM items WHERE agent = (SELECT agent FROM agents"
        " WHERE agent_id = 'scenario'))",
        "which is not stored",
    ),
    "undecodable bundle": (
        "UPDATE bundles SET writes = x'c1' WHERE seq = 1 AND run = (SELECT MIN(run) FROM runs"
        " WHERE agent = (SELECT agent FROM agents WHERE agent_id = 'scenario'))",
        "bundle 1 of run 'run-1' does not decode",
    ),
    "a column of the wrong type": (
        "UPDATE runs SET turn = 'first' WHERE run = (SELECT MIN(run) FROM runs"
        " WHERE agent = (SELECT agent FROM agents WHERE agent_id = 'scenario'))",
        "a runs row of agent 'scenario' is not valid",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_a_damaged_source_row_is_named_and_the_destination_is_unchanged(
    damage: str, tmp_path: Path, database: FreshDatabase
) -> None:
    """A source row that does not read back fails the copy with StoreDamaged naming it; the
    agent written before it in the same transaction is rolled back with it."""
    source = tmp_path / "source.db"
    await build_source(source, "folds-conversation")
    await _copy(source, database.url, ["waiting"])
    before = await _shown_at(database.url)
    statement, named = DAMAGE[damage]
    await _on_file(source, statement)
    with pytest.raises(StoreDamaged, match=named):
        await _copy(source, database.url, ["demo", "scenario"])  # demo is written first
    assert await _shown_at(database.url) == before
    conn = await admin(database.url)
    try:
        assert await conn.fetchval("SELECT COUNT(*) FROM runs") == 0
    finally:
        await conn.close()


async def _claimed(store: Store, agent_id: str, *, ttl_ms: int) -> None:
    epoch = await store.acquire_lease("host-a", now_ms=0, ttl_ms=ttl_ms)
    assert epoch is not None
    assert await store.claim_agent(agent_id, "host-a", epoch, now_ms=0)


async def test_claims_and_leases_stay_behind_and_a_live_host_refuses(tmp_path: Path) -> None:
    """A copy is unclaimed and holds no lease; an agent a live host holds is refused, naming
    the agent and the host."""
    source = tmp_path / "source.db"
    await build_source(source, "folds-conversation")
    store = await open_store(source)
    try:
        await _claimed(store, "demo", ttl_ms=1_000)  # expired long before LATER
        await store.mark_clean_shutdown()
    finally:
        await store.aclose()
    await _copy(source, tmp_path / "copy.db")
    copy = await open_store(tmp_path / "copy.db")
    try:
        claims = await copy.agent_claims(now_ms=LATER)
        assert [(c.agent_id, c.host_id, c.live) for c in claims] == [
            ("demo", None, False),
            ("scenario", None, False),
            ("waiting", None, False),
        ]
        assert await copy.live_hosts(now_ms=0) == []
        assert not await copy.clean_shutdown()  # the copy was never served
    finally:
        await copy.aclose()
    store = await open_store(source)
    try:
        await _claimed(store, "scenario", ttl_ms=LATER * 2)
    finally:
        await store.aclose()
    with pytest.raises(CopyRefused, match=r"'scenario'.*'host-a'"):
        await _copy(source, tmp_path / "again.db")
    again = await open_store(tmp_path / "again.db", read_only=True)
    try:
        assert await again.agents() == []
    finally:
        await again.aclose()
