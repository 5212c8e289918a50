"""Instants: instant text in its two profiles, and the in-memory value (docs/time.md#instants).

An instant lives in memory as integer nanoseconds since the Unix epoch plus the offset it was
written in, in seconds. Floats are never used. Text is parsed by hand (not by
``datetime.fromisoformat``, which accepts far more than either profile) and calendar values are
checked by ``datetime.date``.

Readings settled here:

* Two ``Instant`` values are **equal when they denote the same point in time**, whatever
  offset they are written in (``08:00:00-07:00 == 15:00:00Z``); ordering compares the points
  too. The offset matters only for spelling (``text``).
* An offset must be a whole number of minutes below 24 hours, since the strict profile can
  only write ``±HH:MM``; ``-00:00`` and ``+00:00`` read as zero and are written ``Z``.
* The lenient ``:60`` second (a leap second, which POSIX time does not count) is read as the
  first second of the next minute; it is accepted in any minute, since the parser has no table
  of leap seconds.
* Years run from 0001 to 9999, the range ``datetime`` can check.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Final

import msgspec

from afp_runtime.errors import InvalidValue, shown

NS_PER_MS: Final = 1_000_000
"""Nanoseconds in a millisecond."""
NS_PER_S: Final = 1_000_000_000
"""Nanoseconds in a second."""
_S_PER_DAY: Final = 86_400
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_UTC_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MINUTE_NS: Final = 60 * NS_PER_S

# [0-9] rather than \d: \d also matches non-ASCII digits. The lenient profile differs only in
# also taking a lower-case t and z: the same pattern, case-insensitive.
_INSTANT = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})"
)
_STRICT = re.compile(_INSTANT)
_LENIENT = re.compile(_INSTANT, re.IGNORECASE)


class Instant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A point in time plus the offset it is written in.

    Attributes:
        ns: nanoseconds since 1970-01-01T00:00:00Z (an int, never a float).
        offset: the offset from UTC it is written in, in seconds (a whole number of minutes,
            below 24 hours); 0 is written ``Z``.

    Equality, hashing and ordering use ``ns`` only: the same point written in two offsets is
    the same instant.

    Raises:
        InvalidValue: ``ns`` or ``offset`` is not an int, or the offset cannot be written.
    """

    ns: int
    offset: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.ns, bool) or not isinstance(self.ns, int):
            raise InvalidValue("an instant's ns must be an int", value=shown(self.ns))
        off = self.offset
        if isinstance(off, bool) or not isinstance(off, int) or off % 60 or abs(off) >= _S_PER_DAY:
            raise InvalidValue(
                "an offset must be a whole number of minutes below 24 hours, in seconds",
                value=shown(off),
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self.ns == other.ns

    def __hash__(self) -> int:
        return hash(self.ns)

    def __lt__(self, other: Instant) -> bool:
        return self.ns < other.ns

    def __le__(self, other: Instant) -> bool:
        return self.ns <= other.ns

    def __gt__(self, other: Instant) -> bool:
        return self.ns > other.ns

    def __ge__(self, other: Instant) -> bool:
        return self.ns >= other.ns

    @property
    def text(self) -> str:
        """The canonical spelling in this instant's offset (docs/time.md#instants).

        ``Z`` for zero, seconds always present, a fraction only when non-zero and without
        trailing zeros: ``2026-10-09T15:40:00.001Z``, ``2026-10-09T08:00:00-07:00``.
        """
        return spell_instant(self)

    @property
    def seconds(self) -> int:
        """Whole seconds since the epoch (rounded toward the past)."""
        return self.ns // NS_PER_S

    @property
    def subsecond_ns(self) -> int:
        """The nanoseconds past ``seconds`` (0 to 999,999,999)."""
        return self.ns % NS_PER_S

    @property
    def has_fraction(self) -> bool:
        """True when the instant is not on a whole second."""
        return self.ns % NS_PER_S != 0

    @property
    def has_sub_ms(self) -> bool:
        """True when the instant is not on a whole millisecond (it can never be written exactly
        in a tool argument, docs/time.md#writing-a-window-into-a-form)."""
        return self.ns % NS_PER_MS != 0

    def plus(self, ns: int) -> Instant:
        """This instant moved by ``ns`` nanoseconds (negative moves back), same offset."""
        return Instant(ns=self.ns + ns, offset=self.offset)

    def at_offset(self, offset: int) -> Instant:
        """The same point written in another offset (seconds)."""
        return Instant(ns=self.ns, offset=offset)

    def utc(self) -> Instant:
        """The same point written in UTC (``Z``)."""
        return Instant(ns=self.ns, offset=0)

    @classmethod
    def from_datetime(cls, moment: datetime) -> Instant:
        """The instant of an aware ``datetime`` (its microseconds kept), in its UTC offset.

        Args:
            moment: an aware datetime; its ``utcoffset()`` becomes the instant's offset (a
                zone offset that is not a whole minute, such as local mean time before 1900,
                is replaced by UTC, which the strict profile can write).

        Raises:
            InvalidValue: ``moment`` is naive.
        """
        delta = moment.utcoffset()
        if delta is None:
            raise InvalidValue("an instant needs an aware datetime", value=shown(moment))
        ns = (moment - _UTC_EPOCH) // timedelta(microseconds=1) * 1000
        offset = delta // timedelta(seconds=1)
        return cls(ns=ns, offset=offset if offset % 60 == 0 else 0)


def signed_offset(offset: int) -> str:
    """An offset in seconds written ``±HH:MM`` (``+00:00`` for zero)."""
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


def fraction_text(sub_ns: int) -> str:
    """A sub-second part written ``.`` and its digits without trailing zeros; empty for none."""
    return "." + f"{sub_ns:09d}".rstrip("0") if sub_ns else ""


def local_parts(instant: Instant) -> tuple[date, int, int]:
    """The local date, second of the day and sub-second ns of ``instant`` in its own offset.

    Raises:
        InvalidValue: the local date falls outside the years 0001-9999.
    """
    seconds, sub = divmod(instant.ns, NS_PER_S)
    days, of_day = divmod(seconds + instant.offset, _S_PER_DAY)
    try:
        day = date.fromordinal(_EPOCH_ORDINAL + days)
    except (ValueError, OverflowError) as exc:
        raise InvalidValue(
            "the instant falls outside the years 0001-9999", value=shown(instant.ns)
        ) from exc
    return day, of_day, sub


def spell_instant(instant: Instant, *, millis: bool = False) -> str:
    """Spell ``instant`` in its own offset, with seconds.

    Args:
        instant: the instant.
        millis: write exactly three fraction digits (``.000`` included), for a value whose
            written precision has to be the millisecond (docs/time.md#writing-a-window-into-a-form
            ``wall``/``iso`` with a 1 ms step); the instant must then be on a whole millisecond.
            Otherwise the canonical fraction (only when non-zero, no trailing zeros).
    """
    day, of_day, sub = local_parts(instant)
    hours, rest = divmod(of_day, 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = f".{sub // NS_PER_MS:03d}" if millis else fraction_text(sub)
    stamp = f"{day.isoformat()}T{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"
    return stamp + ("Z" if instant.offset == 0 else signed_offset(instant.offset))


def _refuse(text: object, why: str) -> InvalidValue:
    return InvalidValue(f"{shown(text)} is not an instant: {why}", value=shown(text))


@lru_cache(maxsize=4096)
def _parse(text: str, lenient: bool) -> tuple[Instant, int]:
    found = (_LENIENT if lenient else _STRICT).fullmatch(text)
    if found is None:
        profile = "lenient" if lenient else "strict"
        raise _refuse(
            text, f"expected YYYY-MM-DDTHH:MM[:SS[.fraction]] with Z or ±HH:MM ({profile})"
        )
    year, month, day_, hour, minute, second, fraction, zone = found.groups()
    try:
        day = date(int(year), int(month), int(day_))
    except ValueError as exc:
        raise _refuse(text, "no such calendar date") from exc
    if int(hour) > 23 or int(minute) > 59:
        raise _refuse(text, "hour or minute out of range")
    sec = int(second) if second is not None else 0
    if sec > 60 or (sec == 60 and not lenient):
        raise _refuse(text, "second out of range")
    if zone in ("Z", "z"):
        offset = 0
    else:
        off_h, off_m = int(zone[1:3]), int(zone[4:6])
        if off_h > 23 or off_m > 59:
            raise _refuse(text, "offset out of range")
        offset = (off_h * 3600 + off_m * 60) * (-1 if zone[0] == "-" else 1)
    local = (day.toordinal() - _EPOCH_ORDINAL) * _S_PER_DAY
    local += int(hour) * 3600 + int(minute) * 60 + sec
    sub = int(fraction.ljust(9, "0")) if fraction else 0
    # The written step: a minute for HH:MM, a second with seconds, a millisecond with a fraction.
    step = _MINUTE_NS if second is None else NS_PER_S if fraction is None else NS_PER_MS
    return Instant(ns=(local - offset) * NS_PER_S + sub, offset=offset), step


def parse_written(text: str, *, lenient: bool = False) -> tuple[Instant, int]:
    """Parse instant text and report its written precision.

    Returns:
        The instant and its written step in ns: 60 s for ``HH:MM``, 1 s with seconds, 1 ms
        with a fraction of any length (what an inclusive ``iso`` end gains,
        docs/time.md#reading-values-back).

    Raises:
        InvalidValue: ``text`` is not an instant of the profile.
    """
    if not isinstance(text, str):
        raise _refuse(text, "not a string")
    return _parse(text, lenient)


def parse_instant(text: str, *, lenient: bool = False) -> Instant:
    """Parse instant text of the strict profile (or, with ``lenient``, the lenient one).

    Strict: upper-case ``T`` and ``Z``, numeric offsets exactly ``±HH:MM``, no leap second.
    Lenient (only for periods a tool result declares): also lower-case ``t``/``z`` and a
    ``:60`` second. Both reject impossible calendar values; seconds may be omitted; a fraction
    of up to 9 digits is kept exactly.

    Raises:
        InvalidValue: ``text`` is not an instant of the profile.
    """
    return parse_written(text, lenient=lenient)[0]


# Instants with a date in every zone (offsets stay within a day of UTC): a message's clock and
# the windows a model sends must lie here, so that they can be read wherever the person is.
_EVERY_ZONE_EARLIEST = parse_instant("0001-01-02T00:00:00Z")
_EVERY_ZONE_LATEST = parse_instant("9999-12-30T23:59:59.999999999Z")


def dated_in_every_zone(instant: Instant) -> bool:
    """Whether ``instant`` lies from 0001-01-02 to 9999-12-30 (UTC): it has a date in every
    zone, so converting it anywhere stays on the calendar."""
    return _EVERY_ZONE_EARLIEST <= instant <= _EVERY_ZONE_LATEST
