"""The time question, answer checks and recording an answer (docs/time.md#the-time-question;
docs/time.md#how-this-is-tested cases 1, 2, 39, 41, 43, 50, 51)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import msgspec
import pytest

from afp_runtime.errors import InvalidAnswer
from afp_runtime.time import TimeConfig, validate_time_row
from afp_runtime.time._clock import clock_row, turn_clock
from afp_runtime.time._decide import CallToBind, decide_call
from afp_runtime.time._facts import Facts, tool_facts
from afp_runtime.time._forms import JoinedForm
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._question import (
    AnswerReason,
    TimeQuestion,
    check_time_answer,
    choice_label,
    time_answer_row,
    time_question,
)
from afp_runtime.time._ranges import lookback_range
from afp_runtime.time._reading_rows import read_message
from afp_runtime.time._texts import ANSWER_REASON_TEXTS
from afp_runtime.time._windows import OpenMention, turn_windows_of
from tests.periods._build import (
    EPOCH,
    LA,
    LOOKBACK,
    LOOKBACK_WINDOW,
    MORNING,
    MS_1540,
    NOW,
    YDAY,
    ctx,
    rng,
    wire_of,
)
from tests.periods.test_decide import call
from tests.periods.test_windows import answer, candidate, clock, open_turn, reading, span

ISO = JoinedForm(argument="window", as_="iso", joiner="..")


def question_for(
    rows: Sequence[object], *calls_: CallToBind, zone: str | None = LA
) -> TimeQuestion:
    """The question for the turn's first open mention and ``calls_``."""
    (mention,) = turn_windows_of(rows, 1).open
    return time_question(mention, list(calls_), ctx(zone=zone), turn=1)


class TestQuestion:
    """Question shapes (docs/time.md#question-shapes)."""

    def test_case_1_yesterday_offers_one_value(self) -> None:
        """Case 1: "yesterday" offers exactly one value, labelled in the zone."""
        question = question_for(open_turn("yesterday", YDAY), call([EPOCH]))
        assert question.format == "time-range"
        assert [c.value for c in question.choices] == [
            "2026-10-08T00:00:00-07:00/2026-10-09T00:00:00-07:00"
        ]
        assert question.choices[0].label == (
            "from Thursday, 2026-10-08, 00:00 until Friday, 2026-10-09, 00:00 (America/Los_Angeles)"
        )
        assert question.free_entry is True
        assert question.tool_call_ids == ("c1",)
        assert question.zone == LA
        assert '"yesterday"' in question.prompt

    def test_case_2_unreadable_asks_free_entry(self) -> None:
        """Case 2: an unreadable mention asks a time-range question without choices."""
        rows = [clock(), reading(0, "last week", [], unreadable=True)]
        question = question_for(rows, call([EPOCH]))
        assert (question.format, question.choices, question.free_entry) == (
            "time-range",
            (),
            True,
        )
        wire = wire_of(question)
        assert wire["kind"] == "time"
        assert wire["freeEntry"] is True
        assert wire["choices"] == []
        assert wire["quote"] == "last week"

    def test_case_39_last_two_hours(self) -> None:
        """Case 39: "last 2 hours" offers one choice, the span written in now's offset."""
        last2h = lookback_range(NOW, 7_200_000)
        rows = [clock(), reading(0, "last 2 hours", [candidate(last2h, lookback="2h")])]
        question = question_for(rows, call([EPOCH]))
        assert [c.value for c in question.choices] == [
            "2026-10-09T13:40:00Z/2026-10-09T15:40:00.001Z"
        ]

    def test_case_43_zone_question_first(self) -> None:
        """Case 43: a mention waiting for a zone asks ``format: zone`` with no choices."""
        rows = [clock(), reading(0, "8 AM to 8:40 AM PST", [], remaining=[], open_=("zone",))]
        question = question_for(rows, call([EPOCH]))
        assert (question.format, question.choices) == ("zone", ())
        assert "time zone" in question.prompt

    def test_case_43_readings_after_the_zone_answer(self) -> None:
        """Case 43: after the zone answer, the re-resolved readings are offered; a future-only
        tool is offered only the reading that has not ended."""
        readings = [
            rng("2026-10-09T08:00:00-07:00", "2026-10-09T08:41:00-07:00"),
            rng("2026-09-10T08:00:00-07:00", "2026-09-10T08:41:00-07:00"),
            rng("2010-09-26T08:00:00-07:00", "2010-09-26T08:41:00-07:00"),
        ]
        mention = turn_windows_of(open_turn("10/09/26 8 AM to 8:40 AM PST", *readings), 1).open[0]
        question = time_question(mention, [call([EPOCH])], ctx(), turn=1)
        assert [c.value for c in question.choices] == [r.interval() for r in readings]
        future = call([EPOCH], facts=Facts(direction="future"))
        only = time_question(mention, [future], ctx(), turn=1)
        assert [c.value for c in only.choices] == [readings[0].interval()]

    def test_choices_fit_every_waiting_tool(self) -> None:
        """A reading is offered only when every waiting tool accepts it."""
        rows = open_turn("yesterday or today", YDAY, MORNING)
        capped = call([LOOKBACK], facts=Facts(max_range="24h"))
        question = question_for(rows, call([EPOCH]), capped)
        assert [c.value for c in question.choices] == [MORNING.interval()]

    def test_case_50_unknown_zone_asks_where(self) -> None:
        """Case 50: an unknown clock zone asks for the zone, then offers the day in LA."""
        rows = [
            clock(zone="UTC", zone_source="unknown"),
            reading(0, "yesterday", [], remaining=[], open_=("zone",)),
        ]
        question = question_for(rows, call([EPOCH]), zone=None)
        assert question.format == "zone"
        assert question.zone is None
        mention = OpenMention(
            mention=0,
            quote="yesterday",
            readings=turn_windows_of(open_turn("yesterday", YDAY), 1).open[0].readings,
        )
        second = time_question(mention, [call([EPOCH])], ctx(zone=None), turn=1)
        assert [c.value for c in second.choices] == [
            "2026-10-08T00:00:00-07:00/2026-10-09T00:00:00-07:00"
        ]
        assert second.zone == LA

    def test_label_on_one_date(self) -> None:
        """A label within one date names it once; the times are in the reading's zone."""
        assert choice_label(MORNING.utc(), LA) == (
            "Friday, 2026-10-09, from 08:00 until 08:41 (America/Los_Angeles)"
        )


class TestAnswerCheck:
    """``check_time_answer`` (docs/time.md#judging-answers; case 51, zone LA)."""

    def reason(self, value: str, fmt: str = "time-range", **more: object) -> str | None:
        """The reason code for ``value``, or None when accepted."""
        found = check_time_answer(fmt, value, LA, **more)  # type: ignore[arg-type]
        return None if found is None else found.reason

    def test_not_a_zone(self) -> None:
        """``PST`` is not a zone name; ``America/Los_Angeles`` is."""
        assert self.reason("PST", "zone") == "not-a-zone"
        assert self.reason("America/Los_Angeles", "zone") is None

    def test_no_offset(self) -> None:
        """Ends without an offset are ``no-offset``."""
        assert self.reason("2026-10-09T08:00/2026-10-09T09:00") == "no-offset"

    def test_not_a_range(self) -> None:
        """Words are not a range; neither are three parts."""
        assert self.reason("yesterday") == "not-a-range"
        assert self.reason("a/b/c") == "not-a-range"

    def test_not_an_instant(self) -> None:
        """A part that is not an instant at all is ``not-an-instant``."""
        assert self.reason("yesterday/today") == "not-an-instant"
        assert self.reason("2026-10-09t08:00:00z/2026-10-09T09:00:00Z") == "not-an-instant"

    def test_out_of_order(self) -> None:
        """The start must come first."""
        value = "2026-10-09T09:00:00-07:00/2026-10-09T08:00:00-07:00"
        assert self.reason(value) == "out-of-order"

    @pytest.mark.parametrize(
        "value",
        [
            "0001-01-01T00:00:00Z/9999-12-31T23:59:59Z",
            "9999-12-31T00:00:00Z/9999-12-31T23:59:59.999999999Z",
            "0001-01-01T06:00:00Z/2026-10-09T08:00:00Z",
        ],
    )
    def test_a_range_without_a_date_in_every_zone_is_off_calendar(self, value: str) -> None:
        """A part before 0001-01-02 or after 9999-12-30 (UTC) is re-asked as ``off-calendar``
        (the person's zone, Los Angeles, would otherwise fail to read it), never an error."""
        assert self.reason(value) == "off-calendar"

    @pytest.mark.parametrize("first", ["2026-03-08T02:30:00-08:00", "2026-03-08T02:30:00-07:00"])
    def test_dst_gap_with_either_offset(self, first: str) -> None:
        """A skipped local time written with either offset around the change is ``dst-gap``."""
        assert self.reason(f"{first}/2026-03-08T04:00:00-07:00") == "dst-gap"

    def test_utc_instants_on_the_change_day_are_accepted(self) -> None:
        """The same day written in UTC names no skipped local time."""
        assert self.reason("2026-03-08T10:30:00Z/2026-03-08T11:00:00Z") is None

    def test_dst_gap_not_checked_without_a_zone(self) -> None:
        """With the person's zone unknown the skipped-time check is off."""
        value = "2026-03-08T02:30:00-08:00/2026-03-08T04:00:00-07:00"
        assert check_time_answer("time-range", value, None) is None

    def test_facts_of_waiting_tools(self) -> None:
        """A future range for a ``direction: past`` tool is ``time-future``."""
        value = "2026-10-10T08:00:00-07:00/2026-10-10T09:00:00-07:00"
        waiting = call([EPOCH], facts=Facts(direction="past"))
        facts = [tool_facts(waiting.forms, waiting.facts)]
        assert self.reason(value, facts=facts, now=NOW) == "time-future"
        assert self.reason(value, facts=facts[0], now=parse_instant("2026-10-11T00:00:00Z")) is None

    def test_facts_need_now(self) -> None:
        """Facts cannot be judged without the turn's ``now``."""
        with pytest.raises(ValueError):
            check_time_answer("time-range", MORNING.interval(), LA, Facts(direction="past"))

    def test_structurally_bad_values_are_errors(self) -> None:
        """A value that is not a string or is too long is a 422, not an attempt."""
        with pytest.raises(InvalidAnswer) as caught:
            check_time_answer("zone", 3)
        assert caught.value.reason == "not-a-string"
        with pytest.raises(InvalidAnswer):
            check_time_answer("zone", "x" * 4097)

    def test_every_reason_has_a_sentence(self) -> None:
        """Each reason code has its authored sentence, and a problem carries it."""
        assert set(ANSWER_REASON_TEXTS) == set(get_args(AnswerReason))
        found = check_time_answer("zone", "PST")
        assert found is not None
        assert found.sentence == ANSWER_REASON_TEXTS["not-a-zone"]


class TestRecording:
    """Recording an accepted answer (docs/time.md#recording-an-accepted-answer)."""

    def test_chosen_value_is_confirmed(self) -> None:
        """Case 39: answering with the offered choice files a confirmed answer in its zone."""
        last2h = lookback_range(NOW, 7_200_000)
        rows = [clock(), reading(0, "last 2 hours", [candidate(last2h, lookback="2h")])]
        question = question_for(rows, call([EPOCH]))
        row = time_answer_row(question, question.choices[0].value, iteration=1, typed_zone=LA)
        assert wire_of(row) == {
            "kind": "time-answer",
            "turn": 1,
            "iteration": 1,
            "mention": 0,
            "from": "2026-10-09T13:40:00Z",
            "to": "2026-10-09T15:40:00.001Z",
            "zone": LA,
            "how": "confirmed",
        }

    def test_case_41_typed_range_is_edited_and_fills(self) -> None:
        """Case 41: a typed range is ``edited``; the waiting call's second row is filled."""
        rows: list[object] = [clock(), reading(0, "yesterday morning", [], unreadable=True)]
        waiting = call([ISO])
        question = question_for(rows, waiting)
        value = "2026-10-08T06:00:00-07:00/2026-10-08T12:00:00-07:00"
        assert check_time_answer("time-range", value, LA) is None
        row = time_answer_row(question, value, iteration=1, typed_zone=LA)
        assert (row.how, row.zone, row.mention) == ("edited", LA, 0)
        second = decide_call(waiting, turn_windows_of([*rows, row], 1), ctx())
        assert second.arguments == {
            "window": "2026-10-08T06:00:00-07:00..2026-10-08T11:59:59-07:00"
        }
        found = wire_of(second.row)
        assert found["how"] == "filled"
        assert found["person"] == {
            "from": "2026-10-08T06:00:00-07:00",
            "to": "2026-10-08T12:00:00-07:00",
            "source": "answered",
            "mention": 0,
        }

    def test_typed_range_that_fits_no_form_is_refused(self) -> None:
        """A typed range a waiting tool cannot hold gives a refused second row."""
        rows: list[object] = [clock(), reading(0, "later", [], unreadable=True)]
        waiting = call([LOOKBACK])
        tomorrow = "2026-10-10T08:00:00-07:00/2026-10-10T09:00:00-07:00"
        question = question_for(rows, waiting)
        row = time_answer_row(question, tomorrow, iteration=1, typed_zone=LA)
        second = decide_call(waiting, turn_windows_of([*rows, row], 1), ctx())
        assert (second.row.how, second.row.refused) == ("refused", "no-form-holds")

    def test_confirmed_answer_fills_later_calls(self) -> None:
        """Once answered, any later call of the turn is filled without asking again."""
        rows = [clock(), reading(0, "yesterday", [candidate(YDAY)]), answer(0, YDAY)]
        later = call([EPOCH])
        decision = decide_call(later, turn_windows_of(rows, 1), ctx())
        assert decision.row.how == "filled"
        assert decision.arguments == {"start_time": 1791442800000, "end_time": 1791529200000}
        assert span(YDAY) == wire_of(decision.row)["asked"]


class TestThroughTheReadingSide:
    """Rows filed by ``read_message`` feed the windows, the decision and the question."""

    def test_case_45_yesterday_end_to_end(self) -> None:
        """Case 45: "any errors yesterday?" asks, is confirmed, and fills ``1960m``; every row
        filed on the way passes strict validation."""
        the_clock = turn_clock(None, agent_zone=LA, answered_zone=None, accepted_at_ms=MS_1540)
        filed: list[Any] = [clock_row(the_clock, turn=1)]
        filed += read_message(
            "any errors yesterday?", clock=the_clock, config=TimeConfig(zone=LA), turn=1
        )
        waiting = call([LOOKBACK_WINDOW])
        windows = turn_windows_of(filed, 1)
        first = decide_call(waiting, windows, ctx())
        assert (first.row.how, first.row.why) == ("not-filled", "open-reading")
        question = time_question(windows.open[0], [waiting], ctx(), turn=1)
        assert [c.value for c in question.choices] == [YDAY.interval()]
        assert check_time_answer("time-range", question.choices[0].value, LA) is None
        answered = time_answer_row(question, question.choices[0].value, iteration=1, typed_zone=LA)
        filed += [first.row, answered]
        second = decide_call(waiting, turn_windows_of(filed, 1), ctx())
        assert second.arguments == {"window": "1960m"}
        assert (second.row.how, second.row.form, second.row.asked) == ("filled", 0, YDAY)
        filed.append(second.row)
        for index, row in enumerate(filed):
            validate_time_row(msgspec.json.decode(msgspec.json.encode(row)), index)
