"""Guards and the removal plan: which contiguous span of oldest turns may leave (window.md §4-§6).

Everything here is a pure function of a window's turns and its guards, linear in window length.
"""

from __future__ import annotations

import msgspec

from afp_runtime.window.observations import LedgerFactPin, ToolResultPin, WindowObservations
from afp_runtime.window.refusals import Refusal


class Guards(msgspec.Struct, frozen=True, kw_only=True):
    """What the stage binds for a visit; strategies never see it.

    Attributes:
        answered_call_ids: ``tool_call_id`` of every tool message anywhere in the window.
        current_request_index: the anchor (window.md §3), or None.
        paused_tool_call_id: the call a paused run waits on, if any (None in the loop).
        paused_check_in: the pause is a human check-in.
        recency_pins: last-tool-result pin candidates, newest first.
        recency_limit: the recency ceiling (0 = off, stood down).
        fact_pins: ledger-fact pin candidates, newest first (armed agents only).
        fact_limit: the fact ceiling (0 = off, unarmed or stood down).
    """

    answered_call_ids: frozenset[str] = frozenset()
    current_request_index: int | None = None
    paused_tool_call_id: str | None = None
    paused_check_in: bool = False
    recency_pins: tuple[ToolResultPin, ...] = ()
    recency_limit: int = 0
    fact_pins: tuple[LedgerFactPin, ...] = ()
    fact_limit: int = 0


class RemovalPlan(msgspec.Struct, frozen=True, kw_only=True):
    """The inclusive ``(first, last)`` turn span that may leave (None: nothing may), and why the
    others refused, with the pin blocks the ceilings produced."""

    span: tuple[int, int] | None
    refusals: tuple[Refusal, ...]
    observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET
