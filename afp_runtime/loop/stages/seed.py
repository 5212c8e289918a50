"""The ``seed`` stage: restore the conversation checkpoint and start the run
(docs/loop.md#what-each-stage-commits)."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import StoreError
from afp_runtime.extensions import SeedInput
from afp_runtime.messages import (
    Message,
    Usage,
)
from afp_runtime.records import (
    AgentIdWrite,
    AnyWrite,
    ConversationState,
    DefinitionWrite,
    FindingsLedgerWrite,
    FoldedSpansWrite,
    HistoryWrite,
    InboxUpdate,
    Item,
    IterationWrite,
    MaxIterationsWrite,
    ModelWrite,
    OpenTurn,
    ProviderWrite,
    RecoveredFromWrite,
    RunIdWrite,
    RunKindWrite,
    RunStart,
    RunStarted,
    RunUsageWrite,
    StoppedEarlyWrite,
    TurnStarted,
    TurnWrite,
    Txn,
    UserMessageWrite,
    WrapUpAskedWrite,
)
from afp_runtime.window import MessageOrigin

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run

log = get_logger()


async def seed(run: Run) -> tuple[str, str] | None:
    """Restore the checkpoint and start the run in one commit; returns why an extension holds
    the turn, ``(error kind, error)``, or None."""
    run.begin("seed")
    now = run.now()
    items, open_turn, recovered_from = _turn(run, now)
    await _base_counts(run)
    # Restored messages are re-stamped to this run's seed (docs/window.md#what-a-visit-offers).
    run.state.origins = [MessageOrigin(stage_id="seed#0", born_at_ms=now)] * len(run.state.history)
    state = run.checkpoint(msgspec.structs.replace(run.state.conv, open_turn=open_turn))
    filed, hold = await _seed_extensions(run, state.turn)
    if filed:
        # What the extensions filed (the turn's clock and readings) joins the ledger in the
        # seed's own transaction.
        state = run.checkpoint(
            msgspec.structs.replace(state, ledger_count=state.ledger_count + len(filed))
        )
    txn = Txn(
        agent_id=run.agent_id,
        bundles=[run.bundle(_writes(run, state, recovered_from))],
        items=items,
        conversation=state,
        run_start=RunStart(
            run_id=run.run_id,
            agent_id=run.agent_id,
            turn=state.turn,
            kind=run.kind,
            started_at_ms=now,
            message_id=run.message_id,
            recovered_from=recovered_from,
        ),
        inbox=[InboxUpdate(message_id=run.message_id, status="running", turn=state.turn)],
        ledger=filed,
        crashed_run=recovered_from if run.kind == "recovery" else None,
    )
    await run.committer.stage(txn, closes=True, durable=run.seed_alone)
    run.emit(
        RunStarted(
            run_id=run.run_id,
            turn=state.turn,
            kind=run.kind,
            recovered_from=recovered_from if recovered_from is not None else msgspec.UNSET,
        )
    )
    if run.kind == "initial":
        run.emit(TurnStarted(turn=state.turn, message_id=run.message_id))
    return hold


def _turn(run: Run, now: int) -> tuple[list[Item], OpenTurn, str | None]:
    """The turn this run works on: a new one with the person's message (an initial run), or
    the open one taken over; returns the items appended, the open turn and the run it
    continues from."""
    if run.kind == "initial":
        assert run.state.said is not None
        conv = run.state.conv
        run.checkpoint(msgspec.structs.replace(conv, turn=conv.turn + 1))
        items, _ = run.append_history([Message(role="user", content=run.state.said)])
        open_turn = OpenTurn(
            turn=run.state.conv.turn,
            message_id=run.message_id,
            status="running",
            last_run_id=run.run_id,
            next_iteration=1,
            started_at_ms=now,
        )
        return items, open_turn, None
    open_turn = run.turn()
    # docs/loop.md#kinds-of-run: recovery, retry and operator runs continue from the turn's last
    # run; an answer run starts because the person answered, not from a run cut off.
    recovered_from = open_turn.last_run_id if run.kind != "answer" else None
    open_turn = msgspec.structs.replace(
        open_turn,
        status="running",
        last_run_id=run.run_id,
        runs=open_turn.runs + 1,
        recoveries=open_turn.recoveries + (run.kind == "recovery"),
        error_kind=None,
        error=None,
        retry_at_ms=None,
    )
    return [], open_turn, recovered_from


async def _base_counts(run: Run) -> None:
    """The base of this run's first receipt: the conversation's last receipt (O(window))."""
    last_sent = run.state.conv.last_sent
    if last_sent is None:
        return
    # Its items are usually all in the loaded window (items never change): then no read.
    positions = run.state.conv.history.positions()
    aligned = len(positions) == len(run.state.fps)
    loaded = dict(zip(positions, run.state.fps, strict=True)) if aligned else {}
    base = [loaded.get(pos, "") for pos in last_sent.positions()]
    if "" in base:
        base = list(await run.store.fingerprints(run.agent_id, last_sent))
    for index, fp in run.state.conv.last_sent_subs:
        if index < len(base):
            base[index] = fp
    run.state.base_counts = dict(Counter(base))


async def _seed_extensions(run: Run, turn: int) -> tuple[list[Any], tuple[str, str] | None]:
    """Each extension's seed: the rows they file in the seed's transaction, and why the first
    one that holds the turn holds it."""
    filed: list[Any] = []
    hold: tuple[str, str] | None = None
    if not run.extensions:
        return filed, hold
    # Every extension reads the conversation's ledger once, as the store holds it.
    ledger = await run.store.ledger(run.agent_id)
    seeding = SeedInput(
        turn=turn,
        text=run.state.said,
        ledger=ledger,
        message_time=run.message_time,
        accepted_at_ms=run.accepted_at_ms,
        answered_questions=partial(run.store.questions, run.agent_id, status="answered"),
    )
    for extension, definition in zip(run.extensions, run.d.extensions, strict=True):
        try:
            seeded = await extension.seed(seeding)
        except StoreError:
            raise  # the store's own failure: the run ends as a crash would
        except Exception as exc:
            # Before anything of the turn is committed: retrying would fail the same way on
            # every pass, and the message would never leave the queue. Held, naming it.
            log.exception("an extension failed to seed the turn", extension=definition.name)
            if hold is None:
                hold = (
                    "extension",
                    f"the {definition.name} extension failed to seed the turn: "
                    f"{type(exc).__name__}: {exc}",
                )
            continue
        filed += seeded.rows
        if seeded.hold is not None and hold is None:
            hold = seeded.hold
    return filed, hold


def _writes(run: Run, state: ConversationState, recovered_from: str | None) -> list[AnyWrite]:
    """The seed's bundle: the run's constants and the conversation by reference."""
    writes: list[AnyWrite] = [
        RunIdWrite(value=run.run_id),
        AgentIdWrite(value=run.agent_id),
        TurnWrite(value=state.turn),
        RunKindWrite(value=run.kind),
    ]
    if recovered_from is not None:
        writes.append(RecoveredFromWrite(value=recovered_from))
    writes += [
        UserMessageWrite(value=run.state.said or ""),
        HistoryWrite(verb="set", value=state.history),
        IterationWrite(value=run.state.iteration),
        MaxIterationsWrite(value=run.d.max_iterations),
        ModelWrite(value=run.d.model.model),
        ProviderWrite(value=run.d.model.provider),
        DefinitionWrite(value=run.d.summary()),
        RunUsageWrite(value=Usage()),
    ]
    if state.folded_count:
        # By reference: the spans (and their originals) stay in the store until asked for.
        spans = {"spans": [0, state.folded_count]}
        writes.append(FoldedSpansWrite(verb="set", value=spans))
    if state.ledger_count:
        # By reference: armed or not, the ledger belongs to the conversation.
        rows = {"rows": [0, state.ledger_count]}
        writes.append(FindingsLedgerWrite(verb="set", value=rows))
    if run.state.wrap_up_asked:
        writes.append(WrapUpAskedWrite(value=True))
    if run.state.stopped_early is not None:
        writes.append(StoppedEarlyWrite(value=run.state.stopped_early))
    return writes
