"""The English rule reader ``afp/english`` (docs/time.md#what-the-english-reader-understands;
docs/time.md#how-this-is-tested cases 1-11 at the parse level)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from afp_runtime.time._english import ENGLISH_READER_ID, EnglishReader, read_english
from afp_runtime.time._parts import Relative, TimeParts
from afp_runtime.time._reader import (
    Mention,
    Reading,
    RefusedMention,
    TimeReader,
    reader_info,
    validate_reading,
)


def _found(text: str) -> list[tuple[str, Any]]:
    """``(quote, parse as wire builtins)`` per mention; the parse is None when unreadable."""
    found: list[tuple[str, Any]] = []
    for mention in read_english(text).mentions:
        if mention.problem == "unreadable":
            assert mention.parses == ()
            found.append((mention.quote, None))
        else:
            assert len(mention.parses) == 1
            found.append(
                (mention.quote, msgspec.json.decode(msgspec.json.encode(mention.parses[0])))
            )
    return found


def _only(text: str) -> tuple[str, Any]:
    found = _found(text)
    assert len(found) == 1, found
    return found[0]


def _wall(h: int, m: int | None = None, s: int | None = None, **more: str) -> dict[str, Any]:
    wall: dict[str, Any] = {"h": h}
    if m is not None:
        wall["m"] = m
    if s is not None:
        wall["s"] = s
    wall.update(more)
    return wall


AM = {"meridiem": "am"}
PM = {"meridiem": "pm"}
H24 = {"clock": "24h"}
OCT9 = {"kind": "fixed", "year": 2026, "month": 10, "day": 9}
YESTERDAY = {"unit": "day", "offset": -1}
TODAY = {"unit": "day", "offset": 0}
TOMORROW = {"unit": "day", "offset": 1}
ABBREVIATIONS = str.split(
    "UTC GMT PST PDT PT MST MDT MT CST CDT CT EST EDT ET AKST AKDT HST AST ADT NST NDT BST IST "
    "CET CEST EET EEST WET WEST MSK JST KST HKT SGT AEST AEDT ACST ACDT AWST NZST NZDT SAST"
)


class TestTheReader:
    """The reader's identity and its place behind the ``TimeReader`` protocol."""

    def test_identity(self) -> None:
        """The English reader is afp/english 1.0.0, locale en-US, kind rule."""
        reader = EnglishReader()
        assert (reader.id, reader.version, reader.locale, reader.kind) == (
            "afp/english",
            "1.0.0",
            "en-US",
            "rule",
        )
        assert ENGLISH_READER_ID == "afp/english"

    def test_reader_info(self) -> None:
        """``reader_info`` gives the ``reader {id, version, kind, locale}`` of a reading row."""
        reader: TimeReader = EnglishReader()
        assert msgspec.to_builtins(reader_info(reader)) == {
            "id": "afp/english",
            "version": "1.0.0",
            "kind": "rule",
            "locale": "en-US",
        }

    def test_read_returns_a_reading(self) -> None:
        """``read`` returns a ``Reading`` equal to ``read_english`` of the same text."""
        reading = EnglishReader().read("any errors yesterday?")
        assert isinstance(reading, Reading)
        assert reading == read_english("any errors yesterday?")

    def test_wire_shape_of_an_empty_reading(self) -> None:
        """A message naming no time reads as ``{"mentions": []}`` on the wire."""
        assert msgspec.json.encode(read_english("hello")) == b'{"mentions":[]}'

    def test_wire_shape_of_an_unreadable_mention(self) -> None:
        """An unreadable mention keeps ``parses: []`` on the wire next to its problem."""
        assert msgspec.json.encode(read_english("last week")) == (
            b'{"mentions":[{"quote":"last week","parses":[],"problem":"unreadable"}]}'
        )


class TestSection16Readings:
    """docs/time.md#how-this-is-tested cases 1-11, at the level of the reader's parts."""

    def test_case_1_yesterday(self) -> None:
        """Case 1: "yesterday" is one mention with the day offset -1."""
        assert read_english("yesterday") == Reading(
            mentions=(
                Mention(
                    quote="yesterday",
                    parses=(TimeParts(relative=Relative(unit="day", offset=-1)),),
                ),
            )
        )

    @pytest.mark.parametrize(
        ("text", "quote"),
        [("last week", "last week"), ("what failed yesterday morning?", "yesterday morning")],
    )
    def test_case_2_unreadable(self, text: str, quote: str) -> None:
        """Case 2: "last week" and "yesterday morning" are one unreadable mention each."""
        assert _found(text) == [(quote, None)]

    def test_case_3_since_monday(self) -> None:
        """Case 3: "errors since Monday?" is one unreadable mention quoted ``since Monday``."""
        assert _found("errors since Monday?") == [("since Monday", None)]

    @pytest.mark.parametrize(
        ("text", "relative"),
        [
            ("last 40 minutes", {"unit": "minute", "count": 40}),
            ("last 24h", {"unit": "hour", "count": 24}),
        ],
    )
    def test_case_4_spans_ending_now(self, text: str, relative: dict[str, Any]) -> None:
        """Case 4: "last 40 minutes" and "last 24h" are spans ending now."""
        assert _found(text) == [(text, {"relative": relative})]

    def test_case_5_numeric_date_and_range(self) -> None:
        """Case 5: a numeric date with two-digit year before a range of two walls."""
        assert _found("10/09/26 8 AM to 8:40 AM") == [
            (
                "10/09/26 8 AM to 8:40 AM",
                {
                    "date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 2},
                    "rangeOf": [{"wall": _wall(8, **AM)}, {"wall": _wall(8, 40, **AM)}],
                },
            )
        ]

    def test_case_5_followed_by_pst(self) -> None:
        """Case 5/43: a trailing ``PST`` is the mention's zone token, as typed."""
        quote, parts = _only("Show client activity 10/09/26 8 AM to 8:40 AM PST")
        assert quote == "10/09/26 8 AM to 8:40 AM PST"
        assert parts["zoneToken"] == "PST"
        assert "zoneToken" not in parts["rangeOf"][0]
        assert "zoneToken" not in parts["rangeOf"][1]

    @pytest.mark.parametrize(
        ("text", "start", "end"),
        [
            ("8 AM to 9 AM", _wall(8, **AM), _wall(9, **AM)),
            ("8 AM to 8:40", _wall(8, **AM), _wall(8, 40)),
            ("8 to 9 PM", _wall(8), _wall(9, **PM)),
            ("11 to 1 PM", _wall(11), _wall(1, **PM)),
            ("8:45 to 8:55", _wall(8, 45), _wall(8, 55)),
        ],
    )
    def test_cases_6_and_7_ranges(
        self, text: str, start: dict[str, Any], end: dict[str, Any]
    ) -> None:
        """Cases 6-7: AM/PM is kept only where typed; borrowing is the resolver's job."""
        assert _found(text) == [(text, {"rangeOf": [{"wall": start}, {"wall": end}]})]

    def test_case_8_time_on_a_date(self) -> None:
        """Case 8: "1:30 AM on 11/01/2026": a wall and a numeric date with a 4-digit year."""
        assert _found("1:30 AM on 11/01/2026") == [
            (
                "1:30 AM on 11/01/2026",
                {
                    "date": {"kind": "numeric", "fields": [11, 1, 2026], "yearDigits": 4},
                    "wall": _wall(1, 30, **AM),
                },
            )
        ]

    def test_case_9_day_word_before_between(self) -> None:
        """Case 9: "today between 1 pm and 2 pm": the day word belongs to the whole range."""
        assert _found("today between 1 pm and 2 pm") == [
            (
                "today between 1 pm and 2 pm",
                {
                    "relative": TODAY,
                    "rangeOf": [{"wall": _wall(1, **PM)}, {"wall": _wall(2, **PM)}],
                },
            )
        ]

    def test_case_9_month_name_date(self) -> None:
        """Case 9: "Sept 29" is a fixed date with no year."""
        assert _found("Sept 29") == [
            ("Sept 29", {"date": {"kind": "fixed", "month": 9, "day": 29}})
        ]

    @pytest.mark.parametrize("place", ["London time", "India time", "Pacific time"])
    def test_case_10_place_time(self, place: str) -> None:
        """Case 10: ``<Place> time`` after a time is the zone token exactly as typed."""
        assert _found(f"8 AM {place}") == [
            (f"8 AM {place}", {"wall": _wall(8, **AM), "zoneToken": place})
        ]

    def test_case_10_good_morning(self) -> None:
        """Case 10: "Good morning, any news?" holds no mention."""
        assert _found("Good morning, any news?") == []

    def test_case_11_today(self) -> None:
        """Case 11: "today" is the day offset 0."""
        assert _found("today") == [("today", {"relative": TODAY})]

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "any client activity in the last 2 hours?",
                [("the last 2 hours", {"relative": {"unit": "hour", "count": 2}})],
            ),
            ("any SMB errors yesterday morning?", [("yesterday morning", None)]),
            ("who talked to cluster 006 since 8 AM?", [("since 8 AM", None)]),
            (
                "client activity on 10/20/26",
                [
                    (
                        "10/20/26",
                        {"date": {"kind": "numeric", "fields": [10, 20, 26], "yearDigits": 2}},
                    )
                ],
            ),
            ("any errors yesterday?", [("yesterday", {"relative": YESTERDAY})]),
            ("tomorrow 8 to 8:40", [("tomorrow 8 to 8:40", None)]),
        ],
    )
    def test_whole_turn_messages(self, text: str, expected: list[tuple[str, Any]]) -> None:
        """The messages of docs/time.md#how-this-is-tested cases 30 and 39-45 read as those cases
        assume."""
        assert _found(text) == expected


READABLE: list[tuple[str, dict[str, Any]]] = [
    # ISO date, instant or interval
    ("2026-10-09", {"date": OCT9}),
    ("2026-10-09T08:00-07:00", {"date": OCT9, "wall": _wall(8, 0, **H24), "zoneToken": "-07:00"}),
    (
        "2026-10-09T08:00Z/2026-10-09T09:00Z",
        {
            "rangeOf": [
                {"date": OCT9, "wall": _wall(8, 0, **H24), "zoneToken": "Z"},
                {"date": OCT9, "wall": _wall(9, 0, **H24), "zoneToken": "Z"},
            ]
        },
    ),
    (
        "2026-10-09T15:40:30+05:30",
        {"date": OCT9, "wall": _wall(15, 40, 30, **H24), "zoneToken": "+05:30"},
    ),
    # numeric dates
    ("10/09/26", {"date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 2}}),
    ("10/9", {"date": {"kind": "numeric", "fields": [10, 9]}}),
    ("2026/10/09", {"date": {"kind": "numeric", "fields": [2026, 10, 9], "yearDigits": 4}}),
    (
        "10/01/26-10/09/26",
        {
            "rangeOf": [
                {"date": {"kind": "numeric", "fields": [10, 1, 26], "yearDigits": 2}},
                {"date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 2}},
            ]
        },
    ),
    # dates with a month name
    ("11 September", {"date": {"kind": "fixed", "month": 9, "day": 11}}),
    ("Sept 29", {"date": {"kind": "fixed", "month": 9, "day": 29}}),
    ("September 29, 2026", {"date": {"kind": "fixed", "month": 9, "day": 29, "year": 2026}}),
    ("29th of Sep", {"date": {"kind": "fixed", "month": 9, "day": 29}}),
    ("May 3", {"date": {"kind": "fixed", "month": 5, "day": 3}}),
    ("oct 9", {"date": {"kind": "fixed", "month": 10, "day": 9}}),
    ("Oct 9th", {"date": {"kind": "fixed", "month": 10, "day": 9}}),
    # times of day
    ("8 AM", {"wall": _wall(8, **AM)}),
    ("8:40", {"wall": _wall(8, 40)}),
    ("20:40", {"wall": _wall(20, 40, **H24)}),
    ("8:40 p.m.", {"wall": _wall(8, 40, **PM)}),
    ("8:40:15", {"wall": _wall(8, 40, 15)}),
    ("12 AM", {"wall": _wall(12, **AM)}),
    ("8pm", {"wall": _wall(8, **PM)}),
    ("00:30", {"wall": _wall(0, 30, **H24)}),
    # two-sided ranges
    ("8 AM to 8:40 AM", {"rangeOf": [{"wall": _wall(8, **AM)}, {"wall": _wall(8, 40, **AM)}]}),
    ("08:00–08:40", {"rangeOf": [{"wall": _wall(8, 0, **H24)}, {"wall": _wall(8, 40, **H24)}]}),
    ("8-9 PM", {"rangeOf": [{"wall": _wall(8)}, {"wall": _wall(9, **PM)}]}),
    ("between 8 and 9 AM", {"rangeOf": [{"wall": _wall(8)}, {"wall": _wall(9, **AM)}]}),
    (
        "today between 1 pm and 2 pm",
        {"relative": TODAY, "rangeOf": [{"wall": _wall(1, **PM)}, {"wall": _wall(2, **PM)}]},
    ),
    (
        "2026-09-26 08:00..08:40",
        {
            "date": {"kind": "fixed", "year": 2026, "month": 9, "day": 26},
            "rangeOf": [{"wall": _wall(8, 0, **H24)}, {"wall": _wall(8, 40, **H24)}],
        },
    ),
    # day words
    ("today", {"relative": TODAY}),
    ("yesterday", {"relative": YESTERDAY}),
    ("tomorrow", {"relative": TOMORROW}),
    # spans ending now
    ("last 40 minutes", {"relative": {"unit": "minute", "count": 40}}),
    ("past 2 hours", {"relative": {"unit": "hour", "count": 2}}),
    ("last 3 hrs", {"relative": {"unit": "hour", "count": 3}}),
    ("last 24h", {"relative": {"unit": "hour", "count": 24}}),
    ("past 6h", {"relative": {"unit": "hour", "count": 6}}),
    ("last 30m", {"relative": {"unit": "minute", "count": 30}}),
    ("last 2d", {"relative": {"unit": "day", "count": 2}}),
    ("past 1w", {"relative": {"unit": "week", "count": 1}}),
    ("the last hour", {"relative": {"unit": "hour", "count": 1}}),
    ("the past week", {"relative": {"unit": "week", "count": 1}}),
    ("last 1 minute", {"relative": {"unit": "minute", "count": 1}}),
    ("last 100000 minutes", {"relative": {"unit": "minute", "count": 100000}}),
    ("last 2 weeks", {"relative": {"unit": "week", "count": 2}}),
]


class TestReadable:
    """Every readable example of docs/time.md#what-the-english-reader-understands gives one mention,
    quoted whole, with its parts."""

    @pytest.mark.parametrize(("text", "parts"), READABLE, ids=[t for t, _ in READABLE])
    def test_example(self, text: str, parts: dict[str, Any]) -> None:
        """The phrase alone is one mention quoting all of it, with exactly these parts."""
        assert _found(text) == [(text, parts)]

    @pytest.mark.parametrize(("text", "parts"), READABLE, ids=[t for t, _ in READABLE])
    def test_example_inside_a_sentence(self, text: str, parts: dict[str, Any]) -> None:
        """Inside a question the quote is the phrase alone, without the words around it."""
        assert _found(f"any errors for {text} on cluster 6?") == [(text, parts)]

    @pytest.mark.parametrize("joiner", ["to", "until", "till", "through", "thru", "-", "–", "—"])
    def test_range_joiners(self, joiner: str) -> None:
        """Each joiner of docs/time.md#what-the-english-reader-understands links two times into one
        range."""
        text = f"8 AM {joiner} 9 AM"
        assert _found(text) == [
            (text, {"rangeOf": [{"wall": _wall(8, **AM)}, {"wall": _wall(9, **AM)}]})
        ]

    def test_from_opens_a_range(self) -> None:
        """``from … to …`` is one range whose quote includes ``from``."""
        assert _found("from 8 to 9 PM") == [
            ("from 8 to 9 PM", {"rangeOf": [{"wall": _wall(8)}, {"wall": _wall(9, **PM)}]})
        ]

    def test_slash_only_between_iso_values(self) -> None:
        """``/`` joins two ISO values, while ``10/09`` stays a numeric date."""
        assert _found("2026-10-09/2026-10-10")[0][1]["rangeOf"][1] == {
            "date": {"kind": "fixed", "year": 2026, "month": 10, "day": 10}
        }
        assert _found("10/09")[0][1] == {"date": {"kind": "numeric", "fields": [10, 9]}}

    def test_zone_after_the_range_applies_to_it(self) -> None:
        """A zone written after a range's end is the mention's, not only the end's."""
        _, parts = _only("from 8 AM to 9 AM America/Los_Angeles")
        assert parts["zoneToken"] == "America/Los_Angeles"
        assert parts["rangeOf"] == [{"wall": _wall(8, **AM)}, {"wall": _wall(9, **AM)}]

    def test_zones_on_each_side_stay_there(self) -> None:
        """When both ends carry a zone, each side keeps its own."""
        _, parts = _only("8 AM PST to 9 AM EST")
        assert "zoneToken" not in parts
        assert [side["zoneToken"] for side in parts["rangeOf"]] == ["PST", "EST"]

    def test_day_word_before_the_range_applies_to_it(self) -> None:
        """A day word before a range is the mention's, shared by both sides."""
        _, parts = _only("yesterday 8 AM to 9 AM")
        assert parts["relative"] == YESTERDAY
        assert all("relative" not in side for side in parts["rangeOf"])

    def test_days_on_each_side_stay_there(self) -> None:
        """When the end has its own day word, the start keeps the one written before it."""
        _, parts = _only("8 AM today to 9 AM tomorrow")
        assert [side["relative"] for side in parts["rangeOf"]] == [TODAY, TOMORROW]

    @pytest.mark.parametrize(
        ("zone", "token"),
        [
            ("America/Los_Angeles", "America/Los_Angeles"),
            ("UTC-07:00", "UTC-07:00"),
            ("UTC+05:30", "UTC+05:30"),
            ("London time", "London time"),
            ("(PST)", "PST"),
            ("in Asia/Kolkata", "Asia/Kolkata"),
        ],
    )
    @pytest.mark.parametrize("before", ["8 AM", "Sept 29", "yesterday"])
    def test_zone_after_time_date_or_day(self, before: str, zone: str, token: str) -> None:
        """A zone after a time, a date or a day word joins the mention as typed."""
        quote, parts = _only(f"errors {before} {zone}?")
        assert quote == f"{before} {zone}"
        assert parts["zoneToken"] == token

    @pytest.mark.parametrize("abbreviation", ABBREVIATIONS)
    def test_every_listed_abbreviation(self, abbreviation: str) -> None:
        """Every abbreviation of the closed list is a zone token after a time."""
        assert _only(f"8:40 {abbreviation}") == (
            f"8:40 {abbreviation}",
            {"wall": _wall(8, 40), "zoneToken": abbreviation},
        )

    def test_unlisted_abbreviation_is_no_zone(self) -> None:
        """An upper-case word outside the list is not taken as a zone."""
        assert _found("8:40 XYZ") == [("8:40", {"wall": _wall(8, 40)})]

    def test_a_span_never_takes_a_zone(self) -> None:
        """A zone after a span ending now is neither a part nor in the quote."""
        assert _found("last 2 hours PST") == [
            ("last 2 hours", {"relative": {"unit": "hour", "count": 2}})
        ]

    def test_zone_alone_is_no_mention(self) -> None:
        """A zone with no time, date or day word before it gives no mention."""
        assert _found("I'm on PST, London time is fine") == []

    def test_lone_hour_only_starts_a_range(self) -> None:
        """A lone ``8`` is read only as the start of a range whose end has AM/PM."""
        assert _found("restart 8 servers at 8") == []
        assert _found("8 to 9 PM")[0][1]["rangeOf"][0] == {"wall": {"h": 8}}

    def test_lower_case_may_is_the_verb(self) -> None:
        """A lower-case ``may`` without a day is the verb, never a month."""
        assert _found("you may see errors") == []
        assert _found("it may 2 weeks take") == []

    def test_month_without_day_is_unreadable(self) -> None:
        """A month with no day is one unreadable mention."""
        assert _found("errors in September") == [("September", None)]
        assert _found("errors in May") == [("May", None)]


UNREADABLE: list[tuple[str, str]] = [
    # times of day given by name
    ("what failed yesterday morning?", "yesterday morning"),
    ("errors tonight", "tonight"),
    ("errors at noon", "noon"),
    ("errors at midnight", "midnight"),
    # calendar periods
    ("errors last week", "last week"),
    ("errors this month", "this month"),
    ("errors next year", "next year"),
    ("errors over the weekend", "the weekend"),
    ("errors this weekend", "this weekend"),
    # weekday names, a month with no day, ordinal days
    ("errors on Monday", "Monday"),
    ("errors on Fridays", "Fridays"),
    ("errors in September", "September"),
    ("errors on the 9th", "the 9th"),
    # ago, quantities in words, units not taken, previous
    ("errors 3 hours ago", "3 hours ago"),
    ("errors in the last two hours", "the last two hours"),
    ("errors in the past few days", "the past few days"),
    ("errors in the last 30 seconds", "the last 30 seconds"),
    ("errors in the last 30s", "the last 30s"),
    ("errors in the last 3 months", "the last 3 months"),
    ("errors in the past 3mo", "the past 3mo"),
    ("errors in the previous 7 days", "the previous 7 days"),
    # the future, o'clock, the day before yesterday
    ("errors in the next 2 hours", "the next 2 hours"),
    ("errors in the next 2h", "the next 2h"),
    ("errors at 8 o'clock", "8 o'clock"),
    ("errors the day before yesterday", "the day before yesterday"),
    # AM/PM the hour contradicts; a range whose start has no AM/PM to borrow
    ("errors at 13:00 PM", "13:00 PM"),
    ("errors at 0 AM", "0 AM"),
    ("errors from 8 to 9:30", "from 8 to 9:30"),
    ("errors 8 to 9:30", "8 to 9:30"),
    ("errors 8 AM to 9", "8 AM to 9"),
    # beyond the examples of docs/time.md#what-the-english-reader-understands
    ("errors last night", "last night"),
    ("errors this morning", "this morning"),
    ("errors 8 AM this morning", "8 AM this morning"),
    ("errors 8 in the morning", "8 in the morning"),
    ("errors at half past 8", "half past 8"),
    ("errors at eight AM", "eight AM"),
    ("errors Monday 8 AM", "Monday 8 AM"),
    ("errors tomorrow at noon", "tomorrow at noon"),
    ("errors between 8 AM and noon", "between 8 AM and noon"),
    ("errors on Friday, October 9", "Friday, October 9"),
    ("errors Sept 8 AM", "Sept 8 AM"),
    ("errors September 2026", "September 2026"),
    ("errors last Monday", "last Monday"),
    ("errors last day", "last day"),
    ("errors this hour", "this hour"),
    ("errors in the last 0 minutes", "the last 0 minutes"),
    ("errors in the last 100001 minutes", "the last 100001 minutes"),
    ("errors in the last 1.5 hours", "the last 1.5 hours"),
    ("errors in the last 1h30m", "the last 1h30m"),
    ("errors in the last 2 hours and 30 minutes", "the last 2 hours and 30 minutes"),
    ("errors in the last 2 hours of yesterday", "the last 2 hours of yesterday"),
    ("errors in the first 10 minutes", "the first 10 minutes"),
    ("errors at 24:00", "24:00"),
    ("errors at 8ish", "8ish"),
    ("errors today at 8", "today at 8"),
    ("errors by EOD", "by EOD"),
    ("errors overnight", "overnight"),
    ("errors the other day", "the other day"),
    ("errors on Fri Oct 9", "Fri Oct 9"),
    ("errors at midday", "midday"),
    ("errors may 8 AM", "may 8 AM"),
]


class TestUnreadable:
    """Words docs/time.md#what-the-english-reader-understands cannot read give ONE unreadable
    mention covering the whole expression."""

    @pytest.mark.parametrize(("text", "quote"), UNREADABLE, ids=[q for _, q in UNREADABLE])
    def test_example(self, text: str, quote: str) -> None:
        """The expression is one unreadable mention, quoted whole, with no partial reading."""
        assert _found(text) == [(quote, None)]

    @pytest.mark.parametrize(
        "word",
        [
            "since",
            "before",
            "after",
            "by",
            "around",
            "circa",
            "approx",
            "approx.",
            "approximately",
            "until",
            "till",
            "earlier",
            "later",
            "early",
            "late",
            "within",
            "past",
            "beyond",
            "prior to",
            "up to",
            "no later than",
            "no earlier than",
            "no sooner than",
            "as of",
            "starting at",
            "starting from",
            "starting on",
            "beginning at",
            "beginning from",
            "beginning on",
        ],
    )
    @pytest.mark.parametrize("expression", ["8 AM", "yesterday", "Sept 29", "10/09/26 8:40"])
    def test_qualifier_before(self, word: str, expression: str) -> None:
        """A qualifying word before a readable expression makes it unreadable, quote extended."""
        assert _found(f"errors {word} {expression}?") == [(f"{word} {expression}", None)]

    def test_qualifier_before_a_span(self) -> None:
        """A qualifying word before a span ending now makes it unreadable too."""
        assert _found("errors within the last hour") == [("within the last hour", None)]
        assert _found("errors since the last 2 hours") == [("since the last 2 hours", None)]

    @pytest.mark.parametrize("text", ["~8 AM", "~ 8 AM"])
    def test_tilde(self, text: str) -> None:
        """``~`` before a time makes it unreadable, the tilde quoted."""
        assert _found(f"errors {text}") == [(text, None)]

    def test_from_without_to_before_a_time(self) -> None:
        """``from`` with no matching ``to`` before a time of day qualifies it."""
        assert _found("errors from 8 AM") == [("from 8 AM", None)]
        assert _found("errors from yesterday 8 AM") == [("from yesterday 8 AM", None)]

    def test_from_before_a_day_is_not_a_qualifier(self) -> None:
        """``from`` before a date or day word is no qualifier: the day is read."""
        assert _found("logs from yesterday") == [("yesterday", {"relative": YESTERDAY})]

    @pytest.mark.parametrize(
        "word",
        [
            "-ish",
            " ish",
            " ago",
            " onward",
            " onwards",
            " or so",
            " or later",
            " or earlier",
            " or after",
            " or before",
            " and later",
            " and earlier",
            " and after",
            " and before",
            " at the latest",
            " at the earliest",
            " to now",
        ],
    )
    @pytest.mark.parametrize("expression", ["8 AM", "yesterday", "Oct 9"])
    def test_qualifier_after(self, word: str, expression: str) -> None:
        """A qualifying word after a readable expression makes it unreadable, quote extended."""
        assert _found(f"errors {expression}{word}, please") == [(f"{expression}{word}", None)]

    def test_unreadable_swallows_a_touching_expression(self) -> None:
        """``yesterday since 8 AM`` is one unreadable mention, never ``yesterday`` read alone."""
        assert _found("errors yesterday since 8 AM?") == [("yesterday since 8 AM", None)]

    def test_qualifiers_chain(self) -> None:
        """Several qualifying words in a row all join the quote."""
        assert _found("errors since about 8 AM") == [("since about 8 AM", None)]
        assert _found("errors on or after Oct 1") == [("on or after Oct 1", None)]


class TestSettledHere:
    """Readings the module docstring settles where docs/time.md#what-the-english-reader-understands
    is silent."""

    def test_own_zone_words_give_no_token(self) -> None:
        """``local time`` joins the quote with no zone token (the clock zone is the person's)."""
        assert _found("8 AM local time") == [("8 AM local time", {"wall": _wall(8, **AM)})]

    @pytest.mark.parametrize(
        ("text", "token"),
        [
            ("8 AM Pacific", "Pacific"),
            ("8 AM UTC time", "UTC"),
            ("8 AM server time", "server time"),
        ],
    )
    def test_other_zone_words(self, text: str, token: str) -> None:
        """Region names and ``server time`` are zone tokens; ``UTC time`` keeps ``UTC``."""
        assert _found(text) == [(text, {"wall": _wall(8, **AM), "zoneToken": token})]

    def test_zulu_wall(self) -> None:
        """``15:40Z`` is a 24-hour wall with the zone token ``Z``."""
        assert _found("15:40Z") == [("15:40Z", {"wall": _wall(15, 40, **H24), "zoneToken": "Z"})]

    def test_offset_after_wall_is_a_range(self) -> None:
        """``08:00-07:00`` is read as a range, never as a wall with an offset."""
        assert _found("08:00-07:00")[0][1] == {
            "rangeOf": [{"wall": _wall(8, 0, **H24)}, {"wall": _wall(7, 0, **H24)}]
        }

    @pytest.mark.parametrize(
        ("text", "wall"),
        [
            ("08:00", _wall(8, 0, **H24)),
            ("0:30", _wall(0, 30, **H24)),
            ("10:30", _wall(10, 30)),
            ("12:30", _wall(12, 30)),
        ],
    )
    def test_which_hours_are_24h(self, text: str, wall: dict[str, Any]) -> None:
        """A leading zero, hour 0 or 13-23 mark the 24-hour clock; 1-12 stay open."""
        assert _found(text) == [(text, {"wall": wall})]

    def test_lower_case_may_with_a_day(self) -> None:
        """``may 3`` followed by nothing but punctuation is the date May 3."""
        assert _found("errors on may 3?") == [
            ("may 3", {"date": {"kind": "fixed", "month": 5, "day": 3}})
        ]

    def test_fraction_of_second_dropped(self) -> None:
        """An ISO instant's fraction is dropped: the wall names its whole second."""
        _, parts = _only("2026-10-09T15:40:00.123Z")
        assert parts["wall"] == _wall(15, 40, 0, **H24)


class TestNotTime:
    """Words that do not refer to a time give no mention."""

    @pytest.mark.parametrize(
        "text",
        [
            "Good morning",
            "Good morning, any news?",
            "have a good day",
            "Good night!",
            "Good evening team",
            "restart 8 servers",
            "between 8 and 9 replicas",
            "8 to 9 nodes",
            "24/7 support",
            "a 50/50 split",
            "the 3rd server failed",
            "last minute changes",
            "errors at the last minute",
            "the job ran for 2 hours",
            "last 10 messages",
            "May I see the logs?",
            "Ask June about it",
            "see 10.0.0.1:8080",
            "score 25:00",
            "",
        ],
    )
    def test_no_mention(self, text: str) -> None:
        """The text holds no time expression."""
        assert read_english(text).mentions == ()


class TestSeveral:
    """Several time expressions give several mentions, in text order."""

    def test_two_day_words(self) -> None:
        """ "today vs yesterday" gives two readable mentions, today first."""
        assert _found("today vs yesterday") == [
            ("today", {"relative": TODAY}),
            ("yesterday", {"relative": YESTERDAY}),
        ]

    def test_readable_and_unreadable(self) -> None:
        """A readable and an unreadable expression are two mentions in text order."""
        assert _found("in the last 24 hours, and what about yesterday morning?") == [
            ("the last 24 hours", {"relative": {"unit": "hour", "count": 24}}),
            ("yesterday morning", None),
        ]

    def test_three_kinds(self) -> None:
        """A date, a span and a qualified time are three mentions in order."""
        quotes = [q for q, _ in _found("Sept 29, then the past 6h, and since 8 AM")]
        assert quotes == ["Sept 29", "the past 6h", "since 8 AM"]


_VOCABULARY = str.split(
    "8 AM PM 8:40 20:40 to - – .. / between and from since yesterday today tomorrow last past "
    "the hours h m 2 24 10/09/26 10/9 2026/10/09 2026-10-09 2026-10-09T08:00Z Sept 29 may May "
    "9th of PST UTC+05:30 America/Los_Angeles London time ( ) , at on in morning noon ago or so "
    "later -ish Monday week weekend 0 13 99 100001 1.5 ~ no later than until o'clock"
)
_TEXTS = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(_VOCABULARY) | st.text(max_size=4), max_size=12).map(" ".join),
    st.lists(st.sampled_from(_VOCABULARY), max_size=8).map("".join),
)


class TestProperties:
    """Properties that hold for any text."""

    @settings(max_examples=400, deadline=None)
    @given(text=_TEXTS)
    @example(text="Sept 8 AM")
    @example(text="we may 2 weeks")
    @example(text="yesterday since 8 AM or so today")
    @example(text="8 AM to now 8 PM")
    def test_quotes_occur_in_order(self, text: str) -> None:
        """Every quote occurs in the text, mentions in text order and never overlapping."""
        position = 0
        for mention in read_english(text).mentions:
            found = text.find(mention.quote, position)
            assert found >= 0, (text, mention.quote)
            position = found + len(mention.quote)

    @settings(max_examples=400, deadline=None)
    @given(text=_TEXTS)
    def test_reading_passes_validation(self, text: str) -> None:
        """Reading never raises, and every mention passes ``validate_reading`` unrefused."""
        checked = validate_reading(text, read_english(text))
        assert not [c for c in checked if isinstance(c, RefusedMention)]

    @settings(max_examples=200, deadline=None)
    @given(text=_TEXTS)
    def test_deterministic(self, text: str) -> None:
        """The same text always reads the same, down to the wire bytes."""
        assert msgspec.json.encode(read_english(text)) == msgspec.json.encode(read_english(text))

    @settings(max_examples=200, deadline=None)
    @given(text=_TEXTS)
    def test_one_parse_or_unreadable(self, text: str) -> None:
        """Each mention has exactly one parse, or none and ``problem: unreadable``."""
        for mention in read_english(text).mentions:
            assert (len(mention.parses), mention.problem) in ((1, None), (0, "unreadable"))
