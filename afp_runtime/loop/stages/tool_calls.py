"""The ``tool-calls`` stage (and ``settle`` of a batch): plan, journal, dispatch, commit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from afp_runtime.loop.outcomes import CommittedReply
from afp_runtime.loop.route import unique_call_ids
from afp_runtime.loop.stages._findings import ledger_writes, peel_batch
from afp_runtime.messages import (
    Message,
    ToolCall,
)
from afp_runtime.records import (
    JournalRow,
    Txn,
    Write,
)
from afp_runtime.tools import (
    ToolContext,
    ToolOutcome,
    interrupted_text,
    plan_batch,
    run_batch,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = structlog.get_logger()

_outcome_encoder = msgspec.msgpack.Encoder()
_outcome_decoder = msgspec.msgpack.Decoder(ToolOutcome)


async def tool_calls(run: Run, reply: CommittedReply, *, settling: bool) -> None:
    run.begin("settle" if settling else "tool-calls")
    calls = unique_call_ids(reply.tool_calls, run.used_call_ids)
    # The assistant message keeps the model's arguments verbatim; tools see them peeled.
    assistant = Message(role="assistant", content=reply.content, tool_calls=calls)
    dispatched, ledger = peel_batch(run, calls)
    journal = await run.store.journal(run.agent_id, run.message_id) if settling else {}
    planned = plan_batch(dispatched, run.d.tools_by_name)
    reused: dict[str, ToolOutcome] = {}
    settled: dict[str, str] = {}
    to_run = []
    for plan in planned:
        call_id = plan.call.id
        entry = journal.get(call_id)
        if settling and entry is not None and entry.finished is not None:
            reused[call_id] = _outcome_decoder.decode(entry.finished)
            settled[call_id] = "journal"
        elif settling and entry is not None and entry.started:
            tool = run.d.tools_by_name.get(plan.call.name)
            if tool is not None and tool.idempotent:
                to_run.append(plan)
                settled[call_id] = "rerun"
            else:
                reused[call_id] = interrupted_outcome(plan.call)
                settled[call_id] = "note"
        else:
            to_run.append(plan)
            if settling:
                settled[call_id] = "dispatched"
    outcomes = {o.tool_call_id: o for o in await _dispatch(run, to_run, batch_size=len(calls))}
    outcomes.update(reused)
    ordered = [outcomes[plan.call.id] for plan in planned]
    results = []
    for outcome in ordered:
        result: dict[str, Any] = {
            "toolCallId": outcome.tool_call_id,
            "toolName": outcome.tool_name,
            "status": outcome.status,
            "resultChars": outcome.result_chars,
        }
        if outcome.duration_ms is not None:
            result["durationMs"] = outcome.duration_ms
        if outcome.truncated:
            result["truncated"] = True
        if outcome.tool_call_id in settled:
            result["settled"] = settled[outcome.tool_call_id]
        results.append(result)
    items, appended = run.append_history([assistant, *(o.message() for o in ordered)])
    closed = run.iteration
    run.iteration += 1
    wire_rows = ledger_writes(ledger)
    state = run.checkpoint(
        open_turn=run.open_turn_with(next_iteration=run.iteration),
        ledger_count=run.conv.ledger_count + len(wire_rows),
    )
    writes = [
        Write(key="history", verb="append", value=appended),
        Write(key="toolResults", verb="set", value=results),
    ]
    if wire_rows:
        writes.append(Write(key="findingsLedger", verb="append", value=wire_rows))
    writes.append(Write(key="iteration", verb="set", value=run.iteration))
    bundle = run.bundle(writes, iteration=closed)
    await run.committer.stage(
        Txn(
            agent_id=run.agent_id,
            bundles=[bundle],
            items=items,
            conversation=state,
            ledger=wire_rows,
        ),
        closes=True,
    )
    run.emit(
        "iteration.ended",
        {"iteration": closed, "route": "tool-calls", "toolCallCount": len(calls)},
        stage=False,
    )
    log.info("iteration", route="tool-calls", tool_calls=len(calls), epochs=run.epochs)


async def _dispatch(
    run: Run, planned: Sequence[Any], *, batch_size: int
) -> tuple[ToolOutcome, ...]:
    if not planned:
        return ()
    turn = run.conv.turn
    journals = run.committer.journals

    async def on_group_start(group: Sequence[Any]) -> None:
        if not journals:
            return
        rows = [
            JournalRow(
                agent_id=run.agent_id,
                message_id=run.message_id,
                tool_call_id=p.call.id,
                state="started",
                run_id=run.run_id,
            )
            for p in group
            if p.runnable
        ]
        if rows:
            # "started" means "may have run": it must be on disk before any tool runs.
            await run.store.commit(Txn(agent_id=run.agent_id, journal=rows, full=True))

    def on_call_started(plan: Any, index: int, size: int, concurrent: bool) -> None:
        run.emit(
            "tool.started",
            {
                "toolCallId": plan.call.id,
                "toolName": plan.call.name,
                "callIndex": index,
                "batchSize": batch_size,
                "concurrent": concurrent,
            },
        )

    async def on_call_finished(outcome: ToolOutcome, index: int) -> None:
        if journals:
            row = JournalRow(
                agent_id=run.agent_id,
                message_id=run.message_id,
                tool_call_id=outcome.tool_call_id,
                state="finished",
                run_id=run.run_id,
                outcome=_outcome_encoder.encode(outcome),
            )
            await run.store.commit(Txn(agent_id=run.agent_id, journal=[row]))
        run.hooks.after_tool_finished(outcome.tool_call_id, run.iteration)
        payload: dict[str, Any] = {
            "toolCallId": outcome.tool_call_id,
            "toolName": outcome.tool_name,
            "callIndex": index,
            "status": outcome.status,
            "durationMs": outcome.duration_ms or 0,
            "resultChars": outcome.result_chars,
        }
        if outcome.truncated:
            payload["truncated"] = True
        run.emit("tool.ended", payload)

    def progress_sink(call_id: str) -> Callable[[Any], None]:
        def sink(payload: Any) -> None:
            run.emit("tool.progress", {"toolCallId": call_id, "payload": payload})

        return sink

    def context_for(plan: Any) -> ToolContext:
        return ToolContext(
            tool_call_id=plan.call.id,
            tool_name=plan.call.name,
            agent_id=run.agent_id,
            run_id=run.run_id,
            turn=turn,
            iteration=run.iteration,
            clock=run.clock,
            on_progress=progress_sink(plan.call.id),
        )

    return await run_batch(
        planned,
        context_for=context_for,
        clock=run.clock,
        max_concurrent=run.d.max_concurrent_tools,
        on_group_start=on_group_start,
        on_call_started=on_call_started,
        on_call_finished=on_call_finished,
    )


def interrupted_outcome(call: ToolCall) -> ToolOutcome:
    """The outcome of a non-idempotent call cut off by a crash: never run again."""
    content = interrupted_text(call.name)
    return ToolOutcome(
        tool_call_id=call.id,
        tool_name=call.name,
        status="interrupted",
        content=content,
        result_chars=len(content),
    )
