"""The ``output-retry`` stage: the answer did not decode against the agent's output schema and
a retry is left; the answer and the runtime's message saying what was wrong join the history,
and the next iteration asks again (docs/loop.md#typed-answers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.loop.ending import next_iteration
from afp_runtime.loop.output import retry_text
from afp_runtime.messages import Message
from afp_runtime.records import (
    HistoryWrite,
    IterationEnded,
    OutputInvalid,
    OutputRetryWrite,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


async def output_retry(
    run: Run, answer: str, problem: str, *, rows: Sequence[Any], settling: bool
) -> None:
    """Commit the refused answer (as delivered: what extensions peeled is gone, ``rows`` they
    filed from it are kept) and the retry request; the loop goes on."""
    run.begin("settle" if settling else "output-retry")
    turn = run.turn()
    assert run.d.output is not None
    attempt = turn.output_retries + 1
    text = retry_text(problem, attempt, run.d.output.retries)
    items, appended = run.append_history(
        [
            Message(role="assistant", content=answer),
            Message(role="user", content=text),
        ]
    )
    closed = await next_iteration(
        run,
        [
            HistoryWrite(verb="append", value=appended),
            OutputRetryWrite(value={"attempt": attempt, "problem": problem}),
        ],
        items=items,
        ledger=rows,
        turn=msgspec.structs.replace(turn, output_retries=attempt),
    )
    run.emit(OutputInvalid(attempt=attempt, problem=problem, retrying=True))
    run.emit(IterationEnded(iteration=closed, route="output-retry", tool_call_count=0), stage=False)
