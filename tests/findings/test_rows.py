"""Ledger rows: wire shapes, foreign rows and strict validation (docs/findings.md#the-ledger,
docs/findings.md#where-the-ledger-lives)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import CheckpointInvalid, InvalidValue
from afp_runtime.findings import (
    BasisRow,
    ConflictRow,
    DeclaredOn,
    ForeignRow,
    StandingRow,
    Subject,
    WitnessRef,
    register_row_kind,
    rows_from_wire,
    rows_to_wire,
    validate_rows,
)
from afp_runtime.findings.rows import FINDINGS_KINDS, ON_ANSWER, registered_row_kinds
from afp_runtime.time._rows import TimeAnswerRow
from tests.findings._build import claim, standing, wire

TIME_ANSWER: dict[str, Any] = {
    "kind": "time-answer",
    "turn": 1,
    "iteration": 2,
    "mention": 0,
    "from": "2026-01-01T00:00:00+01:00",
    "to": "2026-01-02T00:00:00+01:00",
    "zone": "Europe/Paris",
    "how": "confirmed",
}
# A kind no layer registers (a later build's): carried as a ForeignRow.
LATER_ROW: dict[str, Any] = {
    "kind": "later-kind",
    "turn": 1,
    "iteration": 1,
    "toolCallId": "c1",
    "toolName": "probe",
    "how": "filled",
    "asked": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"},
}

BASIS: dict[str, Any] = {
    "kind": "basis",
    "toolCallId": "c1",
    "toolName": "probe",
    "turn": 1,
    "iteration": 1,
    "basis": "direct",
}
STANDING: dict[str, Any] = {
    "kind": "standing",
    "toolCallId": "c1",
    "toolName": "probe",
    "standing": "fact",
    "assertions": [
        {
            "subject": {"kind": "host", "id": "db-1"},
            "predicate": "status",
            "value": "down",
            "stratum": "asserted",
            "provenance": "tool:c1",
        }
    ],
    "declaredOn": {"toolCallId": "c2"},
    "turn": 1,
    "iteration": 2,
}


class TestWireShapes:
    """Rows encode to the documented camelCase shapes, absent keys omitted."""

    def test_basis_row_omits_absent_keys(self) -> None:
        """A basis row with only identity fields writes only those keys (never null)."""
        row = BasisRow(tool_call_id="c1", tool_name="probe", turn=1, iteration=1)
        assert wire(row) == {
            "kind": "basis",
            "toolCallId": "c1",
            "toolName": "probe",
            "turn": 1,
            "iteration": 1,
        }

    def test_standing_row_declared_on_a_call(self) -> None:
        """declaredOn of a call is exactly {toolCallId}; assertions are always written."""
        row = standing("c1", "noise", by="c2")
        assert wire(row) == {
            "kind": "standing",
            "toolCallId": "c1",
            "standing": "noise",
            "assertions": [],
            "declaredOn": {"toolCallId": "c2"},
            "turn": 1,
            "iteration": 1,
        }

    def test_standing_row_declared_on_the_answer(self) -> None:
        """declaredOn of the answer is exactly the string "answer"."""
        row = StandingRow(
            tool_call_id="c1",
            standing="fact",
            assertions=(),
            declared_on=ON_ANSWER,
            turn=2,
            iteration=3,
            unknown_id=True,
        )
        data = wire(row)
        assert data["declaredOn"] == "answer"
        assert data["unknownId"] is True

    def test_conflict_row_key_is_an_array(self) -> None:
        """A conflict row's key is the JSON array [kind, id, predicate]."""
        subject = Subject(kind="host", id="db-1")
        row = ConflictRow(
            key=("host", "db-1", "status"),
            witnesses=(
                WitnessRef(tool_call_id="c1", subject=subject, predicate="status"),
                WitnessRef(tool_call_id="c4", subject=subject, predicate="status"),
            ),
            turn=1,
            iteration=3,
        )
        assert wire(row) == {
            "kind": "conflict",
            "key": ["host", "db-1", "status"],
            "witnesses": [
                {
                    "toolCallId": "c1",
                    "subject": {"kind": "host", "id": "db-1"},
                    "predicate": "status",
                },
                {
                    "toolCallId": "c4",
                    "subject": {"kind": "host", "id": "db-1"},
                    "predicate": "status",
                },
            ],
            "turn": 1,
            "iteration": 3,
        }

    def test_assertion_fields(self) -> None:
        """An assertion carries subject, predicate, value, stratum and provenance, nothing else."""
        assert set(wire(claim("host", "db-1", "up", True, on="c9"))) == {
            "subject",
            "predicate",
            "value",
            "stratum",
            "provenance",
        }


class TestRoundTrip:
    """Ordinary loads keep every row, including foreign ones, key for key."""

    def test_mixed_ledger_round_trips(self) -> None:
        """rows_to_wire(rows_from_wire(x)) == x for findings, registered and foreign rows."""
        ledger = [BASIS, LATER_ROW, STANDING, TIME_ANSWER]
        rows = rows_from_wire(copy.deepcopy(ledger))
        assert [type(r) for r in rows] == [BasisRow, ForeignRow, StandingRow, TimeAnswerRow]
        assert rows_to_wire(rows) == ledger

    def test_foreign_row_keeps_kind_and_fields(self) -> None:
        """A foreign row keeps its kind and every other key, nested values included."""
        (row,) = rows_from_wire([LATER_ROW])
        assert isinstance(row, ForeignRow)
        assert row.kind == "later-kind"
        assert row.fields["asked"] == LATER_ROW["asked"]

    def test_declared_on_decodes_both_shapes(self) -> None:
        """declaredOn decodes to DeclaredOn for a call and to "answer" for the answer."""
        answer = {**STANDING, "declaredOn": "answer"}
        first, second = rows_from_wire([STANDING, answer])
        assert isinstance(first, StandingRow) and isinstance(second, StandingRow)
        assert first.declared_on == DeclaredOn(tool_call_id="c2")
        assert second.declared_on == "answer"

    def test_row_without_kind_is_refused(self) -> None:
        """A row with no string kind cannot be loaded."""
        with pytest.raises(InvalidValue):
            rows_from_wire([{"turn": 1}])


def _invalid(ledger: list[Any]) -> CheckpointInvalid:
    with pytest.raises(CheckpointInvalid) as caught:
        validate_rows(ledger)
    return caught.value


class TestValidateRows:
    """Strict validation for import, migration and doctor."""

    def test_valid_ledger_loads_like_an_ordinary_load(self) -> None:
        """A valid mixed ledger validates to what rows_from_wire gives."""
        ledger = [BASIS, STANDING, TIME_ANSWER]
        assert validate_rows(ledger) == rows_from_wire(ledger)

    def test_case_20_bad_standing_names_index_kind_and_field(self) -> None:
        """Case 20 (pure part): standing "maybe" names row index, kind standing, field standing."""
        error = _invalid([BASIS, {**STANDING, "standing": "maybe"}])
        assert error.context == {"index": 1, "kind": "standing", "field": "standing"}
        assert "row 1" in str(error)

    @pytest.mark.parametrize(
        ("row", "field"),
        [
            ({**BASIS, "extra": 1}, "extra"),
            ({**BASIS, "basis": "sure"}, "basis"),
            ({**BASIS, "turn": True}, "turn"),
            ({**BASIS, "turn": 0}, "turn"),
            ({**BASIS, "malformed": 0}, "malformed"),
            ({**BASIS, "cut": []}, "cut"),
            ({**BASIS, "proposition": "p" * 241}, "proposition"),
            ({k: v for k, v in BASIS.items() if k != "toolName"}, "toolName"),
            ({**BASIS, "basis": None}, "basis"),
            ({**STANDING, "settles": "x"}, "settles"),
            ({**STANDING, "standing": "open", "line": "x"}, "line"),
            ({**STANDING, "unknownId": False}, "unknownId"),
            ({**STANDING, "declaredOn": "call"}, "declaredOn"),
            ({**STANDING, "declaredOn": {"toolCallId": "c2", "x": 1}}, "declaredOn.x"),
            ({**STANDING, "standing": "noise"}, "assertions"),
        ],
    )
    def test_bad_findings_rows_name_the_field(self, row: dict[str, Any], field: str) -> None:
        """Unknown keys, bad types, bad enums and broken rules name the field at fault."""
        error = _invalid([row])
        assert error.context["index"] == 0
        assert error.context["kind"] == row["kind"]
        assert error.context["field"] == field

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"stratum": "quoted"}, "assertions[0].stratum"),
            ({"provenance": "tool:c9"}, "assertions[0].provenance"),
            ({"value": None}, "assertions[0].value"),
            ({"value": float("nan")}, "assertions[0].value"),
            ({"subject": {"kind": "host"}}, "assertions[0].subject.id"),
            ({"label": "x"}, "assertions[0].label"),
        ],
    )
    def test_bad_assertions_name_the_path(self, change: dict[str, Any], field: str) -> None:
        """An assertion that breaks a rule is named by its wire path inside the row."""
        (assertion,) = STANDING["assertions"]
        row = {**STANDING, "assertions": [{**assertion, **change}]}
        assert _invalid([BASIS, row]).context == {
            "index": 1,
            "kind": "standing",
            "field": field,
        }

    def test_conflict_needs_two_witnesses(self) -> None:
        """A conflict row with a single witness is refused at witnesses."""
        witness = {"toolCallId": "c1", "subject": {"kind": "h", "id": "1"}, "predicate": "p"}
        row = {"kind": "conflict", "key": ["h", "1", "p"], "witnesses": [witness], "turn": 1}
        assert _invalid([{**row, "iteration": 1}]).context["field"] == "witnesses"

    def test_unregistered_kind_is_refused(self) -> None:
        """A kind no family registered is refused at kind."""
        error = _invalid([LATER_ROW])
        assert error.context == {"index": 0, "kind": "later-kind", "field": "kind"}

    def test_registered_kind_is_checked_by_its_struct(self) -> None:
        """A registered kind's rows are decoded by their own struct; an extra key is refused."""
        error = _invalid([BASIS, {**TIME_ANSWER, "label": "x"}])
        assert error.context == {"index": 1, "kind": "time-answer", "field": "label"}

    @pytest.mark.parametrize(
        ("ledger", "field"),
        [([{"turn": 1}], "kind"), (["basis"], "(row)"), ([{"kind": 3}], "kind")],
    )
    def test_shapeless_rows_are_refused(self, ledger: list[Any], field: str) -> None:
        """A row that is not an object, or has no string kind, is refused naming it."""
        assert _invalid(ledger).context["field"] == field

    def test_ledger_must_be_a_list(self) -> None:
        """A ledger that is not a list is refused."""
        with pytest.raises(CheckpointInvalid):
            validate_rows({"kind": "basis"})

    def test_input_is_not_changed(self) -> None:
        """Validation never changes the rows it reads, valid or not."""
        ledger = [BASIS, {**STANDING, "standing": "maybe"}]
        before = copy.deepcopy(ledger)
        with pytest.raises(CheckpointInvalid):
            validate_rows(ledger)
        assert ledger == before


class TestRegistry:
    """Row kinds other families file are registered for strict validation."""

    def test_findings_registers_its_three_kinds(self) -> None:
        """basis, standing and conflict are always registered."""
        assert {"basis", "standing", "conflict"} == FINDINGS_KINDS
        assert FINDINGS_KINDS | {"time-answer"} <= registered_row_kinds()

    def test_registering_again_is_a_no_op(self) -> None:
        """Registering the same kind with the same struct twice is accepted."""
        register_row_kind("time-answer", TimeAnswerRow)
        assert "time-answer" in registered_row_kinds()

    def test_findings_kinds_cannot_be_taken(self) -> None:
        """Another family cannot register a findings kind."""

        class Impostor(msgspec.Struct, tag_field="kind", tag="basis"):
            """A struct claiming the basis kind."""

        with pytest.raises(ValueError, match="findings"):
            register_row_kind("basis", Impostor)

    def test_kind_taken_by_another_type_is_refused(self) -> None:
        """A kind registered to one struct cannot be registered to another."""

        class Other(msgspec.Struct, tag_field="kind", tag="time-answer"):
            """A second struct for the time-answer kind."""

        with pytest.raises(ValueError, match="already registered"):
            register_row_kind("time-answer", Other)

    def test_struct_must_be_tagged_on_kind(self) -> None:
        """A struct not tagged on kind with the registered tag is refused."""

        class Untagged(msgspec.Struct):
            """No tag at all."""

        with pytest.raises(TypeError, match="tagged"):
            register_row_kind("clock", Untagged)
