"""Zone names, the zone database, and local times around clock changes (docs/time.md#zones-and-dst).

Zones come from the ``tzdata`` package, always: names are checked against the package's own
``zones`` list and each zone is loaded with ``ZoneInfo.from_file`` over the package's resources
(``importlib.resources``), never from the system's files and without changing the global search
path, so every machine gives the same answers (docs/time.md#zone-names-and-the-database, developer's
choice). Loaded zones are cached for the life of the process; one ``ZoneInfo`` object per name.

Readings settled here:

* Reading package resources is the only I/O of this pure layer, and the layer test allows
  ``importlib`` (it forbids ``os``, ``pathlib`` and the like). The list of names is read once,
  at import, so ``is_zone_name`` never touches a file. Each zone's file is read on its first
  use and cached; inside an event loop that first use would read a small file on the loop, so
  ``preload_zones`` lets a host warm the cache beforehand (in a worker thread).
* Without ``tzdata`` installed (it is a dependency, so only in a broken install) the system
  database is used through ``zoneinfo.ZoneInfo`` and ``TZDATA_VERSION`` is ``"unknown"``.
* An instant written "in a zone" uses the zone's offset at that instant; an offset that is not
  a whole minute (local mean time before standard time) cannot be written strictly, and UTC is
  used instead.
"""

from __future__ import annotations

import functools
import importlib.resources
import zoneinfo
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo

import msgspec

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.time._instants import Instant

try:
    import tzdata as _tzdata
except ImportError:  # pragma: no cover - tzdata is a dependency
    _tzdata = None

TZDATA_VERSION: Final[str] = str(getattr(_tzdata, "IANA_VERSION", "unknown"))
"""The zone database version every answer here comes from (e.g. ``2026f``), or ``unknown``;
stored on each ``time-reading`` row (docs/time.md#zone-names-and-the-database)."""

ZONE_NAME_LIMIT: Final = 64
"""The longest zone name accepted, in code points."""

_UTC_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH: Final = datetime(1970, 1, 1)

Zone = ZoneInfo | str
"""A zone given as a loaded ``ZoneInfo`` or as a name (checked and loaded on use)."""


def _read_zone_names() -> frozenset[str]:
    if _tzdata is None:  # pragma: no cover - tzdata is a dependency
        return frozenset(zoneinfo.available_timezones())
    text = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(text.split())


# Read once at import (one small resource): checking a zone name then never reads a file, so
# it is safe on an event loop.
ZONE_NAMES: Final = _read_zone_names()
"""Every zone name in the database (the ``tzdata`` package's ``zones`` list)."""


def is_zone_name(name: object) -> bool:
    """Whether ``name`` is an accepted zone name (docs/time.md#zone-names-and-the-database).

    It is ``UTC`` or ``GMT``, or has at least one ``/`` (``Area/Location``); the database
    contains it; it is at most 64 code points. So ``PST``, ``+05:30``, ``utc`` and
    ``EST5EDT`` (in the database, but not of the pattern) are refused. Names are exact and
    case-sensitive.
    """
    if not isinstance(name, str) or len(name) > ZONE_NAME_LIMIT:
        return False
    if name not in ("UTC", "GMT") and "/" not in name:
        return False
    return name in ZONE_NAMES


@functools.cache
def _load(name: str) -> ZoneInfo:
    if _tzdata is None:  # pragma: no cover - tzdata is a dependency
        return ZoneInfo(name)
    resource = importlib.resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with resource.open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


def load_zone(zone: Zone) -> ZoneInfo:
    """The database zone of an accepted name (a ``ZoneInfo`` is returned as is).

    Raises:
        InvalidValue: ``zone`` is not an accepted zone name
        (docs/time.md#zone-names-and-the-database).
    """
    if isinstance(zone, ZoneInfo):
        return zone
    if not is_zone_name(zone):
        raise InvalidValue(f"{shown(zone)} is not a zone name (Area/Location, UTC or GMT)")
    return _load(zone)


def preload_zones(names: Iterable[str]) -> None:
    """Load and cache zones now; a host calls this in a worker thread so that no zone file is
    read on the event loop later.

    Raises:
        InvalidValue: a name is not an accepted zone name.
    """
    for name in names:
        load_zone(name)


def naive_seconds(naive: datetime) -> int:
    """Whole seconds from the naive epoch to a local date and time (its microseconds dropped)."""
    return (naive.replace(microsecond=0, tzinfo=None, fold=0) - NAIVE_EPOCH) // timedelta(seconds=1)


def to_zone(instant: Instant, zone: Zone) -> Instant:
    """The same instant written at the offset ``zone`` has at that instant.

    Raises:
        InvalidValue: the instant's date in ``zone`` falls outside the years 0001-9999.
    """
    local = _aware(instant, zone)
    # from_datetime writes an offset that is not a whole minute (local mean time) as UTC.
    return instant.at_offset(Instant.from_datetime(local).offset)


def to_local(instant: Instant, zone: Zone) -> datetime:
    """The naive local date and time of ``instant`` in ``zone`` (to the microsecond).

    Raises:
        InvalidValue: the instant's date in ``zone`` falls outside the years 0001-9999.
    """
    local = _aware(instant, zone)
    return local.replace(tzinfo=None, microsecond=instant.subsecond_ns // 1000)


def _aware(instant: Instant, zone: Zone) -> datetime:
    tz = load_zone(zone)
    try:
        return (_UTC_EPOCH + timedelta(seconds=instant.seconds)).astimezone(tz)
    except OverflowError:
        name = zone if isinstance(zone, str) else str(zone)
        raise InvalidValue(
            f"{instant.text} falls outside the years 0001-9999 in {name}",
            value=instant.text,
        ) from None


def local_date(instant: Instant, zone: Zone) -> date:
    """The date ``instant`` falls on in ``zone``."""
    return to_local(instant, zone).date()


class WallUnique(msgspec.Struct, frozen=True, kw_only=True, tag="unique", tag_field="kind"):
    """A local time that occurs exactly once.

    Attributes:
        instant: that instant, written at the zone's offset.
    """

    instant: Instant


class WallOverlap(msgspec.Struct, frozen=True, kw_only=True, tag="overlap", tag_field="kind"):
    """A local time that occurs twice (the clocks went back).

    Attributes:
        earlier: the first occurrence (the offset in force before the change).
        later: the second occurrence (the offset in force after it).
    """

    earlier: Instant
    later: Instant


class WallGap(msgspec.Struct, frozen=True, kw_only=True, tag="gap", tag_field="kind"):
    """A local time that never occurs (the clocks went forward over it).

    Attributes:
        earlier: the time read with the offset in force *after* the change.
        later: the time read with the offset in force *before* it (the time "pushed forward").

    Both are written at the zone's real offset at those instants.
    """

    earlier: Instant
    later: Instant


WallReading = WallUnique | WallOverlap | WallGap
"""What a local time means in a zone (docs/time.md#local-times-around-clock-changes)."""


def read_wall(naive: datetime, zone: Zone) -> WallReading:
    """Interpret a local (naive) date and time in ``zone``
    (docs/time.md#local-times-around-clock-changes).

    With Python's ``fold``: ``a`` is the time with ``fold=0``, ``b`` with ``fold=1``. The same
    UTC offset for both → unique; offsets that differ and ``a`` converts back to the same local
    time → overlap ``{earlier: a, later: b}``; otherwise a gap ``{earlier: b, later: a}``.
    Microseconds are carried alongside the whole-second arithmetic.

    Raises:
        InvalidValue: ``zone`` is not an accepted zone name.
    """
    tz = load_zone(zone)
    whole = naive.replace(microsecond=0, tzinfo=None, fold=0)
    sub_ns = naive.microsecond * 1000
    first = whole.replace(tzinfo=tz, fold=0)
    second = whole.replace(tzinfo=tz, fold=1)

    def at(moment: datetime) -> Instant:
        return to_zone(Instant.from_datetime(moment).plus(sub_ns), tz)

    a, b = at(first), at(second)
    if first.utcoffset() == second.utcoffset():
        return WallUnique(instant=a)
    back = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None, fold=0)
    if back == whole:
        return WallOverlap(earlier=a, later=b)
    return WallGap(earlier=b, later=a)


def date_start(day: date, zone: Zone) -> Instant:
    """The first instant of ``day`` in ``zone``: midnight; a repeated midnight's earlier reading,
    a skipped one's later reading, pushed forward (``America/Santiago`` 2026-09-06 begins at
    ``01:00:00-03:00``)."""
    reading = read_wall(datetime(day.year, day.month, day.day), zone)
    if isinstance(reading, WallUnique):
        return reading.instant
    return reading.earlier if isinstance(reading, WallOverlap) else reading.later
