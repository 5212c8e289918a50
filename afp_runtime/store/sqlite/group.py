"""Group commit: the ``Txn`` writes of many waiters in one SQLite transaction
(docs/storage.md#group-commit).

``write_group`` runs on the connection's own thread, in one hop: ``BEGIN IMMEDIATE``, each
member's work inside its own ``SAVEPOINT`` (a member that fails is rolled back to it and keeps
its own error; the others go on), one ``COMMIT``. A group of one runs without a savepoint, as a
lone transaction did before. A failure that ends the whole transaction (``BEGIN`` refused, an
error SQLite answers by rolling everything back, ``COMMIT`` failing) fails every member.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from afp_runtime.errors import StoreUnavailable
from afp_runtime.store.sqlite.faults import store_error
from afp_runtime.store.sqlite.walframes import WalFrames
from afp_runtime.store.sqlite.writes import RowIds

__all__ = ["Member", "own_error", "write_group"]


class Member:
    """One waiter's work in a group, and what came of it (set on the connection's thread)."""

    __slots__ = ("done", "error", "full", "result", "work")

    def __init__(self, work: Callable[[sqlite3.Connection], Any], full: bool) -> None:
        self.work = work
        self.full = full
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


def own_error(exc: BaseException) -> BaseException:
    """The error a waiter sees: a sqlite3 error as a ``StoreError`` (``StoreUnavailable`` for a
    fault of the disk or the file), any other as it is."""
    if isinstance(exc, sqlite3.Error):
        return store_error(exc, "a store transaction")
    return exc


def write_group(
    conn: sqlite3.Connection, members: Sequence[Member], ids: RowIds, frames: WalFrames
) -> None:
    """Every member's work in one transaction, each member's failure its own.

    Raises:
        StoreUnavailable: the transaction could not start (the file is locked or unwritable).
        BaseException: whatever ended the whole transaction (nothing of it was committed).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        error = store_error(exc, "starting a transaction")
        if isinstance(error, StoreUnavailable):
            raise error from exc
        raise StoreUnavailable(f"cannot start a transaction: {exc}") from exc
    mark = frames.mark()
    try:
        if len(members) == 1:
            members[0].result = members[0].work(conn)
        else:
            for member in members:
                _in_savepoint(conn, member, ids)
        conn.execute("COMMIT")
    except BaseException:
        # If ROLLBACK fails the transaction is gone already; nothing was committed.
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    frames.count(mark)


def _in_savepoint(conn: sqlite3.Connection, member: Member, ids: RowIds) -> None:
    mark = ids.mark()
    conn.execute("SAVEPOINT member")
    try:
        member.result = member.work(conn)
    except Exception as exc:
        # Rowids cached inside the rolled-back savepoint may name rows that never were.
        ids.undo(mark)
        if not conn.in_transaction:
            raise  # SQLite rolled back the whole transaction (a full disk, an I/O error)
        conn.execute("ROLLBACK TO member")
        conn.execute("RELEASE member")
        member.error = own_error(exc)
        return
    conn.execute("RELEASE member")
