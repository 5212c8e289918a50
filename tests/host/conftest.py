"""Fixtures for host tests: the same database-file harness as the API tests, without the app."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.conftest import Api


@pytest.fixture(name="api")
def fixture_api(tmp_path: Path) -> Api:
    """A fresh database file with a fake clock and sequential ids."""
    return Api(tmp_path / "afp.db")
