"""The inspector in a real browser (headless chromium through Playwright): the agents page and
its live update, signing in with a token, planted markup shown as text, narrow screens and the
keyboard (docs/inspector.md#how-the-pages-are-tested)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from tests.api.conftest import Api, agent, serving, settle
from tests.api.test_folded import desk
from tests.inspector.conftest import ask_until_folded

TOKEN = "k" * 40


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x'


async def test_the_agents_page_shows_every_agent_and_updates_live(api: Api, page: Page) -> None:
    """The page lists the agents; a message answered while it is open shows in its row
    without a reload."""
    definitions = [agent([answer("hi")], agent_id=name) for name in ("alpha", "beta")]
    async with api.running(*definitions) as (host, _), serving(api.app(host)) as base:
        await page.goto(base + "/")
        rows = page.locator("#agent-rows tr")
        await expect(rows).to_have_count(2)
        alpha = page.locator('tr[data-agent="alpha"]')
        await expect(alpha.locator("td").nth(3)).to_have_text("0")  # turn
        loaded = await page.evaluate("performance.timeOrigin")
        await host.post("alpha", "hello")
        await settle(host, "alpha")
        await expect(alpha.locator("td").nth(3)).to_have_text("1")
        assert await page.evaluate("performance.timeOrigin") == loaded  # no reload


async def test_a_browser_signs_in_with_the_token_and_keeps_a_strict_cookie(
    api: Api, page: Page
) -> None:
    """With a token the page sends the browser to the form; the labelled field and the button
    sign it in, and the cookie is HttpOnly and SameSite=Strict."""
    async with (
        api.running(agent([answer("hi")]), token=TOKEN) as (host, _),
        serving(api.app(host, token=TOKEN)) as base,
    ):
        await page.goto(base + "/")
        await expect(page).to_have_url(base + "/login")
        await page.get_by_label("API token").fill("wrong" * 8)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_contain_text("not this host's token")
        await page.get_by_label("API token").fill(TOKEN)
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(base + "/")
        await expect(page.locator('tr[data-agent="ops"]')).to_be_visible()
        [cookie] = await page.context.cookies()
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]


async def test_planted_markup_runs_nothing_and_reads_as_text(api: Api, page: Page) -> None:
    """A script, an image with onerror, a javascript: link and control characters planted in
    the model name, the person's message, a tool name the model made up, a tool's result, the
    answer and an agent id asked for in the path: on the agents page, the timeline, both calls
    and the refusal no dialog opens, no image or javascript: link exists, and the text reads as
    it was written."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    said = PLANTED + "\x07\x1b[31m"
    script = [
        tool_reply(call("c1", "plant_tool"), call("c2", PLANTED)),
        answer("done " + PLANTED),
    ]
    model = ScriptedModel(script, model=PLANTED)
    planting = Tool("plant_tool", "plants", {"type": "object"}, _planting)
    async with (
        api.running(agent(model, tools=[planting])) as (host, _),
        serving(api.app(host)) as base,
    ):
        await page.goto(base + "/")
        row = page.locator('tr[data-agent="ops"]')
        await expect(row.locator("td").nth(4)).to_have_text(PLANTED)
        await host.post("ops", said)
        await settle(host)
        await page.wait_for_timeout(1_500)  # one live update goes through as well
        await expect(row.locator("td").nth(4)).to_have_text(PLANTED)
        await _nothing_planted_runs(page)
        await page.goto(base + "/agents/ops")
        await page.locator("details.run > summary").first.click()  # runs start collapsed
        await expect(page.locator("p.answer").get_by_text("done " + PLANTED)).to_be_visible()
        await expect(page.get_by_text(PLANTED + "\u2407\u241b[31m")).to_be_visible()
        # Each value is its own bidi island: right-to-left text cannot reorder the page's words.
        # (An assertion that retries: a live update may replace the element between a lookup
        # and a read of its style.)
        await expect(page.locator(".message .text").first).to_have_css("unicode-bidi", "isolate")
        await _nothing_planted_runs(page)
        await page.goto(base + "/agents/ops/calls/2")
        await expect(page.get_by_text("found " + PLANTED).first).to_be_visible()
        await expect(page.locator("main").get_by_text(PLANTED, exact=True).first).to_be_visible()
        await _nothing_planted_runs(page)
        await page.goto(base + "/agents/" + quote(PLANTED, safe=""))
        await expect(page.locator("#problem")).to_be_visible()
        await expect(page.locator("main")).to_contain_text(PLANTED)
        await _nothing_planted_runs(page)
    assert dialogs == []


async def _planting(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "found " + PLANTED


async def _nothing_planted_runs(page: Page) -> None:
    assert await page.locator("main img, main a[href^='javascript'], main script").count() == 0


async def test_the_pages_fit_a_narrow_screen_and_work_from_the_keyboard(
    api: Api, page: Page
) -> None:
    """At 390 px the page does not scroll sideways (the table scrolls in its box); on the
    form, Tab from the top reaches the field, then the button."""
    await page.set_viewport_size({"width": 390, "height": 800})
    async with (
        api.running(agent([answer("hi")]), token=TOKEN) as (host, _),
        serving(api.app(host, token=TOKEN)) as base,
    ):
        await page.goto(base + "/login")
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390
        await page.evaluate("document.activeElement.blur()")
        focused = []
        for _ in range(4):
            await page.keyboard.press("Tab")
            focused.append(await page.evaluate("document.activeElement.outerHTML.slice(0, 60)"))
        assert any('id="token"' in f for f in focused)
        assert any("<button" in f for f in focused)
        await page.get_by_label("API token").fill(TOKEN)
        await page.keyboard.press("Enter")
        await expect(page.locator('tr[data-agent="ops"]')).to_be_visible()
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390


@asynccontextmanager
async def _one_turn_with_a_tool_call(api: Api) -> AsyncIterator[str]:
    """A served host whose agent ``ops`` answered "check the files" after one tool call."""
    script = [tool_reply(call("c1", "alpha_tool")), answer("all done")]
    async with api.running(agent(script)) as (host, _), serving(api.app(host)) as base:
        await host.post("ops", "check the files")
        await settle(host)
        yield base


async def test_every_page_loads_without_a_console_error_or_a_failed_request(
    api: Api, page: Page
) -> None:
    """The agents page, a timeline, both calls and the folds page load with nothing in the
    console and no request answered 4xx or 5xx (the browser's icon request included)."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    # Leaving a page aborts its open event stream; any other failure is a problem.
    page.on(
        "requestfailed",
        lambda r: None if r.failure == "net::ERR_ABORTED" else problems.append("failed " + r.url),
    )
    page.on(
        "response",
        lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    async with _one_turn_with_a_tool_call(api) as base:
        for path in ("/", "/agents/ops", "/agents/ops/calls/1", "/agents/ops/calls/2"):
            await page.goto(base + path, wait_until="networkidle")
        await page.goto(base + "/agents/ops/folds", wait_until="networkidle")
        await page.goto("about:blank")
    assert problems == []


async def test_from_the_agents_page_to_an_agents_timeline(api: Api, page: Page) -> None:
    """Following an agent's link opens its timeline: the turn, the message, the run and its
    model calls, and a way back."""
    async with _one_turn_with_a_tool_call(api) as base:
        await page.goto(base + "/")
        await page.get_by_role("link", name="ops").click()
        await expect(page).to_have_url(base + "/agents/ops")
        turn = page.locator('article[data-turn="1"]')
        await expect(turn.locator(".message .text")).to_have_text("check the files")
        await expect(turn.locator("tr[data-call]")).to_have_count(2)
        await expect(turn.locator(".answer .text")).to_have_text("all done")
        await page.get_by_role("link", name="Agents").click()
        await expect(page).to_have_url(base + "/")


async def test_from_the_timeline_to_one_call_and_its_diff(api: Api, page: Page) -> None:
    """A call's link on the timeline opens the call: its receipt verified, the messages as
    sent with the ones that entered since the call before marked, and a link back to it."""
    async with _one_turn_with_a_tool_call(api) as base:
        await page.goto(base + "/agents/ops")
        await page.locator("details.run > summary").first.click()  # runs start collapsed
        await page.get_by_role("link", name="#2").click()
        await expect(page).to_have_url(base + "/agents/ops/calls/2")
        await expect(page.locator("#verdict")).to_have_text("verified")
        await expect(page.locator("#entered-count")).to_have_text("2")
        sent = page.locator("ol.messages.sent > li")
        await expect(sent).to_have_count(3)
        await expect(page.locator("ol.messages.sent > li.entered")).to_have_count(2)
        await page.get_by_role("link", name="Previous call").click()
        await expect(page).to_have_url(base + "/agents/ops/calls/1")
        await expect(page.get_by_text("This is the agent's first call.")).to_be_visible()


async def test_a_fold_is_found_by_a_prefix_and_shows_its_originals(api: Api, page: Page) -> None:
    """From the timeline to the folds, then the find form with eight digits of a summary's
    fingerprint opens that fold with its summary and its original messages."""
    async with (
        api.running(desk("keep", "conversation")) as (host, _),
        serving(api.app(host)) as base,
    ):
        [span, *_] = await ask_until_folded(host)
        await page.goto(base + "/agents/keep")
        await page.get_by_role("link", name="Folds").click()
        await expect(page.locator("tr[data-fold]").first).to_be_visible()
        await page.get_by_label("Summary fingerprint").fill(span.summary_fingerprint[:8])
        await page.get_by_role("button", name="Find").click()
        await expect(page).to_have_url(f"{base}/agents/keep/folds/{span.summary_fingerprint[:8]}")
        originals = page.locator("ol.messages.originals > li")
        await expect(originals).to_have_count(span.message_count)
        await expect(page.locator("ol.messages.summary > li")).to_have_count(1)


async def test_a_question_is_answered_in_the_browser(api: Api, page: Page) -> None:
    """On a paused turn's timeline the labelled field and the Answer button close the
    question; the page comes back with it answered and the turn answered."""

    async def ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        ctx.ask_person("which host?")

    asking = agent(
        [tool_reply(call("c1", "beta_tool")), answer("restarted it")],
        tools=[Tool("beta_tool", "asks", {"type": "object"}, ask)],
    )
    async with api.running(asking) as (host, _), serving(api.app(host)) as base:
        await host.post("ops", "restart the web server")
        await settle(host)
        await page.goto(base + "/agents/ops")
        await page.get_by_label("Your answer").fill("web-1")
        await page.get_by_role("button", name="Answer").click()
        await expect(page).to_have_url(base + "/agents/ops#questions-title")
        await settle(host)
        await page.reload()
        question = page.locator("li.question").first
        await expect(question.locator(".status")).to_have_text("answered")
        await expect(page.locator(".answer .text").first).to_have_text("restarted it")


async def test_the_timeline_updates_live_over_the_event_stream(api: Api, page: Page) -> None:
    """With the timeline open, a turn posted while it is shown appears with its run and, when
    it pauses on a question, the question's form, without a reload: the page listens on the
    agent's event stream (``/agents/ID/live``) and fetches nothing on a timer."""

    async def ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        ctx.ask_person("which host?")

    asking = agent(
        [answer("first"), tool_reply(call("c1", "beta_tool")), answer("done")],
        tools=[Tool("beta_tool", "asks", {"type": "object"}, ask)],
    )
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    async with api.running(asking) as (host, _), serving(api.app(host)) as base:
        await host.post("ops", "one")
        await settle(host)
        await page.goto(base + "/agents/ops")
        await expect(page.locator("article.turn")).to_have_count(1)
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        loaded = await page.evaluate("performance.timeOrigin")
        fetched.clear()
        await page.wait_for_timeout(1_500)
        assert fetched == []  # nothing polled while nothing happened
        await host.post("ops", "two")
        await settle(host)
        turn = page.locator('article[data-turn="2"]')
        await expect(turn.locator(".message .text")).to_have_text("two")
        await expect(turn.locator("tr[data-call]")).to_have_count(1)
        await expect(page.get_by_label("Your answer")).to_be_visible()
        assert await page.evaluate("performance.timeOrigin") == loaded  # no reload
        assert set(fetched) == {base + "/agents/ops"}
        await page.goto("about:blank")  # closes the stream before the server stops


async def test_a_live_update_keeps_the_keyboards_place(api: Api, page: Page) -> None:
    """A call link focused from the keyboard is focused again after a live update replaced the
    turns (docs/inspector.md#timeline), so Enter still opens it."""
    definition = agent([answer("first"), answer("second")])
    async with api.running(definition) as (host, _), serving(api.app(host)) as base:
        await host.post("ops", "one")
        await settle(host)
        await page.goto(base + "/agents/ops")
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        await page.locator('article[data-turn="1"] details.run > summary').click()
        link = page.locator('article[data-turn="1"] a[href$="/calls/1"]')
        await link.focus()
        await host.post("ops", "two")
        await settle(host)
        await expect(page.locator('article[data-turn="2"]')).to_have_count(1)
        focused = await page.evaluate("document.activeElement.getAttribute('href')")
        assert focused is not None and focused.endswith("/calls/1")
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(re.compile(r"/agents/ops/calls/1$"))
        await page.goto("about:blank")


async def test_a_live_turn_that_pushes_one_onto_an_older_page_brings_its_link(
    api: Api, page: Page
) -> None:
    """With a full first page of 20 turns open, the 21st turn arriving live brings the
    "Older turns" link with it, and the link reaches the turn pushed off the page."""
    async with (
        api.running(agent([answer(f"a{i}") for i in range(21)])) as (host, _),
        serving(api.app(host)) as base,
    ):
        for i in range(20):
            await host.post("ops", f"m{i}")
        await settle(host)
        await page.goto(base + "/agents/ops")
        await expect(page.locator("article.turn")).to_have_count(20)
        await expect(page.locator("#live-state")).to_have_text("Updated live.")
        older = page.get_by_role("link", name="Older turns")
        await expect(older).to_have_count(0)
        await host.post("ops", "m20")
        await settle(host)
        await expect(page.locator('article[data-turn="21"]')).to_have_count(1)
        await older.click()
        await expect(page.locator('article[data-turn="1"]')).to_have_count(1)


async def test_signed_out_elsewhere_the_live_pages_keep_what_they_show_and_say_so(
    api: Api, page: Page
) -> None:
    """Signed out in another tab, the open agents page keeps its rows and the open timeline
    its turns, and each says updates stopped, instead of taking the sign-in page for fresh
    content and calling it live."""
    async with (
        api.running(agent([answer("hi")]), token=TOKEN) as (host, _),
        serving(api.app(host, token=TOKEN)) as base,
    ):
        await host.post("ops", "one")
        await settle(host)
        await page.goto(base + "/login")
        await page.get_by_label("API token").fill(TOKEN)
        await page.keyboard.press("Enter")
        await expect(page.locator("#agent-rows tr")).to_have_count(1)
        timeline = await page.context.new_page()
        await timeline.goto(base + "/agents/ops")
        await expect(timeline.locator("#live-state")).to_have_text("Updated live.")
        other = await page.context.new_page()
        await other.goto(base + "/")
        await other.get_by_role("button", name="Sign out").click()
        await expect(other).to_have_url(base + "/login")
        await expect(page.locator("#live-state")).to_contain_text("signed out")
        await expect(page.locator("#agent-rows tr")).to_have_count(1)
        await host.post("ops", "two")
        await settle(host)
        await expect(timeline.locator("#live-state")).to_contain_text("signed out")
        await expect(timeline.locator("article.turn")).to_have_count(1)
        for opened in (timeline, other):
            await opened.close()
        await page.goto("about:blank")


_FOCUSABLE = "a[href], button, summary, input, textarea, select"


async def test_timeline_call_and_fold_pages_fit_390_px_and_work_from_the_keyboard(
    api: Api, page: Page
) -> None:
    """At 390 px none of the timeline, a call, the folds or a fold scrolls sideways and every
    control on them takes focus; from the timeline, Tab reaches a call's link and Enter opens
    it, and on the call Tab reaches the link back to the call before."""
    await page.set_viewport_size({"width": 390, "height": 800})
    async with (
        api.running(desk("keep", "conversation")) as (host, _),
        serving(api.app(host)) as base,
    ):
        [span, *_] = await ask_until_folded(host)
        fold = f"/agents/keep/folds/{span.summary_fingerprint[:12]}"
        for path in ("/agents/keep", "/agents/keep/calls/2", "/agents/keep/folds", fold):
            await page.goto(base + path)
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390, path
            unreachable = await page.evaluate(
                f"Array.from(document.querySelectorAll({_FOCUSABLE!r}))"
                ".filter((e) => e.tabIndex < 0 || e.disabled).length"
            )
            assert unreachable == 0, path
        await page.goto(base + "/agents/keep")
        await _tab_to(page, "initial")  # a run's summary line: Enter opens it
        await page.keyboard.press("Enter")
        await _tab_to(page, "/calls/")
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(re.compile(r"/agents/keep/calls/\d+$"))
        await _tab_to(page, "Previous call")
        await page.goto("about:blank")


async def _tab_to(page: Page, wanted: str, *, presses: int = 200) -> None:
    """Press Tab until the focused element's link or text holds ``wanted``."""
    for _ in range(presses):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            "(document.activeElement.getAttribute('href') || '') + ' ' +"
            " document.activeElement.textContent"
        )
        if wanted in focused:
            return
    pytest.fail(f"Tab never reached {wanted!r}")
