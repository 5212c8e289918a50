"""Result validation: every strategy result is checked before anything is committed (docs/window.md
docs/window.md#result-validation).

Built-in strategies are held to the same rules as custom ones. The first violation raises
``WindowStrategyError`` naming the strategy, the field (wire spelling, e.g.
``record.windowCharsAfter``) and the offending value; nothing of the visit is committed then.
Linear in window length.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, NoReturn, get_args

import msgspec

from afp_runtime.errors import WindowStrategyError, shown
from afp_runtime.messages import Message, fingerprint
from afp_runtime.window.records import CUSTOM_FIELDS, CustomRecord, WindowRecord
from afp_runtime.window.refusals import REFUSAL_REASONS
from afp_runtime.window.turns import window_chars
from afp_runtime.window.visit import Rebase, WindowResult, WindowVisit

_RECORD_TYPES: tuple[type, ...] = get_args(WindowRecord)


def strategy_of(record: WindowRecord) -> str:
    """The strategy name a record is filed under: the union tag, or a custom record's field."""
    if isinstance(record, CustomRecord):
        return record.strategy
    tag = type(record).__struct_config__.tag
    return tag if isinstance(tag, str) else ""


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _same(a: Message, b: Message) -> bool:
    """The same object is the same message; only a copy needs its fingerprint compared."""
    return a is b or fingerprint(a) == fingerprint(b)


def _identical(a: Sequence[object], b: Sequence[object]) -> bool:
    """Both hold the very same objects, in order (no message is read)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _first_talker(messages: Sequence[Message]) -> str | None:
    """Role of the first non-system message, or None."""
    return next((m.role for m in messages if m.role != "system"), None)


class _Checker:
    """Raises the first violation with the strategy name bound."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy

    def fail(self, field: str, what: str, value: Any, **detail: Any) -> NoReturn:
        raise WindowStrategyError(
            f"strategy {self.strategy!r} returned {field} = {shown(value)}: {what}",
            strategy=self.strategy,
            field=field,
            value=shown(value),
            **detail,
        )


def validate_result(strategy_name: str, visit: WindowVisit, result: object) -> None:
    """Check a strategy's result against the visit it answered (docs/window.md#result-validation,
    checks 1-9 in order).

    Before the nine checks (our additions): the result must be a ``WindowResult`` carrying a
    window record (field ``result`` / ``record``), and a custom record's ``extra`` keys may not
    reuse a common field's wire name (field ``record.extra``), so the flat wire form stays
    lossless.

    Readings of docs/window.md#result-validation settled here: in check 3 the rebase's
    ``insertedAtMs`` decides whether the new window holds one inserted message (present) or none
    (absent); in check 8 a refusal "points at a real turn" when its ``turnIndex`` names a turn of
    this visit's segmentation and its ``messageIndex`` is that turn's start in the pre-change
    window.

    Raises:
        WindowStrategyError: on the first violation.
    """
    check = _Checker(strategy_name)
    result = _check_result(check, result)
    record = result.record
    _check_names(check, visit, record)
    removed: range = range(0)
    inserted: Message | None = None
    window = result.window
    rebase = _check_rebase_given(check, result)
    if not isinstance(window, msgspec.UnsetType) and rebase is not None:
        removed, inserted = _check_splice(check, visit, window, rebase)
        _check_whole_turns(check, visit, removed)
    _check_counts(check, visit, record, removed, inserted)
    _check_evictions(check, result, removed)
    _check_folded(check, visit, result, removed, inserted)
    _check_refusals(check, visit, record)
    _check_first_talker(check, visit, window)


def _check_result(check: _Checker, result: object) -> WindowResult:
    """Before the nine checks: a ``WindowResult`` with a window record whose custom ``extra``
    keys do not reuse a common field's wire name."""
    if not isinstance(result, WindowResult):
        check.fail("result", "a strategy must return a WindowResult or None", result)
    record = result.record
    if not isinstance(record, _RECORD_TYPES):
        check.fail("record", "the record must be a window record", record)
    if isinstance(record, CustomRecord):
        clashes = sorted(key for key in record.extra if key in CUSTOM_FIELDS)
        if clashes:
            check.fail("record.extra", "extra keys may not reuse a common field's name", clashes)
    return result


def _check_names(check: _Checker, visit: WindowVisit, record: WindowRecord) -> None:
    """1. The record names this strategy and this visit."""
    filed_under = strategy_of(record)
    if filed_under != check.strategy:
        check.fail(
            "record.strategy", f"expected the strategy's name {check.strategy!r}", filed_under
        )
    if record.iteration != visit.iteration:
        check.fail(
            "record.iteration", f"expected the visit iteration {visit.iteration}", record.iteration
        )


def _check_rebase_given(check: _Checker, result: WindowResult) -> Rebase | None:
    """2. A new window always comes with its rebase, and only with it; the rebase, if any."""
    window = result.window
    rebase = result.rebase
    if window is not msgspec.UNSET and rebase is msgspec.UNSET:
        check.fail("rebase", "a new window needs a rebase", rebase)
    if window is msgspec.UNSET and rebase is not msgspec.UNSET:
        check.fail("window", "a rebase was given without a new window", window)
    return None if isinstance(rebase, msgspec.UnsetType) else rebase


def _check_splice(
    check: _Checker, visit: WindowVisit, window: Sequence[Message], rebase: Rebase
) -> tuple[range, Message | None]:
    """3. The new window is head + (one inserted message)? + tail of the old one; the removed
    range and the inserted message."""
    history = visit.history
    size = len(history)
    head, tail = rebase.head_count, rebase.kept_tail_count
    if not _is_count(head):
        check.fail("rebase.headCount", "must be an int >= 0", head)
    if not _is_count(tail):
        check.fail("rebase.keptTailCount", "must be an int >= 0", tail)
    if head + tail > size - 1:
        check.fail(
            "rebase", f"head + tail must leave at least one of {size} messages out", head + tail
        )
    extra = len(window) - head - tail
    wants_insert = rebase.inserted_at_ms is not msgspec.UNSET
    if extra != (1 if wants_insert else 0):
        check.fail(
            "window",
            f"expected {head} head + {int(wants_insert)} inserted + "
            f"{tail} tail messages (insertedAtMs decides the middle)",
            len(window),
        )
    # The head and tail are usually the old window's own objects: one pass in C settles that,
    # and only a copy is compared by fingerprint (docs/window.md#the-running-index).
    if not _identical(window[:head], history[:head]):
        for position in range(head):
            if not _same(window[position], history[position]):
                check.fail(
                    "window",
                    f"head message {position} differs from the old window",
                    window[position].content,
                )
    kept = range(1, tail + 1)
    if tail and _identical(window[len(window) - tail :], history[size - tail :]):
        kept = range(0)
    for back in kept:
        if not _same(window[-back], history[-back]):
            check.fail(
                "window",
                f"tail message {len(window) - back} differs from the old "
                f"window's message {size - back}",
                window[-back].content,
            )
    inserted: Message | None = None
    if extra == 1:
        inserted = window[head]
        if inserted.role != "user":
            check.fail("window", "an inserted message must have role user", inserted.role)
    return range(head, size - tail), inserted


def _check_whole_turns(check: _Checker, visit: WindowVisit, removed: range) -> None:
    """4. The removed range is whole turns inside the latest plan's span."""
    size = len(visit.history)
    bounds = [removed.start, removed.stop]
    if not _starts_turn(visit, removed.start) or (
        removed.stop != size and not _starts_turn(visit, removed.stop)
    ):
        check.fail("window", "the removed range must consist of whole turns", bounds)
    plan = visit.latest_plan
    if plan is None or plan.span is None:
        check.fail(
            "window",
            "no removal plan with a span was obtained this visit, so nothing may be removed",
            bounds,
        )
    first, last = plan.span
    low = visit.turns[first].start
    high = visit.turns[last].start + visit.turns[last].length
    if removed.start < low or removed.stop > high:
        check.fail(
            "window",
            f"the removed range lies outside the plan span [{low}, {high})",
            bounds,
        )


def _starts_turn(visit: WindowVisit, index: int) -> bool:
    """A turn of the visit starts at window index ``index`` (turns are in window order)."""
    turns = visit.turns
    found = bisect_right(turns, index, key=operator.attrgetter("start")) - 1
    return found >= 0 and turns[found].start == index


def _check_counts(
    check: _Checker,
    visit: WindowVisit,
    record: WindowRecord,
    removed: range,
    inserted: Message | None,
) -> None:
    """5. The record's counts and chars are exact."""
    if record.removed_message_count != len(removed):
        check.fail(
            "record.removedMessageCount",
            f"{len(removed)} messages left",
            record.removed_message_count,
        )
    before = visit.window_chars
    if record.window_chars_before != before:
        check.fail(
            "record.windowCharsBefore",
            f"the window held {before} chars",
            record.window_chars_before,
        )
    # Check 3 held the head and tail to the old window's messages, so only the removed range
    # and the inserted message change the count (linear in what changed, not in the window).
    after = before - window_chars(visit.history[removed.start : removed.stop])
    if inserted is not None:
        after += len(inserted.content)
    if record.window_chars_after != after:
        check.fail(
            "record.windowCharsAfter",
            f"the new window holds {after} chars",
            record.window_chars_after,
        )
    facts = visit.removal_facts(removed, visit.now())
    if tuple(record.removed_stage_ids) != facts.removed_stage_ids:
        check.fail(
            "record.removedStageIds",
            f"expected {list(facts.removed_stage_ids)}",
            list(record.removed_stage_ids),
        )


def _check_evictions(check: _Checker, result: WindowResult, removed: range) -> None:
    """6. One eviction per removed index, ascending."""
    indexes = [eviction.index for eviction in result.evictions]
    if indexes != list(removed):
        check.fail("evictions", f"expected indexes {list(removed)}", indexes)


def _check_folded(
    check: _Checker,
    visit: WindowVisit,
    result: WindowResult,
    removed: range,
    inserted: Message | None,
) -> None:
    """7. Folded spans only beside an inserted message that stands for the removed range."""
    if not result.folded:
        return
    if inserted is None:
        check.fail("folded", "folded spans need an inserted message", len(result.folded))
    stands_for = fingerprint(inserted)
    gone = visit.history[removed.start : removed.stop]
    for span in result.folded:
        if span.summary_fingerprint != stands_for:
            check.fail(
                "folded.summaryFingerprint",
                "must be the inserted message's fingerprint",
                span.summary_fingerprint,
            )
        if span.message_count != len(removed):
            check.fail("folded.messageCount", f"{len(removed)} messages left", span.message_count)
        if span.messages is not msgspec.UNSET and tuple(span.messages) != gone:
            check.fail(
                "folded.messages",
                "must be the removed messages in order",
                len(span.messages),
            )


def _check_refusals(check: _Checker, visit: WindowVisit, record: WindowRecord) -> None:
    """8. Refusals use the closed set of reasons and point at real turns."""
    turns = visit.turns
    refusals = record.refusals
    plan = visit.latest_plan
    # The refusals of the visit's own latest plan were made over these turns, so they hold by
    # construction: a record that ends with them (the drop's does) has only the rest checked.
    made = plan.refusals if plan is not None else ()
    cut = len(refusals) - len(made)
    if made and cut >= 0 and _identical(refusals[cut:], made):
        refusals = refusals[:cut]
    for refusal in refusals:
        if refusal.reason not in REFUSAL_REASONS:
            check.fail("record.refusals", "unknown refusal reason", refusal.reason)
        t = refusal.turn_index
        if not (_is_count(t) and t < len(turns)):
            check.fail("record.refusals", f"turnIndex must name one of {len(turns)} turns", t)
        elif refusal.message_index != turns[t].start:
            check.fail(
                "record.refusals",
                f"messageIndex of turn {t} is {turns[t].start}",
                refusal.message_index,
            )


def _check_first_talker(
    check: _Checker, visit: WindowVisit, window: Sequence[Message] | msgspec.UnsetType
) -> None:
    """9. A window that opened with a user message still does."""
    if (
        not isinstance(window, msgspec.UnsetType)
        and _first_talker(visit.history) == "user"
        and _first_talker(window) != "user"
    ):
        check.fail(
            "window", "the first non-system message must stay a user message", _first_talker(window)
        )
