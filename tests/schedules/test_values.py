"""The ``Schedule`` value: its checks, its strict decoder and the refusals a person can act on
(docs/schedules.md#a-schedule, docs/schedules.md#refusals, docs/schedules.md#the-every-form)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue
from afp_runtime.schedules import Schedule, check_schedule, decode_schedule, schedule


def refusal(**fields: Any) -> InvalidValue:
    base: dict[str, Any] = {"name": "s", "text": "x", "every": "day at 09:00"}
    with pytest.raises(InvalidValue) as caught:
        schedule(**(base | fields))
    return caught.value


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"every": "weekday at 25:00"}, "every", 'every: "weekday at 25:00": 25 is not an hour'),
        ({"every": "day at 9:75"}, "every", 'every: "day at 9:75": 75 is not a minute'),
        ({"every": "day at 9am"}, "every", "'9am' is not a time of day"),
        ({"every": "someday at 10:00"}, "every", "'someday' is not a day"),
        ({"every": "fortnight"}, "every", "expected 'N minutes', 'N hours'"),
        ({"every": "2 days"}, "every", "'days' needs a time of day"),
        ({"every": "0 minutes"}, "every", "not an interval from 1 minute to 168 hours"),
        ({"every": "169 hours"}, "every", "not an interval from 1 minute to 168 hours"),
        ({"every": "at 09:00"}, "every", "name the days before 'at'"),
        ({"every": "day at"}, "every", "name a time after 'at'"),
        ({"every": None, "cron": "* * *"}, "cron", 'cron: "* * *" has 3 fields, not 5'),
        ({"every": None, "cron": "@daily"}, "cron", "has 1 fields, not 5"),
        ({"every": None, "cron": "0 0 0 * * *"}, "cron", "has 6 fields, not 5"),
        ({"every": None, "cron": "61 * * * *"}, "cron", 'cron: "61 * * * *": bad minute field'),
        ({"every": None, "cron": "0 0 30 2 *"}, "cron", "bad day-of-month field"),
        ({"every": None, "at": "2026-02-30T09:00"}, "at", "no such calendar date"),
        ({"every": None, "at": "2026-12-08 09:00"}, "at", "expected YYYY-MM-DDTHH:MM[:SS]"),
        ({"every": None, "at": "2026-12-08T24:00"}, "at", "out of range"),
        ({"every": None, "at": "2026-12-08T09:00+25:00"}, "at", "offset out of range"),
        ({"zone": "PST"}, "zone", 'zone: "PST" is not a zone name'),
        ({"zone": "america/los_angeles"}, "zone", "is not a zone name"),
        ({"catch_up": "sometimes"}, "catchUp", 'catchUp: "sometimes" is not one of'),
        ({"name": "Morning"}, "name", 'name: "Morning": a name is 1-64 of a-z 0-9'),
        ({"name": "x" * 65}, "name", "a name is 1-64"),
        ({"name": "-x"}, "name", "starts with a letter or digit"),
        ({"text": ""}, "text", "not blank"),
        ({"text": " \n"}, "text", "not blank"),
        ({"text": "x" * 32_001}, "text", "32001 code points, more than 32,000"),
        ({"text": "a\ud800b"}, "text", "lone surrogate"),
        ({"every": None}, "every", "exactly one of at, cron or every; got none"),
        ({"cron": "0 9 * * *"}, "every", "exactly one of at, cron or every; got cron and every"),
    ],
)
def test_each_bad_field_is_named(fields: dict[str, Any], field: str, message: str) -> None:
    error = refusal(**fields)
    assert error.context["field"] == field
    assert message in error.message


def test_accepted_values_round_trip_through_the_wire() -> None:
    s = schedule(
        "morning.check-1",
        "Look at the overnight alerts.",
        cron="0 9 * * mon-fri",
        zone="Europe/Berlin",
        catch_up="all",
    )
    wire = msgspec.json.encode(s)
    assert msgspec.json.decode(wire) == {
        "name": "morning.check-1",
        "text": "Look at the overnight alerts.",
        "cron": "0 9 * * mon-fri",
        "zone": "Europe/Berlin",
        "catchUp": "all",
    }
    assert decode_schedule(wire) == s
    assert decode_schedule(msgspec.json.decode(wire)) == s
    assert check_schedule(s) is s
    assert msgspec.json.decode(msgspec.json.encode(schedule("a", "b", every="hour"))) == {
        "name": "a",
        "text": "b",
        "every": "hour",
    }


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (b'{"name":"a","text":"t","every":"hour","extra":1}', "extra", "unknown field"),
        ({"name": "a", "text": "t", "every": "hour", "catchUp": "x"}, "catchUp", "Invalid enum"),
        ({"name": "a", "text": "t", "every": "hour", "catch_up": "all"}, "catch_up", "unknown"),
        ({"text": "t", "every": "hour"}, "name", "missing required field"),
        ({"name": "a", "text": 5, "every": "hour"}, "text", "Expected `str`"),
        ({"name": "a", "text": "t", "every": "day at 29:00"}, "every", "29 is not an hour"),
        ({"name": "a", "text": "t", "cron": "* *"}, "cron", "has 2 fields, not 5"),
        ({"name": "a", "text": "t", "every": "hour", "zone": "Mars/Base"}, "zone", "zone name"),
        (b"[1, 2]", "schedule", "Expected `object`"),
        (b"{nope", "schedule", "not JSON"),
        ([1, 2], "schedule", "a schedule is an object"),
    ],
)
def test_the_decoder_is_strict_and_names_the_path(data: Any, field: str, message: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        decode_schedule(data)
    assert caught.value.context["field"] == field
    assert message in caught.value.message


def test_check_schedule_refuses_what_is_not_a_schedule() -> None:
    with pytest.raises(InvalidValue, match="is a Schedule"):
        check_schedule({"name": "a"})  # type: ignore[arg-type]


def test_the_constructor_and_replace_check_too() -> None:
    with pytest.raises(InvalidValue, match="cron"):
        Schedule(name="a", text="b", cron="nope")
    with pytest.raises(InvalidValue, match="zone"):
        msgspec.structs.replace(schedule("a", "b", every="hour"), zone="PST")


@given(st.text(max_size=40))
def test_no_every_text_escapes_as_another_error(text: str) -> None:
    try:
        schedule("a", "b", every=text)
    except InvalidValue as error:
        assert error.context["field"] == "every"


@given(st.text(alphabet="0123456789*/,-LW# abcdefghijklmnopqrstuvwxyz?", max_size=30))
def test_no_cron_text_escapes_as_another_error(text: str) -> None:
    try:
        schedule("a", "b", cron=text)
    except InvalidValue as error:
        assert error.context["field"] == "cron"


@given(st.text(max_size=30), st.sampled_from(["UTC", "America/Los_Angeles"]))
def test_no_at_text_escapes_as_another_error(text: str, zone: str) -> None:
    try:
        schedule("a", "b", at=text, zone=zone)
    except InvalidValue as error:
        assert error.context["field"] == "at"
