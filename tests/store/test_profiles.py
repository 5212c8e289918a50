"""Definition summaries in stores made before them (docs/storage.md#definition-summaries):
an old SQLite file opens (read-only without migrating, or as a writer through migration 15)
and shows no summary, never an error; a Postgres database at schema 5 does the same through
migration 6; a stored summary that does not decode reads as none."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from afp_runtime.store import DefinitionSummary, open_store
from afp_runtime.store.postgres.migrations import SCHEMA_VERSION as POSTGRES_VERSION
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.store.sqlite.migrations import SCHEMA_VERSION as SQLITE_VERSION
from tests.store._postgres import FreshDatabase, admin
from tests.store.test_old_store import UNTYPED, _unpacked

REPO = Path(__file__).resolve().parents[2]
SUMMARY = DefinitionSummary(
    model="demo-scripted",
    provider="scripted",
    tool_names=("lookup_order",),
    max_iterations=6,
    durability="sync",
)


def _afp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )


async def _version(path: Path) -> int:
    def read() -> int:
        with sqlite3.connect(path) as conn:
            found = conn.execute("SELECT value FROM meta WHERE key='schema_version'")
            return int(found.fetchone()[0])

    return await anyio.to_thread.run_sync(read)


@pytest.mark.timeout(120)
async def test_an_old_sqlite_store_shows_no_summary_then_records_one(tmp_path: Path) -> None:
    """A store written before migration 15 reads (read-only, unmigrated) with null model,
    provider, window and zone through ``afp agent``; opened as a writer it migrates, still
    shows none, and records one when the agent is registered."""
    path = await _unpacked("crashed", tmp_path, UNTYPED)
    assert await _version(path) < SQLITE_VERSION

    reader = await open_store(path, read_only=True)
    try:
        rows = await reader.agents()
    finally:
        await reader.aclose()
    assert rows and all(row.definition is None for row in rows)
    agent_id = rows[0].agent_id

    listed = await anyio.to_thread.run_sync(_afp, "agents", "--db", str(path), "--json")
    assert listed.returncode == 0, listed.stderr
    assert all("definition" not in row for row in json.loads(listed.stdout))
    shown = await anyio.to_thread.run_sync(_afp, "agent", agent_id, "--db", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert [view[k] for k in ("model", "provider", "windowStrategy", "timeZone")] == [None] * 4
    assert await _version(path) < SQLITE_VERSION  # the readers changed nothing

    writer = await open_store(path, now_ms=0)
    try:
        assert await _version(path) == SQLITE_VERSION
        assert all(row.definition is None for row in await writer.agents())
        await writer.ensure_agent(agent_id, now_ms=0, definition=SUMMARY)
        [row] = [row for row in await writer.agents() if row.agent_id == agent_id]
        assert row.definition == SUMMARY
    finally:
        await writer.aclose()


async def test_a_summary_that_does_not_decode_reads_as_none(tmp_path: Path) -> None:
    """A damaged ``agents.profile`` cell costs the summary, not the listing."""
    path = tmp_path / "afp.db"
    store = await open_store(path, now_ms=0)
    try:
        await store.ensure_agent("desk", now_ms=0, definition=SUMMARY)
        await store.ensure_agent("other", now_ms=0, definition=SUMMARY)
    finally:
        await store.aclose()

    def damage() -> None:
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE agents SET profile = ? WHERE agent_id = 'desk'", (b"\xff{not",))

    await anyio.to_thread.run_sync(damage)
    store = await open_store(path, read_only=True)
    try:
        rows = {row.agent_id: row.definition for row in await store.agents()}
    finally:
        await store.aclose()
    assert rows == {"desk": None, "other": SUMMARY}


@pytest.mark.timeout(120)
async def test_a_postgres_store_before_migration_6_shows_no_summary() -> None:
    """A database at schema 5 (no ``agents.profile``) reads with no summary; a writer's open
    applies migration 6, after which a registration records one."""
    async with FreshDatabase() as database:
        store = await open_store(database.url, now_ms=0)
        try:
            await store.ensure_agent("desk", now_ms=0, definition=SUMMARY)
        finally:
            await store.aclose()
        conn = await admin(database.url)
        try:
            # The database as schema 5 left it: without migration 6 (the profile) and the
            # ones after it (7, the recall index).
            await conn.execute("ALTER TABLE agents DROP COLUMN profile")
            await conn.execute("DROP TABLE recall_entries")
            await conn.execute("DROP TRIGGER runs_first_pos ON runs")
            await conn.execute("DROP FUNCTION afp_run_first_pos()")
            await conn.execute("ALTER TABLE runs DROP COLUMN first_pos")
            await conn.execute("DELETE FROM migrations WHERE version >= 6")
            await conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        finally:
            await conn.close()

        reader = await open_store(database.url, read_only=True)
        try:
            assert [(r.agent_id, r.definition) for r in await reader.agents()] == [("desk", None)]
        finally:
            await reader.aclose()
        writer = await open_store(database.url, now_ms=0)
        try:
            assert writer.schema_version == POSTGRES_VERSION
            assert [r.definition for r in await writer.agents()] == [None]
            await writer.ensure_agent("desk", now_ms=0, definition=SUMMARY)
            assert [r.definition for r in await writer.agents()] == [SUMMARY]
        finally:
            await writer.aclose()


async def test_an_unchanged_summary_writes_no_transaction(tmp_path: Path) -> None:
    """A store object registers a summary once: the same one again (a driver's every post)
    opens no transaction, a changed one opens one."""
    store = await SqliteStore.open(tmp_path / "afp.db", now_ms=0)
    try:
        await store.ensure_agent("desk", now_ms=0, definition=SUMMARY)
        before = store.transactions
        for _ in range(3):
            await store.ensure_agent("desk", now_ms=0, definition=SUMMARY)
            await store.ensure_agent("desk", now_ms=0)
        assert store.transactions == before
        changed = msgspec.structs.replace(SUMMARY, model="demo-scripted-2")
        await store.ensure_agent("desk", now_ms=0, definition=changed)
        assert store.transactions == before + 1
        assert [row.definition for row in await store.agents()] == [changed]
    finally:
        await store.aclose()
