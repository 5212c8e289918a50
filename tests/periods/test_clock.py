"""The run clock: a message's ``time``, ``turn_clock`` and the ``clock`` row
(docs/time.md#the-clock-row, docs/time.md#unknown-zone; docs/time.md#how-this-is-tested cases 50 and
53)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.time import MessageTime, message_time_from_wire
from afp_runtime.time._clock import ClockRow, TimeClock, clock_from_wire, clock_row, turn_clock
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._ranges import PersonWindow, TimeRange
from afp_runtime.time._zones import to_local

LA = "America/Los_Angeles"
ACCEPTED_MS = 1791560400000  # 2026-10-09T15:40:00Z


def wire(value: Any) -> Any:
    """``value`` as decoded JSON."""
    return msgspec.json.decode(msgspec.json.encode(value))


def fixed(
    time: MessageTime | None = None,
    agent_zone: str | None = None,
    answered_zone: str | None = None,
    accepted_at_ms: int = ACCEPTED_MS,
) -> TimeClock:
    """``turn_clock`` with keyword defaults."""
    return turn_clock(
        time, agent_zone=agent_zone, answered_zone=answered_zone, accepted_at_ms=accepted_at_ms
    )


class TestZone:
    """docs/time.md#the-clock-row ``zone`` / ``zoneSource``."""

    def test_message_wins(self) -> None:
        """The message's zone comes first."""
        clock = fixed(MessageTime(zone="Europe/London"), agent_zone=LA, answered_zone="UTC")
        assert (clock.zone, clock.zone_source) == ("Europe/London", "message")

    def test_agent_next(self) -> None:
        """Without a message zone, the agent's."""
        clock = fixed(MessageTime(), agent_zone=LA, answered_zone="Europe/London")
        assert (clock.zone, clock.zone_source) == (LA, "agent")

    def test_answered_next(self) -> None:
        """Case 50: with neither, the zone answered in an earlier turn."""
        clock = fixed(None, answered_zone=LA)
        assert (clock.zone, clock.zone_source) == (LA, "answered")
        assert clock.zone_known

    def test_unknown_case_50(self) -> None:
        """Case 50: no zone anywhere gives ``{zone: UTC, zoneSource: unknown}``."""
        clock = fixed(None)
        assert wire(clock_row(clock, turn=1)) == {
            "kind": "clock",
            "turn": 1,
            "iteration": 1,
            "now": "2026-10-09T15:40:00Z",
            "nowSource": "inbox",
            "zone": "UTC",
            "zoneSource": "unknown",
        }
        assert not clock.zone_known

    def test_kept_as_given(self) -> None:
        """A zone is stored exactly as provided (a link name stays a link name)."""
        assert fixed(None, agent_zone="US/Pacific").zone == "US/Pacific"

    @pytest.mark.parametrize("zone", ["PST", "utc", "EST5EDT"])
    def test_bad_agent_zone(self, zone: str) -> None:
        """A zone that is not an accepted name is refused."""
        with pytest.raises(InvalidValue):
            fixed(None, agent_zone=zone)


class TestNow:
    """docs/time.md#the-clock-row ``now`` / ``nowSource``."""

    def test_inbox(self) -> None:
        """Without ``time.now``, the inbox's ``acceptedAt`` in UTC, canonically spelled."""
        clock = fixed(None, agent_zone=LA)
        assert (clock.now, clock.now_source) == ("2026-10-09T15:40:00Z", "inbox")
        assert fixed(None, accepted_at_ms=ACCEPTED_MS + 7).now == "2026-10-09T15:40:00.007Z"

    def test_message_kept_in_its_offset(self) -> None:
        """``time.now`` is kept in its offset, spelled canonically."""
        clock = fixed(MessageTime(now="2026-10-09T08:40-07:00"), agent_zone=LA)
        assert (clock.now, clock.now_source) == ("2026-10-09T08:40:00-07:00", "message")
        assert clock.now_instant == parse_instant("2026-10-09T15:40:00Z")

    def test_accepted_at_must_be_ms(self) -> None:
        """``acceptedAt`` is integer milliseconds."""
        with pytest.raises(InvalidValue):
            fixed(None, accepted_at_ms=1.5)  # type: ignore[arg-type]


class TestWindow:
    """docs/time.md#the-clock-row ``window``."""

    def test_control_window(self) -> None:
        """``time.window`` becomes ``{from, to, source: control}`` without a mention."""
        clock = fixed(
            MessageTime(window=TimeRange(start="2026-10-09T14:00:00Z", end="2026-10-09T15:00:00Z")),
            agent_zone=LA,
        )
        assert wire(clock)["window"] == {
            "from": "2026-10-09T14:00:00Z",
            "to": "2026-10-09T15:00:00Z",
            "source": "control",
        }

    def test_only_control(self) -> None:
        """A clock's window is a control window."""
        with pytest.raises(InvalidValue):
            TimeClock(
                now="2026-10-09T15:40:00Z",
                now_source="inbox",
                zone=LA,
                zone_source="agent",
                window=PersonWindow(
                    start="2026-10-09T14:00:00Z",
                    end="2026-10-09T15:00:00Z",
                    source="answered",
                    mention=0,
                ),
            )


class TestMessageTime:
    """The message's ``time {now?, zone?, window?}``, validated strictly."""

    def test_decodes(self) -> None:
        """A full ``time`` object decodes."""
        time = message_time_from_wire(
            {
                "now": "2026-10-09T15:40:00Z",
                "zone": LA,
                "window": {"from": "2026-10-09T14:00:00Z", "to": "2026-10-09T15:00:00Z"},
            }
        )
        assert time.zone == LA
        assert time.window == TimeRange(start="2026-10-09T14:00:00Z", end="2026-10-09T15:00:00Z")

    @pytest.mark.parametrize(
        ("data", "field"),
        [
            ({"now": "2026-10-09t15:40:00z"}, "time.now"),
            ({"now": "2026-10-09T15:40:00"}, "time.now"),
            ({"now": 1791560400000}, "time.now"),
            ({"zone": "PST"}, "time.zone"),
            ({"zone": "utc"}, "time.zone"),
            (
                {"window": {"from": "2026-10-09T15:00:00Z", "to": "2026-10-09T15:00:00Z"}},
                "time.window",
            ),
            ({"window": {"from": "2026-10-09T15:00:00Z"}}, "time.window"),
            (
                {"window": {"from": "2026-10-09T14:00:00Z", "to": "2026-10-09T15:00:00Z", "x": 1}},
                "time.window.x",
            ),
            ({"timezone": LA}, "time.timezone"),
            ("now", "time"),
        ],
    )
    def test_refused(self, data: Any, field: str) -> None:
        """Non-strict instants, non-zones, backward or incomplete windows and unknown keys
        are refused, naming the field."""
        with pytest.raises(InvalidValue) as caught:
            message_time_from_wire(data)
        assert caught.value.context["field"] == field

    def test_python_construction_checks(self) -> None:
        """Building one in Python checks the same rules."""
        with pytest.raises(InvalidValue):
            MessageTime(now="2026-10-09T15:40:00+0700")


class TestClockRow:
    """The ``clock`` row and its strict decoding (docs/time.md#row-kinds, case 53)."""

    def test_round_trip(self) -> None:
        """A row decodes back to the same row and clock."""
        clock = fixed(
            MessageTime(
                now="2026-10-09T08:40:00-07:00",
                window=TimeRange(start="2026-10-09T14:00:00Z", end="2026-10-09T15:00:00Z"),
            ),
            agent_zone=LA,
        )
        row = clock_row(clock, turn=3)
        assert msgspec.json.decode(msgspec.json.encode(row), type=ClockRow) == row
        assert clock_from_wire(wire(row)) == clock
        assert list(wire(row)) == [
            "kind",
            "turn",
            "iteration",
            "now",
            "nowSource",
            "zone",
            "zoneSource",
            "window",
        ]

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"now": "2026-10-09t15:40:00z"}, "now"),
            ({"now": "2026-10-09T15:40Z"}, "now"),
            ({"zone": "PST"}, "zone"),
            ({"zoneSource": "unknown"}, "zone"),
            ({"nowSource": "clock"}, "nowSource"),
            ({"turn": 0}, "turn"),
        ],
    )
    def test_strict_case_53(self, change: dict[str, Any], field: str) -> None:
        """Case 53: a lenient or non-canonical ``now`` is rejected; so are other bad fields."""
        row = {**wire(clock_row(fixed(None, agent_zone=LA), turn=1)), **change}
        with pytest.raises(msgspec.ValidationError, match=field):
            msgspec.convert(row, ClockRow)
        with pytest.raises(InvalidValue):
            clock_from_wire(row)

    def test_unknown_key(self) -> None:
        """An unknown key is rejected."""
        row = {**wire(clock_row(fixed(None), turn=1)), "label": "x"}
        with pytest.raises(msgspec.ValidationError, match="label"):
            msgspec.convert(row, ClockRow)


@pytest.mark.parametrize(
    ("time", "field"),
    [
        ({"now": "0001-01-01T00:00:00Z"}, "time.now"),
        ({"now": "0001-01-01T23:59:59Z"}, "time.now"),
        ({"now": "9999-12-31T00:00:00Z"}, "time.now"),
        ({"now": "9999-12-31T23:59:59-12:00"}, "time.now"),
        (
            {"window": {"from": "0001-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}},
            "time.window.from",
        ),
        (
            {"window": {"from": "2026-01-01T00:00:00Z", "to": "9999-12-31T00:00:00Z"}},
            "time.window.to",
        ),
    ],
)
def test_a_message_instant_without_a_date_in_every_zone_is_refused(
    time: dict[str, Any], field: str
) -> None:
    """A message's ``now`` and window ends must lie from 0001-01-02 to 9999-12-30 (UTC): one
    that has no date in some zone is refused naming its field, where it used to pass the inbox
    and then fail every run of the agent converting it."""
    with pytest.raises(InvalidValue) as caught:
        message_time_from_wire(time)
    assert caught.value.context["field"] == field


def test_a_message_instant_at_the_edges_of_its_range_is_accepted() -> None:
    """The first and last accepted instants read and convert in the zones farthest apart; an
    instant with no date in a zone is an InvalidValue there, not an OverflowError."""
    for text in ("0001-01-02T00:00:00Z", "9999-12-30T23:59:59Z"):
        message_time_from_wire({"now": text})
        for zone in ("Pacific/Kiritimati", "Etc/GMT+12", "America/Los_Angeles"):
            to_local(parse_instant(text), zone)
    with pytest.raises(InvalidValue, match="outside the years 0001-9999 in America/Los_Angeles"):
        to_local(parse_instant("0001-01-01T00:00:00Z"), "America/Los_Angeles")
