"""Shared values of docs/time.md#how-this-is-tested: the default clock, the named ranges and the
form shorthands ``EPOCH``, ``LOOKBACK``, ``DAY`` and ``WALL``."""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.time._convert import AskedWindow, PeriodContext
from afp_runtime.time._durations import parse_duration
from afp_runtime.time._forms import Bound, BoundsForm, DayForm, LookbackForm, ZoneArgument
from afp_runtime.time._instants import Instant, parse_instant
from afp_runtime.time._ranges import TimeRange, lookback_range

LA = "America/Los_Angeles"
NOW = parse_instant("2026-10-09T15:40:00Z")

MS_1540 = 1791560400000
MS_1500 = 1791558000000
MS_1541 = 1791560460000
MS_1340 = 1791553200000
MS_1440 = 1791556800000
MS_0700_OCT8 = 1791442800000
MS_0700_OCT9 = 1791529200000


def rng(start: str, end: str) -> TimeRange:
    """A range from two strict instants."""
    return TimeRange(start=start, end=end)


MORNING = rng("2026-10-09T08:00:00-07:00", "2026-10-09T08:41:00-07:00")
YMORN = rng("2026-10-08T08:00:00-07:00", "2026-10-08T08:41:00-07:00")
YDAY = rng("2026-10-08T00:00:00-07:00", "2026-10-09T00:00:00-07:00")
TODAY = rng("2026-10-09T00:00:00-07:00", "2026-10-10T00:00:00-07:00")
TOMORROW = rng("2026-10-10T08:00:00-07:00", "2026-10-10T08:41:00-07:00")

EPOCH = BoundsForm(
    start=Bound(argument="start_time", as_="epoch-ms"),
    end=Bound(argument="end_time", as_="epoch-ms", edge="exclusive"),
)
LOOKBACK = LookbackForm(argument="w", signed=False)
LOOKBACK_WINDOW = LookbackForm(argument="window", signed=False)
SIGNED = LookbackForm(argument="w", signed=True)
DAY = DayForm(argument="date", zone=ZoneArgument(argument="tz"))
WALL = BoundsForm(
    start=Bound(argument="start", as_="wall"),
    end=Bound(argument="end", as_="wall", edge="exclusive"),
    zone=ZoneArgument(argument="tz"),
)


def ctx(
    now: Instant = NOW, zone: str | None = LA, *, agent_zone: str | None = LA, step_ms: int = 60_000
) -> PeriodContext:
    """The default context of docs/time.md#how-this-is-tested (LA, step 60 s)."""
    return PeriodContext(now=now, zone=zone, agent_zone=agent_zone, granularity_ms=step_ms)


def window(time_range: TimeRange, lookback: str | None = None) -> AskedWindow:
    """A window to write."""
    return AskedWindow(range=time_range, lookback=lookback)


def wire_of(value: object) -> Any:
    """A row or question as its committed JSON value (camelCase keys, absent keys omitted, arrays
    as lists)."""
    return msgspec.json.decode(msgspec.json.encode(value))


def span_ending_now(length: str, now: Instant = NOW) -> AskedWindow:
    """A span of ``length`` ending now, as a confirmed look-back candidate holds it."""
    return AskedWindow(range=lookback_range(now, parse_duration(length)), lookback=length)
