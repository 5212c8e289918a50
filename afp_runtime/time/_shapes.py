"""The local shapes a side or a range may draw before any zone applies: times of day, their
AM/PM readings, and the bounds of a point or a range (docs/time.md#the-resolver "AM/PM in
ranges", docs/time.md#local-times-around-clock-changes)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final

from afp_runtime.time._candidates import Grain
from afp_runtime.time._day_readings import Day, compatible
from afp_runtime.time._instants import NS_PER_S
from afp_runtime.time._parts import Meridiem, Wall

_GRAIN_NS: Final[dict[str, int]] = {
    "second": NS_PER_S,
    "minute": 60 * NS_PER_S,
    "hour": 3600 * NS_PER_S,
}


def grain_of(wall: Wall) -> Grain:
    """The finest unit a time of day was typed with."""
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


def _markers(wall: Wall | None) -> list[Meridiem | None]:
    """The AM/PM readings a time of day is given: both for an open hour, else its own."""
    return ["am", "pm"] if wall is not None and _is_open(wall) else [None]


def _opposite(meridiem: Meridiem) -> Meridiem:
    return "pm" if meridiem == "am" else "am"


# --- bounds -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """One end of a window before its zone is applied.

    ``wall`` is the local time typed (None for a date's start or end); ``extend_ns`` is added
    after the zone is applied (a time of day's grain); a bound without ``wall`` is where
    ``day`` begins.
    """

    day: date
    wall: datetime | None = None
    extend_ns: int = 0


@dataclass(frozen=True)
class Shape:
    """A window's two bounds and what was chosen to draw them."""

    start: Bound
    end: Bound
    tags: tuple[tuple[str, str], ...]
    end_of_grain: bool
    point: bool


def _local_end(bound: Bound) -> datetime:
    if bound.wall is None:
        return datetime(bound.day.year, bound.day.month, bound.day.day)
    return bound.wall + timedelta(microseconds=bound.extend_ns // 1000)


def _forward(shape: Shape) -> bool:
    return _local_end(shape.start) < _local_end(shape.end)


def _end_bound(day: date, wall: Wall | None, meridiem: Meridiem | None) -> tuple[Bound, bool]:
    """A range end and whether it was pushed to the end of its grain."""
    if wall is None:
        return Bound(day=day + timedelta(days=1)), True
    naive = _naive(day, wall, meridiem)
    if _whole_hour(wall):
        return Bound(day=day, wall=naive), False
    return Bound(day=day, wall=naive, extend_ns=_GRAIN_NS[grain_of(wall)]), True


def _start_bound(day: date, wall: Wall | None, meridiem: Meridiem | None) -> Bound:
    return Bound(day=day, wall=None if wall is None else _naive(day, wall, meridiem))


def _point_shapes(day: Day, wall: Wall | None) -> list[Shape]:
    if wall is None:
        end = Bound(day=day.day + timedelta(days=1))
        return [Shape(Bound(day=day.day), end, day.tags, day.typed, True)]
    shapes = []
    for marker in _markers(wall):
        naive = _naive(day.day, wall, marker)
        tags = day.tags + ((("meridiem", marker),) if marker else ())
        start = Bound(day=day.day, wall=naive)
        end = Bound(day=day.day, wall=naive, extend_ns=_GRAIN_NS[grain_of(wall)])
        shapes.append(Shape(start, end, tags, True, True))
    return shapes


def _range_shape(
    first: Day,
    second: Day,
    walls: tuple[Wall | None, Wall | None],
    markers: tuple[Meridiem | None, Meridiem | None],
    next_day: bool = False,
) -> Shape:
    start_wall, end_wall = walls
    end_day = second.day + timedelta(days=1) if next_day else second.day
    start = _start_bound(first.day, start_wall, markers[0])
    end, pushed = _end_bound(end_day, end_wall, markers[1])
    tags = first.tags + tuple(t for t in second.tags if t not in first.tags)
    if markers[0] is not None and start_wall is not None and _is_open(start_wall):
        tags += (("meridiem", markers[0]),)
    if markers[1] is not None and end_wall is not None and _is_open(end_wall):
        tags += (("endMeridiem", markers[1]),)
    return Shape(start, end, tags, pushed and (end_wall is not None or second.typed), False)


def _range_shapes(first: Day, second: Day, start: Wall | None, end: Wall | None) -> list[Shape]:
    """The AM/PM readings of a range on a pair of dates (docs/time.md#the-resolver "AM/PM in
    ranges")."""
    walls = (start, end)

    def build(a: Meridiem | None, b: Meridiem | None, next_day: bool = False) -> Shape:
        return _range_shape(first, second, walls, (a, b), next_day)

    both: list[Meridiem] = ["am", "pm"]
    if start is None or end is None:
        shapes = [build(a, b) for a in _markers(start) for b in _markers(end)]
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


def shapes_of(
    walls: Sequence[Wall | None], day_lists: Sequence[list[Day]]
) -> Iterator[tuple[Shape, tuple[Day, ...]]]:
    """Every shape of a point (one wall) or a range (two), with the day readings it uses."""
    if len(walls) == 1:
        for day in day_lists[0]:
            try:
                points = _point_shapes(day, walls[0])
            except (OverflowError, ValueError):
                continue
            for shape in points:
                yield shape, (day,)
        return
    for first in day_lists[0]:
        for second in day_lists[1]:
            if not compatible(first.tags, second.tags):
                continue
            try:
                shapes = _range_shapes(first, second, walls[0], walls[1])
            except (OverflowError, ValueError):
                continue
            for shape in shapes:
                yield shape, (first, second)
