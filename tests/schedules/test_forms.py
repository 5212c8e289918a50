"""The three schedule forms and their due instants, clock changes included
(docs/schedules.md#the-three-forms, docs/schedules.md#clock-changes)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.schedules import Schedule, next_due, schedule

_NY = ZoneInfo("America/New_York")


def ms(text: str) -> int:
    """Epoch ms of an ISO instant with an offset."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def utc(value: int) -> str:
    return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dues(s: Schedule, start: str, count: int, *, anchor: int = 0) -> list[str]:
    found: list[str] = []
    after = ms(start)
    for _ in range(count):
        due = next_due(s, after_ms=after, anchor_ms=anchor)
        assert due is not None
        found.append(utc(due))
        after = due
    return found


class TestOnce:
    def test_wall_time_is_read_in_the_zone(self) -> None:
        s = schedule("dentist", "Dentist at 10", at="2026-12-08T09:00", zone="Europe/Berlin")
        assert next_due(s, after_ms=0, anchor_ms=0) == ms("2026-12-08T08:00:00+00:00")

    def test_an_instant_with_an_offset_ignores_the_zone(self) -> None:
        s = schedule("r", "x", at="2026-12-08T09:00:30+01:00", zone="America/New_York")
        assert next_due(s, after_ms=0, anchor_ms=0) == ms("2026-12-08T08:00:30+00:00")

    def test_past_its_instant_there_is_none(self) -> None:
        s = schedule("r", "x", at="2026-12-08T09:00Z")
        due = ms("2026-12-08T09:00:00+00:00")
        assert next_due(s, after_ms=due - 1, anchor_ms=0) == due
        assert next_due(s, after_ms=due, anchor_ms=0) is None


class TestCron:
    def test_weekday_mornings_in_berlin_stay_at_nine_local_across_the_change(self) -> None:
        s = schedule("m", "Morning", cron="0 9 * * 1-5", zone="Europe/Berlin")
        # Berlin leaves summer time on 2026-10-25 (Sunday).
        assert dues(s, "2026-10-22T12:00:00+00:00", 4) == [
            "2026-10-23T07:00:00Z",
            "2026-10-26T08:00:00Z",
            "2026-10-27T08:00:00Z",
            "2026-10-28T08:00:00Z",
        ]

    def test_half_hours_over_the_spring_gap_are_not_repeated(self) -> None:
        s = schedule("h", "x", cron="*/30 * * * *", zone="America/Los_Angeles")
        # 02:00 and 02:30 PST do not exist on 2026-03-08: they read as 03:00 and 03:30 PDT,
        # the same instants as the real 03:00 and 03:30, each delivered once.
        assert dues(s, "2026-03-08T09:00:00+00:00", 5) == [
            "2026-03-08T09:30:00Z",
            "2026-03-08T10:00:00Z",
            "2026-03-08T10:30:00Z",
            "2026-03-08T11:00:00Z",
            "2026-03-08T11:30:00Z",
        ]

    def test_skipped_quarter_hours_read_as_the_real_ones_after_the_gap(self) -> None:
        both = schedule("h", "x", cron="15,45 2,3 8 3 *", zone="America/Los_Angeles")
        # 02:15 and 02:45 (skipped) read as 03:15 and 03:45 PDT, the same as the real ones.
        assert dues(both, "2026-03-08T09:00:00+00:00", 2) == [
            "2026-03-08T10:15:00Z",
            "2026-03-08T10:45:00Z",
        ]
        assert next_due(both, after_ms=ms("2026-03-08T10:45:00+00:00"), anchor_ms=0) == ms(
            "2027-03-08T10:15:00+00:00"
        )


class TestDaylightSaving:
    def test_a_skipped_time_fires_at_its_later_reading(self) -> None:
        s = schedule("d", "x", every="day at 02:30", zone="America/Los_Angeles")
        assert dues(s, "2026-03-07T00:00:00+00:00", 3) == [
            "2026-03-07T10:30:00Z",  # 02:30 PST
            "2026-03-08T10:30:00Z",  # 02:30 does not exist: 03:30 PDT
            "2026-03-09T09:30:00Z",  # 02:30 PDT
        ]

    def test_a_repeated_time_fires_once_at_its_earlier_reading(self) -> None:
        s = schedule("d", "x", every="day at 01:30", zone="America/Los_Angeles")
        assert dues(s, "2026-10-31T00:00:00+00:00", 3) == [
            "2026-10-31T08:30:00Z",  # 01:30 PDT
            "2026-11-01T08:30:00Z",  # 01:30 PDT, not 01:30 PST an hour later
            "2026-11-02T09:30:00Z",  # 01:30 PST
        ]

    def test_a_skipped_midnight_fires_when_the_day_begins(self) -> None:
        # America/Santiago skips 00:00-01:00 on 2026-09-06: the day begins at 01:00 -03:00.
        s = schedule("d", "x", cron="0 0 * * *", zone="America/Santiago")
        assert dues(s, "2026-09-04T12:00:00+00:00", 3) == [
            "2026-09-05T04:00:00Z",
            "2026-09-06T04:00:00Z",
            "2026-09-07T03:00:00Z",
        ]

    def test_a_pushed_forward_time_comes_after_a_real_time_it_passes(self) -> None:
        # 02:45 (skipped) reads as 03:45 PDT; 03:15 PDT is real and comes first.
        s = schedule("d", "x", every="day at 02:45 and 03:15", zone="America/Los_Angeles")
        assert dues(s, "2026-03-08T10:05:00+00:00", 3) == [
            "2026-03-08T10:15:00Z",
            "2026-03-08T10:45:00Z",
            "2026-03-09T09:45:00Z",
        ]

    def test_the_once_form_follows_the_same_rule(self) -> None:
        gap = schedule("g", "x", at="2026-03-08T02:30", zone="America/Los_Angeles")
        fold = schedule("f", "x", at="2026-11-01T01:30", zone="America/Los_Angeles")
        assert utc(next_due(gap, after_ms=0, anchor_ms=0) or 0) == "2026-03-08T10:30:00Z"
        assert utc(next_due(fold, after_ms=0, anchor_ms=0) or 0) == "2026-11-01T08:30:00Z"

    def test_an_interval_is_real_time_across_the_change(self) -> None:
        s = schedule("i", "x", every="1 hour", zone="America/Los_Angeles")
        anchor = ms("2026-03-08T08:00:00+00:00")
        assert dues(s, "2026-03-08T08:00:00+00:00", 4, anchor=anchor) == [
            "2026-03-08T09:00:00Z",
            "2026-03-08T10:00:00Z",
            "2026-03-08T11:00:00Z",
            "2026-03-08T12:00:00Z",
        ]


class TestEvery:
    @pytest.mark.parametrize(
        ("every", "expected"),
        [
            ("2 hours", ["2026-01-01T02:00:00Z", "2026-01-01T04:00:00Z"]),
            ("30 minutes", ["2026-01-01T00:30:00Z", "2026-01-01T01:00:00Z"]),
            ("every hour", ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"]),
            ("day at 18:30", ["2026-01-01T18:30:00Z", "2026-01-02T18:30:00Z"]),
            ("Day at 9:00 and 17:30", ["2026-01-01T09:00:00Z", "2026-01-01T17:30:00Z"]),
            ("weekend day at 10:00", ["2026-01-03T10:00:00Z", "2026-01-04T10:00:00Z"]),
            ("weekends at 10:00", ["2026-01-03T10:00:00Z", "2026-01-04T10:00:00Z"]),
            ("weekdays at 10:00", ["2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z"]),
            (
                "monday, wednesday and friday at 8:00",
                ["2026-01-02T08:00:00Z", "2026-01-05T08:00:00Z"],
            ),
            ("week on monday at 09:00", ["2026-01-05T09:00:00Z", "2026-01-12T09:00:00Z"]),
            ("tue and thu at 07:15", ["2026-01-01T07:15:00Z", "2026-01-06T07:15:00Z"]),
            ("sundays at 20:00", ["2026-01-04T20:00:00Z", "2026-01-11T20:00:00Z"]),
        ],
    )
    def test_accepted_forms(self, every: str, expected: list[str]) -> None:
        # 2026-01-01 is a Thursday; the anchor is its midnight.
        s = schedule("e", "x", every=every)
        start = "2026-01-01T00:00:00+00:00"
        assert dues(s, start, 2, anchor=ms(start)) == expected

    def test_every_weekday_at_nine_over_five_weeks(self) -> None:
        s = schedule("standup", "Standup", every="weekday at 09:00", zone="America/New_York")
        # Five weeks across the autumn change (2026-11-01): always 09:00 New York time.
        found = dues(s, "2026-10-19T00:00:00+00:00", 25)
        days = [datetime.fromisoformat(d).astimezone(_NY) for d in found]
        assert [d.strftime("%H:%M") for d in days] == ["09:00"] * 25
        assert {d.weekday() for d in days} == {0, 1, 2, 3, 4}
        assert days[0].date().isoformat() == "2026-10-19"
        assert days[-1].date().isoformat() == "2026-11-20"


class TestBounds:
    def test_the_calendar_ends_with_year_9999_without_an_error(self) -> None:
        end = ms("9999-12-31T00:00:00+00:00")
        last_day = schedule("d", "x", every="day at 09:00", zone="America/Los_Angeles")
        assert next_due(last_day, after_ms=end, anchor_ms=0) == ms("9999-12-31T17:00:00+00:00")
        yearly = schedule("y", "x", cron="0 0 1 1 *", zone="America/Los_Angeles")
        assert next_due(yearly, after_ms=end, anchor_ms=0) is None

    def test_bounds_that_are_not_ints_are_refused(self) -> None:
        s = schedule("h", "x", every="hour")
        with pytest.raises(InvalidValue, match="afterMs"):
            next_due(s, after_ms="1", anchor_ms=0)  # type: ignore[arg-type]
        with pytest.raises(InvalidValue, match="anchorMs"):
            next_due(s, after_ms=1, anchor_ms=True)
