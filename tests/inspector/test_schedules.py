"""The agent page's schedules in a real browser (docs/inspector.md#schedules): each one's form
in words, zone, due instants and source, its hostile text inert and verbatim, the pause, resume
and remove buttons acting through the app's use cases, a delivered message marked as the
schedule's in the timeline, and the form that sets one (created or replaced, a refusal named
with the input kept, refused from another site's page)."""

from __future__ import annotations

import html

import anyio.to_thread
import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, Route, expect

import afp_runtime as afp
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer
from afp_runtime.time import TimeConfig
from tests.api.conftest import Api, agent, serving, settle, until
from tests.api.test_principals import People
from tests.host.test_schedules import advance_to, scheduled

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


async def _fill_set_form(page: Page, **values: str) -> None:
    """Open the agent page's set form and fill it (``form`` and ``catchUp`` are chosen)."""
    details = page.locator("details.schedule-set")
    if await details.count() and await details.get_attribute("open") is None:
        await page.locator("#schedule-set-title").click()
    form = page.locator("#schedule-set")
    for label, key in (("Name", "name"), ("Text it delivers", "text"), ("When", "value")):
        if key in values:
            await form.get_by_label(label, exact=True).fill(values[key])
    if "zone" in values:
        await form.get_by_label("Zone", exact=True).fill(values["zone"])
    if "form" in values:
        await form.get_by_label("Form", exact=True).select_option(values["form"])
    if "catchUp" in values:
        await form.get_by_label("Catch-up", exact=True).select_option(values["catchUp"])


async def test_set_form_creates_then_replaces_a_schedule(api: Api, page: Page) -> None:
    """The set form on the agent page creates a schedule (source ``inspector``, the zone field
    prefilled with the agent's own zone) and comes back to the page, where it is listed with
    its next due instant; set again under the same name it replaces it."""
    time = TimeConfig(zone="Europe/Berlin")
    async with (
        api.running(agent([answer("ok")], time=time)) as (host, _),
        serving(api.app(host)) as base,
    ):
        await settle(host)
        await page.goto(base + "/agents/ops")
        await _fill_set_form(page, name="morning", text="Check the orders", catchUp="all")
        zone = page.locator("#schedule-set").get_by_label("Zone", exact=True)
        await expect(zone).to_have_value("Europe/Berlin")
        await _fill_set_form(page, form="every", value="weekday at 09:00")
        await page.get_by_role("button", name="Set schedule").click()
        await expect(page).to_have_url(base + "/agents/ops#schedules-title")
        row = page.locator('tr[data-schedule="morning"]')
        cells = row.locator("td")
        await expect(cells.nth(0)).to_have_text("every weekday at 09:00")
        await expect(cells.nth(1)).to_have_text("Europe/Berlin")
        [view] = await afp.app.list_schedules(host.reader, "ops")
        assert view.next_due_ms is not None
        due = await anyio.to_thread.run_sync(afp.app.due_text, view.next_due_ms, "Europe/Berlin")
        await expect(cells.nth(2)).to_have_text(due)
        await expect(cells.nth(4)).to_have_text("inspector")
        await expect(row.locator(".text")).to_have_text("Check the orders")
        assert view.source == "inspector" and view.schedule is not None
        assert view.schedule.catch_up == "all"
        await _fill_set_form(
            page, name="morning", text="Look again", form="cron", value="0 7 * * *"
        )
        await page.get_by_role("button", name="Set schedule").click()
        await expect(cells.nth(0)).to_have_text("cron 0 7 * * *")
        await expect(row.locator(".text")).to_have_text("Look again")
        views = await afp.app.list_schedules(host.reader, "ops")
    assert [(v.name, v.schedule.cron if v.schedule else None) for v in views] == [
        ("morning", "0 7 * * *")
    ]


async def test_set_form_names_a_refused_value_and_keeps_the_input(api: Api, page: Page) -> None:
    """A bad ``every`` is refused (422) on a page naming the field and the reason, the form
    shown again holding what the person typed; nothing is stored."""
    async with api.running(agent([answer("ok")])) as (host, _), serving(api.app(host)) as base:
        await settle(host)
        await page.goto(base + "/agents/ops")
        zone = page.locator("#schedule-set").get_by_label("Zone", exact=True)
        await expect(zone).to_have_value("UTC")
        await _fill_set_form(
            page, name="tick", text="hello", form="every", value="fortnightly-ish", zone="UTC"
        )
        async with page.expect_response(base + "/agents/ops/schedules") as answered:
            await page.get_by_role("button", name="Set schedule").click()
        assert (await answered.value).status == 422
        refusal = page.locator("#schedule-refusal")
        await expect(refusal).to_have_attribute("data-field", "every")
        await expect(refusal).to_contain_text("every refused: every: ")
        await expect(refusal).to_contain_text("fortnightly-ish")
        await expect(refusal).to_contain_text("expected 'N minutes'")
        form = page.locator("#schedule-set")
        await expect(form.get_by_label("Name", exact=True)).to_have_value("tick")
        await expect(form.get_by_label("Text it delivers", exact=True)).to_have_value("hello")
        await expect(form.get_by_label("When", exact=True)).to_have_value("fortnightly-ish")
        await expect(form.get_by_label("When", exact=True)).to_have_attribute(
            "aria-invalid", "true"
        )
        await expect(form.get_by_label("Form", exact=True)).to_have_value("every")
        # Corrected in place, the same form sets it.
        await form.get_by_label("When", exact=True).fill("2 hours")
        await page.get_by_role("button", name="Set schedule").click()
        await expect(page.locator('tr[data-schedule="tick"] td').nth(0)).to_have_text(
            "every 2 hours"
        )
        views = await afp.app.list_schedules(host.reader, "ops")
    assert [v.name for v in views] == ["tick"]


async def test_set_form_shows_hostile_text_verbatim_and_inert(api: Api, page: Page) -> None:
    """Markup, a ``javascript:`` URL and a control character: as a name they are refused and
    shown back as written (the control as its picture) with no element made of them; as the
    text they are stored exactly and listed as text. No dialog, image or script link."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    async with api.running(agent([answer("ok")])) as (host, _), serving(api.app(host)) as base:
        await settle(host)
        await page.goto(base + "/agents/ops")
        await _fill_set_form(page, name=PLANTED + "\x07", text=PLANTED + "\x07", value="2 hours")
        await page.get_by_role("button", name="Set schedule").click()
        refusal = page.locator("#schedule-refusal")
        await expect(refusal).to_have_attribute("data-field", "name")
        await expect(refusal).to_contain_text("<script>alert(1)</script>")
        form = page.locator("#schedule-set")
        await expect(form.get_by_label("Name", exact=True)).to_have_value(PLANTED + "\u2407")
        text = form.get_by_label("Text it delivers", exact=True)
        await expect(text).to_have_value(PLANTED + "\u2407")
        assert await page.locator("main img, main script").count() == 0
        assert await page.locator('main a[href^="javascript:"]').count() == 0
        await form.get_by_label("Name", exact=True).fill("planted")
        await text.fill(PLANTED + "\x07")
        await page.get_by_role("button", name="Set schedule").click()
        row = page.locator('tr[data-schedule="planted"]')
        await expect(row.locator(".text")).to_have_text(PLANTED + "\u2407")
        assert await page.locator("main img, main script").count() == 0
        assert await page.locator('main a[href^="javascript:"]').count() == 0
        [view] = await afp.app.list_schedules(host.reader, "ops")
    assert view.schedule is not None and view.schedule.text == PLANTED + "\x07"
    assert dialogs == []


async def test_set_form_refuses_another_sites_post(api: Api, page: Page) -> None:
    """Another site's page auto-submitting a filled set form to the inspector is refused
    (403 ``cross-origin``) and sets nothing; the same form from the inspector's page works."""
    async with api.running(agent([answer("ok")])) as (host, _), serving(api.app(host)) as base:
        await settle(host)
        target = f"{base}/agents/ops/schedules"
        fields = {"name": "evil", "text": "wake up", "form": "every", "value": "5 minutes"}
        inputs = "".join(
            f'<input type="hidden" name="{key}" value="{html.escape(value)}">'
            for key, value in {**fields, "zone": "UTC", "catchUp": "latest"}.items()
        )
        attack = (
            f'<!doctype html><title>prize</title><form method="post" action="{target}">'
            f"{inputs}</form><script>document.forms[0].submit()</script>"
        )

        async def fulfil(route: Route) -> None:
            await route.fulfill(status=200, content_type="text/html", body=attack)

        await page.route("http://elsewhere.test/", fulfil)
        async with page.expect_response(target) as answered:
            await page.goto("http://elsewhere.test/")
        status = (await answered.value).status
        stored = await afp.app.list_schedules(host.reader, "ops")
        await page.unroute("http://elsewhere.test/")
        await page.goto(base + "/agents/ops")
        await _fill_set_form(page, **fields)
        await page.get_by_role("button", name="Set schedule").click()
        await expect(page.locator('tr[data-schedule="evil"]')).to_have_count(1)
    assert status == 403
    assert stored == []


async def test_set_form_wakes_the_hosts_schedule_runner(api: Api, page: Page) -> None:
    """With a day's poll interval and a lease renewed every few days, only the form's wake
    makes the runner see the new schedule: its first due instant, two hours on, is delivered."""
    options = {"poll_interval_s": 86_400.0, "lease_ttl_s": 864_000.0}
    script = ScriptedModel([answer("ok"), answer("pinged")], model="mock")
    async with (
        api.running(agent(script), host_options=options) as (host, _),
        serving(api.app(host)) as base,
    ):
        await settle(host)
        now = api.clock.now_ms()
        await page.goto(base + "/agents/ops")
        await _fill_set_form(page, name="soon", text="Ping", form="every", value="2 hours")
        await page.get_by_role("button", name="Set schedule").click()
        await expect(page.locator('tr[data-schedule="soon"]')).to_have_count(1)
        api.clock.advance(7_200)

        async def arrived() -> bool:
            return len(await scheduled(host.reader, "soon")) == 1

        await until(arrived)
        rows = await scheduled(host.reader, "soon")
    assert rows[0].idempotency_key == f"schedule:soon@{now + 7_200_000}"


async def test_set_form_with_tokens_is_the_owners(api: Api) -> None:
    """Signed in with tokens, bob's set form on alice's conversation is refused (403, a page
    saying why, nothing stored); alice's sets it (303 back to the page, source ``inspector``)."""
    people = await anyio.to_thread.run_sync(People, api.path.with_name("afp.db.tokens"))
    fields = {"name": "tick", "text": "hello", "form": "every", "value": "2 hours"}
    async with api.running(agent([answer("ok")]), principals=people.principals) as (host, client):
        posted = await client.post(
            "/v1/agents/ops/inbox", json={"text": "hi"}, headers=people.auth("alice")
        )
        assert posted.status_code == 202, posted.text
        await settle(host)
        await client.post("/login", data={"token": people.tokens["bob"]})
        refused = await client.post("/agents/ops/schedules", data=fields)
        stored = await afp.app.list_schedules(host.reader, "ops")
        await client.post("/login", data={"token": people.tokens["alice"]})
        done = await client.post("/agents/ops/schedules", data=fields)
        views = await afp.app.list_schedules(host.reader, "ops")
    assert refused.status_code == 403 and "belongs to someone else" in refused.text
    assert 'value="tick"' in refused.text and stored == []
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/agents/ops#schedules-title"
    assert [(v.name, v.source) for v in views] == [("tick", "inspector")]
