"""The ``window`` stage: a pass-through until the window family arrives (one empty bundle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from afp_runtime.records import (
    Txn,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = structlog.get_logger()


async def window(run: Run) -> None:
    # A pass-through until the window family arrives: one bundle with no writes.
    run.begin("window")
    run.emit("iteration.started", {"iteration": run.iteration})
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle([])]))
