"""The timeline collapsed, in a real browser (headless chromium): each run one closed summary
line that opens on click and stays open over live updates, the settled questions one counted
line under the open ones, ten turns drawn as their summary lines only, numbers under their
headers, and markup in a summary line inert (docs/inspector.md#timeline)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from tests.api.conftest import Api, agent, serving, settle
from tests.api.test_folded import desk
from tests.inspector.test_agents_page import MISALIGNED, RIGHT
from tests.inspector.test_browser import PLANTED

OPEN = "Array.from(document.querySelectorAll('details.run'), (d) => d.open)"
# How many of the matches the browser draws (a closed run's body is not drawn).
DRAWN = "(s) => Array.from(document.querySelectorAll(s)).filter((e) => e.checkVisibility()).length"


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def test_runs_start_closed_open_on_click_and_stay_open_over_a_live_update(
    api: Api, page: Page
) -> None:
    """Three runs are three closed summary lines (markup in an answer's first line shown as
    text, nothing of it run); the one clicked opens with its calls and stays open when a
    fourth turn arrives live, which comes closed."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    script = [answer("one"), answer(PLANTED + "\nmore"), answer("three"), answer("four")]
    async with api.running(agent(script)) as (host, _), serving(api.app(host)) as base:
        for text in ("a", "b", "c"):
            await host.post("ops", text)
            await settle(host)
        await page.goto(base + "/agents/ops")
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        assert await page.evaluate(OPEN) == [False, False, False]
        assert await page.evaluate(DRAWN, "table.calls") == 0
        planted = page.locator('article[data-turn="2"] .answer-line')
        await expect(planted).to_have_text(PLANTED + " …")
        assert await page.locator("main img, main script, main a[href^='javascript']").count() == 0
        oldest = page.locator('article[data-turn="1"] details.run')
        await oldest.locator("summary").click()
        await expect(oldest.locator("table.calls")).to_be_visible()
        await host.post("ops", "d")
        await settle(host)
        await expect(page.locator('article[data-turn="4"]')).to_have_count(1)
        assert await page.evaluate(OPEN) == [False, False, False, True]
        await expect(oldest.locator("table.calls")).to_be_visible()
        assert dialogs == []
        await page.goto("about:blank")


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person(f"which host for {ctx.tool_call_id}? {PLANTED}")


async def test_settled_questions_are_one_line_and_an_open_one_arrives_above_them(
    api: Api, page: Page
) -> None:
    """Two answered questions read "2 answered questions", closed; opened, the line stays open
    when a new question arrives live, which shows above it with its form."""
    script = [
        entry
        for i in (1, 2, 3)
        for entry in (tool_reply(call(f"c{i}", "beta_tool")), answer(f"answer {i}"))
    ]
    asking = agent(script, tools=[Tool("beta_tool", "asks", {"type": "object"}, _ask)])
    async with api.running(asking) as (host, _), serving(api.app(host)) as base:
        for i in (1, 2):
            await host.post("ops", f"turn {i}")
            await settle(host)
            [question] = await host.reader.questions("ops", status="open")
            await host.answer("ops", question.question_id, f"web-{i}")
            await settle(host)
        await page.goto(base + "/agents/ops")
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        settled = page.locator("details.settled-questions")
        await expect(settled.locator("summary")).to_have_text("2 answered questions")
        await expect(settled.locator("li.question").first).to_be_hidden()
        await settled.locator("summary").click()
        await expect(settled.locator("li.question")).to_have_count(2)
        await expect(settled.locator("li.question").first).to_be_visible()
        await host.post("ops", "turn 3")
        await settle(host)
        opened = page.locator(".open-questions li.question")
        await expect(opened).to_have_count(1)
        await expect(opened).to_contain_text("which host for c3? " + PLANTED)
        await expect(page.get_by_label("Your answer")).to_be_visible()
        await expect(settled).to_have_attribute("open", "")
        above = await page.evaluate(
            "document.querySelector('.open-questions').compareDocumentPosition("
            "document.querySelector('details.settled-questions'))"
        )
        assert above & 4  # the open question comes before the settled line
        await page.goto("about:blank")


async def test_ten_turns_draw_only_their_runs_summary_lines(api: Api, page: Page) -> None:
    """The demo desk after ten turns: each turn's run is drawn as its summary line alone (no
    call table, no visit table drawn), and the page is shorter than with every run opened."""
    async with (
        api.running(desk("keep", "conversation")) as (host, _),
        serving(api.app(host)) as base,
    ):
        for i in range(10):
            await host.post("keep", f"Where is order {1000 + i}?")
            await settle(host, "keep")
        await page.goto(base + "/agents/keep")
        await expect(page.locator("article.turn")).to_have_count(10)
        assert await page.evaluate(DRAWN, "details.run > summary") == 10
        for body in ("table.calls", "table.visits", "p.answer", "li.fold-marker"):
            assert await page.evaluate(DRAWN, body) == 0, body
        collapsed = await page.evaluate("document.body.scrollHeight")
        await page.evaluate(
            "document.querySelectorAll('details.run').forEach((d) => d.open = true)"
        )
        assert await page.evaluate(DRAWN, "table.calls") == 10
        assert collapsed < await page.evaluate("document.body.scrollHeight")
        await page.goto("about:blank")


async def test_run_tables_put_their_numbers_under_their_headers(api: Api, page: Page) -> None:
    """In an opened run of a folding agent, the calls' and the visits' numeric columns are
    right-aligned, header and cells alike, in figures of one width."""
    async with (
        api.running(desk("keep", "conversation")) as (host, _),
        serving(api.app(host)) as base,
    ):
        for i in range(3):
            await host.post("keep", f"Where is order {1000 + i}?")
            await settle(host, "keep")
        await page.goto(base + "/agents/keep")
        await page.evaluate(
            "document.querySelectorAll('details.run').forEach((d) => d.open = true)"
        )
        await expect(page.locator("table.visits").first).to_be_visible()
        assert await page.evaluate(MISALIGNED, "table.calls, table.visits") == []
        assert await page.evaluate(RIGHT, "table.calls") == [
            "Attempts tabular-nums",
            "Tool calls tabular-nums",
            "Usage tabular-nums",
        ]
        assert await page.evaluate(RIGHT, "table.visits") == [
            "Messages left tabular-nums",
            "Turns tabular-nums",
            "Characters tabular-nums",
        ]
        await page.goto("about:blank")
