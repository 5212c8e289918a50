"""Counting what the Postgres store sends the server (docs/storage.md#round-trips).

Every pooled connection is a ``CountingConnection``: each statement, batch of statements and
transaction-control command it sends (``BEGIN``, ``COMMIT``, ``ROLLBACK`` go through
``execute``) adds one to its store's ``Trips``, which ``PostgresStore.round_trips`` shows. A
statement's first preparation on a connection (asyncpg caches it per connection) is not counted:
it happens once per statement and connection, not per call.

The pool hands connections back without asyncpg's default reset (``pg_advisory_unlock_all``,
``CLOSE ALL``, ``UNLISTEN *``, ``RESET ALL``: one more round trip per use): the store leaves no
session state behind (no ``SET`` but ``SET LOCAL``, transaction-level advisory locks only, its
one listener removed before release), and asyncpg still rolls back a transaction left open.
"""

from __future__ import annotations

from typing import Any

import asyncpg

__all__ = ["CountingConnection", "Trips", "keep_session"]


class Trips:
    """Round trips sent by one store's connections."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class CountingConnection(asyncpg.Connection):
    """An asyncpg connection that counts what it sends in its store's ``Trips``."""

    __slots__ = ("afp_trips",)

    def counted(self, trips: Trips) -> None:
        """Count from now on in ``trips``."""
        self.afp_trips = trips

    def _count(self) -> None:
        trips: Trips | None = getattr(self, "afp_trips", None)
        if trips is not None:
            trips.count += 1

    # Each passes its arguments on as they came (the timeout among them).
    async def execute(self, query: str, *args: Any, **kw: Any) -> str:
        self._count()
        result: str = await super().execute(query, *args, **kw)
        return result

    async def executemany(self, command: str, args: Any, **kw: Any) -> None:
        # asyncpg pipelines the rows and waits once, at the end.
        self._count()
        await super().executemany(command, args, **kw)

    async def fetch(self, query: str, *args: Any, **kw: Any) -> Any:
        self._count()
        return await super().fetch(query, *args, **kw)

    async def fetchval(self, query: str, *args: Any, **kw: Any) -> Any:
        self._count()
        return await super().fetchval(query, *args, **kw)

    async def fetchrow(self, query: str, *args: Any, **kw: Any) -> Any:
        self._count()
        return await super().fetchrow(query, *args, **kw)


async def keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset of a released connection: nothing to send (see the module's text)."""
