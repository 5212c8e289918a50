"""What one store transaction carries: bundles, new history items, the checkpoint, side rows.

The loop builds these values; the store writes each one atomically. Under the ``iteration`` and
``turn`` durability modes several are merged into one transaction, never split.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.messages import Cost, Message, Usage
from afp_runtime.records.bundle import CommitBundle
from afp_runtime.records.conversation import ConversationState, StoredFoldedSpan

RunKind = Literal["initial", "answer", "recovery", "retry", "operator"]
RunStatus = Literal[
    "running", "answered", "halted", "paused", "stalled", "held", "cancelled", "crashed"
]
InboxStatus = Literal[
    "queued", "running", "paused", "answered", "halted", "dismissed", "stalled", "held"
]
JournalState = Literal["started", "finished"]


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One new entry of the agent's item log: a message at ``pos`` with its fingerprint."""

    pos: int
    fingerprint: str
    message: Message


class RunStart(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A run row to insert."""

    run_id: str
    agent_id: str
    turn: int
    kind: RunKind
    started_at_ms: int
    message_id: str
    recovered_from: str | None = None


class RunEnd(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A run's end: status, time, usage, and the answer or the reason there is none.

    Attributes:
        answer: the final answer's text, for a run that answered.
        error_kind: why a held or stalled run stopped (wire ``errorKind``).
        error: the same in words.
        cost: what the run's model calls cost, when pricing or budgets are set
            (docs/cost.md#figures).
    """

    run_id: str
    status: RunStatus
    ended_at_ms: int
    usage: Usage
    answer: str | None = None
    error_kind: str | None = None
    error: str | None = None
    cost: Cost | None = None


class InboxUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """A new status of an inbox message (and the turn that took it)."""

    message_id: str
    status: InboxStatus
    turn: int | None = None


class JournalRow(msgspec.Struct, frozen=True, kw_only=True):
    """A tool-journal row: a call ``started`` (may have run) or ``finished`` with its outcome.

    Keyed by the turn's inbox message, which no other turn shares (turn numbers restart when
    an import replaces a conversation; message ids never do).
    """

    agent_id: str
    message_id: str
    tool_call_id: str
    state: JournalState
    run_id: str
    outcome: bytes | None = None


QuestionKind = Literal["tool-ask", "approval", "time"]
QuestionStatus = Literal["open", "answered", "abandoned", "unsettled"]


class QuestionRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A check-in question a paused turn waits on (docs/host.md#question-kinds).

    Attributes:
        question_id: the question (wire ``questionId``).
        agent_id: the agent whose turn asks.
        message_id: the inbox message of the turn (wire ``messageId``).
        run_id: the run that asked.
        turn: the turn number.
        kind: ``tool-ask``, ``approval`` or ``time``.
        prompt: what the person is asked.
        tool_call_ids: the calls waiting on the answer (wire ``toolCallIds``).
        asked_at_ms: when the pause committed (injected clock).
        status: ``open``, ``answered``, ``abandoned`` or ``unsettled``.
        repeat: how many times the question was asked again (time questions).
        answer: the answer value once answered (a str or a JSON object, per kind).
        answered_at_ms: when it was closed.
        answered_by: the principal that answered, when one was given.
        detail: kind-specific data: for a time question its format, mention, quote, choices,
            zone, the waiting tools' facts, the turn's now, the answer limit and the last
            refused answer (docs/time.md#question-shapes, docs/time.md#judging-answers).
    """

    question_id: str
    agent_id: str
    message_id: str
    run_id: str
    turn: int
    kind: QuestionKind
    prompt: str
    tool_call_ids: tuple[str, ...]
    asked_at_ms: int
    status: QuestionStatus = "open"
    repeat: int = 0
    answer: Any = None
    answered_at_ms: int | None = None
    answered_by: str | None = None
    detail: dict[str, Any] | None = None


class Txn(msgspec.Struct, kw_only=True):
    """The writes of one transaction; ``full`` asks for ``synchronous=FULL`` at its commit."""

    agent_id: str
    bundles: list[CommitBundle] = msgspec.field(default_factory=list)
    items: list[Item] = msgspec.field(default_factory=list)
    conversation: ConversationState | None = None
    run_start: RunStart | None = None
    run_end: RunEnd | None = None
    inbox: list[InboxUpdate] = msgspec.field(default_factory=list)
    journal: list[JournalRow] = msgspec.field(default_factory=list)
    folded: list[StoredFoldedSpan] = msgspec.field(default_factory=list)
    # Ledger rows to append, in wire form (each a mapping with a ``kind``).
    ledger: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # A run found cut off (still ``running``) when its turn is recovered, or held for a crash
    # loop: marked ``crashed`` (see ``crashed_at_ms``).
    crashed_run: str | None = None
    # Check-in questions asked by a pause, inserted open.
    questions: list[QuestionRow] = msgspec.field(default_factory=list)
    # Archive the current conversation (checkpoint and folded spans) before writing this one.
    replace_conversation: bool = False
    full: bool = False

    def absorb(self, other: Txn) -> None:
        """Merge a later transaction's writes into this one (batching durability modes)."""
        # Each list field spelled out (every stage's commit passes here);
        # tests/loop/test_overhead.py checks that none is left out, here and in ``empty``.
        if other.bundles:
            self.bundles.extend(other.bundles)
        if other.items:
            self.items.extend(other.items)
        if other.inbox:
            self.inbox.extend(other.inbox)
        if other.journal:
            self.journal.extend(other.journal)
        if other.folded:
            self.folded.extend(other.folded)
        if other.ledger:
            self.ledger.extend(other.ledger)
        if other.questions:
            self.questions.extend(other.questions)
        self.conversation = other.conversation or self.conversation
        self.run_start = self.run_start or other.run_start
        self.run_end = other.run_end or self.run_end
        self.crashed_run = self.crashed_run or other.crashed_run
        self.replace_conversation = self.replace_conversation or other.replace_conversation
        self.full = self.full or other.full

    def empty(self) -> bool:
        """True when the transaction writes nothing."""
        return not (
            self.bundles
            or self.items
            or self.inbox
            or self.journal
            or self.folded
            or self.ledger
            or self.questions
            or self.conversation
            or self.run_start
            or self.run_end
        )


def crashed_at_ms(txn: Txn) -> int | None:
    """When ``txn.crashed_run`` is taken to have ended: the start of the run that recovers it,
    else the checkpoint the transaction writes (a crash-loop hold); None with neither."""
    if txn.run_start is not None:
        return txn.run_start.started_at_ms
    if txn.conversation is not None:
        return txn.conversation.checkpointed_at_ms
    return None
