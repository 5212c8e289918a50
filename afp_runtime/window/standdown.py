"""Stand-down: a pin that blocked two filed visits in a row gives way on the third
(docs/window.md#stand-down).

The rule reads only the last two records filed in the current turn (by every run of the turn,
in commit order). ``PriorVisit`` is the little a record contributes to it, so the loop can keep
the last two cheaply: rebuild them once at ``seed`` and ``remember`` each record it files.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import msgspec

from afp_runtime.window.observations import WindowObservations
from afp_runtime.window.records import WindowRecord

RECENCY_PIN_REASONS: frozenset[str] = frozenset({"last-tool-result"})
"""Reasons that count as the recency pin blocking a visit."""

FACT_PIN_REASONS: frozenset[str] = frozenset({"last-tool-result", "ledger-fact"})
"""Reasons that count as the pin family blocking a visit (read by the fact pin)."""


class PriorVisit(msgspec.Struct, frozen=True, kw_only=True):
    """What stand-down needs of one filed record: its removed count and its refusal reasons."""

    removed_message_count: int
    reasons: frozenset[str]


def prior_of(record: WindowRecord | PriorVisit) -> PriorVisit:
    """The stand-down summary of a filed record (a summary is returned as it is)."""
    if isinstance(record, PriorVisit):
        return record
    return PriorVisit(
        removed_message_count=record.removed_message_count,
        reasons=frozenset(refusal.reason for refusal in record.refusals),
    )


def remember(
    prior: Sequence[WindowRecord | PriorVisit], record: WindowRecord | PriorVisit
) -> tuple[PriorVisit, ...]:
    """The last two filed visits after ``record`` is filed, oldest first."""
    return (*(prior_of(p) for p in prior[-1:]), prior_of(record))


def last_two(records: Iterable[WindowRecord | PriorVisit]) -> tuple[PriorVisit, ...]:
    """The last two of a turn's filed records as summaries, oldest first (for ``seed``)."""
    kept: tuple[PriorVisit, ...] = ()
    for record in records:
        kept = remember(kept, record)
    return kept


def pin_is_blocking(prior: Sequence[WindowRecord | PriorVisit], reasons: Collection[str]) -> bool:
    """True iff each of the last two filed visits removed nothing and names one of ``reasons``.

    Other refusals (``inside-keep-window``…) may be present too; fewer than two prior visits
    never block.
    """
    if len(prior) < 2:
        return False
    for visit in prior[-2:]:
        summary = prior_of(visit)
        if summary.removed_message_count != 0 or summary.reasons.isdisjoint(reasons):
            return False
    return True


def stand_down_block(limit: int) -> WindowObservations:
    """The block a stand-down visit files for a pin kind: nothing pinned, ``standDown`` true."""
    return WindowObservations(pinned=(), yielded=0, limit=limit, stand_down=True)
