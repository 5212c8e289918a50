"""Health checks and the clean-shutdown marker (docs/host.md#start-up step 1,
docs/host.md#graceful-shutdown step 4)."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable

import anyio

from afp_runtime.errors import StoreError
from afp_runtime.store.sqlite import faults
from afp_runtime.store.sqlite._core import SqliteCore, on_thread


class Health(SqliteCore):
    """``quick_check``, ``integrity_check``, the body check and the clean-shutdown marker."""

    async def clean_shutdown(self) -> bool:
        """Whether the last host on this file recorded a clean shutdown."""
        rows = await self._fetch("SELECT value FROM meta WHERE key='clean_shutdown'")
        return bool(rows) and rows[0][0] == "1"

    async def begin_serving(self) -> None:
        """Clear the clean-shutdown marker: a host is about to write (a crash leaves it clear)."""
        async with self._transaction(full=True) as db:
            await db.execute("INSERT OR REPLACE INTO meta VALUES ('clean_shutdown', '0')")

    async def mark_clean_shutdown(self) -> None:
        """Record a clean shutdown and checkpoint the WAL into the main file."""
        async with self._transaction(full=True) as db:
            await db.execute("INSERT OR REPLACE INTO meta VALUES ('clean_shutdown', '1')")
        async with self._lock:
            with contextlib.suppress(sqlite3.Error):
                await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def checkpoint(self) -> str | None:
        """Checkpoint the WAL into the main file and truncate it, waiting for readers only
        briefly; None when done, else why not (docs/storage.md#store-faults). The host runs it
        periodically and reports one that keeps failing."""
        if self._read_only:
            return None
        async with self._lock:
            why: str | None = await on_thread(self._conn, faults.checkpoint, self._wal)
        return why

    async def quick_check(self) -> list[str]:
        """``PRAGMA quick_check``: ``['ok']`` on a healthy file (counted in ``quick_checks``).

        It runs in the connection's thread; cancelled, it interrupts that statement, so a
        stop never waits for a pass over the whole file."""
        self.quick_checks += 1
        try:
            return [str(r[0]) for r in await self._fetch("PRAGMA quick_check")]
        except StoreError as exc:
            return [str(exc)]
        except anyio.get_cancelled_exc_class():
            await self._conn.interrupt()  # sqlite3 allows it from any thread
            raise

    async def integrity_check(self) -> list[str]:
        """``PRAGMA integrity_check``: ``['ok']`` on a healthy file."""
        return [str(r[0]) for r in await self._fetch("PRAGMA integrity_check")]

    async def body_check(self) -> list[str]:
        """Fingerprints whose stored body no longer hashes to them (content addressing)."""
        rows = await self._fetch("SELECT fp, body FROM bodies")

        def check() -> list[str]:
            return [fp.hex() for fp, body in rows if not _hashes_to(body, fp)]

        return await anyio.to_thread.run_sync(check)

    async def change_marker(self) -> tuple[int, int] | None:
        """``PRAGMA data_version`` on the store's one connection (SQLite changes it for every
        commit of another connection, never for this connection's own), and the posts and
        closed questions this store object committed."""
        rows = await self._fetch("PRAGMA data_version")
        return int(rows[0][0]), self.wakeful_commits

    async def watch_posts(self, on_post: Callable[[str], None]) -> None:
        """SQLite tells other processes nothing: wait until cancelled (hosts poll)."""
        await anyio.sleep_forever()


def _hashes_to(body: object, fp: object) -> bool:
    """Whether a stored body is bytes whose SHA-256 is its fingerprint (a body stored as text,
    or a fingerprint that is not bytes, is damage too)."""
    if not isinstance(body, bytes | bytearray | memoryview):
        return False
    return hashlib.sha256(body).digest() == bytes(fp)  # type: ignore[call-overload]
