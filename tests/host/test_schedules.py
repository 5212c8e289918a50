"""A host delivers its agents' schedules (docs/host.md#schedules): on the fake clock over weeks
of virtual time, across a clock change, through a restart, with the host down across due times
under each catch-up policy, and with two hosts on one store."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.errors import StoreUnavailable
from afp_runtime.host import Host
from afp_runtime.models import ScriptedModel
from afp_runtime.store import InboxRow, Store, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, settle, until, watch_of, watched_host
from tests.store._postgres import FreshDatabase

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def replies(n: int = 60) -> ScriptedModel:
    return ScriptedModel([answer(f"done {i}") for i in range(n)], model="mock")


async def scheduled(store: Store, name: str = "morning") -> list[InboxRow]:
    return [r for r in await store.inbox("ops") if r.sender == f"schedule:{name}"]


def due_of(rows: list[InboxRow]) -> list[int]:
    return [int((r.idempotency_key or "").rsplit("@", 1)[1]) for r in rows]


async def advance(api: Api, seconds: float, *hosts: Host) -> None:
    """Move the fake clock on (past a lease period) and wait (real time, bounded) until each
    host's lease keeper ran a period after it: its lease is renewed, and its next period is
    due again on the clock before the next move."""
    before = [watch_of(host).lease_periods for host in hosts]
    api.clock.advance(seconds)
    await until(
        lambda: all(watch_of(h).lease_periods > n for h, n in zip(hosts, before, strict=True))
    )


async def advance_to(api: Api, host: Host, at_ms: int, count: int, name: str = "morning") -> None:
    """Move the fake clock to ``at_ms`` and wait (real time, bounded) until ``count`` messages
    of the schedule are in the inbox and the agent rests."""
    await advance(api, max(0, at_ms - api.clock.now_ms()) / 1000, host)

    async def arrived() -> bool:
        return len(await scheduled(host.reader, name)) >= count

    await until(arrived)
    await settle(host)


async def test_a_weekday_schedule_runs_three_weeks_across_a_clock_change(tmp_path: Any) -> None:
    """``every weekday at 09:00`` in Europe/Berlin is delivered at 09:00 local on each weekday
    of three weeks, before and after the end of summer time, once each: a message from
    ``schedule:morning`` that the worker answers, announced by ``inbox.accepted``."""
    api = Api(tmp_path / "afp.db")
    api.clock = afp.testing.FakeClock(ms(datetime(2025, 10, 17, 12, 0, tzinfo=UTC)))
    morning = afp.schedule(
        "morning", "Check the overnight orders", every="weekday at 09:00", zone="Europe/Berlin"
    )
    wanted = [
        ms(datetime(2025, 10, 17, 9, 0, tzinfo=BERLIN) + timedelta(days=d))
        for d in range(1, 22)
        if (datetime(2025, 10, 17) + timedelta(days=d)).weekday() < 5
    ]
    async with api.host(agent(replies(), schedules=[morning])) as host:
        accepted = host.events.subscribe(types=["inbox.accepted"])
        for count, due in enumerate(wanted, start=1):
            await advance_to(api, host, due, count)
        rows = await scheduled(host.reader)
        views = await afp.app.list_schedules(host.reader, "ops")
    assert due_of(rows) == wanted
    assert [r.accepted_at_ms for r in rows] == wanted  # each delivered at its due instant
    assert {r.status for r in rows} == {"answered"}
    assert {r.text for r in rows} == {"Check the overnight orders"}
    # 09:00 local on both sides of 26 October: 07:00Z before, 08:00Z after.
    assert {datetime.fromtimestamp(d / 1000, BERLIN).hour for d in wanted} == {9}
    assert {datetime.fromtimestamp(d / 1000, UTC).hour for d in wanted} == {7, 8}
    assert accepted.pending >= len(wanted)
    assert views[0].delivered == len(wanted) and views[0].source == "declared"
    assert views[0].last_due_ms == wanted[-1] and views[0].next_due_ms is not None


@pytest.mark.parametrize(
    ("catch_up", "delivered_days"), [("latest", [3]), ("all", [1, 2, 3]), ("none", [])]
)
async def test_a_host_down_across_due_times_catches_up_by_the_rule(
    api: Api, catch_up: str, delivered_days: list[int]
) -> None:
    """Three daily due instants pass while no host runs; the host that starts after them
    delivers what ``catchUp`` says (the latest, all, or none of them), then the next one on
    time: nothing twice."""
    start = datetime.fromtimestamp(api.clock.now_ms() / 1000, UTC)
    first = start.replace(hour=6, minute=0, second=0, microsecond=0) + timedelta(days=1)
    days = [ms(first + timedelta(days=d)) for d in range(5)]
    daily = afp.schedule("morning", "Good morning", every="day at 06:00", catch_up=catch_up)  # type: ignore[arg-type]
    definition = agent(replies(), schedules=[daily])
    async with api.host(definition) as host:
        await settle(host)
    api.clock.advance((days[2] + 3_600_000 - api.clock.now_ms()) / 1000)  # past days 0..2
    async with api.host(definition) as host:
        expected = [days[d - 1] for d in delivered_days]
        await until(lambda: _count(host, len(expected)))
        await settle(host)
        await advance_to(api, host, days[3], len(expected) + 1)
        rows = await scheduled(host.reader)
    assert due_of(rows) == [*expected, days[3]]
    assert rows[-1].accepted_at_ms == days[3]


async def _count(host: Host, n: int) -> bool:
    return len(await scheduled(host.reader)) >= n


async def test_a_restart_between_due_times_delivers_each_once(api: Api) -> None:
    """A host stopped after one due instant and started again before the next keeps the
    declared schedule's marks (the definition is unchanged): the next due instant is
    delivered once, the first not again."""
    daily = afp.schedule("morning", "Good morning", every="day at 06:00")
    start = datetime.fromtimestamp(api.clock.now_ms() / 1000, UTC)
    first = ms(start.replace(hour=6, minute=0, second=0, microsecond=0) + timedelta(days=1))
    second = first + 86_400_000
    async with api.host(agent(replies(), schedules=[daily])) as host:
        await advance_to(api, host, first, 1)
    api.clock.advance(3_600)
    async with api.host(agent(replies(), schedules=[daily])) as host:
        await settle(host)
        assert len(await scheduled(host.reader)) == 1
        await advance_to(api, host, second, 2)
        await advance(api, 3_600, host)
        await settle(host)
        rows = await scheduled(host.reader)
    assert due_of(rows) == [first, second]


async def test_a_changed_declaration_is_set_anew_and_a_removed_one_goes(api: Api) -> None:
    """At start a changed declared schedule is re-anchored at now (nothing of its old
    definition caught up), one no longer declared is removed, one set at run time stays."""
    old = afp.schedule("morning", "Good morning", every="day at 06:00")
    gone = afp.schedule("gone", "Bye", every="day at 07:00")
    async with api.host(agent(replies(), schedules=[old, gone])) as host:
        await settle(host)
        await afp.app.set_schedule(
            host.store,
            "ops",
            afp.schedule("later", "Later", every="day at 08:00"),
            source="api",
            now_ms=api.clock.now_ms(),
        )
    api.clock.advance(3 * 86_400)
    new = afp.schedule("morning", "Good morning!", every="day at 06:30")
    async with api.host(agent(replies(), schedules=[new])) as host:
        await settle(host)
        views = {v.name: v for v in await afp.app.list_schedules(host.reader, "ops")}
        rows = await scheduled(host.reader)
    assert sorted(views) == ["later", "morning"]
    assert views["morning"].anchor_ms == api.clock.now_ms() and rows == []
    assert views["morning"].schedule == new and views["later"].source == "api"


async def test_a_schedule_set_through_the_host_wakes_it(api: Api) -> None:
    """A schedule set on a running host's store (then ``host.wake``) is delivered at its due
    instant without a restart; a paused one is not, and a removed one never again."""
    async with api.host(agent(replies())) as host:
        await settle(host)
        now = api.clock.now_ms()
        await afp.app.set_schedule(
            host.store,
            "ops",
            afp.schedule("soon", "Ping", every="2 hours"),
            source="api",
            now_ms=now,
        )
        host.wake("ops")
        await advance_to(api, host, now + 7_200_000, 1, name="soon")
        await afp.app.pause_schedule(host.store, "ops", "soon", now_ms=api.clock.now_ms())
        host.wake("ops")
        await advance(api, 3 * 7_200, host)
        await settle(host)
        paused = len(await scheduled(host.reader, "soon"))
        await afp.app.resume_schedule(host.store, "ops", "soon", now_ms=api.clock.now_ms())
        host.wake("ops")
        await advance_to(api, host, now + 5 * 7_200_000, 2, name="soon")
        await afp.app.remove_schedule(host.store, "ops", "soon")
        host.wake("ops")
        await advance(api, 5 * 7_200, host)
        await settle(host)
        rows = await scheduled(host.reader, "soon")
    assert paused == 1
    assert due_of(rows) == [now + 7_200_000, now + 5 * 7_200_000]


async def test_two_hosts_on_one_file_deliver_each_due_instant_once(api: Api) -> None:
    """Two hosts on one SQLite file, both declaring the agent: whichever holds it delivers,
    each hourly due instant becomes exactly one message."""
    hourly = afp.schedule("tick", "Tick", every="1 hours")
    start = api.clock.now_ms()
    async with (
        api.host(agent(replies(), schedules=[hourly]), host_id="one") as one,
        api.host(agent(replies(), schedules=[hourly]), host_id="two") as two,
    ):
        await settle(one)
        anchor = (await afp.app.list_schedules(one.reader, "ops"))[0].anchor_ms
        for n in range(1, 7):
            await advance(api, (anchor + n * 3_600_000 - api.clock.now_ms()) / 1000, one, two)

            async def arrived(n: int = n) -> bool:
                return len(await scheduled(one.reader, "tick")) >= n

            await until(arrived)
        await anyio.sleep(0.05)
        rows = await scheduled(one.reader, "tick")
    assert start <= anchor
    assert due_of(rows) == [anchor + n * 3_600_000 for n in range(1, 7)]


class _FullDisk(SqliteStore):
    """A store whose delivering commits fail as a full disk fails them while ``full`` holds."""

    full = False
    refused = 0

    async def deliver_schedule(self, *args: Any, **kwargs: Any) -> Any:
        if self.full:
            self.refused += 1
            raise StoreUnavailable(
                "a store transaction failed: the disk is full", cause="disk-full"
            )
        return await super().deliver_schedule(*args, **kwargs)


async def test_a_delivery_the_store_refuses_is_degraded_health_and_done_once_it_is_back(
    api: Api,
) -> None:
    """A delivery that meets a full disk leaves the host running with health degraded, and is
    tried again after a back-off on the clock; once the store takes writes again, the due
    instant is delivered once and health is clear."""
    store = await _FullDisk.open(api.path, now_ms=api.clock.now_ms())
    tick = afp.schedule("tick", "Tick", every="1 hours")
    definition = agent(replies(), schedules=[tick])
    try:
        host = watched_host(store, [definition], clock=api.clock, ids=api.ids)
        async with host:
            await settle(host)
            anchor = (await afp.app.list_schedules(host.reader, "ops"))[0].anchor_ms
            store.full = True
            await advance(api, 3_600, host)
            await until(lambda: host.store_fault is not None)
            refused = store.refused
            assert host.state == "running" and await scheduled(host.reader, "tick") == []
            store.full = False
            api.clock.advance(1.0)  # past the back-off
            await until(lambda: host.store_fault is None)
            await settle(host)
            rows = await scheduled(host.reader, "tick")
    finally:
        await store.aclose()
    assert refused >= 1
    assert due_of(rows) == [anchor + 3_600_000]


async def test_two_hosts_on_postgres_deliver_each_due_instant_once(
    api: Api, database: FreshDatabase
) -> None:
    """Two hosts on one Postgres database, both declaring the agent, and a third store racing
    every delivery with the same plan: each hourly due instant becomes exactly one message."""
    hourly = afp.schedule("tick", "Tick", every="1 hours")
    stores = [await open_store(database.url, now_ms=api.clock.now_ms()) for _ in range(3)]
    one_store, two_store, racer = stores
    try:
        hosts = [
            watched_host(
                s,
                [agent(replies(), schedules=[hourly])],
                clock=api.clock,
                ids=api.ids,
                host_id=name,
            )
            for s, name in ((one_store, "one"), (two_store, "two"))
        ]
        async with hosts[0] as one, hosts[1] as two:
            await settle(one)
            anchor = (await afp.app.list_schedules(one.reader, "ops"))[0].anchor_ms
            raced = 0
            for n in range(1, 5):
                [row] = await racer.schedules("ops")
                due = anchor + n * 3_600_000
                await advance(api, (due - api.clock.now_ms()) / 1000, one, two)
                won = await racer.deliver_schedule(
                    "ops",
                    "tick",
                    revision=row.revision,
                    due=[(due, f"race-{n}")],
                    text="Tick",
                    through_ms=due,
                    next_due_ms=due + 3_600_000,
                    now_ms=due,
                )
                raced += won is not None

                async def arrived(n: int = n) -> bool:
                    return len(await scheduled(one.reader, "tick")) >= n

                await until(arrived)
            await settle(one)
            rows = await scheduled(one.reader, "tick")
    finally:
        for store in stores:
            await store.aclose()
    assert due_of(rows) == [anchor + n * 3_600_000 for n in range(1, 5)]
    assert len({r.message_id for r in rows}) == 4
    assert sum(r.message_id.startswith("race-") for r in rows) == raced
