"""The drop mechanic both drop strategies share, and the notice ladder
(docs/window.md#the-drop-step-by-step, docs/window.md#the-notice-ladder).

``drop_oldest_span`` is public: a custom strategy may use it too. The strategy name it prints in
a notice must then pass the notice's identifier filter (docs/window.md#what-a-drop-notice-says),
else ``WindowStrategyError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from afp_runtime.errors import WindowStrategyError, shown
from afp_runtime.messages import Message
from afp_runtime.window.names import CallNames, dropped_tool_names
from afp_runtime.window.plan import RemovalPlan
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.texts import build_drop_notice, is_plain_identifier, printable_names
from afp_runtime.window.turns import window_chars
from afp_runtime.window.visit import Eviction, Rebase, WindowVisit


class DropOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one drop did, ready for a strategy to put in its record and result.

    Attributes:
        window: the new window, or UNSET when nothing was removed.
        rebase: set exactly when ``window`` is; ``inserted_at_ms`` only when a notice went in.
        refusals: the refusals for the record (a ``replacement-not-smaller`` first when the
            drop was abandoned, then the plan's).
        removed_message_count: how many messages left.
        removed_stage_ids: origin stage ids of the removed messages (first appearance).
        evictions: one per removed pre-change index, ascending.
        window_chars_before: chars of the pre-change window.
        window_chars_after: chars of the new window (``window_chars_before`` when unchanged).
        notice: the notice message inserted, if any.
        plan: the removal plan the drop followed.
    """

    refusals: tuple[Refusal, ...]
    removed_message_count: int
    removed_stage_ids: tuple[str, ...]
    evictions: tuple[Eviction, ...]
    window_chars_before: int
    window_chars_after: int
    plan: RemovalPlan
    window: tuple[Message, ...] | msgspec.UnsetType = msgspec.UNSET
    rebase: Rebase | msgspec.UnsetType = msgspec.UNSET
    notice: Message | None = None


def fitting_notice(
    span: Sequence[Message],
    history: Sequence[Message] | CallNames,
    *,
    iteration: int,
    strategy: str,
    kept: bool,
) -> str | None:
    """The richest notice strictly shorter, in chars, than the span it replaces, or None
    (docs/window.md#the-notice-ladder).

    The rich rung (with the tool clause) is tried first when a name of the span's results
    (named against the pre-change window ``history``) survives the identifier filter, then the
    plain rung. The kept statement belongs to both rungs and is never traded away. Equal length
    does not fit.
    """
    span_chars = window_chars(span)
    n = len(span)
    names = printable_names(dropped_tool_names(span, history))
    if names:
        rich = build_drop_notice(n, iteration, strategy, kept, names)
        if len(rich) < span_chars:
            return rich
    plain = build_drop_notice(n, iteration, strategy, kept, ())
    if len(plain) < span_chars:
        return plain
    return None


def drop_oldest_span(visit: WindowVisit, keep: int, strategy_name: str) -> DropOutcome:
    """Remove the plan's span of oldest turns, with a notice when the front needs one
    (docs/window.md#the-drop-step-by-step).

    The plan is asked for without the summary predicate: an old summary or notice is as
    droppable as any turn. When the removal reaches the front of what may leave (the span starts
    the window, or starts right after a request kept at the head), a fitting notice goes in its
    place; if none fits and the new head would not be a ``user`` message, the drop is abandoned
    with ``replacement-not-smaller``; if none fits but the new head is already a ``user``
    message, the span leaves silently. A removal further in never writes a notice.

    Args:
        visit: the visit.
        keep: ``keep_recent_turns`` for the plan.
        strategy_name: printed in the notice; must pass the notice's identifier filter.

    Raises:
        WindowStrategyError: ``strategy_name`` is not a plain identifier (field
            ``strategy_name``), or ``keep`` is not an int >= 1 (from the plan).
    """
    if not is_plain_identifier(strategy_name):
        raise WindowStrategyError(
            "the strategy name printed in a drop notice must be 1-48 ASCII letters, digits, "
            f"'_', '-', '.' or ':', not {shown(strategy_name)}",
            strategy=str(strategy_name),
            field="strategy_name",
        )
    history = visit.history
    turns = visit.turns
    chars_before = visit.window_chars
    plan = visit.plan_removal(keep)
    if plan.span is None:
        return _unchanged(plan, plan.refusals, chars_before)

    first, last = plan.span
    span_start = turns[first].start
    span_end = turns[last].start + turns[last].length
    head, span, tail = history[:span_start], history[span_start:span_end], history[span_end:]
    t = visit.now()

    kept_request_at_head = first == 1 and any(
        r.reason == "current-request" and r.turn_index == 0 for r in plan.refusals
    )
    # Our reading beyond docs/window.md#the-drop-step-by-step: a head of system messages only (an
    # imported envelope) does not make the removal "further in": what follows the envelope is the
    # wire's head, so the notice ladder runs and a notice goes right after the envelope. Otherwise
    # dropping the first person turn could leave an assistant first, which
    # docs/window.md#result-validation check 9 refuses.
    system_head = bool(head) and all(m.role == "system" for m in head)
    notice: Message | None = None
    if span_start == 0 or kept_request_at_head or system_head:
        if system_head:
            new_head = tail[0] if tail else None
        else:
            new_head = head[0] if head else (tail[0] if tail else None)
        wire_needs_notice = new_head is None or new_head.role != "user"
        text = fitting_notice(
            span,
            visit.call_names,
            iteration=visit.iteration,
            strategy=strategy_name,
            kept=kept_request_at_head,
        )
        if text is not None:
            notice = Message(role="user", content=text)
        elif wire_needs_notice:
            blocked = Refusal(
                reason="replacement-not-smaller", turn_index=first, message_index=span_start
            )
            return _unchanged(plan, (blocked, *plan.refusals), chars_before)

    window = (*head, notice, *tail) if notice is not None else (*head, *tail)
    facts = visit.removal_facts(range(span_start, span_end), t)
    return DropOutcome(
        window=window,
        rebase=Rebase(
            head_count=len(head),
            kept_tail_count=len(tail),
            inserted_at_ms=t if notice is not None else msgspec.UNSET,
        ),
        refusals=plan.refusals,
        removed_message_count=len(span),
        removed_stage_ids=facts.removed_stage_ids,
        evictions=facts.evictions,
        window_chars_before=chars_before,
        # Head and tail are kept as they are: only the span and the notice change the count.
        window_chars_after=chars_before
        - window_chars(span)
        + (len(notice.content) if notice is not None else 0),
        notice=notice,
        plan=plan,
    )


def _unchanged(plan: RemovalPlan, refusals: tuple[Refusal, ...], chars: int) -> DropOutcome:
    """The outcome of a visit that removed nothing."""
    return DropOutcome(
        refusals=refusals,
        removed_message_count=0,
        removed_stage_ids=(),
        evictions=(),
        window_chars_before=chars,
        window_chars_after=chars,
        plan=plan,
    )
