"""Guards and the removal plan: which contiguous span of oldest turns may leave
(docs/window.md#why-a-turn-stays, docs/window.md#pins).

Everything here is a pure function of a window's turns and its guards, linear in window length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

import msgspec

from afp_runtime.errors import WindowStrategyError
from afp_runtime.window.observations import LedgerFactPin, ToolResultPin, WindowObservations
from afp_runtime.window.pins import spend_ceiling
from afp_runtime.window.refusals import Refusal, RefusalReason
from afp_runtime.window.turns import Turn


class Guards(msgspec.Struct, frozen=True, kw_only=True):
    """What the stage binds for a visit; strategies never see it.

    Attributes:
        answered_call_ids: ``tool_call_id`` of every tool message anywhere in the window.
        current_request_index: the anchor (docs/window.md#the-current-request), or None.
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


def refusal_of(
    turn: Turn,
    guards: Guards,
    held_recency: AbstractSet[int],
    held_facts: AbstractSet[int],
) -> Refusal | None:
    """Why ``turn`` may not leave, first match wins (docs/window.md#refusal-reasons), or None when
    it may.

    Precedence: ``current-request`` → ``system-envelope`` → ``paused-tool`` /
    ``pending-check-in`` → ``unresolved-tool-call`` → ``last-tool-result`` → ``ledger-fact``.
    ``held_recency`` / ``held_facts`` are the turn indexes admitted by the ceilings.
    ``inside-keep-window`` is not examined here: the plan assigns it by position first.
    """
    reason = _hard_reason(turn, guards)
    if reason is None:
        if turn.index in held_recency:
            reason = "last-tool-result"
        elif turn.index in held_facts:
            reason = "ledger-fact"
        else:
            return None
    return Refusal(reason=reason, turn_index=turn.index, message_index=turn.start)


def _hard_reason(turn: Turn, guards: Guards) -> RefusalReason | None:
    """The first hard reason that holds ``turn``, or None."""
    anchor = guards.current_request_index
    if anchor is not None and turn.start <= anchor < turn.start + turn.length:
        return "current-request"
    if any(message.role == "system" for message in turn.messages):
        return "system-envelope"
    paused = guards.paused_tool_call_id
    if paused is not None and any(
        message.tool_call_id == paused or any(call.id == paused for call in message.tool_calls)
        for message in turn.messages
    ):
        return "pending-check-in" if guards.paused_check_in else "paused-tool"
    answered = guards.answered_call_ids
    if any(call.id not in answered for message in turn.messages for call in message.tool_calls):
        return "unresolved-tool-call"
    return None


def _check_keep(keep: object) -> int:
    """``keep_recent_turns`` as an int >= 1, else ``WindowStrategyError`` (bool rejected)."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise WindowStrategyError(
            f"keep_recent_turns must be an int of at least 1, not {keep!r}",
            strategy="",
            field="keep_recent_turns",
            value=keep,
        )
    return keep


def plan_removal(
    turns: Sequence[Turn],
    keep_recent_turns: int,
    guards: Guards,
    is_existing_summary: Callable[[Turn], bool] | None = None,
    *,
    resume_after: int | None = None,
) -> RemovalPlan:
    """The longest contiguous run of removable turns from the oldest removable one
    (docs/window.md#the-removal-plan).

    With ``resume_after`` the plan looks for the next span instead: turns up to that index are
    not candidates for it (their hard and pin refusals still enter the leading list, in scan
    order), so a drop whose oldest span could not go moves on to the span after it
    (docs/window.md#the-drop-step-by-step).

    The last ``keep_recent_turns`` turns refuse ``inside-keep-window`` (the keep list). Pins
    are admitted against their ceilings among the older turns only. The scan steps over
    refusing turns before the span and stops at the first refusing turn after it; turns past
    that break get no entry. A span that is exactly one turn the summary predicate accepts is
    refused ``only-existing-summary``; the pin blocks are still attached then (our reading of
    docs/window.md#the-removal-plan steps 5-6: a pin refusal in the leading list keeps the block
    that explains it). Refusal order: leading list (scan order), then ``only-existing-summary`` if
    any, then the keep list. Linear in window length.

    Raises:
        WindowStrategyError: ``keep_recent_turns`` is not an int >= 1 (a bool is refused).
            The error's ``strategy`` is empty here; the visit's caller knows the strategy.
    """
    keep = _check_keep(keep_recent_turns)
    candidate_count = max(0, len(turns) - keep)
    keep_list = tuple(
        Refusal(reason="inside-keep-window", turn_index=turn.index, message_index=turn.start)
        for turn in turns[candidate_count:]
    )
    if candidate_count == 0:
        return RemovalPlan(span=None, refusals=keep_list)

    observations, held_recency = spend_ceiling(
        guards.recency_pins, guards.recency_limit, candidate_count
    )
    ledger_facts, held_facts = spend_ceiling(guards.fact_pins, guards.fact_limit, candidate_count)

    leading: list[Refusal] = []
    first: int | None = None
    last: int | None = None
    for turn in turns[:candidate_count]:
        refusal = refusal_of(turn, guards, held_recency, held_facts)
        if refusal is None and resume_after is not None and turn.index <= resume_after:
            continue
        if refusal is None:
            if first is None:
                first = turn.index
            last = turn.index
            continue
        leading.append(refusal)
        if first is not None:
            break

    refusals = (*leading, *keep_list)
    span: tuple[int, int] | None = None
    if first is not None and last is not None:
        span = (first, last)
        if first == last and is_existing_summary is not None and is_existing_summary(turns[first]):
            only = Refusal(
                reason="only-existing-summary", turn_index=first, message_index=turns[first].start
            )
            span, refusals = None, (*leading, only, *keep_list)
    return RemovalPlan(
        span=span, refusals=refusals, observations=observations, ledger_facts=ledger_facts
    )
