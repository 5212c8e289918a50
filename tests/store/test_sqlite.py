"""SQLite-only checks of the store: WAL, migrations, refusing foreign files, bytes on disk.

Backend-neutral behaviour lives in ``conformance.py``; everything here looks at the SQLite file
itself, through raw ``sqlite3`` connections run in worker threads (never on the event loop).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.errors import SchemaTooNew, StoreDamaged, StoreError, StoreUnavailable
from afp_runtime.messages import Usage, assistant, fingerprint, user
from afp_runtime.records import (
    HistoryWrite,
    InboxUpdate,
    JournalRow,
    ListRef,
    OpenTurn,
    ReceiptWrite,
    RunEnd,
    Txn,
)
from afp_runtime.store.sqlite import SCHEMA_VERSION, SqliteStore
from afp_runtime.testing.store_conformance import (
    T0,
    bundle,
    fresh,
    items_at,
    new_agent,
    run_start,
    state,
    turn_txn,
)


async def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on a separate connection in a worker thread, committing it."""

    def run() -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(path)
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return await anyio.to_thread.run_sync(run)


async def file_bytes(path: Path) -> bytes:
    """The file's bytes, read off the event loop."""
    return await anyio.Path(path).read_bytes()


async def file_size(path: Path) -> int:
    """The file's size in bytes."""
    return (await anyio.Path(path).stat()).st_size


async def directory(path: Path) -> list[str]:
    """The names in a directory, sorted."""
    return sorted([entry.name async for entry in anyio.Path(path).iterdir()])


@pytest.fixture(name="db_path")
def fixture_db_path(tmp_path: Path) -> Path:
    """Where the test's database file lives (not created yet)."""
    return tmp_path / "afp.sqlite3"


@pytest.fixture(name="store")
async def fixture_store(db_path: Path) -> AsyncIterator[SqliteStore]:
    """A writer store on a new file, closed after the test."""
    store = await SqliteStore.open(db_path, now_ms=T0)
    yield store
    await store.aclose()


async def closed_database(path: Path) -> None:
    """Create an afp_runtime database at ``path`` with one agent, and close it."""
    store = await SqliteStore.open(path, now_ms=T0)
    try:
        await new_agent(store)
    finally:
        await store.aclose()


# -- the change marker ------------------------------------------------------------------------


async def test_the_change_marker_moves_for_commits_elsewhere_and_posts_not_the_loops(
    store: SqliteStore, db_path: Path
) -> None:
    """The marker stays as it is for the loop's own commits, and moves for a commit by another
    connection and for a post through the store itself
    (docs/host.md#a-message-reaches-its-host)."""
    agent_id = await new_agent(store)
    first = await store.change_marker()
    await store.commit(turn_txn(agent_id, "run-own"))
    after_own = await store.change_marker()
    await raw(db_path, "INSERT OR REPLACE INTO meta VALUES ('probe', '1')")
    after_elsewhere = await store.change_marker()
    await store.post(agent_id, "hello", message_id="msg-1", now_ms=T0)
    after_post = await store.change_marker()
    assert after_own == first
    assert after_elsewhere != after_own
    assert after_post != after_elsewhere


# -- the file and its schema -------------------------------------------------------------------


async def test_file_is_in_wal_mode(db_path: Path) -> None:
    """A writer opens the file in WAL mode, which stays recorded in the file after close."""
    store = await SqliteStore.open(db_path)
    try:
        assert await raw(db_path, "PRAGMA journal_mode") == [("wal",)]
    finally:
        await store.aclose()
    assert await raw(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_migrations_are_recorded(db_path: Path) -> None:
    """Each applied migration has a row in migrations and meta holds the schema version."""
    await closed_database(db_path)
    reopened = await SqliteStore.open(db_path, now_ms=T0 + 999)
    await reopened.aclose()

    assert await raw(db_path, "SELECT version, applied_at_ms FROM migrations ORDER BY version") == [
        (number, T0) for number in range(1, SCHEMA_VERSION + 1)
    ]
    assert await raw(db_path, "SELECT value FROM meta WHERE key='schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


async def test_newer_schema_is_refused_untouched(db_path: Path) -> None:
    """A file with a newer schema_version raises SchemaTooNew and is left byte-identical."""
    await closed_database(db_path)
    newer = str(SCHEMA_VERSION + 1)
    await raw(db_path, "UPDATE meta SET value=? WHERE key='schema_version'", (newer,))
    before = await file_bytes(db_path)

    with pytest.raises(SchemaTooNew):
        await SqliteStore.open(db_path)
    with pytest.raises(SchemaTooNew):
        await SqliteStore.open(db_path, read_only=True)

    assert await file_bytes(db_path) == before
    assert await raw(db_path, "SELECT value FROM meta WHERE key='schema_version'") == [(newer,)]


async def test_random_bytes_are_refused_untouched(db_path: Path) -> None:
    """A file of random bytes raises StoreDamaged and is left byte-identical."""
    garbage = random.Random(20240611).randbytes(8192)
    await anyio.Path(db_path).write_bytes(garbage)

    with pytest.raises(StoreDamaged):
        await SqliteStore.open(db_path)

    assert await file_bytes(db_path) == garbage


async def test_foreign_sqlite_database_is_refused_untouched(db_path: Path) -> None:
    """A SQLite database with other tables and no meta raises StoreDamaged and is not changed."""
    await raw(db_path, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)")
    await raw(db_path, "INSERT INTO accounts (name) VALUES ('ann')")
    before = await file_bytes(db_path)

    with pytest.raises(StoreDamaged):
        await SqliteStore.open(db_path)

    assert await file_bytes(db_path) == before
    assert await raw(db_path, "SELECT name FROM sqlite_master WHERE type='table'") == [
        ("accounts",)
    ]


async def test_read_only_open_of_missing_file_creates_nothing(tmp_path: Path) -> None:
    """Opening a missing file read-only raises StoreUnavailable and creates no file."""
    with pytest.raises(StoreUnavailable):
        await SqliteStore.open(tmp_path / "missing.sqlite3", read_only=True)

    assert await directory(tmp_path) == []


async def test_read_only_store_refuses_writes(db_path: Path) -> None:
    """A read-only store reads the file but refuses commit, post and ensure_agent."""
    writer = await SqliteStore.open(db_path)
    agent_id = await new_agent(writer)
    await writer.aclose()
    before = await file_bytes(db_path)

    reader = await SqliteStore.open(db_path, read_only=True)
    try:
        assert (await reader.load_conversation(agent_id)).history == ()
        txn = Txn(agent_id=agent_id, items=items_at(0, [user("not stored")]))
        with pytest.raises(StoreError):
            await reader.commit(txn)
        with pytest.raises(StoreError):
            await reader.post(agent_id, "not stored", message_id=fresh("msg"), now_ms=T0)
        with pytest.raises(StoreError):
            await reader.ensure_agent(fresh("agent"), now_ms=T0)
    finally:
        await reader.aclose()

    assert await file_bytes(db_path) == before


async def test_integrity_check_is_clean(store: SqliteStore) -> None:
    """integrity_check() of a used database returns ['ok']."""
    agent_id = await new_agent(store)
    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [user("a"), assistant("b")])))

    assert await store.integrity_check() == ["ok"]


async def test_body_check_names_a_tampered_body(store: SqliteStore, db_path: Path) -> None:
    """body_check() finds a body altered behind the store's back and names its fingerprint."""
    agent_id = await new_agent(store)
    good, tampered = user(f"keep {agent_id}"), user(f"alter {agent_id}")
    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [good, tampered])))
    assert await store.body_check() == []

    await raw(
        db_path,
        "UPDATE bodies SET body=? WHERE fp=?",
        (b'{"content":"altered","role":"user"}', bytes.fromhex(fingerprint(tampered))),
    )

    assert await store.body_check() == [fingerprint(tampered)]


# -- growth -----------------------------------------------------------------------------------


async def _commit_turns(path: Path, agent_id: str, turns: range) -> None:
    """Commit ``turns`` as one txn each: a run, 2 items, a small bundle, the checkpoint, the end."""
    store = await SqliteStore.open(path)
    try:
        for turn in turns:
            run_id = f"run-{turn}"
            pos = 2 * turn
            exchange = [user(f"go {turn}"), assistant(f"done {turn}")]
            receipt = [fingerprint(m) for m in exchange]
            await store.commit(
                Txn(
                    agent_id=agent_id,
                    run_start=run_start(agent_id, run_id, turn=turn + 1),
                    items=items_at(pos, exchange),
                    bundles=[
                        bundle(
                            run_id,
                            0,
                            "final",
                            HistoryWrite(
                                verb="append",
                                value=ListRef(ranges=((pos, pos + 2),)),
                            ),
                            ReceiptWrite(verb="set", value={"new": receipt}),
                        )
                    ],
                    conversation=state(
                        agent_id,
                        turn=turn + 1,
                        ranges=((0, pos + 2),),
                        next_pos=pos + 2,
                        last_run_id=run_id,
                    ),
                    run_end=RunEnd(
                        run_id=run_id, status="answered", ended_at_ms=T0, usage=Usage(input=5)
                    ),
                )
            )
    finally:
        await store.aclose()


async def test_storage_grows_linearly(db_path: Path) -> None:
    """Per-turn file growth over turns 200..1000 is at most 1.5x that of turns 0..200."""
    agent_id = "grower"
    store = await SqliteStore.open(db_path)
    await store.ensure_agent(agent_id, now_ms=T0)
    await store.aclose()
    start = await file_size(db_path)

    await _commit_turns(db_path, agent_id, range(200))
    at_200 = await file_size(db_path)
    await _commit_turns(db_path, agent_id, range(200, 1000))
    at_1000 = await file_size(db_path)

    first = (at_200 - start) / 200
    second = (at_1000 - at_200) / 800
    assert 0 < second <= 1.5 * first, (start, at_200, at_1000)
    assert second < 2048, f"{second:.0f} bytes per turn"
    reader = await SqliteStore.open(db_path, read_only=True)
    try:
        loaded = await reader.load_conversation(agent_id)
    finally:
        await reader.aclose()
    assert len(loaded.history) == 2000
    assert loaded.history[-1] == assistant("done 999")


# -- the fixture database ------------------------------------------------------------------------


async def build_fixture_database(path: Path) -> dict[str, Any]:
    """Write a small database of every kind of row with the current code; return what it holds."""
    store = await SqliteStore.open(path, now_ms=T0)
    try:
        agent_id, run_id = "fixture-agent", "fixture-run"
        messages = [user("what is 6x7?"), assistant("42")]
        await store.ensure_agent(agent_id, now_ms=T0)
        ack = await store.post(
            agent_id, "what is 6x7?", message_id="fixture-msg", now_ms=T0, idempotency_key="k1"
        )
        open_turn = OpenTurn(
            turn=1, message_id=ack.message_id, status="paused", last_run_id=run_id, next_iteration=1
        )
        await store.commit(
            Txn(
                agent_id=agent_id,
                run_start=run_start(agent_id, run_id),
                items=items_at(0, messages),
                bundles=[
                    bundle(run_id, 0, "seed", HistoryWrite(verb="set", value=ListRef())),
                    bundle(
                        run_id,
                        1,
                        "final",
                        HistoryWrite(verb="append", value=ListRef(ranges=((0, 2),))),
                    ),
                ],
                conversation=state(
                    agent_id, turn=1, ranges=((0, 2),), next_pos=2, open_turn=open_turn
                ),
                run_end=RunEnd(
                    run_id=run_id, status="paused", ended_at_ms=T0 + 7, usage=Usage(input=3)
                ),
                inbox=[InboxUpdate(message_id=ack.message_id, status="paused", turn=1)],
                journal=[
                    JournalRow(
                        agent_id=agent_id,
                        message_id=ack.message_id,
                        tool_call_id="c1",
                        state="finished",
                        run_id=run_id,
                        outcome=b"ok",
                    )
                ],
            )
        )
        return {
            "agent_id": agent_id,
            "run_id": run_id,
            "message_id": ack.message_id,
            "messages": tuple(messages),
            "open_turn": open_turn,
        }
    finally:
        await store.aclose()


async def test_fixture_database_is_readable(tmp_path: Path) -> None:
    """Today's decoder reads every kind of row of a fixture database, writer or read-only.

    The fixture is generated in tmp_path by the current code for now. When SCHEMA_VERSION moves
    past 1, a file made by ``build_fixture_database`` at the old version is kept under
    ``tests/store/fixtures/`` and this test reads (and migrates a copy of) that file instead.
    """
    path = tmp_path / "fixture.sqlite3"
    expected = await build_fixture_database(path)

    for read_only in (True, False):
        store = await SqliteStore.open(path, read_only=read_only)
        try:
            loaded = await store.load_conversation(expected["agent_id"])
            assert loaded.history == expected["messages"]
            assert loaded.state.open_turn == expected["open_turn"]
            bundles = await store.bundles(expected["run_id"])
            assert [b.runtime_stage_id for b in bundles] == ["seed#0", "final#1"]
            assert bundles[1].writes == [
                HistoryWrite(verb="append", value=ListRef(ranges=((0, 2),)))
            ]
            (run,) = await store.runs(expected["agent_id"])
            assert (run.status, run.usage, run.bundles) == ("paused", Usage(input=3), 2)
            (message,) = await store.inbox(expected["agent_id"])
            assert (message.text, message.status, message.turn) == ("what is 6x7?", "paused", 1)
            journal = await store.journal(expected["agent_id"], expected["message_id"])
            assert journal["c1"].finished == b"ok"
            (agent,) = await store.agents()
            assert (agent.turn, agent.messages, agent.status) == (1, 2, "paused")
            assert await store.integrity_check() == ["ok"]
            assert await store.body_check() == []
        finally:
            await store.aclose()


async def test_ensure_agent_of_a_known_agent_opens_no_transaction(db_path: Path) -> None:
    """Once an agent is known (created or found), ensure_agent writes no further transaction."""
    store = await SqliteStore.open(db_path, now_ms=T0)
    try:
        await store.ensure_agent("a", now_ms=T0)
        before = store.transactions
        for _ in range(5):
            await store.ensure_agent("a", now_ms=T0)
        assert store.transactions == before
    finally:
        await store.aclose()
    reopened = await SqliteStore.open(db_path, now_ms=T0)
    try:
        await reopened.ensure_agent("a", now_ms=T0)  # found, not created
        first = reopened.transactions
        await reopened.ensure_agent("a", now_ms=T0)
        assert reopened.transactions == first
        assert [row.agent_id for row in await reopened.agents()] == ["a"]
    finally:
        await reopened.aclose()
