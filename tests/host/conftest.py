"""Fixtures for host tests: the same database-file harness as the API tests, without the app, and
a fresh Postgres database for the tests of real hosts on Postgres."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.api.conftest import Api
from tests.host.full_disk import Disk, mount
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


@pytest.fixture(name="disk")
def fixture_disk(tmp_path: Path) -> Iterator[Disk]:
    """A 2 MB tmpfs (or, where none may be mounted, a folder whose file ``max_page_count``
    fills), tests/host/full_disk.py."""
    point = tmp_path / "disk"
    point.mkdir()
    real = mount(point)
    try:
        yield Disk(point, real=real)
    finally:
        if real:
            subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture(name="real_disk")
def fixture_real_disk(disk: Disk) -> Disk:
    """The ``disk``, when it is a real tmpfs; else the test is skipped saying why."""
    if not disk.real:
        pytest.skip("afp processes need a real full disk: no tmpfs may be mounted here")
    return disk
