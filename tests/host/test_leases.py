"""Host leases across processes (docs/host.md#ownership-and-leases, docs/host.md#start-up step 2,
docs/host.md#status-values, test case 31;
docs/architecture.md#decision-7-every-deadline-goes-through-the-clock,
docs/architecture.md#decision-12-one-lease-row-per-host-process,
docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once).

Two hosts on one file stand for two processes: each has its own store connection and its own
fake clock (a host whose clock is not advanced has stopped renewing). They share one id
factory so their run ids never collide. Waiting uses the same bounded real-time polls as the
other host tests; the lease timing is all on the fake clocks.
"""

from __future__ import annotations

import re
import socket
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.agents import Agent
from afp_runtime.errors import AgentDefinitionError, LeaseLost, StoreUnavailable
from afp_runtime.host import Host
from afp_runtime.host.events import EventBus
from afp_runtime.host.leases import HostLease, default_host_id
from afp_runtime.loop import SequentialIds
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.records import LeaseLostEvent
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer
from tests.api.conftest import agent, settle, until, watch_of, watched_host

TTL_S = 30.0
PERIOD_S = TTL_S / 3


@asynccontextmanager
async def running(
    path: Path,
    definitions: Sequence[Agent],
    *,
    clock: FakeClock,
    ids: SequentialIds,
    **options: Any,
) -> AsyncIterator[Host]:
    """A host process on ``path``: its own writer connection, clock and lease."""
    store = await SqliteStore.open(path, now_ms=clock.now_ms())
    try:
        host = watched_host(store, definitions, clock=clock, ids=ids, **options)
        async with host:
            yield host
    finally:
        await store.aclose()


async def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """One statement on a separate connection, off the event loop."""

    def run() -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(path)
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return await anyio.to_thread.run_sync(run)


async def lease_of(path: Path, host_id: str) -> tuple[int, int]:
    """(lease_epoch, expires_at_ms) of a host's row."""
    rows = await raw(
        path, "SELECT lease_epoch, expires_at_ms FROM host_leases WHERE host_id=?", (host_id,)
    )
    return rows[0]


async def claim_of(path: Path, agent_id: str) -> tuple[str | None, int | None]:
    """(claim_host, claim_epoch) of an agent's row."""
    rows = await raw(
        path, "SELECT claim_host, claim_epoch FROM agents WHERE agent_id=?", (agent_id,)
    )
    return rows[0]


async def row_counts(path: Path) -> dict[str, int]:
    """Rows per table a turn writes to."""
    tables = ("runs", "bundles", "key_index", "items", "inbox", "tool_journal")
    return {t: (await raw(path, f"SELECT COUNT(*) FROM {t}"))[0][0] for t in tables}


async def period(host: Host, clock: FakeClock) -> None:
    """Advance ``clock`` by one lease period and wait until the host's keeper finished it."""
    done = watch_of(host).lease_periods + 1
    clock.advance(PERIOD_S)
    await until(lambda: watch_of(host).lease_periods >= done)


class Gated:
    """A model whose first call blocks until ``gate`` is set (the turn stays open, its seed
    to receipt committed); later calls answer at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.gate = anyio.Event()
        self.sent = anyio.Event()
        self.model = ScriptedModel(self, model="mock")

    async def __call__(self, request: ModelRequest, number: int) -> ModelReply:
        if number == 1:
            self.sent.set()
            await self.gate.wait()
        return answer(self.text)


async def _open_turn(host: Host, gated: Gated) -> None:
    await host.post("ops", "go")
    with anyio.fail_after(10):
        await gated.sent.wait()


async def test_case_31_a_host_that_stops_renewing_is_taken_over(tmp_path: Path, logs: Any) -> None:
    """Host case 31: B does not run ``ops`` while A renews; once A stops renewing, B takes A's
    lease over after the TTL (A's epoch + 1), claims ``ops`` and recovers the open turn; A's
    next commit then fails with LeaseLost and writes nothing."""
    path, ids = tmp_path / "afp.db", SequentialIds()
    clock_a, clock_b = FakeClock(), FakeClock()
    held_by_a = Gated("from a")
    model_b = ScriptedModel([answer("recovered by b")], model="mock")
    async with running(
        path, [agent(held_by_a.model)], clock=clock_a, ids=ids, host_id="host-a"
    ) as a:
        assert (a.host_id, a.status_override("ops")) == ("host-a", None)
        assert await claim_of(path, "ops") == ("host-a", 1)
        await _open_turn(a, held_by_a)
        lost = a.events.subscribe(types=["lease.lost"])
        async with running(path, [agent(model_b)], clock=clock_b, ids=ids, host_id="host-b") as b:
            assert b.status_override("ops") == "not-leased"
            for _ in range(6):  # 60 s on both clocks: twice the TTL, A renewing throughout
                await period(a, clock_a)
                await period(b, clock_b)
            assert await lease_of(path, "host-a") == (1, clock_a.now_ms() + 30_000)
            assert await claim_of(path, "ops") == ("host-a", 1)
            assert b.status_override("ops") == "not-leased" and model_b.calls == 0
            assert watch_of(b).passes("ops") > 1  # B's worker looked, and left ops alone each time

            # A stops renewing: only B's clock moves. Within the TTL nothing changes.
            await period(b, clock_b)
            await period(b, clock_b)
            assert b.status_override("ops") == "not-leased" and model_b.calls == 0
            await period(b, clock_b)  # B's time reaches A's expiry
            assert (await lease_of(path, "host-a"))[0] == 2
            assert await claim_of(path, "ops") == ("host-b", 1)
            assert b.status_override("ops") is None
            await settle(b)
            runs = [(r.kind, r.status) for r in await b.reader.runs("ops")]
            assert runs == [("initial", "crashed"), ("recovery", "answered")]
            assert model_b.calls == 1

            # A wakes up: its reply's commit is fenced out and writes nothing.
            before = await row_counts(path)
            held_by_a.gate.set()
            with anyio.fail_after(10):
                event = await lost.next()
            assert await row_counts(path) == before
            assert getattr(event, "type", None) == "lease.lost"
            assert getattr(event, "payload", None) == LeaseLostEvent(
                host_id="host-a", host_lease_epoch=1, agent_id="ops"
            )
            assert a.status_override("ops") == "not-leased"
            assert await claim_of(path, "ops") == ("host-b", 1)
    lost_logs = [e for e in logs if e["event"] == "agent lease lost"]
    assert len(lost_logs) == 1 and "LeaseLost" not in lost_logs[0]["reason"]
    assert "no longer holds agent 'ops'" in lost_logs[0]["reason"]


async def test_a_host_whose_lease_ran_out_starts_no_turn_until_it_renews(tmp_path: Path) -> None:
    """While the store refuses A's renewals for longer than the TTL, a message posted to A is
    stored but no turn starts (another host may be taking A's agents over, and would answer a
    tool cut off under it ``interrupted``); once a period renews the lease, the turn runs."""
    path, ids, clock = tmp_path / "afp.db", SequentialIds(), FakeClock()
    model = ScriptedModel([answer("after renewal")], model="mock")
    async with running(path, [agent(model)], clock=clock, ids=ids, host_id="host-a") as a:
        await settle(a)
        renew = a.store.renew_lease

        async def unreachable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("the server is down")

        a.store.renew_lease = unreachable  # type: ignore[method-assign]
        for _ in range(4):  # 40 s without a renewal: past the 30 s TTL by A's own clock
            await period(a, clock)
        await a.post("ops", "go")
        for _ in range(5):
            clock.advance(1.0)
            await anyio.wait_all_tasks_blocked()
        calls_while_lapsed = model.calls
        a.store.renew_lease = renew  # type: ignore[method-assign]
        await period(a, clock)
        await settle(a)
        runs = [(r.kind, r.status) for r in await a.reader.runs("ops")]
    assert calls_while_lapsed == 0
    assert runs == [("initial", "answered")] and model.calls == 1


async def test_a_run_cancelled_after_its_lease_went_logs_one_line(
    tmp_path: Path, logs: Any
) -> None:
    """A host that lost an agent's claim and then stops with that agent's run in flight cannot
    mark the run cancelled (the commit is fenced off): it says why in one line, with no
    traceback, and writes nothing."""
    path, ids = tmp_path / "afp.db", SequentialIds()
    clock_a, clock_b = FakeClock(), FakeClock()
    held_by_a = Gated("from a")
    async with running(
        path, [agent(held_by_a.model)], clock=clock_a, ids=ids, host_id="host-a"
    ) as a:
        await _open_turn(a, held_by_a)
        async with running(
            path,
            [agent(ScriptedModel([answer("b")], model="mock"))],
            clock=clock_b,
            ids=ids,
            host_id="host-b",
        ) as b:
            for _ in range(4):  # past A's TTL on B's clock only: B takes the agent over
                await period(b, clock_b)
            assert await claim_of(path, "ops") == ("host-b", 1)
            await settle(b)
        before = await row_counts(path)
    # A stopped with its first run still waiting on the model.
    assert await row_counts(path) == before
    [entry] = [e for e in logs if e["event"] == "could not mark the cancelled run"]
    assert "exc_info" not in entry and "no longer holds agent 'ops'" in entry["error"]


async def test_one_renewal_transaction_per_period_for_a_thousand_agents(tmp_path: Path) -> None:
    """Host case 31: with 1,000 claimed agents a period writes one transaction, not one per
    agent."""
    path, clock = tmp_path / "afp.db", FakeClock()
    definitions = [agent([], agent_id=f"agent-{n:04d}") for n in range(1000)]
    async with running(
        path, definitions, clock=clock, ids=SequentialIds(), poll_interval_s=3600.0
    ) as host:
        await until(
            lambda: all(watch_of(host).passes(d.agent_id) >= 1 for d in definitions), within_s=60
        )
        claimed = await raw(
            path,
            "SELECT COUNT(*) FROM agents WHERE claim_host=? AND claim_epoch=1",
            (host.host_id,),
        )
        assert claimed == [(1000,)]
        assert all(host.status_override(d.agent_id) is None for d in definitions)
        for _ in range(3):
            before = host.store.transactions
            await period(host, clock)
            assert host.store.transactions == before + 1
            assert (await lease_of(path, host.host_id))[1] == clock.now_ms() + 30_000


async def test_a_restart_with_the_same_host_id_takes_over_at_once(tmp_path: Path) -> None:
    """docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once: a host
    starting with the id of a live lease takes it over with a new epoch and recovers the open turn
    without waiting for the TTL; the old process's commit, fenced by the old epoch, fails with
    LeaseLost and writes nothing."""
    path, ids, clock = tmp_path / "afp.db", SequentialIds(), FakeClock()
    crashed = Gated("from the old process")
    restarted = ScriptedModel([answer("recovered")], model="mock")
    async with running(path, [agent(crashed.model)], clock=clock, ids=ids, host_id="h") as old:
        await _open_turn(old, crashed)
        lost = old.events.subscribe(types=["lease.lost"])
        started = clock.now_ms()
        async with running(path, [agent(restarted)], clock=clock, ids=ids, host_id="h") as new:
            assert await lease_of(path, "h") == (2, started + 30_000)
            assert await claim_of(path, "ops") == ("h", 2)
            await settle(new)
            runs = [(r.kind, r.status) for r in await new.reader.runs("ops")]
            assert runs == [("initial", "crashed"), ("recovery", "answered")]
            assert clock.now_ms() == started  # no TTL was waited for
            before = await row_counts(path)
            crashed.gate.set()
            with anyio.fail_after(10):
                event = await lost.next()
            assert await row_counts(path) == before
            assert getattr(getattr(event, "payload", None), "agent_id", None) == "ops"


async def test_a_different_host_id_waits_for_the_lease_to_expire(tmp_path: Path) -> None:
    """Another host id does not claim an agent under a live lease, even one nobody renews,
    before the TTL has passed on its clock; at the expiry it does."""
    path, ids = tmp_path / "afp.db", SequentialIds()
    clock_a, clock_b = FakeClock(), FakeClock()
    async with (
        running(path, [agent([])], clock=clock_a, ids=ids, host_id="a"),
        running(path, [agent([])], clock=clock_b, ids=ids, host_id="b") as b,
    ):
        await period(b, clock_b)
        await period(b, clock_b)
        assert b.status_override("ops") == "not-leased"
        assert await claim_of(path, "ops") == ("a", 1)
        await period(b, clock_b)
        assert b.status_override("ops") is None
        assert await claim_of(path, "ops") == ("b", 1)
        assert (await lease_of(path, "a"))[0] == 2


async def test_a_clean_shutdown_releases_the_lease_for_another_host_at_once(
    tmp_path: Path,
) -> None:
    """After A exits cleanly its lease is expired and its claims dropped, so B claims ``ops``
    at start-up and answers it without any time passing."""
    path, ids, clock = tmp_path / "afp.db", SequentialIds(), FakeClock()
    async with running(path, [agent([])], clock=clock, ids=ids, host_id="a") as a:
        await a.store.post("ops", "queued while a stops", message_id="msg-x", now_ms=0)
        a.stop(0)
    assert await lease_of(path, "a") == (1, 0)
    assert await claim_of(path, "ops") == (None, None)
    model = ScriptedModel([answer("b answers")], model="mock")
    async with running(path, [agent(model)], clock=clock, ids=ids, host_id="b") as b:
        assert b.status_override("ops") is None
        await settle(b)
        row = await b.reader.inbox_message("msg-x")
    assert row is not None and row.status == "answered" and model.calls == 1


async def test_a_renewal_that_finds_its_epoch_raised_stops_every_agent(tmp_path: Path) -> None:
    """When another process took this host's id, the renewal finds the epoch raised: the pass
    in progress is cancelled, one host-wide lease.lost is published and every agent is
    not-leased. The lease is taken back only once that other process let it expire; then the
    host claims its agents again and recovers the open turn."""
    path, ids, clock = tmp_path / "afp.db", SequentialIds(), FakeClock()
    gated = Gated("after the lease came back")
    async with running(path, [agent(gated.model)], clock=clock, ids=ids, host_id="h") as host:
        await _open_turn(host, gated)
        lost = host.events.subscribe(types=["lease.lost"])
        other = await SqliteStore.open(path, now_ms=clock.now_ms())
        try:
            assert await other.acquire_lease("h", now_ms=clock.now_ms(), ttl_ms=30_000) == 2
        finally:
            await other.aclose()
        await period(host, clock)
        with anyio.fail_after(10):
            event = await lost.next()
        assert getattr(event, "payload", None) == LeaseLostEvent(host_id="h", host_lease_epoch=1)
        await until(
            lambda: not watch_of(host).working("ops")
        )  # the blocked model call was cancelled
        assert host.status_override("ops") == "not-leased"
        await period(host, clock)  # 20 s: the other process's lease is still live
        assert host.status_override("ops") == "not-leased"
        assert await lease_of(path, "h") == (2, 1_750_000_030_000)
        await period(host, clock)  # 30 s: expired, taken back with a new epoch
        assert (await lease_of(path, "h"))[0] == 3 and host.status_override("ops") is None
        await settle(host)
        runs = [(r.kind, r.status) for r in await host.reader.runs("ops")]
    assert runs == [("initial", "crashed"), ("recovery", "answered")]
    assert gated.model.calls == 2


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"lease_ttl_s": 0}, "leaseTtlS"),
        ({"lease_ttl_s": float("inf")}, "leaseTtlS"),
        ({"lease_ttl_s": True}, "leaseTtlS"),
        ({"host_id": ""}, "hostId"),
        ({"host_id": "has space"}, "hostId"),
    ],
)
async def test_bad_lease_options_are_refused(
    tmp_path: Path, options: dict[str, Any], field: str
) -> None:
    """A bad TTL or host id is refused naming its camelCase key, before anything is written."""
    store = await SqliteStore.open(tmp_path / "afp.db", now_ms=0)
    try:
        with pytest.raises(AgentDefinitionError) as caught:
            Host(store, [agent([])], clock=FakeClock(), ids=SequentialIds(), **options)
    finally:
        await store.aclose()
    assert caught.value.context["field"] == field


async def test_the_default_host_id_is_the_machine_and_a_restart_with_it_takes_over_at_once(
    tmp_path: Path,
) -> None:
    """Without a hostId a host is named by its machine alone (no file path in it), so hosts on
    two stores share the name and a restart on one store takes its own lease back at once."""
    ids, clock = SequentialIds(), FakeClock()
    expected = re.sub(r"[^A-Za-z0-9.-]+", "-", socket.gethostname()).strip("-")[:64] or "host"
    assert default_host_id() == expected
    started = clock.now_ms()
    async with running(tmp_path / "one.db", [agent([])], clock=clock, ids=ids) as one:
        assert one.host_id == expected and (await lease_of(tmp_path / "one.db", expected))[0] == 1
        async with running(tmp_path / "one.db", [agent([])], clock=clock, ids=ids) as again:
            assert again.host_id == expected
            assert (await lease_of(tmp_path / "one.db", expected))[0] == 2
            assert clock.now_ms() == started  # no TTL was waited for
            assert await claim_of(tmp_path / "one.db", "ops") == (expected, 2)
    async with running(tmp_path / "two.db", [agent([])], clock=clock, ids=ids) as other:
        assert other.host_id == expected
        assert (await lease_of(tmp_path / "two.db", expected))[0] == 1


async def test_agents_spread_over_the_live_hosts(tmp_path: Path) -> None:
    """Ten agents over three live hosts: within a few periods every agent is held by exactly one
    host and none holds more than ceil(10 / 3); when one host stops cleanly, the other two take
    its agents and hold at most ceil(10 / 2) each."""
    path, ids, clock = tmp_path / "afp.db", SequentialIds(), FakeClock()
    agent_ids = [f"agent-{i}" for i in range(10)]

    def definitions() -> list[Agent]:
        return [agent([], agent_id=agent_id) for agent_id in agent_ids]

    async def period_of(hosts: Sequence[Host]) -> None:
        done = [watch_of(host).lease_periods + 1 for host in hosts]
        clock.advance(PERIOD_S)
        await until(
            lambda: all(watch_of(h).lease_periods >= d for h, d in zip(hosts, done, strict=True))
        )

    async def spread(hosts: Sequence[Host], cap: int) -> dict[str, int]:
        """Periods until every agent has one holder among ``hosts``, none above ``cap``."""
        names = [host.host_id for host in hosts]
        for _ in range(8):
            await period_of(hosts)
            rows = await raw(path, "SELECT claim_host, COUNT(*) FROM agents GROUP BY claim_host")
            counts = {str(host): int(n) for host, n in rows}
            held_by_them = set(counts) <= set(names) and sum(counts.values()) == 10
            if held_by_them and max(counts.values()) <= cap:
                return counts
        raise AssertionError(f"not spread over {names} within 8 periods: {counts}")

    async with (
        running(path, definitions(), clock=clock, ids=ids, host_id="h1") as h1,
        running(path, definitions(), clock=clock, ids=ids, host_id="h2") as h2,
    ):
        async with running(path, definitions(), clock=clock, ids=ids, host_id="h3") as h3:
            counts = await spread([h1, h2, h3], cap=4)
            assert len(counts) == 3
            h3.stop(0)
        assert await spread([h1, h2], cap=5) == {"h1": 5, "h2": 5}


async def test_a_commit_fenced_after_the_whole_lease_went_is_logged(
    tmp_path: Path, logs: Any
) -> None:
    """A pass whose commit is fenced off after the renewal had already dropped every claim (a
    host frozen past its TTL wakes up in that order) logs the refused commit with its reason,
    rather than passing over it because the agent is no longer held."""
    path = tmp_path / "afp.db"
    store = await SqliteStore.open(path, now_ms=0)
    clock = FakeClock()
    try:
        await store.ensure_agent("ops", now_ms=0)
        lease = HostLease(
            store,
            clock=clock,
            host_id="h",
            ttl_s=TTL_S,
            agent_ids=["ops"],
            events=EventBus(),
            wake=lambda agent_id: None,
        )
        await lease.acquire()  # a lease just taken: the pass may start
        assert lease.epoch == 1 and lease.status_override("ops") is None
        refused = "host 'h' (lease epoch 1) no longer holds agent 'ops': nothing was written"

        async def work() -> None:
            # Another process of host 'h' took the lease back (epoch 2); this host's period
            # that finds the epoch raised runs before the pass's commit, which is fenced off.
            elsewhere = await SqliteStore.open(path, now_ms=clock.now_ms())
            try:
                await elsewhere.acquire_lease("h", now_ms=clock.now_ms(), ttl_ms=lease.ttl_ms)
            finally:
                await elsewhere.aclose()
            await lease.period()
            raise LeaseLost(refused)

        await lease.run_pass("ops", work)
        assert lease.epoch is None and lease.status_override("ops") == "not-leased"
    finally:
        await store.aclose()
    fenced = [e for e in logs if e["event"] == "a commit was fenced off; nothing of it was written"]
    assert [(e["agent_id"], e["reason"]) for e in fenced] == [("ops", refused)]


async def test_a_claim_made_while_a_period_reads_the_claims_is_not_forgotten(
    tmp_path: Path,
) -> None:
    """A worker's claim that lands while a lease period is between reading the claims and
    acting on them waits for the period: what the host believes it holds stays what the store
    says it holds (else an agent would stay claimed by a host that never runs it)."""
    store = await SqliteStore.open(tmp_path / "afp.db", now_ms=0)
    try:
        for agent_id in ("b", "ops"):
            await store.ensure_agent(agent_id, now_ms=0)
        clock = FakeClock()
        # Another live host: this one's share is one agent of the two.
        await store.acquire_lease("g", now_ms=clock.now_ms(), ttl_ms=3_600_000)
        lease = HostLease(
            store,
            clock=clock,
            host_id="h",
            ttl_s=TTL_S,
            agent_ids=["b", "ops"],
            events=EventBus(),
            wake=lambda agent_id: None,
        )
        await lease.acquire()
        assert lease.epoch is not None and lease.share == 1
        await store.release_agents(["b", "ops"], "h", lease.epoch)
        lease.held.clear()
        read, go_on = anyio.Event(), anyio.Event()
        agent_claims = store.agent_claims

        async def slow_claims(*args: Any, **kwargs: Any) -> Any:
            found = await agent_claims(*args, **kwargs)
            read.set()
            await go_on.wait()
            return found

        store.agent_claims = slow_claims  # type: ignore[method-assign]

        async def work() -> None:
            pass

        async with anyio.create_task_group() as group:
            group.start_soon(lease.period)
            await read.wait()
            # A worker of ``ops`` wants to claim it now, while the period holds its read.
            group.start_soon(lease.run_pass, "ops", work)
            await anyio.wait_all_tasks_blocked()
            go_on.set()
        store.agent_claims = agent_claims  # type: ignore[method-assign]
        found = await store.agent_claims(now_ms=clock.now_ms())
    finally:
        await store.aclose()
    ours = {c.agent_id for c in found if c.host_id == "h"}
    assert lease.held == ours and len(ours) == 1, (lease.held, found)


async def test_a_resume_through_a_host_that_does_not_hold_the_agent_is_refused(
    tmp_path: Path,
) -> None:
    """B does not hold ``ops`` (A does): a resume asked of B is refused with LeaseLost, as a
    dismiss would be, instead of accepted and carried out whenever B might get the agent."""
    path, ids = tmp_path / "afp.db", SequentialIds()
    clock_a, clock_b = FakeClock(), FakeClock()
    async with (
        running(
            path, [agent(ScriptedModel([answer("a")]))], clock=clock_a, ids=ids, host_id="host-a"
        ),
        running(
            path, [agent(ScriptedModel([answer("b")]))], clock=clock_b, ids=ids, host_id="host-b"
        ) as b,
    ):
        assert b.status_override("ops") == "not-leased"
        with pytest.raises(LeaseLost, match="does not hold agent 'ops'"):
            await b.resume("ops")
