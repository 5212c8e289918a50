"""One run of a turn: ``seed`` (then ``settle`` when continuing), then iterations of
``window → context → receipt → call-model → tool-calls | wrap-up | final`` (host.md §2).

Every stage execution commits exactly one bundle; ``seq`` is its execution index in the run and
its runtime id is ``<stage>#<seq>``. The route after ``call-model`` is a pure function of the
committed reply and state, so a recovery run recomputes it instead of asking the model again.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

import msgspec
import structlog

from afp_runtime.errors import ModelCallError
from afp_runtime.loop.committer import Committer
from afp_runtime.loop.definition import AgentDefinition
from afp_runtime.loop.events import Emitter
from afp_runtime.loop.texts import WRAP_UP_TEXT
from afp_runtime.messages import (
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSchema,
    Usage,
    fingerprint,
    salted,
)
from afp_runtime.models import EncodedRequest, send_with_retries
from afp_runtime.records import (
    Clock,
    CommitBundle,
    ConversationState,
    InboxUpdate,
    Item,
    JournalRow,
    ListRef,
    OpenTurn,
    RunEnd,
    RunKind,
    RunStart,
    RunStatus,
    Txn,
    Write,
    runtime_stage_id,
)
from afp_runtime.served import (
    RECEIPT_VERSION,
    Basis,
    MessagesDigest,
    Receipt,
    RequestOnlyDigest,
    RunningDigest,
    SystemDigest,
    ToolsDigest,
    extend_digest,
    schema_hash,
    start_digest,
    wire_digest,
)
from afp_runtime.store import CheckpointStore, LoadedConversation
from afp_runtime.tools import (
    ToolContext,
    ToolOutcome,
    interrupted_text,
    plan_batch,
    run_batch,
)

log = structlog.get_logger()

Route = Literal["tool-calls", "wrap-up", "final"]

_outcome_encoder = msgspec.msgpack.Encoder()
_outcome_decoder = msgspec.msgpack.Decoder(ToolOutcome)

# The first stall waits this long; each further stall doubles it, up to the cap.
STALL_BASE_MS = 60_000
STALL_CAP_MS = 3_600_000


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How a run ended."""

    run_id: str
    kind: RunKind
    turn: int
    status: RunStatus
    epochs: int
    usage: Usage
    iteration: int
    final_answer: str | None = None
    error_kind: str | None = None
    error: str | None = None


class CommittedReply(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The ``reply`` run-state value: the model's reply and how many sends it took."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = msgspec.field(default_factory=Usage)
    stop_reason: str = "end"
    attempts: int = 1

    def as_reply(self) -> ModelReply:
        """The reply as the model port shapes it."""
        return ModelReply(
            content=self.content,
            tool_calls=self.tool_calls,
            usage=self.usage,
            stop_reason=self.stop_reason,  # type: ignore[arg-type]
        )


def decide_route(
    reply: ModelReply, *, iteration: int, max_iterations: int, wrap_up: bool, wrap_up_asked: bool
) -> tuple[Route, str]:
    """The route after a reply and why (host.md §4.2)."""
    if not reply.tool_calls:
        return "final", "no-tool-calls"
    if wrap_up_asked:
        return "final", "wrap-up-call"
    if iteration < max_iterations:
        return "tool-calls", "tool-calls"
    if wrap_up:
        return "wrap-up", "max-iterations"
    return "final", "cut-short"


def unique_call_ids(calls: Sequence[ToolCall], used: set[str]) -> tuple[ToolCall, ...]:
    """Rename call ids already used in the conversation (``<id>~2``, ``<id>~3``…); adds to ``used``.

    Renaming is deterministic, so a recovery that re-plans the same committed reply gets the
    same ids.
    """
    result = []
    for call in calls:
        new_id = call.id
        n = 1
        while new_id in used:
            n += 1
            new_id = f"{call.id}~{n}"
        used.add(new_id)
        result.append(call if new_id == call.id else msgspec.structs.replace(call, id=new_id))
    return tuple(result)


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
    """

    def __init__(
        self,
        *,
        store: CheckpointStore,
        definition: AgentDefinition,
        loaded: LoadedConversation,
        kind: RunKind,
        clock: Clock,
        run_id: str,
        emitter: Emitter,
        rng: random.Random,
        message_id: str,
        text: str | None = None,
    ) -> None:
        self.store = store
        self.d = definition
        self.clock = clock
        self.run_id = run_id
        self.kind = kind
        self.emitter = emitter
        self.rng = rng
        self.message_id = message_id
        self.text = text
        self.agent_id = definition.agent_id
        self.committer = Committer(store, definition.durability)
        self.conv: ConversationState = loaded.state
        self.history: list[Message] = list(loaded.history)
        self.fps: list[str] = list(loaded.fingerprints)
        self.used_call_ids = {c.id for m in self.history for c in m.tool_calls}
        self.seq = 0
        self.iteration = 1
        self.epochs = 0
        self.run_usage = Usage()
        self.wrap_up_asked = False
        self.stopped_early: dict[str, Any] | None = None
        self.served: dict[str, Any] = {}
        self.digest: RunningDigest = start_digest(run_id)
        self._schema_hashes: dict[str, str] = {}
        self._stage = "seed"

    # -- plumbing ---------------------------------------------------------------------------

    def _now(self) -> int:
        return self.clock.now_ms()

    def _emit(self, kind: str, payload: dict[str, Any], *, stage: bool = True) -> None:
        self.emitter.emit(
            kind,
            at_ms=self._now(),
            agent_id=self.agent_id,
            payload=payload,
            run_id=self.run_id,
            turn=self.conv.turn,
            iteration=self.iteration,
            runtime_stage_id=runtime_stage_id(self._stage, self.seq) if stage else None,
        )

    def _begin(self, stage: str) -> None:
        self._stage = stage

    def _bundle(self, writes: Sequence[Write]) -> CommitBundle:
        bundle = CommitBundle(
            run_id=self.run_id,
            seq=self.seq,
            stage=self._stage,
            runtime_stage_id=runtime_stage_id(self._stage, self.seq),
            iteration=self.iteration,
            writes=tuple(writes),
            committed_at_ms=self._now(),
        )
        self.seq += 1
        return bundle

    def _append_history(self, messages: Sequence[Message]) -> tuple[list[Item], ListRef]:
        """Append to the in-memory window; returns the new items and their list reference."""
        start = self.conv.next_pos
        items = []
        for offset, message in enumerate(messages):
            fp = fingerprint(message)
            items.append(Item(pos=start + offset, fingerprint=fp, message=message))
            self.history.append(message)
            self.fps.append(fp)
        end = start + len(messages)
        self.conv = msgspec.structs.replace(
            self.conv, history=self.conv.history.extended(start, end), next_pos=end
        )
        return items, ListRef(ranges=((start, end),) if end > start else ())

    def _checkpoint(self, **changes: Any) -> ConversationState:
        self.conv = msgspec.structs.replace(self.conv, checkpointed_at_ms=self._now(), **changes)
        return self.conv

    def _open_turn(self, **changes: Any) -> OpenTurn:
        assert self.conv.open_turn is not None
        return msgspec.structs.replace(self.conv.open_turn, **changes)

    # -- the run ----------------------------------------------------------------------------

    async def execute(self, *, settle: CommittedReply | None = None) -> RunOutcome:
        """Run to the end of the turn, a stall or a hold."""
        with structlog.contextvars.bound_contextvars(agent_id=self.agent_id, run_id=self.run_id):
            await self._seed()
            if settle is not None:
                outcome = await self._settle(settle)
                if outcome is not None:
                    return outcome
            while True:
                with structlog.contextvars.bound_contextvars(iteration=self.iteration):
                    outcome = await self._iteration()
                if outcome is not None:
                    return outcome

    async def _seed(self) -> None:
        self._begin("seed")
        now = self._now()
        items: list[Item] = []
        open_turn = self.conv.open_turn
        if self.kind == "initial":
            assert self.text is not None
            self.conv = msgspec.structs.replace(self.conv, turn=self.conv.turn + 1)
            items, _ = self._append_history([Message(role="user", content=self.text)])
            open_turn = OpenTurn(
                turn=self.conv.turn,
                message_id=self.message_id,
                status="running",
                last_run_id=self.run_id,
                next_iteration=1,
            )
            recovered_from = None
        else:
            assert open_turn is not None
            recovered_from = open_turn.last_run_id
            open_turn = msgspec.structs.replace(
                open_turn,
                status="running",
                last_run_id=self.run_id,
                runs=open_turn.runs + 1,
                recoveries=open_turn.recoveries + (self.kind == "recovery"),
                error_kind=None,
                error=None,
                retry_at_ms=None,
            )
            self.iteration = open_turn.next_iteration
            self.wrap_up_asked = open_turn.wrap_up_asked
            self.stopped_early = open_turn.stopped_early
            self.text = self.text or self._last_person_message()
        state = self._checkpoint(open_turn=open_turn)
        writes = [
            Write(key="runId", verb="set", value=self.run_id),
            Write(key="agentId", verb="set", value=self.agent_id),
            Write(key="turn", verb="set", value=state.turn),
            Write(key="runKind", verb="set", value=self.kind),
        ]
        if recovered_from is not None:
            writes.append(Write(key="recoveredFrom", verb="set", value=recovered_from))
        writes += [
            Write(key="userMessage", verb="set", value=self.text or ""),
            Write(key="history", verb="set", value=state.history),
            Write(key="iteration", verb="set", value=self.iteration),
            Write(key="maxIterations", verb="set", value=self.d.max_iterations),
            Write(key="model", verb="set", value=self.d.model.model),
            Write(key="provider", verb="set", value=self.d.model.provider),
            Write(key="definition", verb="set", value=self.d.summary()),
            Write(key="runUsage", verb="set", value=Usage()),
        ]
        if self.wrap_up_asked:
            writes.append(Write(key="wrapUpAsked", verb="set", value=True))
        if self.stopped_early is not None:
            writes.append(Write(key="stoppedEarly", verb="set", value=self.stopped_early))
        txn = Txn(
            agent_id=self.agent_id,
            bundles=[self._bundle(writes)],
            items=items,
            conversation=state,
            run_start=RunStart(
                run_id=self.run_id,
                agent_id=self.agent_id,
                turn=state.turn,
                kind=self.kind,
                started_at_ms=now,
                message_id=self.message_id,
                recovered_from=recovered_from,
            ),
            inbox=[InboxUpdate(message_id=self.message_id, status="running", turn=state.turn)],
        )
        await self.committer.stage(txn, closes=True)
        payload: dict[str, Any] = {"runId": self.run_id, "turn": state.turn, "kind": self.kind}
        if recovered_from is not None:
            payload["recoveredFrom"] = recovered_from
        self._emit("run.started", payload)
        if self.kind == "initial":
            self._emit("turn.started", {"turn": state.turn, "messageId": self.message_id})

    def _last_person_message(self) -> str | None:
        for message in reversed(self.history):
            if message.role == "user" and message.injected_by is None:
                return message.content
        return None

    async def _iteration(self) -> RunOutcome | None:
        await self._window()
        request = await self._context()
        encoded = await self._receipt(request)
        result = await self._call_model(request, encoded)
        if isinstance(result, RunOutcome):
            return result
        return await self._after_reply(result)

    async def _window(self) -> None:
        # A pass-through until the window family arrives: one bundle with no writes.
        self._begin("window")
        self._emit("iteration.started", {"iteration": self.iteration})
        await self.committer.stage(Txn(agent_id=self.agent_id, bundles=[self._bundle([])]))

    def _served_tools(self) -> tuple[ToolSchema, ...]:
        if self.wrap_up_asked:
            return ()
        return tuple(tool.schema() for tool in self.d.tools)

    async def _context(self) -> ModelRequest:
        self._begin("context")
        system_pieces = (
            [{"slot": "instructions", "source": "definition", "text": self.d.system_prompt}]
            if self.d.system_prompt
            else []
        )
        tools = self._served_tools()
        request_only = (
            [{"role": "user", "reason": "wrap-up", "text": WRAP_UP_TEXT}]
            if self.wrap_up_asked
            else []
        )
        # Keys keep their value until set again, so only what changed is written.
        writes = []
        for key, value in (
            ("systemPieces", system_pieces),
            ("servedTools", list(tools)),
            ("requestOnly", request_only),
        ):
            if self.served.get(key) != value:
                writes.append(Write(key=key, verb="set", value=value))
                self.served[key] = value
        await self.committer.stage(Txn(agent_id=self.agent_id, bundles=[self._bundle(writes)]))
        extra = tuple(Message(role="user", content=line["text"]) for line in request_only)
        return ModelRequest(
            model=self.d.model.model,
            system=self.d.system_prompt,
            messages=(*self.history, *extra),
            tools=tools,
            params=self.d.params,
        )

    def _schema_hash(self, schema: ToolSchema) -> str:
        found = self._schema_hashes.get(schema.name)
        if found is None:
            found = self._schema_hashes[schema.name] = schema_hash(self.run_id, schema)
        return found

    async def _receipt(self, request: ModelRequest) -> EncodedRequest | None:
        self._begin("receipt")
        model = self.d.model
        encoded = model.encode(request) if model.encoder is not None else None
        # The window only grows within a run, so the digest extends by the new messages.
        if self.digest.count > len(self.history):
            self.digest = start_digest(self.run_id)
        self.digest = extend_digest(self.run_id, self.digest, self.history, self.fps)
        agent_call = self.conv.model_calls + 1
        call_stage_id = runtime_stage_id("call-model", self.seq + 1)
        request_only = tuple(
            RequestOnlyDigest(
                role="user",
                hash=salted(self.run_id, line["text"]),
                reason=line["reason"],
            )
            for line in self.served["requestOnly"]
        )
        receipt = Receipt(
            version=RECEIPT_VERSION,
            basis=Basis(
                epoch=self.iteration,
                run_id=self.run_id,
                model=model.model,
                provider=model.provider,
            ),
            agent_call=agent_call,
            call_runtime_stage_id=call_stage_id,
            system=SystemDigest(
                hash=salted(self.run_id, request.system), chars=len(request.system)
            ),
            messages=MessagesDigest(
                count=len(request.messages), digest=self.digest.digest, request_only=request_only
            ),
            tools=ToolsDigest(
                names=tuple(t.name for t in request.tools),
                schema_hashes={t.name: self._schema_hash(t) for t in request.tools},
                forced=None,
                withheld="wrap-up" if self.wrap_up_asked else None,
            ),
            params=request.params,
            wire=(
                wire_digest(
                    self.run_id,
                    encoded.body,
                    encoder=model.encoder or "",
                    settings=dict(model.settings()),
                    deterministic=model.deterministic,
                )
                if encoded is not None
                else None
            ),
        )
        state = self._checkpoint(model_calls=agent_call)
        bundle = self._bundle([Write(key="receipt", verb="set", value=receipt)])
        await self.committer.stage(
            Txn(agent_id=self.agent_id, bundles=[bundle], conversation=state)
        )
        self.epochs += 1
        self._emit(
            "receipt.minted",
            {
                "epoch": self.iteration,
                "agentCall": agent_call,
                "callRuntimeStageId": call_stage_id,
                "wire": encoded is not None,
            },
        )
        return encoded

    async def _call_model(
        self, request: ModelRequest, encoded: EncodedRequest | None
    ) -> CommittedReply | RunOutcome:
        self._begin("call-model")
        epoch = self.iteration
        self._emit(
            "model.started",
            {
                "epoch": epoch,
                "provider": self.d.model.provider,
                "model": self.d.model.model,
                "systemChars": len(request.system),
                "messageCount": len(request.messages),
                "requestOnlyCount": len(self.served["requestOnly"]),
                "toolCount": len(request.tools),
            },
        )
        started = self._now()

        def on_retry(attempt: int, exc: ModelCallError, wait_s: float) -> None:
            payload: dict[str, Any] = {
                "epoch": epoch,
                "attempt": attempt,
                "errorKind": exc.error_kind,
                "waitMs": round(wait_s * 1000),
            }
            if exc.status is not None:
                payload["status"] = exc.status
            self._emit("model.retry", payload)

        try:
            reply, failed = await send_with_retries(
                self.d.model,
                encoded if encoded is not None else request,  # type: ignore[arg-type]
                sleep=self.clock.sleep,
                random=self.rng.random,
                policy=self.d.retry,
                on_retry=on_retry,
            )
        except ModelCallError as exc:
            return await self._call_failed(exc)
        committed = CommittedReply(
            content=reply.content,
            tool_calls=reply.tool_calls,
            usage=reply.usage,
            stop_reason=reply.stop_reason,
            attempts=len(failed) + 1,
        )
        self.run_usage = self.run_usage + reply.usage
        state = self._checkpoint(usage_totals=self.conv.usage_totals + reply.usage)
        bundle = self._bundle(
            [
                Write(key="reply", verb="set", value=committed),
                Write(key="runUsage", verb="set", value=self.run_usage),
            ]
        )
        await self.committer.stage(
            Txn(agent_id=self.agent_id, bundles=[bundle], conversation=state)
        )
        self._emit(
            "model.ended",
            {
                "epoch": epoch,
                "stopReason": reply.stop_reason,
                "toolCallCount": len(reply.tool_calls),
                "contentChars": len(reply.content),
                "durationMs": self._now() - started,
                "attempts": committed.attempts,
                "usage": msgspec.to_builtins(reply.usage),
            },
        )
        return committed

    async def _call_failed(self, exc: ModelCallError) -> RunOutcome:
        now = self._now()
        turn = self.conv.open_turn
        assert turn is not None
        attempts = len(exc.attempts) or 1
        failure: dict[str, Any] = {
            "errorKind": exc.error_kind,
            "attempts": attempts,
            "message": exc.message,
        }
        if exc.status is not None:
            failure["status"] = exc.status
        if exc.retryable:
            retry_at = now + min(STALL_CAP_MS, STALL_BASE_MS * 2**turn.stalls)
            if exc.retry_after_s is not None:
                retry_at = now + round(exc.retry_after_s * 1000)
            status: RunStatus = "stalled"
            open_turn = self._open_turn(
                status="stalled",
                stalls=turn.stalls + 1,
                error_kind=exc.error_kind,
                error=exc.message,
                retry_at_ms=retry_at,
            )
        else:
            status = "held"
            open_turn = self._open_turn(status="held", error_kind=exc.error_kind, error=exc.message)
        payload = {"epoch": self.iteration, **failure, "retryable": exc.retryable}
        self._emit("model.failed", payload)
        state = self._checkpoint(open_turn=open_turn)
        bundle = self._bundle(
            [
                Write(key="callFailure", verb="set", value=failure),
                Write(key="runUsage", verb="set", value=self.run_usage),
            ]
        )
        await self.committer.stage(
            Txn(
                agent_id=self.agent_id,
                bundles=[bundle],
                conversation=state,
                run_end=RunEnd(
                    run_id=self.run_id, status=status, ended_at_ms=now, usage=self.run_usage
                ),
                inbox=[InboxUpdate(message_id=self.message_id, status=status)],
                full=True,
            ),
            closes=True,
        )
        await self.committer.flush()
        log.warning("turn stopped", status=status, error_kind=exc.error_kind, error=exc.message)
        if status == "stalled":
            self._emit(
                "turn.stalled",
                {
                    "errorKind": exc.error_kind,
                    "retryAtMs": open_turn.retry_at_ms,
                    "stalls": open_turn.stalls,
                },
                stage=False,
            )
        else:
            self._emit(
                "turn.held",
                {"errorKind": exc.error_kind, "message": exc.message, "runId": self.run_id},
                stage=False,
            )
        self._emit_run_ended(status)
        return self._outcome(status, error_kind=exc.error_kind, error=exc.message)

    async def _after_reply(
        self, reply: CommittedReply, *, settling: bool = False
    ) -> RunOutcome | None:
        route, reason = decide_route(
            reply.as_reply(),
            iteration=self.iteration,
            max_iterations=self.d.max_iterations,
            wrap_up=self.d.wrap_up,
            wrap_up_asked=self.wrap_up_asked,
        )
        self._emit(
            "route.decided",
            {"iteration": self.iteration, "route": route, "reason": reason},
            stage=False,
        )
        if route == "tool-calls":
            await self._tool_calls(reply, settling=settling)
            return None
        if route == "wrap-up":
            await self._wrap_up(reply, settling=settling)
            return None
        return await self._final(reply, cut_short=reason == "cut-short", settling=settling)

    # -- closing stages -----------------------------------------------------------------------

    async def _tool_calls(self, reply: CommittedReply, *, settling: bool) -> None:
        self._begin("settle" if settling else "tool-calls")
        calls = unique_call_ids(reply.tool_calls, self.used_call_ids)
        assistant = Message(role="assistant", content=reply.content, tool_calls=calls)
        journal = await self.store.journal(self.agent_id, self.conv.turn) if settling else {}
        planned = plan_batch(calls, self.d.tools_by_name)
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
                tool = self.d.tools_by_name.get(plan.call.name)
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
        outcomes = {o.tool_call_id: o for o in await self._dispatch(to_run, batch_size=len(calls))}
        outcomes.update(reused)
        ordered = [outcomes[plan.call.id] for plan in planned]
        results = []
        for outcome in ordered:
            entry: dict[str, Any] = {
                "toolCallId": outcome.tool_call_id,
                "toolName": outcome.tool_name,
                "status": outcome.status,
                "resultChars": outcome.result_chars,
            }
            if outcome.duration_ms is not None:
                entry["durationMs"] = outcome.duration_ms
            if outcome.truncated:
                entry["truncated"] = True
            if outcome.tool_call_id in settled:
                entry["settled"] = settled[outcome.tool_call_id]
            results.append(entry)
        items, appended = self._append_history([assistant, *(o.message() for o in ordered)])
        closed = self.iteration
        self.iteration += 1
        state = self._checkpoint(open_turn=self._open_turn(next_iteration=self.iteration))
        bundle = CommitBundle(
            run_id=self.run_id,
            seq=self.seq,
            stage=self._stage,
            runtime_stage_id=runtime_stage_id(self._stage, self.seq),
            iteration=closed,
            writes=(
                Write(key="history", verb="append", value=appended),
                Write(key="toolResults", verb="set", value=results),
                Write(key="iteration", verb="set", value=self.iteration),
            ),
            committed_at_ms=self._now(),
        )
        self.seq += 1
        await self.committer.stage(
            Txn(agent_id=self.agent_id, bundles=[bundle], items=items, conversation=state),
            closes=True,
        )
        self._emit(
            "iteration.ended",
            {"iteration": closed, "route": "tool-calls", "toolCallCount": len(calls)},
            stage=False,
        )
        log.info("iteration", route="tool-calls", tool_calls=len(calls), epochs=self.epochs)

    async def _dispatch(
        self, planned: Sequence[Any], *, batch_size: int
    ) -> tuple[ToolOutcome, ...]:
        if not planned:
            return ()
        turn = self.conv.turn
        journals = self.committer.journals

        async def on_group_start(group: Sequence[Any]) -> None:
            if not journals:
                return
            rows = [
                JournalRow(
                    agent_id=self.agent_id,
                    turn=turn,
                    tool_call_id=p.call.id,
                    state="started",
                    run_id=self.run_id,
                )
                for p in group
                if p.runnable
            ]
            if rows:
                # "started" means "may have run": it must be on disk before any tool runs.
                await self.store.commit(Txn(agent_id=self.agent_id, journal=rows, full=True))

        def on_call_started(plan: Any, index: int, size: int, concurrent: bool) -> None:
            self._emit(
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
                    agent_id=self.agent_id,
                    turn=turn,
                    tool_call_id=outcome.tool_call_id,
                    state="finished",
                    run_id=self.run_id,
                    outcome=_outcome_encoder.encode(outcome),
                )
                await self.store.commit(Txn(agent_id=self.agent_id, journal=[row]))
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
            self._emit("tool.ended", payload)

        def context_for(plan: Any) -> ToolContext:
            return ToolContext(
                tool_call_id=plan.call.id,
                tool_name=plan.call.name,
                agent_id=self.agent_id,
                run_id=self.run_id,
                turn=turn,
                iteration=self.iteration,
                clock=self.clock,
                on_progress=lambda payload, call_id=plan.call.id: self._emit(
                    "tool.progress", {"toolCallId": call_id, "payload": payload}
                ),
            )

        return await run_batch(
            planned,
            context_for=context_for,
            clock=self.clock,
            max_concurrent=self.d.max_concurrent_tools,
            on_group_start=on_group_start,
            on_call_started=on_call_started,
            on_call_finished=on_call_finished,
        )

    async def _wrap_up(self, reply: CommittedReply, *, settling: bool) -> None:
        self._begin("settle" if settling else "wrap-up")
        self.stopped_early = {
            "reason": "max-iterations",
            "iteration": self.iteration,
            "pendingToolCalls": len(reply.tool_calls),
            "answerWasEmpty": not reply.content,
            "wrappedUp": True,
        }
        self._emit(
            "budget.exhausted",
            {
                "iteration": self.iteration,
                "maxIterations": self.d.max_iterations,
                "pendingToolCalls": len(reply.tool_calls),
                "action": "wrap-up",
            },
        )
        self.wrap_up_asked = True
        closed = self.iteration
        self.iteration += 1
        state = self._checkpoint(
            open_turn=self._open_turn(
                next_iteration=self.iteration, wrap_up_asked=True, stopped_early=self.stopped_early
            )
        )
        bundle = self._bundle(
            [
                Write(key="wrapUpAsked", verb="set", value=True),
                Write(key="stoppedEarly", verb="set", value=self.stopped_early),
                Write(key="iteration", verb="set", value=self.iteration),
            ]
        )
        bundle = msgspec.structs.replace(bundle, iteration=closed)
        await self.committer.stage(
            Txn(agent_id=self.agent_id, bundles=[bundle], conversation=state), closes=True
        )
        self._emit(
            "iteration.ended",
            {"iteration": closed, "route": "wrap-up", "toolCallCount": len(reply.tool_calls)},
            stage=False,
        )

    async def _final(self, reply: CommittedReply, *, cut_short: bool, settling: bool) -> RunOutcome:
        self._begin("settle" if settling else "final")
        now = self._now()
        writes = []
        if cut_short:
            self.stopped_early = {
                "reason": "max-iterations",
                "iteration": self.iteration,
                "pendingToolCalls": len(reply.tool_calls),
                "answerWasEmpty": not reply.content,
                "wrappedUp": False,
                "action": "cut-short",
            }
            self._emit(
                "budget.exhausted",
                {
                    "iteration": self.iteration,
                    "maxIterations": self.d.max_iterations,
                    "pendingToolCalls": len(reply.tool_calls),
                    "action": "cut-short",
                },
            )
        items, appended = self._append_history([Message(role="assistant", content=reply.content)])
        writes.append(Write(key="history", verb="append", value=appended))
        writes.append(Write(key="finalAnswer", verb="set", value=reply.content))
        if self.stopped_early is not None:
            writes.append(Write(key="stoppedEarly", verb="set", value=self.stopped_early))
        if reply.tool_calls and not cut_short:
            # Calls on the wrap-up call are recorded, never dispatched.
            ignored = [{"toolCallId": c.id, "toolName": c.name} for c in reply.tool_calls]
            writes.append(Write(key="ignoredToolCalls", verb="set", value=ignored))
        turn = self.conv.open_turn
        assert turn is not None
        state = self._checkpoint(open_turn=None, last_run_id=self.run_id)
        await self.committer.stage(
            Txn(
                agent_id=self.agent_id,
                bundles=[self._bundle(writes)],
                items=items,
                conversation=state,
                run_end=RunEnd(
                    run_id=self.run_id, status="answered", ended_at_ms=now, usage=self.run_usage
                ),
                inbox=[InboxUpdate(message_id=self.message_id, status="answered")],
                full=True,
            ),
            closes=True,
        )
        self._emit(
            "iteration.ended",
            {"iteration": self.iteration, "route": "final", "toolCallCount": 0},
            stage=False,
        )
        self._emit_run_ended("answered")
        ended: dict[str, Any] = {
            "turn": state.turn,
            "messageId": self.message_id,
            "status": "answered",
            "runs": turn.runs,
            "iterations": self.iteration,
            "epochs": self.epochs,
            "usage": msgspec.to_builtins(self.run_usage),
        }
        if self.stopped_early is not None:
            ended["stoppedEarly"] = self.stopped_early
        self._emit("turn.ended", ended, stage=False)
        log.info("iteration", route="final", epochs=self.epochs)
        return self._outcome("answered", final_answer=reply.content)

    async def _settle(self, reply: CommittedReply) -> RunOutcome | None:
        """Complete the iteration whose reply was committed before a crash; never re-ask."""
        return await self._after_reply(reply, settling=True)

    def _emit_run_ended(self, status: str) -> None:
        self._emit(
            "run.ended",
            {
                "runId": self.run_id,
                "status": status,
                "epochs": self.epochs,
                "usage": msgspec.to_builtins(self.run_usage),
            },
            stage=False,
        )

    def _outcome(self, status: RunStatus, **extra: Any) -> RunOutcome:
        return RunOutcome(
            run_id=self.run_id,
            kind=self.kind,
            turn=self.conv.turn,
            status=status,
            epochs=self.epochs,
            usage=self.run_usage,
            iteration=self.iteration,
            **extra,
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
