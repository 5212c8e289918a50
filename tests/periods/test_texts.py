"""The time layer's authored texts (docs/time.md#judging-answers,
docs/time.md#recording-an-accepted-answer, docs/time.md#fill-path, docs/time.md#refused-calls,
docs/time.md#the-served-time-line; docs/time.md#how-this-is-tested case 54)."""

from __future__ import annotations

import pytest

from afp_runtime.time._facts import TIME_REFUSALS, Facts
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._texts import (
    TIME_LINE_PREFIX,
    abandoned_observation,
    filled_note,
    refusal_observation,
    time_line,
    unsettled_observation,
)
from tests.periods._build import DAY, EPOCH, LA, LOOKBACK, MORNING, NOW, TODAY, YMORN
from tests.periods.test_decide import call, decide
from tests.periods.test_windows import answered_turn


class TestRefusals:
    """Refusal observations (docs/time.md#refused-calls)."""

    @pytest.mark.parametrize("code", TIME_REFUSALS)
    def test_every_code_names_the_tool_in_the_past_tense(self, code: str) -> None:
        """Each observation names the tool and says the call was not run."""
        text = refusal_observation("client_activity", code, Facts(), argument="start")  # type: ignore[arg-type]
        assert "client_activity" in text
        assert "was not run" in text

    def test_facts_are_stated(self) -> None:
        """Retention and the maximum are stated from the declared facts."""
        kept = refusal_observation("logs", "beyond-retention", Facts(retention="12h"))
        assert "12h" in kept
        most = refusal_observation("logs", "over-max-range", Facts(max_range="30m"))
        assert "30m" in most
        assert "Shorter calls are possible" in most
        holds = refusal_observation("logs", "no-form-holds", Facts(max_range="24h"))
        assert "24h" in holds

    def test_the_window_is_never_repeated(self) -> None:
        """The refused window's own value does not appear."""
        text = refusal_observation("logs", "time-future", Facts(direction="past"))
        assert "2026" not in text
        assert "not happened yet" in text
        assert "past" in text

    def test_dst_gap_names_the_argument(self) -> None:
        """The dst-gap observation names the argument at fault."""
        text = refusal_observation("search_logs", "dst-gap", argument="start")
        assert "start" in text
        assert "never occurs" in text

    def test_multi_day_suggests_one_call_per_date(self) -> None:
        """The multi-day observation says one call per date is possible."""
        assert "One call per date" in refusal_observation("daily", "multi-day")


class TestNotes:
    """Notes for filled calls (docs/time.md#fill-path) and closed questions
    (docs/time.md#judging-answers, docs/time.md#recording-an-accepted-answer)."""

    def test_exact_fill(self) -> None:
        """An exact fill says the period came from the person's window, nothing more."""
        row = decide(answered_turn(("this morning", MORNING)), call([EPOCH])).row
        note = filled_note(row)
        assert note is not None
        assert "person's window" in note
        assert "more time" not in note

    def test_widened_fill(self) -> None:
        """A widened fill also says the tool covered more time than requested."""
        row = decide(answered_turn(("this morning", MORNING)), call([DAY])).row
        note = filled_note(row)
        assert note is not None
        assert "covered more time than was requested" in note

    def test_trimmed_fill(self) -> None:
        """A widened fill of a filtering tool says the tool leaves out the surplus."""
        the_call = call([LOOKBACK], facts=Facts(filters_to_asked=True))
        row = decide(answered_turn(("yesterday morning", YMORN)), the_call).row
        note = filled_note(row)
        assert note is not None
        assert "leaves out" in note

    def test_other_rows_have_no_note(self) -> None:
        """A row that is not filled gets no note."""
        row = decide(answered_turn(("today", TODAY)), call([LOOKBACK])).row
        assert row.how == "refused"
        assert filled_note(row) is None

    def test_unsettled_and_abandoned(self) -> None:
        """Unsettled and abandoned calls say the tool was not run, and why."""
        unsettled = unsettled_observation("client_activity")
        assert "could not be agreed" in unsettled
        assert "client_activity" in unsettled
        assert "not run" in unsettled
        abandoned = abandoned_observation("client_activity")
        assert "chose not to give a time" in abandoned
        assert "not run" in abandoned


class TestTimeLine:
    """The served time line (docs/time.md#the-served-time-line; case 54)."""

    def test_case_54_known_zone(self) -> None:
        """Case 54: weekday, date, local HH:MM, the zone and its offset, runtime-supplied."""
        line = time_line(NOW, LA)
        for part in ("Friday", "2026-10-09", "08:40", "America/Los_Angeles", "UTC-07:00"):
            assert part in line
        assert line.startswith(TIME_LINE_PREFIX)
        assert "not written by the person" in TIME_LINE_PREFIX

    def test_case_54_same_text_every_request(self) -> None:
        """The line depends only on the turn's clock, so every epoch carries the same text."""
        assert time_line(parse_instant("2026-10-09T15:40:00Z"), LA) == time_line(NOW, LA)
        assert time_line(parse_instant("2026-10-09T08:40:00-07:00"), LA) == time_line(NOW, LA)

    def test_case_54_unknown_zone(self) -> None:
        """Case 54: with an unknown zone the line gives UTC and says the zone is not known."""
        line = time_line(NOW, "UTC", zone_unknown=True)
        assert "15:40" in line
        assert "UTC" in line
        assert "zone is not known" in line
        assert "America" not in line

    def test_zero_offset_zone(self) -> None:
        """A known zone at zero offset still states its offset."""
        line = time_line(parse_instant("2026-01-09T12:00:00Z"), "Europe/London")
        assert "Friday, 2026-01-09, 12:00, Europe/London, UTC+00:00" in line
