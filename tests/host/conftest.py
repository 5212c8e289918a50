"""Fixtures for host tests: the same database-file harness as the API tests, without the app, and
a fresh Postgres database for the tests of real hosts on Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.api.conftest import Api
from tests.store._postgres import FreshDatabase


@pytest.fixture(name="api")
def fixture_api(tmp_path: Path) -> Api:
    """A fresh database file with a fake clock and sequential ids."""
    return Api(tmp_path / "afp.db")


@pytest.fixture(name="database")
def fixture_database() -> Iterator[FreshDatabase]:
    """A fresh database on the suite's Postgres server, dropped after the test."""
    database = FreshDatabase()
    anyio.run(database.create)
    yield database
    anyio.run(database.drop)
