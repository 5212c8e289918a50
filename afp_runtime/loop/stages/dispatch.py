"""Running a planned batch: outcomes settled from the tool journal or kept results, the rest
dispatched with their ``started``/``finished`` journal rows and events
(docs/loop.md#tool-dispatch, docs/loop.md#the-tool-journal,
docs/loop.md#tool-calls-in-flight-at-a-crash)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.extensions import Dispatch
from afp_runtime.messages import ToolCall
from afp_runtime.records import (
    JournalRow,
    JournalState,
    ToolEnded,
    ToolProgress,
    ToolStarted,
    Txn,
)
from afp_runtime.store import JournalEntry
from afp_runtime.tools import (
    PlannedCall,
    ToolContext,
    ToolOutcome,
    interrupted_text,
    run_batch,
    unrun_outcome,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = get_logger()

_outcome_encoder = msgspec.msgpack.Encoder()
_outcome_decoder = msgspec.msgpack.Decoder(ToolOutcome)


async def read_journal(run: Run) -> dict[str, JournalEntry] | None:
    """The turn's tool journal, when the durability mode keeps one."""
    if not run.committer.journals:
        return None
    return await run.store.journal(run.agent_id, run.message_id)


async def run_planned(
    run: Run,
    planned: Sequence[PlannedCall],
    journal: Mapping[str, JournalEntry] | None,
    *,
    mark_predecided: bool,
) -> tuple[dict[str, ToolOutcome], dict[str, str]]:
    """Outcomes of every planned call: from the journal when settling
    (docs/loop.md#tool-calls-in-flight-at-a-crash), else by running them. ``settled`` records how
    each call was settled (settling only)."""
    reused: dict[str, ToolOutcome] = {}
    settled: dict[str, str] = {}
    to_run = []
    # A call the journal shows started only may have a result kept from before the store went
    # away (docs/loop.md#results-kept-through-a-store-outage): it answers the call.
    kept: dict[str, JournalRow] = {}
    if journal is not None and run.kept is not None:
        kept = run.kept.for_turn(run.agent_id, run.message_id)
    recovered: list[JournalRow] = []
    for plan in planned:
        call_id = plan.call.id
        # In an answer run a pre-decided outcome (an answer, a decline) wins over the journal:
        # the asking call's "started" row must not turn the person's reply into an
        # interruption. Settling a fresh batch (``mark_predecided``), the journal wins: a call
        # that started before the crash did so on the decision of that time, whatever a gate
        # decides now (docs/permissions.md#in-the-loop).
        consult = journal is not None and (plan.outcome is None or mark_predecided)
        entry = journal.get(call_id) if consult and journal is not None else None
        finished = (
            _outcome_decoder.decode(entry.finished)
            if entry is not None and entry.finished is not None
            else None
        )
        if finished is not None and finished.status == "resource":
            # It failed for want of a resource and stalled the turn: it runs again.
            to_run.append(plan)
            settled[call_id] = "rerun"
        elif finished is not None:
            reused[call_id] = finished
            settled[call_id] = "journal"
        elif entry is not None and entry.started and call_id in kept:
            row = kept[call_id]
            assert row.outcome is not None
            reused[call_id] = _outcome_decoder.decode(row.outcome)
            settled[call_id] = "kept"
            recovered.append(row)
        elif entry is not None and entry.started:
            if plan.tool is not None and plan.tool.idempotent and plan.runnable:
                to_run.append(plan)
                settled[call_id] = "rerun"
            else:
                reused[call_id] = interrupted_outcome(plan.call)
                settled[call_id] = "note"
        else:
            to_run.append(plan)
            if journal is not None and (mark_predecided or plan.runnable):
                settled[call_id] = "dispatched"
    if run.kept is not None and journal:
        # The journal settled these already (a commit whose outcome was unknown did land).
        run.kept.committed(
            run.agent_id, run.message_id, (c for c, e in journal.items() if e.finished is not None)
        )
    if recovered:
        # On disk before anything else runs, under this run's fenced commit: a crash from here
        # on finds them ``finished``.
        await run.committer.stage(Txn(agent_id=run.agent_id, journal=recovered, full=True))
        assert run.kept is not None
        run.kept.committed(run.agent_id, run.message_id, (r.tool_call_id for r in recovered))
        log.info("kept tool results committed", tool_call_ids=[r.tool_call_id for r in recovered])
    outcomes = {o.tool_call_id: o for o in await dispatch(run, to_run, batch_size=len(planned))}
    outcomes.update(reused)
    for extension in run.extensions:
        outcomes = {call_id: extension.observed(o) for call_id, o in outcomes.items()}
    return outcomes, settled


async def dispatch(
    run: Run, planned: Sequence[PlannedCall], *, batch_size: int
) -> tuple[ToolOutcome, ...]:
    """Run the planned calls (in dispatch groups, docs/loop.md#dispatch-groups-and-ordering)."""
    if not planned:
        return ()
    batch = _Batch(run, batch_size)
    return await run_batch(
        planned,
        context_for=batch.context_for,
        clock=run.clock,
        max_concurrent=run.d.max_concurrent_tools,
        on_group_start=batch.on_group_start,
        on_call_started=batch.on_call_started,
        on_call_finished=batch.on_call_finished,
        prepare=batch.prepare if batch.parts else None,
    )


class _Batch:
    """What the dispatch of one batch calls back: journal rows, events, each call's context."""

    def __init__(self, run: Run, batch_size: int) -> None:
        self.run = run
        self.batch_size = batch_size
        self.turn = run.state.conv.turn
        self.journals = run.committer.journals
        self.parts: list[Dispatch] = [
            d for d in (e.dispatching() for e in run.extensions) if d is not None
        ]

    def journal_row(
        self, call_id: str, state: JournalState, outcome: bytes | None = None
    ) -> JournalRow:
        run = self.run
        return JournalRow(
            agent_id=run.agent_id,
            message_id=run.message_id,
            tool_call_id=call_id,
            state=state,
            run_id=run.run_id,
            outcome=outcome,
        )

    def prepare(self, plan: PlannedCall) -> PlannedCall:
        for part in self.parts:
            plan = part.prepare(plan)
        return plan

    async def on_group_start(self, group: Sequence[PlannedCall]) -> None:
        if not self.journals:
            return
        rows = [self.journal_row(p.call.id, "started") for p in group if p.runnable]
        if rows:
            # "started" means "may have run": it must be on disk before any tool runs. The FULL
            # commit carries what is pending: the reply, or an earlier group's finished rows.
            await self.run.committer.stage(Txn(agent_id=self.run.agent_id, journal=rows, full=True))

    def on_call_started(self, plan: PlannedCall, index: int, size: int, concurrent: bool) -> None:
        if self.run.unheard():
            return
        self.run.emit(
            ToolStarted(
                tool_call_id=plan.call.id,
                tool_name=plan.call.name,
                call_index=index,
                batch_size=self.batch_size,
                concurrent=concurrent,
            )
        )

    async def on_call_finished(self, outcome: ToolOutcome, index: int) -> None:
        if outcome.status == "asked":
            # Not a result: the person's answer will be (the call stays "started" only).
            return
        run = self.run
        if self.journals:
            encoded = _outcome_encoder.encode(outcome)
            row = self.journal_row(outcome.tool_call_id, "finished", encoded)
            # Pending until the next commit: a crash before it leaves the call "started" only,
            # settled as possibly run (docs/loop.md#the-tool-journal).
            await run.committer.stage(Txn(agent_id=run.agent_id, journal=[row]))
        run.hooks.after_tool_finished(outcome.tool_call_id, run.state.iteration)
        if run.unheard():
            return
        run.emit(
            ToolEnded(
                tool_call_id=outcome.tool_call_id,
                tool_name=outcome.tool_name,
                call_index=index,
                status=outcome.status,
                duration_ms=outcome.duration_ms or 0,
                result_chars=outcome.result_chars,
                truncated=True if outcome.truncated else msgspec.UNSET,
            )
        )

    def progress_sink(self, call_id: str) -> Callable[[Any], None]:
        def sink(payload: Any) -> None:
            self.run.emit(ToolProgress(tool_call_id=call_id, payload=payload))

        return sink

    def context_for(self, plan: PlannedCall) -> ToolContext:
        filled: dict[str, Any] = {}
        for part in self.parts:
            filled.update(part.context(plan.call.id))
        return ToolContext(
            tool_call_id=plan.call.id,
            tool_name=plan.call.name,
            agent_id=self.run.agent_id,
            run_id=self.run.run_id,
            turn=self.turn,
            iteration=self.run.state.iteration,
            clock=self.run.clock,
            on_progress=self.progress_sink(plan.call.id),
            **filled,
        )


def interrupted_outcome(call: ToolCall) -> ToolOutcome:
    """The outcome of a non-idempotent call cut off by a crash: never run again."""
    return unrun_outcome(call, "interrupted", interrupted_text(call.name))
