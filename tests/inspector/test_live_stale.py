"""The timeline when its live stream drops, in a real browser (headless chromium): a banner
says the host is not answering and every run's status says it is as of the last answer and
stale; when the host answers again the page catches up and the marks go
(docs/inspector.md#a-host-that-stops-answering)."""

from __future__ import annotations

import re

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, free_port, settle
from tests.inspector.test_agents_page import serving_on


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def test_a_dropped_live_stream_raises_a_banner_and_the_runs_read_stale(
    api: Api, page: Page
) -> None:
    """The server stops under an open timeline: an alert says the stream dropped and the run's
    status reads "answered (as of HH:MM:SS UTC, stale)"; a turn answered meanwhile shows once
    the server is back on the same port, with the banner and every stale mark gone."""
    port = free_port()
    async with api.running(agent([answer("first"), answer("second")])) as (host, _):
        await host.post("ops", "one")
        await settle(host)
        banner = page.get_by_role("alert")
        run = page.locator('article[data-turn="1"] details.run')
        async with serving_on(api.app(host), port) as base:
            await page.goto(base + "/agents/ops")
            await expect(page.locator("#live-state")).to_have_text("Updated live.")
            await expect(banner).to_have_count(0)
        # Bounds, not timings: the stream drops once the server's grace ends.
        await expect(banner).to_contain_text("The host is not answering", timeout=15_000)
        await expect(banner).to_contain_text("live stream dropped")
        await expect(run).to_have_class(re.compile(r"\bstale\b"))
        await expect(run.locator("summary")).to_contain_text(
            re.compile(r"answered \(as of \d\d:\d\d:\d\d UTC, stale\)")
        )
        await host.post("ops", "two")  # while the page hears nothing
        await settle(host)
        async with serving_on(api.app(host), port):
            # The browser reconnects on its own schedule (seconds): a bound, not a timing.
            turn = page.locator('article[data-turn="2"]')
            await expect(turn).to_have_count(1, timeout=20_000)
            await expect(banner).to_have_count(0)
            await expect(page.locator(".stale-note, .stale")).to_have_count(0)
            await page.goto("about:blank")  # closes the stream before the server stops
