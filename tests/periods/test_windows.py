"""The turn's windows, mentions and open readings, derived from filed rows
(docs/time.md#how-mentions-become-windows).

The wire-row builders here (``clock``, ``reading``, ``answer``, ``answered_turn``) are shared by
the other time-row tests; they write ``time-reading`` rows in their wire form.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.time._ranges import PersonWindow, TimeRange, lookback_range
from afp_runtime.time._rows import TimeAnswerRow
from afp_runtime.time._windows import OpenReading, TurnWindows, turn_windows_of
from tests.periods._build import LA, MORNING, NOW, TODAY, YDAY, YMORN

# --- wire-row builders (shared) ---------------------------------------------------------------


def span(time_range: TimeRange) -> dict[str, str]:
    """A range as its wire object."""
    return {"from": time_range.start, "to": time_range.end}


def clock(
    *,
    turn: int = 1,
    zone: str = LA,
    zone_source: str = "agent",
    window: TimeRange | None = None,
    now: str = "2026-10-09T15:40:00Z",
) -> dict[str, Any]:
    """A ``clock`` row (docs/time.md#the-clock-row)."""
    row: dict[str, Any] = {
        "kind": "clock",
        "turn": turn,
        "iteration": 1,
        "now": now,
        "nowSource": "inbox",
        "zone": zone,
        "zoneSource": zone_source,
    }
    if window is not None:
        row["window"] = {**span(window), "source": "control"}
    return row


def candidate(
    time_range: TimeRange, *, zone: str = LA, lookback: str | None = None
) -> dict[str, Any]:
    """A filed candidate (docs/time.md#the-resolver) in wire form."""
    window: dict[str, Any] = {"kind": "range"}
    if lookback is not None:
        window = {"kind": "lookback", "duration": lookback}
    return {
        "window": window,
        "range": span(time_range),
        "zone": zone,
        "grain": "minute",
        "said": [],
        "implied": [],
        "anchor": "message",
        "notes": [],
        "reading": {},
        "parse": 0,
    }


def reading(
    mention: int,
    quote: str,
    candidates: list[dict[str, Any]],
    *,
    mentions: int = 1,
    remaining: list[int] | None = None,
    open_: tuple[str, ...] = ("confirm",),
    turn: int = 1,
    reader_kind: str = "rule",
    unreadable: bool = False,
) -> dict[str, Any]:
    """A ``time-reading`` row for one mention, its choice turned ``open``
    (docs/time.md#nothing-is-settled-without-the-person)."""
    row: dict[str, Any] = {
        "kind": "time-reading",
        "turn": turn,
        "iteration": 1,
        "reader": {"id": "afp/english", "version": "1.0.0", "kind": reader_kind, "locale": "en-US"},
        "tzdata": "2026f",
        "mentions": mentions,
        "mention": mention,
        "quote": quote,
        "parses": [] if unreadable else [{"relative": {"unit": "day", "offset": -1}}],
        "candidates": candidates,
    }
    if unreadable:
        row["problem"] = "unreadable"
        row["choice"] = {"by": "none", "why": "unreadable"}
    else:
        picked = list(range(len(candidates))) if remaining is None else remaining
        row["choice"] = {"by": "open", "remaining": picked, "open": list(open_)}
    return row


def no_mentions(*, turn: int = 1) -> dict[str, Any]:
    """The single ``mentions: 0`` row of a message without time words."""
    return {
        "kind": "time-reading",
        "turn": turn,
        "iteration": 1,
        "reader": {"id": "afp/english", "version": "1.0.0", "kind": "rule", "locale": "en-US"},
        "tzdata": "2026f",
        "mentions": 0,
    }


def answer(
    mention: int,
    time_range: TimeRange,
    *,
    zone: str = LA,
    how: str = "confirmed",
    turn: int = 1,
    iteration: int = 1,
) -> dict[str, Any]:
    """A ``time-answer`` row (docs/time.md#recording-an-accepted-answer)."""
    return {
        "kind": "time-answer",
        "turn": turn,
        "iteration": iteration,
        "mention": mention,
        **span(time_range),
        "zone": zone,
        "how": how,
    }


def answered_turn(*windows: tuple[str, TimeRange], lookback: str | None = None) -> list[Any]:
    """A turn whose mentions (quote, range) were each confirmed by the person."""
    rows: list[Any] = [clock()]
    for index, (quote, time_range) in enumerate(windows):
        rows.append(
            reading(index, quote, [candidate(time_range, lookback=lookback)], mentions=len(windows))
        )
    rows += [answer(index, time_range) for index, (_, time_range) in enumerate(windows)]
    return rows


def open_turn(quote: str, *ranges: TimeRange) -> list[Any]:
    """A turn with one open mention whose readings are ``ranges``."""
    return [clock(), reading(0, quote, [candidate(r) for r in ranges])]


# --- tests ------------------------------------------------------------------------------------


def test_no_mention_gives_no_window() -> None:
    """A ``mentions: 0`` row adds nothing: no window, no mention, nothing open."""
    assert turn_windows_of([clock(), no_mentions()], 1) == TurnWindows()


def test_answered_mention_is_a_window() -> None:
    """A mention with a ``time-answer`` is an answered window carrying the answer's range."""
    found = turn_windows_of(answered_turn(("this morning", MORNING)), 1)
    assert found.mentions == 1
    assert found.open == ()
    (window,) = found.windows
    assert window.range == MORNING
    assert (window.source, window.mention, window.answer, window.zone) == (
        "answered",
        0,
        "confirmed",
        LA,
    )
    assert window.person() == PersonWindow.of(MORNING, "answered", 0)


def test_answer_keeps_its_own_range_and_zone() -> None:
    """The answered window is the answer's range and zone, not the reading's."""
    rows = [
        clock(),
        reading(0, "yesterday", [candidate(YDAY)]),
        answer(0, YMORN, zone="Europe/London", how="edited"),
    ]
    (window,) = turn_windows_of(rows, 1).windows
    assert (window.range, window.zone, window.answer) == (YMORN, "Europe/London", "edited")


def test_answer_coinciding_with_span_ending_now_keeps_lookback() -> None:
    """An answered range equal to a span-ending-now candidate keeps ``lookback``."""
    last2h = lookback_range(NOW, 2 * 3_600_000)
    rows = [
        clock(),
        reading(0, "last 2 hours", [candidate(last2h, lookback="2h")]),
        answer(0, last2h),
    ]
    (window,) = turn_windows_of(rows, 1).windows
    assert window.lookback == "2h"


def test_edited_answer_is_not_a_span_ending_now() -> None:
    """An answered range that differs from the look-back candidate has no ``lookback``."""
    last2h = lookback_range(NOW, 2 * 3_600_000)
    rows = [
        clock(),
        reading(0, "last 2 hours", [candidate(last2h, lookback="2h")]),
        answer(0, MORNING, how="edited"),
    ]
    (window,) = turn_windows_of(rows, 1).windows
    assert window.lookback is None


def test_unanswered_mention_is_open_with_surviving_readings() -> None:
    """An unanswered mention is open, with the candidates named by ``remaining``."""
    rows = [clock(), reading(0, "10/09/26", [candidate(YDAY), candidate(TODAY)], remaining=[1])]
    found = turn_windows_of(rows, 1)
    assert found.windows == ()
    assert found.mentions == 1
    (mention,) = found.open
    assert (mention.mention, mention.quote) == (0, "10/09/26")
    assert mention.readings == (OpenReading(range=TODAY, zone=LA, candidate=1),)


def test_unreadable_mention_is_open_without_readings() -> None:
    """An unreadable mention is open with an empty list of readings, and still counts."""
    rows = [clock(), reading(0, "last week", [], unreadable=True)]
    found = turn_windows_of(rows, 1)
    assert found.mentions == 1
    assert found.open[0].readings == ()
    assert found.open[0].unreadable


def test_zone_question_marks_the_mention() -> None:
    """A mention whose choice has the open question ``zone`` needs a zone."""
    rows = [clock(), reading(0, "8 AM PST", [], remaining=[], open_=("zone",))]
    (mention,) = turn_windows_of(rows, 1).open
    assert mention.needs_zone
    assert mention.readings == ()


def test_model_reader_single_reading_is_derived() -> None:
    """A model-kind reader's single window pending only ``confirm`` is derived-from-reading."""
    rows = [clock(), reading(0, "this morning", [candidate(MORNING)], reader_kind="model")]
    (window,) = turn_windows_of(rows, 1).windows
    assert (window.source, window.mention) == ("derived-from-reading", 0)


def test_rule_reader_single_reading_stays_open() -> None:
    """A rule reader's single reading is never the person's: the mention stays open."""
    rows = [clock(), reading(0, "this morning", [candidate(MORNING)])]
    found = turn_windows_of(rows, 1)
    assert found.windows == ()
    assert len(found.open) == 1


def test_model_reader_with_another_open_question_stays_open() -> None:
    """A model-kind reading with a question besides ``confirm`` is not derived."""
    rows = [
        clock(),
        reading(
            0,
            "8:40",
            [candidate(MORNING), candidate(YMORN)],
            reader_kind="model",
            open_=("meridiem", "confirm"),
        ),
    ]
    assert turn_windows_of(rows, 1).windows == ()


def test_control_window_adds_a_mention() -> None:
    """A control window on the clock is one further mention, with no mention index."""
    rows = [clock(window=TODAY), reading(0, "yesterday", [candidate(YDAY)])]
    found = turn_windows_of(rows, 1)
    assert found.mentions == 2
    (window,) = found.windows
    assert (window.source, window.mention, window.zone) == ("control", None, LA)
    assert window.person() == PersonWindow.of(TODAY, "control")


def test_refused_mentions_add_nothing() -> None:
    """A refused mention counts for nothing."""
    refused = {
        "kind": "time-reading",
        "turn": 1,
        "iteration": 1,
        "reader": {"id": "m", "version": "1", "kind": "model", "locale": "en-US"},
        "tzdata": "2026f",
        "mentions": 2,
        "mention": 1,
        "refused": "quote-not-in-text",
    }
    rows = [clock(), reading(0, "yesterday", [candidate(YDAY)], mentions=2), refused]
    assert turn_windows_of(rows, 1).mentions == 1


def test_only_the_current_turn_counts() -> None:
    """A turn whose message names no time does not reuse the previous turn's window."""
    rows = [*answered_turn(("this morning", MORNING)), clock(turn=2), no_mentions(turn=2)]
    assert turn_windows_of(rows, 2) == TurnWindows()
    assert turn_windows_of(rows, turn=1).mentions == 1


def test_rows_may_be_structs() -> None:
    """Typed rows (such as a ``TimeAnswerRow``) are read through their wire form."""
    typed = msgspec.convert(answer(0, MORNING), type=TimeAnswerRow)
    rows = [clock(), reading(0, "this morning", [candidate(MORNING)]), typed]
    (window,) = turn_windows_of(rows, 1).windows
    assert window.range == MORNING


def test_latest_answer_for_a_mention_counts() -> None:
    """When a mention was answered twice, the last answer is its window."""
    rows = [
        clock(),
        reading(0, "this morning", [candidate(MORNING)]),
        answer(0, MORNING),
        answer(0, YMORN, how="edited"),
    ]
    (window,) = turn_windows_of(rows, 1).windows
    assert window.range == YMORN
