"""SQLite's failures sorted into faults of the disk (``StoreUnavailable``, for now) and the rest
(``StoreError``), and the bound on the WAL (docs/storage.md#store-faults).

Runs on the connection's own thread (``bound_wal``, ``checkpoint``) or maps an error already
raised (``store_error``); nothing here touches the event loop.
"""

from __future__ import annotations

import os
import sqlite3

from afp_runtime.errors import StoreError, StoreUnavailable

__all__ = [
    "BUSY_TIMEOUT_MS",
    "JOURNAL_SIZE_LIMIT",
    "WAL_LIMIT_BYTES",
    "bound_wal",
    "check_file",
    "checkpoint",
    "store_error",
]

BUSY_TIMEOUT_MS = 5_000
# A writer refuses to write while the -wal file is larger than this and a checkpoint cannot
# shrink it (the main file cannot be written, a reader pins old pages): a bound instead of a
# WAL that fills the disk.
WAL_LIMIT_BYTES = 64 * 1024 * 1024
# What SQLite cuts the -wal file back to once a checkpoint has emptied it.
JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024
# A checkpoint waits this long for readers, not the writers' busy timeout: it runs under the
# writer lock, so every write would wait with it.
_CHECKPOINT_BUSY_MS = 50

# SQLite's primary result codes that mean the disk or the file, not the data or the code.
_CAUSES = {
    sqlite3.SQLITE_FULL: ("disk-full", "the disk is full"),
    sqlite3.SQLITE_READONLY: ("read-only", "the file or its folder may not be written"),
    sqlite3.SQLITE_PERM: ("read-only", "the file or its folder may not be written"),
    sqlite3.SQLITE_IOERR: ("io-error", "the disk answered an I/O error"),
    sqlite3.SQLITE_CANTOPEN: ("cannot-open", "the file is gone or cannot be opened"),
}


def store_error(exc: sqlite3.Error, doing: str) -> StoreError:
    """The store's error for ``exc``: ``StoreUnavailable`` (with its ``cause``) for a full disk,
    an unwritable or lost file and an I/O error, else ``StoreError``."""
    code = getattr(exc, "sqlite_errorcode", None)
    found = _CAUSES.get(code & 0xFF) if isinstance(code, int) else None
    error: StoreError
    if found is None:
        error = StoreError(f"{doing} failed: {exc}")
    else:
        cause, meaning = found
        error = StoreUnavailable(f"{doing} failed: {meaning} ({exc})", cause=cause)
    error.__cause__ = exc
    return error


def _wal_size(wal: str) -> int:
    try:
        return os.stat(wal).st_size
    except OSError:
        return 0  # no WAL (yet): nothing to bound


def checkpoint(conn: sqlite3.Connection, wal: str) -> str | None:
    """Copy the WAL into the main file and truncate it (``wal_checkpoint(TRUNCATE)``), waiting
    for readers only briefly; None when it was emptied, else why not."""
    conn.execute(f"PRAGMA busy_timeout={_CHECKPOINT_BUSY_MS}")
    try:
        busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        return f"the checkpoint failed: {store_error(exc, 'a checkpoint').message}"
    finally:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    if busy and _wal_size(wal) > 0:
        return (
            f"the checkpoint could not finish: a reader holds old pages ({copied} of {frames} "
            "WAL frames copied)"
        )
    return None


def check_file(path: str, identity: tuple[int, int] | None) -> None:
    """Before a write: the database file is still at ``path`` and still the one opened
    (``identity``: its device and inode). SQLite would go on writing to an open file that was
    removed or replaced, and every write acknowledged then would be lost with it.

    Raises:
        StoreUnavailable: (cause ``cannot-open``) the file is gone or is another file now.
    """
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise StoreUnavailable(
            f"the database file {path} is gone (removed or moved since it was opened); nothing "
            "is written until it is back",
            cause="cannot-open",
        ) from None
    except OSError as exc:
        raise StoreUnavailable(f"cannot look at the database file {path}: {exc}") from exc
    if identity is not None and (found.st_dev, found.st_ino) != identity:
        raise StoreUnavailable(
            f"the database file {path} is another file than the one opened (it was replaced); "
            "nothing is written to it: restart the host to open the new one",
            cause="cannot-open",
        )


def bound_wal(conn: sqlite3.Connection, wal: str, limit: int) -> None:
    """Before a write: when the WAL is past ``limit``, checkpoint it; refuse if it stays past.

    Raises:
        StoreUnavailable: (cause ``wal-limit``) the WAL stays past its bound.
    """
    if _wal_size(wal) <= limit:
        return
    why = checkpoint(conn, wal)
    size = _wal_size(wal)
    if size <= limit:
        return
    raise StoreUnavailable(
        f"the WAL ({wal}) is {_mib(size)}, past its bound of {_mib(limit)}, and "
        f"{why or 'a checkpoint did not shrink it'}; writes are refused until it can be "
        "checkpointed",
        cause="wal-limit",
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"
