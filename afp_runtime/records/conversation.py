"""The stored conversation checkpoint and the list references that share structure.

A message list (``history``) is stored as a ``ListRef``: ranges ``[start, end)`` over the
agent's append-only item log, where each item is a message reference (fingerprint plus marker
flags). Appending extends the last range; a window change slices ranges. So a checkpoint, or a
bundle that writes ``history``, stays small however long the conversation grows.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.messages import Usage

# After this many ranges a list is compacted into one fresh contiguous range (O(window) once).
MAX_RANGES = 16


class ListRef(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A message list by reference: ``ranges`` of item positions, in list order."""

    ranges: tuple[tuple[int, int], ...] = ()

    def __len__(self) -> int:
        return sum(end - start for start, end in self.ranges)

    def positions(self) -> list[int]:
        """Every item position of the list, in order."""
        return [pos for start, end in self.ranges for pos in range(start, end)]

    def extended(self, start: int, end: int) -> ListRef:
        """This list followed by items ``[start, end)``."""
        if start == end:
            return self
        if self.ranges and self.ranges[-1][1] == start:
            last = self.ranges[-1]
            return ListRef(ranges=(*self.ranges[:-1], (last[0], end)))
        return ListRef(ranges=(*self.ranges, (start, end)))


TurnStatus = Literal["running", "paused", "stalled", "held"]


class OpenTurn(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The unfinished turn of a conversation (host.md §8.1).

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
    error_kind: str | None = None
    error: str | None = None
    retry_at_ms: int | None = None


class ConversationState(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """The stored form of an agent's conversation checkpoint (``version`` 1).

    Attributes:
        agent_id: owner agent (wire ``agentId``).
        turn: turns started.
        history: the conversation as re-sent, by reference.
        next_pos: the next free position of the agent's item log (wire ``nextPos``).
        model_calls: agent-wide model-call counter (wire ``modelCalls``).
        usage_totals: lifetime usage (wire ``usageTotals``).
        open_turn: the unfinished turn, if any (wire ``openTurn``).
        last_run_id: the last run of the last finished turn (wire ``lastRunId``).
        checkpointed_at_ms: injected clock at the transaction (wire ``checkpointedAtMs``).
    """

    agent_id: str
    version: int = 1
    turn: int = 0
    history: ListRef = msgspec.field(default_factory=ListRef)
    next_pos: int = 0
    model_calls: int = 0
    usage_totals: Usage = msgspec.field(default_factory=Usage)
    open_turn: OpenTurn | None = None
    last_run_id: str | None = None
    checkpointed_at_ms: int = 0
