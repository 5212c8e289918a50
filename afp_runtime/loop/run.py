"""One run of a turn: ``seed`` (then ``settle`` when continuing), then iterations of
``window → context → receipt → call-model → tool-calls | wrap-up | final``
(docs/loop.md#what-each-stage-commits).

Every stage execution commits exactly one bundle; ``seq`` is its execution index in the run and
its runtime id is ``<stage>#<seq>``. The route after ``call-model`` is a pure function of the
committed reply and state, so a recovery run recomputes it instead of asking the model again.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import structlog

from afp_runtime._logging import get_logger
from afp_runtime.errors import AfpError
from afp_runtime.extensions import At, Filed, RunExtension, RunStart
from afp_runtime.loop.committer import Committer
from afp_runtime.loop.definition import Definition
from afp_runtime.loop.ending import emit_run_ended, stop_turn
from afp_runtime.loop.events import Emitter
from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.loop.ids import IdFactory, SequentialIds
from afp_runtime.loop.kept import KeptResults
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.route import decide_route
from afp_runtime.loop.spend import halt_reason, halting_budget
from afp_runtime.loop.stages import (
    call_model,
    context,
    final,
    halt,
    receipt,
    seed,
    settle_answers,
    tool_calls,
    window,
    wrap_up,
)
from afp_runtime.loop.state import start_state
from afp_runtime.messages import Message, message_body, salted, sha256_hex
from afp_runtime.records import (
    AnyWrite,
    Clock,
    CommitBundle,
    ConversationState,
    EventPayload,
    Item,
    ListRef,
    OpenTurn,
    PendingBatch,
    RouteDecided,
    RunEnd,
    RunKind,
    Txn,
    runtime_stage_id,
)
from afp_runtime.store import CheckpointStore, LoadedConversation
from afp_runtime.window import MessageOrigin

log = get_logger()


class Run:
    """Executes one run of one turn against the store. Create one per run; call ``execute``.

    Args:
        store: the checkpoint store.
        definition: the agent definition in force for this run.
        loaded: the conversation as the store holds it.
        kind: ``initial`` (``text`` and ``message_id`` required), ``recovery``, ``retry``…
        clock: the injected clock.
        run_id: this run's id.
        emitter: where events go.
        rng: the random source for retry jitter.
        seed_alone: under ``sync``, commit the seed in a transaction of its own rather than
            with the first pre-call bundles (docs/loop.md#crash-loops).
        kept: where results whose commit failed with the store away are kept, and where
            ``settle`` looks for them (docs/loop.md#results-kept-through-a-store-outage).
    """

    def __init__(
        self,
        *,
        store: CheckpointStore,
        definition: Definition,
        loaded: LoadedConversation,
        kind: RunKind,
        clock: Clock,
        run_id: str,
        emitter: Emitter,
        rng: random.Random,
        message_id: str,
        text: str | None = None,
        hooks: LoopHooks | None = None,
        ids: IdFactory | None = None,
        message_time: dict[str, Any] | None = None,
        accepted_at_ms: int = 0,
        seed_alone: bool = True,
        kept: KeptResults | None = None,
    ) -> None:
        self.store = store
        self.kept = kept
        self.seed_alone = seed_alone
        self.d = definition
        self.clock = clock
        self.run_id = run_id
        self.kind = kind
        self.emitter = emitter
        self.rng = rng
        self.message_id = message_id
        self.agent_id = definition.agent_id
        self.hooks = hooks or LoopHooks()
        self.ids: IdFactory = ids or SequentialIds()
        # The message's own time and when the inbox accepted it (the time extension fixes the
        # turn's clock with them at its first seed, docs/time.md#the-run-clock).
        self.message_time = message_time
        self.accepted_at_ms = accepted_at_ms
        start = RunStart(
            agent_id=self.agent_id,
            run_id=run_id,
            kind=kind,
            tools_by_name=definition.tools_by_name,
            clock=clock,
            offload=anyio.to_thread.run_sync,
            store=store,
        )
        # Each extension's part in this run, in the definition's order (docs/loop.md#extensions).
        self.extensions: tuple[RunExtension, ...] = tuple(
            extension.start(start) for extension in definition.extensions
        )
        self.committer = Committer(store, definition.durability, self.hooks, kept)
        self.state = start_state(loaded, run_id=run_id, kind=kind, text=text)
        # Bundle numbering and the id events carry (owner: ``begin`` and ``bundle``).
        self.seq = 0
        self.event_stage_id = ""
        self.stage = "seed"

    # -- plumbing ---------------------------------------------------------------------------

    def now(self) -> int:
        """The clock's time, epoch milliseconds."""
        return self.clock.now_ms()

    def emit(self, payload: EventPayload, *, stage: bool = True) -> None:
        """Emit an event carrying this run's context (and the stage's id when ``stage``)."""
        if not self.emitter.listening:
            self.emitter.skip()
            return
        self.emitter.emit(
            payload,
            at_ms=self.now(),
            agent_id=self.agent_id,
            run_id=self.run_id,
            turn=self.state.conv.turn,
            iteration=self.state.iteration,
            runtime_stage_id=self.event_stage_id if stage else None,
        )

    def unheard(self) -> bool:
        """Whether no sink listens; then the event the caller was about to emit is numbered as
        if emitted, and the caller need not build its payload (docs/host.md#events)."""
        if self.emitter.listening:
            return False
        self.emitter.skip()
        return True

    def begin(self, stage: str) -> None:
        """Enter a stage: its bundle and events carry its name."""
        self.stage = stage
        # Events carry the id of the bundle they report: the one this stage is about to commit,
        # and after it is built, that bundle's (docs/host.md#the-event-envelope).
        self.event_stage_id = runtime_stage_id(stage, self.seq)

    def bundle(self, writes: Sequence[AnyWrite], *, iteration: int | None = None) -> CommitBundle:
        """The current stage's bundle with the next ``seq`` (the iteration it closes, if given)."""
        bundle = CommitBundle(
            run_id=self.run_id,
            seq=self.seq,
            stage=self.stage,
            runtime_stage_id=runtime_stage_id(self.stage, self.seq),
            iteration=self.state.iteration if iteration is None else iteration,
            writes=tuple(writes),
            committed_at_ms=self.now(),
        )
        self.event_stage_id = bundle.runtime_stage_id
        self.seq += 1
        return bundle

    def at(self) -> At:
        """Where the turn is, for an extension's hook."""
        return At(turn=self.state.conv.turn, iteration=self.state.iteration)

    def report(self, filed: Filed) -> list[Any]:
        """Emit the events of rows an extension filed; returns the rows."""
        for payload in filed.events:
            self.emit(payload)
        return list(filed.rows)

    def take_rows(self) -> list[dict[str, Any]]:
        """Rows the extensions filed since the last bundle that carried rows, handed over once."""
        return [row for extension in self.extensions for row in extension.take_rows()]

    def fingerprint_new(self, message: Message) -> str:
        """The fingerprint of a message entering the window; one encoding of its body also
        gives the H its receipt entry will carry (kept in ``body_hashes``)."""
        body = message_body(message)
        fp = sha256_hex(body)
        self.state.body_hashes[fp] = salted(self.run_id, body)
        return fp

    def append_history(self, messages: Sequence[Message]) -> tuple[list[Item], ListRef]:
        """Append to the in-memory window; returns the new items and their list reference."""
        start = self.state.conv.next_pos
        origin = MessageOrigin(
            stage_id=runtime_stage_id(self.stage, self.seq), born_at_ms=self.now()
        )
        self.state.origins.extend([origin] * len(messages))
        items = []
        for offset, message in enumerate(messages):
            fp = self.fingerprint_new(message)
            items.append(Item(pos=start + offset, fingerprint=fp, message=message))
            self.state.history.append(message)
            self.state.fps.append(fp)
        end = start + len(messages)
        conv = self.state.conv
        self.checkpoint(
            msgspec.structs.replace(conv, history=conv.history.extended(start, end), next_pos=end)
        )
        return items, ListRef(ranges=((start, end),) if end > start else ())

    def checkpoint(self, conv: ConversationState) -> ConversationState:
        """Take ``conv`` (the conversation a stage's commit carries) as the run's, stamped now;
        the one place the run's conversation changes."""
        self.state.conv = msgspec.structs.replace(conv, checkpointed_at_ms=self.now())
        return self.state.conv

    def turn(self) -> OpenTurn:
        """The open turn (every stage after the seed has one)."""
        turn = self.state.conv.open_turn
        assert turn is not None
        return turn

    def advance(self) -> int:
        """Move to the next iteration; returns the one closed (the one place it changes)."""
        closed = self.state.iteration
        self.state.iteration = closed + 1
        return closed

    # -- the run ----------------------------------------------------------------------------

    async def execute(
        self, *, settle: CommittedReply | None = None, answers: PendingBatch | None = None
    ) -> RunOutcome:
        """Run to the end of the turn, a pause, a stall or a hold.

        ``settle`` completes a reply committed before a crash; ``answers`` completes a paused
        batch whose questions are all closed (an answer run, or the recovery of one).
        """
        with structlog.contextvars.bound_contextvars(agent_id=self.agent_id, run_id=self.run_id):
            try:
                return await self._execute(settle, answers)
            except anyio.get_cancelled_exc_class():
                await self._end_cancelled()
                raise
            except Exception:
                try:
                    await self.committer.salvage()
                except AfpError as exc:
                    # Our own errors say what was wrong (a fenced commit, a store gone): no
                    # traceback for them.
                    log.warning("could not commit what the failed run handed over", error=str(exc))
                except Exception:
                    log.warning("could not commit what the failed run handed over", exc_info=True)
                raise

    async def _end_cancelled(self) -> None:
        """A shutdown cancelled the run: mark it ``cancelled`` (docs/host.md#graceful-shutdown). The
        turn stays ``running`` with nothing partial committed, so the next start recovers it
        (docs/loop.md#after-a-crash)."""
        if self.seq == 0:
            return  # not even the seed committed: there is no run row to end
        with anyio.CancelScope(shield=True):
            try:
                await self.committer.cut_off(
                    Txn(
                        agent_id=self.agent_id,
                        run_end=RunEnd(
                            run_id=self.run_id,
                            status="cancelled",
                            ended_at_ms=self.now(),
                            usage=self.state.run_usage,
                            cost=self.state.run_cost if self.d.pricing else None,
                        ),
                    )
                )
            except AfpError as exc:
                log.warning("could not mark the cancelled run", error=str(exc))
                return
            except Exception:
                log.warning("could not mark the cancelled run", exc_info=True)
                return
        log.info("run cancelled")
        emit_run_ended(self, "cancelled")

    async def _execute(
        self, settle: CommittedReply | None, answers: PendingBatch | None
    ) -> RunOutcome:
        hold = await seed(self)
        if hold is not None:
            error_kind, error = hold
            return await stop_turn(self, error_kind=error_kind, error=error)
        if answers is not None:
            outcome = await settle_answers(self, answers)
            if outcome is not None:
                return outcome
        elif settle is not None:
            # Complete the iteration whose reply was committed before a crash; never re-ask.
            outcome = await self._after_reply(settle, settling=True)
            if outcome is not None:
                return outcome
        while True:
            # Tokens, not ``bound_contextvars``: that one copies the whole context per iteration.
            tokens = structlog.contextvars.bind_contextvars(iteration=self.state.iteration)
            try:
                outcome = await self._iteration()
            finally:
                structlog.contextvars.reset_contextvars(**tokens)
            if outcome is not None:
                return outcome

    async def _iteration(self) -> RunOutcome | None:
        stop = halting_budget(self)
        if stop is not None:
            # A day budget spent by earlier turns: no model call at all (docs/cost.md#budgets).
            error_kind, error = halt_reason(*stop)
            return await halt(self, None, error_kind=error_kind, error=error)
        visited = await window(self)
        if isinstance(visited, RunOutcome):
            return visited
        request, sent = await context(self)
        encoded = await receipt(self, request, sent=sent, omitted=visited)
        result = await call_model(self, request, encoded)
        if isinstance(result, RunOutcome):
            return result
        return await self._after_reply(result)

    async def _after_reply(
        self, reply: CommittedReply, *, settling: bool = False
    ) -> RunOutcome | None:
        route, reason = decide_route(
            reply.as_reply(),
            iteration=self.state.iteration,
            max_iterations=self.d.max_iterations,
            wrap_up=self.d.wrap_up,
            wrap_up_asked=self.state.wrap_up_asked,
        )
        if not self.unheard():
            self.emit(
                RouteDecided(iteration=self.state.iteration, route=route, reason=reason),
                stage=False,
            )
        if route != "final":
            # The route boundary: past a halting budget nothing more runs, not even a wrap-up
            # call; a final answer already paid for is still delivered (docs/cost.md#budgets).
            stop = halting_budget(self)
            if stop is not None:
                error_kind, error = halt_reason(*stop)
                return await halt(
                    self, reply, error_kind=error_kind, error=error, settling=settling
                )
        if route == "tool-calls":
            return await tool_calls(self, reply, settling=settling)
        if route == "wrap-up":
            await wrap_up(self, reply, settling=settling)
            return None
        return await final(
            self,
            reply,
            cut_short=reason == "cut-short",
            settling=settling,
            # docs/loop.md#typed-answers: only a plain answer is asked for again.
            retry_output=reason == "no-tool-calls",
        )
