"""The agent page's schedules in a real browser (docs/inspector.md#schedules): each one's form
in words, zone, due instants and source, its hostile text inert and verbatim, the pause, resume
and remove buttons acting through the app's use cases, and a delivered message marked as the
schedule's in the timeline."""

from __future__ import annotations

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

import afp_runtime as afp
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, serving, settle
from tests.host.test_schedules import advance_to

PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x'


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def test_schedules_show_inert_and_pause_resume_remove(api: Api, page: Page) -> None:
    """The schedule's row reads as set, its planted text as written with no dialog or image;
    the delivered message is marked ``scheduled`` from ``schedule:soon``; Pause, Resume and
    Remove each change the stored schedule and come back to the page."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    model = ScriptedModel([answer(f"done {i}") for i in range(5)], model="mock")
    async with api.running(agent(model)) as (host, _), serving(api.app(host)) as base:
        await settle(host)
        now = api.clock.now_ms()
        await afp.app.set_schedule(
            host.store,
            "ops",
            afp.schedule("soon", PLANTED + "\x07", every="2 hours", zone="Europe/Berlin"),
            source="api",
            now_ms=now,
        )
        host.wake("ops")
        await advance_to(api, host, now + 7_200_000, 1, name="soon")
        await page.goto(base + "/agents/ops")
        row = page.locator('tr[data-schedule="soon"]')
        cells = row.locator("td")
        await expect(cells.nth(0)).to_have_text("every 2 hours")
        await expect(cells.nth(1)).to_have_text("Europe/Berlin")
        await expect(cells.nth(2)).to_contain_text("Europe/Berlin (")
        await expect(cells.nth(2)).to_contain_text(" UTC)")
        await expect(cells.nth(4)).to_have_text("api")
        await expect(cells.nth(5)).to_have_text("active · 1 delivered")
        await expect(row.locator(".text")).to_have_text(PLANTED + "\u2407")
        assert await page.locator("main img").count() == 0
        assert await page.locator('main a[href^="javascript:"]').count() == 0
        marked = page.locator(".message.from-schedule")
        await expect(marked.locator(".badge")).to_have_text("scheduled")
        await expect(marked.locator(".who")).to_have_text("schedule:soon")
        await row.get_by_role("button", name="Pause soon").click()
        await expect(cells.nth(5)).to_have_text("paused · 1 delivered")
        assert (await afp.app.list_schedules(host.reader, "ops"))[0].paused
        await row.get_by_role("button", name="Resume soon").click()
        await expect(cells.nth(5)).to_have_text("active · 1 delivered")
        await row.get_by_role("button", name="Remove soon").click()
        await expect(page.locator("#schedules-title")).to_have_count(0)
        assert await afp.app.list_schedules(host.reader, "ops") == []
    assert dialogs == []
