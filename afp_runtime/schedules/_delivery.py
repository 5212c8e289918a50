"""What to deliver now: ``plan_delivery`` and the catch-up rule (docs/schedules.md#catching-up).

A due instant found within ``LATE_MS`` of now is on time and always delivered. An older one was
missed (no host ran the schedule then) and follows the schedule's ``catchUp``: ``latest``
delivers only the newest missed one, ``none`` none of them, ``all`` every one — at most
``limit`` per call, oldest first, the rest left due (``next_ms`` at or before now says so), so
nothing is ever dropped under ``all``.
"""

from __future__ import annotations

from typing import Final

import msgspec

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.schedules._due import next_due
from afp_runtime.schedules._value import Schedule

LATE_MS: Final = 60_000
"""A due instant found within this of now (inclusive) is on time; an older one was missed."""

SKIPPED_COUNT_LIMIT: Final = 1000
"""``skipped_count`` counts up to this many; a count at the limit means this many or more."""


class Delivery(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The plan for one check of a schedule.

    Attributes:
        deliver: due instants to deliver now, oldest first.
        skipped: missed due instants the catch-up rule drops (reported, not delivered), oldest
            first; at most ``limit`` of them.
        skipped_count: how many were dropped, counted up to ``SKIPPED_COUNT_LIMIT``.
        through_ms: the latest due instant handled (delivered or skipped): the new "last due"
            mark; the given ``last_ms`` when none was.
        next_ms: the next due instant after ``through_ms`` (None: a finished once schedule);
            at or before now when ``all`` left some for the next call.
    """

    deliver: tuple[int, ...]
    skipped: tuple[int, ...]
    skipped_count: int
    through_ms: int
    next_ms: int | None


def _walk(s: Schedule, after: int, through: int, anchor: int, cap: int) -> list[int]:
    """Due instants in (after, through], oldest first, at most ``cap``."""
    found: list[int] = []
    due = next_due(s, after_ms=after, anchor_ms=anchor)
    while due is not None and due <= through and len(found) < cap:
        found.append(due)
        due = next_due(s, after_ms=due, anchor_ms=anchor)
    return found


def _newest(s: Schedule, after: int, through: int, anchor: int) -> int | None:
    """The newest due instant in (after, through]: widening windows back from ``through``."""
    width = LATE_MS
    while True:
        low = max(after, through - width)
        due = next_due(s, after_ms=low, anchor_ms=anchor)
        if due is not None and due <= through:
            newest = due
            while (due := next_due(s, after_ms=newest, anchor_ms=anchor)) is not None:
                if due > through:
                    break
                newest = due
            return newest
        if low == after:
            return None
        width *= 2


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"{name}: {shown(value)} is not an int", field=name)
    return value


def plan_delivery(
    s: Schedule, *, last_ms: int, now_ms: int, anchor_ms: int, limit: int = 1000
) -> Delivery:
    """What to deliver at ``now_ms`` given the last handled due instant ``last_ms`` (the anchor
    on a fresh schedule): the due instants in (last_ms, now_ms], by the catch-up rule.

    Raises:
        InvalidValue: an argument is not an int, or ``limit`` is below 1.
    """
    last, now = _whole("lastMs", last_ms), _whole("nowMs", now_ms)
    anchor, limit = _whole("anchorMs", anchor_ms), _whole("limit", limit)
    if limit < 1:
        raise InvalidValue(f"limit: {limit} is below 1", field="limit")
    if s.catch_up == "all":
        deliver = _walk(s, last, now, anchor, limit)
        return _planned(s, deliver, [], 0, deliver[-1] if deliver else last, anchor)
    missed_through = now - LATE_MS - 1
    missed = _walk(s, last, missed_through, anchor, SKIPPED_COUNT_LIMIT)
    newest = missed[-1] if missed else None
    if len(missed) == SKIPPED_COUNT_LIMIT:
        # More may lie past the counted ones: the newest is found from the far end.
        newest = _newest(s, last, missed_through, anchor)
    on_time = _walk(s, max(last, missed_through), now, anchor, limit)
    kept = [newest] if s.catch_up == "latest" and newest is not None else []
    dropped = [due for due in missed if due not in kept]
    handled = on_time[-1] if on_time else newest if newest is not None else last
    return _planned(s, [*kept, *on_time], dropped[:limit], len(dropped), handled, anchor)


def _planned(
    s: Schedule, deliver: list[int], skipped: list[int], count: int, through: int, anchor: int
) -> Delivery:
    return Delivery(
        deliver=tuple(deliver),
        skipped=tuple(skipped),
        skipped_count=count,
        through_ms=through,
        next_ms=next_due(s, after_ms=through, anchor_ms=anchor),
    )
