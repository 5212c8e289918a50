"""What a time reader found in the person's words: ``TimeParts`` and their pieces (docs/time.md
docs/time.md#readers).

Parts carry what was *typed*, never what it means: no zone is applied, no year or century is
filled in, no date order or AM/PM is decided. Turning parts into windows is the resolver's
work (docs/time.md#the-resolver); a reader only says which pieces the words contain.

Wire shapes (JSON keys camelCase, absent keys omitted, never ``null`` when written):

* ``TimeParts {date?, wall?, zoneToken?, relative?, partOfDay?, anchor?, rangeOf?}`` — at least
  one key.
* ``date`` is a tagged union on ``kind``:

  - ``{kind: "numeric", fields: [a, b] | [a, b, c], yearDigits?: 2 | 4}`` — digits separated by
    ``/`` whose order (month/day/year) is not decided. ``yearDigits`` is present exactly when
    there are three fields. With ``2`` every field was written with one or two digits and any
    of them may be the year. With ``4`` one field was written with four digits, it is the year
    and it stands first or last (``2026/10/09``, ``10/09/2026``); it is the only field above 99.
  - ``{kind: "fixed", year?, month, day}`` — an ISO date or a date with a month name; ``year``
    only when typed (four digits).

* ``wall {h, m?, s?, meridiem?: "am" | "pm", clock?: "24h"}`` — ``h`` 0-23, ``m`` and ``s``
  0-59 (``s`` only with ``m``). ``meridiem`` only with ``h`` 1-12; ``clock: "24h"`` marks an
  hour that is on the 24-hour clock (an ISO time, an hour written ``00``-``09``, ``0`` or
  13-23) and never appears with ``meridiem``. A wall without either is a 12-hour-clock hour that
  may be morning or evening. A fraction of a second typed in an ISO instant is not kept: the
  wall names its whole second.
* ``zoneToken`` — the zone text exactly as typed (``PST``, ``America/Los_Angeles``,
  ``UTC+05:30``, ``-07:00``, ``Z``, ``London time``), 1-100 code points.
* ``relative`` — ``{unit: "day", offset}`` for a day word (``offset`` -1 yesterday, 0 today,
  +1 tomorrow), or a span ending now ``{unit: "minute" | "hour" | "day" | "week", count}`` with
  ``count`` 1-100000. Exactly one of ``offset`` and ``count``.
* ``partOfDay`` — ``morning | afternoon | evening | night | noon | midnight``.
* ``anchor: "previous"`` — a reference to a window talked about earlier.
* ``rangeOf: [side, side]`` — a two-sided range; a ``side`` is ``{date?, wall?, zoneToken?,
  relative?, partOfDay?}`` with at least one key. A day word or date written before the range
  is kept on the ``TimeParts`` itself, as is a zone written after the range's end when the
  start names none: both apply to either side that lacks its own (docs/time.md#the-resolver "range
  sides"). A ``TimeParts`` with ``rangeOf`` has no ``wall`` of its own.

The English rule reader (``afp/english``) never writes ``partOfDay`` or ``anchor``: the words
for them are unreadable to it (docs/time.md#what-the-english-reader-understands). They exist for
model-kind readers, and the resolver answers them ``unsupported``.
"""

from __future__ import annotations

from typing import Final, Literal

from afp_runtime.time._wire import Wire

Meridiem = Literal["am", "pm"]
"""AM or PM as typed (``AM``, ``a.m.``, ``pm`` … all written in lower case, without dots)."""

RelativeUnit = Literal["minute", "hour", "day", "week"]
"""The units of a span ending now; ``day`` is also the unit of a day word."""

PartOfDay = Literal["morning", "afternoon", "evening", "night", "noon", "midnight"]
"""A named part of the day (only model-kind readers write it; the resolver cannot use it)."""

Anchor = Literal["previous"]
"""A reference to a window named earlier in the conversation."""

MAX_LOOKBACK_COUNT: Final[int] = 100_000
"""The largest ``count`` of a span ending now (docs/time.md#what-the-english-reader-understands)."""
MAX_DAY_OFFSET: Final[int] = 100_000
"""The largest ``offset`` (either sign) of a day word; the English reader writes only -1..1."""
MAX_ZONE_TOKEN: Final[int] = 100
"""The longest ``zoneToken``, in code points."""


class NumericDate(Wire, frozen=True, kw_only=True, tag_field="kind", tag="numeric"):
    """Digits separated by ``/`` whose order is not decided: wire ``{kind: "numeric", fields,
    yearDigits?}``.

    Attributes:
        fields: the two or three numbers in the order typed (``10/09/26`` → ``(10, 9, 26)``).
        year_digits: wire ``yearDigits``; 2 or 4 when there are three fields, else absent.
    """

    fields: tuple[int, ...]
    year_digits: Literal[2, 4] | None = None

    def __post_init__(self) -> None:
        count = len(self.fields)
        if count not in (2, 3):
            raise ValueError("a numeric date has two or three fields")
        if any(isinstance(f, bool) or f < 0 for f in self.fields):
            raise ValueError("numeric date fields are non-negative integers")
        if (count == 3) != (self.year_digits is not None):
            raise ValueError("yearDigits is given exactly when a numeric date has three fields")
        if self.year_digits == 4:
            wide = [i for i, f in enumerate(self.fields) if f > 99]
            if len(wide) != 1 or wide[0] not in (0, 2) or not 1000 <= self.fields[wide[0]] <= 9999:
                raise ValueError(
                    "with yearDigits 4 exactly the first or last field is a year 1000-9999"
                )
        elif any(f > 99 for f in self.fields):
            raise ValueError("numeric date fields have at most two digits unless yearDigits is 4")


class FixedDate(Wire, frozen=True, kw_only=True, tag_field="kind", tag="fixed"):
    """A date whose month and day are known: wire ``{kind: "fixed", year?, month, day}``.

    Attributes:
        month: 1-12.
        day: 1-31 (whether the date exists is the resolver's question).
        year: the year when typed (1-9999), else absent.
    """

    month: int
    day: int
    year: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12:
            raise ValueError("month must be 1-12")
        if not 1 <= self.day <= 31:
            raise ValueError("day must be 1-31")
        if self.year is not None and not 1 <= self.year <= 9999:
            raise ValueError("year must be 1-9999")


DateParts = NumericDate | FixedDate
"""A date as typed: numeric (order undecided) or fixed."""


class Wall(Wire, frozen=True, kw_only=True):
    """A time of day as typed: wire ``{h, m?, s?, meridiem?, clock?}``.

    Attributes:
        h: the hour as typed, 0-23 (1-12 with a meridiem).
        m: minutes 0-59, when typed.
        s: seconds 0-59, when typed (only with minutes).
        meridiem: ``am`` or ``pm`` when typed.
        clock: ``"24h"`` when the hour is on the 24-hour clock (see the module docstring).
    """

    h: int
    m: int | None = None
    s: int | None = None
    meridiem: Meridiem | None = None
    clock: Literal["24h"] | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.h <= 23:
            raise ValueError("h must be 0-23")
        if self.m is not None and not 0 <= self.m <= 59:
            raise ValueError("m must be 0-59")
        if self.s is not None and (self.m is None or not 0 <= self.s <= 59):
            raise ValueError("s must be 0-59 and comes only with m")
        if self.meridiem is not None:
            if self.clock is not None:
                raise ValueError("a wall has meridiem or clock 24h, not both")
            if not 1 <= self.h <= 12:
                raise ValueError("with a meridiem h must be 1-12")


class Relative(Wire, frozen=True, kw_only=True):
    """A day word or a span ending now: wire ``{unit: "day", offset}`` or ``{unit, count}``.

    Attributes:
        unit: ``day`` for a day word; ``minute``, ``hour``, ``day`` or ``week`` for a span.
        offset: days from the clock's date (-1 yesterday, 0 today, +1 tomorrow).
        count: the span's length in ``unit``, 1-100000.
    """

    unit: RelativeUnit
    offset: int | None = None
    count: int | None = None

    def __post_init__(self) -> None:
        if (self.offset is None) == (self.count is None):
            raise ValueError("relative has exactly one of offset and count")
        if self.offset is not None:
            if self.unit != "day":
                raise ValueError("an offset is counted in days")
            if isinstance(self.offset, bool) or abs(self.offset) > MAX_DAY_OFFSET:
                raise ValueError(f"offset must be an integer within ±{MAX_DAY_OFFSET}")
        if self.count is not None and (
            isinstance(self.count, bool) or not 1 <= self.count <= MAX_LOOKBACK_COUNT
        ):
            raise ValueError(f"count must be 1-{MAX_LOOKBACK_COUNT}")

    @property
    def is_lookback(self) -> bool:
        """Whether this is a span ending now (it has a ``count``)."""
        return self.count is not None


def _check_zone_token(token: str | None) -> None:
    if token is not None and (not token.strip() or len(token) > MAX_ZONE_TOKEN):
        raise ValueError(
            f"zoneToken must be non-blank text of at most {MAX_ZONE_TOKEN} code points"
        )


class RangeSide(Wire, frozen=True, kw_only=True):
    """One end of a two-sided range: wire ``{date?, wall?, zoneToken?, relative?, partOfDay?}``.

    Attributes:
        date: the side's own date, when typed on it.
        wall: the side's time of day (``8`` in ``8 to 9 PM`` is ``{h: 8}``).
        zone_token: wire ``zoneToken``; the side's own zone, exactly as typed.
        relative: the side's own day word (or a span ending now, which the resolver refuses).
        part_of_day: wire ``partOfDay``.
    """

    date: DateParts | None = None
    wall: Wall | None = None
    zone_token: str | None = None
    relative: Relative | None = None
    part_of_day: PartOfDay | None = None

    def __post_init__(self) -> None:
        if all(getattr(self, name) is None for name in self.__struct_fields__):
            raise ValueError("a range side has at least one part")
        _check_zone_token(self.zone_token)


class TimeParts(Wire, frozen=True, kw_only=True):
    """One parse of a mention (docs/time.md#readers); see the module docstring for the wire shape.

    Attributes:
        date: a numeric or fixed date.
        wall: a time of day (absent when ``range_of`` is given).
        zone_token: wire ``zoneToken``; zone text exactly as typed.
        relative: a day word or a span ending now.
        part_of_day: wire ``partOfDay``; a named part of the day.
        anchor: ``"previous"``: a reference to an earlier window.
        range_of: wire ``rangeOf``; the two sides of a range, start first.
    """

    date: DateParts | None = None
    wall: Wall | None = None
    zone_token: str | None = None
    relative: Relative | None = None
    part_of_day: PartOfDay | None = None
    anchor: Anchor | None = None
    range_of: tuple[RangeSide, RangeSide] | None = None

    def __post_init__(self) -> None:
        if all(getattr(self, name) is None for name in self.__struct_fields__):
            raise ValueError("time parts have at least one part")
        if self.range_of is not None and self.wall is not None:
            raise ValueError("a range keeps its times of day on its sides")
        _check_zone_token(self.zone_token)
