"""Every reading of a typed date or day word, relative to the clock's date in the mention's
zone (docs/time.md#the-resolver): date orders, the current or previous year, a two-digit
year's century."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from afp_runtime.time._parts import DateParts, FixedDate, NumericDate, Relative


@dataclass(frozen=True)
class Day:
    """One reading of a side's date."""

    day: date
    tags: tuple[tuple[str, str], ...] = ()
    implied: frozenset[str] = frozenset()
    century: bool = False
    typed: bool = False


def _real(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except (ValueError, OverflowError):
        return None


def _numeric_days(parts: NumericDate, ref: date) -> list[Day]:
    fields = parts.fields
    if len(fields) == 2:
        a, b = fields
        found: list[Day] = []
        for order, (month, day) in (("MD", (a, b)), ("DM", (b, a))):
            for year_tag, year in (("current", ref.year), ("previous", ref.year - 1)):
                real = _real(year, month, day)
                if real is not None:
                    tags = (("dateOrder", order), ("year", year_tag))
                    found.append(Day(real, tags, frozenset({"year"}), typed=True))
        return found
    a, b, c = fields
    century = parts.year_digits == 2
    base = (ref.year // 100) * 100
    if parts.year_digits == 4:
        orders = [("YMD", (a, b, c))] if a > 99 else [("MDY", (c, a, b)), ("DMY", (c, b, a))]
    else:
        orders = [
            ("MDY", (base + c, a, b)),
            ("DMY", (base + c, b, a)),
            ("YMD", (base + a, b, c)),
        ]
    days = []
    for order, (year, month, day) in orders:
        real = _real(year, month, day)
        if real is not None:
            days.append(Day(real, (("dateOrder", order),), century=century, typed=True))
    return days


def day_readings(source: DateParts | Relative | None, ref: date) -> list[Day]:
    """Every reading of a side's date, relative to ``ref`` (the clock's date in the zone)."""
    if source is None:
        return [Day(ref, implied=frozenset({"date"}))]
    if isinstance(source, Relative):
        try:
            shifted = ref + timedelta(days=source.offset or 0)
        except OverflowError:
            return []
        return [Day(shifted, implied=frozenset({"year", "month"}))]
    if isinstance(source, FixedDate):
        if source.year is not None:
            real = _real(source.year, source.month, source.day)
            return [] if real is None else [Day(real, typed=True)]
        found = []
        for year_tag, year in (("current", ref.year), ("previous", ref.year - 1)):
            real = _real(year, source.month, source.day)
            if real is not None:
                found.append(Day(real, (("year", year_tag),), frozenset({"year"}), typed=True))
        return found
    return _numeric_days(source, ref)


def compatible(first: tuple[tuple[str, str], ...], second: tuple[tuple[str, str], ...]) -> bool:
    """Both sides use the same reading of every tag they both carry (docs/time.md#the-resolver)."""
    mine = dict(first)
    return all(mine.get(key, value) == value for key, value in second)
