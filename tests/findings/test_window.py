"""The fold bound into the window stage: ledger-fact pins, two books, stand-down and
droppedStandings (docs/findings.md#which-standing-a-turn-has,
docs/findings.md#keeping-facts-in-the-window, docs/findings.md#evicted-results-and-their-standings;
docs/findings.md#how-this-is-tested cases 8, 10-15)."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec

from afp_runtime.findings.fold import dropped_standings, turn_standing_of
from afp_runtime.messages import Message
from afp_runtime.window import DroppedStanding, Standing, VisitOutcome
from afp_runtime.window.observations import LedgerFactPin, PinnedTurn, WindowObservations
from afp_runtime.window.pins import ledger_fact_pins
from afp_runtime.window.turns import segment
from tests.findings._build import fold_of
from tests.window._build import HOLDS, TASK, A, Dropper, R, T, U, cr, ikw, lf, ltr, run_stage


async def armed_visit(
    history: list[Message],
    ledger: dict[str, Standing],
    *,
    fact_limit: int,
    recency: int = 0,
    said: str | None = TASK,
    prior: Any = (),
    keep: int = 2,
) -> VisitOutcome:
    """One visit of a keep-``keep`` dropper, armed with the fold of ``ledger``."""
    fold = fold_of(ledger)
    outcome = await run_stage(
        Dropper(keep=keep),
        history,
        said=said,
        prior=prior,
        keep_last_tool_results=recency,
        fact_limit=fact_limit,
        turn_standing=partial(turn_standing_of, standing_of=fold.standing_of),
    )
    assert outcome is not None
    return outcome


def block(*pins: tuple[str, int, int], limit: int, yielded: int = 0) -> WindowObservations:
    """A pin block listing ``(toolName, turnIndex, chars)``."""
    return WindowObservations(
        pinned=tuple(PinnedTurn(tool_name=n, turn_index=t, chars=c) for n, t, c in pins),
        yielded=yielded,
        limit=limit,
    )


def stood_down(limit: int) -> WindowObservations:
    """The stand-down block of a pin with ``limit``."""
    return WindowObservations(pinned=(), yielded=0, limit=limit, stand_down=True)


def test_case_10_fact_pin_of_a_batch() -> None:
    """Case 10: {1 fact, 2 noise} pins the batch turn with all three ids, named after "c"."""
    window = [U(TASK), A(["1", "2", "3"], names=["a", "b", "c"]), T("1", name="a")]
    window += [T("2", name="b"), T("3", name="c")]
    fold = fold_of({"1": "fact", "2": "noise"})
    pins = ledger_fact_pins(
        segment(window), window, partial(turn_standing_of, standing_of=fold.standing_of), 0
    )
    assert pins == (
        LedgerFactPin(
            tool_call_ids=("1", "2", "3"), tool_name="c", turn_index=1, message_index=1, chars=6
        ),
    )


def test_case_8_unknown_id_pins_nothing() -> None:
    """Case 8: a fact on an id no message carries holds nothing in the window."""
    window = [U(TASK), *R("c1"), *R("c2")]
    fold = fold_of({"zz": "fact"})
    standing = partial(turn_standing_of, standing_of=fold.standing_of)
    assert ledger_fact_pins(segment(window), window, standing, 0) == ()


CASE_11 = [
    U(TASK),
    *R("a", "whats_here", HOLDS),
    *R("b", "move"),
    *R("c", "move"),
    *R("d", "move"),
    *R("e", "move"),
    *R("f", "measure", "rack-b 41C"),
    *R("g", "move"),
    *R("h", "move"),
]
LEDGER_11: dict[str, Standing] = {
    "a": "fact",
    "b": "noise",
    "c": "open",
    "d": "ruled-out",
    "f": "fact",
}


async def test_case_11_fact_pin() -> None:
    """Case 11: the two fact turns are held as ledger-fact pins; no recency block."""
    outcome = await armed_visit(CASE_11, LEDGER_11, fact_limit=4)
    record = outcome.record
    assert record.refusals == (cr(0, 0), lf(1, 1), lf(6, 11), ikw(7, 13), ikw(8, 15))
    assert record.ledger_facts == block(("measure", 6, 10), ("whats_here", 1, 62), limit=4)
    assert record.observations is msgspec.UNSET
    assert [e.index for e in outcome.evictions] == list(range(3, 11))  # span (2, 5)


async def test_case_11_with_recency() -> None:
    """Case 11: with recency 2 as well, the turns refuse as last-tool-result in both blocks."""
    outcome = await armed_visit(CASE_11, LEDGER_11, fact_limit=4, recency=2)
    record = outcome.record
    assert record.refusals == (cr(0, 0), ltr(1, 1), ltr(6, 11), ikw(7, 13), ikw(8, 15))
    pins = (("measure", 6, 10), ("whats_here", 1, 62))
    assert record.observations == block(*pins, limit=2)
    assert record.ledger_facts == block(*pins, limit=4)
    assert [e.index for e in outcome.evictions] == list(range(3, 11))


CASE_12 = [U(TASK)] + [m for i in range(1, 8) for m in R(f"t{i}")]
LEDGER_12: dict[str, Standing] = {f"t{i}": "fact" for i in range(1, 8)}


async def test_case_12_fact_ceiling() -> None:
    """Case 12: fact limit 2 admits turns 5 and 4 and yields 3; the span ends at turn 4."""
    outcome = await armed_visit(CASE_12, LEDGER_12, fact_limit=2)
    record = outcome.record
    assert record.ledger_facts == block(("look", 5, 2), ("look", 4, 2), limit=2, yielded=3)
    assert record.refusals == (cr(0, 0), lf(4, 7), ikw(6, 11), ikw(7, 13))
    assert [e.index for e in outcome.evictions] == list(range(1, 7))  # span (1, 3)


async def test_case_12_fact_limit_zero_is_the_empty_ledger_plan() -> None:
    """Case 12: fact limit 0 plans exactly like an empty ledger."""
    outcome = await armed_visit(CASE_12, LEDGER_12, fact_limit=0)
    empty = await armed_visit(CASE_12, {}, fact_limit=4)
    assert outcome.record.refusals == (cr(0, 0), ikw(6, 11), ikw(7, 13))
    assert [e.index for e in outcome.evictions] == list(range(1, 11))  # span (1, 5)
    assert outcome.record == empty.record
    assert outcome.record.ledger_facts is msgspec.UNSET


async def test_case_13_two_books() -> None:
    """Case 13: the recency and fact pins each keep their own book of the same turns."""
    history = [
        U(TASK),
        *R("m1", "measure"),
        *R("o", "observer", HOLDS),
        *R("m2", "measure"),
        *R("x1", "move"),
        *R("x2", "move"),
        *R("x3", "move"),
    ]
    outcome = await armed_visit(history, {"m1": "fact", "o": "fact"}, fact_limit=4, recency=2)
    record = outcome.record
    assert record.observations == block(("measure", 3, 2), ("observer", 2, 62), limit=2)
    assert record.ledger_facts == block(("observer", 2, 62), ("measure", 1, 2), limit=4)
    assert record.refusals == (cr(0, 0), lf(1, 1), ltr(2, 3), ltr(3, 5), ikw(5, 9), ikw(6, 11))
    assert [e.index for e in outcome.evictions] == [7, 8]  # span (4, 4)


CASE_14 = [*R("pin", "observer", HOLDS), *R("a", "move"), *R("b", "move")]


async def test_case_14_family_stand_down() -> None:
    """Case 14: two blocked visits, then a stand-down visit that drops the pin, every third."""
    prior: Any = ()
    for visit in range(1, 10):
        outcome = await armed_visit(
            CASE_14, {"pin": "fact"}, fact_limit=4, recency=2, said=None, prior=prior
        )
        record = outcome.record
        fold = fold_of({"pin": "fact"})
        if visit % 3:
            assert record.removed_message_count == 0
            assert record.refusals == (ltr(0, 0), ikw(1, 2), ikw(2, 4))
            assert record.observations == block(("observer", 0, 62), limit=2)
            assert record.ledger_facts == block(("observer", 0, 62), limit=4)
        else:
            assert record.removed_message_count == 2
            assert record.observations == stood_down(2)
            assert record.ledger_facts == stood_down(4)
            assert dropped_standings(outcome.evicted, fold.standing_of) == (
                DroppedStanding(tool_call_id="pin", standing="fact"),
            )
        prior = outcome.prior


async def test_case_14_recency_off() -> None:
    """Case 14: with recency off the fact pin blocks twice, then stands down alone."""
    prior: Any = ()
    for visit in range(1, 4):
        outcome = await armed_visit(
            CASE_14, {"pin": "fact"}, fact_limit=4, recency=0, said=None, prior=prior
        )
        record = outcome.record
        assert record.observations is msgspec.UNSET
        if visit < 3:
            assert record.refusals == (lf(0, 0), ikw(1, 2), ikw(2, 4))
            assert record.removed_message_count == 0
        else:
            assert record.ledger_facts == stood_down(4)
            assert record.removed_message_count == 2
        prior = outcome.prior


async def test_case_15_dropped_standings() -> None:
    """Case 15: evicted results list their standings; the unjudged one carries none."""
    history = [
        U(TASK),
        *R("a", "look"),
        *R("b", "look"),
        *R("c", "probe"),
        *R("d", "look"),
        *R("e", "look"),
    ]
    ledger: dict[str, Standing] = {"a": "noise", "b": "ruled-out"}
    outcome = await armed_visit(history, ledger, fact_limit=4)
    record = outcome.record
    assert record.removed_message_count == 6
    assert record.refusals == (cr(0, 0), ikw(4, 7), ikw(5, 9))
    assert record.dropped_observations == ("look", "probe")
    assert dropped_standings(outcome.evicted, fold_of(ledger).standing_of) == (
        DroppedStanding(tool_call_id="a", standing="noise"),
        DroppedStanding(tool_call_id="b", standing="ruled-out"),
        DroppedStanding(tool_call_id="c"),
    )
    assert record.ledger_facts is msgspec.UNSET
    assert isinstance(outcome.window, tuple)
    assert [m.content for m in outcome.window] == [TASK, "", "ok", "", "ok"]
