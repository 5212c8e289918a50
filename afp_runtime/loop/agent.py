"""Driving one agent: finish its unfinished turn, then answer its queued messages in order.

This is the single-agent core the standing host schedules; ``afp run`` and the demo call it
directly. A turn is only ever continued from what the store committed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import RunNotHeld, RunNotResumable
from afp_runtime.loop.definition import Definition
from afp_runtime.loop.events import Emitter
from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.loop.ids import IdFactory
from afp_runtime.loop.kept import KeptResults
from afp_runtime.loop.known import Known, Queued
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.posting import post_message
from afp_runtime.loop.run import Run
from afp_runtime.messages import Usage
from afp_runtime.records import (
    Clock,
    ConversationState,
    InboxUpdate,
    OpenTurn,
    PendingBatch,
    ReplyWrite,
    RunKind,
    TurnEnded,
    TurnHeld,
    Txn,
)
from afp_runtime.store import Ack, CheckpointStore, LoadedConversation

log = get_logger()


class AgentDriver:
    """Runs one agent's turns on a store, one at a time.

    Args:
        store: the open store.
        definition: the agent definition in force.
        clock: the injected clock.
        ids: the injected id factory.
        emitter: where events go.
        rng: the random source for retry jitter.
        kept: where tool results whose commit failed with the store away are kept until a
            recovery commits them (docs/loop.md#results-kept-through-a-store-outage); a host
            shares one among its agents. Default: one of this driver's own.
    """

    def __init__(
        self,
        store: CheckpointStore,
        definition: Definition,
        *,
        clock: Clock,
        ids: IdFactory,
        emitter: Emitter | None = None,
        rng: random.Random | None = None,
        hooks: LoopHooks | None = None,
        kept: KeptResults | None = None,
    ) -> None:
        self.store = store
        self.definition = definition
        self.kept = kept if kept is not None else KeptResults(clock)
        self.clock = clock
        self.ids = ids
        self.emitter = emitter or Emitter()
        self.rng = rng or random.Random()
        self.hooks = hooks
        self.agent_id = definition.agent_id
        # A driver's first run seeds alone: a process that died before its first effect
        # then still counts a recovery at the next start (docs/loop.md#crash-loops).
        self._started = False
        # Whether the last ``work`` ended with nothing left to do: no open turn, no message
        # queued. Only a new message or a change from elsewhere gives it work again.
        self.idle = False
        # What a ``work(trust=True)`` goes on from (docs/host.md#what-a-worker-keeps-in-memory).
        self.known = Known()
        self._ensured = False

    async def post(
        self,
        text: str,
        *,
        idempotency_key: str | None = None,
        sender: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably; returns only after it is on disk
        (``post_message``: an idempotent repeat emits no second ``inbox.accepted``).

        Raises:
            TimeNotEnabled: ``time`` for an agent without the time layer.
            InvalidValue: a field of ``time`` is wrong.
        """
        checked = self.definition.check_message_time(time)
        await self.store.ensure_agent(
            self.agent_id, now_ms=self.clock.now_ms(), definition=self.definition.profile()
        )
        return await post_message(
            self.store,
            self.agent_id,
            text,
            clock=self.clock,
            ids=self.ids,
            idempotency_key=idempotency_key,
            sender=sender,
            shared=self.definition.shared,
            time=checked,
            emitter=self.emitter,
        )

    def forget(self) -> None:
        """Drop what the driver knows of its agent's inbox, open turn and conversation: the
        next ``work`` reads them from the store (a change it was not told of, a failed pass)."""
        self.known.forget()

    def deliver(self, message_id: str, position: int, text: str) -> None:
        """Hand the driver a message just posted to its agent in this process (``Host.post``):
        when it is the next position after what the driver knows, a ``work(trust=True)``
        takes it without reading the inbox; otherwise the driver forgets, and reads."""
        self.known.deliver(message_id, position, text)

    async def work(
        self, *, admit: Callable[[], bool] | None = None, trust: bool = False
    ) -> list[RunOutcome]:
        """Continue the unfinished turn if it may run now, then answer queued messages.

        Returns every run's outcome, in order. Stops early at a turn that is paused, held or
        stalled into the future: later messages wait behind it (with ``on_turn_failure="skip"``
        a held turn is dismissed and the queue moves on). ``admit`` is asked before every new
        run; once it says no, nothing more starts (a stopping host).

        With ``trust`` the driver goes on from what it knows (its own runs' outcomes, the
        posts ``deliver`` handed it) instead of reading the conversation and the inbox before
        every run: for a caller that calls ``forget`` whenever the store may have changed
        otherwise (a host's worker, docs/host.md#what-a-worker-keeps-in-memory).
        """
        self.idle = False
        if not (trust and self._ensured):
            # Registers the definition's summary too (docs/storage.md#definition-summaries).
            await self.store.ensure_agent(
                self.agent_id, now_ms=self.clock.now_ms(), definition=self.definition.profile()
            )
            self._ensured = True
        outcomes: list[RunOutcome] = []
        while admit is None or admit():
            if not trust:
                self.forget()
            queue = self.known.queue
            if queue is None:
                queue = await self._read_queue()
            if queue is None:
                outcome = await self._continue()
                if outcome is None:
                    if await self._skip_held():
                        continue
                    return outcomes
            else:
                if not queue:
                    self.idle = True
                    return outcomes
                message_id, _, text = queue.pop(0)
                try:
                    outcome = await self._run("initial", message_id, text=text)
                except BaseException:
                    self.forget()
                    raise
                if outcome.status != "answered":
                    self.forget()
            outcomes.append(outcome)
            if outcome.status == "held" and await self._skip_held():
                continue
            if outcome.status != "answered":
                return outcomes
        return outcomes

    async def _read_queue(self) -> list[Queued] | None:
        """Read the conversation and, without an open turn, the queued messages; None when a
        turn is open."""
        generation = self.known.generation
        state = await self.store.conversation_state(self.agent_id)
        assert state is not None
        # Results kept for a turn no longer open cannot reach it any more.
        self.kept.keep_only_turn(
            self.agent_id, state.open_turn.message_id if state.open_turn else None
        )
        if state.open_turn is not None:
            return None
        return self.known.read(await self.store.inbox(self.agent_id, status="queued"), generation)

    async def _skip_held(self) -> bool:
        """``on_turn_failure="skip"``: dismiss a held turn at once
        (docs/host.md#stalled-and-held-turns)."""
        if self.definition.on_turn_failure != "skip":
            return False
        state = await self.store.conversation_state(self.agent_id)
        if state is None or state.open_turn is None or state.open_turn.status != "held":
            return False
        await self.dismiss()
        return True

    async def _continue(self) -> RunOutcome | None:
        state = await self.store.conversation_state(self.agent_id)
        assert state is not None and state.open_turn is not None
        turn = state.open_turn
        if turn.status == "stalled":
            if turn.retry_at_ms is not None and turn.retry_at_ms > self.clock.now_ms():
                return None
            # A turn stalled by a tool short of a resource left its reply unsettled: the retry
            # runs its calls again (a model stall left no reply, so the call is built again).
            settle = await self._reply_to_settle(turn.last_run_id)
            return await self._run("retry", turn.message_id, settle=settle)
        if turn.status == "paused":
            if turn.pending_batch is None or not await self._answered(turn):
                return None  # waits for the person
            return await self._run("answer", turn.message_id, answers=turn.pending_batch)
        if turn.status != "running":
            return None  # held: waits for an operator
        if turn.recoveries >= self.definition.max_recoveries:
            await self._hold_crash_loop(turn.message_id, turn.recoveries)
            return None
        log.info("recovering turn", turn=turn.turn, crashed_run=turn.last_run_id)
        if turn.pending_batch is not None:
            # An answer run crashed before its settle committed: settle the batch again.
            return await self._run("recovery", turn.message_id, answers=turn.pending_batch)
        settle = await self._reply_to_settle(turn.last_run_id)
        return await self._run("recovery", turn.message_id, settle=settle)

    async def _answered(self, turn: OpenTurn) -> bool:
        """Whether every question of the paused batch is closed; open questions past the
        agent's ``pause_timeout_s`` are abandoned first (docs/host.md#abandoning-a-question)."""
        assert turn.pending_batch is not None
        questions = await self.store.questions(
            self.agent_id, question_ids=turn.pending_batch.question_ids
        )
        timeout = self.definition.pause_timeout_s
        now = self.clock.now_ms()
        still_open = False
        for question in questions:
            if question.status != "open":
                continue
            if timeout is not None and question.asked_at_ms + timeout * 1000 <= now:
                await self.store.close_question(
                    question.question_id, status="abandoned", now_ms=now
                )
                log.info("question abandoned by pause timeout", question_id=question.question_id)
                continue
            still_open = True
        return not still_open

    async def _reply_to_settle(self, run_id: str) -> CommittedReply | None:
        """The committed reply a run left without its closing stage, if any (never re-asked).

        A run that committed nothing but its ``seed`` changed nothing: the state is what the
        run it continued left, so the search follows ``recoveredFrom`` back (a recovery that
        crashed before settling must not hide the reply it was settling).
        """
        seen: set[str] = set()
        current = run_id
        while current not in seen:
            seen.add(current)
            last = await self.store.last_bundle(current)
            if last is None:
                return None
            if last.stage == "seed":
                rows = await self.store.runs(run_id=current)
                previous = rows[0].recovered_from if rows else None
                if previous is None:
                    return None
                current = previous
                continue
            if last.stage == "call-model":
                for write in last.writes:
                    if isinstance(write, ReplyWrite):
                        return msgspec.convert(write.value, CommittedReply)
            return None
        return None

    async def resume(self) -> list[RunOutcome]:
        """An operator resumes a held or stalled turn with the current definition, then the
        queue moves on (docs/host.md#stalled-and-held-turns).

        Raises:
            RunNotResumable: the agent has no held or stalled turn (``resumable_turn``).
        """
        self.forget()
        turn = resumable_turn(await self.store.conversation_state(self.agent_id), self.agent_id)
        settle = await self._reply_to_settle(turn.last_run_id)
        outcome = await self._run(
            "operator", turn.message_id, settle=settle, answers=turn.pending_batch
        )
        if outcome.status != "answered":
            return [outcome]
        return [outcome, *await self.work()]

    async def dismiss(self, run_id: str | None = None) -> str:
        """Close the agent's held turn ``dismissed`` (``dismiss_turn``); returns its message id."""
        self.forget()
        return await dismiss_turn(
            self.store, self.agent_id, run_id=run_id, clock=self.clock, emitter=self.emitter
        )

    async def _hold_crash_loop(self, message_id: str, recoveries: int) -> None:
        state = await self.store.conversation_state(self.agent_id)
        assert state is not None and state.open_turn is not None
        error = f"the turn crashed {recoveries + 1} times in a row; it is held for an operator"
        held = msgspec.structs.replace(
            state,
            open_turn=msgspec.structs.replace(
                state.open_turn, status="held", error_kind="crash-loop", error=error
            ),
            checkpointed_at_ms=self.clock.now_ms(),
        )
        crashed = state.open_turn.last_run_id
        await self.store.commit(
            Txn(
                agent_id=self.agent_id,
                conversation=held,
                inbox=[InboxUpdate(message_id=message_id, status="held")],
                # The run the last crash cut off ends here: no recovery run will mark it.
                crashed_run=crashed,
                full=True,
            )
        )
        log.warning("turn held", error_kind="crash-loop", error=error)
        self.emitter.emit(
            TurnHeld(error_kind="crash-loop", message=error, run_id=crashed),
            at_ms=self.clock.now_ms(),
            agent_id=self.agent_id,
            run_id=crashed,
            turn=state.open_turn.turn,
            iteration=state.open_turn.next_iteration,
        )

    async def _run(
        self,
        kind: RunKind,
        message_id: str,
        *,
        text: str | None = None,
        settle: CommittedReply | None = None,
        answers: PendingBatch | None = None,
    ) -> RunOutcome:
        # Only a run from what the driver knows finds it kept (``work`` forgets otherwise).
        loaded = self.known.take_loaded()
        if loaded is None or kind != "initial":
            loaded = await self.store.load_conversation(self.agent_id)
        message_time: dict[str, Any] | None = None
        accepted_at_ms = 0
        if text is None or self.definition.extensions:
            # A continuation run works on the same person's message as the turn's first run;
            # extensions get the message's own time and when the inbox accepted it.
            message = await self.store.inbox_message(message_id)
            if message is not None:
                text = message.text if text is None else text
                message_time, accepted_at_ms = message.time, message.accepted_at_ms
        run = Run(
            store=self.store,
            definition=self.definition,
            loaded=loaded,
            kind=kind,
            clock=self.clock,
            run_id=self.ids.run_id(),
            emitter=self.emitter,
            rng=self.rng,
            message_id=message_id,
            text=text,
            hooks=self.hooks,
            ids=self.ids,
            message_time=message_time,
            accepted_at_ms=accepted_at_ms,
            seed_alone=kind != "initial" or not self._started,
            kept=self.kept,
        )
        self._started = True
        generation = self.known.generation
        outcome = await run.execute(settle=settle, answers=answers)
        if outcome.status == "answered":
            # The closing commit carried this conversation, and the turn closed with it.
            committed = run.state
            self.known.answered(
                LoadedConversation(
                    state=committed.conv,
                    history=tuple(committed.history),
                    fingerprints=tuple(committed.fps),
                ),
                generation,
            )
        return outcome


async def dismiss_turn(
    store: CheckpointStore,
    agent_id: str,
    *,
    run_id: str | None = None,
    clock: Clock,
    emitter: Emitter | None = None,
) -> str:
    """Close the agent's held turn ``dismissed`` so the queue moves on
    (docs/host.md#stalled-and-held-turns).

    The turn's committed messages stay in ``history``; its runs keep their logs and statuses.
    One ``synchronous=FULL`` commit. Returns the dismissed message's id.

    Raises:
        RunNotHeld: the agent has no held turn, or ``run_id`` is not one of its runs.
    """
    state = await store.conversation_state(agent_id)
    turn = state.open_turn if state is not None else None
    if state is None or turn is None or turn.status != "held":
        status = turn.status if turn is not None else "idle"
        raise RunNotHeld(
            f"agent {agent_id!r} has no held turn to dismiss (it is {status})",
            agent_id=agent_id,
        )
    if run_id is not None:
        rows = await store.runs(run_id=run_id)
        if not rows or rows[0].message_id != turn.message_id:
            raise RunNotHeld(f"run {run_id!r} is not a run of the held turn", run_id=run_id)
    now = clock.now_ms()
    closed = msgspec.structs.replace(
        state, open_turn=None, last_run_id=turn.last_run_id, checkpointed_at_ms=now
    )
    await store.commit(
        Txn(
            agent_id=agent_id,
            conversation=closed,
            inbox=[InboxUpdate(message_id=turn.message_id, status="dismissed")],
            full=True,
        )
    )
    log.info("turn dismissed", agent_id=agent_id, turn=turn.turn, error_kind=turn.error_kind)
    if emitter is not None:
        emitter.emit(
            TurnEnded(
                turn=turn.turn,
                message_id=turn.message_id,
                status="dismissed",
                runs=turn.runs,
                iterations=max(turn.next_iteration - 1, 0),
                epochs=turn.epochs_before,
                usage=turn.usage_before or Usage(),
                duration_ms=max(now - turn.started_at_ms, 0) if turn.started_at_ms else 0,
                reason="an operator dismissed the held turn",
                error_kind=turn.error_kind,
                error=turn.error,
            ),
            at_ms=now,
            agent_id=agent_id,
            run_id=turn.last_run_id,
            turn=turn.turn,
        )
    return turn.message_id


def resumable_turn(
    state: ConversationState | None, agent_id: str, run_id: str | None = None
) -> OpenTurn:
    """The open turn an operator resume may run: held or stalled, and (``run_id`` given) with
    that run as its latest (docs/host.md#stalled-and-held-turns). The one check of a host's
    ``resume`` and a driver's.

    Raises:
        RunNotResumable: the turn is not held or stalled, or ``run_id`` is not its latest run.
    """
    turn = state.open_turn if state is not None else None
    if turn is None or turn.status not in ("held", "stalled"):
        status = turn.status if turn is not None else "idle"
        raise RunNotResumable(
            f"agent {agent_id!r} has no held or stalled turn to resume (it is {status})",
            agent_id=agent_id,
        )
    if run_id is not None and run_id != turn.last_run_id:
        raise RunNotResumable(
            f"run {run_id!r} is not the latest run of the held turn ({turn.last_run_id!r})",
            agent_id=agent_id,
            run_id=run_id,
        )
    return turn
