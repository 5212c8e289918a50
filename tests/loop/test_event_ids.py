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
