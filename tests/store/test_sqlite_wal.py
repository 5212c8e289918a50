"""What the SQLite store's commits cost in the WAL (docs/storage.md#wal-frames-written): the
store counts the frames its transactions write.

The count is checked against the ``-wal`` file itself: its frames are read off the file in a
worker thread (https://sqlite.org/fileformat2.html#the_write_ahead_log).
"""

from __future__ import annotations

import gzip
import sqlite3
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing.store_conformance import T0, fresh, new_agent, turn_txn

_WAL_HEADER = 32
_FRAME_HEADER = 24


@pytest.fixture(name="db_path")
def fixture_db_path(tmp_path: Path) -> Path:
    return tmp_path / "afp.sqlite3"


@pytest.fixture(name="store")
async def fixture_store(db_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(db_path, now_ms=T0)
    yield store
    await store.aclose()


async def current_frames(db_path: Path) -> tuple[int, int]:
    """The frames of the ``-wal`` file that belong to the WAL as it stands (those carrying the
    salt of its header: frames left from before a restart carry an older salt), and the size of
    its pages."""

    def count() -> tuple[int, int]:
        data = Path(f"{db_path}-wal").read_bytes()
        page_size = struct.unpack(">I", data[8:12])[0]
        salt = data[16:24]
        frames, offset = 0, _WAL_HEADER
        while offset + _FRAME_HEADER + page_size <= len(data):
            if data[offset + 8 : offset + 16] != salt:
                break
            frames += 1
            offset += _FRAME_HEADER + page_size
        return frames, page_size

    return await anyio.to_thread.run_sync(count)


async def checkpoint_passive(db_path: Path) -> None:
    """Copy the WAL into the main file from another connection without truncating it: the next
    write starts the WAL over from its first frame."""

    def run() -> None:
        conn = sqlite3.connect(db_path)
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            assert busy == 0
        finally:
            conn.close()

    await anyio.to_thread.run_sync(run)


async def test_the_store_counts_the_wal_frames_its_commits_write(
    store: SqliteStore, db_path: Path
) -> None:
    """From an empty WAL, the frames counted are the frames in the ``-wal`` file, commits and
    posts alike, and ``wal_bytes`` their bytes there."""
    agent_id = await new_agent(store)
    assert await store.checkpoint() is None  # the WAL is empty
    frames, wal_bytes = store.wal_frames, store.wal_bytes
    await store.commit(turn_txn(agent_id, fresh("run")))
    await store.post(agent_id, "hello", message_id=fresh("m"), now_ms=T0)
    await store.commit(turn_txn(agent_id, fresh("run"), pos=1))

    in_file, page_size = await current_frames(db_path)
    assert store.wal_frames - frames == in_file > 0
    assert store.wal_bytes - wal_bytes == in_file * (page_size + _FRAME_HEADER)
    assert (await anyio.Path(f"{db_path}-wal").stat()).st_size == _WAL_HEADER + (
        store.wal_bytes - wal_bytes
    )


async def test_frames_written_after_the_wal_started_over_are_counted(
    store: SqliteStore, db_path: Path
) -> None:
    """Once a checkpoint emptied the WAL, the next commit writes from its first frame again
    (the file keeps its size): those frames are counted, not lost in the subtraction."""
    agent_id = await new_agent(store)
    for pos in range(3):
        await store.commit(turn_txn(agent_id, fresh("run"), pos=pos))
    await checkpoint_passive(db_path)
    before = store.wal_frames

    await store.commit(turn_txn(agent_id, fresh("run"), pos=3))

    in_file, _ = await current_frames(db_path)
    assert store.wal_frames - before == in_file > 0


async def page_size(path: Path) -> int:
    """The page size of a database file, read from its header (its 17th and 18th bytes)."""
    header = await anyio.Path(path).read_bytes()
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else size


async def test_a_new_file_has_pages_of_2_kib_and_an_old_one_keeps_its_own(
    store: SqliteStore, db_path: Path, tmp_path: Path
) -> None:
    """A new store's file is made with 2 KiB pages (each page a commit changes is written whole
    to the WAL); a file made before, with 4 KiB pages, keeps them, and takes commits."""
    await new_agent(store)
    assert await store.checkpoint() is None
    assert await page_size(db_path) == 2048

    old = tmp_path / "old.sqlite"
    packed = Path(__file__).parent / "data" / "main-94e2ff2" / "findings.sqlite.gz"
    await anyio.Path(old).write_bytes(gzip.decompress(await anyio.Path(packed).read_bytes()))
    assert await page_size(old) == 4096
    reopened = await SqliteStore.open(old, now_ms=T0)
    try:
        agent_id = await new_agent(reopened)
        await reopened.commit(turn_txn(agent_id, fresh("run")))
        assert await reopened.checkpoint() is None
    finally:
        await reopened.aclose()
    assert await page_size(old) == 4096
