"""The folds page's search box (docs/inspector.md#folds, docs/recall.md#for-people): what left
the window found by its words, shown verbatim and inert, linked to its fold; a refused query
says why beside the box, with what was typed kept. Through plain HTTP and in chromium."""

from __future__ import annotations

import re

import pytest
from blockbuster import BlockBuster
from markupsafe import escape
from playwright.async_api import Page, expect

from tests.api.conftest import Api, serving
from tests.api.test_recall import HOSTILE, desks

# The hostile question as a page shows it: ESC as its picture, the bidi override by its code.
SHOWN = HOSTILE.replace("\x1b", "\u241b").replace("\u202e", "\u27e8U+202E\u27e9")


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


async def test_the_search_over_http(api: Api) -> None:
    """``?q=`` lists the matching originals escaped (never markup) with their fold's link and
    the query kept in the box; no match says so; a refused query is 400 with its reason beside
    the box and the typed text kept; without ``q`` the page has the empty box and no results."""
    async with desks(api) as (_, client):
        found = await client.get("/agents/keep/folds", params={"q": "zanzibar"})
        nothing = await client.get("/agents/keep/folds", params={"q": "walrus"})
        refused = await client.get("/agents/keep/folds", params={"q": '"*"'})
        bad_time = await client.get("/agents/keep/folds", params={"q": "order", "since": "May"})
        plain = await client.get("/agents/keep/folds")
        dropped = await client.get("/agents/slide/folds", params={"q": "zanzibar"})
        fold = (await client.get("/v1/agents/keep/folded")).json()["items"]
    assert found.status_code == 200
    page = found.text
    assert str(escape(SHOWN)) in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert 'value="zanzibar"' in page
    hit_links = re.findall(r'href="/agents/keep/folds/([0-9a-f]{64})"', page)
    assert hit_links and set(hit_links) <= {f["summaryFingerprint"] for f in fold}
    assert nothing.status_code == 200 and "Nothing that left the window matches" in nothing.text
    assert refused.status_code == 400
    assert 'role="alert"' in refused.text and "no word to search for" in refused.text
    assert 'value="&#34;*&#34;"' in refused.text and 'aria-invalid="true"' in refused.text
    assert bad_time.status_code == 400 and "since must be" in bad_time.text
    assert 'value="May"' in bad_time.text and 'value="order"' in bad_time.text
    assert plain.status_code == 200 and "recall-hit" not in plain.text
    assert 'id="recall-q"' in plain.text
    assert "dropped by run" in dropped.text and str(escape(SHOWN)) in dropped.text


async def test_the_search_in_a_browser(api: Api, page: Page) -> None:
    """Typing words and pressing Search lists the original verbatim (no dialog opens, no
    planted image or script exists); its link opens the fold with that original; a refused
    query shows why beside the box, which keeps what was typed."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    async with desks(api) as (host, _), serving(api.app(host)) as base:
        await page.goto(base + "/agents/keep/folds")
        await page.get_by_label("Words").fill("zanzibar 7781")
        await page.get_by_role("button", name="Search").click()
        hit = page.locator(".recall-hit").first
        await expect(hit.locator("pre.text")).to_have_text(SHOWN)
        await expect(page.get_by_label("Words")).to_have_value("zanzibar 7781")
        assert await page.locator("main img, main script, main a[href^='javascript']").count() == 0
        await hit.locator("a.source").click()
        await expect(page).to_have_url(re.compile(r"/agents/keep/folds/[0-9a-f]{64}$"))
        await expect(page.locator("h1")).to_contain_text("Fold")
        await expect(page.locator(".originals").get_by_text(SHOWN)).to_be_visible()
        await page.goto(base + "/agents/keep/folds")
        await page.get_by_label("Words").fill('"*"')
        async with page.expect_response(lambda r: "q=" in r.url) as answered:
            await page.get_by_role("button", name="Search").click()
        assert (await answered.value).status == 400
        await expect(page.locator("#recall-problem")).to_contain_text("no word to search for")
        await expect(page.get_by_label("Words")).to_have_value('"*"')
        assert await page.locator(".recall-hit").count() == 0
    assert dialogs == []
