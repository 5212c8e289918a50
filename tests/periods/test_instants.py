"""Instants, durations and ranges (docs/time.md#value-types)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.time._durations import is_duration, parse_duration, spell_duration
from afp_runtime.time._instants import Instant, parse_instant
from afp_runtime.time._ranges import (
    PersonWindow,
    TimeRange,
    lookback_bounds,
    lookback_range,
)
from tests.periods._build import MORNING, NOW, rng


class TestInstantText:
    """Strict and lenient instant text, and the canonical spelling."""

    @pytest.mark.parametrize(
        ("text", "canonical"),
        [
            ("2026-10-09T15:40:00Z", "2026-10-09T15:40:00Z"),
            ("2026-10-09T08:00-07:00", "2026-10-09T08:00:00-07:00"),
            ("2026-10-09T15:40:00.001Z", "2026-10-09T15:40:00.001Z"),
            ("2026-10-09T15:40:00.500000000Z", "2026-10-09T15:40:00.5Z"),
            ("2026-10-09T15:40:00.123456789+05:30", "2026-10-09T15:40:00.123456789+05:30"),
            ("2026-10-09T15:40:00+00:00", "2026-10-09T15:40:00Z"),
        ],
    )
    def test_strict_text_reads_to_its_canonical_spelling(self, text: str, canonical: str) -> None:
        """A strict instant keeps its offset and is spelled with seconds and a trimmed fraction."""
        assert parse_instant(text).text == canonical

    @pytest.mark.parametrize(
        "text",
        [
            "2026-10-09t15:40:00Z",
            "2026-10-09T15:40:00z",
            "2026-10-09T15:40:60Z",
            "2026-02-30T00:00:00Z",
            "2026-10-09T24:00:00Z",
            "2026-10-09T15:40:00",
            "2026-10-09T15:40:00+0700",
            "2026-10-09T15:40:00-7:00",
            "2026-10-09 15:40:00Z",
            "2026-10-09T15:40:00.1234567890Z",
            "2026-10-09T15:40Z ",
            "２026-10-09T15:40:00Z",
        ],
    )
    def test_strict_profile_refuses(self, text: str) -> None:
        """Lower-case letters, a leap second, impossible dates and odd offsets are not strict."""
        with pytest.raises(InvalidValue):
            parse_instant(text)

    def test_lenient_profile_accepts_lower_case_and_a_leap_second(self) -> None:
        """The lenient profile takes t/z and :60, read as the next minute's first second."""
        assert parse_instant("2026-10-09t15:40:00z", lenient=True) == parse_instant(
            "2026-10-09T15:40:00Z"
        )
        leap = parse_instant("2026-12-31T23:59:60Z", lenient=True)
        assert leap.text == "2027-01-01T00:00:00Z"

    def test_lenient_profile_still_refuses_impossible_dates(self) -> None:
        """Both profiles reject 2026-02-30 and hour 24."""
        for text in ("2026-02-30t00:00:00z", "2026-10-09t24:00:00z"):
            with pytest.raises(InvalidValue):
                parse_instant(text, lenient=True)

    def test_memory_is_integer_nanoseconds_and_offset_seconds(self) -> None:
        """The value is integer ns since the epoch plus the written offset in seconds."""
        value = parse_instant("2026-10-09T08:00:00.000000001-07:00")
        assert value.ns == 1_791_558_000_000_000_001
        assert value.offset == -7 * 3600
        assert isinstance(value.ns, int)

    def test_equality_compares_points_in_time(self) -> None:
        """The same point written in two offsets is one instant; order follows time."""
        pdt = parse_instant("2026-10-09T08:00:00-07:00")
        utc = parse_instant("2026-10-09T15:00:00Z")
        assert pdt == utc
        assert hash(pdt) == hash(utc)
        assert pdt.text != utc.text
        assert pdt < NOW

    def test_from_datetime_keeps_microseconds_and_offset(self) -> None:
        """An aware datetime gives its instant, microseconds kept, in its own offset."""
        moment = datetime(2026, 10, 9, 8, 0, 0, 250_000, tzinfo=timezone(timedelta(hours=-7)))
        found = Instant.from_datetime(moment)
        assert found == parse_instant("2026-10-09T08:00:00.25-07:00")
        assert found.offset == -25200

    def test_naive_datetime_is_refused(self) -> None:
        """A naive datetime names no instant."""
        with pytest.raises(InvalidValue):
            Instant.from_datetime(datetime(2026, 10, 9, 15, 40))

    def test_offset_must_be_writable(self) -> None:
        """An offset that is not a whole minute cannot be spelled strictly and is refused."""
        with pytest.raises(InvalidValue):
            Instant(ns=0, offset=30)


class TestDurations:
    """Duration text and the shortest exact spelling (docs/time.md#durations)."""

    @pytest.mark.parametrize(
        ("text", "ms"),
        [("1s", 1000), ("40m", 2_400_000), ("24h", 86_400_000), ("2d", 172_800_000)],
    )
    def test_length(self, text: str, ms: int) -> None:
        """d is exactly 24 h and w exactly 168 h."""
        assert parse_duration(text) == ms
        assert parse_duration("1w") == 168 * 3_600_000

    @pytest.mark.parametrize("text", ["0m", "01m", "1", "m", "1.5h", "1M", "-1h", "1mo", " 1h"])
    def test_not_a_duration(self, text: str) -> None:
        """Only ^[1-9][0-9]*[smhdw]$ is a duration."""
        assert not is_duration(text)

    def test_allowed_letters_are_stated_by_the_reader(self) -> None:
        """A place that allows mhdw refuses seconds."""
        assert is_duration("90s")
        assert not is_duration("90s", "mhdw")
        with pytest.raises(InvalidValue):
            parse_duration("90s", "mhdw")

    def test_any_number_of_digits(self) -> None:
        """Durations have no digit limit."""
        assert parse_duration("123456789012345678901m") == 123456789012345678901 * 60_000

    @pytest.mark.parametrize(
        ("ms", "units", "text"),
        [
            (1960 * 60_000, "mhdw", "1960m"),
            (24 * 3_600_000, "mhdw", "1d"),
            (48 * 3_600_000, "mhdw", "2d"),
            (3600 * 1000, "smhdw", "1h"),
            (3600 * 1000, "mhdw", "1h"),
            (90 * 1000, "mhdw", None),
            (14 * 86_400_000, "smhdw", "2w"),
            (0, "smhdw", None),
        ],
    )
    def test_shortest_exact_spelling(self, ms: int, units: str, text: str | None) -> None:
        """The biggest allowed unit dividing the length is used; none divides → None."""
        assert spell_duration(ms, units) == text


class TestTimeRange:
    """The half-open range type (docs/time.md#ranges)."""

    def test_wire_names_are_from_and_to(self) -> None:
        """A range encodes as {from, to} and decodes back."""
        encoded = msgspec.json.encode(MORNING)
        assert encoded == (b'{"from":"2026-10-09T08:00:00-07:00","to":"2026-10-09T08:41:00-07:00"}')
        assert msgspec.json.decode(encoded, type=TimeRange) == MORNING

    def test_equality_compares_instants(self) -> None:
        """08:00:00-07:00 and 15:00:00Z are the same bound."""
        assert rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z") == MORNING
        assert hash(MORNING) == hash(MORNING.utc())

    @pytest.mark.parametrize(
        "raw",
        [
            b'{"from":"2026-10-09T15:00:00Z","to":"2026-10-09T15:00:00Z"}',
            b'{"from":"2026-10-09T16:00:00Z","to":"2026-10-09T15:00:00Z"}',
            b'{"from":"2026-10-09t15:00:00z","to":"2026-10-09T16:00:00Z"}',
            b'{"from":"2026-10-09T15:00:00Z","to":"2026-10-09T16:00:00Z","edge":"x"}',
        ],
    )
    def test_decoding_refuses_bad_ranges(self, raw: bytes) -> None:
        """from < to, strict instants, and no other keys."""
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(raw, type=TimeRange)

    def test_reach_is_to_minus_one_ms_minus_from(self) -> None:
        """MORNING reaches 41 minutes minus one millisecond."""
        assert MORNING.reach_ns == (41 * 60 * 1000 - 1) * 1_000_000

    def test_lookback_range_reaches_exactly_its_length(self) -> None:
        """24h at 15:40Z covers 15:40Z the day before through 15:40:00.001Z, reach 24 h."""
        found = lookback_range(NOW, parse_duration("24h"))
        assert (found.start, found.end) == ("2026-10-08T15:40:00Z", "2026-10-09T15:40:00.001Z")
        assert found.reach_ns == 86_400 * 1_000_000_000

    def test_lookback_range_is_written_in_nows_offset(self) -> None:
        """The ends use now's offset."""
        now = parse_instant("2026-10-09T08:40:00-07:00")
        found = lookback_range(now, parse_duration("40m"))
        assert found.start == "2026-10-09T08:00:00-07:00"
        assert found.end == "2026-10-09T08:40:00.001-07:00"

    def test_lookback_as_bounds(self) -> None:
        """Look-back as bounds is [now - L, now)."""
        assert lookback_bounds(NOW, parse_duration("40m")) == rng(
            "2026-10-09T15:00:00Z", "2026-10-09T15:40:00Z"
        )


class TestPersonWindow:
    """Person windows and their sources (docs/time.md#person-windows)."""

    def test_mention_is_absent_exactly_for_control(self) -> None:
        """A control window has no mention; the other sources require one."""
        control = PersonWindow.of(MORNING, "control")
        assert msgspec.to_builtins(control) == {
            "from": MORNING.start,
            "to": MORNING.end,
            "source": "control",
        }
        answered = PersonWindow.of(MORNING, "answered", 0)
        assert msgspec.to_builtins(answered)["mention"] == 0
        with pytest.raises(InvalidValue):
            PersonWindow.of(MORNING, "control", 0)
        with pytest.raises(InvalidValue):
            PersonWindow.of(MORNING, "answered")
        with pytest.raises(InvalidValue):
            PersonWindow.of(MORNING, "derived-from-reading")

    def test_range_and_equality(self) -> None:
        """A window's range is its from/to; equality compares instants."""
        window = PersonWindow.of(MORNING, "answered", 1)
        assert window.range == MORNING
        assert window == PersonWindow.of(MORNING.utc(), "answered", 1)
        assert window != PersonWindow.of(MORNING, "answered", 0)

    def test_decoding_checks_the_source_rule(self) -> None:
        """Decoding an answered window without a mention fails."""
        raw = b'{"from":"2026-10-09T15:00:00Z","to":"2026-10-09T16:00:00Z","source":"answered"}'
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(raw, type=PersonWindow)
