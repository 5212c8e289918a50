"""The resolver: a mention's parts, the turn's clock and the policy in; candidates out (docs/time.md
docs/time.md#the-resolver).

``resolve(parses, clock=..., policy=...)`` turns the ``TimeParts`` a reader found into
``TimeCandidate`` windows. Every candidate is a *proposal*: the resolver never picks between
readings (date order, year, AM/PM, a repeated or skipped hour, an abbreviation); it offers
each of them, tagged, and leaves the choice to the policy (``policy.py``) and the person.
The candidates' wire shapes are in ``candidates.py``; the readings of dates
(``_day_readings.py``), local shapes (``_shapes.py``), their instants (``_bound_instants.py``)
and zone tokens (``_zone_tokens.py``) are drawn by their own modules.

Readings settled here, beyond what docs/time.md#the-resolver states:

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Final, cast, get_args

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.time._bound_instants import (
    BoundReading,
    Offsets,
    dst_note,
    reading_pairs,
    written,
)
from afp_runtime.time._candidates import (
    IMPLIED,
    CandidateNote,
    CenturyImplied,
    EndOfGrain,
    Grain,
    Implied,
    LookbackWindow,
    RangeWindow,
    ReadingTags,
    Resolution,
    TimeCandidate,
)
from afp_runtime.time._clock import TimeClock
from afp_runtime.time._day_readings import Day, day_readings
from afp_runtime.time._durations import UNIT_MS
from afp_runtime.time._instants import Instant
from afp_runtime.time._parts import DateParts, RangeSide, Relative, TimeParts, Wall
from afp_runtime.time._ranges import TimeRange, lookback_range
from afp_runtime.time._shapes import Shape, grain_of, shapes_of
from afp_runtime.time._zone_tokens import (
    SideZone,
    abbreviation_offset,
    zone_of_token,
)
from afp_runtime.time._zones import NAIVE_EPOCH, load_zone, to_local

if TYPE_CHECKING:
    from afp_runtime.time._policy import TimePolicy

_GRAIN_ORDER: Final[tuple[str, ...]] = get_args(Grain)
_LOOKBACK_LETTER: Final[dict[str, str]] = {"minute": "m", "hour": "h", "day": "d", "week": "w"}


@dataclass(frozen=True)
class _SideSpec:
    """A side after it inherited what it lacks: its date source, time of day and zone."""

    source: DateParts | Relative | None
    wall: Wall | None
    zone: SideZone


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
    others = (name for name in parts.__struct_fields__ if name != "relative")
    return all(getattr(parts, name) is None for name in others)


def _day_source(
    holder: TimeParts | RangeSide,
) -> tuple[DateParts | Relative | None, bool]:
    """A holder's date or day word, and whether it holds both (or a span) — unsupported."""
    relative = holder.relative
    if relative is not None and (relative.is_lookback or holder.date is not None):
        return None, True
    return holder.date or relative, False


def _unsupported_parts(parts: TimeParts) -> bool:
    if parts.part_of_day is not None or parts.anchor is not None:
        return True
    if parts.date is None and parts.wall is None and parts.relative is None:
        return parts.range_of is None
    return False


def _zone_for(token: str | None, ctx: _Context) -> SideZone | None:
    """The zone of a side whose (inherited) token is ``token``; None when it needs a zone."""
    if token is None:
        if ctx.zone_known:
            return SideZone(name=ctx.clock_zone, said=False)
        return SideZone(name=ctx.zone_answer, said=True) if ctx.zone_answer else None
    found = zone_of_token(token, ctx.clock_zone, ctx.abbreviations)
    if found is None and ctx.zone_answer:
        return SideZone(name=ctx.zone_answer, said=True)
    return found


def _reference_date(zone: SideZone, now: Instant) -> date:
    if zone.offset is not None:
        return (NAIVE_EPOCH + timedelta(seconds=now.seconds + zone.offset)).date()
    return to_local(now, zone.name).date()


def _offset_options(zone: SideZone, day: date) -> dict[str, Offsets]:
    """The zone readings of a side: ``zone`` always, ``offset`` for a mapped abbreviation."""
    options: dict[str, Offsets] = {"zone": (zone.name, zone.offset)}
    if zone.abbreviation is not None:
        fixed = abbreviation_offset(zone.abbreviation, zone.name, day.year)
        if fixed is not None:
            options["offset"] = (zone.name, fixed)
    return options


def _implied(days: Sequence[Day], zones: Sequence[SideZone]) -> tuple[Implied, ...]:
    found: set[str] = set()
    for day in days:
        found |= day.implied
    if any(not zone.said for zone in zones):
        found.add("zone")
    return tuple(cast(Implied, name) for name in IMPLIED if name in found)


def _notes(
    days: Sequence[Day], zones: Sequence[SideZone], pair: tuple[BoundReading, ...], shape: Shape
) -> tuple[CandidateNote, ...]:
    notes: list[CandidateNote] = []
    if any(day.century for day in days):
        notes.append(CenturyImplied())
    for zone in zones:
        if zone.note is not None and zone.note not in notes:
            notes.append(zone.note)
    start_note = dst_note(pair[0], end=False)
    end_note = None if shape.point else dst_note(pair[1], end=True)
    notes.extend(note for note in (start_note, end_note) if note is not None)
    if shape.end_of_grain:
        notes.append(EndOfGrain())
    return tuple(notes)


def _tags(pairs: Sequence[tuple[str, str]]) -> ReadingTags:
    # The tags are named as ReadingTags' wire keys (``dateOrder``, ``endMeridiem`` …).
    return msgspec.convert(dict(pairs), ReadingTags)


def _emit(
    ctx: _Context,
    index: int,
    sides: Sequence[_SideSpec],
    days: Sequence[Day],
    shape: Shape,
) -> None:
    """Append the candidates of one shape: every zone reading, every DST pairing."""
    start_zone, end_zone = sides[0].zone, sides[-1].zone
    start_options = _offset_options(start_zone, shape.start.day)
    end_options = _offset_options(end_zone, shape.end.day)
    abbreviated = start_zone.abbreviation is not None or end_zone.abbreviation is not None
    readings = ["zone"] + (
        ["offset"] if "offset" in start_options or "offset" in end_options else []
    )
    grains: list[Grain] = ["day" if side.wall is None else grain_of(side.wall) for side in sides]
    grain = min(grains, key=_GRAIN_ORDER.index)
    zone_ranges: list[TimeRange] = []
    for reading in readings:
        s_opt = start_options.get(reading, start_options["zone"])
        e_opt = end_options.get(reading, end_options["zone"])
        tags = shape.tags + ((("abbreviation", reading),) if abbreviated else ())
        for pair in reading_pairs(shape, s_opt, e_opt):
            first, last = pair
            if not first.instant < last.instant:
                continue
            window = TimeRange.of(written(first, s_opt), written(last, e_opt))
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
        source = sources[position] or whole_source or sources[1 - position]
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
    day_lists = [day_readings(side.source, _reference_date(side.zone, ctx.now)) for side in sides]
    for shape, days in shapes_of([side.wall for side in sides], day_lists):
        try:
            _emit(ctx, index, sides, days, shape)
        except (InvalidValue, OverflowError, ValueError):
            continue  # a date at the edge of the calendar: no window to draw


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
