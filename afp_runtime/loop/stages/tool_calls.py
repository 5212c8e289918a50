"""The ``tool-calls`` stage and the ``settle`` of a batch: plan, journal, dispatch, commit — or
pause the turn for the person (docs/loop.md#tool-dispatch,
docs/loop.md#tool-calls-in-flight-at-a-crash, docs/host.md#check-ins).

Three ways into one batch core:

* ``tool_calls(run, reply, settling=False)``: a fresh reply's batch.
* ``tool_calls(run, reply, settling=True)``: a reply committed before a crash; the journal
  decides per call (journaled result reused, in-flight call re-run only when idempotent,
  never-started call dispatched).
* ``settle_answers(run, batch)``: the answer run of a paused turn answers the calls the pause
  left waiting, from the closed questions; approved calls are dispatched (through the journal,
  so a crash of the answer run settles them like any other).

A batch that asks the person ends in a **pause** instead of closing its iteration: one bundle
appends the assistant turn (when not committed yet) and the results already produced, sets
``pendingBatch``, and inserts the questions — all in one ``synchronous=FULL`` transaction with
the turn ``paused``. The iteration stays open; the answer run's ``settle`` closes it.

Readings settled here, beyond what docs/loop.md#tool-dispatch states:

* A tool-ask pause commits the results produced so far in call order, leaving out the asking
  call(s) and the calls never started; those are appended by the answer run's ``settle``, in
  call order. So results of one batch may straddle two bundles (the wire formats accept tool
  results in any order after the assistant turn).
* A pre-dispatch pause (approval) commits the assistant turn alone; the calls' pre-decided
  outcomes (unknown tool, invalid arguments) are committed with the rest by ``settle``.
* The result of a tool-ask call answered by the person, or closed without a reply, has status
  ``ok`` and no ``not_dispatched`` marker: the tool ran and asked (docs/loop.md#observations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import CheckpointInvalid
from afp_runtime.extensions import Ask
from afp_runtime.loop.ending import next_iteration, stop_turn
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.route import unique_call_ids
from afp_runtime.loop.stages.call_model import STALL_BASE_MS, STALL_CAP_MS
from afp_runtime.loop.stages.dispatch import read_journal, run_planned
from afp_runtime.loop.stages.halt import halt
from afp_runtime.loop.stages.pause import pause
from afp_runtime.messages import (
    Message,
    ToolCall,
)
from afp_runtime.records import (
    HistoryWrite,
    IterationEnded,
    PendingBatch,
    QuestionRow,
    ToolResultsWrite,
)
from afp_runtime.tools import (
    PlannedCall,
    ToolOutcome,
    approval_prompt,
    declined_text,
    no_reply_text,
    not_dispatched_text,
    observe_batch,
    person_reply_text,
    plan_batch,
    plan_call,
    unrun_outcome,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = get_logger()

_outcome_encoder = msgspec.msgpack.Encoder()
_outcome_decoder = msgspec.msgpack.Decoder(ToolOutcome)


async def tool_calls(run: Run, reply: CommittedReply, *, settling: bool) -> RunOutcome | None:
    """Run a reply's tool batch; returns the run's outcome when the turn pauses, else None."""
    run.begin("settle" if settling else "tool-calls")
    calls = unique_call_ids(reply.tool_calls, run.state.used_call_ids)
    # The assistant message keeps the model's arguments verbatim; tools see them peeled.
    assistant = Message(role="assistant", content=reply.content, tool_calls=calls)
    dispatched: tuple[ToolCall, ...] = calls
    ledger: list[Any] = []
    for extension in run.extensions:
        dispatched, filed = extension.peel(dispatched, run.at(), run.state.history)
        ledger += run.report(filed)
    planned = list(plan_batch(dispatched, run.d.tools_by_name))
    asks: list[Ask] = []
    for extension in run.extensions:
        # Every call an extension decides is decided before anything runs
        # (docs/time.md#deciding-each-call).
        planned, asked = await extension.decide(planned, run.at())
        asks += asked
    for extension in run.extensions:
        stop = extension.halts()
        if stop is not None:
            # docs/permissions.md#halt: nothing of the batch runs and nothing is asked.
            return await halt(
                run, reply, error_kind=stop[0], error=stop[1], settling=settling, rows=ledger
            )
    approvals = [p for p in planned if p.runnable and p.tool is not None and p.tool.check_in]
    asks += [
        ("approval", approval_prompt(p.call.name, _args_json(p.call)), (p.call.id,), None)
        for p in approvals
    ]
    if asks:
        # docs/loop.md#planning-a-batch step 7, docs/time.md#when-the-batch-asks: the whole batch
        # waits, nothing runs first.
        return await pause(
            run,
            kind="approval",
            messages=[assistant],
            waiting=[p.call.id for p in planned],
            asks=asks,
            ledger=ledger,
        )
    journal = await read_journal(run) if settling else None
    outcomes, settled = await run_planned(run, planned, journal, mark_predecided=True)
    short = [outcomes[p.call.id] for p in planned if outcomes[p.call.id].status == "resource"]
    if short:
        return await _stall_short(run, short)
    return await _close_batch(
        run, planned, outcomes, settled, assistant=assistant, ledger=ledger, batch_size=len(calls)
    )


async def settle_answers(run: Run, batch: PendingBatch) -> RunOutcome | None:
    """The answer run's ``settle``: answer every call the paused batch left waiting (docs/host.md
    docs/host.md#answering-a-question, docs/host.md#abandoning-a-question); returns the run's
    outcome when an approved call pauses again, else None."""
    run.begin("settle")
    questions = await run.store.questions(run.agent_id, question_ids=batch.question_ids)
    by_call: dict[str, QuestionRow] = {}
    for question in questions:
        for call_id in question.tool_call_ids:
            by_call[call_id] = question
    calls = _waiting_calls(run, batch.tool_call_ids)
    timed: dict[str, PlannedCall] = {}
    for extension in run.extensions:
        decided = await extension.settle(calls, questions, run.at())
        if decided.asks:
            # The extension asks again (a zone answer read once more, asked as a range).
            return await pause(
                run,
                kind="approval",
                waiting=list(batch.tool_call_ids),
                asks=decided.asks,
                keep_questions=decided.kept_question_ids,
            )
        timed.update(decided.planned)
    planned: list[PlannedCall] = []
    for call in calls:
        found = by_call.get(call.id)
        if batch.kind == "approval":
            plan = timed.get(call.id) or plan_call(call, run.d.tools_by_name)
            if found is not None and found.kind == "approval" and not _approved(found):
                plan = PlannedCall(call=call, tool=plan.tool, outcome=_declined(call))
            planned.append(plan)
        elif call.id in batch.outcomes:
            # Produced before the pause (alongside the asking call, or at planning).
            done = msgspec.convert(batch.outcomes[call.id], ToolOutcome)
            planned.append(PlannedCall(call=call, outcome=done))
        elif found is not None:
            planned.append(PlannedCall(call=call, outcome=_person_outcome(call, found)))
        else:
            # A call after the asking one that never started (docs/host.md#answering-a-question).
            planned.append(PlannedCall(call=call, outcome=_not_dispatched(call)))
    journal = await read_journal(run)
    outcomes, settled = await run_planned(run, planned, journal, mark_predecided=False)
    return await _close_batch(
        run, planned, outcomes, settled, assistant=None, ledger=[], batch_size=len(calls)
    )


# -- the batch core -------------------------------------------------------------------------


async def _stall_short(run: Run, short: Sequence[ToolOutcome]) -> RunOutcome:
    """A call ran out of descriptors, memory or disk: nothing of the batch is observed, the turn
    stalls, and its retry run settles the same reply again (docs/loop.md#observations)."""
    turn = run.state.conv.open_turn
    assert turn is not None
    retry_at = run.now() + min(STALL_CAP_MS, STALL_BASE_MS * 2**turn.stalls)
    first = short[0]
    return await stop_turn(
        run, error_kind="resource", error=first.content[:2_000], retry_at_ms=retry_at
    )


async def _close_batch(
    run: Run,
    planned: Sequence[PlannedCall],
    outcomes: Mapping[str, ToolOutcome],
    settled: Mapping[str, str],
    *,
    assistant: Message | None,
    ledger: list[Any],
    batch_size: int,
) -> RunOutcome | None:
    """Commit the batch's results and close the iteration, or pause when a call asked."""
    ordered = [outcomes[plan.call.id] for plan in planned]
    asked = [o for o in ordered if o.status == "asked"]
    if asked:
        # Results are committed in call order (docs/loop.md#dispatch-groups-and-ordering): the calls
        # before the first asking one now, everything from it on with the answer. Results already
        # produced after it (run alongside, or decided at planning) wait on the pending batch; calls
        # that never started are answered not-dispatched then.
        first = next(i for i, o in enumerate(ordered) if o.status == "asked")
        produced, later = ordered[:first], ordered[first:]
        kept = {
            o.tool_call_id: msgspec.to_builtins(o)
            for o in later
            if o.status not in ("asked", "not-dispatched")
        }
        asks: list[Ask] = [("tool-ask", o.content, (o.tool_call_id,), None) for o in asked]
        observed, repeats = _observe(run, planned[:first], produced)
        return await pause(
            run,
            kind="tool-ask",
            messages=[*([assistant] if assistant else []), *observed],
            results=[_result(o, settled) for o in produced],
            waiting=[o.tool_call_id for o in later],
            asks=asks,
            ledger=ledger,
            outcomes=kept,
            repeats=repeats,
        )
    results = [_result(o, settled) for o in ordered]
    observed, repeats = _observe(run, planned, ordered)
    messages = [*([assistant] if assistant else []), *observed]
    items, appended = run.append_history(messages)
    closed = await next_iteration(
        run,
        [
            HistoryWrite(verb="append", value=appended),
            ToolResultsWrite(value=list(results)),
        ],
        items=items,
        ledger=[*ledger, *run.take_rows()],
        turn=msgspec.structs.replace(run.turn(), pending_batch=None, repeats=repeats),
    )
    if not run.unheard():
        run.emit(
            IterationEnded(iteration=closed, route="tool-calls", tool_call_count=batch_size),
            stage=False,
        )
    log.info("iteration", route="tool-calls", tool_calls=batch_size, epochs=run.state.epochs)
    return None


def _observe(
    run: Run, planned: Sequence[PlannedCall], outcomes: Sequence[ToolOutcome]
) -> tuple[list[Message], dict[str, int]]:
    """The batch's tool messages, repeats noted (docs/loop.md#repeated-calls), and the turn's
    tally after them."""
    turn = run.state.conv.open_turn
    return observe_batch(
        [p.call for p in planned],
        outcomes,
        turn.repeats if turn is not None else {},
        note=run.d.repeated_call_note,
    )


def _result(outcome: ToolOutcome, settled: Mapping[str, str]) -> dict[str, Any]:
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
    return result


# -- answers --------------------------------------------------------------------------------


def _waiting_calls(run: Run, call_ids: Sequence[str]) -> list[ToolCall]:
    """The waiting calls, as tools see them (reserved arguments peeled, never re-filed), found
    in the committed assistant turn of the paused batch (a backward scan of the batch)."""
    wanted = set(call_ids)
    for message in reversed(run.state.history):
        if message.role == "assistant" and any(c.id in wanted for c in message.tool_calls):
            by_id = {c.id: c for c in message.tool_calls}
            missing = [i for i in call_ids if i not in by_id]
            if missing:
                break
            calls = [by_id[i] for i in call_ids]
            for extension in run.extensions:
                calls = [extension.strip(call) for call in calls]
            return calls
    raise CheckpointInvalid(
        "the paused batch's calls are not in the conversation's history",
        agent_id=run.agent_id,
        tool_call_ids=list(call_ids),
    )


def _approved(question: QuestionRow) -> bool:
    answer = question.answer
    return (
        question.status == "answered"
        and isinstance(answer, dict)
        and answer.get("decision") == "approve"
    )


def _person_outcome(call: ToolCall, question: QuestionRow) -> ToolOutcome:
    if question.status == "answered" and isinstance(question.answer, str):
        content = person_reply_text(call.name, question.prompt, question.answer)
    else:
        content = no_reply_text(call.name, question.prompt)
    return unrun_outcome(call, "ok", content)


def _declined(call: ToolCall) -> ToolOutcome:
    return unrun_outcome(call, "declined", declined_text(call.name))


def _not_dispatched(call: ToolCall) -> ToolOutcome:
    return unrun_outcome(call, "not-dispatched", not_dispatched_text(call.name))


def _args_json(call: ToolCall) -> str:
    if call.args_text is not None:
        return call.args_text
    return msgspec.json.encode(call.args).decode()
