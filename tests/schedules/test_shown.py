"""How the doors show a due instant: wall time in the schedule's zone on the time layer's zone
database, UTC beside it (docs/schedules.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.schedules import due_text


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_a_due_instant_reads_in_its_zone_on_both_sides_of_a_clock_change() -> None:
    assert due_text(_ms("2026-10-23T07:00"), "Europe/Berlin") == (
        "2026-10-23 09:00 Europe/Berlin (2026-10-23 07:00 UTC)"
    )
    assert due_text(_ms("2026-10-26T08:00"), "Europe/Berlin") == (
        "2026-10-26 09:00 Europe/Berlin (2026-10-26 08:00 UTC)"
    )


def test_a_utc_schedule_shows_one_time() -> None:
    assert due_text(_ms("2026-12-08T09:00"), "UTC") == "2026-12-08 09:00 UTC"


def test_a_name_the_time_layer_refuses_is_refused_here_too() -> None:
    with pytest.raises(InvalidValue):
        due_text(0, "EST5EDT")
