"""docs/loop.md#how-this-is-tested case 34: 600 turns of "go" → "done" through the loop (no
strategy). The file grows by a bounded, steady number of bytes per turn; each turn's receipt lists
per-entry hashes only for the messages new since the conversation's previous receipt; every epoch
verifies."""

from __future__ import annotations

from typing import Any

import anyio

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.served import check, epochs, receipt_at, served_at
from afp_runtime.store.sqlite import SqliteRunLog, SqliteStore
from afp_runtime.testing import FakeClock, answer

from .conftest import Harness

TURNS = 600


def _done(request: ModelRequest, number: int) -> ModelReply:
    return answer("done")


async def _size(harness: Harness) -> int:
    path = anyio.Path(harness.path)
    wal = anyio.Path(str(harness.path) + "-wal")
    size = (await path.stat()).st_size
    if await wal.exists():
        size += (await wal.stat()).st_size
    return size


async def test_case_34_storage_stays_linear_and_receipts_list_only_new_entries(
    harness: Harness,
) -> None:
    assert harness.store is not None
    model = ScriptedModel(_done)
    driver = AgentDriver(harness.store, Agent("ops", model), clock=FakeClock(), ids=SequentialIds())
    sizes: dict[int, int] = {}
    for turn in range(1, TURNS + 1):
        await driver.post("go")
        [outcome] = await driver.work()
        assert outcome.status == "answered"
        if turn in (100, 300, TURNS):
            await harness.store.aclose()
            sizes[turn] = await _size(harness)  # the WAL was checkpointed into the file
            harness.store = await SqliteStore.open(harness.path)
            driver.store = harness.store
    early = (sizes[300] - sizes[100]) / 200
    late = (sizes[TURNS] - sizes[300]) / (TURNS - 300)
    assert late <= 1.25 * early, sizes  # no per-turn copy of the growing history
    assert late < 4096, f"{late:.0f} bytes per turn"

    def verify() -> list[Any]:
        found = []
        for run_id in ("run-1", "run-2", f"run-{TURNS // 2}", f"run-{TURNS}"):
            with SqliteRunLog(harness.path, run_id) as log:
                [epoch] = epochs(log)
                receipt = receipt_at(log, epoch.epoch)
                assert receipt is not None
                report = check(served_at(log, epoch.epoch), receipt, encoder=model)
                found.append((receipt.messages.count, len(receipt.messages.new_entries)))
                assert report.verdict == "verified", (run_id, report)
        return found

    found = await anyio.to_thread.run_sync(verify)
    # Turn n sends 2n - 1 messages; from turn 2 on only the previous answer and the new "go"
    # are new since the conversation's previous receipt.
    assert found == [(1, 1), (3, 2), (TURNS - 1, 2), (2 * TURNS - 1, 2)]
