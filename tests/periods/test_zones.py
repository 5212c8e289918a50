"""Zone names, the zone database, and local times around clock changes
(docs/time.md#zones-and-dst)."""

from __future__ import annotations

from datetime import date, datetime

import anyio
import pytest
import tzdata

from afp_runtime.errors import InvalidValue
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._zones import (
    TZDATA_VERSION,
    WallGap,
    WallOverlap,
    WallUnique,
    date_start,
    is_zone_name,
    load_zone,
    local_date,
    preload_zones,
    read_wall,
    to_zone,
)
from tests.periods._build import LA


class TestZoneNames:
    """Which zone names are accepted (docs/time.md#zone-names-and-the-database)."""

    @pytest.mark.parametrize(
        "name",
        ["UTC", "GMT", "America/Los_Angeles", "America/Santiago", "US/Pacific", "Etc/GMT+5"],
    )
    def test_accepted(self, name: str) -> None:
        """UTC, GMT and database names with a slash are zone names."""
        assert is_zone_name(name)

    @pytest.mark.parametrize(
        "name",
        ["PST", "+05:30", "utc", "EST5EDT", "america/los_angeles", "Mars/Olympus", "", None, 7],
    )
    def test_refused(self, name: object) -> None:
        """Abbreviations, offsets, wrong case, names without a slash and unknown names fail."""
        assert not is_zone_name(name)

    def test_length_limit(self) -> None:
        """A name longer than 64 code points is refused without a database look-up."""
        assert not is_zone_name("America/" + "x" * 60)

    def test_load_refuses_a_bad_name(self) -> None:
        """Loading PST raises InvalidValue rather than reading any file."""
        with pytest.raises(InvalidValue):
            load_zone("PST")
        with pytest.raises(InvalidValue):
            load_zone("../../etc/passwd")

    def test_zones_come_from_the_tzdata_package(self) -> None:
        """The version is the package's, and one zone object serves each name."""
        assert TZDATA_VERSION == tzdata.IANA_VERSION
        zone = load_zone(LA)
        assert zone is load_zone(LA)
        assert zone.key == LA


class TestReadWall:
    """Interpreting a local time (docs/time.md#local-times-around-clock-changes)."""

    def test_unique(self) -> None:
        """An ordinary local time maps to one instant in the zone's offset."""
        found = read_wall(datetime(2026, 10, 9, 8, 40), LA)
        assert found == WallUnique(instant=parse_instant("2026-10-09T15:40:00Z"))
        assert isinstance(found, WallUnique)
        assert found.instant.text == "2026-10-09T08:40:00-07:00"

    def test_repeated_hour(self) -> None:
        """01:30 on 2026-11-01 in LA occurs at -07:00 and again at -08:00."""
        found = read_wall(datetime(2026, 11, 1, 1, 30), LA)
        assert isinstance(found, WallOverlap)
        assert found.earlier.text == "2026-11-01T01:30:00-07:00"
        assert found.later.text == "2026-11-01T01:30:00-08:00"

    def test_skipped_hour(self) -> None:
        """02:30 on 2026-03-08 in LA never occurs: earlier uses the new offset, later the old."""
        found = read_wall(datetime(2026, 3, 8, 2, 30), LA)
        assert isinstance(found, WallGap)
        assert found.earlier == parse_instant("2026-03-08T02:30:00-07:00")
        assert found.later == parse_instant("2026-03-08T02:30:00-08:00")
        assert found.later.text == "2026-03-08T03:30:00-07:00"

    def test_sub_second_part_is_carried(self) -> None:
        """Microseconds ride alongside the whole-second arithmetic."""
        found = read_wall(datetime(2026, 10, 9, 8, 0, 0, 250_000), LA)
        assert isinstance(found, WallUnique)
        assert found.instant.text == "2026-10-09T08:00:00.25-07:00"


class TestDateStart:
    """A date begins at midnight: a repeated midnight's earlier reading, a skipped one's later
    reading (docs/time.md#local-times-around-clock-changes)."""

    def test_repeated_midnight_begins_at_the_earlier(self) -> None:
        """The Azores set their clocks back over midnight on 2026-10-25: the date begins at the
        first midnight."""
        assert date_start(date(2026, 10, 25), "Atlantic/Azores").text == "2026-10-25T00:00:00Z"

    def test_santiago_date_without_midnight(self) -> None:
        """Case 11 (date part): 2026-09-06 in Santiago starts 01:00-03:00 and lasts 23 hours."""
        start = date_start(date(2026, 9, 6), "America/Santiago")
        end = date_start(date(2026, 9, 7), "America/Santiago")
        assert start.text == "2026-09-06T01:00:00-03:00"
        assert end.text == "2026-09-07T00:00:00-03:00"
        assert start.ns // 1_000_000 == 1788667200000
        assert end.ns // 1_000_000 == 1788750000000
        assert end.ns - start.ns == 23 * 3600 * 1_000_000_000

    def test_ordinary_date_starts_at_midnight(self) -> None:
        """LA's 2026-10-09 starts at 00:00-07:00."""
        assert date_start(date(2026, 10, 9), LA).text == "2026-10-09T00:00:00-07:00"

    def test_local_date_and_zone_offset(self) -> None:
        """An instant falls on its zone's local date, written at the zone's offset."""
        instant = parse_instant("2026-10-09T06:59:59Z")
        assert local_date(instant, LA) == date(2026, 10, 8)
        assert to_zone(instant, LA).text == "2026-10-08T23:59:59-07:00"


async def test_preloaded_zones_read_no_file_on_the_event_loop() -> None:
    """Zone names are known without a file read, and a zone preloaded in a worker thread is
    used on the loop without blocking (the blockbuster fixture would fail the test)."""
    assert is_zone_name("Asia/Tokyo")
    await anyio.to_thread.run_sync(preload_zones, ["Europe/Paris"])
    found = read_wall(datetime(2026, 10, 9, 8, 0), "Europe/Paris")
    assert isinstance(found, WallUnique)
    assert found.instant.text == "2026-10-09T08:00:00+02:00"
