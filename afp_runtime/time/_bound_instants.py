"""The instants a local bound stands for in a zone or at a fixed offset, with the DST reading
that gave each (docs/time.md#local-times-around-clock-changes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from afp_runtime.time._candidates import CandidateNote, DstGap, DstOverlap, Which
from afp_runtime.time._instants import NS_PER_S, Instant
from afp_runtime.time._shapes import Bound, Shape
from afp_runtime.time._zones import (
    WallOverlap,
    WallUnique,
    date_start,
    naive_seconds,
    read_wall,
    to_zone,
)

Offsets = tuple[str, int | None]
"""A zone name and the fixed offset to use instead of it, when one applies."""


@dataclass(frozen=True)
class BoundReading:
    """One instant a bound may stand for, and the DST reading that gave it."""

    instant: Instant
    dst: Literal["dst-overlap", "dst-gap"] | None = None
    which: Which | None = None


def _fixed(naive: datetime, offset: int) -> Instant:
    return Instant(ns=(naive_seconds(naive) - offset) * NS_PER_S, offset=offset)


def _bound_readings(bound: Bound, zone: str, offset: int | None) -> list[BoundReading]:
    if bound.wall is None:
        if offset is not None:
            midnight = datetime(bound.day.year, bound.day.month, bound.day.day)
            return [BoundReading(_fixed(midnight, offset))]
        return [BoundReading(date_start(bound.day, zone))]
    if offset is not None:
        return [BoundReading(_fixed(bound.wall, offset).plus(bound.extend_ns))]
    wall = read_wall(bound.wall, zone)
    if isinstance(wall, WallUnique):
        return [BoundReading(to_zone(wall.instant.plus(bound.extend_ns), zone))]
    kind: Literal["dst-overlap", "dst-gap"] = (
        "dst-overlap" if isinstance(wall, WallOverlap) else "dst-gap"
    )
    return [
        BoundReading(to_zone(wall.earlier.plus(bound.extend_ns), zone), kind, "earlier"),
        BoundReading(to_zone(wall.later.plus(bound.extend_ns), zone), kind, "later"),
    ]


def dst_note(reading: BoundReading, end: bool) -> CandidateNote | None:
    """The ``dst-overlap`` / ``dst-gap`` note of a reading, or None when no DST reading gave it."""
    if reading.dst is None or reading.which is None:
        return None
    if reading.dst == "dst-overlap":
        return DstOverlap(which=reading.which, end=end)
    return DstGap(which=reading.which, end=end)


def reading_pairs(
    shape: Shape, start_zone: Offsets, end_zone: Offsets
) -> list[tuple[BoundReading, ...]]:
    """Every (start, end) pairing of a shape's readings in the zones of its two sides."""
    starts = _bound_readings(shape.start, *start_zone)
    ends = _bound_readings(shape.end, *end_zone)
    if not shape.point:
        return [(s, e) for s in starts for e in ends]
    # A point's end follows its start's reading: the same typed time, one grain on.
    if len(ends) == len(starts):
        return [(s, BoundReading(e.instant)) for s, e in zip(starts, ends, strict=True)]
    return [(s, BoundReading(e.instant)) for s in starts for e in ends]


def written(reading: BoundReading, options: Offsets) -> Instant:
    """The reading's instant written at the fixed offset, else in the zone's offset."""
    name, offset = options
    if offset is not None:
        return reading.instant.at_offset(offset)
    return to_zone(reading.instant, name)
