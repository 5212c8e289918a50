"""Runs the store conformance suite (``afp_runtime.testing.store_conformance``) against every
store backend.

Two backends: SQLite, a real file in ``tmp_path``, and Postgres, a fresh database per test on
the server ``scripts/test`` starts (``tests/store/_postgres.py``; no server fails the Postgres
tests, never skips them). To add one, write a class shaped like ``SqliteBackend`` (the
``Backend`` protocol) and add it to ``BACKENDS``; every contract then runs against it too.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from afp_runtime.store import Store, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing.store_conformance import (
    CONTRACTS,
    Backend,
    Capability,
    Contract,
    missing_capabilities,
    run_contract,
)
from tests.store._postgres import PostgresBackend


class SqliteBackend:
    """One SQLite file in a test's ``tmp_path``; stores on it are opened as writers."""

    name = "sqlite"
    capabilities = frozenset(Capability)

    def __init__(self, directory: Path) -> None:
        self.path = directory / "afp.sqlite3"
        self._open: list[Store] = []

    async def open(self) -> Store:
        """A new writer store on the file, opened through the port's ``open_store``."""
        store = await open_store(self.path, now_ms=0)
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


BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "sqlite": SqliteBackend,
    "postgres": lambda _: PostgresBackend(),
}


@pytest.fixture(name="backend", params=sorted(BACKENDS))
async def fixture_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """A backend on fresh storage, closed after the test."""
    backend = BACKENDS[request.param](tmp_path)
    yield backend
    await backend.aclose()


@pytest.mark.parametrize("contract", CONTRACTS, ids=[c.__name__ for c in CONTRACTS])
async def test_contract(contract: Contract, backend: Backend) -> None:
    """The backend keeps the contract its docstring states (skipped without a capability)."""
    missing = missing_capabilities(contract, backend)
    if missing:
        pytest.skip(f"{backend.name} lacks {sorted(c.value for c in missing)}")
    await run_contract(contract, backend)


def test_the_suite_holds_the_lease_and_fencing_contracts() -> None:
    """The suite holds the lease and fencing contracts besides the others."""
    names = {contract.__name__ for contract in CONTRACTS}
    assert {
        "test_an_expired_lease_is_taken_over",
        "test_a_stale_epochs_commit_is_refused_whole",
        "test_a_live_claim_keeps_other_hosts_out",
        "test_release_lets_another_host_claim_at_once",
    } <= names
    assert len(names) == len(CONTRACTS) >= 25


def test_the_suite_imports_without_pytest() -> None:
    """A backend's own tests can import the suite under any framework: it loads no pytest."""
    probe = (
        "import sys, afp_runtime.testing.store_conformance as suite\n"
        "assert suite.CONTRACTS and 'pytest' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)
