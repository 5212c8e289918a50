"""The resolver: parts, clock and policy in, candidates out (docs/time.md#the-resolver;
docs/time.md#how-this-is-tested cases 1, 4-11)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue
from afp_runtime.time._candidates import Resolution, TimeCandidate
from afp_runtime.time._clock import TimeClock
from afp_runtime.time._english import read_english
from afp_runtime.time._instants import Instant
from afp_runtime.time._parts import FixedDate, NumericDate, RangeSide, Relative, TimeParts, Wall
from afp_runtime.time._policy import TimePolicy
from afp_runtime.time._resolve import resolve

LA = "America/Los_Angeles"
NOW = "2026-10-09T15:40:00Z"


def clock(now: str = NOW, zone: str | None = LA) -> TimeClock:
    """A clock at ``now`` in ``zone`` (None: the zone is unknown)."""
    if zone is None:
        return TimeClock(now=now, now_source="message", zone="UTC", zone_source="unknown")
    return TimeClock(now=now, now_source="message", zone=zone, zone_source="agent")


def parses_of(text: str) -> tuple[TimeParts, ...]:
    """The parses of the single mention the English reader finds in ``text``."""
    mentions = read_english(text).mentions
    assert len(mentions) == 1, mentions
    return mentions[0].parses


def resolved(
    text: str, *, now: str = NOW, zone: str | None = LA, policy: TimePolicy | None = None
) -> Resolution:
    """The resolution of the single mention in ``text``."""
    return resolve(parses_of(text), clock=clock(now, zone), policy=policy)


def spans(resolution: Resolution) -> list[str]:
    """Each candidate's range written ``from/to``."""
    return [c.range.interval() for c in resolution.candidates]


def wire(value: Any) -> Any:
    """``value`` as decoded JSON."""
    return msgspec.json.decode(msgspec.json.encode(value))


def kinds(candidate: TimeCandidate) -> list[str]:
    """The kinds of a candidate's notes."""
    return [wire(note)["kind"] for note in candidate.notes]


class TestDayWords:
    """docs/time.md#the-resolver "day word" and case 1, case 11."""

    def test_yesterday_case_1(self) -> None:
        """Case 1: "yesterday" is YDAY in LA, grain day, implied year, month and zone."""
        found = resolved("yesterday")
        assert wire(found) == {
            "candidates": [
                {
                    "window": {"kind": "range"},
                    "range": {
                        "from": "2026-10-08T00:00:00-07:00",
                        "to": "2026-10-09T00:00:00-07:00",
                    },
                    "zone": LA,
                    "grain": "day",
                    "said": [],
                    "implied": ["year", "month", "zone"],
                    "anchor": "message",
                    "notes": [],
                    "reading": {},
                    "parse": 0,
                }
            ],
            "needsZone": False,
            "unsupported": False,
        }

    def test_today_without_midnight_case_11(self) -> None:
        """Case 11: "today" in Santiago on 2026-09-06 starts at 01:00-03:00 and lasts 23 h."""
        found = resolved("today", now="2026-09-06T12:00:00Z", zone="America/Santiago")
        assert spans(found) == ["2026-09-06T01:00:00-03:00/2026-09-07T00:00:00-03:00"]
        assert found.candidates[0].range.bounds() == (
            1788667200000 * 1_000_000,
            1788750000000 * 1_000_000,
        )

    def test_tomorrow_counts_from_the_local_date(self) -> None:
        """The date of ``now`` in the zone, not in UTC, anchors day words (07:30Z is the 8th
        in LA)."""
        found = resolved("tomorrow", now="2026-10-09T06:30:00Z")
        assert spans(found) == ["2026-10-09T00:00:00-07:00/2026-10-10T00:00:00-07:00"]


class TestSpansEndingNow:
    """docs/time.md#the-resolver "span ending now" and case 4."""

    def test_last_40_minutes_case_4(self) -> None:
        """Case 4: a 40m look-back, range 15:00Z … 15:40:00.001Z, grain minute."""
        candidate = resolved("last 40 minutes").candidates[0]
        assert wire(candidate.window) == {"kind": "lookback", "duration": "40m"}
        assert candidate.range.interval() == "2026-10-09T15:00:00Z/2026-10-09T15:40:00.001Z"
        assert candidate.grain == "minute"
        assert candidate.implied == ()
        assert candidate.lookback == "40m"

    def test_last_24h_case_4(self) -> None:
        """Case 4: "last 24h" at 16:00Z is 2026-10-08T16:00:00Z/2026-10-09T16:00:00.001Z."""
        found = resolved("last 24h", now="2026-10-09T16:00:00Z")
        assert spans(found) == ["2026-10-08T16:00:00Z/2026-10-09T16:00:00.001Z"]
        assert wire(found.candidates[0].window) == {"kind": "lookback", "duration": "24h"}

    def test_written_in_nows_offset(self) -> None:
        """A look-back is written in the offset ``now`` is written in."""
        found = resolved("the past week", now="2026-10-09T08:40:00-07:00")
        assert spans(found) == ["2026-10-02T08:40:00-07:00/2026-10-09T08:40:00.001-07:00"]
        assert found.candidates[0].grain == "week"

    def test_span_with_another_part_is_unsupported(self) -> None:
        """A span ending now together with any other part is ``unsupported``."""
        parts = TimeParts(relative=Relative(unit="hour", count=2), wall=Wall(h=8, meridiem="am"))
        assert resolve([parts], clock=clock()) == Resolution(unsupported=True)


class TestNumericDates:
    """docs/time.md#the-resolver numeric dates, case 5."""

    def test_three_fields_case_5(self) -> None:
        """Case 5: "10/09/26 8 AM to 8:40 AM" reads month, day and year first, in that
        order, each ending at 08:41 with ``century-implied``."""
        found = resolved("10/09/26 8 AM to 8:40 AM")
        assert spans(found) == [
            "2026-10-09T08:00:00-07:00/2026-10-09T08:41:00-07:00",
            "2026-09-10T08:00:00-07:00/2026-09-10T08:41:00-07:00",
            "2010-09-26T08:00:00-07:00/2010-09-26T08:41:00-07:00",
        ]
        assert [c.reading.date_order for c in found.candidates] == ["MDY", "DMY", "YMD"]
        assert all(kinds(c) == ["century-implied", "end-of-grain"] for c in found.candidates)
        assert all(c.implied == ("zone",) for c in found.candidates)

    def test_impossible_readings_are_dropped(self) -> None:
        """Only real dates are kept: in 13/09/26 the month cannot come first."""
        found = resolve(
            [TimeParts(date=NumericDate(fields=(13, 9, 26), year_digits=2))], clock=clock()
        )
        assert [c.reading.date_order for c in found.candidates] == ["DMY", "YMD"]

    def test_no_real_date_gives_no_candidate(self) -> None:
        """02/30/31 is no real date in any order: no candidate, nothing unsupported."""
        found = resolve(
            [TimeParts(date=NumericDate(fields=(2, 30, 31), year_digits=2))], clock=clock()
        )
        assert found == Resolution()

    def test_four_digit_year_last(self) -> None:
        """A four-digit year written last leaves month-day and day-month, no century note."""
        found = resolved("11/01/2026")
        assert spans(found) == [
            "2026-11-01T00:00:00-07:00/2026-11-02T00:00:00-08:00",
            "2026-01-11T00:00:00-08:00/2026-01-12T00:00:00-08:00",
        ]
        assert all(kinds(c) == ["end-of-grain"] for c in found.candidates)

    def test_four_digit_year_first(self) -> None:
        """A four-digit year written first gives year-month-day only."""
        found = resolved("2026/10/09")
        assert spans(found) == ["2026-10-09T00:00:00-07:00/2026-10-10T00:00:00-07:00"]
        assert found.candidates[0].reading.date_order == "YMD"

    def test_two_fields(self) -> None:
        """Two fields: month-day and day-month, each in the clock's year and the one before."""
        found = resolved("10/9")
        assert spans(found) == [
            "2026-10-09T00:00:00-07:00/2026-10-10T00:00:00-07:00",
            "2025-10-09T00:00:00-07:00/2025-10-10T00:00:00-07:00",
            "2026-09-10T00:00:00-07:00/2026-09-11T00:00:00-07:00",
            "2025-09-10T00:00:00-07:00/2025-09-11T00:00:00-07:00",
        ]
        assert [wire(c.reading) for c in found.candidates] == [
            {"dateOrder": "MD", "year": "current"},
            {"dateOrder": "MD", "year": "previous"},
            {"dateOrder": "DM", "year": "current"},
            {"dateOrder": "DM", "year": "previous"},
        ]
        assert all(c.implied == ("year", "zone") for c in found.candidates)


class TestDatesWithoutYear:
    """docs/time.md#the-resolver "date without a year", case 9."""

    def test_sept_29_case_9(self) -> None:
        """Case 9: "Sept 29" is offered in 2026 (current) and 2025 (previous)."""
        found = resolved("Sept 29")
        assert spans(found) == [
            "2026-09-29T00:00:00-07:00/2026-09-30T00:00:00-07:00",
            "2025-09-29T00:00:00-07:00/2025-09-30T00:00:00-07:00",
        ]
        assert [c.reading.year for c in found.candidates] == ["current", "previous"]
        assert all(kinds(c) == ["end-of-grain"] for c in found.candidates)
        assert all(c.grain == "day" for c in found.candidates)

    def test_feb_29_only_in_a_leap_year(self) -> None:
        """A date that exists in only one of the two years is offered once."""
        feb_29 = [TimeParts(date=FixedDate(month=2, day=29))]
        assert spans(resolve(feb_29, clock=clock())) == []
        found = resolve(feb_29, clock=clock("2029-06-01T00:00:00Z"))
        assert spans(found) == ["2028-02-29T00:00:00-08:00/2028-03-01T00:00:00-08:00"]
        assert found.candidates[0].reading.year == "previous"


class TestTimesOfDay:
    """docs/time.md#the-resolver "how far a point extends", "time of day" and "AM/PM in ranges",
    cases 6-7, 9."""

    def test_whole_hour_end_case_6(self) -> None:
        """Case 6: "8 AM to 9 AM" ends exactly at 09:00, with no ``end-of-grain`` note."""
        found = resolved("8 AM to 9 AM")
        assert spans(found) == ["2026-10-09T08:00:00-07:00/2026-10-09T09:00:00-07:00"]
        assert kinds(found.candidates[0]) == []
        assert found.candidates[0].grain == "hour"
        assert found.candidates[0].implied == ("date", "zone")

    def test_unmarked_end_case_6(self) -> None:
        """Case 6: "8 AM to 8:40" ends at 08:41 or 20:41 (end-of-grain), open ``meridiem``."""
        found = resolved("8 AM to 8:40")
        assert spans(found) == [
            "2026-10-09T08:00:00-07:00/2026-10-09T08:41:00-07:00",
            "2026-10-09T08:00:00-07:00/2026-10-09T20:41:00-07:00",
        ]
        assert [c.reading.end_meridiem for c in found.candidates] == ["am", "pm"]
        assert all(kinds(c) == ["end-of-grain"] for c in found.candidates)
        assert all(c.grain == "minute" for c in found.candidates)

    @pytest.mark.parametrize(
        ("text", "expected", "meridiem"),
        [
            ("8 to 9 PM", ["2026-10-09T20:00:00-07:00/2026-10-09T21:00:00-07:00"], "pm"),
            ("11 to 1 PM", ["2026-10-09T11:00:00-07:00/2026-10-09T13:00:00-07:00"], "am"),
            ("8 to 8 PM", ["2026-10-09T08:00:00-07:00/2026-10-09T20:00:00-07:00"], "am"),
        ],
    )
    def test_start_borrows_case_7(self, text: str, expected: list[str], meridiem: str) -> None:
        """Case 7: an unmarked start borrows the end's marker, or the opposite one when
        borrowing runs backwards."""
        found = resolved(text)
        assert spans(found) == expected
        assert found.candidates[0].reading.meridiem == meridiem

    def test_both_unmarked_case_7(self) -> None:
        """Case 7: "8:45 to 8:55" gives a morning and an evening pair."""
        found = resolved("8:45 to 8:55")
        assert spans(found) == [
            "2026-10-09T08:45:00-07:00/2026-10-09T08:56:00-07:00",
            "2026-10-09T20:45:00-07:00/2026-10-09T20:56:00-07:00",
        ]
        assert [(c.reading.meridiem, c.reading.end_meridiem) for c in found.candidates] == [
            ("am", "am"),
            ("pm", "pm"),
        ]

    @pytest.mark.parametrize(
        ("hours", "expected"),
        [
            (
                (11, 1),
                [
                    "2026-10-09T11:00:00-07:00/2026-10-09T13:00:00-07:00",
                    "2026-10-09T23:00:00-07:00/2026-10-10T01:00:00-07:00",
                ],
            ),
            (
                (8, 8),
                [
                    "2026-10-09T08:00:00-07:00/2026-10-09T20:00:00-07:00",
                    "2026-10-09T20:00:00-07:00/2026-10-10T08:00:00-07:00",
                ],
            ),
        ],
    )
    def test_crossing_noon_or_midnight(self, hours: tuple[int, int], expected: list[str]) -> None:
        """ "11 to 1" and "8 to 8": no shared marker runs forward, so the readings crossing
        noon and midnight are offered, the second ending on the next day."""
        parts = TimeParts(
            range_of=(RangeSide(wall=Wall(h=hours[0])), RangeSide(wall=Wall(h=hours[1])))
        )
        found = resolve([parts], clock=clock())
        assert spans(found) == expected
        assert [(c.reading.meridiem, c.reading.end_meridiem) for c in found.candidates] == [
            ("am", "pm"),
            ("pm", "am"),
        ]

    def test_marked_range_running_backwards_gives_nothing(self) -> None:
        """ "11 PM to 1 AM" on one date runs backwards: no candidate."""
        parts = TimeParts(
            range_of=(
                RangeSide(wall=Wall(h=11, meridiem="pm")),
                RangeSide(wall=Wall(h=1, meridiem="am")),
            )
        )
        assert resolve([parts], clock=clock()) == Resolution()

    def test_today_between_case_9(self) -> None:
        """Case 9: "today between 1 pm and 2 pm" at 16:00Z is 13:00-14:00 in LA."""
        found = resolved("today between 1 pm and 2 pm", now="2026-10-09T16:00:00Z")
        assert spans(found) == ["2026-10-09T13:00:00-07:00/2026-10-09T14:00:00-07:00"]
        assert found.candidates[0].implied == ("year", "month", "zone")

    def test_single_hour_is_its_whole_hour(self) -> None:
        """ "9 AM" alone is [09:00, 10:00) with ``end-of-grain``."""
        found = resolved("9 AM")
        assert spans(found) == ["2026-10-09T09:00:00-07:00/2026-10-09T10:00:00-07:00"]
        assert kinds(found.candidates[0]) == ["end-of-grain"]

    def test_unmarked_point_gives_morning_and_evening(self) -> None:
        """ "8:40" alone gives a morning and an evening candidate; a 24-hour time gives one."""
        assert spans(resolved("8:40")) == [
            "2026-10-09T08:40:00-07:00/2026-10-09T08:41:00-07:00",
            "2026-10-09T20:40:00-07:00/2026-10-09T20:41:00-07:00",
        ]
        assert spans(resolved("20:40")) == ["2026-10-09T20:40:00-07:00/2026-10-09T20:41:00-07:00"]

    def test_seconds_grain(self) -> None:
        """ "8:40:15 AM" covers one second."""
        found = resolve([TimeParts(wall=Wall(h=8, m=40, s=15, meridiem="am"))], clock=clock())
        assert spans(found) == ["2026-10-09T08:40:15-07:00/2026-10-09T08:40:16-07:00"]
        assert found.candidates[0].grain == "second"

    def test_iso_range_with_whole_hour_end(self) -> None:
        """ "2026-09-26 08:00..08:40" ends at 08:41; the date applies to both sides."""
        found = resolved("2026-09-26 08:00..08:40")
        assert spans(found) == ["2026-09-26T08:00:00-07:00/2026-09-26T08:41:00-07:00"]
        assert found.candidates[0].implied == ("zone",)

    def test_range_of_dates(self) -> None:
        """A range of two typed dates ends where the day after the second begins."""
        found = resolve(
            [
                TimeParts(
                    range_of=(
                        RangeSide(date=FixedDate(year=2026, month=10, day=1)),
                        RangeSide(date=FixedDate(year=2026, month=10, day=9)),
                    )
                )
            ],
            clock=clock(),
        )
        assert spans(found) == ["2026-10-01T00:00:00-07:00/2026-10-10T00:00:00-07:00"]
        assert kinds(found.candidates[0]) == ["end-of-grain"]

    def test_range_sides_share_date_order(self) -> None:
        """Both sides of "10/01/26-10/09/26" use the same date order."""
        found = resolve(
            [
                TimeParts(
                    range_of=(
                        RangeSide(date=NumericDate(fields=(10, 1, 26), year_digits=2)),
                        RangeSide(date=NumericDate(fields=(10, 9, 26), year_digits=2)),
                    )
                )
            ],
            clock=clock(),
        )
        assert [c.reading.date_order for c in found.candidates] == ["MDY", "DMY", "YMD"]
        assert spans(found) == [
            "2026-10-01T00:00:00-07:00/2026-10-10T00:00:00-07:00",
            "2026-01-10T00:00:00-08:00/2026-09-11T00:00:00-07:00",
            "2010-01-26T00:00:00-08:00/2010-09-27T00:00:00-07:00",
        ]


class TestDst:
    """docs/time.md#the-resolver "DST", docs/time.md#local-times-around-clock-changes and case 8."""

    def test_repeated_hour_case_8(self) -> None:
        """Case 8: 1:30 AM on 2026-11-01 happens twice: both readings, notes earlier and
        later."""
        found = resolved("1:30 AM on 11/01/2026")
        overlap = [c for c in found.candidates if c.reading.date_order == "MDY"]
        assert [c.range.interval() for c in overlap] == [
            "2026-11-01T01:30:00-07:00/2026-11-01T01:31:00-07:00",
            "2026-11-01T01:30:00-08:00/2026-11-01T01:31:00-08:00",
        ]
        assert [wire(c.notes[0]) for c in overlap] == [
            {"kind": "dst-overlap", "which": "earlier"},
            {"kind": "dst-overlap", "which": "later"},
        ]

    def test_skipped_hour(self) -> None:
        """2:30 AM on 2026-03-08 never happens in LA: both readings, notes ``dst-gap``."""
        parts = TimeParts(
            date=FixedDate(year=2026, month=3, day=8), wall=Wall(h=2, m=30, meridiem="am")
        )
        found = resolve([parts], clock=clock())
        assert spans(found) == [
            "2026-03-08T01:30:00-08:00/2026-03-08T01:31:00-08:00",
            "2026-03-08T03:30:00-07:00/2026-03-08T03:31:00-07:00",
        ]
        assert [wire(c.notes[0]) for c in found.candidates] == [
            {"kind": "dst-gap", "which": "earlier"},
            {"kind": "dst-gap", "which": "later"},
        ]

    def test_range_pairs_both_ends(self) -> None:
        """A range in the repeated hour offers every forward pairing; the end's note says
        ``end: true``."""
        parts = TimeParts(
            date=FixedDate(year=2026, month=11, day=1),
            range_of=(
                RangeSide(wall=Wall(h=1, m=30, meridiem="am")),
                RangeSide(wall=Wall(h=1, m=45, meridiem="am")),
            ),
        )
        found = resolve([parts], clock=clock())
        assert spans(found) == [
            "2026-11-01T01:30:00-07:00/2026-11-01T01:46:00-07:00",
            "2026-11-01T01:30:00-07:00/2026-11-01T01:46:00-08:00",
            "2026-11-01T01:30:00-08:00/2026-11-01T01:46:00-08:00",
        ]
        assert [wire(n) for n in found.candidates[1].notes] == [
            {"kind": "dst-overlap", "which": "earlier"},
            {"kind": "dst-overlap", "which": "later", "end": True},
            {"kind": "end-of-grain"},
        ]


class TestZones:
    """docs/time.md#the-resolver zone tokens, case 5 (PST) and case 10."""

    def test_place_case_10(self) -> None:
        """Case 10: "London time" is Europe/London with ``zone-read {as: place}``."""
        candidate = resolved("9 AM London time").candidates[0]
        assert candidate.zone == "Europe/London"
        assert wire(candidate.notes[0]) == {"kind": "zone-read", "as": "place"}
        assert candidate.range.interval() == "2026-10-09T09:00:00+01:00/2026-10-09T10:00:00+01:00"
        assert "zone" not in candidate.implied

    @pytest.mark.parametrize("text", ["9 AM India time", "9 AM Pacific time", "9 AM Pacific"])
    def test_unresolved_places_case_10(self, text: str) -> None:
        """Case 10: no match ("India") or several ("Pacific") needs a zone."""
        assert resolved(text) == Resolution(needs_zone=True)

    def test_unmapped_abbreviation_case_5(self) -> None:
        """Case 5: "PST" with no abbreviation map needs a zone."""
        assert resolved("10/09/26 8 AM to 8:40 AM PST") == Resolution(needs_zone=True)

    def test_iana_token(self) -> None:
        """An IANA zone token is taken as typed, in its own zone."""
        candidate = resolved("9 AM in Asia/Kolkata").candidates[0]
        assert candidate.zone == "Asia/Kolkata"
        assert candidate.range.interval() == "2026-10-09T09:00:00+05:30/2026-10-09T10:00:00+05:30"
        assert candidate.implied == ("date",)

    def test_numeric_offset(self) -> None:
        """A numeric offset draws the instants while the zone stays the clock's:
        ``offset-said``."""
        candidate = resolved("9 AM UTC+05:30").candidates[0]
        assert candidate.zone == LA
        assert candidate.range.interval() == "2026-10-09T09:00:00+05:30/2026-10-09T10:00:00+05:30"
        assert kinds(candidate) == ["offset-said", "end-of-grain"]

    def test_iso_instant_with_offset(self) -> None:
        """An ISO instant with its offset covers its minute at that offset."""
        candidate = resolved("2026-10-09T08:00-07:00").candidates[0]
        assert candidate.range.interval() == "2026-10-09T08:00:00-07:00/2026-10-09T08:01:00-07:00"
        assert candidate.implied == ()

    def test_iso_interval(self) -> None:
        """An ISO interval with ``Z`` on each side ends exactly at its whole-hour end."""
        found = resolved("2026-10-09T08:00Z/2026-10-09T09:00Z")
        assert spans(found) == ["2026-10-09T08:00:00Z/2026-10-09T09:00:00Z"]
        assert kinds(found.candidates[0]) == ["offset-said"]

    def test_mapped_abbreviation_gives_two_readings(self) -> None:
        """A mapped ``PST`` in October: the zone's reading (-07:00) and the abbreviation's fixed
        offset (-08:00), tagged ``abbreviation``."""
        policy = TimePolicy(abbreviations={"PST": LA})
        found = resolved("10/09/2026 8 AM PST", policy=policy)
        month_first = [c for c in found.candidates if c.reading.date_order == "MDY"]
        assert [c.range.interval() for c in month_first] == [
            "2026-10-09T08:00:00-07:00/2026-10-09T09:00:00-07:00",
            "2026-10-09T08:00:00-08:00/2026-10-09T09:00:00-08:00",
        ]
        assert [c.reading.abbreviation for c in month_first] == ["zone", "offset"]
        assert all(c.zone == LA for c in month_first)

    def test_mapped_abbreviation_same_window_once(self) -> None:
        """In January PST is LA's own offset: only one reading."""
        policy = TimePolicy(abbreviations={"PST": LA})
        parts = TimeParts(
            date=FixedDate(year=2026, month=1, day=9),
            wall=Wall(h=8, meridiem="am"),
            zone_token="PST",
        )
        found = resolve([parts], clock=clock(), policy=policy)
        assert spans(found) == ["2026-01-09T08:00:00-08:00/2026-01-09T09:00:00-08:00"]
        assert found.candidates[0].reading.abbreviation == "zone"

    def test_generic_abbreviation_has_no_fixed_offset(self) -> None:
        """``PT`` mapped to LA is never LA's abbreviation: the zone's reading only."""
        policy = TimePolicy(abbreviations={"PT": LA})
        found = resolved("9 AM PT", policy=policy)
        assert spans(found) == ["2026-10-09T09:00:00-07:00/2026-10-09T10:00:00-07:00"]

    def test_range_side_takes_the_mentions_zone(self) -> None:
        """A zone after a range's end applies to both sides."""
        found = resolved("8 AM to 9 AM Europe/London")
        assert spans(found) == ["2026-10-09T08:00:00+01:00/2026-10-09T09:00:00+01:00"]


class TestUnknownZone:
    """docs/time.md#the-resolver last paragraph, docs/time.md#unknown-zone and the clock part of
    case 50."""

    @pytest.mark.parametrize("text", ["yesterday", "last 2 hours", "8 AM to 9 AM"])
    def test_needs_zone_case_50(self, text: str) -> None:
        """Case 50: under an unknown zone, a mention without a zone (spans included) needs
        one."""
        assert resolved(text, zone=None) == Resolution(needs_zone=True)

    def test_own_zone_still_resolves(self) -> None:
        """A mention that names its zone is resolved even when the clock's zone is unknown."""
        found = resolved("9 AM London time", zone=None)
        assert spans(found) == ["2026-10-09T09:00:00+01:00/2026-10-09T10:00:00+01:00"]

    def test_zone_answer_case_50(self) -> None:
        """Case 50: after the person answers LA, "yesterday" is YDAY."""
        found = resolve(parses_of("yesterday"), clock=clock(zone=None), zone_answer=LA)
        assert spans(found) == ["2026-10-08T00:00:00-07:00/2026-10-09T00:00:00-07:00"]
        assert found.candidates[0].zone == LA
        assert found.candidates[0].implied == ("year", "month")

    def test_zone_answer_replaces_unresolved_token(self) -> None:
        """Case 43: after a zone answer, the PST mention resolves to its three readings."""
        found = resolve(parses_of("10/09/26 8 AM to 8:40 AM PST"), clock=clock(), zone_answer=LA)
        assert spans(found) == [
            "2026-10-09T08:00:00-07:00/2026-10-09T08:41:00-07:00",
            "2026-09-10T08:00:00-07:00/2026-09-10T08:41:00-07:00",
            "2010-09-26T08:00:00-07:00/2010-09-26T08:41:00-07:00",
        ]

    def test_bad_zone_answer(self) -> None:
        """A zone answer that is not a zone name is refused."""
        with pytest.raises(InvalidValue):
            resolve(parses_of("yesterday"), clock=clock(zone=None), zone_answer="PST")


class TestUnsupported:
    """docs/time.md#the-resolver "unsupported parts": nothing is guessed."""

    @pytest.mark.parametrize(
        "parts",
        [
            TimeParts(part_of_day="morning", relative=Relative(unit="day", offset=-1)),
            TimeParts(anchor="previous"),
            TimeParts(zone_token="Europe/London"),
            TimeParts(
                range_of=(
                    RangeSide(relative=Relative(unit="hour", count=2)),
                    RangeSide(wall=Wall(h=9, meridiem="am")),
                )
            ),
            TimeParts(date=FixedDate(month=10, day=9), relative=Relative(unit="day", offset=0)),
        ],
    )
    def test_unsupported(self, parts: TimeParts) -> None:
        """A part of the day, an anchor, a zone alone, a span as a range side, a day word
        with a date: ``unsupported`` and no candidate."""
        assert resolve([parts], clock=clock()) == Resolution(unsupported=True)

    def test_parses_are_kept_apart(self) -> None:
        """Candidates name their parse; an unsupported parse beside a good one is flagged."""
        found = resolve(
            [TimeParts(anchor="previous"), TimeParts(relative=Relative(unit="day", offset=0))],
            clock=clock(),
        )
        assert [c.parse for c in found.candidates] == [1]
        assert found.unsupported


# --- properties -------------------------------------------------------------------------------

ZONES = [LA, "America/Santiago", "Europe/London", "Asia/Kolkata", "UTC", None]
TOKENS = [None, "PST", "PT", "Z", "-07:00", "UTC+05:30", "London time", "Pacific time", LA]


@st.composite
def walls(draw: st.DrawFn) -> Wall:
    """A typed time of day."""
    style = draw(st.sampled_from(["open", "marked", "24h"]))
    m = draw(st.none() | st.integers(0, 59))
    s = draw(st.none() | st.integers(0, 59)) if m is not None else None
    if style == "24h":
        return Wall(h=draw(st.integers(0, 23)), m=m, s=s, clock="24h")
    h = draw(st.integers(1, 12))
    meridiem = draw(st.sampled_from(["am", "pm"])) if style == "marked" else None
    return Wall(h=h, m=m, s=s, meridiem=meridiem)


@st.composite
def dates(draw: st.DrawFn) -> FixedDate | NumericDate | Relative:
    """A typed date or day word."""
    kind = draw(st.sampled_from(["fixed", "fixed-year", "two", "three", "day"]))
    if kind == "day":
        return Relative(unit="day", offset=draw(st.integers(-3, 3)))
    if kind.startswith("fixed"):
        year = draw(st.integers(1990, 2040)) if kind == "fixed-year" else None
        return FixedDate(month=draw(st.integers(1, 12)), day=draw(st.integers(1, 31)), year=year)
    count = 2 if kind == "two" else 3
    fields = tuple(draw(st.integers(1, 31)) for _ in range(count))
    return NumericDate(fields=fields, year_digits=2 if count == 3 else None)


def _side(source: FixedDate | NumericDate | Relative | None, wall: Wall | None) -> RangeSide:
    if source is None and wall is None:
        return RangeSide(wall=Wall(h=8))
    if isinstance(source, Relative):
        return RangeSide(relative=source, wall=wall)
    return RangeSide(date=source, wall=wall)


@st.composite
def time_parts(draw: st.DrawFn) -> TimeParts:
    """Parts as a reader may return them."""
    token = draw(st.sampled_from(TOKENS))
    source = draw(st.none() | dates())
    shape = draw(st.sampled_from(["point", "range", "lookback"]))
    if shape == "lookback":
        unit = draw(st.sampled_from(["minute", "hour", "day", "week"]))
        return TimeParts(relative=Relative(unit=unit, count=draw(st.integers(1, 500))))
    date_kw: dict[str, Any] = {}
    if isinstance(source, Relative):
        date_kw["relative"] = source
    elif source is not None:
        date_kw["date"] = source
    if shape == "point":
        wall = draw(st.none() | walls())
        if wall is None and source is None:
            wall = draw(walls())
        return TimeParts(wall=wall, zone_token=token, **date_kw)
    first = _side(draw(st.none() | dates()), draw(st.none() | walls()))
    second = _side(draw(st.none() | dates()), draw(walls()))
    return TimeParts(range_of=(first, second), zone_token=token, **date_kw)


@settings(max_examples=200, deadline=None)
@given(
    parses=st.lists(time_parts(), min_size=1, max_size=2),
    zone=st.sampled_from(ZONES),
    now_ms=st.integers(1_700_000_000_000, 1_900_000_000_000),
)
@example(
    parses=[
        TimeParts(
            date=FixedDate(year=2026, month=11, day=1),
            range_of=(RangeSide(wall=Wall(h=1, m=30)), RangeSide(wall=Wall(h=1, m=45))),
        )
    ],
    zone=LA,
    now_ms=1791560400000,
)
def test_every_range_runs_forward_and_resolving_is_deterministic(
    parses: list[TimeParts], zone: str | None, now_ms: int
) -> None:
    """Every candidate's range has ``from < to``, names a real parse, has ``said: []``, and
    the same input always resolves to the same output."""
    at = Instant(ns=now_ms * 1_000_000).text
    policy = TimePolicy(abbreviations={"PST": LA})
    found = resolve(parses, clock=clock(at, zone), policy=policy)
    for candidate in found.candidates:
        first, last = candidate.range.bounds()
        assert first < last
        assert 0 <= candidate.parse < len(parses)
        assert candidate.said == ()
        assert candidate.anchor == "message"
    again = resolve(parses, clock=clock(at, zone), policy=policy)
    assert wire(again) == wire(found)
