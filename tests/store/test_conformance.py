"""Runs the store conformance suite (``conformance.py``) against every store backend.

Today the one backend is SQLite, a real file in ``tmp_path``. To add one (Postgres), write a class
shaped like ``SqliteBackend`` (the ``conformance.Backend`` protocol) and add it to ``BACKENDS``;
every contract then runs against it too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest
from conformance import CONTRACTS, Backend, Capability, Store, required_capabilities

from afp_runtime.store.sqlite import SqliteStore


class SqliteBackend:
    """One SQLite file in a test's ``tmp_path``; stores on it are opened as writers."""

    name = "sqlite"
    capabilities = frozenset(Capability)

    def __init__(self, directory: Path) -> None:
        self.path = directory / "afp.sqlite3"
        self._open: list[SqliteStore] = []

    async def open(self) -> Store:
        """A new writer store on the file."""
        store = await SqliteStore.open(self.path, now_ms=0)
        self._open.append(store)
        return store

    async def reopen(self, store: Store) -> Store:
        """Close ``store`` (checkpointing its WAL) and open the file again."""
        assert isinstance(store, SqliteStore)
        self._open.remove(store)
        await store.aclose()
        return await self.open()

    async def body_count(self, store: Store) -> int:
        """Count rows of ``bodies`` on a separate connection in a worker thread."""

        def count() -> int:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                return int(conn.execute("SELECT COUNT(*) FROM bodies").fetchone()[0])
            finally:
                conn.close()

        return await anyio.to_thread.run_sync(count)

    async def aclose(self) -> None:
        """Close every store still open."""
        while self._open:
            await self._open.pop().aclose()


BACKENDS: dict[str, Callable[[Path], Backend]] = {"sqlite": SqliteBackend}


@pytest.fixture(name="backend", params=sorted(BACKENDS))
async def fixture_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """A backend on fresh storage, closed after the test."""
    backend = BACKENDS[request.param](tmp_path)
    yield backend
    await backend.aclose()


@pytest.fixture(name="store")
async def fixture_store(backend: Backend) -> Store:
    """An open store of the backend under test."""
    return await backend.open()


@pytest.fixture(autouse=True)
def _skip_without_capabilities(request: pytest.FixtureRequest, backend: Backend) -> None:
    """Skip a contract that needs a capability the backend does not declare."""
    missing = required_capabilities(request.function) - backend.capabilities
    if missing:
        pytest.skip(f"{backend.name} lacks {sorted(c.value for c in missing)}")


# Collect every contract as a test of this module; pytest injects ``store`` and ``backend``.
globals().update({contract.__name__: contract for contract in CONTRACTS})


def test_every_contract_is_collected() -> None:
    """Every contract of the suite is a test of this module."""
    assert CONTRACTS
    assert all(globals()[contract.__name__] is contract for contract in CONTRACTS)
