"""The resolver: a mention's parts, the turn's clock and the policy in; candidates out (docs/time.md
docs/time.md#the-resolver).

``resolve(parses, clock=..., policy=...)`` turns the ``TimeParts`` a reader found into
``TimeCandidate`` windows. Every candidate is a *proposal*: the resolver never picks between
readings (date order, year, AM/PM, a repeated or skipped hour, an abbreviation); it offers
each of them, tagged, and leaves the choice to the policy (``policy.py``) and the person.

Wire shapes (JSON keys camelCase; every key of a candidate is always written):

* ``TimeCandidate {window, range, zone, grain, said, implied, anchor, notes, reading, parse}``

  - ``window``: ``{kind: "range"}``, or ``{kind: "lookback", duration}`` for a span ending now
    (``duration`` is ``<count><m|h|d|w>`` as typed: ``40m``, ``24h``, ``2d``, ``1w``);
  - ``range``: ``{from, to}``, half-open strict instants written in the offset the person
    intended: the zone's offset at each end, the said offset, or ``now``'s offset for a
    look-back;
  - ``zone``: the mention's zone name (docs/time.md#zone-names-and-the-database): the zone typed or
    read from a place, the mapped
    zone of an abbreviation, otherwise the clock's zone (also with a said numeric offset);
  - ``grain``: ``second | minute | hour | day | week``; the finest unit typed (a range: the
    finer of its two sides), a look-back's unit;
  - ``said``: ``[]`` (always empty when filed, docs/time.md#nothing-is-settled-without-the-person);
  - ``implied``: what the reader had to assume, in this order: ``date`` (no date or day word
    at all: the clock's date), ``year``, ``month``, ``zone`` (no zone typed: the clock's);
  - ``anchor``: ``"message"``;
  - ``notes``: objects tagged on ``kind``, in this order: ``{kind: "century-implied"}``,
    ``{kind: "zone-read", as: "place"}``, ``{kind: "offset-said"}``,
    ``{kind: "dst-overlap" | "dst-gap", which: "earlier" | "later", end?: true}`` (the start's,
    then the end's, which carries ``end: true``), ``{kind: "end-of-grain"}``;
  - ``reading``: the tags of the readings chosen, each present only when the resolver chose
    it: ``{dateOrder?: MDY | DMY | YMD | MD | DM, meridiem?: am | pm, endMeridiem?: am | pm,
    year?: current | previous, abbreviation?: zone | offset}``;
  - ``parse``: the index of the parse in the mention's ``parses``.

* ``Resolution {candidates, needsZone, unsupported}`` — all candidates of a mention, parse by
  parse; ``needsZone`` when a parse could not be resolved for want of a zone; ``unsupported``
  when a parse holds a part the resolver does not interpret.

Readings settled here (the spec is silent):

* Tags for two-field numeric dates are ``MD`` and ``DM`` (three fields: ``MDY``, ``DMY``,
  ``YMD``); ``policy.py`` says which policy keeps which.
* A two-digit year's century is the century of the year ``now`` falls in, in the mention's
  zone. A four-digit year standing first gives only ``YMD``; standing last ``MDY`` and ``DMY``.
* ``end-of-grain`` marks an end pushed past what was typed: a time of day (as a point, or as a
  range end that is not a whole hour) and a typed date (``Sept 29``, ``10/09/26``). A day word
  names a whole day and gets no note. A "whole hour" end has no minutes, or ``:00`` minutes
  (and no or ``:00`` seconds), so ``08:00 to 09:00`` ends at ``09:00``.
* A time of day extends by its grain in elapsed time (``1 AM`` in a repeated hour is one hour
  long in each reading); a date ends where the next date begins
  (docs/time.md#local-times-around-clock-changes).
* A repeated or skipped time of day yields both readings
  (docs/time.md#local-times-around-clock-changes). For a point, the end follows
  the start's reading. For a range, every pairing of the start's and the end's readings with
  ``from < to`` is offered, the start's readings first.
* AM/PM in ranges is decided on the local wall times (date and time, DST aside); the final
  ``from < to`` is checked on the instants. A marked start with an unmarked end offers both
  ends (``8 AM to 8:40``). An unmarked start borrowing from a 24-hour end borrows ``pm`` for
  hours 12-23, else ``am``. A start and end both marked that run backwards (``11 PM to 1 AM``)
  give no candidate; only two unmarked sides cross to the next day.
* Zone tokens are tried in this order: an accepted zone name (``UTC`` and ``GMT`` included,
  taken as typed); a numeric offset (``Z``, ``±HH:MM``, ``±HHMM``, ``±H``/``±HH``, with an
  optional ``UTC``/``GMT`` prefix, spaces or a Unicode minus sign); ``<Place> time``; an entry of
  ``TimePolicy.abbreviations`` (matched exactly); anything else needs a zone.
* The fixed offset an abbreviation stands for is the offset its mapped zone uses under that
  abbreviation in the year of the date read (``PST`` mapped to ``America/Los_Angeles`` →
  ``-08:00``; ``PST`` mapped to ``Asia/Manila`` → ``+08:00``). A mapped zone that never uses
  the abbreviation that year (``PT``) gives only the zone's reading.
* With a numeric offset said, the candidate's ``zone`` is the clock's zone even when that is
  unknown (``UTC``): the mention carries its own offset, so it is resolved.
* A parse holding only a zone, a part of the day, an anchor, a span ending now together with
  anything else (or as one side of a range), or a day word together with a date, is
  ``unsupported``.
* Two sides of a range whose zones differ: the candidate's ``zone`` is the start's.
* ``zone_answer`` (the person's answer to a zone question, docs/time.md#question-shapes) stands in
  for every zone
  token that could not be resolved and, when the clock's zone is unknown, for a mention
  without a zone; the candidate then does not list ``zone`` as implied.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal, cast

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.periods.clock import TimeClock
from afp_runtime.periods.durations import UNIT_MS
from afp_runtime.periods.instants import NS_PER_S, Instant
from afp_runtime.periods.parts import (
    DateParts,
    FixedDate,
    Meridiem,
    NumericDate,
    RangeSide,
    Relative,
    TimeParts,
    Wall,
)
from afp_runtime.periods.ranges import TimeRange, lookback_range
from afp_runtime.periods.zones import (
    WallOverlap,
    WallUnique,
    date_start,
    is_zone_name,
    load_zone,
    read_wall,
    to_local,
    to_zone,
    zone_names,
)

if TYPE_CHECKING:
    from afp_runtime.periods.policy import TimePolicy

Grain = Literal["second", "minute", "hour", "day", "week"]
"""A candidate's unit of precision."""

Implied = Literal["date", "year", "month", "zone"]
"""What a candidate had to assume because the words did not say it."""

IMPLIED: Final[tuple[str, ...]] = ("date", "year", "month", "zone")
"""The ``implied`` values, in the order a candidate lists them."""

DateOrderTag = Literal["MDY", "DMY", "YMD", "MD", "DM"]
"""The order in which the fields of a numeric date were read."""

YearTag = Literal["current", "previous"]
"""The year given to a date typed without one: the clock's, or the one before."""

AbbreviationTag = Literal["zone", "offset"]
"""An abbreviation read as its mapped zone, or as the fixed offset it stands for."""

Which = Literal["earlier", "later"]
"""Which reading of a repeated or skipped local time
(docs/time.md#local-times-around-clock-changes)."""

_GRAIN_NS: Final[dict[str, int]] = {
    "second": NS_PER_S,
    "minute": 60 * NS_PER_S,
    "hour": 3600 * NS_PER_S,
}
_GRAIN_ORDER: Final[tuple[str, ...]] = ("second", "minute", "hour", "day", "week")
_LOOKBACK_LETTER: Final[dict[str, str]] = {"minute": "m", "hour": "h", "day": "d", "week": "w"}
_NAIVE_EPOCH: Final = datetime(1970, 1, 1)


class _Value(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """Base of the resolver's values: frozen, camelCase, absent keys omitted."""


# --- the window kind --------------------------------------------------------------------------


class RangeWindow(_Value, frozen=True, kw_only=True, tag_field="kind", tag="range"):
    """A candidate that is a plain range: wire ``{kind: "range"}``."""


class LookbackWindow(_Value, frozen=True, kw_only=True, tag_field="kind", tag="lookback"):
    """A candidate that is a span ending now: wire ``{kind: "lookback", duration}``.

    Attributes:
        duration: the span as typed, ``<count><m|h|d|w>`` (``40m``, ``24h``).
    """

    duration: str


CandidateWindow = RangeWindow | LookbackWindow
"""A candidate's ``window``."""


# --- notes ------------------------------------------------------------------------------------


class EndOfGrain(_Value, frozen=True, kw_only=True, tag_field="kind", tag="end-of-grain"):
    """The end covers the whole unit of what was typed: wire ``{kind: "end-of-grain"}``."""


class CenturyImplied(_Value, frozen=True, kw_only=True, tag_field="kind", tag="century-implied"):
    """A two-digit year got the clock's century: wire ``{kind: "century-implied"}``."""


class OffsetSaid(_Value, frozen=True, kw_only=True, tag_field="kind", tag="offset-said"):
    """The instants use a numeric offset the person typed: wire ``{kind: "offset-said"}``."""


class ZoneReadNote(_Value, frozen=True, kw_only=True, tag_field="kind", tag="zone-read"):
    """The zone was read from the words: wire ``{kind: "zone-read", as: "place"}``.

    Attributes:
        as_: wire ``as``; ``place`` (``London time`` → ``Europe/London``).
    """

    as_: Literal["place"] = msgspec.field(name="as")


class DstOverlap(_Value, frozen=True, kw_only=True, tag_field="kind", tag="dst-overlap"):
    """A local time that happens twice, read one way: wire ``{kind: "dst-overlap", which,
    end?}``.

    Attributes:
        which: ``earlier`` (the first occurrence) or ``later``.
        end: ``true`` when the time is the range's end (absent for the start or a point).
    """

    which: Which
    end: bool = False


class DstGap(_Value, frozen=True, kw_only=True, tag_field="kind", tag="dst-gap"):
    """A local time that never happens, read one way: wire ``{kind: "dst-gap", which, end?}``.

    Attributes:
        which: ``earlier`` (read with the offset in force after the change) or ``later``
            (with the one before it: the time pushed forward), as ``read_wall`` names them.
        end: ``true`` when the time is the range's end.
    """

    which: Which
    end: bool = False


CandidateNote = EndOfGrain | CenturyImplied | OffsetSaid | ZoneReadNote | DstOverlap | DstGap
"""One of a candidate's ``notes``."""


class ReadingTags(_Value, frozen=True, kw_only=True):
    """The readings the resolver chose for a candidate: wire ``{dateOrder?, meridiem?,
    endMeridiem?, year?, abbreviation?}``.

    Attributes:
        date_order: wire ``dateOrder``; how a numeric date's fields were read.
        meridiem: AM or PM given to a time of day typed without it (a range's start).
        end_meridiem: wire ``endMeridiem``; AM or PM given to a range's unmarked end.
        year: ``current`` or ``previous`` for a date typed without a year.
        abbreviation: ``zone`` or ``offset`` for a mapped abbreviation.
    """

    date_order: DateOrderTag | None = None
    meridiem: Meridiem | None = None
    end_meridiem: Meridiem | None = None
    year: YearTag | None = None
    abbreviation: AbbreviationTag | None = None


class TimeCandidate(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """One window the words may mean (docs/time.md#the-resolver); every key is written (module
    docstring).

    Attributes:
        window: ``{kind: "range"}`` or ``{kind: "lookback", duration}``.
        range: the half-open range, written in the offset the person intended.
        zone: the mention's zone name.
        grain: the unit of precision.
        said: always empty when filed (docs/time.md#nothing-is-settled-without-the-person).
        implied: what had to be assumed (``date``, ``year``, ``month``, ``zone``).
        anchor: ``"message"``: relative words count from the clock's ``now``.
        notes: notes on how the window was drawn.
        reading: the reading tags.
        parse: the index of the parse it came from.
    """

    window: CandidateWindow
    range: TimeRange
    zone: str
    grain: Grain
    said: tuple[str, ...]
    implied: tuple[Implied, ...]
    anchor: Literal["message"]
    notes: tuple[CandidateNote, ...]
    reading: ReadingTags
    parse: int

    @property
    def lookback(self) -> str | None:
        """The duration when the candidate is a span ending now, else None."""
        return self.window.duration if isinstance(self.window, LookbackWindow) else None


class Resolution(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the resolver made of one mention: wire ``{candidates, needsZone, unsupported}``.

    Attributes:
        candidates: every candidate, parse by parse, in the order of the module docstring.
        needs_zone: wire ``needsZone``; a parse could not be resolved for want of a zone.
        unsupported: a parse holds a part the resolver does not interpret.
    """

    candidates: tuple[TimeCandidate, ...] = ()
    needs_zone: bool = False
    unsupported: bool = False


# --- zones ------------------------------------------------------------------------------------

_OFFSET = re.compile(r"(?:(?:UTC|GMT)\s?)?([+\-−])\s?([0-9]{1,2})(?::?([0-9]{2}))?")
_PLACE = re.compile(r"(.+?)\s+[Tt]ime")


@dataclass(frozen=True)
class _Zone:
    """A side's zone: a name, and the fixed offset its instants use when one was said."""

    name: str
    said: bool
    offset: int | None = None
    note: CandidateNote | None = None
    abbreviation: str | None = None


def _offset_of(token: str) -> int | None:
    if token in ("Z", "z"):
        return 0
    found = _OFFSET.fullmatch(token.strip())
    if found is None:
        return None
    sign, hours, minutes = found.groups()
    if int(hours) > 23 or int(minutes or 0) > 59:
        return None
    seconds = int(hours) * 3600 + int(minutes or 0) * 60
    return -seconds if sign in "-−" else seconds


@functools.cache
def _places() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for name in sorted(zone_names()):
        if "/" in name and is_zone_name(name):
            key = name.rsplit("/", 1)[1].replace("_", " ").lower()
            found.setdefault(key, []).append(name)
    return {key: tuple(names) for key, names in found.items()}


def _zone_of_token(token: str, clock_zone: str, abbreviations: Mapping[str, str]) -> _Zone | None:
    """The zone a typed token names, or None when it names none (docs/time.md#the-resolver)."""
    if is_zone_name(token):
        return _Zone(name=token, said=True)
    offset = _offset_of(token)
    if offset is not None:
        return _Zone(name=clock_zone, said=True, offset=offset, note=OffsetSaid())
    place = _PLACE.fullmatch(token.strip())
    if place is not None:
        matches = _places().get(" ".join(place.group(1).split()).lower(), ())
        if len(matches) == 1:
            return _Zone(name=matches[0], said=True, note=ZoneReadNote(as_="place"))
        return None
    mapped = abbreviations.get(token)
    if mapped is not None and is_zone_name(mapped):
        return _Zone(name=mapped, said=True, abbreviation=token)
    return None


@functools.lru_cache(maxsize=1024)
def _abbreviation_offset(token: str, zone: str, year: int) -> int | None:
    """The offset ``zone`` uses under the abbreviation ``token`` in ``year``, or None."""
    tz = load_zone(zone)
    for month in range(1, 13):
        for day in (1, 15):
            moment = datetime(year, month, day, 12, tzinfo=tz)
            if moment.tzname() == token:
                delta = moment.utcoffset()
                if delta is not None:
                    seconds = delta.days * 86_400 + delta.seconds
                    return seconds if seconds % 60 == 0 else None
    return None


# --- dates ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Day:
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


def _numeric_days(parts: NumericDate, ref: date) -> list[_Day]:
    fields = parts.fields
    if len(fields) == 2:
        a, b = fields
        found: list[_Day] = []
        for order, (month, day) in (("MD", (a, b)), ("DM", (b, a))):
            for year_tag, year in (("current", ref.year), ("previous", ref.year - 1)):
                real = _real(year, month, day)
                if real is not None:
                    tags = (("dateOrder", order), ("year", year_tag))
                    found.append(_Day(real, tags, frozenset({"year"}), typed=True))
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
            days.append(_Day(real, (("dateOrder", order),), century=century, typed=True))
    return days


def _days(source: DateParts | Relative | None, ref: date) -> list[_Day]:
    """Every reading of a side's date, relative to ``ref`` (the clock's date in the zone)."""
    if source is None:
        return [_Day(ref, implied=frozenset({"date"}))]
    if isinstance(source, Relative):
        try:
            shifted = ref + timedelta(days=source.offset or 0)
        except OverflowError:
            return []
        return [_Day(shifted, implied=frozenset({"year", "month"}))]
    if isinstance(source, FixedDate):
        if source.year is not None:
            real = _real(source.year, source.month, source.day)
            return [] if real is None else [_Day(real, typed=True)]
        found = []
        for year_tag, year in (("current", ref.year), ("previous", ref.year - 1)):
            real = _real(year, source.month, source.day)
            if real is not None:
                found.append(_Day(real, (("year", year_tag),), frozenset({"year"}), typed=True))
        return found
    return _numeric_days(source, ref)


def _compatible(first: tuple[tuple[str, str], ...], second: tuple[tuple[str, str], ...]) -> bool:
    """Both sides use the same reading of every tag they both carry (docs/time.md#the-resolver)."""
    mine = dict(first)
    return all(mine.get(key, value) == value for key, value in second)


# --- times of day -----------------------------------------------------------------------------


def _grain_of(wall: Wall) -> Grain:
    if wall.m is None:
        return "hour"
    return "minute" if wall.s is None else "second"


def _is_open(wall: Wall) -> bool:
    """A 12-hour-clock hour typed without AM/PM."""
    return wall.meridiem is None and wall.clock is None and 1 <= wall.h <= 12


def _hour(wall: Wall, meridiem: Meridiem | None) -> int:
    marker = wall.meridiem or meridiem
    if marker is None:
        return wall.h
    return wall.h % 12 + (12 if marker == "pm" else 0)


def _marker_of(wall: Wall) -> Meridiem:
    """A marked or 24-hour wall's half of the day."""
    if wall.meridiem is not None:
        return wall.meridiem
    return "pm" if wall.h >= 12 else "am"


def _whole_hour(wall: Wall) -> bool:
    return (wall.m is None or wall.m == 0) and (wall.s is None or wall.s == 0)


def _naive(day: date, wall: Wall, meridiem: Meridiem | None) -> datetime:
    return datetime(day.year, day.month, day.day, _hour(wall, meridiem), wall.m or 0, wall.s or 0)


def _opposite(meridiem: Meridiem) -> Meridiem:
    return "pm" if meridiem == "am" else "am"


# --- bounds -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bound:
    """One end of a window before its zone is applied.

    ``wall`` is the local time typed (None for a date's start or end); ``extend_ns`` is added
    after the zone is applied (a time of day's grain); a bound without ``wall`` is where
    ``day`` begins.
    """

    day: date
    wall: datetime | None = None
    extend_ns: int = 0


@dataclass(frozen=True)
class _Shape:
    """A window's two bounds and what was chosen to draw them."""

    start: _Bound
    end: _Bound
    tags: tuple[tuple[str, str], ...]
    end_of_grain: bool
    point: bool


def _local_end(bound: _Bound) -> datetime:
    if bound.wall is None:
        return datetime(bound.day.year, bound.day.month, bound.day.day)
    return bound.wall + timedelta(microseconds=bound.extend_ns // 1000)


def _forward(shape: _Shape) -> bool:
    return _local_end(shape.start) < _local_end(shape.end)


@dataclass(frozen=True)
class _SideSpec:
    """A side after it inherited what it lacks: its date source, time of day and zone."""

    source: DateParts | Relative | None
    wall: Wall | None
    zone: _Zone


def _end_bound(day: date, wall: Wall | None, meridiem: Meridiem | None) -> tuple[_Bound, bool]:
    """A range end and whether it was pushed to the end of its grain."""
    if wall is None:
        return _Bound(day=day + timedelta(days=1)), True
    naive = _naive(day, wall, meridiem)
    if _whole_hour(wall):
        return _Bound(day=day, wall=naive), False
    return _Bound(day=day, wall=naive, extend_ns=_GRAIN_NS[_grain_of(wall)]), True


def _start_bound(day: date, wall: Wall | None, meridiem: Meridiem | None) -> _Bound:
    if wall is None:
        return _Bound(day=day)
    return _Bound(day=day, wall=_naive(day, wall, meridiem))


def _point_shapes(day: _Day, wall: Wall | None) -> list[_Shape]:
    if wall is None:
        end = _Bound(day=day.day + timedelta(days=1))
        return [_Shape(_Bound(day=day.day), end, day.tags, day.typed, True)]
    markers: list[Meridiem | None] = ["am", "pm"] if _is_open(wall) else [None]
    shapes = []
    for marker in markers:
        naive = _naive(day.day, wall, marker)
        tags = day.tags + ((("meridiem", marker),) if marker else ())
        start = _Bound(day=day.day, wall=naive)
        end = _Bound(day=day.day, wall=naive, extend_ns=_GRAIN_NS[_grain_of(wall)])
        shapes.append(_Shape(start, end, tags, True, True))
    return shapes


def _range_shape(
    first: _Day,
    second: _Day,
    walls: tuple[Wall | None, Wall | None],
    markers: tuple[Meridiem | None, Meridiem | None],
    next_day: bool = False,
) -> _Shape:
    start_wall, end_wall = walls
    end_day = second.day + timedelta(days=1) if next_day else second.day
    start = _start_bound(first.day, start_wall, markers[0])
    end, pushed = _end_bound(end_day, end_wall, markers[1])
    tags = first.tags + tuple(t for t in second.tags if t not in first.tags)
    if markers[0] is not None and start_wall is not None and _is_open(start_wall):
        tags += (("meridiem", markers[0]),)
    if markers[1] is not None and end_wall is not None and _is_open(end_wall):
        tags += (("endMeridiem", markers[1]),)
    return _Shape(start, end, tags, pushed and (end_wall is not None or second.typed), False)


def _range_shapes(first: _Day, second: _Day, start: Wall | None, end: Wall | None) -> list[_Shape]:
    """The AM/PM readings of a range on a pair of dates (docs/time.md#the-resolver "AM/PM in
    ranges")."""
    walls = (start, end)

    def build(a: Meridiem | None, b: Meridiem | None, next_day: bool = False) -> _Shape:
        return _range_shape(first, second, walls, (a, b), next_day)

    both: list[Meridiem] = ["am", "pm"]
    if start is None or end is None:
        start_open = start is not None and _is_open(start)
        end_open = end is not None and _is_open(end)
        start_markers: list[Meridiem | None] = list(both) if start_open else [None]
        end_markers: list[Meridiem | None] = list(both) if end_open else [None]
        shapes = [build(a, b) for a in start_markers for b in end_markers]
        return [shape for shape in shapes if _forward(shape)]
    if _is_open(start) and _is_open(end):
        shared = [build(m, m) for m in both]
        forward = [shape for shape in shared if _forward(shape)]
        return forward or [build("am", "pm"), build("pm", "am", next_day=True)]
    if _is_open(start):
        borrowed = _marker_of(end)
        for marker in (borrowed, _opposite(borrowed)):
            shape = build(marker, None)
            if _forward(shape):
                return [shape]
        return []
    if _is_open(end):
        return [shape for shape in (build(None, m) for m in both) if _forward(shape)]
    return [build(None, None)]


# --- instants ---------------------------------------------------------------------------------


_Offsets = tuple[str, int | None]
"""A zone name and the fixed offset to use instead of it, when one applies."""


@dataclass(frozen=True)
class _Reading:
    """One instant a bound may stand for, and the DST reading that gave it."""

    instant: Instant
    dst: Literal["dst-overlap", "dst-gap"] | None = None
    which: Which | None = None


def _fixed(naive: datetime, offset: int) -> Instant:
    delta = naive - _NAIVE_EPOCH
    seconds = delta.days * 86_400 + delta.seconds - offset
    return Instant(ns=seconds * NS_PER_S, offset=offset)


def _bound_readings(bound: _Bound, zone: str, offset: int | None) -> list[_Reading]:
    if bound.wall is None:
        if offset is not None:
            midnight = datetime(bound.day.year, bound.day.month, bound.day.day)
            return [_Reading(_fixed(midnight, offset))]
        return [_Reading(date_start(bound.day, zone))]
    if offset is not None:
        return [_Reading(_fixed(bound.wall, offset).plus(bound.extend_ns))]
    wall = read_wall(bound.wall, zone)
    if isinstance(wall, WallUnique):
        return [_Reading(to_zone(wall.instant.plus(bound.extend_ns), zone))]
    kind: Literal["dst-overlap", "dst-gap"] = (
        "dst-overlap" if isinstance(wall, WallOverlap) else "dst-gap"
    )
    return [
        _Reading(to_zone(wall.earlier.plus(bound.extend_ns), zone), kind, "earlier"),
        _Reading(to_zone(wall.later.plus(bound.extend_ns), zone), kind, "later"),
    ]


def _dst_note(reading: _Reading, end: bool) -> CandidateNote | None:
    if reading.dst is None or reading.which is None:
        return None
    if reading.dst == "dst-overlap":
        return DstOverlap(which=reading.which, end=end)
    return DstGap(which=reading.which, end=end)


def _pairs(shape: _Shape, start_zone: _Offsets, end_zone: _Offsets) -> list[tuple[_Reading, ...]]:
    starts = _bound_readings(shape.start, *start_zone)
    if shape.point:
        # A point's end follows its start's reading: the same typed time, one grain on.
        ends = _bound_readings(shape.end, *end_zone)
        if len(ends) == len(starts):
            return [(s, _Reading(e.instant)) for s, e in zip(starts, ends, strict=True)]
        return [(s, _Reading(e.instant)) for s in starts for e in ends]
    ends = _bound_readings(shape.end, *end_zone)
    return [(s, e) for s in starts for e in ends]


# --- the resolver -----------------------------------------------------------------------------


@dataclass
class _Context:
    now: Instant
    clock_zone: str
    zone_known: bool
    abbreviations: Mapping[str, str]
    zone_answer: str | None
    needs_zone: bool = False
    unsupported: bool = False
    candidates: list[TimeCandidate] = field(default_factory=list)


def _lookback_only(parts: TimeParts) -> bool:
    return (
        parts.date is None
        and parts.wall is None
        and parts.zone_token is None
        and parts.part_of_day is None
        and parts.anchor is None
        and parts.range_of is None
    )


def _day_source(
    holder: TimeParts | RangeSide,
) -> tuple[DateParts | Relative | None, bool]:
    """A holder's date or day word, and whether it holds both (or a span) — unsupported."""
    relative = holder.relative
    if relative is not None and relative.is_lookback:
        return None, True
    if holder.date is not None and relative is not None:
        return None, True
    return holder.date or relative, False


def _unsupported_parts(parts: TimeParts) -> bool:
    if parts.part_of_day is not None or parts.anchor is not None:
        return True
    if parts.date is None and parts.wall is None and parts.relative is None:
        return parts.range_of is None
    return False


def _zone_for(token: str | None, ctx: _Context) -> _Zone | None:
    """The zone of a side whose (inherited) token is ``token``; None when it needs a zone."""
    if token is None:
        if ctx.zone_known:
            return _Zone(name=ctx.clock_zone, said=False)
        return _Zone(name=ctx.zone_answer, said=True) if ctx.zone_answer else None
    found = _zone_of_token(token, ctx.clock_zone, ctx.abbreviations)
    if found is None and ctx.zone_answer:
        return _Zone(name=ctx.zone_answer, said=True)
    return found


def _reference_date(zone: _Zone, now: Instant) -> date:
    if zone.offset is not None:
        return (_NAIVE_EPOCH + timedelta(seconds=now.seconds + zone.offset)).date()
    return to_local(now, zone.name).date()


def _offset_options(zone: _Zone, day: date) -> dict[str, _Offsets]:
    """The zone readings of a side: ``zone`` always, ``offset`` for a mapped abbreviation."""
    options: dict[str, _Offsets] = {"zone": (zone.name, zone.offset)}
    if zone.abbreviation is not None:
        fixed = _abbreviation_offset(zone.abbreviation, zone.name, day.year)
        if fixed is not None:
            options["offset"] = (zone.name, fixed)
    return options


def _written(reading: _Reading, options: _Offsets) -> Instant:
    name, offset = options
    if offset is not None:
        return reading.instant.at_offset(offset)
    return to_zone(reading.instant, name)


def _implied(days: Sequence[_Day], zones: Sequence[_Zone]) -> tuple[Implied, ...]:
    found: set[str] = set()
    for day in days:
        found |= day.implied
    if any(not zone.said for zone in zones):
        found.add("zone")
    return tuple(cast(Implied, name) for name in IMPLIED if name in found)


def _notes(
    days: Sequence[_Day], zones: Sequence[_Zone], pair: tuple[_Reading, ...], shape: _Shape
) -> tuple[CandidateNote, ...]:
    notes: list[CandidateNote] = []
    if any(day.century for day in days):
        notes.append(CenturyImplied())
    for zone in zones:
        if zone.note is not None and zone.note not in notes:
            notes.append(zone.note)
    start_note = _dst_note(pair[0], end=False)
    end_note = None if shape.point else _dst_note(pair[1], end=True)
    notes.extend(note for note in (start_note, end_note) if note is not None)
    if shape.end_of_grain:
        notes.append(EndOfGrain())
    return tuple(notes)


def _tags(pairs: Sequence[tuple[str, str]]) -> ReadingTags:
    found = dict(pairs)
    return ReadingTags(
        date_order=found.get("dateOrder"),  # type: ignore[arg-type]
        meridiem=found.get("meridiem"),  # type: ignore[arg-type]
        end_meridiem=found.get("endMeridiem"),  # type: ignore[arg-type]
        year=found.get("year"),  # type: ignore[arg-type]
        abbreviation=found.get("abbreviation"),  # type: ignore[arg-type]
    )


def _finest(grains: Sequence[Grain]) -> Grain:
    return min(grains, key=_GRAIN_ORDER.index)


def _side_grain(wall: Wall | None) -> Grain:
    return "day" if wall is None else _grain_of(wall)


def _emit(
    ctx: _Context,
    index: int,
    sides: Sequence[_SideSpec],
    days: Sequence[_Day],
    shape: _Shape,
) -> None:
    """Append the candidates of one shape: every zone reading, every DST pairing."""
    start_zone, end_zone = sides[0].zone, sides[-1].zone
    start_options = _offset_options(start_zone, shape.start.day)
    end_options = _offset_options(end_zone, shape.end.day)
    abbreviated = start_zone.abbreviation is not None or end_zone.abbreviation is not None
    readings = ["zone"] + (
        ["offset"] if "offset" in start_options or "offset" in end_options else []
    )
    grain = _finest([_side_grain(side.wall) for side in sides])
    zone_ranges: list[TimeRange] = []
    for reading in readings:
        s_opt = start_options.get(reading, start_options["zone"])
        e_opt = end_options.get(reading, end_options["zone"])
        tags = shape.tags + ((("abbreviation", reading),) if abbreviated else ())
        for pair in _pairs(shape, s_opt, e_opt):
            first, last = pair
            if not first.instant < last.instant:
                continue
            window = TimeRange.of(_written(first, s_opt), _written(last, e_opt))
            if reading == "zone":
                zone_ranges.append(window)
            elif window in zone_ranges:
                continue  # the fixed offset draws the same window: no second reading
            ctx.candidates.append(
                TimeCandidate(
                    window=RangeWindow(),
                    range=window,
                    zone=start_zone.name,
                    grain=grain,
                    said=(),
                    implied=_implied(days, [side.zone for side in sides]),
                    anchor="message",
                    notes=_notes(days, [side.zone for side in sides], pair, shape),
                    reading=_tags(tags),
                    parse=index,
                )
            )


def _lookback(ctx: _Context, index: int, relative: Relative) -> None:
    zone = ctx.clock_zone if ctx.zone_known else ctx.zone_answer
    if zone is None:
        ctx.needs_zone = True
        return
    count = relative.count or 0
    letter = _LOOKBACK_LETTER[relative.unit]
    duration = f"{count}{letter}"
    try:
        window = lookback_range(ctx.now, count * UNIT_MS[letter])
    except InvalidValue:
        return
    ctx.candidates.append(
        TimeCandidate(
            window=LookbackWindow(duration=duration),
            range=window,
            zone=zone,
            grain=relative.unit,
            said=(),
            implied=(),
            anchor="message",
            notes=(),
            reading=ReadingTags(),
            parse=index,
        )
    )


def _sides(parts: TimeParts, ctx: _Context) -> list[_SideSpec] | None:
    """The sides of a parse with what they inherit; None when unsupported or zone-less."""
    whole_source, bad = _day_source(parts)
    if bad:
        ctx.unsupported = True
        return None
    if parts.range_of is None:
        zone = _zone_for(parts.zone_token, ctx)
        if zone is None:
            ctx.needs_zone = True
            return None
        return [_SideSpec(whole_source, parts.wall, zone)]
    raw = parts.range_of
    sources = []
    for side in raw:
        source, bad = _day_source(side)
        if bad or side.part_of_day is not None:
            ctx.unsupported = True
            return None
        sources.append(source)
    specs = []
    for position, side in enumerate(raw):
        other = raw[1 - position]
        source = next(
            (
                found
                for found in (sources[position], whole_source, sources[1 - position])
                if found is not None
            ),
            None,
        )
        token = side.zone_token or parts.zone_token or other.zone_token
        zone = _zone_for(token, ctx)
        if zone is None:
            ctx.needs_zone = True
            return None
        specs.append(_SideSpec(source, side.wall, zone))
    return specs


def _resolve_parse(ctx: _Context, index: int, parts: TimeParts) -> None:
    relative = parts.relative
    if relative is not None and relative.is_lookback:
        if _lookback_only(parts):
            _lookback(ctx, index, relative)
        else:
            ctx.unsupported = True
        return
    if _unsupported_parts(parts):
        ctx.unsupported = True
        return
    sides = _sides(parts, ctx)
    if sides is None:
        return
    day_lists = [_days(side.source, _reference_date(side.zone, ctx.now)) for side in sides]
    for shape, days in _shapes(sides, day_lists):
        try:
            _emit(ctx, index, sides, days, shape)
        except (InvalidValue, OverflowError, ValueError):
            continue  # a date at the edge of the calendar: no window to draw


def _shapes(
    sides: Sequence[_SideSpec], day_lists: Sequence[list[_Day]]
) -> Iterator[tuple[_Shape, tuple[_Day, ...]]]:
    if len(sides) == 1:
        for day in day_lists[0]:
            try:
                points = _point_shapes(day, sides[0].wall)
            except (OverflowError, ValueError):
                continue
            for shape in points:
                yield shape, (day,)
        return
    for first in day_lists[0]:
        for second in day_lists[1]:
            if not _compatible(first.tags, second.tags):
                continue
            try:
                shapes = _range_shapes(first, second, sides[0].wall, sides[1].wall)
            except (OverflowError, ValueError):
                continue
            for shape in shapes:
                yield shape, (first, second)


def resolve(
    parses: Sequence[TimeParts],
    *,
    clock: TimeClock,
    policy: TimePolicy | None = None,
    zone_answer: str | None = None,
) -> Resolution:
    """The candidates of a mention's parses (docs/time.md#the-resolver).

    Args:
        parses: the mention's parses, as validated (``validate_reading``).
        clock: the turn's clock: its ``now`` anchors relative words and its zone is the
            mention's zone unless the words name one (an unknown zone needs one).
        policy: only its ``abbreviations`` are used here (the rest is ``apply_policy``'s).
        zone_answer: a zone the person answered (docs/time.md#question-shapes), standing in for
        unresolved zone
            tokens and, under an unknown clock zone, for a mention without a zone.

    Returns:
        Every candidate of every parse in order, and whether a parse needs a zone or is
        unsupported. The same input always gives the same output.

    Raises:
        InvalidValue: ``zone_answer`` is not a zone name.
    """
    if zone_answer is not None:
        load_zone(zone_answer)
    abbreviations = (policy.abbreviations if policy is not None else None) or {}
    ctx = _Context(
        now=clock.now_instant,
        clock_zone=clock.zone,
        zone_known=clock.zone_known,
        abbreviations=abbreviations,
        zone_answer=zone_answer,
    )
    for index, parts in enumerate(parses):
        _resolve_parse(ctx, index, parts)
    return Resolution(
        candidates=tuple(ctx.candidates),
        needs_zone=ctx.needs_zone,
        unsupported=ctx.unsupported,
    )
