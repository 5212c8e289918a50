"""A batch that asks the person pauses the turn (docs/host.md#pausing-a-turn,
docs/host.md#check-ins): one bundle, the questions, the turn ``paused`` and the run ended, in
one ``synchronous=FULL`` transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.extensions import Ask
from afp_runtime.loop.ending import emit_run_ended, end_run, ended_early, run_outcome
from afp_runtime.loop.outcomes import RunOutcome
from afp_runtime.messages import Message
from afp_runtime.records import (
    AnyWrite,
    FindingsLedgerWrite,
    HistoryWrite,
    PendingBatch,
    PendingBatchWrite,
    QuestionRow,
    ToolResultsWrite,
    TurnPaused,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = get_logger()


async def pause(
    run: Run,
    *,
    kind: str,
    waiting: Sequence[str],
    asks: Sequence[Ask],
    messages: Sequence[Message] = (),
    results: Sequence[dict[str, Any]] = (),
    ledger: Sequence[Any] = (),
    keep_questions: tuple[str, ...] = (),
    outcomes: dict[str, Any] | None = None,
    repeats: dict[str, int] | None = None,
) -> RunOutcome:
    """Commit the pause (docs/host.md#pausing-a-turn): one bundle, the questions, the turn
    ``paused``, the run ended — one ``synchronous=FULL`` transaction in every durability mode."""
    questions = _questions(run, asks)
    # Questions of the batch already closed (approvals answered before a zone answer made
    # the batch ask again) stay in it, so their answers still count at the next settle.
    question_ids = (*keep_questions, *(q.question_id for q in questions))
    batch = PendingBatch(
        question_ids=question_ids,
        tool_call_ids=tuple(waiting),
        kind=kind,
        outcomes=dict(outcomes or {}),
    )
    items, appended = run.append_history(messages)
    wire_rows = [*ledger, *run.take_rows()]
    open_turn = msgspec.structs.replace(
        ended_early(run, run.turn()),
        status="paused",
        next_iteration=run.state.iteration,
        pending_batch=batch,
    )
    if repeats is not None:
        open_turn = msgspec.structs.replace(open_turn, repeats=repeats)
    state = run.checkpoint(
        msgspec.structs.replace(
            run.state.conv,
            open_turn=open_turn,
            ledger_count=run.state.conv.ledger_count + len(wire_rows),
        )
    )
    writes: list[AnyWrite] = []
    if messages:
        writes.append(HistoryWrite(verb="append", value=appended))
    if results:
        writes.append(ToolResultsWrite(value=list(results)))
    if wire_rows:
        writes.append(FindingsLedgerWrite(verb="append", value=wire_rows))
    writes.append(
        PendingBatchWrite(
            value={"questionIds": list(question_ids), "toolCallIds": list(waiting)},
        )
    )
    await end_run(
        run,
        "paused",
        bundles=[run.bundle(writes)],
        conversation=state,
        items=items,
        ledger=wire_rows,
        questions=questions,
    )
    kinds = sorted({q.kind for q in questions})
    run.emit(TurnPaused(question_ids=[q.question_id for q in questions], kinds=kinds), stage=False)
    log.info("turn paused", questions=len(questions), kinds=kinds)
    emit_run_ended(run, "paused")
    return run_outcome(run, "paused")


def _questions(run: Run, asks: Sequence[Ask]) -> list[QuestionRow]:
    """The question rows of the batch's asks, asked now."""
    now = run.now()
    return [
        QuestionRow(
            question_id=run.ids.question_id(),
            agent_id=run.agent_id,
            message_id=run.message_id,
            run_id=run.run_id,
            turn=run.state.conv.turn,
            kind=ask_kind,  # type: ignore[arg-type]
            prompt=prompt,
            tool_call_ids=call_ids,
            asked_at_ms=now,
            detail=detail,
        )
        for ask_kind, prompt, call_ids, detail in asks
    ]
