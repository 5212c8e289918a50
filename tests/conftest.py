"""Suite-wide fixtures: blocking calls on the event loop fail; structlog is reset per test.

``--loop uvloop`` (or ``AFP_TEST_LOOP=uvloop``) runs every async test on uvloop instead of
asyncio's own loop, and the ``afp`` processes tests start on it too (``AFP_LOOP``); scripts/test
runs the async-heavy directories a second time so (docs/host.md#the-event-loop).

The terminal summary also names every test that took more than half of its timeout: such a
test passes on a quiet machine and fails on a loaded one, so it is seen before it blocks CI.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest
import structlog
from blockbuster import BlockBuster, blockbuster_ctx
from hypothesis import HealthCheck, settings

# The time package reads the zone list once, at import. `afp.Agent` and friends are imported on
# first use, so a test that first touches them inside its event loop would do that read there
# and fail for its order in the run, not for what it tests.
import afp_runtime.time  # noqa: F401

# Hypothesis' deadline and its too-slow health check time the machine, not the code: on a loaded
# 2-core machine they fail tests that pass on a quiet one. Tests here assert behaviour only.
settings.register_profile(
    "afp",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("afp")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--loop",
        choices=("asyncio", "uvloop"),
        default=os.environ.get("AFP_TEST_LOOP") or "asyncio",
        help="the event loop async tests and the afp processes they start run on",
    )


class _Uvloop:
    """pytest-asyncio's loop factory hook, registered only for ``--loop uvloop``."""

    @staticmethod
    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> dict[str, Callable[[], Any]]:
        import uvloop

        return {"uvloop": uvloop.new_event_loop}


def pytest_configure(config: pytest.Config) -> None:
    loop = config.getoption("--loop")
    # `afp serve` and friends pick uvloop when installed: each pass runs them on its own loop.
    os.environ["AFP_LOOP"] = loop
    if loop == "uvloop":
        config.pluginmanager.register(_Uvloop(), "afp-uvloop")


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


_SPENT: dict[str, float] = {}
_OVER_HALF: list[tuple[str, float, float]] = []


def _timeout_of(item: pytest.Item) -> float:
    """The item's pytest-timeout limit in seconds: its marker, else the ini setting."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.args[0] if marker.args else marker.kwargs.get("timeout", 0)
        return float(value)
    return float(item.config.getini("timeout") or 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Add up setup, call and teardown (pytest-timeout counts all three) per test."""
    outcome = yield
    report = outcome.get_result()
    spent = _SPENT.get(item.nodeid, 0.0) + report.duration
    _SPENT[item.nodeid] = spent
    if report.when == "teardown":
        del _SPENT[item.nodeid]
        limit = _timeout_of(item)
        if limit > 0 and spent > limit / 2:
            _OVER_HALF.append((item.nodeid, spent, limit))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List the tests that took more than half of their timeout."""
    if not _OVER_HALF:
        return
    terminalreporter.section("tests above half their timeout")
    for nodeid, spent, limit in sorted(_OVER_HALF, key=lambda row: -row[1] / row[2]):
        terminalreporter.write_line(f"{spent:7.2f}s of {limit:.0f}s  {nodeid}")
