"""The timeline shows a streamed reply as it arrives, in a real browser (headless chromium):
the text and a tool call's arguments fragment by fragment, inserted as text, gone once the call
ends and the committed reply is in the timeline (docs/inspector.md#timeline)."""

from __future__ import annotations

import anyio
import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.models import ScriptedModel, StreamedReply
from afp_runtime.testing import answer, call, tool_reply
from tests.api.conftest import Api, agent, serving, settle
from tests.inspector.test_browser import PLANTED


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def test_the_reply_assembles_live_as_text_and_leaves_once_committed(
    api: Api, page: Page
) -> None:
    """While the model streams, the page shows the fragments heard so far (markup in them shown
    as text, nothing run), then a tool call's name and arguments; no page is fetched per
    fragment; when the call ends the live reply hides and the turn shows the answer."""
    text_gate, call_gate = anyio.Event(), anyio.Event()
    text = PLANTED + " and more"
    cut = len(PLANTED)

    async def hold_text(index: int) -> None:
        if index == 2:  # "planted", then " and", then held
            await text_gate.wait()

    async def hold_call(index: int) -> None:
        if index == 2:  # the call's first two argument pieces, then held
            await call_gate.wait()

    script = [
        StreamedReply(reply=answer(text), sizes=(cut, 4), pause=hold_text),
        StreamedReply(
            reply=tool_reply(call("c1", "alpha_tool", q="xy")), sizes=(3,), pause=hold_call
        ),
        answer("done"),
    ]
    desk = agent(ScriptedModel(script, model="mock"))
    fetched: list[str] = []
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    async with api.running(desk) as (host, _), serving(api.app(host)) as base:
        await page.goto(base + "/agents/ops")
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        live = page.locator("#live-reply")
        await expect(live).to_be_hidden()
        page.on("request", lambda request: fetched.append(request.url))
        await host.post("ops", "one")
        await expect(page.locator("#live-reply-text")).to_have_text(PLANTED + " and")
        await expect(live).to_be_visible()
        await expect(page.locator("#live-reply-head")).to_have_text("Run run-1, call 1")
        assert await live.locator("script, img, a").count() == 0
        text_gate.set()
        await settle(host)
        await expect(live).to_be_hidden()
        await expect(page.locator("article.turn .text").last).to_contain_text("and more")
        fetched.clear()
        await host.post("ops", "two")
        calls = page.locator("#live-reply-calls li")
        await expect(calls).to_have_count(1)
        await expect(calls.locator(".tool")).to_have_text("alpha_tool")
        await expect(calls.locator(".args")).to_have_text('{"q":"')
        await expect(page.locator("#live-reply-text")).to_have_text("")
        # The fragments fetched nothing: the timeline page is fetched only for other events.
        assert set(fetched) <= {base + "/agents/ops"}
        call_gate.set()
        await settle(host)
        await expect(live).to_be_hidden()
        await expect(page.locator('article[data-turn="2"]')).to_contain_text("done")
        assert dialogs == []
        await page.goto("about:blank")  # closes the stream before the server stops
