"""The call page in a real browser (headless chromium through Playwright;
docs/inspector.md#one-call): what was sent, the reply and the outcome read as a person sees
them, hostile text in every field the page added shown verbatim and inert, the numbers under
their headers, a crash-abandoned call said to be one, and a fold summary's link to its
originals."""

from __future__ import annotations

import re

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.app import reason_text
from afp_runtime.errors import ModelCallError
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer, call, tool_reply
from tests.api.conftest import Api, agent, serving, settle
from tests.api.test_folded import desk
from tests.crossed_calls import AGENT, crossed, support
from tests.inspector.conftest import ask_until_folded
from tests.inspector.test_call_page import refund_tool

PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)"> "q" \'s\' \x07'
SHOWN = PLANTED.replace("\x07", "\u2407")  # a control character shows as its picture
LONG = "w" * 3000  # one word, no place to break


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def _inert(page: Page) -> None:
    assert await page.locator("main img, main script, main a[href^='javascript']").count() == 0


async def test_a_replied_call_reads_in_order_with_hostile_text_inert(api: Api, page: Page) -> None:
    """A tool whose description, property name and property description are hostile, a reply
    whose text and arguments are, and a failure whose message is: each reads verbatim, no
    dialog opens and no element is made of them; the page shows the system, the tool's
    property, the message, the reply and outcome ``replied``, with each gap's sentence; the
    attempts figure sits right-aligned under its header; a 3,000-character word in a schema
    reads whole and the page still fits 390 px without scrolling sideways."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    schema = {
        "type": "object",
        "properties": {
            "x" + PLANTED: {"type": "string", "description": "says " + PLANTED},
            "long": {"type": "string", "description": LONG},
        },
    }
    script = [tool_reply(call("c1", "refund", note=PLANTED)), answer("done " + PLANTED)]
    refused = ModelCallError("refused " + PLANTED, error_kind="auth", provider="scripted")
    async with (
        api.running(
            agent(script, tools=[refund_tool("refunds " + PLANTED, schema)]),
            agent(ScriptedModel([refused], model="mock"), agent_id="held"),
        ) as (host, _),
        serving(api.app(host)) as base,
    ):
        await host.post("ops", "Please refund order 4520")
        await host.post("held", "go")
        await settle(host, "ops")
        await settle(host, "held")
        await page.goto(base + "/agents/ops/calls/2")
        main = page.locator("main")
        await expect(main.get_by_text("you are a bot", exact=True)).to_be_visible()
        await expect(main.get_by_text("Please refund order 4520", exact=True)).to_be_visible()
        await expect(main.get_by_text("refunds " + SHOWN, exact=True)).to_be_visible()
        await expect(main.get_by_text("x" + SHOWN, exact=True)).to_be_visible()
        await expect(main.get_by_text("says " + SHOWN, exact=True)).to_be_visible()
        await expect(page.locator("#outcome")).to_have_text("replied")
        await expect(page.locator(".reply pre.text")).to_have_text("done " + SHOWN)
        sentence = reason_text("provider-defaults")
        assert sentence is not None
        await expect(page.locator(".gaps dd").first).to_have_text(sentence)
        header = await page.locator(".call-facts th.num").first.bounding_box()
        figure = await page.locator("#attempts").bounding_box()
        assert header is not None and figure is not None
        assert abs((header["x"] + header["width"]) - (figure["x"] + figure["width"])) < 1
        await expect(page.locator("#attempts")).to_have_css("text-align", "right")
        await expect(main.get_by_text(LONG, exact=True)).to_be_visible()
        await _inert(page)
        await page.set_viewport_size({"width": 390, "height": 800})
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await page.set_viewport_size({"width": 1280, "height": 900})
        await page.goto(base + "/agents/ops/calls/1")
        await expect(page.locator(".reply-call code.text")).to_contain_text(SHOWN[:20])
        await _inert(page)
        await page.goto(base + "/agents/held/calls/1")
        await expect(page.locator("#outcome")).to_have_text("failed")
        await expect(page.locator("#error")).to_have_text("refused " + SHOWN)
        await _inert(page)
    assert dialogs == []


async def test_a_call_abandoned_by_a_crash_reads_so(api: Api, page: Page) -> None:
    """The call a crash cut off reads "abandoned" and "Abandoned by a crash", and its receipt's
    words say that no reply came."""
    await crossed(api.path)
    async with api.running(support()) as (host, _), serving(api.app(host)) as base:
        await page.goto(f"{base}/agents/{AGENT}/calls/3")
        await expect(page.locator("#outcome")).to_have_text("abandoned")
        await expect(page.locator(".ending .notice")).to_contain_text("Abandoned by a crash.")
        await expect(page.locator(".outcome-word")).to_have_text("abandoned by a crash")
        await expect(page.locator("#verdict-text")).to_contain_text("no reply came")
        await expect(page.locator(".reply")).to_have_count(0)


async def test_a_fold_summary_links_to_the_originals_it_replaced(api: Api, page: Page) -> None:
    """On the first call that sent a fold's summary, the summary is shown in place, marked,
    and its link opens the fold's page with the original messages."""
    async with (
        api.running(desk("keep", "conversation")) as (host, _),
        serving(api.app(host)) as base,
    ):
        [span, *_] = await ask_until_folded(host)
        state = await host.reader.conversation_state("keep")
        assert state is not None
        for number in range(1, state.model_calls + 1):
            await page.goto(f"{base}/agents/keep/calls/{number}")
            if await page.locator(".msg.fold-summary").count():
                break
        summary = page.locator(".msg.fold-summary").first
        await expect(summary.locator(".fold-tag")).to_have_text("fold summary")
        await expect(summary.locator("pre.text")).to_be_visible()  # in place, not folded away
        await summary.locator("a.fold-link").click()
        await expect(page).to_have_url(re.compile(rf"/folds/{span.summary_fingerprint[:12]}$"))
        await expect(page.locator(".messages.originals .msg")).to_have_count(span.message_count)
