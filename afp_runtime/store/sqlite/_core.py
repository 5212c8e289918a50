"""The connection under the SQLite store: opening, migrations, transactions, reads.

One writer connection per process, behind an anyio lock; the ``Txn``s of concurrent writers
share one short transaction, each in a savepoint of its own (``_write``,
docs/storage.md#group-commit), ``synchronous=NORMAL`` unless a member precedes an effect leaving
the process (``synchronous=FULL``,
docs/architecture.md#decision-1-sync-durability-commits-at-effect-boundaries). Every sqlite3
error becomes a ``StoreError``; a full disk, an unwritable or lost file, an I/O error and a WAL
past its bound a ``StoreUnavailable`` (``faults``, docs/storage.md#store-faults). The concerns
of the store (``conversations``, ``inbox``, ``questions``, ``runs``, ``leases``, ``health``) are
mixins over this class; ``store.SqliteStore`` puts them together.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio

from afp_runtime.errors import SchemaTooNew, StoreDamaged, StoreError, StoreUnavailable
from afp_runtime.store.rows import encoder, map_decoder
from afp_runtime.store.sqlite import faults, group, walframes, writes
from afp_runtime.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["SqliteCore", "chunks", "encoder", "map_decoder", "rows_of"]

T = TypeVar("T")
Core = TypeVar("Core", bound="SqliteCore")

BUSY_TIMEOUT_MS = faults.BUSY_TIMEOUT_MS
_CHUNK = 500  # ids per statement, well under SQLite's bound on parameters
# The page size of a new file: a commit writes each page it changes whole to the WAL, and most
# change a few hundred bytes in each of a dozen b-trees (docs/storage.md#page-size).
PAGE_SIZE = 2048
# Txns per group commit: a bound on how long one group holds the connection (and its reads).
_GROUP = 64


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """``ids`` in slices short enough for one statement's parameters."""
    return (ids[start : start + _CHUNK] for start in range(0, len(ids), _CHUNK))


async def rows_of(db: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Every row of one statement inside a transaction."""
    return list(await db.execute_fetchall(sql, params))


async def on_thread(db: aiosqlite.Connection, work: Callable[..., T], *args: Any) -> T:
    """``work(conn, *args)`` on ``db``'s own thread with its ``sqlite3.Connection``, queued in
    order with its other requests: one hop for many statements. aiosqlite has no public call
    for this, so its private ``_execute`` and ``_conn`` are used here only, with the driver's
    version bounded (docs/storage.md#the-sqlite-driver)."""
    result: T = await db._execute(work, db._conn, *args)
    return result


class SqliteCore:
    """One connection to one SQLite file (see ``store.SqliteStore``)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, *, read_only: bool) -> None:
        self.path = path
        self._conn = conn
        self._read_only = read_only
        # fast_acquire: an uncontended commit takes the lock without a trip round the event loop
        # (it yields at its hop to the connection's thread anyway, where others queue behind it).
        self._lock = anyio.Lock(fast_acquire=True)
        self._ids = writes.RowIds()
        self._queue: list[group.Member] = []  # writers waiting for the next group commit
        self._synchronous: str | None = None
        self.transactions = 0
        self._closed = False
        self.full_transactions = 0
        # Posts and closed questions committed through this object (``change_marker``).
        self.wakeful_commits = 0
        self.quick_checks = 0
        # (host_id, lease_epoch) every commit is fenced by; None: unfenced (one process).
        self._fence: tuple[str, int] | None = None
        self._wal = f"{path}-wal"
        # WAL frames the transactions of this object wrote (docs/storage.md#wal-frames-written).
        self._frames = walframes.WalFrames(f"{path}-shm")
        # Txns written in groups (``group_members / transactions``: the mean group's size).
        self.group_members = 0
        # Past this size of the -wal file, writes are refused unless a checkpoint shrinks it.
        self.wal_limit_bytes = faults.WAL_LIMIT_BYTES
        # The opened file's (device, inode): a write checks the path still names it.
        self._identity: tuple[int, int] | None = None
        # The schema the file is at: a reader does not migrate, so it reads what is there.
        self._stored_version = SCHEMA_VERSION
        # The definition summary each agent is known to hold (``ensure_agent`` skips a write
        # that would change nothing).
        self._profiles: dict[str, bytes] = {}

    # -- opening -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls: type[Core],
        path: str | Path,
        *,
        read_only: bool = False,
        create: bool = True,
        now_ms: int = 0,
    ) -> Core:
        """Open (and for writers create and migrate) the database at ``path``; with
        ``create=False`` (and always read-only) a missing file is refused, never made.

        Raises:
            StoreUnavailable: the file cannot be opened (or does not exist and may not be made).
            StoreDamaged: the file is not an afp_runtime database; it is left untouched.
            SchemaTooNew: the file was written by a newer afp_runtime; it is left untouched.
        """
        given = str(path)
        path = Path(path)
        existed = await anyio.Path(path).exists()
        if (read_only or not create) and not existed:
            raise StoreUnavailable(f"no database at {given}", path=given)
        try:
            if read_only:
                conn = await aiosqlite.connect(
                    f"file:{path}?mode=ro", uri=True, isolation_level=None
                )
            else:
                conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the database {path}: {exc}") from exc
        store = cls(path, conn, read_only=read_only)
        try:
            found = await anyio.Path(path).stat()
            store._identity = (found.st_dev, found.st_ino)
            await store._prepare(now_ms)
        except BaseException:
            await conn.close()
            if not existed:
                # A file this open made but could not initialise (a full disk, say) is not left
                # behind for the next open to find (docs/storage.md#store-faults).
                await _remove_new(path)
            raise
        return store

    async def _prepare(self, now_ms: int) -> None:
        try:
            await self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await self._conn.execute("PRAGMA foreign_keys=ON")
            tables = {
                row[0]
                for row in await self._conn.execute_fetchall(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                )
            }
        except sqlite3.OperationalError as exc:
            unavailable = faults.store_error(exc, f"opening {self.path}")
            if "unable to open" not in str(exc) and isinstance(unavailable, StoreUnavailable):
                raise unavailable from exc  # the disk's fault (full, unwritable, I/O), not damage
            if "unable to open" not in str(exc):
                raise StoreDamaged(
                    f"{self.path} is not a readable SQLite database ({exc}); it was not changed",
                    path=str(self.path),
                ) from exc
            # Not damage: a WAL database is read through its -wal and -shm files beside it,
            # which SQLite could not open or create (a folder that is not writable, say).
            raise StoreUnavailable(
                f"cannot open {self.path}: SQLite could not open the -wal and -shm files beside "
                f"it ({exc}); its folder must be writable, even to read it",
                path=str(self.path),
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise StoreDamaged(
                f"{self.path} is not a readable SQLite database ({exc}); it was not changed",
                path=str(self.path),
            ) from exc
        if tables and "meta" not in tables:
            raise StoreDamaged(
                f"{self.path} is a SQLite database but not an afp_runtime one; it was not changed",
                path=str(self.path),
            )
        version = 0
        if "meta" in tables:
            rows = await rows_of(self._conn, "SELECT value FROM meta WHERE key='schema_version'")
            if not rows or not str(rows[0][0]).isdigit():
                raise StoreDamaged(
                    f"{self.path} has no readable schema version; it was not changed",
                    path=str(self.path),
                )
            version = int(rows[0][0])
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} was written by a newer afp_runtime (schema {version}, "
                f"this build knows {SCHEMA_VERSION}); it was not changed",
                path=str(self.path),
            )
        if self._read_only:
            if version == 0:
                raise StoreUnavailable(f"{self.path} holds no afp_runtime data yet")
            self._stored_version = version
            return
        try:
            if not tables:
                # A new file only (an existing one keeps its pages): docs/storage.md#page-size.
                await self._conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            await self._conn.execute("PRAGMA journal_mode=WAL")
            await self._conn.execute(f"PRAGMA journal_size_limit={faults.JOURNAL_SIZE_LIMIT}")
            await self._set_synchronous("NORMAL")
            if version < SCHEMA_VERSION:
                await self._migrate(version, now_ms)
        except sqlite3.Error as exc:
            # Sorted as a write's failure is: a full disk at open is StoreUnavailable, not a
            # crash (docs/storage.md#store-faults).
            raise faults.store_error(exc, f"preparing the database {self.path}") from exc

    async def _migrate(self, version: int, now_ms: int) -> None:
        async with self._transaction(full=True) as db:
            if version == 0:
                await db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                await db.execute(
                    "CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                    " applied_at_ms INTEGER NOT NULL)"
                )
                await db.execute("INSERT INTO meta VALUES ('schema_version', '0')")
            for number, name, sql in MIGRATIONS:
                if number <= version:
                    continue
                # Comments go first: they may hold ';', which separates statements.
                code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
                for statement in code.split(";"):
                    if statement.strip():
                        await db.execute(statement)
                await db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (number, name, now_ms))
            await db.execute(
                "UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),)
            )

    async def aclose(self) -> None:
        """Close the connection (a writer first checkpoints the WAL); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        async with self._lock:
            try:
                if not self._read_only:
                    await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # closing still releases the file; the WAL is replayed at next open
            await self._conn.close()
            self._frames.close()

    @property
    def location(self) -> str:
        """The database file, as messages name it."""
        return str(self.path)

    @property
    def wal_frames(self) -> int:
        """WAL frames (database pages) the write transactions of this store have written."""
        return self._frames.frames

    @property
    def wal_bytes(self) -> int:
        """The bytes of ``wal_frames`` in the ``-wal`` file (each page and its frame header)."""
        return self._frames.bytes

    @property
    def schema_version(self) -> int:
        """The schema version this build writes."""
        return SCHEMA_VERSION

    # -- transactions --------------------------------------------------------------------

    async def _set_synchronous(self, level: str) -> None:
        if self._synchronous != level:
            await self._conn.execute(f"PRAGMA synchronous={level}")
            self._synchronous = level

    @asynccontextmanager
    async def _transaction(self, *, full: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        if self._read_only:
            raise StoreError("this store was opened read-only")
        async with self._lock:
            try:
                # One hop: the file and WAL checks, the level and BEGIN.
                mark = await on_thread(self._conn, self._begin, "FULL" if full else "NORMAL")
            except sqlite3.Error as exc:
                raise _not_started(exc) from exc
            except BaseException:
                # Cancelled while BEGIN was queued: it still runs on the connection's thread,
                # which runs requests in order, so roll it back after it (else the connection
                # stays inside a transaction and every later BEGIN fails).
                with anyio.CancelScope(shield=True), contextlib.suppress(sqlite3.Error):
                    await self._conn.execute("ROLLBACK")
                raise
            try:
                yield self._conn
                await on_thread(self._conn, self._commit, mark)
            except BaseException as exc:
                # Rowids cached inside the rolled-back transaction may name rows that never were.
                self._ids.clear()
                with anyio.CancelScope(shield=True):
                    # If ROLLBACK fails the transaction is gone already; nothing was committed.
                    with contextlib.suppress(sqlite3.Error):
                        await self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise faults.store_error(exc, "a store transaction") from exc
                raise
            self.transactions += 1
            self.full_transactions += int(full)

    def _begin(self, conn: sqlite3.Connection, level: str) -> walframes.Mark:
        """On the connection's thread: the checks before a write, the level, ``BEGIN``."""
        self._bound_wal(conn)
        self._set_level(conn, level)
        conn.execute("BEGIN IMMEDIATE")
        return self._frames.mark()

    def _commit(self, conn: sqlite3.Connection, mark: walframes.Mark) -> None:
        conn.execute("COMMIT")
        self._frames.count(mark)

    def _set_level(self, conn: sqlite3.Connection, level: str) -> None:
        # Only when it changes: a PRAGMA is a statement of its own on every commit otherwise.
        if self._synchronous != level:
            conn.execute(f"PRAGMA synchronous={level}")
            self._synchronous = level

    async def _write(self, work: Callable[[sqlite3.Connection], T], *, full: bool = False) -> T:
        """Run ``work`` in a transaction on the connection's own thread, together with whatever
        other writers queued meanwhile (docs/storage.md#group-commit): one hop from the event loop
        and one COMMIT for the group, at ``synchronous=FULL`` when any member asked for it. Its
        own failure rolls back only its own savepoint. Shielded from enqueueing on: once queued
        it completes or rolls back, never half-way.

        Waiters queue in ``_queue`` and then on the lock; whoever gets the lock with its own
        work still queued writes everything queued (up to ``_GROUP``) as one group, so what
        coalesces is what arrived while the previous group was being written; a lone writer
        waits for nothing.
        """
        if self._read_only:
            raise StoreError("this store was opened read-only")
        member = group.Member(work, full)
        with anyio.CancelScope(shield=True):
            self._queue.append(member)
            async with self._lock:
                if not member.done:
                    await self._write_group()
        if member.error is not None:
            raise member.error
        result: T = member.result
        return result

    async def _write_group(self) -> None:
        members = self._queue[:_GROUP]
        del self._queue[:_GROUP]
        full = any(member.full for member in members)
        level = "FULL" if full else "NORMAL"

        def run(conn: sqlite3.Connection) -> None:
            self._bound_wal(conn)
            self._set_level(conn, level)
            group.write_group(conn, members, self._ids, self._frames)

        try:
            # aiosqlite runs queued functions on its connection thread, in order: reads on this
            # connection run before or after the group, never inside it.
            await on_thread(self._conn, run)
        except BaseException as exc:
            # Rowids cached inside the rolled-back transaction may name rows that never were.
            self._ids.clear()
            for member in members:
                member.error = group.own_error(exc)
                member.done = True
            if not isinstance(exc, Exception):
                raise
            return
        for member in members:
            member.done = True
        self.transactions += 1
        self.full_transactions += int(full)
        self.group_members += len(members)

    async def _fetch(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        try:
            return list(await self._conn.execute_fetchall(sql, tuple(params)))
        except sqlite3.DatabaseError as exc:
            raise faults.store_error(exc, "a store read") from exc

    def _bound_wal(self, conn: sqlite3.Connection) -> None:
        """On the connection's thread, before a write: refuse it while the file opened is gone
        or replaced, or the WAL stays past ``wal_limit_bytes`` (docs/storage.md#store-faults)."""
        faults.check_file(str(self.path), self._identity)
        faults.bound_wal(conn, self._wal, self.wal_limit_bytes)


async def _remove_new(path: Path) -> None:
    """Remove the file an open made, with the ``-wal`` and ``-shm`` beside it."""
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(OSError):
            await anyio.Path(name).unlink()


def _not_started(exc: sqlite3.Error) -> StoreUnavailable:
    """A ``BEGIN`` that failed: the disk's fault when it is one, else the file is locked."""
    error = faults.store_error(exc, "starting a transaction")
    if isinstance(error, StoreUnavailable):
        return error
    return StoreUnavailable(f"cannot start a transaction: {exc}")
