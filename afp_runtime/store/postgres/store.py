"""The Postgres store (docs/storage.md#the-postgres-backend): an append-only commit log, bodies
by fingerprint and the per-key index in one database, through a bounded asyncpg pool.

``PostgresStore`` is the ``afp_runtime.store.Store`` port put together from one mixin per
concern over the pool of ``_core``, as ``SqliteStore`` is.
"""

from __future__ import annotations

import msgspec

from afp_runtime.store.postgres.conversations import Conversations
from afp_runtime.store.postgres.health import Health
from afp_runtime.store.postgres.inbox import Inbox
from afp_runtime.store.postgres.leases import Leases
from afp_runtime.store.postgres.moving import Moving
from afp_runtime.store.postgres.notices import Notices
from afp_runtime.store.postgres.questions import Questions
from afp_runtime.store.postgres.recall import Recall
from afp_runtime.store.postgres.runs import Runs
from afp_runtime.store.postgres.schedules import Schedules


class PostgresStore(
    Conversations, Inbox, Questions, Runs, Leases, Health, Notices, Moving, Schedules, Recall
):
    """The store port on one Postgres database.

    Open with ``await PostgresStore.open(url)`` (creates the tables and runs migrations) or
    ``PostgresStore.open(url, read_only=True)`` for readers; close with ``aclose``. Doors open
    it through ``afp_runtime.store.open_store``.
    """

    async def open_reader(self) -> PostgresStore:
        """A read-only store on the same database, with a small pool of its own."""
        target = msgspec.structs.replace(self.target, pool_min=1, pool_max=2)
        return await PostgresStore.open_target(target, read_only=True, create=False, now_ms=0)
