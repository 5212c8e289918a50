"""When a schedule is due: ``next_due`` over the three forms (docs/schedules.md#due-instants).

Due instants are whole epoch milliseconds. Wall-clock rules (``cron``, calendar ``every``, a
local ``at``) are read in the schedule's zone by the clock-change rule of ``_wall``; an interval
``every`` is a fixed duration of real time from the anchor, untouched by clock changes.
"""

from __future__ import annotations

import functools

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.schedules._every import Interval, read_every
from afp_runtime.schedules._forms import at_ms, calendar_times, cron_times
from afp_runtime.schedules._value import Schedule
from afp_runtime.schedules._wall import Candidates, first_after


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"{name}: {shown(value)} is not epoch milliseconds (an int)", field=name)
    return value


@functools.lru_cache(maxsize=1024)
def _candidates(cron: str | None, every: str | None) -> Candidates | Interval:
    if cron is not None:
        return functools.partial(cron_times, cron)
    assert every is not None
    rule = read_every(every)
    if isinstance(rule, Interval):
        return rule
    return functools.partial(calendar_times, rule)


def next_due(s: Schedule, *, after_ms: int, anchor_ms: int) -> int | None:
    """The first due instant strictly after ``after_ms`` (epoch ms), or None when there is none
    (a once schedule at or before it).

    ``anchor_ms`` (when the schedule was set) anchors interval forms: ``every 2 hours`` is due
    at anchor + 2 h, anchor + 4 h, … A wall-clock form ignores it.

    Raises:
        InvalidValue: ``after_ms`` or ``anchor_ms`` is not an int.
    """
    after_ms = _whole("afterMs", after_ms)
    anchor_ms = _whole("anchorMs", anchor_ms)
    if s.at is not None:
        due = at_ms(s.at, s.zone)
        return due if due > after_ms else None
    rule = _candidates(s.cron, s.every)
    if isinstance(rule, Interval):
        steps = max(1, (after_ms - anchor_ms) // rule.step_ms + 1)
        return anchor_ms + steps * rule.step_ms
    return first_after(rule, s.zone, after_ms)
