"""The pure half of ``scheduleWakeup`` (docs/schedules.md#the-schedulewakeup-tool): a model's
arguments become a once schedule in the agent's zone, or a refusal naming the argument."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue
from afp_runtime.schedules import WAKEUP_TOOL, next_due, wakeup_schedule

LA = "America/Los_Angeles"
NOW = int(datetime.fromisoformat("2026-03-06T10:17:30.500-08:00").timestamp() * 1000)


def due_of(arguments: dict[str, Any], *, taken: set[str] | None = None) -> tuple[str, str]:
    s = wakeup_schedule(arguments, now_ms=NOW, zone=LA, taken=taken or set())
    due = next_due(s, after_ms=NOW, anchor_ms=NOW)
    assert due is not None
    assert s.at is not None and s.catch_up == "latest" and s.zone == LA
    return s.name, datetime.fromtimestamp(due / 1000).astimezone().isoformat()


def local(text: str) -> str:
    return datetime.fromisoformat(text).astimezone().isoformat()


class TestAccepted:
    def test_days_keep_the_time_of_day_across_the_clock_change(self) -> None:
        name, due = due_of({"in": "3 days", "text": "Ask Ana about the invoice."})
        assert due == local("2026-03-09T10:17:30-07:00")
        assert name == "wakeup-20260309-1017"

    def test_hours_are_real_time(self) -> None:
        assert due_of({"in": "2 hours", "text": "x"})[1] == local("2026-03-06T12:17:30-08:00")
        assert due_of({"in": "90 Minutes", "text": "x"})[1] == local("2026-03-06T11:47:30-08:00")
        assert due_of({"in": "an hour", "text": "x"})[1] == local("2026-03-06T11:17:30-08:00")

    def test_at_is_read_in_the_agent_zone(self) -> None:
        name, due = due_of({"at": "2026-12-08T09:00", "text": "x", "name": "dentist"})
        assert (name, due) == ("dentist", local("2026-12-08T09:00:00-08:00"))

    def test_a_made_name_steps_past_taken_ones(self) -> None:
        taken = {"wakeup-20260313-1017", "wakeup-20260313-1017-2"}
        assert due_of({"in": "a week", "text": "x"}, taken=taken)[0] == "wakeup-20260313-1017-3"

    def test_the_schema_names_the_arguments(self) -> None:
        assert WAKEUP_TOOL.name == "scheduleWakeup"
        schema = WAKEUP_TOOL.input_schema
        assert set(schema["properties"]) == {"in", "at", "text", "name"}
        assert schema["required"] == ["text"]
        assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"in": "3 fortnights", "text": "x"}, "in", "expected a whole number and a unit"),
        ({"in": "0 days", "text": "x"}, "in", "not at least one minute ahead"),
        ({"in": "400 days", "text": "x"}, "in", "more than a year ahead"),
        ({"in": 5, "text": "x"}, "in", "expected a whole number"),
        ({"at": "2020-01-01T09:00", "text": "x"}, "at", "is not in the future (it is now"),
        ({"at": "2028-01-01T09:00", "text": "x"}, "at", "more than a year ahead"),
        ({"at": "tomorrow", "text": "x"}, "at", "expected YYYY-MM-DDTHH:MM"),
        ({"at": 7, "text": "x"}, "at", "is not a string"),
        ({"text": "x"}, "at", "give exactly one"),
        ({"in": "1 day", "at": "2026-12-08T09:00", "text": "x"}, "in", "give exactly one"),
        ({"in": "1 day"}, "text", "text: missing"),
        ({"in": "1 day", "text": ""}, "text", "not blank"),
        ({"in": "1 day", "text": "x", "name": "Bad Name"}, "name", "a name is 1-64"),
        ({"in": "1 day", "text": "x", "when": "now"}, "when", "unknown when"),
    ],
)
def test_refusals_name_the_argument(arguments: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        wakeup_schedule(arguments, now_ms=NOW, zone=LA)
    assert caught.value.context["field"] == field
    assert message in caught.value.message


@given(
    st.dictionaries(
        st.sampled_from(["in", "at", "text", "name", "x"]),
        st.one_of(st.text(max_size=20), st.integers(), st.none()),
        max_size=4,
    )
)
def test_no_arguments_escape_as_another_error(arguments: dict[str, Any]) -> None:
    try:
        s = wakeup_schedule(arguments, now_ms=NOW, zone=LA)
    except InvalidValue:
        return
    due = next_due(s, after_ms=NOW, anchor_ms=NOW)
    assert due is not None and due > NOW
