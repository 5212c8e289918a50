"""The Postgres ``RunLog`` (docs/served.md#the-runlog-interface): ``IndexedRunLog`` whose every
statement runs on the store's pool, sent from the worker thread ``read_run`` calls served code
in back to the event loop (``anyio.from_thread.run``), so served code stays synchronous and
reads only what it asks for (``value_at`` from the per-key index, O(window))."""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Sequence
from functools import lru_cache
from typing import Any

import anyio.from_thread

from afp_runtime.store.indexed_runlog import IndexedRunLog


@lru_cache(maxsize=64)
def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders numbered ``$1``, ``$2``... as Postgres spells them."""
    count = iter(range(1, 1 + sql.count("?")))
    return re.sub(r"\?", lambda _: f"${next(count)}", sql)


class PostgresRunLog(IndexedRunLog):
    """One run's commit log in a Postgres store, read through ``fetch`` (the store's read);
    valid only inside the worker thread ``read_run`` runs it in.

    Raises:
        KeyError: the run does not exist.
    """

    def __init__(self, fetch: Callable[..., Coroutine[Any, Any, list[Any]]], run_id: str) -> None:
        self._fetch = fetch
        super().__init__(run_id)

    def _rows(self, sql: str, params: tuple[Any, ...]) -> Sequence[Sequence[Any]]:
        found: list[Any] = anyio.from_thread.run(self._fetch, numbered(sql), *params)
        return found
