"""The ledger fold, conflicts, filing order, turn rank and dropped standings
(docs/findings.md#the-ledger, docs/findings.md#evicted-results-and-their-standings;
docs/findings.md#how-this-is-tested cases 5-9 and 22)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.findings import (
    EMPTY_FOLD,
    BasisRow,
    ConflictRow,
    DeclaredOn,
    ForeignRow,
    LedgerFold,
    LedgerRow,
    StandingRow,
    Subject,
    WitnessRef,
    fold_ledger,
)
from afp_runtime.findings.declare import declaration_rows
from afp_runtime.findings.filing import file_batch, judged_name_of, known_ids
from afp_runtime.findings.fold import dropped_standings, file_standing, key_of, turn_standing_of
from afp_runtime.messages import Message, ToolCall
from afp_runtime.window import DroppedStanding, Standing, Turn
from afp_runtime.window.turns import segment
from tests.findings._build import claim, fold_of, standing, wire
from tests.window._build import TASK, A, R, T, U

DB1 = ("host", "db-1", "status")


def basis(ident: str, name: str = "probe", **fields: Any) -> BasisRow:
    """A basis row for call ``ident``."""
    return BasisRow(tool_call_id=ident, tool_name=name, turn=1, iteration=1, **fields)


def file_all(fold: LedgerFold, rows: Sequence[StandingRow]) -> tuple[LedgerFold, list[LedgerRow]]:
    """File standing rows one by one; the fold and every row appended, conflicts included."""
    appended: list[LedgerRow] = []
    for row in rows:
        fold, conflicts = file_standing(fold, row)
        appended += [row, *conflicts]
    return fold, appended


class TestFiling:
    """Rows in dispatch order (docs/findings.md#order-of-rows-in-a-batch)."""

    def test_case_5_batch_order(self) -> None:
        """Case 5: c1's standing (declared on c2) comes first, then the basis rows of c2 and c3."""
        args_c1 = {"host": "db-1", "_findings": {"basis": "direct"}}
        window = [
            U(TASK),
            Message(role="assistant", tool_calls=(ToolCall(id="c1", name="probe", args=args_c1),)),
            T("c1", "db-1: timeout after 30s", "probe"),
        ]
        fold = fold_ledger(None, [basis("c1", basis="direct")])
        known, name_of = known_ids(window, fold), judged_name_of(window, fold)
        c2 = {
            "basis": "exploratory",
            "previous": [
                {
                    "toolCallId": "c1",
                    "standing": "fact",
                    "assertions": [
                        {
                            "subject": {"kind": "host", "id": "db-1"},
                            "predicate": "status",
                            "value": "down",
                        }
                    ],
                }
            ],
        }
        declarations = [
            declaration_rows(
                raw,
                tool_call_id=call,
                tool_name="probe",
                turn=1,
                iteration=2,
                known_ids=known,
                name_of=name_of,
            )
            for call, raw in (("c2", c2), ("c3", {"basis": "direct"}))
        ]
        filed = file_batch(fold, declarations)
        assert [wire(row) for row in filed.rows] == [
            {
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
            },
            {
                "kind": "basis",
                "toolCallId": "c2",
                "toolName": "probe",
                "turn": 1,
                "iteration": 2,
                "basis": "exploratory",
            },
            {
                "kind": "basis",
                "toolCallId": "c3",
                "toolName": "probe",
                "turn": 1,
                "iteration": 2,
                "basis": "direct",
            },
        ]
        assert filed.fold == fold_ledger(fold, filed.rows)

    def test_standings_of_every_call_come_before_any_basis_row(self) -> None:
        """Every call's standings (call order, entry order) precede the first basis row."""
        window = [U(TASK), *R("a"), *R("b")]
        known, name_of = known_ids(window, EMPTY_FOLD), judged_name_of(window, EMPTY_FOLD)
        raws = {
            "c1": {"basis": "direct", "previous": [{"toolCallId": "a", "standing": "noise"}]},
            "c2": {
                "basis": "direct",
                "previous": [
                    {"toolCallId": "b", "standing": "open"},
                    {"toolCallId": "a", "standing": "fact"},
                ],
            },
        }
        declarations = [
            declaration_rows(
                raw,
                tool_call_id=call,
                tool_name="look",
                turn=2,
                iteration=1,
                known_ids=known,
                name_of=name_of,
            )
            for call, raw in raws.items()
        ]
        rows = file_batch(EMPTY_FOLD, declarations).rows
        assert [(type(r).__name__, r.tool_call_id) for r in rows] == [  # type: ignore[union-attr]
            ("StandingRow", "a"),
            ("StandingRow", "b"),
            ("StandingRow", "a"),
            ("BasisRow", "c1"),
            ("BasisRow", "c2"),
        ]

    def test_conflict_rows_follow_their_standing_row_in_a_batch(self) -> None:
        """A conflict row is filed right after the standing row that triggered it."""
        window = [U(TASK), *R("c1", "probe"), *R("c4", "probe")]
        known, name_of = known_ids(window, EMPTY_FOLD), judged_name_of(window, EMPTY_FOLD)
        fact = {"subject": {"kind": "host", "id": "db-1"}, "predicate": "status"}
        raw = {
            "basis": "direct",
            "previous": [
                {"toolCallId": "c1", "standing": "fact", "assertions": [{**fact, "value": "down"}]},
                {"toolCallId": "c4", "standing": "fact", "assertions": [{**fact, "value": "up"}]},
                {"toolCallId": "a", "standing": "noise"},
            ],
        }
        made = declaration_rows(
            raw,
            tool_call_id="c5",
            tool_name="probe",
            turn=1,
            iteration=3,
            known_ids=known,
            name_of=name_of,
        )
        rows = file_batch(EMPTY_FOLD, [made]).rows
        assert [r.__struct_config__.tag for r in rows] == [
            "standing",
            "standing",
            "conflict",
            "standing",
            "basis",
        ]

    def test_known_ids_come_from_window_and_ledger(self) -> None:
        """Known: window results, basis rows and standing rows not marked unknownId
        (docs/findings.md#known-and-unknown-ids)."""
        fold = fold_ledger(
            None,
            [basis("b1"), standing("s1", "open"), standing("u1", "fact", unknown_id=True)],
        )
        known = known_ids([U(TASK), *R("w1")], fold)
        assert [i in known for i in ("w1", "b1", "s1", "u1", "zz")] == [
            True,
            True,
            True,
            False,
            False,
        ]

    def test_names_come_from_window_then_basis_row(self) -> None:
        """A judged result is named by its window message, else by its call's basis row."""
        fold = fold_ledger(None, [basis("gone", name="fetch")])
        window = [U(TASK), A(["w1"], names=["look"]), T("w1", name=None)]
        name_of = judged_name_of(window, fold)
        assert [name_of(i) for i in ("w1", "gone", "zz")] == ["look", "fetch", None]


class TestFold:
    """Last word wins; facts, conflicts and known ids (docs/findings.md#conflicts,
    docs/findings.md#the-fold)."""

    def test_case_6_last_wins(self) -> None:
        """Case 6: a later noise replaces the fact; nothing is asserted and no conflict arises."""
        fact = standing("c1", "fact", (*DB1, "down"), by="c2", iteration=2)
        fold, _ = file_all(EMPTY_FOLD, [fact])
        noise = standing("c1", "noise", by="c5", iteration=3)
        fold, more = file_all(fold, [noise])
        assert more == [noise]
        assert dict(fold.standing_of) == {"c1": "noise"}
        assert fold.asserted == ()
        assert len(fold.conflicts) == 0
        assert fold.current["c1"] is noise

    def test_case_7_conflict(self) -> None:
        """Case 7: c4 contradicting c1 files one conflict row; c4 turning noise clears it."""
        first = standing("c1", "fact", (*DB1, "down"))
        second = standing("c4", "fact", (*DB1, "up"), iteration=3)
        fold, rows = file_all(EMPTY_FOLD, [first, second])
        subject = Subject(kind="host", id="db-1")
        assert rows == [
            first,
            second,
            ConflictRow(
                key=DB1,
                witnesses=(
                    WitnessRef(tool_call_id="c1", subject=subject, predicate="status"),
                    WitnessRef(tool_call_id="c4", subject=subject, predicate="status"),
                ),
                turn=1,
                iteration=3,
            ),
        ]
        assert set(fold.conflicts) == {DB1}
        fold, later = file_all(fold, [standing("c4", "noise")])
        assert len(later) == 1
        assert len(fold.conflicts) == 0

    def test_case_7_numbers_compare_numerically(self) -> None:
        """Case 7: 1 and 1.0 are equal values, so they do not conflict."""
        fold, rows = file_all(
            EMPTY_FOLD, [standing("c1", "fact", (*DB1, 1)), standing("c2", "fact", (*DB1, 1.0))]
        )
        assert len(rows) == 2 and len(fold.conflicts) == 0

    def test_case_7_booleans_never_equal_numbers(self) -> None:
        """Case 7: true and 1 conflict (Python's True == 1 must not leak in)."""
        fold, rows = file_all(
            EMPTY_FOLD, [standing("c1", "fact", (*DB1, True)), standing("c2", "fact", (*DB1, 1))]
        )
        assert isinstance(rows[-1], ConflictRow)
        assert set(fold.conflicts) == {DB1}

    def test_strings_never_equal_numbers(self) -> None:
        """ "1" and 1 are different values."""
        fold, _ = file_all(
            EMPTY_FOLD, [standing("c1", "fact", (*DB1, "1")), standing("c2", "fact", (*DB1, 1))]
        )
        assert set(fold.conflicts) == {DB1}

    def test_a_conflict_already_standing_files_no_second_row(self) -> None:
        """A third disagreeing witness updates the conflict without a new conflict row."""
        fold, rows = file_all(
            EMPTY_FOLD,
            [
                standing("c1", "fact", (*DB1, "down")),
                standing("c2", "fact", (*DB1, "up")),
                standing("c3", "fact", (*DB1, "slow")),
            ],
        )
        assert sum(isinstance(r, ConflictRow) for r in rows) == 1
        assert [w.tool_call_id for w in fold.conflicts[DB1]] == ["c1", "c2", "c3"]

    def test_one_row_can_conflict_with_itself(self) -> None:
        """Two assertions of one fact on one key with different values conflict."""
        _, rows = file_all(EMPTY_FOLD, [standing("c1", "fact", (*DB1, "down"), (*DB1, "up"))])
        assert isinstance(rows[-1], ConflictRow)
        assert [w.tool_call_id for w in rows[-1].witnesses] == ["c1", "c1"]

    def test_disagreeing_standings_on_one_result_are_not_a_conflict(self) -> None:
        """A result re-judged with a new value replaces its claim: no conflict
        (docs/findings.md#conflicts)."""
        fold, rows = file_all(
            EMPTY_FOLD,
            [standing("c1", "fact", (*DB1, "down")), standing("c1", "fact", (*DB1, "up"))],
        )
        assert len(rows) == 2 and len(fold.conflicts) == 0
        assert [a.value for a in fold.asserted] == ["up"]

    def test_conflict_reappearing_files_a_new_row(self) -> None:
        """A key that stops conflicting and conflicts again gets a new conflict row."""
        _, rows = file_all(
            EMPTY_FOLD,
            [
                standing("c1", "fact", (*DB1, "down")),
                standing("c2", "fact", (*DB1, "up")),
                standing("c2", "open"),
                standing("c2", "fact", (*DB1, "up")),
            ],
        )
        assert sum(isinstance(r, ConflictRow) for r in rows) == 2

    def test_asserted_follows_ledger_order_of_current_rows(self) -> None:
        """asserted lists current fact assertions by their rows' ledger order."""
        fold = fold_ledger(
            None,
            [
                standing("a", "fact", ("h", "1", "p", 1)),
                standing("b", "fact", ("h", "2", "p", 2), ("h", "3", "p", 3)),
                standing("a", "fact", ("h", "1", "p", 4)),
            ],
        )
        assert [a.value for a in fold.asserted] == [2, 3, 4]

    def test_case_8_unknown_id_counts_but_is_not_known(self) -> None:
        """Case 8: an unknownId standing counts in the fold under its id but stays unknown."""
        fold = fold_ledger(None, [standing("zz", "fact", unknown_id=True)])
        assert dict(fold.standing_of) == {"zz": "fact"}
        assert "zz" not in fold.known

    def test_case_9_undeclared_is_absent(self) -> None:
        """Case 9: a result nobody judged is absent from standing_of and its turn is None."""
        window = [U(TASK), *R("c1"), *R("c2")]
        fold = fold_of({"c1": "noise"})
        assert "c2" not in fold.standing_of
        assert turn_standing_of(segment(window)[2], fold.standing_of) is None

    def test_foreign_and_conflict_rows_are_ignored(self) -> None:
        """Rows of other kinds and conflict rows leave the fold unchanged."""
        time_row = ForeignRow(kind="time-answer", fields={"turn": 1, "iteration": 1})
        conflict = ConflictRow(key=DB1, witnesses=(), turn=1, iteration=1)
        assert fold_ledger(None, [time_row, conflict]) == EMPTY_FOLD

    def test_earlier_fold_is_unchanged(self) -> None:
        """Folding more rows never changes the fold it started from."""
        fold = fold_of({"c1": "fact"})
        snapshot = (dict(fold.standing_of), set(fold.known))
        fold_ledger(fold, [standing("c1", "noise"), standing("c2", "open"), basis("c3")])
        assert (dict(fold.standing_of), set(fold.known)) == snapshot

    def test_basis_rows_make_ids_known(self) -> None:
        """A basis row makes its call id known and is kept by id."""
        row = basis("c7", proposition="db-1 is down")
        fold = fold_ledger(None, [row])
        assert "c7" in fold.known
        assert fold.basis_of["c7"] is row


RANKED: list[tuple[dict[str, Standing], Standing | None]] = [
    ({"1": "noise", "2": "fact", "3": "open"}, "fact"),
    ({"1": "open", "2": "ruled-out"}, "open"),
    ({"1": "ruled-out", "2": "noise", "3": "noise"}, "ruled-out"),
    ({"1": "noise", "2": "noise"}, None),
]


class TestTurnStanding:
    """The turn rank (docs/findings.md#which-standing-a-turn-has)."""

    WINDOW = (
        U(TASK),
        A(["1", "2", "3"], names=["a", "b", "c"]),
        T("1", name="a"),
        T("2", name="b"),
        T("3", name="c"),
    )

    def test_case_10_rank(self) -> None:
        """Case 10: fact > open > undeclared > ruled-out > noise over the batch turn."""
        turn = segment(self.WINDOW)[1]
        assert [turn_standing_of(turn, ledger) for ledger, _ in RANKED] == [s for _, s in RANKED]

    def test_settled_and_idless_messages_do_not_count(self) -> None:
        """A not_dispatched result has no standing and does not rank; a turn of none is None."""
        settled = Message(role="tool", content="x", tool_call_id="1", not_dispatched=True)
        turn = Turn(index=0, start=0, length=2, messages=(A(["1"]), settled))
        assert turn_standing_of(turn, {"1": "fact"}) is None
        assert turn_standing_of(segment([U(TASK)])[0], {}) is None


class TestDroppedStandings:
    """droppedStandings entries (docs/findings.md#evicted-results-and-their-standings)."""

    def test_entries_in_eviction_order(self) -> None:
        """One entry per evicted tool result; undeclared and settled ones carry no standing."""
        settled = Message(role="tool", content="x", tool_call_id="s", not_dispatched=True)
        evicted = [A(["a", "b"]), T("a"), T("b"), U("x"), settled, T("c")]
        fold = fold_of({"a": "noise", "c": "fact", "s": "fact"})
        assert dropped_standings(evicted, fold.standing_of) == (
            DroppedStanding(tool_call_id="a", standing="noise"),
            DroppedStanding(tool_call_id="b"),
            DroppedStanding(tool_call_id="s"),
            DroppedStanding(tool_call_id="c", standing="fact"),
        )
        assert wire(dropped_standings([T("b")], {})) == [{"toolCallId": "b"}]


# --- case 22: the incremental fold law ------------------------------------------------------------

IDS = st.sampled_from(["c1", "c2", "c3", "c4", "zz"])
VALUES = st.sampled_from([1, 1.0, True, False, 0, "1", "up", "down", 2.5])
KEYS = st.sampled_from([("host", "db-1", "status"), ("host", "db-2", "status"), ("f", "x", "n")])


@st.composite
def standing_rows(draw: st.DrawFn) -> StandingRow:
    """A standing row on a small id pool with assertions on a small key pool."""
    ident = draw(IDS)
    judged: Standing = draw(st.sampled_from(["fact", "open", "noise", "ruled-out"]))
    values = [] if judged == "noise" else draw(st.lists(st.tuples(KEYS, VALUES), max_size=3))
    return StandingRow(
        tool_call_id=ident,
        standing=judged,
        assertions=tuple(claim(*k, v, on=ident, standing=judged) for k, v in values),
        declared_on=draw(st.sampled_from([DeclaredOn(tool_call_id="d1"), "answer"])),
        turn=draw(st.integers(1, 3)),
        iteration=draw(st.integers(1, 5)),
        unknown_id=draw(st.sampled_from([msgspec.UNSET, True])),
    )


time_rows = st.builds(
    lambda kind, turn: ForeignRow(kind=kind, fields={"turn": turn, "iteration": 1}),
    st.sampled_from(["clock", "time-answer", "call-window", "call"]),
    st.integers(1, 3),
)
conflict_rows = st.builds(lambda key: ConflictRow(key=key, witnesses=(), turn=1, iteration=1), KEYS)
basis_rows = st.builds(lambda ident: basis(ident), IDS)
ledgers = st.lists(
    st.one_of(standing_rows(), standing_rows(), basis_rows, conflict_rows, time_rows),
    max_size=40,
)


def _value_class(value: Any) -> tuple[str, Any]:
    kind = "b" if isinstance(value, bool) else "s" if isinstance(value, str) else "n"
    return kind, value


def reference(rows: Sequence[LedgerRow]) -> dict[str, Any]:
    """A naive fold, recomputed from scratch, to check the incremental one against."""
    current: dict[str, StandingRow] = {}
    known: set[str] = set()
    for row in rows:
        if isinstance(row, BasisRow):
            known.add(row.tool_call_id)
        elif isinstance(row, StandingRow):
            current.pop(row.tool_call_id, None)
            current[row.tool_call_id] = row
            if row.unknown_id is msgspec.UNSET:
                known.add(row.tool_call_id)
    asserted = [
        (r.tool_call_id, a) for r in current.values() if r.standing == "fact" for a in r.assertions
    ]
    classes: dict[tuple[str, str, str], set[Any]] = {}
    for _, a in asserted:
        classes.setdefault(key_of(a), set()).add(_value_class(a.value))
    return {
        "standing_of": {i: r.standing for i, r in current.items()},
        "asserted": tuple(a for _, a in asserted),
        "conflicts": {
            k: [i for i, a in asserted if key_of(a) == k] for k, v in classes.items() if len(v) > 1
        },
        "known": known,
    }


@settings(max_examples=300, deadline=None)
@given(rows=ledgers)
def test_case_22_incremental_fold_law(rows: list[LedgerRow]) -> None:
    """Case 22: folding rows[:k] then rows[k:] equals folding them at once, for every k."""
    whole = fold_ledger(None, rows)
    for k in range(len(rows) + 1):
        assert fold_ledger(fold_ledger(None, rows[:k]), rows[k:]) == whole
    expected = reference(rows)
    assert dict(whole.standing_of) == expected["standing_of"]
    assert whole.asserted == expected["asserted"]
    assert {k: [w.tool_call_id for w in ws] for k, ws in whole.conflicts.items()} == expected[
        "conflicts"
    ]
    assert set(whole.known) == expected["known"]


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(standing_rows(), max_size=25))
def test_conflict_rows_exactly_when_newly_conflicting(rows: list[StandingRow]) -> None:
    """file_standing files a conflict row for a key exactly when it starts conflicting."""
    fold = EMPTY_FOLD
    for index, row in enumerate(rows):
        before = set(reference(rows[:index])["conflicts"])
        after = reference(rows[: index + 1])["conflicts"]
        fold, conflicts = file_standing(fold, row)
        assert {c.key for c in conflicts} == set(after) - before
        for c in conflicts:
            assert [w.tool_call_id for w in c.witnesses] == after[c.key]
        assert fold == fold_ledger(None, rows[: index + 1])
