"""The ``call-model`` stage: send the encoded bytes, retry in-stage, commit reply or failure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.errors import ModelCallError
from afp_runtime.loop.ending import stop_turn
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.spend import account, report_call, spend_of_call
from afp_runtime.messages import (
    ModelRequest,
    Usage,
)
from afp_runtime.models import EncodedRequest, ReplyDelta, send_with_retries
from afp_runtime.records import (
    AnyWrite,
    CallCostWrite,
    CallFailureWrite,
    CostSpent,
    ModelDelta,
    ModelEnded,
    ModelFailed,
    ModelRetry,
    ModelStarted,
    ReplyWrite,
    RunUsageWrite,
    Txn,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


# The first stall waits this long; each further stall doubles it, up to the cap.
STALL_BASE_MS = 60_000
STALL_CAP_MS = 3_600_000


async def call_model(
    run: Run, request: ModelRequest, encoded: EncodedRequest | None
) -> CommittedReply | RunOutcome:
    """Send the request, retrying in the stage; returns the committed reply, or the run's
    outcome when the call failed (the turn stalls or is held)."""
    run.begin("call-model")
    epoch = run.state.iteration
    if not run.unheard():
        run.emit(
            ModelStarted(
                epoch=epoch,
                provider=run.d.model.provider,
                model=run.d.model.model,
                system_chars=len(request.system),
                message_count=len(request.messages),
                request_only_count=len(run.state.served["requestOnly"]),
                tool_count=len(request.tools),
            )
        )
    started = run.now()
    deltas = _DeltaEvents(run, epoch)

    def on_retry(attempt: int, exc: ModelCallError, wait_s: float) -> None:
        deltas.next_attempt(attempt + 1)
        run.emit(
            ModelRetry(
                epoch=epoch,
                attempt=attempt,
                error_kind=exc.error_kind,
                wait_ms=round(wait_s * 1000),
                status=exc.status if exc.status is not None else msgspec.UNSET,
            )
        )

    try:
        reply, failed = await send_with_retries(
            run.d.model,
            encoded if encoded is not None else request,  # type: ignore[arg-type]
            sleep=run.clock.sleep,
            random=run.rng.random,
            policy=run.d.retry,
            on_retry=on_retry,
            on_delta=deltas,
        )
    except ModelCallError as exc:
        return await _call_failed(run, exc)
    committed = CommittedReply(
        content=reply.content,
        tool_calls=reply.tool_calls,
        usage=reply.usage,
        stop_reason=reply.stop_reason,
        attempts=len(failed) + 1,
    )
    await _commit_reply(run, committed, started)
    return committed


class _DeltaEvents:
    """The stage's ``on_delta``: each fragment becomes a ``model.delta`` event of the epoch's
    current send (docs/loop.md#streaming-replies). Nothing is committed. With no sink listening a
    fragment is only numbered, as every unheard event is (``Run.unheard``), so no payload is
    built and a sink added mid-stream hears the rest of it with the ids it would have had."""

    __slots__ = ("attempt", "epoch", "index", "run")

    def __init__(self, run: Run, epoch: int) -> None:
        self.run = run
        self.epoch = epoch
        self.attempt = 1
        self.index = 0

    def next_attempt(self, attempt: int) -> None:
        """A retry is about to send: its fragments count from index 0 again."""
        self.attempt = attempt
        self.index = 0

    def __call__(self, delta: ReplyDelta) -> None:
        index = self.index
        self.index = index + 1
        if self.run.unheard():
            return
        unset = msgspec.UNSET
        self.run.emit(
            ModelDelta(
                epoch=self.epoch,
                attempt=self.attempt,
                index=index,
                text=delta.text or unset,
                tool_call_index=unset if delta.tool_call_index is None else delta.tool_call_index,
                tool_call_id=unset if delta.tool_call_id is None else delta.tool_call_id,
                tool_name=unset if delta.tool_name is None else delta.tool_name,
                arguments=delta.arguments or unset,
            )
        )


async def _commit_reply(run: Run, committed: CommittedReply, started: int) -> None:
    """Commit the reply with the run's usage and the call's cost, then report it."""
    epoch = run.state.iteration
    usage = committed.usage or Usage()
    run.state.run_usage = run.state.run_usage + usage
    # What the next window visit measures (docs/window.md#measurement): this call's usage, or None.
    run.state.last_usage = committed.usage
    run.state.usage_missing = committed.usage is None
    writes: list[AnyWrite] = [
        ReplyWrite(value=msgspec.to_builtins(committed)),
        RunUsageWrite(value=run.state.run_usage),
    ]
    # Priced on the receipt's basis: the model the request named (docs/cost.md#figures).
    spend = spend_of_call(run, committed.usage, run.d.model.model)
    conv = msgspec.structs.replace(
        run.state.conv,
        usage_totals=run.state.conv.usage_totals + usage,
        open_turn=msgspec.structs.replace(
            run.turn(), last_usage=committed.usage, usage_missing=run.state.usage_missing
        ),
    )
    if spend is not None:
        conv = account(run, spend, conv)
        writes.append(CallCostWrite(value=msgspec.to_builtins(spend.call)))
    state = run.checkpoint(conv)
    bundle = run.bundle(writes)
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[bundle], conversation=state))
    if not run.unheard():
        run.emit(
            ModelEnded(
                epoch=epoch,
                stop_reason=committed.stop_reason,
                tool_call_count=len(committed.tool_calls),
                content_chars=len(committed.content),
                duration_ms=run.now() - started,
                attempts=committed.attempts,
                usage=usage,
            )
        )
    if spend is not None:
        head = CostSpent(
            epoch=epoch,
            provider=run.d.model.provider,
            model=spend.call.model,
            usage=committed.usage if committed.usage is not None else msgspec.UNSET,
        )
        report_call(run, spend, head)


async def _call_failed(run: Run, exc: ModelCallError) -> RunOutcome:
    now = run.now()
    turn = run.state.conv.open_turn
    assert turn is not None
    failure: dict[str, Any] = {
        "errorKind": exc.error_kind,
        "attempts": len(exc.attempts) or 1,
        "message": exc.message,
    }
    if exc.status is not None:
        failure["status"] = exc.status
    run.emit(
        ModelFailed(
            epoch=run.state.iteration,
            error_kind=exc.error_kind,
            attempts=failure["attempts"],
            message=exc.message,
            status=exc.status if exc.status is not None else msgspec.UNSET,
            retryable=exc.retryable,
        )
    )
    retry_at = None
    if exc.retryable:
        retry_at = now + min(STALL_CAP_MS, STALL_BASE_MS * 2**turn.stalls)
        if exc.retry_after_s is not None:
            retry_at = now + round(exc.retry_after_s * 1000)
    bundle = run.bundle(
        [
            CallFailureWrite(value=failure),
            RunUsageWrite(value=run.state.run_usage),
        ]
    )
    return await stop_turn(
        run, error_kind=exc.error_kind, error=exc.message, retry_at_ms=retry_at, bundles=[bundle]
    )
