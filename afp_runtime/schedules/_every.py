"""The English ``every`` form read into a rule (docs/schedules.md#the-every-form).

Two shapes are accepted, nothing else: an interval (``2 hours``, ``30 minutes``, ``hour``),
a fixed duration of real time counted from the schedule's anchor; and a calendar rule (``day at
18:30``, ``weekday at 09:00``, ``monday, wednesday and friday at 8:00``, ``week on monday at
09:00``), read on the zone's wall clock. The text is read case-insensitively with runs of
spaces as one; a leading ``every`` is allowed, so ``every = "every day at 9:00"`` reads too.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from afp_runtime.schedules._refuse import refuse

MAX_INTERVAL_MINUTES: Final = 7 * 24 * 60
"""The longest interval ``every`` takes (a week); longer periods are calendar or cron rules."""

DAY_NAMES: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAYS: Final = {name: index for index, name in enumerate(DAY_NAMES)} | {
    name[:3]: index for index, name in enumerate(DAY_NAMES)
}
_DAY_SETS: Final = {
    "day": frozenset(range(7)),
    "weekday": frozenset(range(5)),
    "weekdays": frozenset(range(5)),
    "weekend day": frozenset({5, 6}),
    "weekend days": frozenset({5, 6}),
    "weekend": frozenset({5, 6}),
    "weekends": frozenset({5, 6}),
}
_UNITS: Final = {"minute": 1, "minutes": 1, "hour": 60, "hours": 60}
_INTERVAL = re.compile(r"(?:(?P<count>[0-9]+) )?(?P<unit>[a-z]+)")
_TIME = re.compile(r"(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2})")
_AND = re.compile(r" *, *and +| *, *| +and +")


class Interval(msgspec.Struct, frozen=True):
    """``every N minutes|hours``: due at anchor + k·step for k = 1, 2, …"""

    step_ms: int


class Calendar(msgspec.Struct, frozen=True):
    """``every DAYS at TIMES``: the wall times ``times`` (hour, minute) on the weekdays
    ``days`` (Monday 0 … Sunday 6)."""

    days: frozenset[int]
    times: tuple[tuple[int, int], ...]


EveryRule = Interval | Calendar


class _Refused(Exception):
    """Why the text is refused; turned into an ``InvalidValue`` naming ``every``."""


def read_every(text: str) -> EveryRule:
    """The rule ``text`` states.

    Raises:
        InvalidValue: ``text`` is not one of the accepted forms (``field="every"``); the message
            names the word that is wrong.
    """
    plain = " ".join(text.lower().split())
    plain = plain.removeprefix("every ")
    try:
        if " at " in f" {plain} ":
            return _calendar(plain)
        return _interval(plain)
    except _Refused as why:
        raise refuse("every", text, str(why)) from None


def _interval(plain: str) -> Interval:
    found = _INTERVAL.fullmatch(plain)
    if found is None or found["unit"] not in _UNITS:
        unit = found["unit"] if found else plain
        if unit in ("day", "days", "week", "weeks"):
            raise _Refused(
                f"{unit!r} needs a time of day: write e.g. 'day at 09:00' or "
                "'week on monday at 09:00'"
            )
        raise _Refused(
            "expected 'N minutes', 'N hours', or days 'at' a time (e.g. 'weekday at 09:00')"
        )
    count = int(found["count"]) if found["count"] is not None else 1
    minutes = count * _UNITS[found["unit"]]
    if count < 1 or minutes > MAX_INTERVAL_MINUTES:
        raise _Refused(f"{count} {found['unit']} is not an interval from 1 minute to 168 hours")
    return Interval(step_ms=minutes * 60_000)


def _calendar(plain: str) -> Calendar:
    days_text, _, times_text = f" {plain} ".partition(" at ")
    days_text, times_text = days_text.strip(), times_text.strip()
    if times_text.count(" at ") or times_text.startswith("at "):
        raise _Refused("'at' appears twice")
    return Calendar(days=_days(days_text), times=_times(times_text))


def _days(text: str) -> frozenset[int]:
    if text in _DAY_SETS:
        return _DAY_SETS[text]
    text = text.removeprefix("week on ") if text.startswith("week on ") else text
    if not text:
        raise _Refused("name the days before 'at' (day, weekday, weekend day, or day names)")
    days: set[int] = set()
    for word in _AND.split(text):
        name = word.removesuffix("s") if word.endswith("days") else word
        if name not in _DAYS:
            raise _Refused(
                f"{word!r} is not a day (day, weekday, weekend day, monday … sunday, mon … sun)"
            )
        days.add(_DAYS[name])
    return frozenset(days)


def _times(text: str) -> tuple[tuple[int, int], ...]:
    if not text:
        raise _Refused("name a time after 'at' (HH:MM, 24-hour)")
    times: set[tuple[int, int]] = set()
    for word in _AND.split(text):
        found = _TIME.fullmatch(word)
        if found is None:
            raise _Refused(f"{word!r} is not a time of day (HH:MM, 24-hour, e.g. 09:00 or 18:30)")
        hour, minute = int(found["hour"]), int(found["minute"])
        if hour > 23:
            raise _Refused(f"{hour} is not an hour (0-23)")
        if minute > 59:
            raise _Refused(f"{minute} is not a minute (00-59)")
        times.add((hour, minute))
    return tuple(sorted(times))
