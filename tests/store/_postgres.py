"""The Postgres side of the store tests: a fresh database per test on the server named by
``AFP_TEST_POSTGRES_URL`` (``scripts/test`` starts a throwaway one,
docs/storage.md#the-postgres-tests).

No server is a failure, never a skip: ``server_url`` fails the test that asks for one.
"""

from __future__ import annotations

import os
import uuid

import asyncpg
import pytest

from afp_runtime.store import Store, open_store
from afp_runtime.testing.postgres import (
    create_database,
    drop_database,
    plain_connection,
    with_database,
)
from afp_runtime.testing.store_conformance import Capability

ENV = "AFP_TEST_POSTGRES_URL"


def server_url() -> str:
    """The test server's URL (its maintenance database); fails the test when none is set."""
    url = os.environ.get(ENV)
    if not url:
        pytest.fail(
            f"{ENV} is not set: run the suite through scripts/test, which starts a throwaway "
            "PostgreSQL server, or point it at a server you may create databases on"
        )
    return url


async def admin(url: str) -> asyncpg.Connection:
    """A plain connection on ``url`` (TLS prepared off the event loop, as the store does)."""
    return await plain_connection(url)


class FreshDatabase:
    """A database of its own on the test server: created on first use, dropped by ``drop``."""

    def __init__(self) -> None:
        self.server = server_url()
        self.name = f"afp_test_{uuid.uuid4().hex[:16]}"
        self.url = with_database(self.server, self.name)
        self._created = False

    async def create(self) -> str:
        """Create the database (once); its URL."""
        if not self._created:
            await create_database(self.server, self.name)
            self._created = True
        return self.url

    async def __aenter__(self) -> FreshDatabase:
        await self.create()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.drop()

    async def drop(self) -> None:
        """Drop the database, closing whatever still holds it open."""
        if self._created:
            await drop_database(self.server, self.name)
            self._created = False


class PostgresBackend:
    """A fresh database on the test server; stores on it are opened through ``open_store``."""

    name = "postgres"
    capabilities = frozenset(Capability)

    def __init__(self) -> None:
        self.database = FreshDatabase()
        self._open: list[Store] = []

    async def open(self) -> Store:
        """A new writer store on the database (its own pool)."""
        store = await open_store(await self.database.create(), now_ms=0)
        self._open.append(store)
        return store

    async def reopen(self, store: Store) -> Store:
        """Close ``store`` (its pool) and open the database again."""
        self._open.remove(store)
        await store.aclose()
        return await self.open()

    async def body_count(self, store: Store) -> int:
        """Count rows of ``bodies`` on a connection of its own."""
        conn = await admin(self.database.url)
        try:
            return int(await conn.fetchval("SELECT COUNT(*) FROM bodies"))
        finally:
            await conn.close()

    async def aclose(self) -> None:
        """Close every store still open and drop the database."""
        while self._open:
            await self._open.pop().aclose()
        await self.database.drop()
