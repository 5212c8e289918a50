"""The stored conversation checkpoint and the list references that share structure.

A message list (``history``) is stored as a ``ListRef``: ranges ``[start, end)`` over the
agent's append-only item log, where each item is a message reference (fingerprint plus marker
flags). Appending extends the last range; a window change slices ranges. So a checkpoint, or a
bundle that writes ``history``, stays small however long the conversation grows.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.messages import Cost, Usage

# After this many ranges a list is compacted into one fresh contiguous range (O(window) once).
MAX_RANGES = 16


class MessageRef(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A message in a committed list: its body's fingerprint plus the marker flags."""

    fingerprint: str
    not_dispatched: bool = False
    injected_by: str | None = None


class ListRef(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A message list by reference: ``ranges`` of item positions, in list order."""

    ranges: tuple[tuple[int, int], ...] = ()

    def __len__(self) -> int:
        return sum(end - start for start, end in self.ranges)

    def positions(self) -> list[int]:
        """Every item position of the list, in order."""
        return [pos for start, end in self.ranges for pos in range(start, end)]

    @classmethod
    def of_positions(cls, positions: list[int]) -> ListRef:
        """The reference to exactly these item positions, in this order (run-length encoded)."""
        ranges: list[tuple[int, int]] = []
        for pos in positions:
            if ranges and ranges[-1][1] == pos:
                ranges[-1] = (ranges[-1][0], pos + 1)
            else:
                ranges.append((pos, pos + 1))
        return cls(ranges=tuple(ranges))

    def sliced(self, start: int, stop: int) -> ListRef:
        """The list's entries ``[start, stop)`` (clamped like a slice of ``positions()``), in
        O(ranges): ``ListRef.of_positions(self.positions()[start:stop])``."""
        start, stop, _ = slice(start, stop).indices(len(self))
        ranges: list[tuple[int, int]] = []
        offset = 0
        for first, end in self.ranges:
            length = end - first
            low, high = max(start - offset, 0), min(stop - offset, length)
            if low < high:
                ranges.append((first + low, first + high))
            offset += length
        return ListRef(ranges=tuple(ranges)).joined()

    def joined(self, *others: ListRef) -> ListRef:
        """This list followed by ``others``, adjacent ranges merged (as ``of_positions`` would,
        in O(ranges))."""
        ranges: list[tuple[int, int]] = []
        for ref in (self, *others):
            for first, end in ref.ranges:
                if first == end:
                    continue
                if ranges and ranges[-1][1] == first:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((first, end))
        return ListRef(ranges=tuple(ranges))

    def extended(self, start: int, end: int) -> ListRef:
        """This list followed by items ``[start, end)``."""
        if start == end:
            return self
        if self.ranges and self.ranges[-1][1] == start:
            last = self.ranges[-1]
            return ListRef(ranges=(*self.ranges[:-1], (last[0], end)))
        return ListRef(ranges=(*self.ranges, (start, end)))


TurnStatus = Literal["running", "paused", "stalled", "held"]


class PriorVisitRef(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the stand-down rule needs of one filed window record of the open turn."""

    removed_message_count: int
    reasons: tuple[str, ...]


class StoredFoldedSpan(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """A folded span as the store keeps it: its originals by reference to the item log.

    ``messages`` is present iff ``retained == "conversation"``; the removed messages are already
    in the agent's item log, so a fold copies no message.
    """

    summary_fingerprint: str
    run_id: str
    iteration: int
    folded_at_ms: int
    model: str
    message_count: int
    removed_stage_ids: tuple[str, ...]
    retained: str
    messages: ListRef | None = None


class PendingBatch(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The tool batch a paused turn waits to finish (docs/loop.md#run-state-keys ``pendingBatch``).

    Attributes:
        question_ids: the questions of the pause, in asking order (wire ``questionIds``).
        tool_call_ids: the calls of the batch with no result committed yet, in call order
            (wire ``toolCallIds``); the answer run's ``settle`` answers exactly these.
        kind: ``tool-ask`` (a tool asked mid-execution; calls after it are not run) or
            ``approval`` (the batch paused before any dispatch).
        outcomes: results already produced for waiting calls that come after the asking call
            in call order (run alongside it, or decided at planning), by call id in wire form;
            the answer run commits them in call order with the rest.
    """

    question_ids: tuple[str, ...]
    tool_call_ids: tuple[str, ...]
    kind: str
    outcomes: dict[str, Any] = msgspec.field(default_factory=dict)


class OpenTurn(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The unfinished turn of a conversation (docs/loop.md#checkpoint-fields).

    Attributes:
        turn: the turn number.
        message_id: the inbox message being answered (wire ``messageId``).
        status: ``running``, ``paused``, ``stalled`` or ``held``.
        last_run_id: the run that last worked on it (wire ``lastRunId``).
        next_iteration: the iteration a continuation starts at (wire ``nextIteration``).
        runs: runs started for this turn.
        recoveries: recovery runs started for this turn.
        error_kind: why the turn is held or stalled (wire ``errorKind``).
        error: a readable reason for a held or stalled turn.
        last_usage: usage of the turn's latest model call, None when it reported none (wire
            ``lastUsage``): what the next window visit measures (docs/window.md#measurement).
        usage_missing: a call of this turn reported no usage since the last good reading.
        prior_visits: the turn's last two filed window records, for the stand-down rule.
        started_at_ms: when the turn's first run started (wire ``startedAtMs``).
        epochs_before: epochs of the turn's runs that ended before this one (paused, stalled,
            held); with ``usage_before`` they make ``turn.ended`` a per-turn figure.
        stalled_since_ms: when the turn first stalled (wire ``stalledSinceMs``); the stall
            limit counts from it.
        pending_batch: the paused batch (wire ``pendingBatch``), kept until the ``settle``
            that answers it commits, so a crash of the answer run settles it again.
        output_retries: answers of the turn refused by the output schema and asked again
            (wire ``outputRetries``; docs/loop.md#typed-answers).
        spent: what the turn's model calls cost, across its runs (docs/cost.md#figures).
        repeats: how many times each (tool, arguments, result) of the turn was observed, keyed
            by a digest of the three (docs/loop.md#repeated-calls); committed with the results,
            so a recovery notes the same repeats.
    """

    turn: int
    message_id: str
    status: TurnStatus
    last_run_id: str
    next_iteration: int
    runs: int = 1
    recoveries: int = 0
    stalls: int = 0
    wrap_up_asked: bool = False
    stopped_early: dict[str, Any] | None = None
    last_usage: Usage | None = None
    usage_missing: bool = False
    prior_visits: tuple[PriorVisitRef, ...] = ()
    pending_batch: PendingBatch | None = None
    stalled_since_ms: int | None = None
    started_at_ms: int = 0
    epochs_before: int = 0
    usage_before: Usage | None = None
    error_kind: str | None = None
    error: str | None = None
    retry_at_ms: int | None = None
    repeats: dict[str, int] = {}
    spent: Cost | None = None
    output_retries: int = 0


class DaySpend(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What an agent's model calls of one UTC day (``YYYY-MM-DD``) cost."""

    day: str
    cost: Cost


class ConversationState(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """The stored form of an agent's conversation checkpoint (``version`` 1).

    Attributes:
        agent_id: owner agent (wire ``agentId``).
        turn: turns started.
        history: the conversation as re-sent, by reference.
        next_pos: the next free position of the agent's item log (wire ``nextPos``).
        inserted_count: the messages the runtime inserted into the window (notices, summaries)
            held in the item log at positions ``-1, -2, …`` (wire ``insertedCount``), so the
            messages appended at ``next_pos`` stay one contiguous range between them.
        model_calls: agent-wide model-call counter (wire ``modelCalls``).
        usage_totals: lifetime usage (wire ``usageTotals``).
        open_turn: the unfinished turn, if any (wire ``openTurn``).
        folded_count: folded spans the conversation carries (wire ``foldedCount``); the spans
            live in their own append-only table.
        ledger_count: rows of the conversation's ledger (wire ``ledgerCount``); the rows live in
            their own append-only table.
        last_sent: the window the conversation's last receipt digested (wire ``lastSent``),
            with ``last_sent_subs`` the (index, fingerprint) of its substitutions: the base of
            the next run's first receipt (docs/served.md#receipt-fields).
        last_run_id: the last run of the last finished turn (wire ``lastRunId``).
        checkpointed_at_ms: injected clock at the transaction (wire ``checkpointedAtMs``).
        cost_totals: lifetime cost of the agent's model calls (wire ``costTotals``), once one
            was made with pricing or budgets set (docs/cost.md#figures).
        day_spend: the cost of the current UTC day's calls (wire ``daySpend``).
    """

    agent_id: str
    version: int = 1
    turn: int = 0
    history: ListRef = msgspec.field(default_factory=ListRef)
    next_pos: int = 0
    inserted_count: int = 0
    model_calls: int = 0
    usage_totals: Usage = msgspec.field(default_factory=Usage)
    open_turn: OpenTurn | None = None
    folded_count: int = 0
    ledger_count: int = 0
    last_sent: ListRef | None = None
    last_sent_subs: tuple[tuple[int, str], ...] = ()
    last_run_id: str | None = None
    checkpointed_at_ms: int = 0
    cost_totals: Cost | None = None
    day_spend: DaySpend | None = None
