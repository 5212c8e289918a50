"""Suite-wide fixtures: blocking calls on the event loop fail; structlog is reset per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from blockbuster import BlockBuster, blockbuster_ctx


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster() -> Iterator[BlockBuster]:
    """Fail any test that blocks the event loop (sqlite3, time.sleep, sync file I/O...)."""
    with blockbuster_ctx() as bb:
        # pytest and hypothesis write their own files from the loop thread between awaits.
        for func in (
            "io.TextIOWrapper.write",
            "io.BufferedWriter.write",
            "os.stat",
            "os.path.exists",
        ):
            if func in bb.functions:
                bb.functions[func].can_block_in("_pytest/", "hypothesis/")
        yield bb


@pytest.fixture(autouse=True, name="logs")
def fixture_logs() -> Iterator[list[dict[str, Any]]]:
    """Each test starts from structlog's defaults and captures its log entries as dicts.

    Capturing also keeps rendering (which reads source files for tracebacks) off the event loop.
    """
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as entries:
        yield entries
    structlog.reset_defaults()
