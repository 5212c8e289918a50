"""Dispatch: the ``call`` row, drift and ``ctx.time`` (docs/time.md#dispatch;
docs/time.md#how-this-is-tested cases 38, 45, 48, 49, 50)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.time._dispatch import (
    call_row_of,
    dispatch_call,
    dispatched_at_of,
    dispatched_at_text,
    drift_of,
    tool_time,
)
from afp_runtime.time._forms import Form
from afp_runtime.time._instants import Instant, parse_instant
from afp_runtime.time._ranges import PersonWindow, TimeRange
from afp_runtime.time._rows import CallWindowRow
from afp_runtime.time._windows import turn_windows_of
from tests.periods._build import (
    EPOCH,
    LA,
    LOOKBACK,
    LOOKBACK_WINDOW,
    MS_1440,
    MS_1540,
    NOW,
    YDAY,
    ctx,
    rng,
    wire_of,
)
from tests.periods.test_decide import call, decide
from tests.periods.test_windows import answered_turn, clock, no_mentions

CLOCK = datetime(2026, 10, 9, 15, 40, tzinfo=UTC)
"""The host clock at now."""
ASKED = rng("2026-10-09T14:40:00Z", "2026-10-09T15:40:00.001Z")


def window_row(
    how: str = "filled", form: int = 0, asked: TimeRange | None = ASKED, **more: Any
) -> CallWindowRow:
    """A ``call-window`` row of call c1 (a filled one by default)."""
    fields: dict[str, Any] = {"how": how}
    if how in ("filled", "bound", "model-chosen", "model"):
        fields |= {"form": form, "asked": asked}
    if how in ("filled", "bound"):
        fields["person"] = PersonWindow.of(ASKED, "control")
    if how == "bound":
        fields["by"] = "value"
    fields |= more
    return CallWindowRow(
        turn=1, iteration=1, tool_call_id="c1", tool_name="client_activity", **fields
    )


def later(**delta: float) -> Instant:
    """The clock's reading ``delta`` after now."""
    return Instant.from_datetime(CLOCK + timedelta(**delta))


def drift(row: CallWindowRow, forms: list[Form], **delta: float) -> dict[str, Any] | None:
    """The drift of ``row`` dispatched ``delta`` after now, as (drift wire, values)."""
    found = drift_of(row, forms, ctx(), dispatched_at(later(**delta)))
    if found is None:
        return None
    return {**msgspec.to_builtins(found.drift), "values": found.values}


def dispatched_at(moment: Instant) -> Instant:
    """A clock reading as an instant."""
    return dispatched_at_of(moment)


class TestCallRow:
    """The ``call`` row (docs/time.md#the-call-row)."""

    def test_dispatched_at_is_canonical_utc_ms(self) -> None:
        """The clock reading is truncated to the millisecond and written in UTC."""
        moment = parse_instant("2026-10-09T01:50:00.123456-07:00")
        assert dispatched_at_text(moment) == "2026-10-09T08:50:00.123Z"
        assert dispatched_at_text(later()) == "2026-10-09T15:40:00Z"

    def test_call_row_without_drift(self) -> None:
        """A call dispatched at now has a call row without drift."""
        row = call_row_of(window_row(), later())
        assert wire_of(row) == {
            "kind": "call",
            "turn": 1,
            "iteration": 1,
            "toolCallId": "c1",
            "toolName": "client_activity",
            "dispatchedAt": "2026-10-09T15:40:00Z",
        }

    def test_case_45_answer_ten_minutes_later(self) -> None:
        """Case 45: answered YDAY filled in ``1960m`` and dispatched 10 min later → shifted."""
        decision = decide(answered_turn(("yesterday", YDAY)), call([LOOKBACK_WINDOW]))
        done = dispatch_call(
            decision.row, decision.arguments, [LOOKBACK_WINDOW], ctx(), later(minutes=10)
        )
        assert wire_of(done.row) == {
            "kind": "call",
            "turn": 1,
            "iteration": 1,
            "toolCallId": "c1",
            "toolName": "client_activity",
            "dispatchedAt": "2026-10-09T15:50:00Z",
            "drift": {"byMs": 600000, "outcome": "shifted"},
        }
        assert done.arguments == {"window": "1960m"}
        seen = tool_time(decision.row, zone=LA, now=NOW.text, dispatched_at=done.row.dispatched_at)
        assert msgspec.to_builtins(seen) == {
            "version": 1,
            "asked": {
                "from": "2026-10-08T00:00:00-07:00",
                "to": "2026-10-09T00:00:00-07:00",
                "edge": "exclusive",
            },
            "zone": LA,
            "now": "2026-10-09T15:40:00Z",
            "dispatchedAt": "2026-10-09T15:50:00Z",
        }


class TestDrift:
    """Drift (docs/time.md#drift; cases 48 and 49)."""

    def test_case_48_control_window_redrawn(self) -> None:
        """Case 48: a filled ``{window: "1h"}`` dispatched 30 min late is redrawn in epoch ms."""
        control = rng("2026-10-09T14:40:00Z", "2026-10-09T15:40:00Z")
        rows = [clock(window=control), no_mentions()]
        forms: list[Form] = [LOOKBACK_WINDOW, EPOCH]
        decision = decide(rows, call(forms))
        assert decision.arguments == {"window": "1h"}
        assert decision.row.form == 0
        done = dispatch_call(decision.row, decision.arguments, forms, ctx(), later(minutes=30))
        assert done.arguments == {"start_time": MS_1440, "end_time": MS_1540}
        assert wire_of(done.row)["drift"] == {
            "byMs": 1800000,
            "outcome": "redrawn",
            "form": 1,
        }
        seen = tool_time(decision.row, zone=LA, now=NOW.text, dispatched_at=done.row.dispatched_at)
        assert seen.asked is not None
        assert (seen.asked.start, seen.asked.end) == (control.start, control.end)

    def test_case_48_model_sent_lookback_is_shifted(self) -> None:
        """Case 48: the model's own ``{window: "1h"}`` runs as sent, shifted."""
        control = rng("2026-10-09T14:40:00Z", "2026-10-09T15:40:00Z")
        rows = [clock(window=control), no_mentions()]
        forms: list[Form] = [LOOKBACK_WINDOW, EPOCH]
        decision = decide(rows, call(forms, {"window": "1h"}))
        done = dispatch_call(decision.row, decision.arguments, forms, ctx(), later(minutes=30))
        assert done.arguments == {"window": "1h"}
        assert wire_of(done.row)["drift"] == {"byMs": 1800000, "outcome": "shifted"}

    def test_case_49_redrawn_values(self) -> None:
        """Case 49: +30 min → redrawn in form 1 with the asked range exactly."""
        assert drift(window_row(), [LOOKBACK, EPOCH], minutes=30) == {
            "byMs": 1800000,
            "outcome": "redrawn",
            "form": 1,
            "values": {"start_time": 1791556800000, "end_time": 1791560400001},
        }

    @pytest.mark.parametrize("seconds", [0, 30, 60, -60])
    def test_case_49_within_one_step_nothing(self, seconds: int) -> None:
        """Case 49: up to one whole step (60 s) of drift changes nothing."""
        assert drift(window_row(), [LOOKBACK, EPOCH], seconds=seconds) is None

    def test_case_49_just_over_a_step(self) -> None:
        """Case 49: +61 s → redrawn."""
        found = drift(window_row(), [LOOKBACK, EPOCH], seconds=61)
        assert found is not None
        assert (found["byMs"], found["outcome"], found["form"]) == (61000, "redrawn", 1)

    def test_case_49_no_absolute_form_shifts(self) -> None:
        """Case 49: only ``[LOOKBACK]`` → shifted."""
        assert drift(window_row(), [LOOKBACK], minutes=30) == {
            "byMs": 1800000,
            "outcome": "shifted",
            "values": {},
        }

    @pytest.mark.parametrize("how", ["bound", "model-chosen", "model"])
    def test_case_49_sent_windows_shift(self, how: str) -> None:
        """Case 49: a bound, model-chosen or model row is shifted, never redrawn."""
        found = drift(window_row(how), [LOOKBACK, EPOCH], minutes=30)
        assert found is not None
        assert found["outcome"] == "shifted"

    def test_case_49_negative_drift(self) -> None:
        """Case 49: -30 min with ``model`` → a negative shift."""
        found = drift(window_row("model"), [LOOKBACK, EPOCH], minutes=-30)
        assert found is not None
        assert (found["byMs"], found["outcome"]) == (-1800000, "shifted")

    def test_case_49_absolute_form_never_drifts(self) -> None:
        """Case 49: a row written in form 1 (epoch) does not drift."""
        assert drift(window_row(form=1), [LOOKBACK, EPOCH], minutes=30) is None

    @pytest.mark.parametrize("how", ["unread", "refused"])
    def test_case_49_unread_or_refused_nothing(self, how: str) -> None:
        """Case 49: unread and refused rows never drift."""
        more: dict[str, Any] = {"refused": "no-form-holds"} if how == "refused" else {}
        assert drift(window_row(how, **more), [LOOKBACK, EPOCH], minutes=30) is None

    def test_tool_granularity_widens_the_tolerance(self) -> None:
        """A coarser tool step tolerates more drift."""
        found = drift_of(
            window_row(),
            [LOOKBACK, EPOCH],
            ctx(step_ms=3_600_000),
            dispatched_at(later(minutes=30)),
        )
        assert found is None


class TestToolTime:
    """``ctx.time`` (docs/time.md#the-time-a-tool-sees)."""

    def test_unread_row_has_no_asked(self) -> None:
        """An unread row gives ``ctx.time`` without ``asked``."""
        seen = tool_time(window_row("unread"), zone=LA, now=NOW.text, dispatched_at=NOW.text)
        assert msgspec.to_builtins(seen) == {
            "version": 1,
            "zone": LA,
            "now": "2026-10-09T15:40:00Z",
            "dispatchedAt": "2026-10-09T15:40:00Z",
        }

    def test_case_50_unknown_zone(self) -> None:
        """Case 50: under an unknown zone ``ctx.time`` has zone UTC and ``zoneUnknown``."""
        control = rng("2026-10-09T15:00:00Z", "2026-10-09T15:30:00Z")
        rows = [clock(zone="UTC", zone_source="unknown", window=control), no_mentions()]
        windows = turn_windows_of(rows, 1)
        decision = decide(rows, call([EPOCH]), ctx(zone="UTC", agent_zone=None))
        assert decision.arguments == {"start_time": 1791558000000, "end_time": 1791559800000}
        assert windows.windows[0].zone == "UTC"
        seen = tool_time(
            decision.row,
            zone="UTC",
            now=NOW.text,
            dispatched_at=NOW.text,
            zone_unknown=True,
        )
        built = msgspec.to_builtins(seen)
        assert (built["zone"], built["zoneUnknown"]) == ("UTC", True)


@given(
    minutes=st.integers(min_value=-10_000, max_value=10_000),
    how=st.sampled_from(["filled", "bound", "model-chosen", "model"]),
    forms_index=st.integers(min_value=0, max_value=1),
)
def test_drift_never_changes_asked(minutes: int, how: str, forms_index: int) -> None:
    """Drift never changes ``asked``: ``ctx.time.asked`` is the row's, whatever the drift."""
    choices: list[list[Form]] = [[LOOKBACK, EPOCH], [LOOKBACK]]
    forms = choices[forms_index]
    row = window_row(how)
    done = dispatch_call(row, {"w": "1h"}, forms, ctx(), later(minutes=minutes))
    seen = tool_time(row, zone=LA, now=NOW.text, dispatched_at=done.row.dispatched_at)
    assert seen.asked is not None
    assert (seen.asked.start, seen.asked.end) == (ASKED.start, ASKED.end)
    if done.drift is not None and done.drift.drift.outcome == "redrawn":
        assert "w" not in done.arguments
        assert how == "filled"
        assert abs(minutes) > 1
    else:
        assert done.arguments == {"w": "1h"}
