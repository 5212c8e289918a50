"""Start-up and operator cases of docs/loop.md#how-this-is-tested: 27 (start-up resumes everything),
30 (operator resume through a newly added window strategy), 18 (a crash loop dismissed moves the
queue on), the stall limit, and the clean-shutdown marker with ``quick_check`` behind the
serving host
(docs/host.md#after-an-unclean-stop)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from afp_runtime.errors import ModelCallError
from afp_runtime.host import Host, StoreCheckFailed
from afp_runtime.loop import AgentDriver
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import RetryPolicy, ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window
from tests.api.conftest import Api, agent, settle, until, watch_of, watched_host


class Died(BaseException):
    """Stands for the process dying inside a send."""


def _dies(request: ModelRequest, number: int) -> ModelReply:
    raise Died


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person("which host?")


def _asking() -> Tool:
    return Tool("beta_tool", "asks", {"type": "object"}, _ask)


async def _leave(api: Api, agent_id: str, model: Any, **options: Any) -> None:
    """One earlier process leaves ``agent_id`` with a turn in some state."""
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        driver = AgentDriver(
            store, agent(model, agent_id=agent_id, **options), clock=api.clock, ids=api.ids
        )
        await driver.post("go")
        with contextlib.suppress(Died):
            await driver.work()
    finally:
        await store.aclose()


async def test_case_27_start_up_resumes_everything(api: Api) -> None:
    """Three running turns, one paused, one held, one stalled due in the past: three recovery
    runs and one retry run start; the paused and held turns wait."""
    for name in ("r1", "r2", "r3"):
        await _leave(api, name, ScriptedModel(_dies, model="mock"))
    await _leave(
        api, "paused", ScriptedModel([tool_reply(call("c1", "beta_tool"))]), tools=[_asking()]
    )
    auth = ModelCallError("no key", error_kind="auth", provider="scripted")
    await _leave(api, "held", ScriptedModel([auth], model="mock"))
    down = ModelCallError("down", error_kind="server", provider="scripted", retryable=True)
    await _leave(
        api,
        "stalled",
        ScriptedModel([down], model="mock"),
        retry=RetryPolicy(max_attempts=1),
    )
    api.clock.advance(61)  # the stall's retryAtMs (60 s) is now in the past

    definitions = [
        *(
            agent(ScriptedModel([answer(f"{n} ok")], model="mock"), agent_id=n)
            for n in ("r1", "r2", "r3")
        ),
        agent(ScriptedModel([answer("never")]), agent_id="paused", tools=[_asking()]),
        agent(ScriptedModel([answer("never")], model="mock"), agent_id="held"),
        agent(ScriptedModel([answer("stalled ok")], model="mock"), agent_id="stalled"),
    ]
    async with api.host(*definitions) as host:
        for name in ("r1", "r2", "r3", "stalled"):
            await until(lambda name=name: _answered(host, name))
        await until(lambda: not any(watch_of(host).working(d.agent_id) for d in definitions))
        kinds = {
            d.agent_id: [(r.kind, r.status) for r in await host.reader.runs(d.agent_id)]
            for d in definitions
        }
        statuses = {
            d.agent_id: (await host.reader.inbox(d.agent_id))[0].status for d in definitions
        }
    for name in ("r1", "r2", "r3"):
        assert kinds[name] == [("initial", "crashed"), ("recovery", "answered")]
    assert kinds["stalled"] == [("initial", "stalled"), ("retry", "answered")]
    assert kinds["paused"] == [("initial", "paused")]
    assert kinds["held"] == [("initial", "held")]
    assert statuses == {
        "r1": "answered",
        "r2": "answered",
        "r3": "answered",
        "paused": "paused",
        "held": "held",
        "stalled": "answered",
    }


async def _answered(host: Any, agent_id: str) -> bool:
    rows = await host.reader.inbox(agent_id)
    return bool(rows) and rows[0].status == "answered"


async def test_start_up_creates_many_agents_in_a_few_transactions(api: Api) -> None:
    """A host starting with 200 agents new to the file creates all their rows in a handful of
    grouped transactions, not one each."""
    definitions = [agent([answer("ok")], agent_id=f"agent-{i:03d}") for i in range(200)]
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        opened = store.transactions
        async with Host(store, definitions, clock=api.clock, ids=api.ids) as host:
            started = store.transactions - opened
            states = [await host.reader.conversation_state(d.agent_id) for d in definitions]
    finally:
        await store.aclose()
    assert all(state is not None and state.turn == 0 for state in states)
    assert started <= 20, started


async def test_case_30_operator_resume_through_a_new_window_strategy(api: Api) -> None:
    """A turn held for context-length; the operator adds a sliding window and resumes: the
    operator run's window stage drops the old turns and the recomposed call answers."""
    too_long = ModelCallError(
        "prompt is too long", error_kind="context-length", provider="scripted", status=400
    )
    first = ScriptedModel([answer("one"), answer("two"), too_long], model="mock")
    async with api.host(agent(first)) as host:
        for text in ("first", "second", "third"):
            await host.post("ops", text)
        await until(lambda: _held(host))
    fixed = ScriptedModel([answer("third, at last")], model="mock")
    windowed = agent(fixed, window=sliding_window(keep_recent_turns=1))
    async with api.host(windowed) as host:
        [held] = [r for r in await host.reader.runs("ops") if r.status == "held"]
        await host.resume("ops", run_id=held.run_id)
        await until(lambda: _answered_third(host))
        runs = await host.reader.runs("ops")
        bundles = await host.reader.bundles(runs[-1].run_id)
    assert (runs[-1].kind, runs[-1].status) == ("operator", "answered")
    window = next(b for b in bundles if b.stage == "window")
    [record] = next(w["value"] for w in window.writes if w["key"] == "compactions")
    assert record["strategy"] == "sliding-window" and record["removedMessageCount"] == 4
    assert [m.content for m in fixed.requests[0].messages] == ["third"]


async def _answered_third(host: Any) -> bool:
    rows = await host.reader.inbox("ops")
    return rows[-1].status == "answered"


async def _held(host: Any) -> bool:
    state = await host.reader.conversation_state("ops")
    return (
        state is not None
        and state.open_turn is not None
        and state.open_turn.status == "held"
        and not watch_of(host).working("ops")
    )


async def test_case_18_a_crash_loop_dismissed_moves_the_queue_on(api: Api) -> None:
    """A held crash loop keeps later messages waiting until it is dismissed."""
    store = await SqliteStore.open(api.path, now_ms=0)
    try:
        driver = AgentDriver(
            store, agent(ScriptedModel(_dies), max_recoveries=0), clock=api.clock, ids=api.ids
        )
        await driver.post("go")
        await driver.post("then this")
        with pytest.raises(Died):
            await driver.work()
        assert await driver.work() == []  # the crash loop is held
        assert [r.status for r in await store.inbox("ops")] == ["held", "queued"]
        driver = AgentDriver(
            store, agent(ScriptedModel([answer("next")])), clock=api.clock, ids=api.ids
        )
        await driver.dismiss()
        [outcome] = await driver.work()
        statuses = [r.status for r in await store.inbox("ops")]
    finally:
        await store.aclose()
    assert outcome.final_answer == "next"
    assert statuses == ["dismissed", "answered"]


async def test_a_turn_stalled_past_max_stall_s_is_held(api: Api) -> None:
    down = ModelCallError("down", error_kind="server", provider="scripted", retryable=True)
    store = await SqliteStore.open(api.path, now_ms=0)
    try:
        driver = AgentDriver(
            store,
            agent(
                ScriptedModel([down] * 10, model="mock"),
                retry=RetryPolicy(max_attempts=1),
                max_stall_s=200,
            ),
            clock=api.clock,
            ids=api.ids,
        )
        await driver.post("go")
        outcomes = []
        for _ in range(4):
            outcomes += await driver.work()
            api.clock.advance(3600)
        state = await store.conversation_state("ops")
    finally:
        await store.aclose()
    # Stalls at +0 (retry at 60 s) and +3600 s (retry 120 s later): the second passes 200 s.
    assert [o.status for o in outcomes] == ["stalled", "held"]
    assert state is not None and state.open_turn is not None
    assert state.open_turn.error_kind == "stall-limit"
    assert "server" in (state.open_turn.error or "")


class _GatedReader(SqliteStore):
    """A read-only store whose ``quick_check`` waits for the test to open its gate."""

    gate: anyio.Event

    async def quick_check(self) -> list[str]:
        await self.gate.wait()
        return await super().quick_check()


class _GatedStore(SqliteStore):
    """A real SQLite store whose readers hold ``quick_check`` until ``gate`` is set."""

    gate: anyio.Event

    async def open_reader(self) -> SqliteStore:
        reader = await _GatedReader.open(self.path, read_only=True)
        reader.gate = self.gate
        return reader


async def _crash(path: Path) -> tuple[int, int]:
    """Leave ``path`` as a host that died while serving does (marker clear); the root page
    of the runs table and the page size."""
    store = await SqliteStore.open(path)
    try:
        await store.begin_serving()
        [(root,)] = await store._fetch("SELECT rootpage FROM sqlite_master WHERE name='runs'")
        [(page_size,)] = await store._fetch("PRAGMA page_size")
    finally:
        await store.aclose()
    return root, page_size


async def _marker(path: Path) -> bool:
    store = await SqliteStore.open(path, read_only=True)
    try:
        return await store.clean_shutdown()
    finally:
        await store.aclose()


async def test_a_clean_stop_skips_the_store_check_and_an_unclean_one_runs_it(api: Api) -> None:
    """A host that stopped cleanly leaves a marker and the next start needs no check; without
    it (a new file, a crash) the check runs and a passed check sets the marker at exit."""
    async with api.host(agent([])) as host:
        assert host.store_check in ("checking", "ok")  # a new file has no marker yet
        await until(lambda: host.store_check == "ok")
    assert await _marker(api.path)
    async with api.host(agent([])) as host:
        assert host.store_check == "not-needed"
        assert host.store.quick_checks == 0  # type: ignore[attr-defined]
    assert await _marker(api.path)
    await _crash(api.path)
    async with api.host(agent([])) as host:
        await until(lambda: host.store_check == "ok")
    assert await _marker(api.path)


async def test_after_an_unclean_stop_the_host_serves_while_the_check_runs(api: Api) -> None:
    """After a crash the host answers health 200 and finishes a turn while ``quick_check`` is
    still held (health ``storeCheck: checking``), and reports ``ok`` once it passes."""
    await _crash(api.path)
    store = await _GatedStore.open(api.path)
    store.gate = anyio.Event()
    try:
        definition = agent([answer("served before the check")])
        async with (
            watched_host(store, [definition], clock=api.clock, ids=api.ids) as host,
            api.client(host) as client,
        ):
            health = await client.get("/v1/health")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            assert health.json()["storeCheck"] == "checking"
            await host.post("ops", "go")
            await settle(host)
            [row] = await host.reader.inbox("ops")
            assert row.status == "answered"
            assert host.store_check == "checking"
            store.gate.set()
            await until(lambda: host.store_check == "ok")
            assert (await client.get("/v1/health")).json()["storeCheck"] == "ok"
    finally:
        await store.aclose()
    assert await _marker(api.path)


async def test_a_stop_before_the_check_finished_leaves_the_marker_clear(api: Api) -> None:
    """A host stopped while its check is still held leaves the clean-shutdown marker clear,
    so the next start checks the file again."""
    await _crash(api.path)
    store = await _GatedStore.open(api.path)
    store.gate = anyio.Event()
    try:
        async with Host(store, [agent([])], clock=api.clock, ids=api.ids) as host:
            assert host.store_check == "checking"
    finally:
        await store.aclose()
    assert not await _marker(api.path)


async def test_a_damaged_file_found_behind_the_serving_host_stops_its_turns(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """A crashed file with a damaged page: the host starts, its check finds the damage, and
    then it takes no turns, admits nothing, reports ``damaged`` in health and leaves the
    clean-shutdown marker clear."""
    async with api.host(agent([])):
        pass
    root, page_size = await _crash(api.path)
    path = anyio.Path(api.path)
    raw = bytearray(await path.read_bytes())
    start = (root - 1) * page_size
    raw[start : start + 12] = b"\xff" * 12  # the runs table's root page header
    await path.write_bytes(bytes(raw))
    async with api.running(agent([answer("never")])) as (host, client):
        await until(lambda: host.store_check != "checking")
        assert host.store_check == "damaged"
        await until(lambda: not any(watch_of(host).working(a) for a in host.agent_ids))
        passes = watch_of(host).passes("ops")
        with pytest.raises(StoreCheckFailed, match="quick_check") as refused:
            await host.post("ops", "go")
        # The refusal names what quick_check found.
        found = re.search(r"after an unclean stop \((.*)\); the host admits", str(refused.value))
        assert found is not None and found[1] not in ("", "ok"), refused.value
        response = await client.post("/v1/agents/ops/inbox", json={"text": "go"})
        assert response.status_code == 503
        health = (await client.get("/v1/health")).json()
        assert (health["status"], health["storeCheck"]) == ("damaged", "damaged")
        host.wake("ops")
        await anyio.lowlevel.checkpoint()
        assert watch_of(host).passes("ops") == passes
    assert not await _marker(api.path)
