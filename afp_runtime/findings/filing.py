"""Filing declarations in ledger order (docs/findings.md#known-and-unknown-ids,
docs/findings.md#order-of-rows-in-a-batch, docs/findings.md#declarations-on-the-final-answer).

The loop peels each call (``peel``), turns the raw value into rows (``declaration_rows``)
against the ids known at this call (``known_ids``, ``judged_name_of``), and files the batch
here: every standing row of every call first, each followed by the conflict rows it
triggers, then the basis rows in call order. The returned fold already holds the rows, so the
loop must not fold them a second time.

Readings settled here:

* Known ids (docs/findings.md#known-and-unknown-ids) include every ``tool`` message of the window,
  settled ones too (a standing
  on a settled result is kept and holds nothing).
* A judged result is named by its window message (``tool_name_of``) and, when that gives no
  name (absent from the window, or settled), by its call's basis row.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import NamedTuple

from afp_runtime.findings.declare import AnswerDeclaration, Declaration, NameOf
from afp_runtime.findings.fold import LedgerFold, file_standing, fold_ledger
from afp_runtime.findings.rows import LedgerRow, StandingRow
from afp_runtime.messages import Message
from afp_runtime.window import call_names, tool_name_of


class Filed(NamedTuple):
    """Rows to append, in order, and the fold that already holds them."""

    fold: LedgerFold
    rows: tuple[LedgerRow, ...]


class _KnownIds(Container[str]):
    """The ids known at a call: window tool results, then the fold's ``known`` set."""

    __slots__ = ("_fold", "_window")

    def __init__(self, window: frozenset[str], fold: LedgerFold) -> None:
        self._window = window
        self._fold = fold

    def __contains__(self, item: object) -> bool:
        return item in self._window or item in self._fold.known


def known_ids(window: Sequence[Message], fold: LedgerFold) -> Container[str]:
    """The ids known at a declaring call (docs/findings.md#known-and-unknown-ids), without scanning
    the ledger."""
    ids = frozenset(m.tool_call_id for m in window if m.role == "tool" and m.tool_call_id)
    return _KnownIds(ids, fold)


def judged_name_of(window: Sequence[Message], fold: LedgerFold) -> NameOf:
    """Name judged results: by their window message, else by their call's basis row
    (docs/findings.md#standing-rows)."""
    names = call_names(window)
    results = {m.tool_call_id: m for m in window if m.role == "tool" and m.tool_call_id}

    def name_of(tool_call_id: str) -> str | None:
        message = results.get(tool_call_id)
        name = tool_name_of(message, names) if message is not None else None
        if name is None:
            basis = fold.basis_of.get(tool_call_id)
            name = basis.tool_name if basis is not None and basis.tool_name else None
        return name

    return name_of


def _file_standings(
    fold: LedgerFold, standings: Sequence[StandingRow], rows: list[LedgerRow]
) -> LedgerFold:
    for row in standings:
        fold, conflicts = file_standing(fold, row)
        rows.append(row)
        rows.extend(conflicts)
    return fold


def file_batch(fold: LedgerFold, declarations: Sequence[Declaration]) -> Filed:
    """File one assistant message's declarations in dispatch order
    (docs/findings.md#order-of-rows-in-a-batch).

    Args:
        fold: the fold before the batch.
        declarations: one per call that carried ``_findings``, in call order.

    Returns:
        The rows — every standing row (call order, entry order), each followed by the conflict
        rows it triggers, then each call's basis row in call order — and the fold holding them.
    """
    rows: list[LedgerRow] = []
    for declaration in declarations:
        fold = _file_standings(fold, declaration.standings, rows)
    basis_rows = [declaration.basis for declaration in declarations]
    rows.extend(basis_rows)
    return Filed(fold_ledger(fold, basis_rows), tuple(rows))


def file_answer(fold: LedgerFold, answer: AnswerDeclaration) -> Filed:
    """File the answer's standing rows, each followed by the conflict rows it triggers
    (docs/findings.md#declarations-on-the-final-answer)."""
    rows: list[LedgerRow] = []
    fold = _file_standings(fold, answer.standings, rows)
    return Filed(fold, tuple(rows))
