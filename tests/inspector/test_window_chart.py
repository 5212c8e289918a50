"""The window chart on each agent page (docs/inspector.md#window-chart): inline SVG drawn on
the server whose points are the calls' served views and usage, folds and drops marked at the
calls they shaped, cost named only for a priced agent, hostile text inert; over plain HTTP and
in chromium."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, expect

from afp_runtime.api.inspector._render import ENVIRONMENT
from afp_runtime.api.inspector.chart import chart_layout
from afp_runtime.app import StoredRun, WindowPoint, WindowSeries, agent_call, epoch_list
from afp_runtime.cost import Price
from afp_runtime.demo import QUESTIONS
from afp_runtime.host import Host
from afp_runtime.messages import Usage
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import sliding_window
from tests.api.conftest import Api, agent, serving, settle
from tests.app.test_window_series import counted, desk
from tests.inspector.conftest import ask_until_folded

SVG = "{http://www.w3.org/2000/svg}"
PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)">\'"&\x07' + "x" * 300


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


def chart_of(page: str) -> ET.Element:
    """The page's chart, parsed as XML: it fails unless the SVG is well-formed."""
    found = re.search(r"<svg .*?</svg>", page, re.S)
    assert found is not None, "no inline svg on the page"
    return ET.fromstring(found.group(0))


def points_of(svg: ET.Element) -> list[ET.Element]:
    """The chart's points by call number (the page holds them newest first)."""
    found = [a for a in svg.iter(f"{SVG}a") if "point" in a.get("class", "").split()]
    numbers = [int(a.get("data-call", "")) for a in found]
    assert numbers == sorted(numbers, reverse=True), "points not newest first"
    return found[::-1]


def title_of(element: ET.Element) -> str:
    title = element.find(f"{SVG}title")
    assert title is not None and title.text is not None
    return title.text


async def test_the_points_are_the_calls_served_views_and_usage(api: Api) -> None:
    """A priced folding desk: one point per call, 1..N, each linking to its call page, its
    characters those of the call's served view, its tokens the call's reported input, its
    title naming both and the cost; each fold marked at its call and linking to the fold."""
    priced = desk("keep", pricing={"demo-scripted": Price(input=2e-6, output=8e-6)})
    async with api.running(priced) as (host, client):
        spans = await ask_until_folded(host)
        svg = chart_of((await client.get("/agents/keep")).text)
        points = points_of(svg)
        calls = (await host.reader.conversation_state("keep")).model_calls  # type: ignore[union-attr]
        assert [int(p.get("data-call", "")) for p in points] == list(range(1, calls + 1))
        for point in points:
            number = int(point.get("data-call", ""))
            assert point.get("href") == f"/agents/keep/calls/{number}"
            found = await agent_call(host.reader, "keep", number)
            assert found is not None
            assert int(point.get("data-chars", "")) == counted(found.view)
            listed, _ = await epoch_list(StoredRun(host.reader, found.run.run_id))
            usage = next(e.usage for e in listed if e.epoch == found.epoch)
            assert usage is not None and int(point.get("data-tokens", "")) == usage["input"]
            title = title_of(point)
            assert title.startswith(f"call {number} · {counted(found.view):,} chars sent · ")
            assert f"{usage['input']:,} tokens in" in title and "· cost " in title
    folds = [a for a in svg.iter(f"{SVG}a") if a.get("class") == "fold-mark"]
    assert spans and len(folds) == len(spans)
    hrefs = {a.get("href") for a in folds}
    assert hrefs == {f"/agents/keep/folds/{s.summary_fingerprint[:12]}" for s in spans}


async def test_an_unpriced_agent_names_no_cost(api: Api) -> None:
    """The same desk without pricing: no point's title speaks of cost, the legend says so."""
    async with api.running(desk("keep")) as (host, client):
        await host.post("keep", QUESTIONS[0])
        await settle(host, "keep")
        page = (await client.get("/agents/keep")).text
    points = points_of(chart_of(page))
    assert points and not any("cost" in title_of(p) for p in points)
    assert "No pricing: no cost shown." in page


def _sliding(turns: int) -> Any:
    script = []
    for turn in range(1, turns + 1):
        used = Usage(input=100 * turn, output=7)
        script += [tool_reply(call(f"c{turn}", "alpha_tool"), usage=used), answer(f"done {turn}")]
    return agent(script, window=sliding_window(keep_recent_turns=1))


async def _ask(host: Host, turns: int) -> None:
    for turn in range(1, turns + 1):
        await host.post("ops", f"question {turn}")
        await settle(host)


async def test_drops_are_marked_at_the_calls_after_the_window_dropped(api: Api) -> None:
    """A sliding window keeping one turn: the first call of turns 2 to 4 (calls 3, 5, 7) is
    marked with the messages dropped before it; a call without a reply's usage has no token
    mark and says so."""
    async with api.running(_sliding(4)) as (host, client):
        await _ask(host, 4)
        svg = chart_of((await client.get("/agents/ops")).text)
    drops = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "drop-mark"]
    assert [int(g.get("data-call", "")) for g in drops] == [3, 5, 7]
    assert all(re.fullmatch(r"\d+ messages dropped before call \d", title_of(g)) for g in drops)
    points = points_of(svg)
    assert [p.get("data-tokens") for p in points] == [
        "100",
        None,
        "200",
        None,
        "300",
        None,
        "400",
        None,
    ]
    assert "no tokens reported" in title_of(points[1])
    assert "after 4 messages dropped" in title_of(points[2])


def _rendered(series: WindowSeries, agent_id: str = "ops") -> str:
    return ENVIRONMENT.get_template("_window_chart.html").render(
        agent_id=agent_id, window_chart=chart_layout(series)
    )


def _hostile_series() -> WindowSeries:
    point = WindowPoint(
        agent_call=1,
        run_id="run-1",
        epoch=1,
        outcome="replied",
        chars_sent=10,
        input_tokens=5,
        output_tokens=1,
        cost_unknown=PLANTED,
        fold=PLANTED,
    )
    return WindowSeries(agent_id="ops", calls=1, limit=200, points=(point,))


def test_hostile_text_from_a_damaged_row_reads_verbatim_and_stays_inert() -> None:
    """A cost reason and a fold fingerprint holding markup, quotes and a control character
    (as a damaged row could): the SVG stays well-formed, holds no script or image, and the
    titles read the text as written (the control character as its picture)."""
    svg = chart_of(_rendered(_hostile_series()))
    assert not [e for e in svg.iter() if e.tag in (f"{SVG}script", f"{SVG}img", "script", "img")]
    shown = PLANTED.replace("\x07", "\u2407")
    assert f"cost unknown ({shown})" in title_of(points_of(svg)[0])
    [fold] = [a for a in svg.iter(f"{SVG}a") if a.get("class") == "fold-mark"]
    assert title_of(fold) == f"fold before call 1: summary {shown[:12]}"
    assert fold.get("href", "").startswith("/agents/ops/folds/")


async def test_hostile_text_in_the_chart_runs_nothing_in_chromium(page: Page) -> None:
    """The hostile chart parsed by chromium as part of an HTML page: no dialog opens, no
    script or image exists, and the point's title reads the planted text as written."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    await page.set_content(f"<!doctype html><main>{_rendered(_hostile_series())}</main>")
    await expect(page.locator("#window-chart svg")).to_be_visible()
    assert await page.locator("main img, main script").count() == 0
    title = await page.locator("#window-chart a.point > title").text_content()
    assert title is not None and f"cost unknown ({PLANTED.replace(chr(7), chr(0x2407))})" in title
    assert dialogs == []


def test_a_long_lived_agent_says_it_shows_its_newest_calls() -> None:
    """100 points of an agent with 10,000 calls: the caption says which calls and that they
    are the newest; the SVG holds 100 points, its call labels at most ten or so."""
    points = tuple(
        WindowPoint(
            agent_call=n, run_id="run-1", epoch=n, outcome="replied", chars_sent=n, input_tokens=n
        )
        for n in range(9_901, 10_001)
    )
    page = _rendered(WindowSeries(agent_id="ops", calls=10_000, limit=100, points=points))
    assert "Calls 9901 to 10000 of 10000: the newest 100 are shown" in page
    svg = chart_of(page)
    assert len(points_of(svg)) == 100
    labels = [t for g in svg.iter(f"{SVG}g") if "calls-axis" in g.get("class", "") for t in g]
    assert len(labels) <= 12


async def test_the_chart_is_drawn_inline_and_its_marks_lead_to_calls_and_folds(
    api: Api, page: Page
) -> None:
    """In chromium the agent page shows the chart's svg with no request for it; a point opens
    its call's page and a fold mark the fold."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    async with (
        api.running(desk("keep")) as (host, _),
        serving(api.app(host)) as base,
    ):
        [span, *_] = await ask_until_folded(host)
        await page.goto(base + "/agents/keep")
        chart = page.locator("#window-chart svg")
        await expect(chart).to_be_visible()
        box = await chart.bounding_box()
        assert box is not None and box["height"] > 100
        assert not [url for url in requests if url.endswith(".svg") and "favicon" not in url]
        await page.locator('#window-chart a.point[data-call="2"]').click()
        await expect(page).to_have_url(base + "/agents/keep/calls/2")
        await page.go_back()
        await page.locator("#window-chart a.fold-mark").first.click()
        await expect(page).to_have_url(f"{base}/agents/keep/folds/{span.summary_fingerprint[:12]}")
