"""The ``call-model`` stage: send the encoded bytes, retry in-stage, commit reply or failure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.errors import ModelCallError
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.spend import account, report_call, spend_of_call
from afp_runtime.messages import (
    ModelRequest,
    Usage,
)
from afp_runtime.models import EncodedRequest, send_with_retries
from afp_runtime.records import (
    Txn,
    Write,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


# The first stall waits this long; each further stall doubles it, up to the cap.
STALL_BASE_MS = 60_000
STALL_CAP_MS = 3_600_000


async def call_model(
    run: Run, request: ModelRequest, encoded: EncodedRequest | None
) -> CommittedReply | RunOutcome:
    run.begin("call-model")
    epoch = run.state.iteration
    run.emit(
        "model.started",
        {
            "epoch": epoch,
            "provider": run.d.model.provider,
            "model": run.d.model.model,
            "systemChars": len(request.system),
            "messageCount": len(request.messages),
            "requestOnlyCount": len(run.state.served["requestOnly"]),
            "toolCount": len(request.tools),
        },
    )
    started = run.now()

    def on_retry(attempt: int, exc: ModelCallError, wait_s: float) -> None:
        payload: dict[str, Any] = {
            "epoch": epoch,
            "attempt": attempt,
            "errorKind": exc.error_kind,
            "waitMs": round(wait_s * 1000),
        }
        if exc.status is not None:
            payload["status"] = exc.status
        run.emit("model.retry", payload)

    try:
        reply, failed = await send_with_retries(
            run.d.model,
            encoded if encoded is not None else request,  # type: ignore[arg-type]
            sleep=run.clock.sleep,
            random=run.rng.random,
            policy=run.d.retry,
            on_retry=on_retry,
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
    usage = reply.usage or Usage()
    run.state.run_usage = run.state.run_usage + usage
    # What the next window visit measures (docs/window.md#measurement): this call's usage, or None.
    run.state.last_usage = reply.usage
    run.state.usage_missing = reply.usage is None
    writes = [
        Write(key="reply", verb="set", value=committed),
        Write(key="runUsage", verb="set", value=run.state.run_usage),
    ]
    # Priced on the receipt's basis: the model the request named (docs/cost.md#figures).
    spend = spend_of_call(run, reply.usage, run.d.model.model)
    changes: dict[str, Any] = {}
    turn_changes: dict[str, Any] = {}
    if spend is not None:
        changes, turn_changes = account(run, spend)
        writes.append(Write(key="callCost", verb="set", value=spend.call))
    state = run.checkpoint(
        usage_totals=run.state.conv.usage_totals + usage,
        open_turn=run.open_turn_with(
            last_usage=reply.usage, usage_missing=run.state.usage_missing, **turn_changes
        ),
        **changes,
    )
    bundle = run.bundle(writes)
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[bundle], conversation=state))
    run.emit(
        "model.ended",
        {
            "epoch": epoch,
            "stopReason": reply.stop_reason,
            "toolCallCount": len(reply.tool_calls),
            "contentChars": len(reply.content),
            "durationMs": run.now() - started,
            "attempts": committed.attempts,
            "usage": msgspec.to_builtins(usage),
        },
    )
    if spend is not None:
        head: dict[str, Any] = {"epoch": epoch, "provider": run.d.model.provider}
        if reply.usage is not None:
            head["usage"] = msgspec.to_builtins(reply.usage)
        report_call(run, spend, head)
    return committed


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
    run.emit("model.failed", {"epoch": run.state.iteration, **failure, "retryable": exc.retryable})
    retry_at = None
    if exc.retryable:
        retry_at = now + min(STALL_CAP_MS, STALL_BASE_MS * 2**turn.stalls)
        if exc.retry_after_s is not None:
            retry_at = now + round(exc.retry_after_s * 1000)
    bundle = run.bundle(
        [
            Write(key="callFailure", verb="set", value=failure),
            Write(key="runUsage", verb="set", value=run.state.run_usage),
        ]
    )
    return await run.stop_turn(
        error_kind=exc.error_kind, error=exc.message, retry_at_ms=retry_at, bundles=[bundle]
    )
