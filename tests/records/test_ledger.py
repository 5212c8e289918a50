"""Ledger rows: one registry, one decoder, the stored bytes kept
(docs/storage.md#typed-ledger-rows)."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest

import afp_runtime.agents  # noqa: F401 - imports every layer that files ledger rows
from afp_runtime.errors import InvalidValue
from afp_runtime.findings import BasisRow, StandingRow
from afp_runtime.permissions import validate_permission_row
from afp_runtime.records import (
    LEDGER_KINDS,
    PermissionRow,
    UnknownRow,
    encode_ledger_row,
    ledger_row_from_wire,
    ledger_row_kind,
    ledger_row_to_wire,
    ledger_row_types,
    register_ledger_row,
)
from afp_runtime.time._rows import CallWindowRow

TESTS = Path(__file__).resolve().parents[1]
OLD_STORES = TESTS / "store" / "data" / "main-94e2ff2"
SCENARIOS = TESTS / "scenarios"
_decode = msgspec.msgpack.Decoder().decode


def _stored_rows() -> list[bytes]:
    """Every ledger row's stored bytes (MessagePack) in the stores the untyped code wrote."""
    found: list[bytes] = []
    for packed in sorted(OLD_STORES.glob("*.sqlite.gz")):
        db = sqlite3.connect(":memory:")
        try:
            db.deserialize(gzip.decompress(packed.read_bytes()))
            found += [bytes(r[0]) for r in db.execute("SELECT row FROM ledger_rows ORDER BY idx")]
        finally:
            db.close()
    return found


def _golden_rows() -> list[dict[str, Any]]:
    """The ledger rows the golden scenarios show (findings, time and permission rows)."""
    rows: list[dict[str, Any]] = []

    def walk(value: Any, in_ledger: bool) -> None:
        if isinstance(value, dict):
            if in_ledger and isinstance(value.get("kind"), str):
                rows.append(value)
                return
            for key, item in value.items():
                walk(item, in_ledger or key in {"findingsLedger", "timeRows", "permissions"})
        elif isinstance(value, list):
            for item in value:
                walk(item, in_ledger)

    for path in SCENARIOS.glob("*.expected.json"):
        walk(json.loads(path.read_text()), False)
    return rows


STORED = _stored_rows()


def test_every_declared_kind_has_its_registered_class() -> None:
    """Once every layer is imported, the registry holds exactly the declared kinds, each class
    tagged with its kind."""
    types = ledger_row_types()
    assert set(types) == set(LEDGER_KINDS)
    for kind, row_type in types.items():
        assert row_type.__struct_config__.tag == kind
        assert row_type.__struct_config__.tag_field == "kind"


def test_every_kind_written_anywhere_is_declared() -> None:
    """The kinds of the old stores' rows and of the golden scenarios' ledgers are all declared,
    and the permission extension's rows are ``PermissionRow``."""
    stored = {_decode(raw)["kind"] for raw in STORED}
    assert {"basis", "standing", "clock", "time-reading", "call-window"} <= stored
    golden = {row["kind"] for row in _golden_rows()}
    assert {"permission", "time-answer", "call"} <= golden
    assert stored | golden <= set(LEDGER_KINDS)


def test_stored_rows_decode_typed_and_encode_to_their_bytes() -> None:
    """Each row the untyped code stored decodes to its kind's class (none unknown) and encodes
    to exactly the bytes stored; its wire map is the stored map."""
    assert len(STORED) >= 10
    for raw in STORED:
        wire = _decode(raw)
        row = ledger_row_from_wire(wire)
        assert type(row) is ledger_row_types()[wire["kind"]]
        assert ledger_row_kind(row) == wire["kind"]
        assert encode_ledger_row(row) == raw
        assert ledger_row_to_wire(row) == wire
        assert msgspec.json.encode(row) == msgspec.json.encode(wire)


def test_golden_rows_decode_typed_and_render_the_same_json() -> None:
    """Every ledger row the golden scenarios show decodes to its class and renders to the same
    JSON bytes."""
    rows = _golden_rows()
    assert len(rows) > 30
    for wire in rows:
        row = ledger_row_from_wire(wire)
        assert type(row) is ledger_row_types()[wire["kind"]]
        assert msgspec.json.encode(ledger_row_to_wire(row)) == msgspec.json.encode(wire)


def test_classes_match_their_rows() -> None:
    """Readers match on the class: a basis row is ``BasisRow``, a standing row ``StandingRow``,
    a call-window row ``CallWindowRow``."""
    by_kind = {_decode(raw)["kind"]: ledger_row_from_wire(_decode(raw)) for raw in STORED}
    assert isinstance(by_kind["basis"], BasisRow)
    assert isinstance(by_kind["standing"], StandingRow)
    assert isinstance(by_kind["call-window"], CallWindowRow)


def test_permission_row_encodes_as_the_hand_built_map() -> None:
    """The permission row's bytes are those of the map the gate used to build by hand."""
    row = PermissionRow(
        turn=1, iteration=2, tool_call_id="c1", tool_name="rm", decision="deny", rule="no-rm"
    )
    hand = {
        "kind": "permission",
        "turn": 1,
        "iteration": 2,
        "toolCallId": "c1",
        "toolName": "rm",
        "decision": "deny",
        "rule": "no-rm",
    }
    assert encode_ledger_row(row) == msgspec.msgpack.encode(hand)
    assert msgspec.json.encode(row) == msgspec.json.encode(hand)
    assert ledger_row_from_wire(hand) == row
    validate_permission_row(ledger_row_to_wire(row), 0)


def test_an_unknown_kind_reads_as_an_unknown_row_key_for_key() -> None:
    """A kind of a later build is carried, never dropped: same kind, same keys, same bytes."""
    later = {"kind": "later-kind", "turn": 3, "nested": {"b": [1, 2], "a": None}}
    row = ledger_row_from_wire(later)
    assert row == UnknownRow(kind="later-kind", fields={"turn": 3, "nested": later["nested"]})
    assert ledger_row_kind(row) == "later-kind"
    assert encode_ledger_row(row) == msgspec.msgpack.encode(later)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"kind": "basis", "toolCallId": "c1", "turn": 1, "iteration": 1}, "toolName"),
        ({"kind": "permission", "turn": "one"}, "turn"),
        (
            {
                "kind": "call",
                "turn": 1,
                "iteration": 1,
                "toolCallId": "c",
                "toolName": "t",
                "dispatchedAt": "yesterday",
            },
            "dispatchedAt",
        ),
        ({"kind": 3}, "kind"),
        (["basis"], "kind"),
    ],
)
def test_a_damaged_row_names_what_is_wrong(raw: object, field: str) -> None:
    """A row of a registered kind that does not decode into its class, or a row with no
    string kind, is an error naming the field."""
    with pytest.raises(InvalidValue) as caught:
        ledger_row_from_wire(raw)
    assert re.search(re.escape(field), caught.value.message)


def test_registering_is_checked() -> None:
    """A kind already registered to another class, an undeclared kind and an untagged class
    are refused; registering the same class again is a no-op."""

    class Impostor(msgspec.Struct, tag_field="kind", tag="basis"):
        """A second class for the basis kind."""

    class Later(msgspec.Struct, tag_field="kind", tag="later-kind"):
        """An undeclared kind."""

    with pytest.raises(ValueError, match="already registered"):
        register_ledger_row(Impostor)
    with pytest.raises(TypeError, match="tagged"):
        register_ledger_row(Later)
    with pytest.raises(TypeError, match="tagged"):
        register_ledger_row(msgspec.Struct)
    register_ledger_row(BasisRow)
    assert ledger_row_types()["basis"] is BasisRow
