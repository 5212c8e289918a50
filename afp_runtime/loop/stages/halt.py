"""The ``halt`` stage: a budget or a permission rule stops the turn before any further tool or
model call (docs/cost.md#budgets, docs/permissions.md#halt).

The reply's calls are answered with a not-dispatched observation saying why, so the
conversation stays well formed for the next turn; there is no wrap-up call and no answer. The
turn closes with status ``halted``, its error kind and words naming what stopped it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from afp_runtime._logging import get_logger
from afp_runtime.loop.ending import close_turn, emit_run_ended, emit_turn_ended, run_outcome
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.route import unique_call_ids
from afp_runtime.messages import Message
from afp_runtime.records import (
    AnyWrite,
    FindingsLedgerWrite,
    HaltedWrite,
    HistoryWrite,
    ToolResultsWrite,
)
from afp_runtime.tools import halted_text, unrun_outcome

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run

log = get_logger()


async def halt(
    run: Run,
    reply: CommittedReply | None,
    *,
    error_kind: str,
    error: str,
    settling: bool = False,
    rows: Sequence[Any] = (),
) -> RunOutcome:
    """Close the turn ``halted``: the reply (if any) with its calls answered not-run; ``rows``
    are ledger rows the batch filed before the halt (a permission decision, declarations)."""
    run.begin("settle" if settling else "halt")
    messages: list[Message] = []
    results = []
    if reply is not None and (reply.content or reply.tool_calls):
        calls = unique_call_ids(reply.tool_calls, run.state.used_call_ids)
        messages.append(Message(role="assistant", content=reply.content, tool_calls=calls))
        for call in calls:
            outcome = unrun_outcome(call, "not-dispatched", halted_text(call.name, error_kind))
            messages.append(outcome.message())
            results.append(
                {
                    "toolCallId": outcome.tool_call_id,
                    "toolName": outcome.tool_name,
                    "status": outcome.status,
                    "resultChars": outcome.result_chars,
                }
            )
    writes: list[AnyWrite] = []
    items, appended = run.append_history(messages)
    if messages:
        writes.append(HistoryWrite(verb="append", value=appended))
    if results:
        writes.append(ToolResultsWrite(value=results))
    wire_rows = [*rows, *run.take_rows()]
    if wire_rows:
        writes.append(FindingsLedgerWrite(verb="append", value=wire_rows))
    writes.append(HaltedWrite(value={"errorKind": error_kind, "error": error}))
    turn = await close_turn(
        run,
        "halted",
        writes=writes,
        items=items,
        ledger=wire_rows,
        route="halt",
        tool_call_count=len(results),
        error_kind=error_kind,
        error=error,
    )
    log.warning("turn halted", error_kind=error_kind, error=error)
    emit_run_ended(run, "halted", error_kind=error_kind, error=error)
    emit_turn_ended(run, turn, "halted", error_kind=error_kind, error=error)
    return run_outcome(run, "halted", error_kind=error_kind, error=error)
