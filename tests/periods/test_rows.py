"""The time rows and their strict validation (docs/time.md#callwindowrow-fields,
docs/time.md#the-call-row, docs/time.md#row-kinds; docs/time.md#how-this-is-tested case 53)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import CheckpointInvalid, InvalidValue
from afp_runtime.records import ledger_rows_from_wire
from afp_runtime.time import validate_time_row
from afp_runtime.time._ranges import PersonWindow
from afp_runtime.time._rows import (
    CallRow,
    CallWindowRow,
    Differs,
    Drift,
    TimeAnswerRow,
    call_window_of_call,
)
from tests.periods._build import MORNING, YMORN, wire_of
from tests.periods.test_windows import answer, candidate, clock, no_mentions, reading, span

BASE = {"kind": "call-window", "turn": 1, "iteration": 1, "toolCallId": "c1", "toolName": "t"}
PERSON = {**span(MORNING), "source": "answered", "mention": 0}
FILLED = {**BASE, "how": "filled", "form": 0, "asked": span(MORNING), "person": PERSON}
CALL = {
    "kind": "call",
    "turn": 1,
    "iteration": 1,
    "toolCallId": "c1",
    "toolName": "t",
    "dispatchedAt": "2026-10-09T15:50:00Z",
}


def rejected(row: Any, index: int = 7) -> CheckpointInvalid:
    """The error strict validation raises for ``row`` at ``index``."""
    with pytest.raises(CheckpointInvalid) as caught:
        validate_time_row(row, index)
    assert caught.value.context["index"] == index
    return caught.value


def field_of(row: Any) -> str:
    """The field strict validation names for ``row``."""
    return str(rejected(row).context["field"])


class TestCase53:
    """docs/time.md#how-this-is-tested case 53: import validation."""

    def test_filled_without_person(self) -> None:
        """A filled row without ``person`` is rejected, naming ``person``."""
        row = {k: v for k, v in FILLED.items() if k != "person"}
        error = rejected(row)
        assert error.context["field"] == "person"
        assert "row 7" in str(error)

    def test_dst_gap_without_argument(self) -> None:
        """A dst-gap refusal without ``argument`` is rejected."""
        row = {**BASE, "how": "refused", "refused": "dst-gap", "form": 0}
        assert field_of(row) == "argument"

    def test_time_answer_with_label(self) -> None:
        """A time-answer with an additional ``label`` key is rejected."""
        assert field_of({**answer(0, MORNING), "label": "Friday"}) == "label"

    def test_clock_with_lenient_now(self) -> None:
        """A clock row whose ``now`` is lenient spelling is rejected: strict profile required."""
        assert field_of({**clock(), "now": "2026-10-09t15:40:00z"}) == "now"


class TestCallWindowValidation:
    """``call-window`` rows: keys per ``how``, types, strict instants."""

    def test_valid_filled_row_decodes(self) -> None:
        """A valid filled row validates to its typed struct."""
        typed = validate_time_row(FILLED, 0)
        assert isinstance(typed, CallWindowRow)
        assert typed.person == PersonWindow.of(MORNING, "answered", 0)
        assert wire_of(typed) == FILLED

    def test_key_of_another_how(self) -> None:
        """``by`` belongs to bound rows only."""
        assert field_of({**FILLED, "by": "value"}) == "by"

    def test_unknown_key(self) -> None:
        """An unknown key is named."""
        assert field_of({**FILLED, "extra": 1}) == "extra"

    def test_unknown_how(self) -> None:
        """An unknown ``how`` is named."""
        assert field_of({**BASE, "how": "guessed"}) == "how"

    def test_wrong_type(self) -> None:
        """A mistyped field is named."""
        assert field_of({**FILLED, "form": "0"}) == "form"
        assert field_of({**FILLED, "turn": True}) == "turn"

    def test_null_is_rejected(self) -> None:
        """``null`` is never a value, at any depth."""
        assert field_of({**FILLED, "person": {**PERSON, "mention": None}}) == "person.mention"

    def test_true_only_flags(self) -> None:
        """``rounded`` can only be ``true``."""
        assert field_of({**FILLED, "rounded": False}) == "rounded"

    def test_non_strict_instant_in_asked(self) -> None:
        """A lenient instant inside ``asked`` is rejected, naming it."""
        lenient = {"from": "2026-10-09t08:00:00-07:00", "to": MORNING.end}
        assert field_of({**FILLED, "asked": lenient}).startswith("asked")

    def test_person_control_with_mention(self) -> None:
        """A control person with a mention is rejected."""
        person = {**span(MORNING), "source": "control", "mention": 0}
        assert field_of({**FILLED, "person": person}).startswith("person")

    def test_sent_needs_exactly_one_companion(self) -> None:
        """``sent`` comes with exactly one of ``differs`` and ``trimmedByTool``."""
        sent = {"from": "2026-10-09T07:00:00Z", "to": "2026-10-10T07:00:00Z"}
        assert field_of({**FILLED, "sent": sent}) == "sent"
        differs = {"extra": [span(YMORN)]}
        both = {**FILLED, "sent": sent, "differs": differs, "trimmedByTool": True}
        assert field_of(both) == "sent"
        assert field_of({**FILLED, "differs": differs}) == "differs"
        assert isinstance(
            validate_time_row({**FILLED, "sent": sent, "differs": differs}, 0), CallWindowRow
        )

    def test_differs_holds_one_or_two_ranges(self) -> None:
        """``differs.extra`` holds one or two ranges."""
        sent = {"from": "2026-10-09T07:00:00Z", "to": "2026-10-10T07:00:00Z"}
        row = {**FILLED, "sent": sent, "differs": {"extra": []}}
        assert field_of(row) == "differs.extra"

    def test_refused_without_asked_has_no_form(self) -> None:
        """A non-dst-gap refusal without ``asked`` carries no ``form`` or ``person``."""
        assert field_of({**BASE, "how": "refused", "refused": "time-future", "form": 0}) == "form"
        valid = {**BASE, "how": "refused", "refused": "time-future"}
        assert isinstance(validate_time_row(valid, 0), CallWindowRow)

    def test_dst_gap_has_no_asked(self) -> None:
        """A dst-gap refusal carries no ``asked``."""
        row = {
            **BASE,
            "how": "refused",
            "refused": "dst-gap",
            "form": 0,
            "argument": "start",
            "asked": span(MORNING),
        }
        assert field_of(row) == "asked"

    def test_argument_only_on_dst_gap(self) -> None:
        """``argument`` appears only on a dst-gap refusal."""
        row = {**BASE, "how": "refused", "refused": "no-form-holds", "argument": "x"}
        assert field_of(row) == "argument"

    def test_not_filled_needs_why(self) -> None:
        """A not-filled row needs ``why``; ``assumed`` never comes with open-reading."""
        assert field_of({**BASE, "how": "not-filled"}) == "why"
        assert (
            field_of({**BASE, "how": "not-filled", "why": "open-reading", "assumed": "1h"})
            == "assumed"
        )

    def test_bound_needs_by(self) -> None:
        """A bound row needs ``by``."""
        assert field_of({**FILLED, "how": "bound"}) == "by"

    def test_model_row_has_no_person(self) -> None:
        """A ``model`` row carries no ``person``."""
        assert field_of({**FILLED, "how": "model"}) == "person"

    def test_unread_allows_nothing_more(self) -> None:
        """An unread row has only the common keys."""
        assert isinstance(validate_time_row({**BASE, "how": "unread"}, 0), CallWindowRow)
        assert field_of({**BASE, "how": "unread", "form": 0}) == "form"

    def test_python_construction_checks_the_rules(self) -> None:
        """Building a row in Python applies the same rules, naming the field."""
        with pytest.raises(InvalidValue) as caught:
            CallWindowRow(turn=1, iteration=1, tool_call_id="c", tool_name="t", how="filled")
        assert caught.value.context["field"] == "form"
        with pytest.raises(InvalidValue):
            Differs(extra=())


class TestOtherKinds:
    """``clock``, ``time-reading``, ``time-answer`` and ``call`` rows."""

    def test_valid_rows_pass(self) -> None:
        """Well-formed rows of every kind validate."""
        rows = [
            clock(window=MORNING),
            reading(0, "this morning", [candidate(MORNING)]),
            reading(0, "last week", [], unreadable=True),
            no_mentions(),
            answer(0, MORNING),
            CALL,
            {**CALL, "drift": {"byMs": 600000, "outcome": "shifted"}},
            {**CALL, "drift": {"byMs": -61000, "outcome": "redrawn", "form": 1}},
        ]
        for index, row in enumerate(rows):
            validate_time_row(row, index)

    def test_typed_results(self) -> None:
        """Answer and call rows come back typed; clock and reading rows as given."""
        assert isinstance(validate_time_row(answer(0, MORNING), 0), TimeAnswerRow)
        assert isinstance(validate_time_row(CALL, 0), CallRow)
        row = clock()
        assert validate_time_row(row, 0) is row

    def test_unknown_kind(self) -> None:
        """A kind the time layer does not file is rejected."""
        assert field_of({"kind": "basis"}) == "kind"
        assert field_of(["not", "a", "row"]) == "(row)"

    def test_clock_rules(self) -> None:
        """Clock rows: canonical ``now``, zone names, sources, control window."""
        assert field_of({**clock(), "now": "2026-10-09T15:40Z"}) == "now"
        assert field_of({**clock(), "zone": "PST"}) == "zone"
        assert field_of({**clock(), "zoneSource": "guess"}) == "zoneSource"
        assert field_of({**clock(), "zone": "America/Los_Angeles", "zoneSource": "unknown"}) == (
            "zone"
        )
        window = {**span(MORNING), "source": "answered", "mention": 0}
        assert field_of({**clock(), "window": window}) == "window.source"
        assert field_of({**clock(), "turn": 0}) == "turn"

    def test_answer_rules(self) -> None:
        """time-answer rows: ordered strict ends, a zone name, a known ``how``."""
        backwards = {**answer(0, MORNING), "from": MORNING.end, "to": MORNING.start}
        assert field_of(backwards) == "to"
        assert field_of({**answer(0, MORNING), "zone": "PST"}) == "zone"
        assert field_of({**answer(0, MORNING), "how": "typed"}) == "how"
        assert field_of({**answer(0, MORNING), "mention": -1}) == "mention"

    def test_call_rules(self) -> None:
        """call rows: canonical UTC ms and a well-formed drift."""
        assert field_of({**CALL, "dispatchedAt": "2026-10-09T08:50:00-07:00"}) == "dispatchedAt"
        assert field_of({**CALL, "dispatchedAt": "2026-10-09T15:50:00.000Z"}) == "dispatchedAt"
        assert field_of({**CALL, "drift": {"byMs": 0, "outcome": "shifted"}}) == "drift.byMs"
        redrawn = {"byMs": 1, "outcome": "redrawn"}
        assert field_of({**CALL, "drift": redrawn}) == "drift.form"
        shifted = {"byMs": 1, "outcome": "shifted", "form": 1}
        assert field_of({**CALL, "drift": shifted}) == "drift.form"
        with pytest.raises(InvalidValue):
            Drift(by_ms=0, outcome="shifted")

    def test_reading_rules(self) -> None:
        """time-reading rows are checked key for key, at every level."""
        row = reading(0, "this morning", [candidate(MORNING)])
        assert field_of({**row, "extra": 1}) == "extra"
        assert field_of({**row, "mention": 1}) == "mention"
        assert field_of({**row, "problem": "unreadable"}) == "problem"
        assert field_of({**row, "reader": {**row["reader"], "kind": "oracle"}}) == "reader.kind"
        bad = {**candidate(MORNING), "said": ["yes"]}
        assert field_of({**row, "candidates": [bad]}) == "candidates[0].said"
        lenient = {
            **candidate(MORNING),
            "range": {"from": "2026-10-09t08:00:00z", "to": MORNING.end},
        }
        assert field_of({**row, "candidates": [lenient]}).startswith("candidates[0].range")
        choice = {"by": "open", "remaining": [3], "open": ["confirm"]}
        assert field_of({**row, "choice": choice}) == "choice.remaining[0]"
        assert field_of({**row, "parses": [{"relative": {"unit": "year", "count": 1}}]}).startswith(
            "parses[0]"
        )
        refused = {**no_mentions(), "mentions": 2, "mention": 1, "refused": "malformed"}
        validate_time_row(refused, 0)
        assert field_of({**refused, "quote": "x"}) == "quote"
        assert field_of({**no_mentions(), "mention": 0}) == "mention"

    def test_refused_beyond_the_structs(self) -> None:
        """Empty names and a look-back that is not a duration are refused, naming the path."""
        assert field_of({**CALL, "toolName": ""}) == "toolName"
        assert field_of({**FILLED, "toolCallId": ""}) == "toolCallId"
        lookback = reading(0, "last 2 hours", [candidate(MORNING, lookback="2x")])
        assert field_of(lookback) == "candidates[0].window.duration"
        row = reading(0, "this morning", [candidate(MORNING)])
        assert field_of({**row, "reader": {**row["reader"], "locale": ""}}) == "reader.locale"

    def test_message_names_the_path(self) -> None:
        """The error's message names the row, its kind and the path msgspec reports."""
        error = rejected({**CALL, "drift": {"byMs": 1, "outcome": "sideways"}})
        assert error.context == {"index": 7, "kind": "call", "field": "drift.outcome"}
        assert "row 7 (kind call) is invalid at drift.outcome: " in error.message


class TestLatestRow:
    """``call_window_of_call`` (docs/time.md#callwindowrow-fields)."""

    def test_most_recent_row_of_the_call(self) -> None:
        """The most recent row of the call in the turn wins; other calls and turns do not."""
        first = {**BASE, "how": "not-filled", "why": "open-reading"}
        other_call = {**BASE, "toolCallId": "c2", "how": "unread"}
        other_turn = {**BASE, "turn": 2, "how": "unread"}
        ledger = ledger_rows_from_wire([first, FILLED, other_call, other_turn])
        found = call_window_of_call(ledger, "c1", 1)
        assert found is not None
        assert found.how == "filled"
        assert call_window_of_call(ledger, "c3", 1) is None

    def test_typed_rows_are_read(self) -> None:
        """The ledger's typed rows are read by their class; a wire map is not a row here."""
        typed = msgspec.convert(FILLED, type=CallWindowRow)
        assert call_window_of_call([typed], "c1", 1) == typed
        assert call_window_of_call([FILLED], "c1", 1) is None
