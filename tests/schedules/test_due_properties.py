"""Properties of ``next_due`` over the wall-clock forms, in zones with clock changes
(docs/schedules.md#due-instants, docs/schedules.md#clock-changes): due instants strictly
increase, none is passed over, and each is the earliest reading of the rule's local times by
the time layer's rule — checked against a brute-force reading of every local time nearby."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.schedules import Schedule, next_due, schedule
from afp_runtime.schedules._every import Calendar, read_every
from afp_runtime.schedules._forms import calendar_times, cron_times
from afp_runtime.time import WallOverlap, WallUnique, read_wall

ZONES = (
    "America/Los_Angeles",
    "America/Santiago",
    "Europe/Berlin",
    "Australia/Lord_Howe",  # a 30-minute change
    "Asia/Kolkata",  # no change, a half-hour offset
    "UTC",
)
RULES = (
    {"cron": "*/30 * * * *"},
    {"cron": "15,45 0-3 * * *"},
    {"cron": "0 0 * * *"},
    {"cron": "30 1,2 * * *"},
    {"every": "day at 02:30"},
    {"every": "day at 00:00 and 01:30"},
    {"every": "weekday at 09:00"},
    {"every": "weekend day at 01:45"},
    # A skipped time and a real one just after the gap whose reading comes first.
    {"every": "day at 02:45 and 03:15"},
    {"every": "day at 02:20 and 02:40"},
)
START = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
END = int(datetime(2028, 1, 1, tzinfo=UTC).timestamp() * 1000)
# Instants near the 2026 and 2027 clock changes of these zones, where the rules bite.
CHANGES = [
    int(datetime.fromisoformat(text).timestamp() * 1000)
    for text in (
        "2026-03-08T10:00:00+00:00",  # Los Angeles forward
        "2026-11-01T09:00:00+00:00",  # Los Angeles back
        "2026-04-05T03:00:00+00:00",  # Santiago back
        "2026-09-06T04:00:00+00:00",  # Santiago forward (midnight skipped)
        "2026-03-29T01:00:00+00:00",  # Berlin forward
        "2026-10-25T01:00:00+00:00",  # Berlin back
        "2026-04-04T15:00:00+00:00",  # Lord Howe back
        "2026-10-03T15:30:00+00:00",  # Lord Howe forward
    )
]
DAY_MS = 86_400_000
HOUR_MS = 3_600_000

schedules = st.builds(
    lambda rule, zone: schedule("p", "x", zone=zone, **rule),
    st.sampled_from(RULES),
    st.sampled_from(ZONES),
)
instants = st.one_of(
    st.integers(START, END),
    st.builds(
        lambda change, shift: change + shift,
        st.sampled_from(CHANGES),
        st.one_of(st.integers(-2 * DAY_MS, 2 * DAY_MS), st.integers(-3 * HOUR_MS, 3 * HOUR_MS)),
    ),
)


def reading_ms(naive: datetime, zone: str) -> int:
    """The design's rule, spelled out on read_wall: unique as is, repeated earlier, skipped
    later."""
    reading = read_wall(naive, zone)
    if isinstance(reading, WallUnique):
        return reading.instant.ns // 1_000_000
    chosen = reading.earlier if isinstance(reading, WallOverlap) else reading.later
    return chosen.ns // 1_000_000


def brute_next(s: Schedule, after: int) -> int:
    """The earliest reading after ``after`` of every local time the rule names from two days
    before to eight days after ``after``'s UTC reading."""
    base = datetime(1970, 1, 1) + timedelta(milliseconds=after)
    start, end = base - timedelta(days=2), base + timedelta(days=8)
    if s.cron is not None:
        times = cron_times(s.cron, start)
    else:
        assert s.every is not None
        rule = read_every(s.every)
        assert isinstance(rule, Calendar)
        times = calendar_times(rule, start)
    readings = []
    for naive in times:
        if naive > end:
            break
        readings.append(reading_ms(naive, s.zone))
    return min(r for r in readings if r > after)


@settings(max_examples=300)
@given(schedules, instants)
def test_next_due_is_the_earliest_reading_after(s: Schedule, after: int) -> None:
    assert next_due(s, after_ms=after, anchor_ms=0) == brute_next(s, after)


@settings(max_examples=200)
@given(schedules, instants, st.integers(1, 4 * DAY_MS))
def test_due_instants_strictly_increase_and_none_is_passed_over(
    s: Schedule, after: int, probe: int
) -> None:
    first = next_due(s, after_ms=after, anchor_ms=0)
    assert first is not None and first > after
    second = next_due(s, after_ms=first, anchor_ms=0)
    assert second is not None and second > first
    # Any bound between two due instants gives the later one.
    between = first + probe % (second - first)
    assert next_due(s, after_ms=between, anchor_ms=0) == second
    assert next_due(s, after_ms=first - 1, anchor_ms=0) == first


@settings(max_examples=200)
@given(
    st.sampled_from(["1 minute", "30 minutes", "2 hours", "168 hours"]),
    st.integers(START, END),
    st.integers(0, 30 * DAY_MS),
)
def test_intervals_count_real_time_from_the_anchor(every: str, anchor: int, later: int) -> None:
    s = schedule("i", "x", every=every, zone="America/Los_Angeles")
    step = {"1 minute": 60_000, "30 minutes": 1_800_000, "2 hours": 7_200_000}.get(
        every, 168 * 3_600_000
    )
    after = anchor + later
    due = next_due(s, after_ms=after, anchor_ms=anchor)
    assert due is not None
    assert (due - anchor) % step == 0
    assert after < due <= after + step
    assert due >= anchor + step
