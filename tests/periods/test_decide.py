"""Deciding each call's period (docs/time.md#deciding-each-call), with the exact values of
docs/time.md#how-this-is-tested cases 24 to 37, 45 (the row part) and 47."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue
from afp_runtime.time._convert import PeriodContext
from afp_runtime.time._decide import (
    CallDecision,
    CallToBind,
    decide_call,
    points_at,
)
from afp_runtime.time._declare import Assume, MissingRule
from afp_runtime.time._dispatch import tool_time
from afp_runtime.time._facts import Facts
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    Form,
    JoinedForm,
    LookbackForm,
    ZoneArgument,
)
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._ranges import TimeRange, lookback_range
from afp_runtime.time._readback import read_back
from afp_runtime.time._windows import turn_windows_of
from tests.periods._build import (
    DAY,
    EPOCH,
    LA,
    LOOKBACK,
    LOOKBACK_WINDOW,
    MORNING,
    MS_1340,
    MS_1500,
    MS_1540,
    MS_1541,
    NOW,
    TODAY,
    TOMORROW,
    WALL,
    YDAY,
    YMORN,
    ctx,
    rng,
    wire_of,
)
from tests.periods.test_windows import (
    answer,
    answered_turn,
    candidate,
    clock,
    no_mentions,
    open_turn,
    reading,
    span,
)

MS_YMORN_START = 1791471600000  # 2026-10-08T15:00:00Z
MS_YMORN_END = 1791474060000  # 2026-10-08T15:41:00Z
COMMON = {"kind": "call-window", "turn": 1, "iteration": 1, "toolCallId": "c1"}


def call(
    forms: list[Form],
    args: dict[str, Any] | None = None,
    *,
    facts: Facts | None = None,
    missing: MissingRule = "as-sent",
    name: str = "client_activity",
) -> CallToBind:
    """A call ``c1`` of turn 1, iteration 1."""
    return CallToBind(
        tool_call_id="c1",
        tool_name=name,
        turn=1,
        iteration=1,
        args=args or {},
        forms=tuple(forms),
        facts=facts or Facts(),
        missing=missing,
    )


def decide(
    rows: list[Any], the_call: CallToBind, context: PeriodContext | None = None
) -> CallDecision:
    """The decision of ``the_call`` in the turn of ``rows``."""
    return decide_call(the_call, turn_windows_of(rows, 1), context or ctx())


def wire(rows: list[Any], the_call: CallToBind) -> dict[str, Any]:
    """The wire row of ``the_call``'s decision."""
    return wire_of(decide(rows, the_call).row)


def person(
    time_range: TimeRange, mention: int | None = 0, source: str = "answered"
) -> dict[str, Any]:
    """A row's ``person`` in wire form."""
    found: dict[str, Any] = {**span(time_range), "source": source}
    if mention is not None:
        found["mention"] = mention
    return found


TWO = answered_turn(("this morning", MORNING), ("yesterday morning", YMORN))
NONE = [clock(), no_mentions()]
YMORN_SENT = {"start_time": MS_YMORN_START, "end_time": MS_YMORN_END}
ISO_WINDOW = JoinedForm(argument="window", as_="iso", joiner="..")


class TestFill:
    """The fill path (docs/time.md#fill-path)."""

    def test_case_24_answered_morning_is_filled(self) -> None:
        """Case 24: an answered MORNING fills an epoch tool, written exactly."""
        decision = decide(answered_turn(("this morning", MORNING)), call([EPOCH]))
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "filled",
            "form": 0,
            "asked": span(MORNING),
            "person": person(MORNING),
        }
        assert decision.arguments == {"start_time": MS_1500, "end_time": MS_1541}

    def test_case_25_no_mention_is_not_filled(self) -> None:
        """Case 25: no mention → not-filled / no-window, arguments unchanged."""
        decision = decide(NONE, call([EPOCH]))
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "not-filled",
            "why": "no-window",
        }
        assert decision.arguments == {}

    def test_case_25_two_mentions_are_not_filled(self) -> None:
        """Case 25: two answered mentions → not-filled / several-mentions."""
        assert wire(TWO, call([EPOCH]))["why"] == "several-mentions"

    def test_case_25_assume_writes_a_span(self) -> None:
        """Case 25: ``assume("1h")`` with no mention writes ``{w: "1h"}``; the row says so and
        ``ctx.time`` has no asked."""
        decision = decide(NONE, call([LOOKBACK], missing=Assume(length="1h")))
        assert decision.arguments == {"w": "1h"}
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "not-filled",
            "why": "no-window",
            "assumed": "1h",
        }
        seen = tool_time(decision.row, zone=LA, now=NOW.text, dispatched_at=NOW.text)
        assert seen.asked is None

    def test_assume_applies_to_several_mentions(self) -> None:
        """The missing-period rule is consulted for several-mentions too."""
        decision = decide(TWO, call([EPOCH], missing=Assume(length="1h")))
        assert decision.row.assumed == "1h"
        assert decision.arguments == {"start_time": MS_1540 - 3_600_000, "end_time": MS_1540}

    def test_assume_never_replaces_an_open_reading(self) -> None:
        """An open mention asks the person even when the tool would assume a span."""
        rows = open_turn("last 2 hours", lookback_range(NOW, 7_200_000))
        decision = decide(rows, call([LOOKBACK], missing=Assume(length="1h")))
        assert (decision.row.how, decision.row.why, decision.row.assumed) == (
            "not-filled",
            "open-reading",
            None,
        )
        assert decision.asks
        assert decision.arguments == {}

    def test_case_30_tomorrow_with_lookback_is_refused(self) -> None:
        """Case 30: answered TOMORROW and a look-back-only tool → no-form-holds."""
        found = wire(answered_turn(("tomorrow 8 to 8:40", TOMORROW)), call([LOOKBACK]))
        assert found == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "no-form-holds",
            "asked": span(TOMORROW),
            "person": person(TOMORROW),
        }

    def test_case_31_answered_future_is_refused_without_form(self) -> None:
        """Case 31: answered TOMORROW, ``direction: past`` → time-future without ``form``."""
        decision = decide(
            answered_turn(("tomorrow", TOMORROW)), call([EPOCH], facts=Facts(direction="past"))
        )
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "time-future",
            "asked": span(TOMORROW),
            "person": person(TOMORROW),
        }

    def test_case_33_answered_window_partly_beyond_retention(self) -> None:
        """Case 33: an answered window reaching past retention is filled and marked."""
        old = rng("2026-09-08T15:40:00Z", "2026-09-10T15:40:00Z")
        row = decide(answered_turn(("then", old)), call([EPOCH], facts=Facts(retention="30d"))).row
        assert (row.how, row.partly_beyond_retention) == ("filled", True)

    def test_case_34_two_dates_with_day_is_multi_day(self) -> None:
        """Case 34: YMORN through MORNING with ``[DAY]`` → multi-day, asked that range."""
        both = rng(YMORN.start, MORNING.end)
        found = wire(answered_turn(("since yesterday", both)), call([DAY]))
        assert found["how"] == "refused"
        assert found["refused"] == "multi-day"
        assert found["asked"] == span(both)

    def test_case_34_morning_with_day_is_widened(self) -> None:
        """Case 34: MORNING with ``[DAY]`` → filled with the date, sent and differs of case 20."""
        decision = decide(answered_turn(("this morning", MORNING)), call([DAY]))
        assert decision.arguments == {"date": "2026-10-09", "tz": LA}
        found = wire_of(decision.row)
        assert found["sent"] == {"from": "2026-10-09T07:00:00Z", "to": "2026-10-10T07:00:00Z"}
        assert found["differs"] == {
            "extra": [
                {"from": "2026-10-09T07:00:00Z", "to": "2026-10-09T15:00:00Z"},
                {"from": "2026-10-09T15:41:00Z", "to": "2026-10-10T07:00:00Z"},
            ]
        }

    def test_case_35_ymorn_with_lookback_is_widened(self) -> None:
        """Case 35: YMORN with ``[LOOKBACK]`` → ``1480m``, sent and differs."""
        decision = decide(answered_turn(("yesterday morning", YMORN)), call([LOOKBACK]))
        assert decision.arguments == {"w": "1480m"}
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "filled",
            "form": 0,
            "asked": span(YMORN),
            "person": person(YMORN),
            "sent": {"from": "2026-10-08T15:00:00Z", "to": "2026-10-09T15:40:00.001Z"},
            "differs": {
                "extra": [{"from": "2026-10-08T15:41:00Z", "to": "2026-10-09T15:40:00.001Z"}]
            },
        }

    def test_case_35_filtering_tool_is_trimmed(self) -> None:
        """Case 35: with ``filtersToAsked`` the row has ``trimmedByTool`` and no differs."""
        found = wire(
            answered_turn(("yesterday morning", YMORN)),
            call([LOOKBACK], facts=Facts(filters_to_asked=True)),
        )
        assert found["trimmedByTool"] is True
        assert "differs" not in found
        assert "sent" in found

    def test_case_35_epoch_is_exact(self) -> None:
        """Case 35: with ``[EPOCH]`` the window is written exactly, no ``sent``."""
        found = wire(answered_turn(("yesterday morning", YMORN)), call([EPOCH]))
        assert found["how"] == "filled"
        assert "sent" not in found

    def test_case_45_yesterday_with_lookback_window(self) -> None:
        """Case 45: answered YDAY to ``[LOOKBACK "window"]`` → ``1960m`` and the row of
        docs/time.md#how-this-is-tested."""
        decision = decide(answered_turn(("yesterday", YDAY)), call([LOOKBACK_WINDOW]))
        assert decision.arguments == {"window": "1960m"}
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "filled",
            "form": 0,
            "asked": span(YDAY),
            "person": person(YDAY),
            "sent": {"from": "2026-10-08T07:00:00Z", "to": "2026-10-09T15:40:00.001Z"},
            "differs": {
                "extra": [{"from": "2026-10-09T07:00:00Z", "to": "2026-10-09T15:40:00.001Z"}]
            },
        }

    def test_case_47_control_today_with_lookback_is_refused(self) -> None:
        """Case 47: a control window TODAY and a look-back-only tool → no-form-holds."""
        found = wire([clock(window=TODAY), no_mentions()], call([LOOKBACK_WINDOW]))
        assert found == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "no-form-holds",
            "asked": span(TODAY),
            "person": person(TODAY, None, "control"),
        }

    def test_case_38_control_window_iso_range(self) -> None:
        """Case 38: a control window written into ``iso-range`` with inclusive seconds."""
        control = rng("2026-10-09T14:00:00Z", "2026-10-09T15:00:00Z")
        iso = JoinedForm(argument="window", as_="iso", joiner="..")
        decision = decide([clock(window=control), no_mentions()], call([iso]))
        assert decision.arguments == {"window": "2026-10-09T14:00:00Z..2026-10-09T14:59:59Z"}
        assert wire_of(decision.row)["person"] == person(control, None, "control")

    def test_case_39_confirmed_span_ending_now(self) -> None:
        """Case 39: a confirmed "last 2 hours" is written as ``[now - 2h, now)`` in epoch ms,
        and as ``2h`` (never the assumed ``1h``) to a look-back tool."""
        last2h = lookback_range(NOW, 7_200_000)
        rows = [
            clock(),
            reading(0, "last 2 hours", [candidate(last2h, lookback="2h")]),
            answer(0, last2h),
        ]
        assert decide(rows, call([EPOCH])).arguments == {
            "start_time": MS_1340,
            "end_time": MS_1540,
        }
        lookback = call([LOOKBACK], missing=Assume(length="1h"))
        assert decide(rows, lookback).arguments == {"w": "2h"}

    def test_case_40_iso_range_with_signed_lookback(self) -> None:
        """Case 40: at 16:00Z a confirmed "last 2 hours" and a control window are written in
        ``iso-range`` (the first form), inclusive to the second."""
        later = parse_instant("2026-10-09T16:00:00Z")
        forms: list[Form] = [ISO_WINDOW, LookbackForm(argument="window", signed=True)]
        last2h = lookback_range(later, 7_200_000)
        rows = [
            clock(now="2026-10-09T16:00:00Z"),
            reading(0, "last 2 hours", [candidate(last2h, lookback="2h")]),
            answer(0, last2h),
        ]
        assert decide(rows, call(forms), ctx(later)).arguments == {
            "window": "2026-10-09T14:00:00Z..2026-10-09T15:59:59Z"
        }
        control = rng("2026-10-09T08:00:00-07:00", "2026-10-09T08:40:00-07:00")
        rows = [clock(now="2026-10-09T16:00:00Z", window=control), no_mentions()]
        assert decide(rows, call(forms), ctx(later)).arguments == {
            "window": "2026-10-09T08:00:00-07:00..2026-10-09T08:39:59-07:00"
        }

    def test_case_42_typed_hour_to_lookback_with_seconds(self) -> None:
        """Case 42: a typed hour ending at now (16:00Z) gives a look-back tool ``1h``."""
        later = parse_instant("2026-10-09T16:00:00Z")
        typed = rng("2026-10-09T08:00:00-07:00", "2026-10-09T09:00:00-07:00")
        rows = [
            clock(now="2026-10-09T16:00:00Z"),
            reading(0, "since 8 AM", [], unreadable=True),
            answer(0, typed, how="edited"),
        ]
        seconds = LookbackForm(argument="window", units="smhdw")
        assert decide(rows, call([seconds]), ctx(later)).arguments == {"window": "1h"}

    def test_a_tool_without_forms_is_not_decided(self) -> None:
        """A tool whose period has no forms gets no decision."""
        with pytest.raises(InvalidValue):
            decide(NONE, call([]))


class TestOpen:
    """A single open mention (docs/time.md#fill-path step 4, case 37)."""

    def test_case_37_every_reading_rejected_is_refused(self) -> None:
        """Case 37: readings YDAY and TODAY, ``maxRange: 24h`` → refused, nothing else."""
        rows = open_turn("yesterday or today", YDAY, TODAY)
        decision = decide(rows, call([LOOKBACK], facts=Facts(max_range="24h")))
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "no-form-holds",
        }
        assert not decision.asks

    def test_case_37_a_usable_reading_asks(self) -> None:
        """Case 37: without ``maxRange`` → not-filled / open-reading."""
        decision = decide(open_turn("yesterday or today", YDAY, TODAY), call([LOOKBACK]))
        assert (decision.row.how, decision.row.why) == ("not-filled", "open-reading")
        assert decision.asks

    def test_case_37_reading_still_running_for_future_tool(self) -> None:
        """Case 37: MORNING ends after now, so a ``direction: future`` tool still asks."""
        the_call = call([LOOKBACK], facts=Facts(direction="future"))
        assert decide(open_turn("this morning", MORNING), the_call).row.why == "open-reading"

    def test_case_37_past_reading_for_future_tool(self) -> None:
        """Case 37: open YMORN with ``direction: future`` → refused time-past."""
        the_call = call([LOOKBACK], facts=Facts(direction="future"))
        row = decide(open_turn("yesterday morning", YMORN), the_call).row
        assert (row.how, row.refused, row.asked, row.form, row.person) == (
            "refused",
            "time-past",
            None,
            None,
            None,
        )

    def test_case_44_only_reading_in_the_future(self) -> None:
        """Case 44: the only reading lies in the future of a ``direction: past`` tool."""
        oct20 = rng("2026-10-20T00:00:00-07:00", "2026-10-21T00:00:00-07:00")
        the_call = call([EPOCH], facts=Facts(direction="past"))
        row = decide(open_turn("10/20/26", oct20), the_call).row
        assert wire_of(row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "time-future",
        }

    def test_unreadable_mention_asks(self) -> None:
        """An unreadable mention (no readings) asks the person."""
        rows = [clock(), reading(0, "last week", [], unreadable=True)]
        assert decide(rows, call([EPOCH])).asks


class TestSent:
    """The sent-window path (docs/time.md#sent-window-path)."""

    def test_case_26_quote_binds(self) -> None:
        """Case 26: YMORN sent with the quote "yesterday morning" → bound by quote, mention 1;
        ``_timeQuote`` never reaches the tool."""
        args = {**YMORN_SENT, "_timeQuote": "yesterday morning"}
        decision = decide(TWO, call([EPOCH], args))
        row = decision.row
        assert (row.how, row.by, row.person and row.person.mention) == ("bound", "quote", 1)
        assert decision.arguments == YMORN_SENT

    def test_case_26_value_binds(self) -> None:
        """Case 26: YMORN sent without a quote → bound by value, mention 1."""
        row = decide(TWO, call([EPOCH], dict(YMORN_SENT))).row
        assert (row.how, row.by, row.person and row.person.mention) == ("bound", "value", 1)

    def test_case_26_quote_pointing_elsewhere_is_model_chosen(self) -> None:
        """Case 26: the quote "this morning" with YMORN values → model-chosen, mention 0."""
        args = {**YMORN_SENT, "_timeQuote": "This   MORNING "}
        row = decide(TWO, call([EPOCH], args)).row
        assert (row.how, row.person and row.person.mention) == ("model-chosen", 0)
        assert row.by is None

    def test_case_27_other_window_with_one_mention(self) -> None:
        """Case 27: one answered window and another window sent → model-chosen with person."""
        args = {"start_time": 1791561600000, "end_time": 1791565200000}
        row = decide(answered_turn(("this morning", MORNING)), call([EPOCH], args)).row
        assert (row.how, row.person and row.person.mention) == ("model-chosen", 0)

    def test_case_27_other_window_with_two_mentions(self) -> None:
        """Case 27: with two windows and no quote → model-chosen without person."""
        args = {"start_time": 1791561600000, "end_time": 1791565200000}
        assert wire(TWO, call([EPOCH], args)) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "model-chosen",
            "form": 0,
            "asked": {"from": "2026-10-09T16:00:00Z", "to": "2026-10-09T17:00:00Z"},
        }

    def test_case_27_no_window_is_model(self) -> None:
        """Case 27: with no window at all → model."""
        args = {"start_time": 1791561600000, "end_time": 1791565200000}
        assert wire(NONE, call([EPOCH], args)) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "model",
            "form": 0,
            "asked": {"from": "2026-10-09T16:00:00Z", "to": "2026-10-09T17:00:00Z"},
        }

    def test_case_28_lone_bound_is_unread(self) -> None:
        """Case 28: a window exists and only ``start_time`` is sent → unread, run as sent."""
        decision = decide(
            answered_turn(("this morning", MORNING)), call([EPOCH], {"start_time": 1})
        )
        assert wire_of(decision.row) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "unread",
        }
        assert decision.arguments == {"start_time": 1}

    def test_zone_argument_alone_prevents_filling(self) -> None:
        """A zone argument sent alone takes the sent-window path and is unread."""
        row = decide(answered_turn(("today", TODAY)), call([DAY], {"tz": LA})).row
        assert row.how == "unread"

    def test_case_29_span_ending_now_binds_by_value(self) -> None:
        """Case 29: "last 40 minutes" sent as epoch bounds ``[now - L, now)`` or as ``40m``."""
        last40 = lookback_range(NOW, 2_400_000)
        rows = [
            clock(),
            reading(0, "last 40 minutes", [candidate(last40, lookback="40m")]),
            answer(0, last40),
        ]
        epoch = decide(rows, call([EPOCH], {"start_time": MS_1500, "end_time": MS_1540})).row
        assert (epoch.how, epoch.by) == ("bound", "value")
        short = decide(rows, call([LOOKBACK], {"w": "40m"})).row
        assert (short.how, short.by) == ("bound", "value")

    def test_case_31_model_sends_the_future(self) -> None:
        """Case 31: the model sends TOMORROW with no window to a past tool → refused with form."""
        args = {"start_time": 1791644400000, "end_time": 1791646860000}
        past = call([EPOCH], args, facts=Facts(direction="past"))
        assert wire(NONE, past) == {
            **COMMON,
            "toolName": "client_activity",
            "how": "refused",
            "refused": "time-future",
            "form": 0,
            "asked": {"from": "2026-10-10T15:00:00Z", "to": "2026-10-10T15:41:00Z"},
        }
        assert wire(NONE, call([EPOCH], args))["how"] == "model"

    def test_case_32_model_ymorn_against_facts(self) -> None:
        """Case 32: YMORN sent with no window: time-past, beyond-retention, over-max-range."""
        for facts, code in (
            (Facts(direction="future"), "time-past"),
            (Facts(retention="12h"), "beyond-retention"),
            (Facts(max_range="30m"), "over-max-range"),
        ):
            row = decide(NONE, call([EPOCH], dict(YMORN_SENT), facts=facts)).row
            assert (row.how, row.refused, row.form) == ("refused", code, 0)

    def test_refused_sent_window_keeps_person(self) -> None:
        """A refused model choice keeps the person identified for it."""
        row = decide(
            answered_turn(("yesterday morning", YMORN)),
            call([EPOCH], dict(YMORN_SENT), facts=Facts(direction="future")),
        ).row
        assert (row.how, row.refused, row.person and row.person.mention) == (
            "refused",
            "time-past",
            0,
        )

    def test_per_form_cap_judges_the_sent_form(self) -> None:
        """A sent window is judged by its form's own cap (``form_facts``)."""
        capped = BoundsForm(
            start=Bound(argument="start_time", as_="epoch-ms"),
            end=Bound(argument="end_time", as_="epoch-ms", edge="exclusive"),
            max_range="30m",
        )
        row = decide(NONE, call([capped, LOOKBACK], dict(YMORN_SENT))).row
        assert (row.how, row.refused) == ("refused", "over-max-range")

    def test_case_33_model_partly_beyond_retention(self) -> None:
        """Case 33: now - 31 d to now - 29 d with ``retention: 30d`` → model, marked, runs."""
        args = {"start_time": 1788882000000, "end_time": 1789054800000}
        decision = decide(NONE, call([EPOCH], args, facts=Facts(retention="30d")))
        found = wire_of(decision.row)
        assert (found["how"], found["form"], found["partlyBeyondRetention"]) == ("model", 0, True)

    def test_case_36_skipped_local_time_is_refused(self) -> None:
        """Case 36: a wall time the zone skips → dst-gap naming the argument ``start``."""
        args = {"start": "2026-03-08T02:30", "end": "2026-03-08T04:00", "tz": LA}
        assert wire(NONE, call([WALL], args, name="search_logs")) == {
            "kind": "call-window",
            "turn": 1,
            "iteration": 1,
            "toolCallId": "c1",
            "toolName": "search_logs",
            "how": "refused",
            "refused": "dst-gap",
            "form": 0,
            "argument": "start",
        }

    def test_case_36_repeated_local_time_is_unread(self) -> None:
        """Case 36: a repeated local hour is not a gap: unread."""
        args = {"start": "2026-11-01T01:30", "end": "2026-11-01T03:00", "tz": LA}
        assert wire(NONE, call([WALL], args, name="search_logs"))["how"] == "unread"

    def test_dst_gap_in_a_joined_form_names_its_argument(self) -> None:
        """A joined wall form with a skipped half names the joined argument."""
        joined = JoinedForm(argument="w", as_="wall", joiner="..", zone=ZoneArgument(argument="tz"))
        args = {"w": "2026-03-08T01:00..2026-03-08T02:30", "tz": LA}
        row = decide(NONE, call([joined], args)).row
        assert (row.refused, row.argument) == ("dst-gap", "w")


class TestPointing:
    """The declared quote (docs/time.md#sent-window-path step 4)."""

    def test_normalized_containment(self) -> None:
        """Quotes are compared lower-cased, whitespace collapsed, one containing the other."""
        assert points_at("Yesterday   Morning", "yesterday morning")
        assert points_at("morning", "yesterday morning")
        assert points_at("any errors yesterday morning?", "yesterday morning")
        assert not points_at("this morning", "yesterday morning")

    def test_empty_quotes_never_point(self) -> None:
        """An empty or blank quote points at nothing."""
        assert not points_at("   ", "yesterday")
        assert not points_at(None, "yesterday")
        assert not points_at("yesterday", None)


@given(
    start_min=st.integers(min_value=-60 * 24 * 20, max_value=60 * 24 * 20),
    length_min=st.integers(min_value=1, max_value=60 * 24 * 3),
    form_index=st.integers(min_value=0, max_value=3),
)
def test_filled_values_read_back_cover_the_asked_range(
    start_min: int, length_min: int, form_index: int
) -> None:
    """A filled call's written values, read back, cover the person's window."""
    start = parse_instant("2026-10-09T15:40:00Z").plus(start_min * 60_000_000_000)
    asked = TimeRange.of(start, start.plus(length_min * 60_000_000_000))
    choices: list[list[Form]] = [[EPOCH], [LOOKBACK], [DAY], [LOOKBACK, DAY]]
    forms = choices[form_index]
    decision = decide(answered_turn(("then", asked)), call(forms))
    if decision.row.how != "filled":
        assert decision.row.how == "refused"
        return
    found = read_back(decision.arguments, forms, ctx())
    assert found is not None
    (read_from, read_to), (asked_from, asked_to) = found.range.bounds(), asked.bounds()
    assert read_from <= asked_from and asked_to <= read_to
    if decision.row.sent is not None:
        assert found.range == decision.row.sent
