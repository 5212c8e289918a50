"""A run simulator for the served tests: it commits, bundle by bundle, what the loop commits.

``RunSim`` writes a ``seed`` bundle, then per iteration ``window``, ``context`` (per-request keys
only when they changed since the run's previous ``context`` bundle), ``receipt`` (a real
``Receipt`` minted with the receipt helpers from the composed request), ``call-model`` and then
``tool-calls``, ``wrap-up`` or ``final``, into a ``MemoryRunLog``. It also records what the
"adapter" saw (requests and encoded bodies), so tests can compare views with what was sent.

``copy_log`` makes a damaged copy of a log (a bundle removed, a write replaced, a body removed
or overwritten) and ``CountingLog`` counts reads for the cost cases.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from afp_runtime.messages import (
    Message,
    ModelParams,
    ModelRequest,
    ToolCall,
    ToolChoice,
    ToolSchema,
    canonical_json,
    fingerprint,
    message_body,
    salted,
    tool_result,
    user,
)
from afp_runtime.records import (
    AgentIdWrite,
    Anchor,
    CallFailureWrite,
    CommitBundle,
    CompactionsWrite,
    DefinitionWrite,
    FinalAnswerWrite,
    ForcedToolWrite,
    HistoryWrite,
    IterationWrite,
    MaxIterationsWrite,
    ModelWrite,
    ProviderWrite,
    ReceiptWrite,
    ReplyWrite,
    RunIdWrite,
    RunKindWrite,
    RunLog,
    RunUsageWrite,
    StoppedEarlyWrite,
    ToolResultsWrite,
    TurnWrite,
    UserMessageWrite,
    WrapUpAskedWrite,
    Write,
    write_of,
)
from afp_runtime.served import (
    Receipt,
    extend_digest,
    new_entries,
    schema_hash,
    start_digest,
    wire_digest,
)
from afp_runtime.served.memory import MemoryRunLog
from afp_runtime.served.receipt import (
    RECEIPT_VERSION,
    Basis,
    MessagesDigest,
    OmittedForAttention,
    PieceDigest,
    RequestOnlyDigest,
    SystemDigest,
    ToolsDigest,
    request_only_hash,
)

WRAP_UP_LINE = "Your step budget is spent: answer now with what you have, without tools."


@dataclass(frozen=True)
class Encoded:
    """An encoded request: the body bytes."""

    body: bytes


@dataclass
class TestEncoder:
    """A stand-in for an adapter's encoding half (the ``scripted/1`` shape by default).

    The body is the canonical JSON of the request, plus the settings when there are any; a
    non-deterministic encoder adds a counter, as an adapter stamping a request id would.
    """

    __test__ = False

    encoder: str | None = "scripted/1"
    deterministic: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    _counter: Iterator[int] = field(default_factory=itertools.count)

    def settings(self) -> Mapping[str, Any]:
        return dict(self.extra)

    def encode(self, request: ModelRequest) -> Encoded:
        body = canonical_json(request)
        if self.extra:
            body = canonical_json({"request": request, "settings": self.extra})
        if not self.deterministic:
            body += f" #{next(self._counter)}".encode()
        return Encoded(body=body)


@dataclass(frozen=True)
class Reply:
    """A scripted model reply."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    attempts: int = 1


@dataclass(frozen=True)
class Failure:
    """A scripted model failure (the call ends without a reply)."""

    error_kind: str = "auth"
    status: int | None = 401
    attempts: int = 1


def tool(name: str) -> ToolSchema:
    """The schema ``tool(n)`` of docs/served.md#how-this-is-tested."""
    return ToolSchema(name=name, description=f"the {name} tool", input_schema={"type": "object"})


def call(call_id: str, name: str, args: dict[str, Any] | None = None) -> Reply:
    """A reply with empty content that requests exactly one tool."""
    return Reply(tool_calls=(ToolCall(id=call_id, name=name, args=args or {}),))


def answer(text: str) -> Reply:
    """A reply with text and no tool request."""
    return Reply(content=text)


def piece(text: str, slot: str = "instructions", source: str = "ops") -> dict[str, str]:
    """A system piece as ``context`` commits it."""
    return {"slot": slot, "source": source, "text": text}


class RunSim:
    """Simulates one run of a standing agent, committing what the loop commits.

    Args:
        run_id: the run id (the digest salt).
        system: the system prompt, or explicit pieces (``piece(...)``) in wire order.
        tools: served tool schemas.
        forced: a forced answer tool, served last (and alone on a wrap-up call).
        params: sampling dials; a forced tool adds ``toolChoice``.
        encoder: the adapter's encoding half; None for a model without ``encode``.
        max_iterations: the step budget; the call after it is the wrap-up call.
        window_keep: keep the first message and the last ``2 * window_keep`` messages.
        notice: with a window, insert a notice saying how many messages were set aside.
        time_line: text of a ``time-line`` request-only line per iteration.
        first_iteration: the iteration of the run's first model call.
        history: the conversation restored at seed (default: the agent message ``"go"``).
        base: fingerprint counts of the conversation's previous receipt (a recovery run).
        agent_call: the agent-wide call counter before this run.
        live: whether the run is still running when the simulation stops.
        context_writes: ``"changed"`` (as the loop) or ``"always"`` (every key every time).
    """

    def __init__(
        self,
        run_id: str = "run-1",
        *,
        system: str | Sequence[Mapping[str, str]] = "you are a bot",
        tools: Sequence[ToolSchema] = (),
        forced: ToolSchema | None = None,
        params: ModelParams | None = None,
        encoder: TestEncoder | None = None,
        model: str = "mock",
        provider: str = "scripted",
        max_iterations: int = 10,
        window_keep: int | None = None,
        notice: bool = False,
        time_line: Callable[[int], str] | None = None,
        first_iteration: int = 1,
        history: Sequence[Message] | None = None,
        base: Counter[str] | None = None,
        agent_call: int = 0,
        live: bool = False,
        context_writes: str = "changed",
    ) -> None:
        self.run_id = run_id
        if isinstance(system, str):
            self.pieces = [piece(system)] if system else []
        else:
            self.pieces = [dict(p) for p in system]
        self.tools = list(tools)
        self.forced = forced
        self.params = params or ModelParams()
        self.encoder = encoder if encoder is not None else None
        self.model = model
        self.provider = provider
        self.max_iterations = max_iterations
        self.window_keep = window_keep
        self.notice = notice
        self.time_line = time_line
        self.iteration = first_iteration
        self.history: list[Message] = list(history) if history is not None else [user("go")]
        self.base: Counter[str] = base if base is not None else Counter()
        self.agent_call = agent_call
        self.context_writes = context_writes
        self.log = MemoryRunLog(run_id, live=live)
        self.wrap_up_asked = False
        self.served: dict[str, Any] = {}
        self.removed_total = 0
        self.omitted: tuple[str, ...] = ()
        self.receipts: list[Receipt] = []
        self.requests: list[ModelRequest] = []
        self.bodies: list[bytes] = []
        self.sent: list[tuple[Message, ...]] = []
        self.ended = False
        self.next_seq = 0
        self._seeded = False

    # --- stages -----------------------------------------------------------------------------

    def _commit(self, stage: str, writes: Sequence[Write], iteration: int | None = None) -> int:
        bundle = self.log.append(
            stage, writes, iteration=self.iteration if iteration is None else iteration
        )
        self.next_seq = bundle.seq + 1
        return bundle.seq

    def seed(self) -> RunSim:
        """Commit the run's ``seed`` bundle."""
        writes = [
            RunIdWrite(verb="set", value=self.run_id),
            AgentIdWrite(verb="set", value="ops"),
            TurnWrite(verb="set", value=1),
            RunKindWrite(verb="set", value="initial"),
            UserMessageWrite(verb="set", value="go"),
            HistoryWrite(verb="set", value=list(self.history)),
            IterationWrite(verb="set", value=self.iteration),
            MaxIterationsWrite(verb="set", value=self.max_iterations),
            ModelWrite(verb="set", value=self.model),
            ProviderWrite(verb="set", value=self.provider),
            DefinitionWrite(verb="set", value={"agentId": "ops"}),
            RunUsageWrite(verb="set", value={}),
        ]
        if self.forced is not None:
            writes.append(ForcedToolWrite(verb="set", value=self.forced.name))
        self._commit("seed", writes)
        self._seeded = True
        return self

    def _window(self) -> None:
        self.omitted = ()
        if self.window_keep is None:
            self._commit("window", [])
            return
        first, rest = self.history[0], [m for m in self.history[1:] if m.injected_by is None]
        drop = max(0, len(rest) - 2 * self.window_keep)
        if drop == 0:
            self._commit("window", [])
            return
        removed, kept = rest[:drop], rest[drop:]
        self.removed_total += drop
        self.omitted = tuple(salted(self.run_id, message_body(m)) for m in removed)
        notice = []
        if self.notice:
            text = f"{self.removed_total} earlier messages were set aside to keep the window small"
            notice = [Message(role="user", content=text, injected_by="window")]
        self.history = [first, *notice, *kept]
        self._commit(
            "window",
            [
                HistoryWrite(verb="set", value=list(self.history)),
                CompactionsWrite(verb="append", value=[{"removed": drop}]),
            ],
        )

    def _context(self, stubs: Mapping[int, Message]) -> tuple[list[Message], ModelRequest]:
        # Negative stub indexes count from the end of the window this call sends.
        stubs = {i if i >= 0 else len(self.history) + i: m for i, m in stubs.items()}
        schemas = list(self.tools)
        if self.wrap_up_asked:
            schemas = []
        if self.forced is not None:
            schemas.append(self.forced)
        request_only = []
        if self.wrap_up_asked:
            request_only.append({"role": "user", "reason": "wrap-up", "text": WRAP_UP_LINE})
        if self.time_line is not None:
            line = self.time_line(self.iteration)
            request_only.append({"role": "user", "reason": "time-line", "text": line})
        substitutions = [
            {"index": index, "message": msgspec.to_builtins(message)}
            for index, message in sorted(stubs.items())
        ]
        values = {
            "systemPieces": self.pieces,
            "servedTools": [msgspec.to_builtins(s) for s in schemas],
            "requestOnly": request_only,
            "substitutions": substitutions,
        }
        writes = []
        for key, value in values.items():
            before = self.served.get(key, [] if key == "substitutions" else None)
            if self.context_writes == "always" or before != value:
                writes.append(write_of(key, "set", value))
            self.served[key] = value
        self._commit("context", writes)
        sent = list(self.history)
        for index, message in stubs.items():
            sent[index] = message
        params = self.params
        if self.forced is not None:
            params = msgspec.structs.replace(
                params, tool_choice=ToolChoice(type="tool", name=self.forced.name)
            )
        request = ModelRequest(
            model=self.model,
            system="\n\n".join(p["text"] for p in self.pieces if p["text"]),
            messages=(
                *sent,
                *(Message(role="user", content=line["text"]) for line in request_only),
            ),
            tools=tuple(schemas),
            forced=self.forced.name if self.forced is not None else None,
            params=params,
        )
        return sent, request

    def _receipt(self, sent: list[Message], request: ModelRequest) -> None:
        run_id = self.run_id
        fps = [fingerprint(m) for m in sent]
        digest = extend_digest(run_id, start_digest(run_id), sent, fps)
        request_only = self.served["requestOnly"]
        contributing = [p for p in self.pieces if p["text"]]
        wire = None
        encoder = self.encoder
        if encoder is not None and encoder.encoder is not None:
            body = encoder.encode(request).body
            self.bodies.append(body)
            wire = wire_digest(
                run_id,
                body,
                encoder=encoder.encoder,
                settings=dict(encoder.settings()),
                deterministic=encoder.deterministic,
            )
        self.agent_call += 1
        seq = self.next_seq
        receipt = Receipt(
            version=RECEIPT_VERSION,
            basis=Basis(
                epoch=self.iteration, run_id=run_id, model=self.model, provider=self.provider
            ),
            agent_call=self.agent_call,
            call_runtime_stage_id=f"call-model#{seq + 1}",
            system=SystemDigest(
                hash=salted(run_id, request.system),
                chars=len(request.system),
                pieces=tuple(
                    PieceDigest(hash=salted(run_id, p["text"]), slot=p["slot"], source=p["source"])
                    for p in contributing
                ),
            ),
            messages=MessagesDigest(
                count=len(sent) + len(request_only),
                digest=digest.digest,
                new_entries=new_entries(run_id, sent, fps, self.base),
                request_only=tuple(
                    RequestOnlyDigest(
                        role=line["role"],
                        hash=request_only_hash(run_id, line["text"], line["role"]),
                        reason=line["reason"],
                    )
                    for line in request_only
                ),
            ),
            tools=ToolsDigest(
                names=tuple(s.name for s in request.tools),
                schema_hashes={s.name: schema_hash(run_id, s) for s in request.tools},
                forced=request.forced,
                withheld="wrap-up" if self.wrap_up_asked else None,
            ),
            params=request.params,
            omitted_for_attention=(
                OmittedForAttention(count=len(self.omitted), hashes=self.omitted)
                if self.omitted
                else None
            ),
            wire=wire,
        )
        self.base = Counter(fps)
        self.receipts.append(receipt)
        self.requests.append(request)
        self.sent.append(tuple(sent))
        self._commit("receipt", [ReceiptWrite(verb="set", value=receipt)])

    def _call_model(self, outcome: Reply | Failure) -> None:
        if isinstance(outcome, Failure):
            failure: dict[str, Any] = {
                "errorKind": outcome.error_kind,
                "attempts": outcome.attempts,
                "message": "the endpoint refused the call",
            }
            if outcome.status is not None:
                failure["status"] = outcome.status
            self._commit(
                "call-model",
                [
                    CallFailureWrite(verb="set", value=failure),
                    RunUsageWrite(verb="set", value={}),
                ],
            )
            return
        reply: dict[str, Any] = {
            "content": outcome.content,
            "toolCalls": [msgspec.to_builtins(c) for c in outcome.tool_calls],
            "stopReason": "tool-calls" if outcome.tool_calls else "end",
        }
        if outcome.attempts != 1:
            # As the loop stores it: the default of one send is omitted.
            reply["attempts"] = outcome.attempts
        self._commit(
            "call-model",
            [
                ReplyWrite(verb="set", value=reply),
                RunUsageWrite(verb="set", value={"input": 1, "output": 1}),
            ],
        )

    def _route(self, reply: Reply) -> None:
        closed = self.iteration
        if reply.tool_calls and not self.wrap_up_asked and closed >= self.max_iterations:
            self.wrap_up_asked = True
            self.iteration += 1
            self._commit(
                "wrap-up",
                [
                    WrapUpAskedWrite(verb="set", value=True),
                    StoppedEarlyWrite(verb="set", value={"reason": "max-iterations"}),
                    IterationWrite(verb="set", value=self.iteration),
                ],
                iteration=closed,
            )
            return
        if reply.tool_calls and not self.wrap_up_asked:
            assistant = Message(
                role="assistant", content=reply.content, tool_calls=reply.tool_calls
            )
            results = [
                tool_result(c.id, c.name, f"{c.name} answered {c.id}") for c in reply.tool_calls
            ]
            self.history += [assistant, *results]
            self.iteration += 1
            self._commit(
                "tool-calls",
                [
                    HistoryWrite(verb="append", value=[assistant, *results]),
                    ToolResultsWrite(verb="set", value=[]),
                    IterationWrite(verb="set", value=self.iteration),
                ],
                iteration=closed,
            )
            return
        final = Message(role="assistant", content=reply.content)
        self.history.append(final)
        self._commit(
            "final",
            [
                HistoryWrite(verb="append", value=[final]),
                FinalAnswerWrite(verb="set", value=reply.content),
            ],
        )
        self.ended = True

    def step(
        self,
        outcome: Reply | Failure | None,
        *,
        stubs: Mapping[int, Message] | None = None,
    ) -> RunSim:
        """One iteration; ``outcome=None`` stops right after the receipt (a crash or in flight)."""
        if not self._seeded:
            self.seed()
        self._window()
        sent, request = self._context(dict(stubs or {}))
        self._receipt(sent, request)
        if outcome is None:
            self.ended = True
            return self
        self._call_model(outcome)
        if isinstance(outcome, Failure):
            self.ended = True
            return self
        self._route(outcome)
        return self

    def run(self, script: Sequence[Reply | Failure | None]) -> RunSim:
        """Seed, then one step per script entry until the run ends."""
        for outcome in script:
            if self.ended:
                break
            self.step(outcome)
        return self


def copy_log(
    log: RunLog,
    *,
    drop: Sequence[int] = (),
    replace: Mapping[tuple[int, str], Any] | None = None,
    add: Mapping[int, Sequence[Write]] | None = None,
    drop_bodies: Sequence[str] = (),
    bodies: Mapping[str, bytes] | None = None,
    has_base: bool | None = None,
    live: bool | None = None,
) -> MemoryRunLog:
    """A copy of ``log`` with bundles dropped, writes replaced or added, bodies changed."""
    replace = dict(replace or {})
    copied = []
    for bundle in log.bundles(0):
        if bundle.seq in drop:
            continue
        writes = []
        for write in bundle.writes:
            key = (bundle.seq, write.key)
            if key in replace:
                writes.append(write_of(write.key, "set", replace.pop(key)))
            else:
                writes.append(write)
        writes.extend((add or {}).get(bundle.seq, ()))
        copied.append(msgspec.structs.replace(bundle, writes=tuple(writes)))
    stored = {fp: log.body(fp) for fp in _all_fingerprints(log)}
    kept = {fp: body for fp, body in stored.items() if body is not None and fp not in drop_bodies}
    kept.update(bodies or {})
    return MemoryRunLog(
        log.run_id,
        copied,
        kept,
        has_base=has_base,
        live=log.live if live is None else live,
    )


def _all_fingerprints(log: RunLog) -> list[str]:
    if isinstance(log, MemoryRunLog):
        return list(log.stored_bodies())
    found: dict[str, None] = {}
    for bundle in log.bundles(0):
        for write in bundle.writes:
            if write.key == "history" and isinstance(write.value, list | tuple):
                for ref in write.value:
                    found[ref.fingerprint] = None
    return list(found)


class CountingLog:
    """A ``RunLog`` wrapper that counts index reads, bundle reads and body reads."""

    def __init__(self, inner: RunLog) -> None:
        self.inner = inner
        self.run_id = inner.run_id
        self.has_base = inner.has_base
        self.live = inner.live
        self.value_reads: Counter[str] = Counter()
        self.bundle_reads: Counter[int] = Counter()
        self.body_reads: Counter[str] = Counter()
        self.anchor_reads = 0

    def reset(self) -> None:
        """Forget the counts so far."""
        self.value_reads.clear()
        self.bundle_reads.clear()
        self.body_reads.clear()
        self.anchor_reads = 0

    def counts(self) -> tuple[int, int, int, int]:
        """(anchor reads, value reads, bundle reads, body reads)."""
        return (
            self.anchor_reads,
            sum(self.value_reads.values()),
            sum(self.bundle_reads.values()),
            sum(self.body_reads.values()),
        )

    def anchors(self) -> tuple[Anchor, ...]:
        self.anchor_reads += 1
        return self.inner.anchors()

    def anchor_at(self, epoch: int) -> Anchor | None:
        self.anchor_reads += 1
        return self.inner.anchor_at(epoch)

    def bundle(self, seq: int) -> CommitBundle | None:
        self.bundle_reads[seq] += 1
        return self.inner.bundle(seq)

    def bundles(self, from_seq: int = 0) -> Iterator[CommitBundle]:
        for bundle in self.inner.bundles(from_seq):
            self.bundle_reads[bundle.seq] += 1
            yield bundle

    def value_at(self, key: str, seq: int) -> Any:
        self.value_reads[key] += 1
        return self.inner.value_at(key, seq)

    def body(self, fingerprint: str) -> bytes | None:
        self.body_reads[fingerprint] += 1
        return self.inner.body(fingerprint)


def two_epoch_run(run_id: str = "run-1", **options: Any) -> RunSim:
    """Case 8's run: system "you are a bot", tool alpha_tool, [call(c1), answer("done")]."""
    options.setdefault("tools", [tool("alpha_tool")])
    options.setdefault("encoder", TestEncoder())
    return RunSim(run_id, **options).run([call("c1", "alpha_tool"), answer("done")])
