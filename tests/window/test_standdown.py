"""Stand-down: a pin blocks at most two filed visits in a row (docs/window.md#stand-down; cases
35-36)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from afp_runtime.messages import Message
from afp_runtime.window import CustomRecord, PriorVisit, Standing, Turn
from afp_runtime.window.observations import PinnedTurn, WindowObservations
from afp_runtime.window.records import WindowRecord
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.standdown import (
    FACT_PIN_REASONS,
    RECENCY_PIN_REASONS,
    last_two,
    pin_is_blocking,
    prior_of,
    remember,
    stand_down_block,
)
from tests.window._build import HOLDS, Dropper, R, ikw, lf, ltr, run_stage, unset_free

WINDOW_35 = [*R("pin", "observer", HOLDS), *R("a", "move"), *R("b", "move")]
PINNED_BLOCK = WindowObservations(
    pinned=(PinnedTurn(tool_name="observer", turn_index=0, chars=62),), yielded=0, limit=2
)


def record(removed: int, *refusals: Refusal) -> CustomRecord:
    """A filed custom record with ``removed`` messages gone and the given refusals."""
    return CustomRecord(
        strategy="dropper",
        iteration=1,
        removed_stage_ids=(),
        removed_message_count=removed,
        window_chars_before=0,
        window_chars_after=0,
        refusals=refusals,
    )


BLOCKED = record(0, ltr(0, 0), ikw(1, 2))
FACT_BLOCKED = record(0, lf(0, 0), ikw(1, 2))
KEEP_ONLY = record(0, ikw(1, 2))
REMOVED = record(2, ltr(0, 0))


def test_two_blocked_visits_block() -> None:
    """docs/window.md#stand-down: two prior visits that removed nothing and name the pin make the
    pin stand down."""
    assert pin_is_blocking([BLOCKED, BLOCKED], RECENCY_PIN_REASONS)
    assert pin_is_blocking([REMOVED, BLOCKED, BLOCKED], RECENCY_PIN_REASONS)


def test_fewer_than_two_or_any_removal_does_not_block() -> None:
    """docs/window.md#stand-down: one visit, a removal, or a visit without a pin refusal never
    blocks."""
    assert not pin_is_blocking([], RECENCY_PIN_REASONS)
    assert not pin_is_blocking([BLOCKED], RECENCY_PIN_REASONS)
    assert not pin_is_blocking([BLOCKED, REMOVED], RECENCY_PIN_REASONS)
    assert not pin_is_blocking([KEEP_ONLY, BLOCKED], RECENCY_PIN_REASONS)
    assert not pin_is_blocking([BLOCKED, BLOCKED, KEEP_ONLY], RECENCY_PIN_REASONS)


def test_fact_pin_reads_the_whole_pin_family() -> None:
    """docs/window.md#stand-down: the fact pin counts last-tool-result as well as ledger-fact;
    recency does not."""
    assert pin_is_blocking([BLOCKED, FACT_BLOCKED], FACT_PIN_REASONS)
    assert not pin_is_blocking([BLOCKED, FACT_BLOCKED], RECENCY_PIN_REASONS)


def test_prior_summaries_keep_the_last_two() -> None:
    """Summaries carry what stand-down reads, and the loop keeps only the last two."""
    summary = prior_of(BLOCKED)
    assert summary == PriorVisit(
        removed_message_count=0, reasons=frozenset({"last-tool-result", "inside-keep-window"})
    )
    assert prior_of(summary) is summary
    assert remember([REMOVED, BLOCKED], KEEP_ONLY) == (prior_of(BLOCKED), prior_of(KEEP_ONLY))
    assert last_two([REMOVED, BLOCKED, KEEP_ONLY]) == (prior_of(BLOCKED), prior_of(KEEP_ONLY))
    assert last_two([]) == ()
    assert pin_is_blocking(last_two([REMOVED, BLOCKED, BLOCKED]), RECENCY_PIN_REASONS)


def test_stand_down_block_shape() -> None:
    """docs/window.md#stand-down: the stand-down block pins nothing, yields nothing and says
    standDown true."""
    wire = msgspec.json.decode(msgspec.json.encode(stand_down_block(2)))
    assert wire == {"pinned": [], "yielded": 0, "limit": 2, "standDown": True}


async def test_case_35_third_visit_stands_down_and_removes() -> None:
    """Case 35: two blocked visits, then the third stands down and drops the pinned turn."""
    window: Sequence[Message] = WINDOW_35
    prior: tuple[WindowRecord | PriorVisit, ...] = ()
    filed: list[WindowRecord] = []
    for _ in range(3):
        outcome = await run_stage(Dropper(keep=2), window, prior=prior, keep_last_tool_results=2)
        assert outcome is not None
        filed.append(outcome.record)
        prior = outcome.prior
        if outcome.window is not msgspec.UNSET:
            window = unset_free(outcome.window)
    for blocked in filed[:2]:
        assert blocked.removed_message_count == 0
        assert blocked.refusals == (ltr(0, 0), ikw(1, 2), ikw(2, 4))
        assert blocked.observations == PINNED_BLOCK
        assert blocked.dropped_observations is msgspec.UNSET
    third = filed[2]
    assert third.observations == stand_down_block(2)
    assert third.refusals == (ikw(1, 2), ikw(2, 4))
    assert third.removed_message_count == 2
    assert third.dropped_observations == ("observer",)
    assert list(window) == WINDOW_35[2:]


async def test_case_36_never_three_blocked_in_a_row() -> None:
    """Case 36: over nine visits of the same window, visits 3, 6 and 9 stand down."""
    prior: tuple[PriorVisit, ...] = ()
    stood: list[int] = []
    removed: list[int] = []
    for number in range(1, 10):
        outcome = await run_stage(Dropper(keep=2), WINDOW_35, prior=prior, keep_last_tool_results=2)
        assert outcome is not None
        prior = outcome.prior
        if outcome.stood_down:
            stood.append(number)
        if outcome.record.removed_message_count:
            removed.append(number)
            assert outcome.record.removed_message_count == 2
        else:
            assert outcome.record.observations == PINNED_BLOCK
    assert stood == [3, 6, 9]
    assert removed == [3, 6, 9]


async def test_fact_pin_stands_down_with_its_own_block() -> None:
    """docs/window.md#stand-down: an armed visit after two pin-blocked visits files the ledgerFacts
    stand-down block."""

    def standing(turn: Turn) -> Standing | None:
        return "fact"

    blocked = [record(0, lf(0, 0)), record(0, ltr(0, 0))]
    outcome = await run_stage(
        Dropper(keep=2),
        WINDOW_35,
        prior=blocked,
        keep_last_tool_results=0,
        fact_limit=3,
        turn_standing=standing,
    )
    assert outcome is not None
    assert outcome.facts_stood_down
    assert not outcome.stood_down
    assert outcome.record.ledger_facts == stand_down_block(3)
    assert outcome.record.observations is msgspec.UNSET
    assert outcome.record.removed_message_count == 2


async def test_recency_off_never_stands_down() -> None:
    """docs/window.md#stand-down: a limit of 0 (or False) never stands down and files no
    observations."""
    for off in (0, False):
        outcome = await run_stage(
            Dropper(keep=2), WINDOW_35, prior=[BLOCKED, BLOCKED], keep_last_tool_results=off
        )
        assert outcome is not None
        assert not outcome.stood_down
        assert outcome.record.observations is msgspec.UNSET
