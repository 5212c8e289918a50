"""Fixtures for the inspector's tests: the API tests' database-file harness, and a real headless
chromium driven by Playwright's Python client (docs/inspector.md#how-the-pages-are-tested).

The browser is Debian's ``chromium`` (``scripts/_chromium`` installs it; ``AFP_CHROMIUM`` names
another binary), launched with a fresh profile and no network of its own. A test that fails
leaves a screenshot of its page in ``test-output/inspector/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from blockbuster import BlockBuster, blockbuster_ctx
from playwright.async_api import Browser, Page, async_playwright

from afp_runtime.demo import QUESTIONS
from afp_runtime.host import Host
from afp_runtime.records import StoredFoldedSpan
from tests.api.conftest import Api, settle

SHOTS = Path("test-output") / "inspector"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(name="api")
def fixture_api(tmp_path: Path) -> Api:
    """A fresh database file with a fake clock and sequential ids."""
    return Api(tmp_path / "afp.db")


@pytest.fixture(name="scan_ours")
def fixture_scan_ours() -> Iterator[BlockBuster]:
    """For browser tests, in place of the suite's check of every blocking call: only calls made
    from afp_runtime fail the test. Playwright's client talks to its driver with blocking calls
    of its own on the same loop; the server under test stays checked."""
    with blockbuster_ctx("afp_runtime") as bb:
        yield bb


def chromium_path() -> str:
    """The chromium binary: ``AFP_CHROMIUM``, else ``chromium`` on the PATH."""
    found = os.environ.get("AFP_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail("no chromium: scripts/test installs Debian's chromium (scripts/_chromium)")
    return found


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[Any]:
    """Keep each phase's report on the item, so a fixture can tell that its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(name="browser")
async def fixture_browser() -> AsyncIterator[Browser]:
    """A headless chromium; Playwright gives every launch a fresh temporary profile."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture(name="page")
async def fixture_page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A page 1280 px wide; its screenshot is saved when the test fails."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            await anyio.to_thread.run_sync(lambda: SHOTS.mkdir(parents=True, exist_ok=True))
            await page.screenshot(path=str(SHOTS / f"{request.node.name}.png"), full_page=True)
        await context.close()


async def ask_until_folded(host: Host, agent_id: str = "keep") -> list[StoredFoldedSpan]:
    """Every demo question to a folding desk agent, one settled turn each; its folded spans."""
    for question in QUESTIONS:
        await host.post(agent_id, question)
        await settle(host, agent_id)
    return await host.reader.folded_spans(agent_id)
