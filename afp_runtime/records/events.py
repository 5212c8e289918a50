"""Events and their registry (docs/host.md#event-catalogue): one payload Struct per event type,
the ``Event`` envelope that carries one, and the decoder of an envelope's wire form.

Every payload class names its type in ``type`` (a class attribute, not a field): the wire keeps
the type beside the payload in the envelope (``{"id", "type", …, "payload": {…}}``), so it is
not repeated inside the payload. ``EventPayload`` is the union of every payload class and
``EVENT_TYPES`` maps each type string to its one class; emit sites build a payload, readers
match on its class.

Field order is wire order. A key an event may leave out defaults to ``UNSET`` (never written);
a key that is always sent has no default, and is sent as ``null`` when its value is None.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, get_args

import msgspec
from msgspec import UNSET, UnsetType

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import Cost, Usage
from afp_runtime.records.txn import QuestionKind


class Payload(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The base of every event payload: ``type`` is the event type it is sent as."""

    type: ClassVar[str]


class CostFigures(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A cost as events carry it: the ``Cost`` fields and ``total`` (null while a call's cost is
    unknown; docs/cost.md#figures)."""

    amount: float
    priced: int
    unknown: int
    total: float | None

    @classmethod
    def of(cls, cost: Cost) -> CostFigures:
        return cls(amount=cost.amount, priced=cost.priced, unknown=cost.unknown, total=cost.total)


class DayCostFigures(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One UTC day's cost as ``cost.spent`` carries it: the day, then its ``CostFigures``."""

    day: str
    amount: float
    priced: int
    unknown: int
    total: float | None

    @classmethod
    def of(cls, day: str, cost: Cost) -> DayCostFigures:
        return cls(
            day=day, amount=cost.amount, priced=cost.priced, unknown=cost.unknown, total=cost.total
        )


# -- turns and runs ---------------------------------------------------------------------------


class InboxAccepted(Payload, frozen=True, kw_only=True):
    type = "inbox.accepted"
    message_id: str
    position: int
    text_chars: int


class RunStarted(Payload, frozen=True, kw_only=True):
    type = "run.started"
    run_id: str
    turn: int
    kind: str
    recovered_from: str | UnsetType = UNSET


class TurnStarted(Payload, frozen=True, kw_only=True):
    type = "turn.started"
    turn: int
    message_id: str


class TurnPaused(Payload, frozen=True, kw_only=True):
    type = "turn.paused"
    question_ids: list[str]
    kinds: list[QuestionKind]


class TurnStalled(Payload, frozen=True, kw_only=True):
    type = "turn.stalled"
    error_kind: str
    retry_at_ms: int | None
    stalls: int


class TurnHeld(Payload, frozen=True, kw_only=True):
    type = "turn.held"
    error_kind: str
    message: str | None
    run_id: str | None


class TurnEnded(Payload, frozen=True, kw_only=True):
    """``answer`` when answered; ``errorKind`` and ``error`` when halted; ``reason``,
    ``errorKind`` and ``error`` when dismissed (sent as null when the held turn had none)."""

    type = "turn.ended"
    turn: int
    message_id: str
    status: str
    runs: int
    iterations: int
    epochs: int
    usage: Usage
    duration_ms: int
    answer: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    error_kind: str | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    cost: CostFigures | UnsetType = UNSET
    # The turn's stored ``stoppedEarly`` record as it is (its shape is the commit log's).
    stopped_early: dict[str, Any] | UnsetType = UNSET


class RunEnded(Payload, frozen=True, kw_only=True):
    """``answer`` when answered, else ``reason`` (and, held or stalled, ``errorKind`` and
    ``error``)."""

    type = "run.ended"
    run_id: str
    status: str
    epochs: int
    usage: Usage
    answer: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    error_kind: str | UnsetType = UNSET
    error: str | UnsetType | None = UNSET


# -- iterations and model calls ---------------------------------------------------------------


class IterationStarted(Payload, frozen=True, kw_only=True):
    type = "iteration.started"
    iteration: int


class ReceiptMinted(Payload, frozen=True, kw_only=True):
    type = "receipt.minted"
    epoch: int
    agent_call: int
    call_runtime_stage_id: str
    wire: bool
    wire_digest: str | UnsetType = UNSET


class ModelStarted(Payload, frozen=True, kw_only=True):
    type = "model.started"
    epoch: int
    provider: str
    model: str
    system_chars: int
    message_count: int
    request_only_count: int
    tool_count: int


class ModelRetry(Payload, frozen=True, kw_only=True):
    type = "model.retry"
    epoch: int
    attempt: int
    error_kind: str
    wait_ms: int
    status: int | UnsetType = UNSET


class ModelDelta(Payload, frozen=True, kw_only=True):
    """One fragment of a streamed reply (docs/loop.md#streaming-replies): reply text, or a piece
    of one tool call's arguments. ``attempt`` is the send it belongs to (a retry starts again at
    ``index`` 0), so a reader drops the fragments of an attempt that failed."""

    type = "model.delta"
    epoch: int
    attempt: int
    index: int
    text: str | UnsetType = UNSET
    tool_call_index: int | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    tool_name: str | UnsetType = UNSET
    arguments: str | UnsetType = UNSET


class ModelEnded(Payload, frozen=True, kw_only=True):
    type = "model.ended"
    epoch: int
    stop_reason: str
    tool_call_count: int
    content_chars: int
    duration_ms: int
    attempts: int
    usage: Usage


class ModelFailed(Payload, frozen=True, kw_only=True):
    type = "model.failed"
    epoch: int
    error_kind: str
    attempts: int
    message: str
    status: int | UnsetType = UNSET
    retryable: bool


class RouteDecided(Payload, frozen=True, kw_only=True):
    type = "route.decided"
    iteration: int
    route: str
    reason: str


class BudgetExhausted(Payload, frozen=True, kw_only=True):
    type = "budget.exhausted"
    iteration: int
    max_iterations: int
    pending_tool_calls: int
    action: Literal["wrap-up", "cut-short"]


class CostSpent(Payload, frozen=True, kw_only=True):
    """A model call's cost (``epoch`` set) or a summarizer call's (no ``epoch``; with no pricing
    only ``provider``, ``model`` and ``usage``). ``amount`` or ``unknown`` with pricing."""

    type = "cost.spent"
    epoch: int | UnsetType = UNSET
    provider: str
    model: str
    usage: Usage | UnsetType | None = UNSET
    amount: float | UnsetType = UNSET
    unknown: str | UnsetType = UNSET
    turn: CostFigures | UnsetType = UNSET
    day: DayCostFigures | UnsetType = UNSET


class OutputInvalid(Payload, frozen=True, kw_only=True):
    type = "output.invalid"
    attempt: int
    problem: str
    retrying: bool


class BudgetExceeded(Payload, frozen=True, kw_only=True):
    type = "budget.exceeded"
    limit: float
    per: Literal["turn", "day"]
    action: Literal["warn", "halt"]
    spent: CostFigures


class IterationEnded(Payload, frozen=True, kw_only=True):
    type = "iteration.ended"
    iteration: int
    route: str
    tool_call_count: int


# -- tools ------------------------------------------------------------------------------------


class ToolStarted(Payload, frozen=True, kw_only=True):
    type = "tool.started"
    tool_call_id: str
    tool_name: str
    call_index: int
    batch_size: int
    concurrent: bool


class ToolProgress(Payload, frozen=True, kw_only=True):
    """Whatever the tool reported, as it reported it."""

    type = "tool.progress"
    tool_call_id: str
    payload: Any


class ToolEnded(Payload, frozen=True, kw_only=True):
    type = "tool.ended"
    tool_call_id: str
    tool_name: str
    call_index: int
    status: str
    duration_ms: int
    result_chars: int
    truncated: bool | UnsetType = UNSET


# -- window and findings ----------------------------------------------------------------------


class WindowRecorded(Payload, frozen=True, kw_only=True):
    type = "window.recorded"
    strategy: str
    removed_message_count: int
    window_chars_before: int
    window_chars_after: int


class WindowEvicted(Payload, frozen=True, kw_only=True):
    type = "window.evicted"
    slot: str
    fingerprint: str
    index: int
    reason: str
    survival_ms: int


class WindowBudgetPressure(Payload, frozen=True, kw_only=True):
    type = "window.budget-pressure"
    slot: str
    # Numbers as the strategy measured them: a cap may be fractional, an overflow 0.
    overflow_by: int | float
    plan_action: str
    unit: str
    cap: int | float
    projected: int


class FindingsDeclared(Payload, frozen=True, kw_only=True):
    type = "findings.declared"
    tool_name: str
    tool_call_id: str
    turn: int
    iteration: int
    basis: str | UnsetType = UNSET
    expect: str | UnsetType = UNSET
    has_proposition: bool | UnsetType = UNSET
    malformed: int | UnsetType = UNSET


class FindingsStanding(Payload, frozen=True, kw_only=True):
    type = "findings.standing"
    tool_call_id: str
    turn: int
    iteration: int
    standing: str
    declared_on: Literal["answer", "tool-call"]
    assertion_count: int
    tool_name: str | UnsetType = UNSET
    unknown_id: bool | UnsetType = UNSET
    conflict_keys: list[list[str]] | UnsetType = UNSET


# -- host and lease ---------------------------------------------------------------------------


class _HostPayload(Payload, frozen=True, kw_only=True):
    host_id: str
    boot_id: str
    agents: list[str]


class HostStartedEvent(_HostPayload, frozen=True, kw_only=True):
    type = "host.started"


class HostStoppingEvent(_HostPayload, frozen=True, kw_only=True):
    type = "host.stopping"


class HostDamagedEvent(_HostPayload, frozen=True, kw_only=True):
    type = "host.damaged"


class LeaseLostEvent(Payload, frozen=True, kw_only=True):
    """``agentId`` is absent when the whole host lease was lost."""

    type = "lease.lost"
    host_id: str
    host_lease_epoch: int | None
    agent_id: str | UnsetType = UNSET


# -- the registry -----------------------------------------------------------------------------

EventPayload: TypeAlias = (
    InboxAccepted
    | RunStarted
    | TurnStarted
    | TurnPaused
    | TurnStalled
    | TurnHeld
    | TurnEnded
    | RunEnded
    | IterationStarted
    | ReceiptMinted
    | ModelStarted
    | ModelRetry
    | ModelDelta
    | ModelEnded
    | ModelFailed
    | RouteDecided
    | BudgetExhausted
    | CostSpent
    | OutputInvalid
    | BudgetExceeded
    | IterationEnded
    | ToolStarted
    | ToolProgress
    | ToolEnded
    | WindowRecorded
    | WindowEvicted
    | WindowBudgetPressure
    | FindingsDeclared
    | FindingsStanding
    | HostStartedEvent
    | HostStoppingEvent
    | HostDamagedEvent
    | LeaseLostEvent
)
"""Every event payload; match on its class."""


def _registry() -> dict[str, type[Payload]]:
    registry: dict[str, type[Payload]] = {}
    for cls in get_args(EventPayload):
        if cls.type in registry:
            raise TypeError(f"two payload classes for {cls.type!r}")
        registry[cls.type] = cls
    return registry


EVENT_TYPES: dict[str, type[Payload]] = _registry()
"""The one payload class of each event type, by type string."""


class Event(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One event: a per-emitter increasing ``id``, its ``type`` (its payload's, filled in when
    left out), time, context and payload."""

    id: int
    type: str = ""
    at_ms: int
    agent_id: str
    payload: EventPayload
    run_id: str | None = None
    turn: int | None = None
    iteration: int | None = None
    runtime_stage_id: str | None = None

    def __post_init__(self) -> None:
        if not self.type:
            msgspec.structs.force_setattr(self, "type", self.payload.type)
        elif self.type != self.payload.type:
            raise InvalidValue(
                f"an event of type {self.type!r} carries a {self.payload.type!r} payload",
                field="type",
            )


class _Envelope(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    type: str
    at_ms: int
    agent_id: str
    payload: msgspec.Raw
    run_id: str | None = None
    turn: int | None = None
    iteration: int | None = None
    runtime_stage_id: str | None = None


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_PAYLOADS = {kind: msgspec.json.Decoder(cls) for kind, cls in EVENT_TYPES.items()}


def decode_event(data: bytes | str) -> Event:
    """An event from its wire JSON (an SSE frame's ``data``), its payload typed by ``type``.

    Raises:
        InvalidValue: the JSON is not an event envelope, its type is not registered, or its
            payload is not that type's.
    """
    try:
        envelope = _ENVELOPE.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidValue(f"not an event envelope: {exc}") from None
    decoder = _PAYLOADS.get(envelope.type)
    if decoder is None:
        raise InvalidValue(f"no event type {envelope.type!r}", field="type")
    try:
        payload = decoder.decode(envelope.payload)
    except msgspec.DecodeError as exc:
        raise InvalidValue(f"not a {envelope.type} payload: {exc}", field="payload") from None
    fields = msgspec.structs.asdict(envelope)
    fields["payload"] = payload
    return Event(**fields)
