"""The ledger fold: the current standing of every judged result, the facts in force, their
conflicts and the known ids (docs/findings.md#known-and-unknown-ids, docs/findings.md#conflicts,
docs/findings.md#the-fold), plus the functions that read it for the window
(docs/findings.md#which-standing-a-turn-has, docs/findings.md#evicted-results-and-their-standings).

The fold is incremental (docs/architecture.md#decision-13-folds-are-incremental):
``fold_ledger(prev, rows)`` costs O(len(rows)) plus the ids and conflict keys those rows touch,
whatever the ledger's length, because every collection in it is persistent (``_persist``): a new
fold shares all but one path per change with ``prev``, and ``prev`` stays valid and unchanged.
Folding rows in any split gives an equal fold: ``fold_ledger(fold_ledger(None, rows[:k]), rows[k:])
== fold_ledger(None, rows)``.

Readings settled here:

* A standing row marked ``unknownId`` counts like any other (it sets the standing of its id,
  and a fact's assertions are in ``asserted`` and can conflict); it only does not make its id
  known (docs/findings.md#known-and-unknown-ids).
* ``basis_of`` keeps the last basis row per id: it names a judged result no window message
  names (docs/findings.md#standing-rows) and gives the ruled-out list its proposition
  (docs/findings.md#the-ledger-piece).
* Conflict values: a string equals a string with the same text, a boolean the same boolean,
  a number a number of equal value (``1 == 1.0``); a boolean never equals a number
  (docs/findings.md#conflicts).
* When one standing row makes several keys newly conflicting, their conflict rows follow it
  in the order the keys first appear among that row's assertions.
* ``conflicts`` maps each conflicting key to its witnesses, current fact assertions in ledger
  order (row order, then assertion order). Keys are listed (``conflicts_in_order``) in the
  order they became conflicting.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple, get_args

import msgspec

from afp_runtime.findings._persist import PMap, PSet, SeqMap
from afp_runtime.findings.rows import (
    AssertedValue,
    Assertion,
    BasisRow,
    ConflictKey,
    ConflictRow,
    LedgerRow,
    StandingRow,
    WitnessRef,
)
from afp_runtime.messages import Message
from afp_runtime.window import DroppedStanding, Standing, Turn


class Witness(NamedTuple):
    """One current fact assertion on a key: the judged result's id and the assertion."""

    tool_call_id: str
    assertion: Assertion


class _Claim(NamedTuple):
    """One judged result's fact assertions on one key, and its row's place in the ledger."""

    seq: int
    assertions: tuple[Assertion, ...]


_ValueKey = tuple[str, AssertedValue]


def _value_key(value: AssertedValue) -> _ValueKey:
    """The equality class of a value: JSON kind plus value (ints and floats share ``n``)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, str):
        return ("s", value)
    return ("n", value)


def key_of(assertion: Assertion) -> ConflictKey:
    """The conflict key of an assertion: ``(subject.kind, subject.id, predicate)``."""
    return (assertion.subject.kind, assertion.subject.id, assertion.predicate)


_NO_ROWS: Mapping[Standing, SeqMap[StandingRow]] = MappingProxyType(
    dict.fromkeys(get_args(Standing), SeqMap())
)


class LedgerFold(msgspec.Struct, frozen=True, kw_only=True):
    """The fold of a ledger (docs/findings.md#the-fold). Build it with ``fold_ledger``.

    Attributes:
        standing_of: judged id → standing of its last standing row (last wins); an id
            nobody judged is absent (undeclared).
        current: judged id → that last standing row.
        basis_of: declaring call id → its (last) basis row.
        known: the ids docs/findings.md#known-and-unknown-ids takes from the ledger: of basis rows,
        and of standing rows not
            marked ``unknownId``.
        conflicts: each conflicting key → its witnesses in ledger order.
        by_standing: per standing, the current rows in ledger order (ledger position →
            row); serving reads the first few without walking the rest.
        claims: per key, judged id → its current fact assertions on that key.
        tallies: per key, how many current fact assertions hold each distinct value.
        conflict_order: when each conflicting key became conflicting → the key.
        conflict_since: the inverse of ``conflict_order``.
        seq_of: judged id → ledger position of its current standing row.
        next_seq: the next ledger position (standing rows and new conflicts take one each).
        fact_entries: entries of the facts list: each current fact's assertions, or one
            entry for a fact without assertions.
    """

    # Every collection is immutable, so the defaults (the empty fold) are shared safely.
    standing_of: PMap[str, Standing] = PMap()
    current: PMap[str, StandingRow] = PMap()
    basis_of: PMap[str, BasisRow] = PMap()
    known: PSet[str] = PSet()
    conflicts: PMap[ConflictKey, tuple[Witness, ...]] = PMap()
    by_standing: Mapping[Standing, SeqMap[StandingRow]] = _NO_ROWS
    claims: PMap[ConflictKey, PMap[str, _Claim]] = PMap()
    tallies: PMap[ConflictKey, PMap[_ValueKey, int]] = PMap()
    conflict_order: SeqMap[ConflictKey] = SeqMap()
    conflict_since: PMap[ConflictKey, int] = PMap()
    seq_of: PMap[str, int] = PMap()
    next_seq: int = 0
    fact_entries: int = 0

    @property
    def asserted(self) -> tuple[Assertion, ...]:
        """Assertions of the current ``fact`` rows, in ledger order."""
        return tuple(
            assertion for row in self.rows_in_order("fact") for assertion in row.assertions
        )

    def rows_in_order(self, standing: Standing) -> Iterator[StandingRow]:
        """The current rows of one standing, in ledger order, lazily."""
        return self.by_standing[standing].values_ascending()

    def count(self, standing: Standing) -> int:
        """How many judged results currently have ``standing``."""
        return len(self.by_standing[standing])

    def conflicts_in_order(self) -> Iterator[tuple[ConflictKey, tuple[Witness, ...]]]:
        """Conflicting keys in the order they became conflicting, with their witnesses."""
        for key in self.conflict_order.values_ascending():
            yield key, self.conflicts[key]


EMPTY_FOLD = LedgerFold()
"""The fold of an empty ledger (``fold_ledger(None, ())``)."""


class _Draft:
    """A fold being advanced by one row; every collection is replaced, never mutated."""

    def __init__(self, fold: LedgerFold) -> None:
        self.standing_of = fold.standing_of
        self.current = fold.current
        self.basis_of = fold.basis_of
        self.known = fold.known
        self.conflicts = fold.conflicts
        self.by_standing = dict(fold.by_standing)
        self.claims = fold.claims
        self.tallies = fold.tallies
        self.conflict_order = fold.conflict_order
        self.conflict_since = fold.conflict_since
        self.seq_of = fold.seq_of
        self.next_seq = fold.next_seq
        self.fact_entries = fold.fact_entries

    def done(self) -> LedgerFold:
        return LedgerFold(
            standing_of=self.standing_of,
            current=self.current,
            basis_of=self.basis_of,
            known=self.known,
            conflicts=self.conflicts,
            by_standing=MappingProxyType(self.by_standing),
            claims=self.claims,
            tallies=self.tallies,
            conflict_order=self.conflict_order,
            conflict_since=self.conflict_since,
            seq_of=self.seq_of,
            next_seq=self.next_seq,
            fact_entries=self.fact_entries,
        )

    def basis(self, row: BasisRow) -> None:
        self.basis_of = self.basis_of.set(row.tool_call_id, row)
        self.known = self.known.add(row.tool_call_id)

    def _tally(self, key: ConflictKey, value: AssertedValue, step: int) -> None:
        counts = self.tallies.get(key, PMap())
        value_key = _value_key(value)
        count = counts.get(value_key, 0) + step
        counts = counts.set(value_key, count) if count else counts.delete(value_key)
        self.tallies = self.tallies.set(key, counts) if counts else self.tallies.delete(key)

    def _unclaim(self, row: StandingRow) -> None:
        for key, group in _grouped(row.assertions).items():
            held = self.claims[key].delete(row.tool_call_id)
            self.claims = self.claims.set(key, held) if held else self.claims.delete(key)
            for assertion in group:
                self._tally(key, assertion.value, -1)

    def _claim(self, row: StandingRow, seq: int) -> None:
        for key, group in _grouped(row.assertions).items():
            held = self.claims.get(key, PMap()).set(row.tool_call_id, _Claim(seq, group))
            self.claims = self.claims.set(key, held)
            for assertion in group:
                self._tally(key, assertion.value, +1)

    def _restate(self, key: ConflictKey) -> bool:
        """Bring one key's conflict entry up to date; True when it is newly conflicting."""
        counts = self.tallies.get(key)
        was = key in self.conflicts
        if counts is None or len(counts) < 2:
            if was:
                since = self.conflict_since[key]
                self.conflicts = self.conflicts.delete(key)
                self.conflict_since = self.conflict_since.delete(key)
                self.conflict_order = self.conflict_order.delete(since)
            return False
        claims = sorted(self.claims[key].items(), key=lambda item: item[1].seq)
        witnesses = tuple(
            Witness(ident, assertion) for ident, claim in claims for assertion in claim.assertions
        )
        self.conflicts = self.conflicts.set(key, witnesses)
        if was:
            return False
        since = self.next_seq
        self.next_seq += 1
        self.conflict_since = self.conflict_since.set(key, since)
        self.conflict_order = self.conflict_order.set(since, key)
        return True

    def standing(self, row: StandingRow) -> list[ConflictKey]:
        """Fold one standing row; the keys it made newly conflicting, in assertion order."""
        ident = row.tool_call_id
        old = self.current.get(ident)
        touched: dict[ConflictKey, None] = {}
        if row.standing == "fact":
            touched.update((key_of(a), None) for a in row.assertions)
        if old is not None:
            old_seq = self.seq_of[ident]
            self.by_standing[old.standing] = self.by_standing[old.standing].delete(old_seq)
            if old.standing == "fact":
                touched.update((key_of(a), None) for a in old.assertions)
                self._unclaim(old)
                self.fact_entries -= max(1, len(old.assertions))
        seq = self.next_seq
        self.next_seq += 1
        self.standing_of = self.standing_of.set(ident, row.standing)
        self.current = self.current.set(ident, row)
        self.seq_of = self.seq_of.set(ident, seq)
        self.by_standing[row.standing] = self.by_standing[row.standing].set(seq, row)
        if row.standing == "fact":
            self._claim(row, seq)
            self.fact_entries += max(1, len(row.assertions))
        if row.unknown_id is msgspec.UNSET:
            self.known = self.known.add(ident)
        return [key for key in touched if self._restate(key)]


def _grouped(assertions: Iterable[Assertion]) -> dict[ConflictKey, tuple[Assertion, ...]]:
    groups: dict[ConflictKey, list[Assertion]] = {}
    for assertion in assertions:
        groups.setdefault(key_of(assertion), []).append(assertion)
    return {key: tuple(group) for key, group in groups.items()}


def fold_ledger(
    prev: LedgerFold | None, new_rows: Iterable[LedgerRow | msgspec.Struct]
) -> LedgerFold:
    """Fold ``new_rows`` into ``prev`` (``None`` is the empty fold); ``prev`` is unchanged.

    Basis rows and standing rows update the fold; conflict rows (an audit trail: the fold
    keeps its own conflict set), foreign rows and rows of any other kind are ignored.
    """
    draft = _Draft(EMPTY_FOLD if prev is None else prev)
    for row in new_rows:
        if isinstance(row, StandingRow):
            draft.standing(row)
        elif isinstance(row, BasisRow):
            draft.basis(row)
    return draft.done()


def _conflict_row(fold: LedgerFold, key: ConflictKey, row: StandingRow) -> ConflictRow:
    return ConflictRow(
        key=key,
        witnesses=tuple(
            WitnessRef(
                tool_call_id=w.tool_call_id,
                subject=w.assertion.subject,
                predicate=w.assertion.predicate,
            )
            for w in fold.conflicts[key]
        ),
        turn=row.turn,
        iteration=row.iteration,
    )


def file_standing(fold: LedgerFold, row: StandingRow) -> tuple[LedgerFold, tuple[ConflictRow, ...]]:
    """Fold one standing row and make the conflict rows that must follow it
    (docs/findings.md#conflicts).

    Returns:
        The new fold (equal to ``fold_ledger(fold, [row, *conflict_rows])``) and one conflict
        row per key that conflicts now but did not before this row.
    """
    draft = _Draft(fold)
    newly = draft.standing(row)
    folded = draft.done()
    return folded, tuple(_conflict_row(folded, key, row) for key in newly)


def judged_id(message: Message) -> str | None:
    """The id a standing can judge: a ``tool`` message's non-empty ``tool_call_id``, unless the
    message was settled without running (``not_dispatched``)."""
    if message.role == "tool" and message.tool_call_id and not message.not_dispatched:
        return message.tool_call_id
    return None


_RANK: dict[Standing | None, int] = {"fact": 4, "open": 3, None: 2, "ruled-out": 1, "noise": 0}


def turn_standing_of(turn: Turn, standing_of: Mapping[str, Standing]) -> Standing | None:
    """A turn's standing: that of its highest-ranked judged tool message
    (docs/findings.md#which-standing-a-turn-has).

    Rank ``fact > open > undeclared > ruled-out > noise``; ties keep the first message. Only
    ``tool`` messages with a non-empty ``tool_call_id`` and without ``not_dispatched`` count;
    a turn with none of them, or whose best member is unjudged, is undeclared (``None``).
    """
    best: Standing | None = None
    best_rank = -1
    for message in turn.messages:
        ident = judged_id(message)
        if ident is None:
            continue
        standing = standing_of.get(ident)
        rank = _RANK[standing]
        if rank > best_rank:
            best, best_rank = standing, rank
    return best


def dropped_standings(
    evicted: Sequence[Message], standing_of: Mapping[str, Standing]
) -> tuple[DroppedStanding, ...]:
    """The ``droppedStandings`` entries of a record that removed messages
    (docs/findings.md#evicted-results-and-their-standings).

    One entry per evicted ``tool`` message with a non-empty ``tool_call_id``, in eviction
    order, with the current standing; the standing is omitted when the result is undeclared
    or the message was settled without running (``not_dispatched``).
    """
    dropped: list[DroppedStanding] = []
    for message in evicted:
        if message.role == "tool" and message.tool_call_id:
            standing = (
                msgspec.UNSET
                if message.not_dispatched
                else standing_of.get(message.tool_call_id, msgspec.UNSET)
            )
            dropped.append(DroppedStanding(tool_call_id=message.tool_call_id, standing=standing))
    return tuple(dropped)
