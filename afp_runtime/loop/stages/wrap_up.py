"""The ``wrap-up`` stage: the step budget ran out with calls pending; the next call has no tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from afp_runtime.loop.ending import exhaust_budget
from afp_runtime.loop.outcomes import CommittedReply
from afp_runtime.records import (
    IterationEnded,
    IterationWrite,
    StoppedEarlyWrite,
    Txn,
    WrapUpAskedWrite,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


async def wrap_up(run: Run, reply: CommittedReply, *, settling: bool) -> None:
    """Record the cut and close the iteration: the next call is made without tools."""
    run.begin("settle" if settling else "wrap-up")
    exhaust_budget(run, reply, action="wrap-up")
    run.state.wrap_up_asked = True
    closed = run.advance()
    open_turn = msgspec.structs.replace(
        run.turn(),
        next_iteration=run.state.iteration,
        wrap_up_asked=True,
        stopped_early=run.state.stopped_early,
    )
    state = run.checkpoint(msgspec.structs.replace(run.state.conv, open_turn=open_turn))
    bundle = run.bundle(
        [
            WrapUpAskedWrite(value=True),
            StoppedEarlyWrite(value=run.state.stopped_early),
            IterationWrite(value=run.state.iteration),
        ],
        iteration=closed,
    )
    await run.committer.stage(
        Txn(agent_id=run.agent_id, bundles=[bundle], conversation=state), closes=True
    )
    run.emit(
        IterationEnded(iteration=closed, route="wrap-up", tool_call_count=len(reply.tool_calls)),
        stage=False,
    )
