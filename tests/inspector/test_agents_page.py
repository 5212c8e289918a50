"""The agents page in a real browser (headless chromium): its numbers right-aligned under their
headers, and a host that stops answering said by a banner while every row says its state is
stale, until the host answers again (docs/inspector.md#agents)."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from blockbuster import BlockBuster
from litestar import Litestar
from playwright.async_api import Page, expect

from afp_runtime.api import ApiServer, open_listener
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, free_port, serving, settle, until

STALE = re.compile(r"^idle \(as of \d\d:\d\d:\d\d UTC, stale\)$")

# Per table selector, every column's header alignment against its cells'; the mismatches.
MISALIGNED = """(selector) => Array.from(document.querySelectorAll(selector)).flatMap((table) => {
  const heads = Array.from(table.tHead.rows[0].cells, (c) => getComputedStyle(c).textAlign);
  const wrong = [];
  for (const row of table.tBodies[0].rows) {
    Array.from(row.cells).forEach((cell, i) => {
      const align = getComputedStyle(cell).textAlign;
      if (align !== heads[i]) wrong.push(`${table.className} ${i}: ${heads[i]} over ${align}`);
    });
  }
  return wrong;
})"""

# The headers of a table whose column is right-aligned, with their cells' figure style.
RIGHT = """(selector) => Array.from(document.querySelector(selector).tHead.rows[0].cells)
  .filter((c) => getComputedStyle(c).textAlign === "right")
  .map((c) => c.textContent.trim() + " " + getComputedStyle(c).fontVariantNumeric)"""


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


@asynccontextmanager
async def serving_on(app: Litestar, port: int) -> AsyncIterator[str]:
    """uvicorn serving ``app`` on ``port``, so a test can stop a host's server and start one
    again where the open page looks for it; yields the base URL."""
    listener: socket.socket = await open_listener("127.0.0.1", port)
    server = ApiServer(app, graceful_s=1)
    with listener:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [listener])
            await until(lambda: server.started)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


async def test_the_agents_numbers_sit_right_aligned_under_their_headers(
    api: Api, page: Page
) -> None:
    """Inbox, open questions and turn are right-aligned, header and cells alike, in figures of
    one width; every other column's header is aligned as its cells are."""
    definitions = [agent([answer("hi")], agent_id=name) for name in ("alpha", "beta")]
    async with api.running(*definitions) as (host, _), serving(api.app(host)) as base:
        await host.post("alpha", "hello")
        await settle(host, "alpha")
        await page.goto(base + "/")
        await expect(page.locator("#agent-rows tr")).to_have_count(2)
        assert await page.evaluate(MISALIGNED, "table.agents") == []
        assert await page.evaluate(RIGHT, "table.agents") == [
            "Inbox tabular-nums",
            "Open questions tabular-nums",
            "Turn tabular-nums",
        ]


async def test_a_host_that_stops_answering_raises_a_banner_and_every_row_reads_stale(
    api: Api, page: Page
) -> None:
    """With the host's server stopped, the page says so in an alert and each row's status says
    it is as of the last answer and stale; once the server answers again on the same port the
    banner and every stale mark are gone and the rows are fresh."""
    port = free_port()
    definitions = [agent([answer("hi")], agent_id=name) for name in ("alpha", "beta")]
    async with api.running(*definitions) as (host, _):
        rows = page.locator("#agent-rows tr")
        banner = page.get_by_role("alert")
        async with serving_on(api.app(host), port) as base:
            await page.goto(base + "/")
            await expect(rows).to_have_count(2)
            await expect(page.locator("#live-state")).to_have_text("Updated live.")
            await expect(banner).to_have_count(0)
        await expect(banner).to_contain_text("The host is not answering", timeout=15_000)
        await expect(banner).to_contain_text(re.compile(r"as of \d\d:\d\d:\d\d UTC"))
        for name in ("alpha", "beta"):
            row = page.locator(f'tr[data-agent="{name}"]')
            await expect(row).to_have_class(re.compile(r"\bstale\b"))
            await expect(row.locator("td").first).to_have_text(STALE)
        await host.post("alpha", "hello")  # heard once the host answers again
        await settle(host, "alpha")
        async with serving_on(api.app(host), port):
            turn = page.locator('tr[data-agent="alpha"] td').nth(3)
            await expect(turn).to_have_text("1", timeout=15_000)
            await expect(banner).to_have_count(0)
            await expect(page.locator(".stale-note, tr.stale")).to_have_count(0)
            await expect(page.locator('tr[data-agent="beta"] td').first).to_have_text("idle")
            await page.goto("about:blank")
