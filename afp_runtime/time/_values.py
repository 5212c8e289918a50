"""Local values a form writes and reads: wall times, dates and epoch numbers
(docs/time.md#the-five-form-kinds, docs/time.md#writing-a-window-into-a-form,
docs/time.md#reading-values-back)."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Final

from afp_runtime.time._instants import NS_PER_MS, NS_PER_S

SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer every JSON reader keeps exactly."""

_WALL = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,3}))?)?"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DIGITS = re.compile(r"-?[0-9]+")


def parse_wall(text: object) -> tuple[datetime, int] | None:
    """A wall value ``YYYY-MM-DDTHH:MM[:SS[.fff]]`` (no offset) and its written step in ns
    (60 s, 1 s or 1 ms), or None when it is not one or names an impossible time."""
    if not isinstance(text, str):
        return None
    found = _WALL.fullmatch(text)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction = found.groups()
    microsecond = int((fraction or "").ljust(3, "0")) * 1000
    try:
        naive = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0), microsecond
        )
    except ValueError:
        return None
    if second is None:
        return naive, 60 * NS_PER_S
    return naive, NS_PER_S if fraction is None else NS_PER_MS


def spell_wall(naive: datetime, *, millis: bool) -> str:
    """``YYYY-MM-DDTHH:MM:SS``, plus ``.mmm`` when ``millis``."""
    return naive.isoformat(timespec="milliseconds" if millis else "seconds")


def parse_date(text: object) -> date | None:
    """A real calendar date ``YYYY-MM-DD``, or None."""
    if not isinstance(text, str) or _DATE.fullmatch(text) is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def read_epoch(value: object, *, in_string: bool) -> int | None:
    """A safe integer sent as an epoch value, or None.

    Inside a joined string it is written as digits (an optional ``-`` first); otherwise it is a
    JSON number: an int (never a bool) or a float with no fractional part.
    """
    number: int | None = None
    if in_string:
        if isinstance(value, str) and _DIGITS.fullmatch(value):
            number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if number is None or abs(number) > SAFE_INTEGER:
        return None
    return number


def is_safe(number: int) -> bool:
    """Whether ``number`` is a safe integer."""
    return abs(number) <= SAFE_INTEGER
