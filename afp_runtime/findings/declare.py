"""Declarations: peeling ``_findings`` off a call or an answer, and turning what the model wrote
into ledger rows (docs/findings.md#the-reserved-argument,
docs/findings.md#peeling-before-the-tool-sees-it,
docs/findings.md#what-counts-as-a-valid-declaration, docs/findings.md#basis-rows,
docs/findings.md#declarations-on-the-final-answer).

Validation is lenient: a malformed part is dropped and counted, never defaulted or repaired,
and nothing here raises on anything the model can write. The tool's own arguments are never
touched: ``peel`` returns a deep copy without ``_findings`` and leaves its input as it was.

Readings settled here:

* A missing ``basis`` counts as one malformed part: the schema marks it required
  (docs/findings.md#how-the-schema-is-served) and
  docs/findings.md#what-counts-as-a-valid-declaration counts every value that is not one of the two.
* ``sought`` that is not a boolean is omitted and counted, by the general rule of
  docs/findings.md#what-counts-as-a-valid-declaration.
* ``assertions`` that is not an array is ignored and counted once on the standing row, like
  ``previous`` on the basis row. On a ``noise`` entry ``assertions`` is not read at all
  (docs/findings.md#the-four-standings).
* An unknown key counts once wherever it sits: in the container or a dropped entry's
  container on the basis row; in a kept entry, its assertions or their subjects on the
  standing row. The inside of a dropped entry or a dropped assertion is not examined further.
* ``cut`` paths index the row's own ``assertions`` list (after drops), so each path names a
  field of the row as written.
* A number counts as valid when it is an ``int`` (not ``bool``) or a finite ``float``; a bool
  is a boolean value, never a number.
* On the answer (docs/findings.md#declarations-on-the-final-answer) only ``previous`` is read; its
  other members are ignored and not
  counted. A container that is not an object, a ``previous`` that is not an array, and each
  dropped entry count toward ``AnswerDeclaration.dropped`` (for the event only).
"""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Callable, Container, Mapping
from typing import Any, Final, Literal, TypeGuard

import msgspec

from afp_runtime.findings.limits import TEXT_CAP
from afp_runtime.findings.rows import (
    BASES,
    EXPECTS,
    ON_ANSWER,
    STANDINGS,
    AssertedValue,
    Assertion,
    BasisRow,
    DeclaredOn,
    StandingRow,
    Subject,
)
from afp_runtime.window import Standing

FINDINGS_ARG: Final = "_findings"
"""The reserved argument every served tool schema gains while armed
(docs/findings.md#the-reserved-argument)."""


class Missing(enum.Enum):
    """The type of ``MISSING``."""

    MISSING = "missing"


MISSING: Final = Missing.MISSING
"""Returned by ``peel`` / ``peel_answer`` when there was no ``_findings`` to peel."""

NameOf = Callable[[str], str | None]
"""Judged result id → its tool name, or None when it cannot be named
(docs/findings.md#standing-rows)."""

_CONTAINER_KEYS = frozenset({"basis", "expect", "proposition", "predicts", "previous"})
_ENTRY_KEYS = frozenset({"toolCallId", "standing", "sought", "assertions", "settles", "line"})
_ASSERTION_KEYS = frozenset({"subject", "predicate", "value"})
_SUBJECT_KEYS = frozenset({"kind", "id"})


class Declaration(msgspec.Struct, frozen=True, kw_only=True):
    """What one call's ``_findings`` files: its basis row and its standing rows (in entry order).

    Attributes:
        basis: the call's basis row.
        standings: one standing row per valid ``previous`` entry.
    """

    basis: BasisRow
    standings: tuple[StandingRow, ...]


class AnswerDeclaration(msgspec.Struct, frozen=True, kw_only=True):
    """What the answer's ``_findings`` files (docs/findings.md#declarations-on-the-final-answer).

    Attributes:
        standings: one standing row per valid ``previous`` entry, ``declaredOn: "answer"``.
        dropped: malformed parts that no row carries (reported on the event only).
    """

    standings: tuple[StandingRow, ...]
    dropped: int


def peel(args: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """Split a call's arguments into the tool's own and the raw ``_findings``
    (docs/findings.md#peeling-before-the-tool-sees-it).

    Returns:
        A deep copy of ``args`` without ``_findings`` (what middleware, validation and the tool
        see), and the raw ``_findings`` value, malformed or not, or ``MISSING``. ``args``
        itself is never changed.
    """
    clean = {key: copy.deepcopy(value) for key, value in args.items() if key != FINDINGS_ARG}
    return clean, args.get(FINDINGS_ARG, MISSING)


class _Cut:
    """Counts and cut paths gathered while reading one row's parts."""

    __slots__ = ("cut", "malformed")

    def __init__(self) -> None:
        self.malformed = 0
        self.cut: list[str] = []

    def text(self, value: object, path: str) -> str | None:
        """A valid string capped at ``TEXT_CAP`` code points, or None (counted) otherwise."""
        if not isinstance(value, str):
            self.malformed += 1
            return None
        return self.cap(value, path)

    def cap(self, value: str, path: str) -> str:
        """``value`` cut to ``TEXT_CAP`` code points; a cut is noted under ``path``."""
        if len(value) > TEXT_CAP:
            self.cut.append(path)
            return value[:TEXT_CAP]
        return value

    def unknown(self, obj: Mapping[Any, Any], allowed: frozenset[str]) -> None:
        self.malformed += sum(1 for key in obj if key not in allowed)

    def stamps(self) -> dict[str, Any]:
        stamps: dict[str, Any] = {}
        if self.cut:
            stamps["cut"] = tuple(self.cut)
        if self.malformed:
            stamps["malformed"] = self.malformed
        return stamps


def _is_value(value: object) -> TypeGuard[AssertedValue]:
    if isinstance(value, bool | str | int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _assertion(
    raw: object, position: int, tally: _Cut, stratum: Literal["asserted", "quoted"], judged: str
) -> Assertion | None:
    """One valid assertion (texts capped), or None when it must be dropped (not counted here)."""
    if not isinstance(raw, Mapping):
        return None
    subject = raw.get("subject")
    predicate = raw.get("predicate")
    value = raw.get("value")
    if (
        not isinstance(subject, Mapping)
        or not isinstance(subject.get("kind"), str)
        or not isinstance(subject.get("id"), str)
        or not isinstance(predicate, str)
        or not _is_value(value)
    ):
        return None
    path = f"assertions[{position}]"
    tally.unknown(raw, _ASSERTION_KEYS)
    tally.unknown(subject, _SUBJECT_KEYS)
    return Assertion(
        subject=Subject(
            kind=tally.cap(subject["kind"], f"{path}.subject.kind"),
            id=tally.cap(subject["id"], f"{path}.subject.id"),
        ),
        predicate=tally.cap(predicate, f"{path}.predicate"),
        value=tally.cap(value, f"{path}.value") if isinstance(value, str) else value,
        stratum=stratum,
        provenance=f"tool:{judged}",
    )


def _entry_is_valid(entry: object) -> bool:
    if not isinstance(entry, Mapping):
        return False
    ident = entry.get("toolCallId")
    return isinstance(ident, str) and bool(ident) and entry.get("standing") in STANDINGS


def _standing_row(
    entry: Mapping[str, Any],
    *,
    declared_on: DeclaredOn | Literal["answer"],
    turn: int,
    iteration: int,
    known_ids: Container[str],
    name_of: NameOf,
) -> StandingRow:
    """The standing row of one valid ``previous`` entry."""
    judged: str = entry["toolCallId"]
    standing: Standing = entry["standing"]
    tally = _Cut()
    tally.unknown(entry, _ENTRY_KEYS)
    fields: dict[str, Any] = {}
    if "sought" in entry:
        if isinstance(entry["sought"], bool):
            fields["sought"] = entry["sought"]
        else:
            tally.malformed += 1
    for name, owner in (("settles", "open"), ("line", "ruled-out")):
        if name not in entry:
            continue
        if standing != owner:
            tally.malformed += 1
            continue
        text = tally.text(entry[name], name)
        if text is not None:
            fields[name] = text
    assertions: list[Assertion] = []
    if standing != "noise" and "assertions" in entry:
        raw = entry["assertions"]
        if not isinstance(raw, list):
            tally.malformed += 1
        else:
            stratum: Literal["asserted", "quoted"] = "asserted" if standing == "fact" else "quoted"
            for item in raw:
                made = _assertion(item, len(assertions), tally, stratum, judged)
                if made is None:
                    tally.malformed += 1
                else:
                    assertions.append(made)
    if judged not in known_ids:
        fields["unknown_id"] = True
    elif tool := name_of(judged):
        fields["tool_name"] = tool
    return StandingRow(
        tool_call_id=judged,
        standing=standing,
        assertions=tuple(assertions),
        declared_on=declared_on,
        turn=turn,
        iteration=iteration,
        **fields,
        **tally.stamps(),
    )


def _entries(previous: object) -> tuple[list[Mapping[str, Any]], int]:
    """The valid entries of ``previous`` and how many malformed parts it had of its own."""
    if not isinstance(previous, list):
        return [], 1
    valid = [entry for entry in previous if _entry_is_valid(entry)]
    return valid, len(previous) - len(valid)


def declaration_rows(
    raw: Any,
    *,
    tool_call_id: str,
    tool_name: str,
    turn: int,
    iteration: int,
    known_ids: Container[str],
    name_of: NameOf,
) -> Declaration:
    """The rows one call's ``_findings`` files (docs/findings.md#what-counts-as-a-valid-declaration,
    docs/findings.md#basis-rows, docs/findings.md#standing-rows). Never raises on ``raw``.

    Args:
        raw: the peeled ``_findings`` value, whatever it is.
        tool_call_id: the declaring call's id.
        tool_name: the declaring call's tool.
        turn: the conversation's 1-based turn number.
        iteration: the declaring iteration.
        known_ids: the ids known at this call (docs/findings.md#known-and-unknown-ids): window tool
        results and the fold's
            ``known`` set (see ``known_ids``).
        name_of: names a judged result (see ``judged_name_of``).

    Returns:
        The basis row and, in entry order, the standing rows (declared on this call).
    """
    tally = _Cut()
    fields: dict[str, Any] = {}
    standings: list[StandingRow] = []
    if not isinstance(raw, Mapping):
        tally.malformed += 1
    else:
        tally.unknown(raw, _CONTAINER_KEYS)
        if raw.get("basis") in BASES:
            fields["basis"] = raw["basis"]
        else:
            tally.malformed += 1
        if "expect" in raw:
            if raw["expect"] in EXPECTS:
                fields["expect"] = raw["expect"]
            else:
                tally.malformed += 1
        for name in ("proposition", "predicts"):
            if name in raw:
                text = tally.text(raw[name], name)
                if text is not None:
                    fields[name] = text
        if "previous" in raw:
            entries, dropped = _entries(raw["previous"])
            tally.malformed += dropped
            declared_on = DeclaredOn(tool_call_id=tool_call_id)
            standings = [
                _standing_row(
                    entry,
                    declared_on=declared_on,
                    turn=turn,
                    iteration=iteration,
                    known_ids=known_ids,
                    name_of=name_of,
                )
                for entry in entries
            ]
    basis = BasisRow(
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        turn=turn,
        iteration=iteration,
        **fields,
        **tally.stamps(),
    )
    return Declaration(basis=basis, standings=tuple(standings))


def answer_rows(
    raw: Any,
    *,
    turn: int,
    iteration: int,
    known_ids: Container[str],
    name_of: NameOf,
) -> AnswerDeclaration:
    """The standing rows the answer's ``_findings`` files, ``declaredOn: "answer"``
    (docs/findings.md#declarations-on-the-final-answer).

    Never raises on ``raw``. Only ``previous`` is read (validated as in
    docs/findings.md#what-counts-as-a-valid-declaration); the container's other members are ignored.
    """
    if not isinstance(raw, Mapping):
        return AnswerDeclaration(standings=(), dropped=1)
    if "previous" not in raw:
        return AnswerDeclaration(standings=(), dropped=0)
    entries, dropped = _entries(raw["previous"])
    standings = tuple(
        _standing_row(
            entry,
            declared_on=ON_ANSWER,
            turn=turn,
            iteration=iteration,
            known_ids=known_ids,
            name_of=name_of,
        )
        for entry in entries
    )
    return AnswerDeclaration(standings=standings, dropped=dropped)


_JSON_SPACE = " \t\n\r"
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


def peel_answer(content: str) -> tuple[str, Any]:
    """Split a final answer into what is delivered and the raw ``_findings`` member
    (docs/findings.md#declarations-on-the-final-answer).

    Only when ``content``, trimmed of JSON whitespace, is one JSON object with a top-level
    ``_findings`` member is anything peeled: the delivered answer is then that object without
    the member, re-encoded compactly (the same JSON value; key order kept). Anything else —
    text, an array, an object without the member, invalid JSON — comes back unchanged with
    ``MISSING``. A member whose value is ``null`` is still peeled (and is not an object, so
    ``answer_rows`` counts it as dropped); this is why "nothing peeled" is ``MISSING`` and
    not ``None``.
    """
    text = content.strip(_JSON_SPACE)
    if not text.startswith("{"):
        return content, MISSING
    try:
        value = _decode(text)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return content, MISSING
    if not isinstance(value, dict) or FINDINGS_ARG not in value:
        return content, MISSING
    member = value.pop(FINDINGS_ARG)
    return _encode(value).decode("utf-8"), member
