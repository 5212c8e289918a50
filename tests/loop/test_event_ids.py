"""Every event names the bundle it reports: its ``runtimeStageId`` is the id of a bundle in the
run's commit log, the one of the stage that emitted it."""

from __future__ import annotations

from pathlib import Path

import afp_runtime as afp
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply


@afp.tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


async def test_event_stage_ids_are_the_commit_logs(tmp_path: Path) -> None:
    """run.started is seed#0, receipt.minted the receipt bundle's id, and every stage id an
    event carries is one the log holds, for a stage of the event's own kind."""
    script = [tool_reply(call("c1", "lookup", order_id="7")), answer("It shipped.")]
    agent = afp.Agent("desk", afp.ScriptedModel(script), tools=[lookup])
    path = tmp_path / "afp.db"
    async with afp.open(path) as store:
        async with store.stream(agent, "Where is order 7?") as events:
            seen = [event async for event in events]
        run_id = events.result.run_id
    assert run_id is not None
    reader = await SqliteStore.open(path, read_only=True)
    try:
        bundles = await reader.bundles(run_id)
    finally:
        await reader.aclose()
    logged = [b.runtime_stage_id for b in bundles]
    by_type = {e.type: e.runtime_stage_id for e in seen if e.runtime_stage_id}
    assert by_type["run.started"] == "seed#0" == logged[0]
    receipts = [e.runtime_stage_id for e in seen if e.type == "receipt.minted"]
    assert receipts == [b for b in logged if b.startswith("receipt#")]
    stamped = [e for e in seen if e.runtime_stage_id is not None]
    assert stamped
    for event in stamped:
        assert event.runtime_stage_id in logged, (event.type, event.runtime_stage_id, logged)


async def _turn_two_ids(path: Path, *, listen_from_start: bool) -> list[tuple[int, str]]:
    """Event ids and types of a second turn, with the sink added before the first or only
    after it."""
    from afp_runtime.loop import AgentDriver, Emitter, EventRecorder, SequentialIds
    from afp_runtime.testing import FakeClock

    recorder = EventRecorder()
    emitter = Emitter([recorder] if listen_from_start else [])
    script = [tool_reply(call("c1", "lookup", order_id="7")), answer("It shipped.")] * 2
    clock = FakeClock()
    store = await SqliteStore.open(path)
    try:
        agent = afp.Agent("desk", afp.ScriptedModel(script), tools=[lookup])
        driver = AgentDriver(store, agent, clock=clock, ids=SequentialIds(), emitter=emitter)
        await driver.post("first")
        await driver.work()
        first = len(recorder.events)
        if not listen_from_start:
            emitter.add(recorder)
        await driver.post("second")
        await driver.work()
    finally:
        await store.aclose()
    return [(e.id, e.type) for e in recorder.events[first:]]


async def test_events_nobody_receives_still_take_their_ids(tmp_path: Path) -> None:
    """A sink added after a turn that nobody listened to gets the ids it would have had from
    the start: unreceived events are numbered, not built."""
    late = await _turn_two_ids(tmp_path / "late.db", listen_from_start=False)
    early = await _turn_two_ids(tmp_path / "early.db", listen_from_start=True)
    assert late and late == early
    assert late[0][0] > 1
