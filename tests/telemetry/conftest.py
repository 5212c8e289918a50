"""Fixtures for the telemetry tests: the API tests' database-file harness (``api``)."""

from __future__ import annotations

from tests.api.conftest import fixture_api

__all__ = ["fixture_api"]
