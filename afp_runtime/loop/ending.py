"""How a run closes an iteration or ends (docs/loop.md#the-stage-order): the closing commits of
an iteration the turn goes on from, of a turn that ends here (answered, halted), of a turn
stopped for now (stalled, held), the events that report them and the run's outcome.

Each function takes the run and the values the stage produced (its writes, the open turn as the
stage changed it) and commits them; none is handed loose keyword changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime._secrets import redact
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.output import OutputError
from afp_runtime.messages import Usage
from afp_runtime.records import (
    AnyWrite,
    BudgetExhausted,
    CommitBundle,
    ConversationState,
    CostFigures,
    FindingsLedgerWrite,
    InboxUpdate,
    Item,
    IterationEnded,
    IterationWrite,
    OpenTurn,
    QuestionRow,
    RunEnd,
    RunEnded,
    RunStatus,
    TurnEnded,
    TurnHeld,
    TurnStalled,
    Txn,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run

log = get_logger()

# Why a run that did not answer has no answer, in words (run.ended's ``reason``).
_RUN_REASONS = {
    "paused": "the turn waits on a question to the person",
    "stalled": "the model call failed for now; a retry is scheduled",
    "held": "the turn is held for an operator",
    "cancelled": "the run was cut off by a shutdown; the next start recovers the turn",
}

replace = msgspec.structs.replace


def exhaust_budget(
    run: Run, reply: CommittedReply, *, action: Literal["wrap-up", "cut-short"]
) -> None:
    """The step budget ran out with calls pending: set ``stoppedEarly`` and emit
    ``budget.exhausted`` (``wrap-up``: one more call with tools withheld)."""
    stopped: dict[str, Any] = {
        "reason": "max-iterations",
        "iteration": run.state.iteration,
        "pendingToolCalls": len(reply.tool_calls),
        "answerWasEmpty": not reply.content,
        "wrappedUp": action == "wrap-up",
    }
    if action == "cut-short":
        stopped["action"] = action
    run.state.stopped_early = stopped
    run.emit(
        BudgetExhausted(
            iteration=run.state.iteration,
            max_iterations=run.d.max_iterations,
            pending_tool_calls=len(reply.tool_calls),
            action=action,
        )
    )


def ended_early(run: Run, turn: OpenTurn) -> OpenTurn:
    """The open turn of a run that ends without the turn (a pause, a stall, a hold): its epochs
    and usage join the turn's (``turn.ended`` reports the whole turn)."""
    before = turn.usage_before or Usage()
    return replace(
        turn,
        epochs_before=turn.epochs_before + run.state.epochs,
        usage_before=before + run.state.run_usage,
    )


async def stop_turn(
    run: Run,
    *,
    error_kind: str,
    error: str,
    retry_at_ms: int | None = None,
    bundles: Sequence[CommitBundle] = (),
) -> RunOutcome:
    """End the run with the turn stalled (``retry_at_ms`` given) or held, in one commit.

    A held turn is never retried automatically; a stalled one gets a retry run when due.
    """
    turn = run.turn()
    # Every stopped turn's error is stored, listed and shown: no credential in it
    # (docs/host.md#secrets-in-errors-and-logs).
    error = redact(error)
    since = turn.stalled_since_ms if turn.stalled_since_ms is not None else run.now()
    if retry_at_ms is not None and retry_at_ms - since > run.d.max_stall_s * 1000:
        # docs/host.md#stalled-and-held-turns: past max_stall_s a stalled turn is held for an
        # operator.
        error = (
            f"the turn stayed stalled longer than {run.d.max_stall_s:g} s "
            f"(last failure {error_kind}: {error})"
        )
        error_kind = "stall-limit"
        retry_at_ms = None
    status: Literal["stalled", "held"] = "held" if retry_at_ms is None else "stalled"
    open_turn = replace(ended_early(run, turn), status=status, error_kind=error_kind, error=error)
    if retry_at_ms is not None:
        open_turn = replace(
            open_turn, stalls=turn.stalls + 1, retry_at_ms=retry_at_ms, stalled_since_ms=since
        )
    state = run.checkpoint(replace(run.state.conv, open_turn=open_turn))
    await end_run(
        run, status, bundles=bundles, conversation=state, error_kind=error_kind, error=error
    )
    log.warning("turn stopped", status=status, error_kind=error_kind, error=error)
    event: TurnStalled | TurnHeld = (
        TurnStalled(error_kind=error_kind, retry_at_ms=retry_at_ms, stalls=open_turn.stalls)
        if status == "stalled"
        else TurnHeld(error_kind=error_kind, message=error, run_id=run.run_id)
    )
    run.emit(event, stage=False)
    emit_run_ended(run, status, error_kind=error_kind, error=error)
    return run_outcome(run, status, error_kind=error_kind, error=error)


async def next_iteration(
    run: Run,
    writes: Sequence[AnyWrite],
    *,
    items: Sequence[Item],
    ledger: Sequence[Any],
    turn: OpenTurn,
) -> int:
    """The closing commit of an iteration the turn goes on from (tool calls, an output
    retry): ``writes``, then the ledger rows and the next iteration, with the checkpoint whose
    open turn is ``turn`` (as the stage changed it) at the next iteration; returns the
    iteration it closed."""
    closed = run.advance()
    state = run.checkpoint(
        replace(
            run.state.conv,
            open_turn=replace(turn, next_iteration=run.state.iteration),
            ledger_count=run.state.conv.ledger_count + len(ledger),
        )
    )
    writes = list(writes)
    if ledger:
        writes.append(FindingsLedgerWrite(verb="append", value=list(ledger)))
    writes.append(IterationWrite(value=run.state.iteration))
    await run.committer.stage(
        Txn(
            agent_id=run.agent_id,
            bundles=[run.bundle(writes, iteration=closed)],
            items=list(items),
            conversation=state,
            ledger=list(ledger),
        ),
        closes=True,
    )
    return closed


async def close_turn(
    run: Run,
    status: Literal["answered", "halted"],
    *,
    writes: Sequence[AnyWrite],
    items: Sequence[Item],
    ledger: Sequence[Any],
    route: str,
    tool_call_count: int = 0,
    answer: str | None = None,
    error_kind: str | None = None,
    error: str | None = None,
) -> OpenTurn:
    """The closing commit of a turn that ends here (answered or halted): the stage's
    bundle, the checkpoint without an open turn, the run's end, then ``iteration.ended``;
    returns the turn as it was open, for ``turn.ended``."""
    turn = run.turn()
    state = run.checkpoint(
        replace(
            run.state.conv,
            open_turn=None,
            last_run_id=run.run_id,
            ledger_count=run.state.conv.ledger_count + len(ledger),
        )
    )
    await end_run(
        run,
        status,
        bundles=[run.bundle(writes)],
        conversation=state,
        items=items,
        ledger=ledger,
        answer=answer,
        error_kind=error_kind,
        error=error,
    )
    run.emit(
        IterationEnded(iteration=run.state.iteration, route=route, tool_call_count=tool_call_count),
        stage=False,
    )
    return turn


async def end_run(
    run: Run,
    status: Literal["answered", "halted", "paused", "stalled", "held"],
    *,
    bundles: Sequence[CommitBundle],
    conversation: ConversationState,
    items: Sequence[Item] = (),
    ledger: Sequence[Any] = (),
    questions: Sequence[QuestionRow] = (),
    answer: str | None = None,
    error_kind: str | None = None,
    error: str | None = None,
) -> None:
    """The run's closing commit, for every way a run ends with its turn settled for now
    (answered, paused, stalled, held): its last bundles, the checkpoint, the run's end and
    the inbox status, in one ``synchronous=FULL`` transaction in every durability mode."""
    await run.committer.stage(
        Txn(
            agent_id=run.agent_id,
            bundles=list(bundles),
            items=list(items),
            conversation=conversation,
            ledger=list(ledger),
            questions=list(questions),
            run_end=RunEnd(
                run_id=run.run_id,
                status=status,
                ended_at_ms=run.now(),
                usage=run.state.run_usage,
                answer=answer,
                error_kind=error_kind,
                error=error,
                cost=run.state.run_cost if run.d.pricing else None,
            ),
            inbox=[InboxUpdate(message_id=run.message_id, status=status)],
            full=True,
        ),
        closes=True,
    )


def emit_turn_ended(
    run: Run,
    turn: OpenTurn,
    status: str,
    *,
    answer: str | None = None,
    error_kind: str | None = None,
    error: str | None = None,
) -> None:
    """``turn.ended``: per turn (docs/host.md#event-catalogue), this run's figures plus those
    of the turn's earlier runs."""
    state = run.state
    ended = TurnEnded(
        turn=state.conv.turn,
        message_id=run.message_id,
        status=status,
        runs=turn.runs,
        iterations=state.iteration,
        epochs=turn.epochs_before + state.epochs,
        usage=(turn.usage_before or Usage()) + state.run_usage,
        duration_ms=max(run.now() - turn.started_at_ms, 0) if turn.started_at_ms else 0,
        cost=CostFigures.of(turn.spent) if turn.spent is not None else msgspec.UNSET,
        stopped_early=(state.stopped_early if state.stopped_early is not None else msgspec.UNSET),
        answer=answer if answer is not None else msgspec.UNSET,
        error_kind=error_kind if error_kind is not None else msgspec.UNSET,
        error=error if error_kind is not None else msgspec.UNSET,
    )
    run.emit(ended, stage=False)


def emit_run_ended(
    run: Run,
    status: str,
    *,
    answer: str | None = None,
    error_kind: str | None = None,
    error: str | None = None,
) -> None:
    """``run.ended``: with the answer, or the reason there is none
    (docs/host.md#event-catalogue)."""
    unset = msgspec.UNSET
    held = answer is None and error_kind is not None
    ended = RunEnded(
        run_id=run.run_id,
        status=status,
        epochs=run.state.epochs,
        usage=run.state.run_usage,
        answer=answer if answer is not None else unset,
        reason=_RUN_REASONS.get(status, status) if answer is None else unset,
        error_kind=error_kind if held and error_kind is not None else unset,
        error=error if held else unset,
    )
    run.emit(ended, stage=False)


def run_outcome(
    run: Run,
    status: RunStatus,
    *,
    final_answer: str | None = None,
    error_kind: str | None = None,
    error: str | None = None,
    final_value: Any = msgspec.UNSET,
    output_error: OutputError | None = None,
) -> RunOutcome:
    """The run's outcome, as its caller gets it."""
    return RunOutcome(
        run_id=run.run_id,
        message_id=run.message_id,
        kind=run.kind,
        turn=run.state.conv.turn,
        status=status,
        epochs=run.state.epochs,
        usage=run.state.run_usage,
        iteration=run.state.iteration,
        cost=run.state.run_cost if run.d.pricing else None,
        final_answer=final_answer,
        error_kind=error_kind,
        error=error,
        final_value=final_value,
        output_error=output_error,
    )
