"""The pure visit pipeline: guards, pins, validation and stage keys
(docs/window.md#the-droppedobservations-key, docs/window.md#visit-pipeline), with the acceptance
properties over random windows."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import WindowConfigError, WindowStrategyError
from afp_runtime.messages import Message
from afp_runtime.window import (
    CustomRecord,
    MessageOrigin,
    PriorVisit,
    Standing,
    Turn,
    WindowResult,
    WindowStrategy,
    WindowVisit,
    record_to_wire,
)
from afp_runtime.window.names import dropped_tool_names
from afp_runtime.window.observations import PinnedTurn, WindowObservations
from afp_runtime.window.turns import current_request_index, window_chars
from tests.window._build import (
    HOLDS,
    TASK,
    A,
    Dropper,
    R,
    T,
    U,
    cr,
    ikw,
    lf,
    ltr,
    origins,
    pt,
    run_stage,
    unset_free,
)
from tests.window._gen import PERSON_TEXTS, windows


class Quiet:
    """A strategy that never engages."""

    name = "quiet"

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Decline every visit."""
        return None


class PlansTwice:
    """A dropper (keep 2) that then asks for a second plan (keep 3) with the same span."""

    name = "dropper"

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Ask twice; the second plan has no block, so the first plan's block is filed."""
        result = await Dropper(keep=2).plan(visit)
        second = visit.plan_removal(3)
        assert second.observations is msgspec.UNSET
        assert second.span == visit.latest_plan.span == (1, 2)  # type: ignore[union-attr]
        return result


class BadKeep:
    """A strategy that asks for a plan with an invalid keep depth."""

    name = "bad-keep"

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Ask for keep 0."""
        visit.plan_removal(0)
        return None


async def test_declining_strategy_files_nothing() -> None:
    """docs/window.md#visit-pipeline step 8: a strategy returning None leaves no outcome at all."""
    assert await run_stage(Quiet(), [U(TASK), *R("c1")], said=TASK) is None


async def test_case_37_record_that_removed_nothing_has_no_dropped_observations() -> None:
    """Case 37: a record that removed nothing never carries droppedObservations."""
    history = [U(TASK), *R("c1")]
    outcome = await run_stage(Dropper(keep=2), history, said=TASK)
    assert outcome is not None
    assert outcome.record.removed_message_count == 0
    assert "droppedObservations" not in record_to_wire(outcome.record)
    assert outcome.window is msgspec.UNSET
    assert outcome.evicted == ()


async def test_case_37_dropped_observations_named_from_the_pre_change_window() -> None:
    """Case 37: the stage names evicted results exactly, uncapped and unfiltered."""
    history = [
        U(TASK),
        A(["w"], names=["whats here!"]),
        T("w", name=None),
        A(["p", "q"], names=["pan_view", "look"]),
        T("p", name=None),
        T("q"),
        *R("c1"),
        *R("c2"),
    ]
    outcome = await run_stage(Dropper(keep=2), history, said=TASK)
    assert outcome is not None
    assert outcome.record.dropped_observations == ("whats here!", "pan_view", "look")
    assert outcome.evicted == tuple(history[1:6])
    assert record_to_wire(outcome.record)["droppedObservations"] == [
        "whats here!",
        "pan_view",
        "look",
    ]


async def test_observations_come_from_the_plans_the_strategy_obtained() -> None:
    """docs/window.md#what-a-visit-offers: a later plan without a block does not erase the block an
    earlier plan produced."""
    history = [U(TASK), *R("a"), *R("b"), *R("o", "observer", HOLDS), *R("c"), *R("d")]
    outcome = await run_stage(PlansTwice(), history, said=TASK, keep_last_tool_results=2)
    assert outcome is not None
    assert outcome.record.observations == WindowObservations(
        pinned=(PinnedTurn(tool_name="observer", turn_index=3, chars=62),), yielded=0, limit=2
    )
    assert outcome.evicted == tuple(history[1:5])


async def test_pins_bind_into_every_strategy() -> None:
    """docs/window.md#pins: the stage's recency pins hold turns against a custom strategy too."""
    history = [U(TASK), *R("o", "observer", HOLDS), *R("a"), *R("b"), *R("c")]
    outcome = await run_stage(Dropper(keep=2), history, said=TASK, keep_last_tool_results=2)
    assert outcome is not None
    assert outcome.record.refusals == (cr(0, 0), ltr(1, 1), ikw(3, 5), ikw(4, 7))
    assert outcome.evicted == tuple(history[3:5])


async def test_pause_fields_reach_the_guards() -> None:
    """docs/window.md#guards: a caller visiting a paused window gets the paused call's turn
    refused."""
    history = [U(TASK), *R("c1"), A(["c2"]), *R("c3"), *R("c4")]
    outcome = await run_stage(Dropper(keep=1), history, said=TASK, paused_tool_call_id="c2")
    assert outcome is not None
    assert outcome.record.refusals == (cr(0, 0), pt(2, 3), ikw(4, 6))
    assert outcome.evicted == tuple(history[1:3])


async def test_armed_visit_files_ledger_facts() -> None:
    """docs/window.md#ledger-fact-pin: with a standing callable and a fact limit the ledgerFacts
    block is stamped."""

    def standing(turn: Turn) -> Standing | None:
        return "fact" if turn.index == 1 else None

    history = [U(TASK), *R("o", "observer", HOLDS), *R("a"), *R("b"), *R("c")]
    outcome = await run_stage(
        Dropper(keep=2), history, said=TASK, fact_limit=4, turn_standing=standing
    )
    assert outcome is not None
    assert outcome.record.refusals == (cr(0, 0), lf(1, 1), ikw(3, 5), ikw(4, 7))
    assert outcome.record.ledger_facts == WindowObservations(
        pinned=(PinnedTurn(tool_name="observer", turn_index=1, chars=62),), yielded=0, limit=4
    )
    assert outcome.record.observations is msgspec.UNSET


async def test_fact_limit_without_standing_is_unarmed() -> None:
    """docs/window.md#visit-pipeline step 5: without a standing callable no fact pin applies and no
    block is filed."""
    history = [U(TASK), *R("o", "observer", HOLDS), *R("a"), *R("b"), *R("c")]
    outcome = await run_stage(Dropper(keep=2), history, said=TASK, fact_limit=4)
    assert outcome is not None
    assert outcome.record.ledger_facts is msgspec.UNSET
    assert "ledgerFacts" not in record_to_wire(outcome.record)


async def test_stamping_keeps_a_custom_records_extra() -> None:
    """docs/window.md#visit-pipeline step 10: stage keys are added beside a custom record's own
    keys."""

    class Tagged:
        name = "dropper"

        async def plan(self, visit: WindowVisit) -> WindowResult | None:
            result = await Dropper(keep=1).plan(visit)
            record = msgspec.structs.replace(result.record, extra={"mood": "tidy"})
            return msgspec.structs.replace(result, record=record)

    outcome = await run_stage(Tagged(), [U(TASK), *R("c1"), *R("c2")], said=TASK)
    assert outcome is not None
    assert isinstance(outcome.record, CustomRecord)
    assert outcome.record.extra == {"mood": "tidy"}
    assert outcome.record.dropped_observations == ("look",)


async def test_plan_removal_errors_name_the_strategy() -> None:
    """docs/window.md#errors: a bad keep depth asked of the visit is a strategy error naming the
    strategy."""
    with pytest.raises(WindowStrategyError) as caught:
        await run_stage(BadKeep(), [U(TASK), *R("c1")], said=TASK)
    assert caught.value.strategy == "bad-keep"
    assert caught.value.field == "keep_recent_turns"
    assert "bad-keep" in str(caught.value)


@pytest.mark.parametrize("dial", [True, -1, 1.5, "two", None])
async def test_keep_last_tool_results_is_checked(dial: object) -> None:
    """docs/window.md#last-tool-result-pin: the recency dial is an int >= 0 or False; anything else
    names the option."""
    with pytest.raises(WindowConfigError) as caught:
        await run_stage(Dropper(), [U(TASK)], keep_last_tool_results=dial)  # type: ignore[arg-type]
    assert "keep_last_tool_results" in str(caught.value)


async def test_prior_is_updated_with_the_filed_record() -> None:
    """docs/window.md#stand-down: the outcome carries the turn's last two filed visits, this one
    last."""
    history = [U(TASK), *R("c1"), *R("c2")]
    first = await run_stage(Dropper(keep=2), history, said=TASK)
    assert first is not None
    second = await run_stage(Dropper(keep=2), history, said=TASK, prior=first.prior)
    third = await run_stage(Dropper(keep=2), history, said=TASK, prior=second.prior)  # type: ignore[union-attr]
    assert third is not None
    assert len(third.prior) == 2
    assert third.prior[-1].removed_message_count == 0


# --- acceptance properties -----------------------------------------------------------------


def strategy_choices() -> list[str]:
    """The strategies the properties run: the dropper, and sliding-window when it exists."""
    try:
        from afp_runtime.window.strategies import sliding_window  # noqa: F401
    except ImportError:
        return ["dropper"]
    return ["dropper", "sliding"]


def build(kind: str, keep: int) -> WindowStrategy:
    """A strategy of ``kind`` keeping ``keep`` recent turns."""
    if kind == "sliding":
        from afp_runtime.window.strategies import sliding_window

        return sliding_window(keep_recent_turns=keep)
    return Dropper(keep=keep)


def assert_visit_laws(
    history: Sequence[Message],
    said: str | None,
    born: Sequence[MessageOrigin],
    outcome: object,
) -> tuple[Message, ...]:
    """Check one engaged visit against the laws; return the window after it."""
    from afp_runtime.window import VisitOutcome

    assert isinstance(outcome, VisitOutcome)
    record = outcome.record
    size = len(history)
    if outcome.window is msgspec.UNSET:
        assert outcome.rebase is msgspec.UNSET
        assert record.removed_message_count == 0
        assert record.window_chars_after == window_chars(history) == record.window_chars_before
        assert outcome.evictions == () and outcome.evicted == ()
        assert record.dropped_observations is msgspec.UNSET
        return tuple(history)
    window = outcome.window
    rebase = outcome.rebase
    assert not isinstance(rebase, msgspec.UnsetType)
    head, tail = rebase.head_count, rebase.kept_tail_count
    removed = range(head, size - tail)
    gone = tuple(history[head : size - tail])
    # Survivors are untouched and in order; the removed span is contiguous and non-empty.
    assert len(removed) > 0
    assert window[:head] == tuple(history[:head])
    assert tail == 0 or window[-tail:] == tuple(history[size - tail :])
    assert [e.index for e in outcome.evictions] == list(removed)
    # What the record says left is exactly what left.
    assert outcome.evicted == gone
    assert record.removed_message_count == len(gone)
    stage_ids = list(dict.fromkeys(born[i].stage_id for i in removed))
    assert list(record.removed_stage_ids) == stage_ids
    assert record.window_chars_after == window_chars(window)
    names = dropped_tool_names(gone, history)
    assert record.dropped_observations == (names if names else msgspec.UNSET)
    # Nothing protected left.
    anchor = current_request_index(history, said)
    assert anchor is None or anchor not in removed
    assert all(m.role != "system" for m in gone)
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    assert all(c.id in answered for m in gone for c in m.tool_calls)
    # A call is never separated from its result.
    calls_left = {c.id for m in window for c in m.tool_calls}
    results_left = {m.tool_call_id for m in window if m.role == "tool"}
    assert results_left <= calls_left
    assert calls_left & answered <= results_left
    return window


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=windows(max_turns=14),
    kind=st.sampled_from(strategy_choices()),
    keep=st.integers(1, 6),
    dial=st.one_of(st.just(False), st.integers(0, 3)),
    said_pick=st.one_of(st.none(), st.sampled_from(PERSON_TEXTS)),
    visits=st.integers(1, 4),
)
async def test_visits_obey_the_window_laws(
    history: list[Message],
    kind: str,
    keep: int,
    dial: int | bool,
    said_pick: str | None,
    visits: int,
) -> None:
    """Over random windows and options, every visit keeps the window family's laws."""
    snapshot = list(history)
    window: tuple[Message, ...] = tuple(history)
    born = list(origins(len(window)))
    prior: tuple[PriorVisit, ...] = ()
    strategy = build(kind, keep)
    for number in range(visits):
        before = window
        outcome = await run_stage(
            strategy,
            window,
            said=said_pick,
            prior=prior,
            keep_last_tool_results=dial,
            origins=tuple(born),
            iteration=number + 1,
        )
        if outcome is None:
            break
        window = assert_visit_laws(before, said_pick, born, outcome)
        event(f"{kind} removed" if outcome.evictions else f"{kind} kept all")
        if outcome.stood_down:
            event("recency pin stood down")
        assert before == tuple(before)
        prior = outcome.prior
        if outcome.rebase is not msgspec.UNSET:
            rebase = outcome.rebase
            middle = len(window) - rebase.head_count - rebase.kept_tail_count
            inserted = [MessageOrigin(stage_id="window#9", born_at_ms=2000)] * middle
            tail = born[len(born) - rebase.kept_tail_count :] if rebase.kept_tail_count else []
            born = [*born[: rebase.head_count], *inserted, *tail]
        assert len(born) == len(window)
    assert history == snapshot


def test_a_window_record_lists_refusals_for_real_turns_only() -> None:
    """Helpers: unset_free refuses an UNSET window (guards the tests' own assumptions)."""
    with pytest.raises(AssertionError):
        unset_free(msgspec.UNSET)
