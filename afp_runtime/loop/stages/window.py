"""The ``window`` stage: the strategy visit, pins, stand-down, and the record
(docs/window.md#the-window-stage).

Without a strategy it commits one bundle with no writes, so requests are byte-identical to a
runtime without the window family. Otherwise it runs the pure visit pipeline and commits, in
one bundle and one transaction, the new window (``history``), the record (``compactions``) and
any folded spans (``foldedSpans``), with the conversation checkpoint. A strategy that breaks the
rules holds the turn and commits nothing of the visit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import CompactionUnmeasurableError, WindowStrategyError
from afp_runtime.loop.ending import stop_turn
from afp_runtime.loop.folded import stored_span
from afp_runtime.loop.spend import CallSpend, account, report_call, spend_of_call
from afp_runtime.messages import Message
from afp_runtime.records import (
    MAX_RANGES,
    AnyWrite,
    CompactionsWrite,
    CostSpent,
    FoldedSpansWrite,
    HistoryWrite,
    Item,
    IterationStarted,
    ListRef,
    PriorVisitRef,
    StoredFoldedSpan,
    SummarizerCostWrite,
    Txn,
    WindowBudgetPressure,
    WindowEvicted,
    WindowRecorded,
    runtime_stage_id,
)
from afp_runtime.served import body_hash, start_digest
from afp_runtime.window import (
    MessageOrigin,
    PriorVisit,
    VisitOutcome,
    record_to_wire,
    traits_of,
    visit_window,
)

if TYPE_CHECKING:
    from afp_runtime.loop.outcomes import RunOutcome
    from afp_runtime.loop.run import Run


log = get_logger()
T = TypeVar("T")


def _warn_once(run: Run, key: str, message: str) -> None:
    """Window warnings are logged at most once per run (docs/window.md#warnings); the run keeps
    which, the definition is never written."""
    if key in run.state.warned:
        return
    run.state.warned.add(key)
    strategy = run.d.window.name if run.d.window is not None else None
    log.warning(message, strategy=strategy, iteration=run.state.iteration)


async def window(run: Run) -> RunOutcome | tuple[str, ...]:
    """Visit the window; returns the salted hashes of what the visit removed (for the receipt's
    ``omittedForAttention``), or an outcome when the visit holds the turn."""
    run.begin("window")
    run.emit(IterationStarted(iteration=run.state.iteration))
    strategy = run.d.window
    if strategy is None:
        await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle([])]))
        return ()
    traits = traits_of(strategy)
    # A strategy that declares ``reads_usage = False`` (sliding-window) does not need usage;
    # any other one, custom ones included, may.
    if run.state.last_usage is None and run.state.usage_missing and traits.reads_usage:
        _warn_once(
            run,
            "stale-usage",
            "the provider stopped reporting token usage; token strategies stand down",
        )
    if traits.may_call_model:
        # The visit may call a model (a summarizer): what is pending must not wait on it.
        await run.committer.before_effect()
    now = run.now()
    # What the window index knows is what the loop appended since the last visit, and that
    # visit's rebase: a visit costs what changed, not the window (docs/window.md#the-running-index).
    index = run.state.window_index
    index.sync(run.state.history)
    try:
        # The window pins by the first extension's standing of a turn, if one has standings.
        standings = [s for s in (e.turn_standing() for e in run.extensions) if s is not None]
        outcome = await visit_window(
            strategy,
            history=tuple(run.state.history),
            said=run.state.said,
            measured=run.state.last_usage,
            iteration=run.state.iteration,
            run_id=run.run_id,
            agent_model=run.d.model.model,
            provider_name=run.d.model.provider,
            now_ms=now,
            origins=tuple(run.state.origins),
            prior=tuple(
                PriorVisit(
                    removed_message_count=p.removed_message_count, reasons=frozenset(p.reasons)
                )
                for p in run.state.prior
            ),
            keep_last_tool_results=run.d.keep_last_tool_results,
            fact_limit=run.d.fact_limit,
            turn_standing=next(iter(standings), None),
            turns=index.turns,
            names=index.names,
            answered_call_ids=index.answered_call_ids,
            chars=index.chars,
        )
    except (WindowStrategyError, CompactionUnmeasurableError) as exc:
        # Not a model error: the same code fails the same way, so the turn is held, never
        # retried automatically
        # (docs/architecture.md#decision-8-failures-that-are-not-model-errors-hold-the-turn);
        # nothing of this visit is committed.
        return await stop_turn(run, error_kind=exc.error_kind, error=str(exc))
    if outcome is None:
        await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle([])]))
        return ()
    for extension in run.extensions:
        outcome = extension.after_visit(outcome)
    return await _commit_visit(run, outcome, now)


def _new_history(run: Run, outcome: VisitOutcome, now: int) -> tuple[list[Item], ListRef]:
    """Apply the rebase to the stored list reference and the in-memory window."""
    assert outcome.rebase is not msgspec.UNSET and outcome.window is not msgspec.UNSET
    rebase = outcome.rebase
    window: Sequence[Message] = outcome.window

    def tail(values: list[T]) -> list[T]:
        return values[len(values) - rebase.kept_tail_count :] if rebase.kept_tail_count else []

    history = run.state.conv.history
    size = len(run.state.fps)
    head_fps = run.state.fps[: rebase.head_count]
    head_origins = run.state.origins[: rebase.head_count]
    items: list[Item] = []
    next_pos = run.state.conv.next_pos
    inserted_count = run.state.conv.inserted_count
    inserted = ListRef()
    inserted_fps: list[str] = []
    inserted_origins: list[MessageOrigin] = []
    if len(window) > rebase.head_count + rebase.kept_tail_count:
        message = window[rebase.head_count]
        fp = run.fingerprint_new(message)
        # Below zero, apart from what the loop appends: a notice written every visit would
        # otherwise split the kept tail from the next appended messages, one more range per
        # visit (docs/storage.md#message-bodies-and-list-references).
        inserted_count += 1
        at = -inserted_count
        items.append(Item(pos=at, fingerprint=fp, message=message))
        inserted, inserted_fps = ListRef(ranges=((at, at + 1),)), [fp]
        born = rebase.inserted_at_ms if rebase.inserted_at_ms is not msgspec.UNSET else now
        stage_id = runtime_stage_id(run.stage, run.seq)
        inserted_origins = [MessageOrigin(stage_id=stage_id, born_at_ms=born)]
    fps = head_fps + inserted_fps + tail(run.state.fps)
    # By ranges, not positions: O(ranges), however long the window.
    kept_tail = (
        history.sliced(size - rebase.kept_tail_count, size) if rebase.kept_tail_count else ListRef()
    )
    ref = history.sliced(0, rebase.head_count).joined(inserted, kept_tail)
    if len(ref.ranges) > MAX_RANGES:
        # Compact: the window's references are appended again as one contiguous range, so a
        # list never needs more than a few ranges to read (bodies are shared, not copied).
        start = next_pos
        for offset, message in enumerate(window):
            items.append(Item(pos=start + offset, fingerprint=fps[offset], message=message))
        next_pos = start + len(window)
        ref = ListRef(ranges=((start, next_pos),))
    run.state.history = list(window)
    run.state.window_index.rebase(rebase, window)
    run.state.fps = fps
    # The as-sent list changed other than by appending: the running digest starts again.
    run.state.digest = start_digest(run.run_id)
    run.state.base_is_prefix = False
    run.state.origins = head_origins + inserted_origins + tail(run.state.origins)
    run.checkpoint(
        msgspec.structs.replace(
            run.state.conv, history=ref, next_pos=next_pos, inserted_count=inserted_count
        )
    )
    return items, ref


async def _commit_visit(run: Run, outcome: VisitOutcome, now: int) -> tuple[str, ...]:
    """Commit the visit; returns the salted hashes of the messages it removed."""
    record = outcome.record
    before = list(run.state.history)
    before_fps = run.state.fps
    writes: list[AnyWrite] = []
    items: list[Item] = []
    folded: list[StoredFoldedSpan] = []
    omitted: tuple[str, ...] = ()
    if outcome.window is not msgspec.UNSET:
        rebase = outcome.rebase
        assert rebase is not msgspec.UNSET
        gone = range(rebase.head_count, len(before) - rebase.kept_tail_count)
        hashes = run.state.body_hashes
        omitted = tuple(body_hash(run.run_id, before[i], before_fps[i], hashes) for i in gone)
        for i in gone:
            # What left the window is not sent again: its hash is not kept (a copy still in
            # the window is hashed again if it is ever needed).
            hashes.pop(before_fps[i], None)
        removed = run.state.conv.history.sliced(
            rebase.head_count, len(before) - rebase.kept_tail_count
        )
        items, ref = _new_history(run, outcome, now)
        writes.append(HistoryWrite(verb="set", value=ref))
        folded = [
            stored_span(span, removed if span.retained == "conversation" else None)
            for span in outcome.folded
        ]
    writes.append(CompactionsWrite(value=[record_to_wire(record)]))
    if folded:
        count = run.state.conv.folded_count
        writes.append(
            FoldedSpansWrite(verb="append", value={"spans": [count, count + len(folded)]})
        )
    reasons = tuple(sorted({r.reason for r in record.refusals}))
    run.state.prior = (
        *run.state.prior[-1:],
        PriorVisitRef(removed_message_count=record.removed_message_count, reasons=reasons),
    )
    # The summarizer's call is priced like a model call (docs/cost.md#figures).
    spend = (
        spend_of_call(run, outcome.spend.usage, outcome.spend.model)
        if outcome.spend is not None
        else None
    )
    conv = msgspec.structs.replace(
        run.state.conv,
        folded_count=run.state.conv.folded_count + len(folded),
        open_turn=msgspec.structs.replace(run.turn(), prior_visits=run.state.prior),
    )
    if spend is not None:
        conv = account(run, spend, conv)
        writes.append(SummarizerCostWrite(value=msgspec.to_builtins(spend.call)))
    state = run.checkpoint(conv)
    await run.committer.stage(
        Txn(
            agent_id=run.agent_id,
            bundles=[run.bundle(writes)],
            items=items,
            conversation=state,
            folded=folded,
        )
    )
    _emit_visit(run, outcome, before_fps, spend)
    return omitted


def _emit_visit(
    run: Run, outcome: VisitOutcome, before_fps: Sequence[str], spend: CallSpend | None
) -> None:
    record = outcome.record
    strategy = run.d.window
    assert strategy is not None
    run.emit(
        WindowRecorded(
            strategy=strategy.name,
            removed_message_count=record.removed_message_count,
            window_chars_before=record.window_chars_before,
            window_chars_after=record.window_chars_after,
        )
    )
    for eviction in outcome.evictions:
        run.emit(
            WindowEvicted(
                slot="messages",
                fingerprint=before_fps[eviction.index],
                index=eviction.index,
                reason="budget",
                survival_ms=eviction.survival_ms,
            )
        )
    pressure = outcome.budget_pressure
    if pressure is not None:
        run.emit(
            WindowBudgetPressure(
                slot="messages",
                overflow_by=max(0, pressure.projected_tokens - pressure.cap_tokens),
                plan_action=pressure.plan_action,
                unit=pressure.unit,
                cap=pressure.cap_tokens,
                projected=pressure.projected_tokens,
            )
        )
    if outcome.spend is not None:
        head = CostSpent(
            provider=traits_of(strategy).billed_provider,
            model=outcome.spend.model,
            usage=outcome.spend.usage,
        )
        if spend is None:
            run.emit(head)
        else:
            report_call(run, spend, head)
    if outcome.warning:
        _warn_once(run, outcome.warning, outcome.warning)
