"""The SQLite ``RunLog`` (docs/served.md#the-runlog-interface): ``IndexedRunLog`` on a read-only
``sqlite3`` connection of its own, opened and used inside a worker thread by ``read_run``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from afp_runtime.errors import StoreDamaged, StoreUnavailable
from afp_runtime.store.indexed_runlog import IndexedRunLog


class SqliteRunLog(IndexedRunLog):
    """One run's commit log on a SQLite file, read-only.

    Args:
        path: the database file.
        run_id: the run to read.

    Raises:
        StoreUnavailable: the file cannot be opened read-only.
        KeyError: the run does not exist.
    """

    def __init__(self, path: str | Path, run_id: str) -> None:
        self._path = str(path)
        try:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open {path} read-only: {exc}") from exc
        try:
            super().__init__(run_id)
        except BaseException:
            self._db.close()
            raise

    def _rows(self, sql: str, params: tuple[Any, ...]) -> Sequence[Sequence[Any]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:  # a damaged page, a missing table
            raise StoreDamaged(f"a store read failed: {exc}", path=self._path) from exc

    def close(self) -> None:
        """Close the read-only connection."""
        self._db.close()

    def __enter__(self) -> SqliteRunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
