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
from afp_runtime.window.texts import (
    build_drop_notice,
    is_drop_notice,
    is_plain_identifier,
    printable_names,
)
from afp_runtime.window.turns import window_chars
from afp_runtime.window.visit import Eviction, Rebase, WindowVisit


class DropOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one drop did, ready for a strategy to put in its record and result.

    Attributes:
        window: the new window, or UNSET when nothing was removed.
        rebase: set exactly when ``window`` is; ``inserted_at_ms`` only when a notice went in.
        refusals: the refusals for the record (a ``replacement-not-smaller`` first when the
            oldest span was blocked, then those of the plan followed).
        removed_message_count: how many messages left.
        removed_stage_ids: origin stage ids of the removed messages (first appearance).
        evictions: one per removed pre-change index, ascending.
        window_chars_before: chars of the pre-change window.
        window_chars_after: chars of the new window (``window_chars_before`` when unchanged).
        notice: the notice message inserted, if any.
        plan: the removal plan the drop followed (the next span's, when it moved on).
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
    """Remove the plan's span of oldest turns, with a notice when the front needs one; when that
    span cannot go, the next one, or the span with a notice that is not shorter
    (docs/window.md#the-drop-step-by-step).

    The plan is asked for without the summary predicate: an old summary or notice is as
    droppable as any turn. When the removal reaches the front of what may leave (the span starts
    the window, starts right after a request kept at the head, or right after a head of system
    messages), a fitting notice goes in its place; if none fits but the new head is already a
    ``user`` message, the span leaves silently. If none fits and the new head would not be a
    ``user`` message, the span is *blocked* (``replacement-not-smaller``) and the visit moves on:
    the next span after the turn that ended it leaves, silently, since it is further in. With no
    such span the blocked span leaves anyway behind the plain notice, unless it is a lone drop
    notice (a notice would only replace a notice): only then is nothing removed.

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
    plan = visit.plan_removal(keep)
    if plan.span is None:
        return _unchanged(plan, plan.refusals, visit.window_chars)
    first, last = plan.span
    turns = visit.turns
    span_start = turns[first].start
    span_end = turns[last].start + turns[last].length
    head, span, tail = (
        visit.history[:span_start],
        visit.history[span_start:span_end],
        visit.history[span_end:],
    )
    kept_request_at_head = first == 1 and any(
        r.reason == "current-request" and r.turn_index == 0 for r in plan.refusals
    )
    # Our reading beyond docs/window.md#the-drop-step-by-step: a head of system messages only (an
    # imported envelope) does not make the removal "further in": what follows the envelope is the
    # wire's head, so the notice ladder runs and a notice goes right after the envelope. Otherwise
    # dropping the first person turn could leave an assistant first, which
    # docs/window.md#result-validation check 9 refuses.
    system_head = bool(head) and all(m.role == "system" for m in head)
    if not (span_start == 0 or kept_request_at_head or system_head):
        return _removal(visit, plan, plan.span, plan.refusals, None)
    text = fitting_notice(
        span,
        visit.call_names,
        iteration=visit.iteration,
        strategy=strategy_name,
        kept=kept_request_at_head,
    )
    if text is not None:
        return _removal(visit, plan, plan.span, plan.refusals, text)
    new_head = head[0] if kept_request_at_head else next(iter(tail), None)
    if new_head is not None and new_head.role == "user":
        return _removal(visit, plan, plan.span, plan.refusals, None)

    blocked = Refusal(reason="replacement-not-smaller", turn_index=first, message_index=span_start)
    later = visit.plan_removal(keep, resume_after=last)
    if later.span is not None:
        return _removal(visit, later, later.span, (blocked, *later.refusals), None)
    if len(span) == 1 and is_drop_notice(span[0]):
        return _unchanged(plan, (blocked, *plan.refusals), visit.window_chars)
    # No other span can go: a notice longer than what it replaces is still progress, and the
    # visit is not allowed to end with the window over its bound and nothing removed. The result
    # is checked against the latest plan, so the blocked span's plan is asked for again.
    visit.plan_removal(keep)
    plain = build_drop_notice(len(span), visit.iteration, strategy_name, False, ())
    return _removal(visit, plan, plan.span, plan.refusals, plain)


def _removal(
    visit: WindowVisit,
    plan: RemovalPlan,
    span_turns: tuple[int, int],
    refusals: tuple[Refusal, ...],
    notice_text: str | None,
) -> DropOutcome:
    """The outcome of removing the turns ``span_turns`` of ``plan``, with the notice
    ``notice_text`` in their place."""
    first, last = span_turns
    turns = visit.turns
    history = visit.history
    span_start = turns[first].start
    span_end = turns[last].start + turns[last].length
    head, span, tail = history[:span_start], history[span_start:span_end], history[span_end:]
    t = visit.now()
    notice = Message(role="user", content=notice_text) if notice_text is not None else None
    window = (*head, notice, *tail) if notice is not None else (*head, *tail)
    facts = visit.removal_facts(range(span_start, span_end), t)
    chars_before = visit.window_chars
    return DropOutcome(
        window=window,
        rebase=Rebase(
            head_count=len(head),
            kept_tail_count=len(tail),
            inserted_at_ms=t if notice is not None else msgspec.UNSET,
        ),
        refusals=refusals,
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
