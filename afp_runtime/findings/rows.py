"""The findings ledger's rows: a tagged union on ``kind`` (docs/findings.md#the-ledger,
docs/findings.md#where-the-ledger-lives).

The ledger (run-state key ``findingsLedger``) is shared with other families that file rows
(the time layer's ``clock``, ``time-reading``, ``time-answer``, ``call-window``, ``call``). The
findings family owns three kinds — ``basis``, ``standing``, ``conflict`` — and registers their
classes in the ledger's one registry (docs/storage.md#typed-ledger-rows); a row of a kind no
class is registered for is a ``ForeignRow`` (the ledger's ``UnknownRow``), key for key, so a
ledger read and written back is unchanged.

Two decoders:

* ``rows_from_wire`` is the ordinary load: the ledger's one decoder, each registered kind to
  its class, every other kind kept as a ``ForeignRow``
  (docs/architecture.md#decision-4-strict-validation-at-the-borders).
* ``validate_rows`` is the strict check of import, migration and ``afp doctor``: every row's
  kind must be a findings kind or registered with ``register_row_kind``; registered kinds are
  checked by decoding into their own struct; findings rows are checked for unknown keys, types,
  enum values and the rules between fields listed in ``_row_problem``. The first bad row raises
  ``CheckpointInvalid`` naming its index, kind and field. It returns what ``rows_from_wire``
  returns, so a valid ledger loads the same either way.

Readings settled here:

* The findings row structs forbid unknown keys on every load, ordinary ones included: stored
  data evolves through the store's schema version and migrations
  (docs/loop.md#checkpoint-validation), never by an older build reading newer rows.
* Strict validation also holds the rules this family always writes: ``turn`` and
  ``iteration`` >= 1, ``malformed`` >= 1, ``cut`` non-empty, free texts of at most 240 code
  points, ``settles`` only on ``open`` and ``line`` only on ``ruled-out``, no assertions on
  ``noise``, each assertion's ``stratum`` matching its row's standing and its ``provenance``
  equal to ``"tool:" + toolCallId``, finite numbers, a conflict with at least two witnesses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import msgspec

from afp_runtime.errors import CheckpointInvalid, decoded_path, shown
from afp_runtime.findings.limits import TEXT_CAP
from afp_runtime.records import LedgerRow as AnyLedgerRow
from afp_runtime.records import (
    LedgerRowBase,
    UnknownRow,
    ledger_row_from_wire,
    ledger_row_to_wire,
    ledger_row_types,
    ledger_rows_from_wire,
    register_ledger_row,
)
from afp_runtime.window import Standing

Basis = Literal["direct", "exploratory"]
Expect = Literal["low", "medium", "high"]
Stratum = Literal["asserted", "quoted"]

BASES: tuple[str, ...] = get_args(Basis)
EXPECTS: tuple[str, ...] = get_args(Expect)
STANDINGS: tuple[str, ...] = get_args(Standing)

AssertedValue = str | int | float | bool
"""An assertion's value: a string, a finite number or a boolean (never ``null``)."""

ConflictKey = tuple[str, str, str]
"""``(subject.kind, subject.id, predicate)``: the key two assertions conflict on
(docs/findings.md#conflicts)."""

ON_ANSWER: Literal["answer"] = "answer"
"""``declaredOn`` of a standing declared on the final answer
(docs/findings.md#declarations-on-the-final-answer)."""


class _Part(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """Base of the values rows are built from."""


class Subject(_Part, frozen=True, kw_only=True):
    """What an assertion is about: wire ``{kind, id}``."""

    kind: str
    id: str


class Assertion(_Part, frozen=True, kw_only=True):
    """One thing the model stands on, as filed on a standing row (docs/findings.md#standing-rows).

    Attributes:
        subject: the subject (kind and id, each at most 240 code points).
        predicate: the property asserted.
        value: a string, a finite number or a boolean.
        stratum: ``"asserted"`` on a fact, ``"quoted"`` on an open or ruled-out result.
        provenance: ``"tool:" + <the judged toolCallId>``.
    """

    subject: Subject
    predicate: str
    value: AssertedValue
    stratum: Stratum
    provenance: str


class DeclaredOn(_Part, frozen=True, kw_only=True):
    """The call whose arguments carried a declaration: wire ``{toolCallId}``.

    A declaration made on the final answer is the plain string ``"answer"`` instead
    (``ON_ANSWER``), so the wire shape is exactly ``{"toolCallId": …}`` or ``"answer"``.
    """

    tool_call_id: str


class WitnessRef(_Part, frozen=True, kw_only=True):
    """One current fact assertion on a conflicting key: wire ``{toolCallId, subject,
    predicate}`` (docs/findings.md#conflicts)."""

    tool_call_id: str
    subject: Subject
    predicate: str


class _Row(LedgerRowBase, frozen=True, kw_only=True):
    """Base of the findings rows: tagged on ``kind``; absent keys omitted, never ``null``."""


class BasisRow(_Row, frozen=True, kw_only=True, tag="basis"):
    """Filed when a call's arguments contain ``_findings`` (docs/findings.md#basis-rows).

    Attributes:
        tool_call_id: the declaring call (wire ``toolCallId``).
        tool_name: its tool (wire ``toolName``).
        turn: the conversation's 1-based turn number.
        iteration: the declaring iteration, >= 1.
        basis: ``direct`` or ``exploratory``, when valid.
        expect: ``low``, ``medium`` or ``high``, when valid.
        proposition: the claim the call tests (<= 240 code points), when valid.
        predicts: the result that would support it (<= 240 code points), when valid.
        cut: wire paths of the texts that were cut, when any was.
        malformed: how many parts were dropped, when any was (>= 1).
    """

    tool_call_id: str
    tool_name: str
    turn: int
    iteration: int
    basis: Basis | msgspec.UnsetType = msgspec.UNSET
    expect: Expect | msgspec.UnsetType = msgspec.UNSET
    proposition: str | msgspec.UnsetType = msgspec.UNSET
    predicts: str | msgspec.UnsetType = msgspec.UNSET
    cut: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    malformed: int | msgspec.UnsetType = msgspec.UNSET


class StandingRow(_Row, frozen=True, kw_only=True, tag="standing"):
    """One valid ``previous`` entry: the model's standing on an earlier result
    (docs/findings.md#standing-rows).

    Attributes:
        tool_call_id: the judged result, exactly as written (wire ``toolCallId``).
        tool_name: the judged result's tool, when it can be named (wire ``toolName``).
        standing: ``fact``, ``open``, ``noise`` or ``ruled-out``.
        sought: whether that result was what its call looked for, when given.
        settles: what would decide an ``open`` result, when given.
        line: what a ``ruled-out`` result ruled out, when given.
        assertions: what the model stands on (``()`` for noise); always written.
        declared_on: ``DeclaredOn(tool_call_id=…)`` or ``"answer"`` (wire ``declaredOn``).
        turn: the declaring turn.
        iteration: the declaring iteration.
        unknown_id: ``True`` when the id was not known at the declaring call (wire
            ``unknownId``; docs/findings.md#known-and-unknown-ids).
        cut: wire paths of the texts that were cut, when any was.
        malformed: how many parts were dropped, when any was (>= 1).
    """

    tool_call_id: str
    tool_name: str | msgspec.UnsetType = msgspec.UNSET
    standing: Standing
    sought: bool | msgspec.UnsetType = msgspec.UNSET
    settles: str | msgspec.UnsetType = msgspec.UNSET
    line: str | msgspec.UnsetType = msgspec.UNSET
    assertions: tuple[Assertion, ...]
    declared_on: DeclaredOn | Literal["answer"]
    turn: int
    iteration: int
    unknown_id: Literal[True] | msgspec.UnsetType = msgspec.UNSET
    cut: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    malformed: int | msgspec.UnsetType = msgspec.UNSET


class ConflictRow(_Row, frozen=True, kw_only=True, tag="conflict"):
    """Filed right after the standing row that made a key newly conflicting
    (docs/findings.md#conflicts).

    Attributes:
        key: ``[subject.kind, subject.id, predicate]``.
        witnesses: the current fact assertions on that key, in ledger order.
        turn: the turn of the standing row that made the key conflict.
        iteration: its iteration.
    """

    key: ConflictKey
    witnesses: tuple[WitnessRef, ...]
    turn: int
    iteration: int


ForeignRow = UnknownRow
"""A row of a kind another family owns (or of no registered kind), carried key for key and
ignored by the fold: the ledger's ``UnknownRow`` (docs/storage.md#typed-ledger-rows)."""


FindingsRow = BasisRow | StandingRow | ConflictRow
LedgerRow = AnyLedgerRow
"""A decoded ledger row: a findings row, another layer's registered row or a ``ForeignRow``."""

_OWN_KINDS: dict[str, type[msgspec.Struct]] = {
    str(row_type.__struct_config__.tag): row_type for row_type in get_args(FindingsRow)
}
FINDINGS_KINDS: frozenset[str] = frozenset(_OWN_KINDS)

for _row_type in _OWN_KINDS.values():
    register_ledger_row(_row_type)


def register_row_kind(kind: str, struct_type: type[msgspec.Struct]) -> None:
    """Register a row kind another family files in the ledger: in the ledger's one registry
    (docs/storage.md#typed-ledger-rows), so ordinary loads type it and ``validate_rows`` checks
    rows of that kind by decoding them into it. Registering the same pair again is a no-op.

    Raises:
        ValueError: ``kind`` is a findings kind, or already registered to another type.
        TypeError: ``struct_type`` is not a Struct tagged on ``kind`` with that tag, or
            ``kind`` is not a declared ledger kind.
    """
    config = getattr(struct_type, "__struct_config__", None)
    if config is None or config.tag != kind:
        raise TypeError(
            f"row kind {kind!r} needs a msgspec.Struct tagged on 'kind' with tag {kind!r}, "
            f"not {struct_type!r}"
        )
    if kind in _OWN_KINDS and _OWN_KINDS[kind] is not struct_type:
        raise ValueError(f"row kind {kind!r} belongs to the findings family")
    register_ledger_row(struct_type)


def registered_row_kinds() -> frozenset[str]:
    """Every kind strict validation accepts: the findings kinds and the registered ones."""
    return frozenset(ledger_row_types())


# --- wire form ----------------------------------------------------------------------------------


def row_to_wire(row: LedgerRow) -> dict[str, Any]:
    """One row as its committed JSON object (camelCase keys, absent keys omitted)."""
    return ledger_row_to_wire(row)


def rows_to_wire(rows: Iterable[LedgerRow]) -> list[dict[str, Any]]:
    """The ledger as its committed JSON list, oldest first."""
    return [ledger_row_to_wire(row) for row in rows]


def _kind_of(raw: object) -> object:
    return raw.get("kind") if isinstance(raw, Mapping) else None


def row_from_wire(raw: Mapping[str, Any]) -> LedgerRow:
    """Decode one committed row with the ledger's one decoder: a registered kind to its
    class, any other kind to a ``ForeignRow`` keeping every key.

    Raises:
        InvalidValue: a row of a registered kind is mistyped, or the row has no string kind.
    """
    return ledger_row_from_wire(raw)


def rows_from_wire(raw: Iterable[Mapping[str, Any]]) -> tuple[LedgerRow, ...]:
    """Decode the committed ledger (ordinary load; see the module docstring)."""
    return ledger_rows_from_wire(raw)


# --- strict validation --------------------------------------------------------------------------


def _field_of(error: msgspec.ValidationError) -> tuple[str, str]:
    """The wire path and the message of a msgspec validation error."""
    path, detail = decoded_path(error)
    return path or "(row)", detail


def _invalid(index: int, kind: object, field: str, detail: str) -> CheckpointInvalid:
    shown_kind = kind if isinstance(kind, str) else shown(kind)
    return CheckpointInvalid(
        f"findingsLedger row {index} (kind {shown_kind}) is invalid at {field}: {detail}",
        index=index,
        kind=shown_kind,
        field=field,
    )


def _text_problem(*texts: tuple[str, object]) -> tuple[str, str] | None:
    """The first ``(path, value)`` whose value is a string longer than ``TEXT_CAP``."""
    for path, value in texts:
        if isinstance(value, str) and len(value) > TEXT_CAP:
            return path, f"longer than {TEXT_CAP} code points"
    return None


def _assertion_problem(path: str, assertion: Assertion, row: StandingRow) -> tuple[str, str] | None:
    value = assertion.value
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}.value", "not a finite number"
    problem = _text_problem(
        (f"{path}.subject.kind", assertion.subject.kind),
        (f"{path}.subject.id", assertion.subject.id),
        (f"{path}.predicate", assertion.predicate),
        (f"{path}.value", value),
    )
    if problem:
        return problem
    stratum = "asserted" if row.standing == "fact" else "quoted"
    if assertion.stratum != stratum:
        return f"{path}.stratum", f"must be {stratum!r} on a {row.standing} row"
    if assertion.provenance != f"tool:{row.tool_call_id}":
        return f"{path}.provenance", f"must be 'tool:{row.tool_call_id}'"
    return None


def _row_problem(row: FindingsRow) -> tuple[str, str] | None:
    """The first rule a typed findings row breaks, as (wire path, what is wrong)."""
    if row.turn < 1:
        return "turn", "must be >= 1"
    if row.iteration < 1:
        return "iteration", "must be >= 1"
    if isinstance(row, ConflictRow):
        if len(row.witnesses) < 2:
            return "witnesses", "a conflict needs at least two witnesses"
        return None
    if isinstance(row.malformed, int) and row.malformed < 1:
        return "malformed", "must be >= 1 when present"
    if isinstance(row.cut, tuple) and not row.cut:
        return "cut", "must not be empty when present"
    if isinstance(row, BasisRow):
        return _text_problem(("proposition", row.proposition), ("predicts", row.predicts))
    if row.settles is not msgspec.UNSET and row.standing != "open":
        return "settles", "only an open row carries settles"
    if row.line is not msgspec.UNSET and row.standing != "ruled-out":
        return "line", "only a ruled-out row carries line"
    problem = _text_problem(("settles", row.settles), ("line", row.line))
    if problem:
        return problem
    if row.standing == "noise" and row.assertions:
        return "assertions", "a noise row carries no assertions"
    for position, assertion in enumerate(row.assertions):
        problem = _assertion_problem(f"assertions[{position}]", assertion, row)
        if problem:
            return problem
    return None


def validate_rows(
    raw: object, *, checked_elsewhere: Callable[[int, Mapping[str, Any]], bool] | None = None
) -> tuple[LedgerRow, ...]:
    """Strictly validate a committed ledger (import, migration, ``afp doctor``;
    docs/findings.md#where-the-ledger-lives).

    Args:
        raw: the decoded JSON value of ``findingsLedger``.
        checked_elsewhere: called with a row's index and the row first; when it returns True
            the row was validated by its own family (the time rows, docs/time.md#row-kinds) and is
            kept as a foreign row.

    Returns:
        The rows as ``rows_from_wire`` decodes them.

    Raises:
        CheckpointInvalid: the value is not a list, or a row is invalid: the error names the
            row's index, its kind and the field (a wire path such as ``standing`` or
            ``assertions[0].value``). Nothing is dropped or repaired.
    """
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise CheckpointInvalid(
            f"findingsLedger must be a list of rows, not {shown(raw)}", field="findingsLedger"
        )
    rows: list[LedgerRow] = []
    for index, item in enumerate(raw):
        kind = _kind_of(item)
        if not isinstance(item, Mapping):
            raise _invalid(index, kind, "(row)", f"a row must be a JSON object, not {shown(item)}")
        if not isinstance(kind, str):
            raise _invalid(index, kind, "kind", "a row needs a string kind")
        if checked_elsewhere is not None and checked_elsewhere(index, item):
            rows.append(ledger_row_from_wire(item))
            continue
        struct_type = ledger_row_types().get(kind)
        if struct_type is None:
            raise _invalid(index, kind, "kind", "no family registered this kind")
        try:
            typed = msgspec.convert(item, type=struct_type)
        except msgspec.ValidationError as exc:
            field, detail = _field_of(exc)
            raise _invalid(index, kind, field, detail) from exc
        if isinstance(typed, BasisRow | StandingRow | ConflictRow):
            problem = _row_problem(typed)
            if problem:
                raise _invalid(index, kind, *problem)
        rows.append(typed)
    return tuple(rows)
