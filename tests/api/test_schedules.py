"""An agent's schedules over HTTP (docs/api.md#schedules): set, list, read, pause, resume and
remove through the real app on a running host; a wrong field is 422 naming it, an unknown agent
or schedule 404 naming what exists; a schedule set through the API wakes the host's runner, and
its message reaches the inbox from ``schedule:NAME`` with its ``@`` key shown as stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from afp_runtime.models import ScriptedModel
from afp_runtime.store import open_store
from afp_runtime.testing import answer
from tests.host.test_schedules import advance_to, scheduled
from tests.store._postgres import FreshDatabase

from ..test_cli import afp as cli_afp
from .conftest import Api, agent, error_of, settle, until, watched_host
from .test_principals import People

ONE = "/v1/agents/ops/schedules/morning"
MORNING = {"text": "Check the tickets", "every": "weekday at 09:00", "zone": "Europe/Berlin"}


def replies(n: int = 20) -> ScriptedModel:
    return ScriptedModel([answer(f"done {i}") for i in range(n)], model="mock")


async def test_set_replace_list_pause_resume_remove(api: Api) -> None:
    """PUT creates (201) then replaces (200) with source ``api``; the list and one read show
    it; pause drops its next due instant and resume brings it back; DELETE is 204 and then the
    schedule is 404 naming the agent's schedules."""
    async with api.running(agent(replies())) as (host, client):
        await settle(host)
        created = await client.put(ONE, json=MORNING)
        assert created.status_code == 201, created.text
        view = created.json()
        assert view["source"] == "api" and view["schedule"] == {"name": "morning", **MORNING}
        assert isinstance(view["nextDueMs"], int)
        replaced = await client.put(ONE, json={**MORNING, "name": "morning", "catchUp": "all"})
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["schedule"]["catchUp"] == "all"
        listed = (await client.get("/v1/agents/ops/schedules")).json()
        assert listed == {"items": [replaced.json()], "next": None}
        assert (await client.get(ONE)).json() == replaced.json()
        paused = await client.post(ONE + "/pause")
        assert paused.status_code == 200 and paused.json()["paused"] is True
        assert "nextDueMs" not in paused.json()
        resumed = (await client.post(ONE + "/resume")).json()
        assert resumed["paused"] is False and isinstance(resumed["nextDueMs"], int)
        removed = await client.delete(ONE)
        assert removed.status_code == 204 and removed.content == b""
        await client.put("/v1/agents/ops/schedules/other", json=MORNING)
        gone = await client.get(ONE)
        assert gone.status_code == 404
        error = error_of(gone)
        assert error["code"] == "schedule-not-found" and "'other'" in error["message"]
        for missing in (await client.delete(ONE), await client.post(ONE + "/pause")):
            assert error_of(missing)["code"] == "schedule-not-found"
        nobody = await client.get("/v1/agents/nobody/schedules")
        assert error_of(nobody)["code"] == "agent-not-found"
        assert error_of(nobody)["message"].endswith("the agents are: ops")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**MORNING, "every": "now and then"}, "every"),
        ({**MORNING, "zone": "Mars/Base"}, "zone"),
        ({**MORNING, "catchUp": "some"}, "catchUp"),
        ({"every": "2 hours"}, "text"),
        ({**MORNING, "cron": "0 9 * * *"}, "cron"),
        ({**MORNING, "name": "evening"}, "name"),
        ({**MORNING, "colour": "red"}, "colour"),
    ],
)
async def test_a_wrong_field_is_422_naming_it(api: Api, body: dict[str, Any], field: str) -> None:
    """Each refusal names the field, and nothing is stored."""
    async with api.running(agent(replies())) as (host, client):
        await settle(host)
        refused = await client.put(ONE, json=body)
        listed = (await client.get("/v1/agents/ops/schedules")).json()
    assert refused.status_code == 422, refused.text
    error = error_of(refused)
    assert error["code"] == "invalid-body"
    assert error["field"] == field or field in error["message"], error
    assert listed["items"] == []


async def test_a_schedule_set_through_the_api_is_delivered_from_schedule_name(api: Api) -> None:
    """Set through the API on a running host (its runner woken), the schedule is delivered at
    its due instant: the inbox shows the message from ``schedule:soon`` with the key
    ``schedule:soon@DUE`` a client could not post itself."""
    async with api.running(agent(replies())) as (host, client):
        await settle(host)
        now = api.clock.now_ms()
        put = await client.put(
            "/v1/agents/ops/schedules/soon", json={"text": "Ping", "every": "2 hours"}
        )
        assert put.status_code == 201, put.text
        await advance_to(api, host, now + 7_200_000, 1, name="soon")
        inbox = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        rows = await scheduled(host.reader, "soon")
        copied = await client.post(
            "/v1/agents/ops/inbox",
            json={"text": "Ping", "idempotencyKey": f"schedule:soon@{now + 7_200_000}"},
        )
    (message,) = [m for m in inbox if m["from"] == "schedule:soon"]
    assert message["idempotencyKey"] == f"schedule:soon@{now + 7_200_000}"
    assert message["text"] == "Ping"
    assert len(rows) == 1
    assert error_of(copied)["field"] == "idempotencyKey"


async def test_afp_schedules_json_is_the_api_body(api: Api) -> None:
    """``afp schedules ops --json`` prints the API's list, and ``… pause NAME --json`` the
    API's view of the paused schedule: one use case, two doors."""
    async with api.running(agent(replies())) as (host, client):
        await settle(host)
        await client.put(ONE, json=MORNING)
        await client.put(
            "/v1/agents/ops/schedules/once", json={"text": "x", "at": "2031-01-01T09:00"}
        )
        listed = (await client.get("/v1/agents/ops/schedules")).json()
    db = str(api.path)
    cli = await anyio.to_thread.run_sync(cli_afp, "schedules", "ops", "--json", "--db", db)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == listed
    assert [item["name"] for item in listed["items"]] == ["morning", "once"]
    paused = await anyio.to_thread.run_sync(
        cli_afp, "schedules", "ops", "pause", "once", "--json", "--db", db
    )
    async with api.running(agent(replies())) as (_, client):
        read = (await client.get("/v1/agents/ops/schedules/once")).json()
    assert json.loads(paused.stdout) == read and read["paused"] is True


@pytest.fixture(name="database")
def fixture_database() -> Iterator[FreshDatabase]:
    """A fresh database on the suite's Postgres server, dropped after the test."""
    database = FreshDatabase()
    anyio.run(database.create)
    yield database
    anyio.run(database.drop)


async def test_the_endpoints_on_postgres(api: Api, database: FreshDatabase) -> None:
    """On a Postgres store the same requests answer the same: created, replaced, paused,
    removed, and a wrong zone named."""
    store = await open_store(database.url, now_ms=api.clock.now_ms())
    try:
        host = watched_host(store, [agent(replies())], clock=api.clock, ids=api.ids)
        async with host, api.client(host) as client:
            await settle(host)
            created = await client.put(ONE, json=MORNING)
            replaced = await client.put(ONE, json={**MORNING, "every": "day at 07:30"})
            paused = (await client.post(ONE + "/pause")).json()
            zone = await client.put(ONE, json={**MORNING, "zone": "Mars/Base"})
            listed = (await client.get("/v1/agents/ops/schedules")).json()
            removed = await client.delete(ONE)
            after = (await client.get("/v1/agents/ops/schedules")).json()
    finally:
        await store.aclose()
    assert (created.status_code, replaced.status_code, removed.status_code) == (201, 200, 204)
    assert paused["paused"] is True and paused["schedule"]["every"] == "day at 07:30"
    assert zone.status_code == 422 and error_of(zone)["field"] == "zone"
    assert listed["items"] == [paused] and after["items"] == []


async def test_with_tokens_only_the_owner_or_an_admin_writes_a_schedule(api: Api) -> None:
    """Once alice owns the conversation, bob's token may read its schedules but not set,
    pause or remove one (403 ``not-owner``, nothing stored); alice's and root's may."""
    people = await anyio.to_thread.run_sync(People, api.path.with_name("afp.db.tokens"))
    async with api.running(agent(replies()), principals=people.principals) as (host, client):
        posted = await client.post(
            "/v1/agents/ops/inbox", json={"text": "hi"}, headers=people.auth("alice")
        )
        assert posted.status_code == 202, posted.text
        await settle(host)
        refused = await client.put(ONE, json=MORNING, headers=people.auth("bob"))
        empty = (await client.get("/v1/agents/ops/schedules", headers=people.auth("bob"))).json()
        mine = await client.put(ONE, json=MORNING, headers=people.auth("alice"))
        stopped = await client.post(ONE + "/pause", headers=people.auth("bob"))
        removed = await client.delete(ONE, headers=people.auth("root"))
    assert refused.status_code == 403 and error_of(refused)["code"] == "not-owner"
    assert empty["items"] == []
    assert mine.status_code == 201 and stopped.status_code == 403
    assert removed.status_code == 204


async def test_a_put_wakes_the_hosts_schedule_runner(api: Api) -> None:
    """With a day's poll interval and a lease renewed every few days, only the PUT's wake makes
    the runner see the new schedule: its first due instant, two hours on, is delivered."""
    options = {"poll_interval_s": 86_400.0, "lease_ttl_s": 864_000.0}
    async with api.running(agent(replies()), host_options=options) as (host, client):
        await settle(host)
        now = api.clock.now_ms()
        put = await client.put(
            "/v1/agents/ops/schedules/soon", json={"text": "Ping", "every": "2 hours"}
        )
        assert put.status_code == 201, put.text
        api.clock.advance(7_200)

        async def arrived() -> bool:
            return len(await scheduled(host.reader, "soon")) == 1

        await until(arrived)
        rows = await scheduled(host.reader, "soon")
    assert rows[0].idempotency_key == f"schedule:soon@{now + 7_200_000}"
