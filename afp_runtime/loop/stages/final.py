"""The ``final`` stage: append the answer to history and close the turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.loop.ending import (
    close_turn,
    emit_run_ended,
    emit_turn_ended,
    exhaust_budget,
    run_outcome,
)
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.output import OutputError
from afp_runtime.loop.stages.output_retry import output_retry
from afp_runtime.messages import Message
from afp_runtime.records import (
    AnyWrite,
    FinalAnswerWrite,
    FinalValueWrite,
    FindingsLedgerWrite,
    HistoryWrite,
    IgnoredToolCallsWrite,
    OutputErrorWrite,
    OutputInvalid,
    StoppedEarlyWrite,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = get_logger()


async def final(
    run: Run, reply: CommittedReply, *, cut_short: bool, settling: bool, retry_output: bool
) -> RunOutcome | None:
    """Close the turn with the reply's text; None when an answer the output schema refuses is
    asked for again instead (``retry_output`` and a retry left; docs/loop.md#typed-answers)."""
    run.begin("settle" if settling else "final")
    writes: list[AnyWrite] = []
    if cut_short:
        exhaust_budget(run, reply, action="cut-short")
    # An extension may file rows from the answer and peel what it declared from what is
    # delivered (the call-model bundle keeps the raw reply).
    delivered = reply.content
    wire_rows: list[Any] = []
    for extension in run.extensions:
        delivered, filed = extension.answer(delivered, run.at(), run.state.history)
        wire_rows += run.report(filed)
    wire_rows += run.take_rows()
    decoded = run.d.output.decode(delivered) if run.d.output is not None else None
    if decoded is not None and decoded[1] is not None and retry_output:
        turn_now = run.state.conv.open_turn
        assert turn_now is not None and run.d.output is not None
        if turn_now.output_retries < run.d.output.retries:
            await output_retry(run, delivered, decoded[1], rows=wire_rows, settling=settling)
            return None
    items, appended = run.append_history([Message(role="assistant", content=delivered)])
    writes.append(HistoryWrite(verb="append", value=appended))
    writes.append(FinalAnswerWrite(value=delivered))
    final_value: Any = msgspec.UNSET
    output_error: OutputError | None = None
    if decoded is not None:
        value, problem = decoded
        if problem is None:
            final_value = value
            writes.append(FinalValueWrite(value=value))
        else:
            turn_now = run.state.conv.open_turn
            assert turn_now is not None
            error = OutputError(
                kind="output-invalid", problem=problem, attempts=turn_now.output_retries + 1
            )
            output_error = error
            writes.append(OutputErrorWrite(value=msgspec.to_builtins(error)))
            run.emit(OutputInvalid(attempt=error.attempts, problem=problem, retrying=False))
    if wire_rows:
        writes.append(FindingsLedgerWrite(verb="append", value=wire_rows))
    if run.state.stopped_early is not None:
        writes.append(StoppedEarlyWrite(value=run.state.stopped_early))
    if reply.tool_calls and not cut_short:
        # Calls on the wrap-up call are recorded, never dispatched.
        ignored = [{"toolCallId": c.id, "toolName": c.name} for c in reply.tool_calls]
        writes.append(IgnoredToolCallsWrite(value=ignored))
    turn = await close_turn(
        run,
        "answered",
        writes=writes,
        items=items,
        ledger=wire_rows,
        route="final",
        answer=delivered,
    )
    emit_run_ended(run, "answered", answer=delivered)
    emit_turn_ended(run, turn, "answered", answer=delivered)
    log.info("iteration", route="final", epochs=run.state.epochs)
    return run_outcome(
        run,
        "answered",
        final_answer=delivered,
        final_value=final_value,
        output_error=output_error,
    )
