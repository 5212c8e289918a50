"""Reading sent values back (docs/time.md#reading-values-back; case 18 of
docs/time.md#how-this-is-tested), and sent wall times in a gap."""

from __future__ import annotations

from typing import Any

import pytest

from afp_runtime.time import Period
from afp_runtime.time._declare import forms_of
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
)
from afp_runtime.time._readback import ReadBack, SentGap, find_sent_gap, is_missing, read_back
from tests.periods._build import DAY, EPOCH, LA, SIGNED, WALL, ctx, rng

ISO_INCLUSIVE = JoinedForm(argument="w", as_="iso", joiner="..", edge="inclusive")
EPOCH_S_INCLUSIVE = BoundsForm(
    start=Bound(argument="start", as_="epoch-s"),
    end=Bound(argument="end", as_="epoch-s", edge="inclusive"),
)


@pytest.mark.parametrize(
    "args",
    [
        {"w": "0001-01-01T00:00:00Z..9999-12-31T23:59:59Z"},  # the inclusive end is year 10000
        {"w": "2026-01-01T00:00:00Z..9999-12-31T00:00:00Z"},  # an end with no date east of UTC
        {"w": "0001-01-01T12:00:00Z..2026-01-01T00:00:00Z"},  # a start with none west of it
    ],
)
def test_a_window_without_a_date_in_every_zone_reads_back_as_nothing(args: dict[str, Any]) -> None:
    """A range with an end outside 0001-01-02 … 9999-12-30 (UTC) cannot be shown in every zone:
    it reads back as nothing (the call is then ``unread``), never an error out of the turn."""
    assert read_back(args, [ISO_INCLUSIVE], ctx()) is None


def test_a_look_back_too_long_for_the_calendar_reads_back_as_nothing() -> None:
    """A look-back reaching before year 1 reads back as nothing, not an ``InvalidValue``."""
    assert read_back({"w": "-99999999999999999999w"}, [SIGNED], ctx()) is None
    assert read_back({"w": "-600000w"}, [SIGNED], ctx()) is None


class TestCase18:
    """Case 18."""

    def test_joined_iso_inclusive_gains_its_written_minute(self) -> None:
        """HH:MM inclusive ends gain 60 s; the result is in UTC."""
        found = read_back(
            {"w": "2026-10-09T08:00-07:00..2026-10-09T08:40-07:00"}, [ISO_INCLUSIVE], ctx()
        )
        assert found == ReadBack(form=0, range=rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z"))
        assert found is not None
        assert (found.range.start, found.range.end) == (
            "2026-10-09T15:00:00Z",
            "2026-10-09T15:41:00Z",
        )

    def test_epoch_s_inclusive(self) -> None:
        """An inclusive epoch-s value v ends at (v + 1) x 1000 ms."""
        found = read_back({"start": 1791558000, "end": 1791560459}, [EPOCH_S_INCLUSIVE], ctx())
        assert found is not None
        assert found.range == rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z")

    def test_signed_lookback(self) -> None:
        """-40m is the look-back range ending now, in now's offset."""
        found = read_back({"w": "-40m"}, [SIGNED], ctx())
        assert found == ReadBack(
            form=0, range=rng("2026-10-09T15:00:00Z", "2026-10-09T15:40:00.001Z"), lookback="40m"
        )

    def test_unsigned_value_for_a_signed_form(self) -> None:
        """40m for a signed form does not read back; -40m for an unsigned one neither."""
        assert read_back({"w": "40m"}, [SIGNED], ctx()) is None
        assert read_back({"w": "-40m"}, [LookbackForm(argument="w")], ctx()) is None

    def test_day_in_santiago(self) -> None:
        """2026-09-06 in Santiago reads 04:00Z … 03:00Z the next day."""
        found = read_back({"date": "2026-09-06", "tz": "America/Santiago"}, [DAY], ctx())
        assert found is not None
        assert (found.range.start, found.range.end) == (
            "2026-09-06T04:00:00Z",
            "2026-09-07T03:00:00Z",
        )

    @pytest.mark.parametrize(
        "args",
        [
            {"date": "2026-09-06", "tz": "PST"},
            {"start": "2026-10-09T08:00", "end": "2026-10-09T09:00", "tz": "PST"},
        ],
    )
    def test_invalid_zone_name(self, args: dict[str, Any]) -> None:
        """Any form with tz: PST does not read back."""
        assert read_back(args, [DAY, WALL], ctx()) is None


class TestReadBack:
    """The rules of docs/time.md#reading-values-back beyond case 18."""

    def test_epoch_ms_exclusive(self) -> None:
        """EPOCH values read back as they are."""
        found = read_back({"start_time": 1791558000000, "end_time": 1791560460000}, [EPOCH], ctx())
        assert found is not None
        assert found.range == rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z")

    def test_inclusive_precision_of_iso(self) -> None:
        """An inclusive iso end gains 1 s with seconds and 1 ms with a fraction."""
        seconds = read_back(
            {"w": "2026-10-09T15:00:00Z..2026-10-09T15:40:59Z"}, [ISO_INCLUSIVE], ctx()
        )
        fraction = read_back(
            {"w": "2026-10-09T15:00:00Z..2026-10-09T15:40:59.5Z"}, [ISO_INCLUSIVE], ctx()
        )
        assert seconds is not None and fraction is not None
        assert seconds.range.end == "2026-10-09T15:41:00Z"
        assert fraction.range.end == "2026-10-09T15:40:59.501Z"

    def test_wall_values_read_in_the_sent_zone(self) -> None:
        """Wall values take the zone argument; an exclusive end stays where it is."""
        found = read_back(
            {"start": "2026-10-09T08:00", "end": "2026-10-09T08:41", "tz": LA}, [WALL], ctx()
        )
        assert found is not None
        assert found.range == rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z")

    def test_zone_argument_not_sent_falls_back_to_the_agent_zone(self) -> None:
        """Without the zone argument the agent's zone applies; without either, nothing."""
        args = {"start": "2026-10-09T08:00", "end": "2026-10-09T08:41"}
        found = read_back(args, [WALL], ctx(agent_zone="UTC"))
        assert found is not None
        assert found.range == rng("2026-10-09T08:00:00Z", "2026-10-09T08:41:00Z")
        assert read_back(args, [WALL], ctx(agent_zone=None)) is None

    def test_wall_in_a_repeated_hour_fails(self) -> None:
        """A wall value that is not one single instant does not read back."""
        args = {"start": "2026-11-01T01:30", "end": "2026-11-01T03:00", "tz": LA}
        assert read_back(args, [WALL], ctx()) is None

    def test_inclusive_date_and_wall(self) -> None:
        """An inclusive date ends at the next day's start; an inclusive wall gains its step."""
        date_form = JoinedForm(
            argument="w", as_="date", joiner="/", zone=ZoneArgument(argument="tz")
        )
        dates = read_back({"w": "2026-10-09/2026-10-09", "tz": LA}, [date_form], ctx())
        assert dates is not None
        assert dates.range == rng("2026-10-09T07:00:00Z", "2026-10-10T07:00:00Z")
        wall_form = forms_of(Period(argument="w", spelling="wall-range", zone_argument="tz"))
        walls = read_back(
            {"w": "2026-10-09T08:00..2026-10-09T08:40:59.999", "tz": LA}, wall_form, ctx()
        )
        assert walls is not None
        assert walls.range == rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z")

    def test_object_form(self) -> None:
        """An object form reads its two keys."""
        form = ObjectForm(
            argument="span", keys=ObjectKeys(start="a", end="b"), as_="epoch-s", edge="exclusive"
        )
        found = read_back({"span": {"a": 1791558000, "b": 1791560460.0}}, [form], ctx())
        assert found is not None
        assert found.range == rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00Z")
        assert read_back({"span": {"a": 1791558000}}, [form], ctx()) is None
        assert read_back({"span": "x"}, [form], ctx()) is None

    @pytest.mark.parametrize(
        "args",
        [
            {"start_time": 1},
            {"start_time": 1791560460000, "end_time": 1791558000000},
            {"start_time": 1791558000000, "end_time": 1791558000000},
            {"start_time": "1791558000000", "end_time": 1791560460000},
            {"start_time": True, "end_time": 1791560460000},
            {"start_time": 1.5, "end_time": 1791560460000},
            {"start_time": 2**53, "end_time": 2**53 + 5},
        ],
    )
    def test_values_that_do_not_read_back(self, args: dict[str, Any]) -> None:
        """A lone bound, a backwards range or a value of the wrong type gives None."""
        assert read_back(args, [EPOCH], ctx()) is None

    @pytest.mark.parametrize(
        "value",
        ["2026-10-09T15:00:00Z", "a..b..c", "2026-10-09t15:00:00z..2026-10-09T16:00:00Z", 7],
    )
    def test_joined_must_split_into_two_strict_parts(self, value: object) -> None:
        """A joined string splits into exactly two parts of the form's spelling."""
        assert read_back({"w": value}, [ISO_INCLUSIVE], ctx()) is None

    def test_first_fully_sent_form_that_reads_back_wins(self) -> None:
        """accepts [iso-range, signed-lookback] reads -40m through form 1."""
        forms = forms_of(Period(argument="w", accepts=("iso-range", "signed-lookback")))
        found = read_back({"w": "-40m"}, forms, ctx())
        assert found is not None
        assert found.form == 1

    def test_forms_not_fully_sent_are_skipped(self) -> None:
        """A form with a missing argument is not read; empty strings count as missing."""
        found = read_back({"start_time": " ", "end_time": 5, "w": "-1h"}, [EPOCH, SIGNED], ctx())
        assert found is not None
        assert found.form == 1
        assert read_back({}, [EPOCH, SIGNED], ctx()) is None

    @pytest.mark.parametrize(
        ("value", "missing"), [(None, True), ("", True), ("  ", True), ("x", False), (0, False)]
    )
    def test_missing(self, value: object, missing: bool) -> None:
        """None and blank strings are missing; anything else was sent."""
        assert is_missing(value) is missing


class TestSentGap:
    """Sent wall values in a skipped hour (case 36)."""

    def test_bounds_names_the_first_bound_at_fault(self) -> None:
        """02:30 on 2026-03-08 in LA is a gap, named by its argument."""
        args = {"start": "2026-03-08T02:30", "end": "2026-03-08T04:00", "tz": LA}
        assert read_back(args, [WALL], ctx()) is None
        assert find_sent_gap(args, [WALL], ctx()) == SentGap(form=0, argument="start")

    def test_repeated_hour_is_not_a_gap(self) -> None:
        """01:30 on 2026-11-01 repeats; it is unread, not a gap."""
        args = {"start": "2026-11-01T01:30", "end": "2026-11-01T03:00", "tz": LA}
        assert read_back(args, [WALL], ctx()) is None
        assert find_sent_gap(args, [WALL], ctx()) is None

    def test_joined_examines_both_halves(self) -> None:
        """A gap in the second half of a joined string names the joined argument."""
        forms = forms_of(Period(argument="w", spelling="wall-range", zone_argument="tz"))
        args = {"w": "2026-03-08T01:00..2026-03-08T02:15", "tz": LA}
        assert find_sent_gap(args, forms, ctx()) == SentGap(form=0, argument="w")

    def test_invalid_sent_zone_falls_back_to_the_agent_zone(self) -> None:
        """With an invalid tz the agent zone decides whether the time is skipped."""
        args = {"start": "2026-03-08T02:30", "end": "2026-03-08T04:00", "tz": "PST"}
        assert find_sent_gap(args, [WALL], ctx()) == SentGap(form=0, argument="start")
        assert find_sent_gap(args, [WALL], ctx(agent_zone="UTC")) is None
