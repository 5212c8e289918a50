"""Builders for the findings tests: standing rows, folds from ``{id: standing}`` ledgers, and
the ``probe`` tool of docs/findings.md#how-this-is-tested."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.findings import (
    Assertion,
    DeclaredOn,
    LedgerFold,
    StandingRow,
    Subject,
    fold_ledger,
)
from afp_runtime.window import Standing

PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"host": {"type": "string"}},
    "required": ["host"],
}


def claim(
    kind: str, ident: str, predicate: str, value: Any, *, on: str, standing: Standing = "fact"
) -> Assertion:
    """An assertion as a standing row on result ``on`` files it."""
    return Assertion(
        subject=Subject(kind=kind, id=ident),
        predicate=predicate,
        value=value,
        stratum="asserted" if standing == "fact" else "quoted",
        provenance=f"tool:{on}",
    )


def standing(
    ident: str,
    judged: Standing,
    *values: tuple[str, str, str, Any],
    by: str = "d0",
    turn: int = 1,
    iteration: int = 1,
    **fields: Any,
) -> StandingRow:
    """A standing row on ``ident`` declared on call ``by``, with ``(kind, id, predicate,
    value)`` assertions."""
    return StandingRow(
        tool_call_id=ident,
        standing=judged,
        assertions=tuple(claim(*v, on=ident, standing=judged) for v in values),
        declared_on=DeclaredOn(tool_call_id=by),
        turn=turn,
        iteration=iteration,
        **fields,
    )


def fold_of(ledger: Mapping[str, Standing]) -> LedgerFold:
    """The fold of a ledger given as ``{id: standing}`` (one standing row each, in order)."""
    return fold_ledger(None, [standing(ident, judged) for ident, judged in ledger.items()])


def wire(value: object) -> Any:
    """A struct (or list of structs) as its wire JSON value."""
    return msgspec.json.decode(msgspec.json.encode(value))


def ids_of(messages: Sequence[Any]) -> list[str | None]:
    """``tool_call_id`` of each message."""
    return [m.tool_call_id for m in messages]
