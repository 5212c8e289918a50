"""The ``at`` and ``cron`` forms: checking their text and listing their local times
(docs/schedules.md#the-three-forms).

cronsim reads the cron expression over naive local times; its errors become ``InvalidValue``
naming ``cron`` here, so no cronsim exception leaves the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Final

from cronsim import CronSim, CronSimError

from afp_runtime.errors import InvalidValue
from afp_runtime.schedules._every import Calendar
from afp_runtime.schedules._refuse import refuse
from afp_runtime.schedules._wall import wall_instant_ms
from afp_runtime.time import parse_instant

_AT: Final = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})"
    r"(?::(?P<second>[0-9]{2}))?(?P<offset>Z|[+-][0-9]{2}:[0-9]{2})?"
)
_CRON_START: Final = datetime(2000, 1, 1)


def at_ms(text: str, zone: str) -> int:
    """The instant (epoch ms) of an ``at`` text: with an offset, that instant; without, the
    local time in ``zone`` (a repeated time's earlier reading, a skipped one's later).

    Raises:
        InvalidValue: the text is not ``YYYY-MM-DDTHH:MM[:SS]`` with an optional ``Z`` or
            ``±HH:MM``, or names no such date or time (``field="at"``).
    """
    found = _AT.fullmatch(text)
    if found is None:
        raise refuse("at", text, "expected YYYY-MM-DDTHH:MM[:SS], optionally ending Z or ±HH:MM")
    if int(found["hour"]) > 23 or int(found["minute"]) > 59 or int(found["second"] or 0) > 59:
        raise refuse("at", text, "the hour, minute or second is out of range")
    try:
        day = datetime.fromisoformat(found["date"])
    except ValueError:
        raise refuse("at", text, "no such calendar date") from None
    if found["offset"] is not None:
        try:
            return parse_instant(text).ns // 1_000_000
        except InvalidValue as exc:
            raise refuse("at", text, exc.message) from None
    naive = day.replace(
        hour=int(found["hour"]), minute=int(found["minute"]), second=int(found["second"] or 0)
    )
    try:
        return wall_instant_ms(naive, zone)
    except (OverflowError, InvalidValue):
        raise refuse("at", text, f"cannot be read in {zone}") from None


def check_at(text: str, zone: str) -> None:
    """Refuse an ``at`` text that ``at_ms`` cannot read."""
    at_ms(text, zone)


def check_cron(text: str) -> None:
    """Refuse a cron text that is not 5 fields cronsim accepts, or never matches.

    Raises:
        InvalidValue: ``field="cron"``, e.g. ``cron: "* * *" has 3 fields, not 5``.
    """
    fields = text.split()
    if len(fields) != 5:
        raise refuse(
            "cron",
            text,
            f"has {len(fields)} fields, not 5 (minute hour day-of-month month day-of-week)",
        )
    try:
        next(CronSim(" ".join(fields), _CRON_START))
    except CronSimError as exc:
        raise refuse("cron", text, f"{str(exc).lower()} field") from None
    except (StopIteration, ValueError, OverflowError):
        raise refuse("cron", text, "never matches a date") from None


def cron_times(text: str, start: datetime) -> Iterator[datetime]:
    """The local times a (checked) cron text matches, at or after ``start``, in order."""
    # cronsim lists matches strictly after its start; start a second before.
    return iter(CronSim(" ".join(text.split()), start - timedelta(seconds=1)))


def calendar_times(rule: Calendar, start: datetime) -> Iterator[datetime]:
    """The local times a calendar rule names, at or after ``start``, in order."""
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    while True:
        if day.weekday() in rule.days:
            for hour, minute in rule.times:
                moment = day.replace(hour=hour, minute=minute)
                if moment >= start:
                    yield moment
        day += timedelta(days=1)
