"""Wall-clock rules read in a zone: each local time a rule names becomes one instant, by the
time layer's rule for clock changes (docs/schedules.md#clock-changes).

A repeated local time (clocks set back) is read at its earlier reading; a skipped one (clocks
set forward) at its later reading, pushed forward by the gap — as ``date_start`` reads a
skipped midnight. So the instants of a rule are not in the order of its local times around a
gap: 02:30 skipped in America/Los_Angeles reads as 03:30 PDT, after 03:00 PDT. ``first_after``
therefore looks a little behind and a little past its first hit, by how far the zone's offset
moves near there, and takes the earliest instant strictly after the bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Final

from afp_runtime.errors import InvalidValue
from afp_runtime.time import WallOverlap, WallUnique, load_zone, read_wall

NAIVE_EPOCH: Final = datetime(1970, 1, 1)
_UTC_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
# Offsets run from -12:00 to +14:00, so a local time lies within 26 hours of its UTC reading.
_REACH_MS: Final = 26 * 3_600_000
_PROBE_MS: Final = 3_600_000
_NS_PER_MS: Final = 1_000_000
_ONE_MS: Final = timedelta(milliseconds=1)
_BUCKET_MS: Final = 6 * 3_600_000

Candidates = Callable[[datetime], Iterator[datetime]]
"""Local (naive) times of a rule at or after a local time, in order, without end."""


def wall_instant_ms(naive: datetime, zone: str) -> int:
    """The instant (epoch ms) of local time ``naive`` in ``zone``: a repeated time's earlier
    reading, a skipped time's later reading.

    Raises:
        InvalidValue: ``zone`` is not an accepted zone name.
    """
    tz = load_zone(zone)
    offset = naive.replace(tzinfo=tz, fold=0).utcoffset()
    if offset is not None and offset == naive.replace(tzinfo=tz, fold=1).utcoffset():
        # One reading (nearly every local time): no need to build read_wall's instants.
        return (naive - NAIVE_EPOCH - offset) // _ONE_MS
    reading = read_wall(naive, zone)
    if isinstance(reading, WallUnique):
        instant = reading.instant
    else:
        instant = reading.earlier if isinstance(reading, WallOverlap) else reading.later
    return instant.ns // _NS_PER_MS


def naive_of_ms(ms: int) -> datetime:
    """The UTC reading of ``ms`` as a naive local time (a bound for a rule's candidates)."""
    return NAIVE_EPOCH + timedelta(milliseconds=ms)


@functools.lru_cache(maxsize=65_536)
def _offset_s(zone: str, hour: int) -> int | None:
    try:
        offset = (_UTC_EPOCH + timedelta(hours=hour)).astimezone(load_zone(zone)).utcoffset()
    except OverflowError:
        return None  # past the calendar's ends (years 1 and 9999): nothing to probe
    return int(offset.total_seconds()) if offset is not None else 0


def offset_range_s(zone: str, ms: int) -> tuple[int, int]:
    """The least and greatest offsets (seconds) ``zone`` has within 26 hours of ``ms``, probed
    hourly (no zone keeps an offset for less than an hour)."""
    return _offset_range(zone, ms // _BUCKET_MS)


@functools.lru_cache(maxsize=16_384)
def _offset_range(zone: str, bucket: int) -> tuple[int, int]:
    # Covers 26 hours either side of every instant of the 6-hour bucket.
    first = (bucket * _BUCKET_MS - _REACH_MS) // _PROBE_MS
    last = ((bucket + 1) * _BUCKET_MS + _REACH_MS) // _PROBE_MS + 1
    probed = (_offset_s(zone, hour) for hour in range(first, last + 1))
    offsets = [offset for offset in probed if offset is not None]
    return (min(offsets), max(offsets)) if offsets else (0, 0)


def first_after(candidates: Candidates, zone: str, after_ms: int) -> int | None:
    """The earliest instant strictly after ``after_ms`` among the readings of the rule's local
    times, or None when the rule has none left within the calendar (year 9999)."""
    try:
        low, _ = offset_range_s(zone, after_ms)
        # A local time before this reads, even pushed forward over a gap, at or before after_ms.
        start = naive_of_ms(after_ms + low * 1000).replace(second=0, microsecond=0)
        best: int | None = None
        stop: datetime | None = None
        for naive in candidates(start):
            if stop is not None and naive > stop:
                break
            instant = wall_instant_ms(naive, zone)
            if instant <= after_ms or (best is not None and instant >= best):
                continue
            best = instant
            if stop is None:
                # Past this local time no reading can come before the first hit's; with one
                # offset all around, no later local time can.
                low2, high2 = offset_range_s(zone, instant)
                if low2 == high2:
                    return best
                stop = naive + timedelta(seconds=high2 - low2)
        return best
    except (OverflowError, ValueError) as exc:
        if isinstance(exc, InvalidValue):
            raise
        return None
