"""The refusal engine and the removal plan (docs/window.md#why-a-turn-stays,
docs/window.md#the-removal-plan; docs/window.md#how-this-is-tested cases 5-14)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.errors import WindowStrategyError
from afp_runtime.messages import Message
from afp_runtime.window import Rebase, Turn
from afp_runtime.window.observations import ToolResultPin
from afp_runtime.window.plan import Guards, RemovalPlan, plan_removal, refusal_of
from afp_runtime.window.texts import SUMMARY_PREFIX
from afp_runtime.window.turns import current_request_index, segment
from tests.window._build import (
    TASK,
    A,
    Dropper,
    R,
    S,
    T,
    U,
    answered,
    cr,
    guards,
    ikw,
    lf,
    ltr,
    oes,
    pci,
    pt,
    run_stage,
    se,
    unset_free,
    urt,
)
from tests.window._gen import windows

FURTHER_IN_ROLES = ["system", "user", "assistant", "tool", "assistant", "tool"]
CASE_1 = [U("go"), A(["c1"]), T("c1"), A(["c2"]), T("c2"), A(["c3"]), T("c3")]
SUM = U(SUMMARY_PREFIX + " three earlier messages were folded here.")


def is_summary(turn: Turn) -> bool:
    """The summary predicate of summarize-oldest: the turn opens with a summary message."""
    first = turn.messages[0]
    return first.role == "user" and first.content.startswith(SUMMARY_PREFIX)


def plan(history: list[Message], keep: int, **kw: object) -> RemovalPlan:
    """``plan_removal`` over ``history`` with answered-id guards plus ``kw``."""
    return plan_removal(segment(history), keep, guards(history, **kw))


# --- refusal_of (docs/window.md#refusal-reasons)
# ---------------------------------------------------------------------


def test_case_5_unresolved_call() -> None:
    """Case 5: a turn with a call nobody answered refuses unresolved-tool-call."""
    history = [U("go"), A(["c1"])]
    assert refusal_of(segment(history)[1], guards(history), set(), set()) == urt(1, 1)


def test_case_5_paused_tool_and_check_in() -> None:
    """Case 5: the paused call's turn refuses paused-tool, or pending-check-in for a check-in."""
    history = [U("go"), A(["c1", "c2"]), T("c1")]
    held = guards(history, paused_tool_call_id="c2")
    assert refusal_of(segment(history)[1], held, set(), set()) == pt(1, 1)
    history = [U("go"), A(["c1"])]
    held = guards(history, paused_tool_call_id="c1", paused_check_in=True)
    assert refusal_of(segment(history)[1], held, set(), set()) == pci(1, 1)


def test_case_5_paused_on_a_result_message() -> None:
    """Case 5: a turn whose tool message answers the paused call refuses paused-tool."""
    history = [U("go"), A(["c1"]), T("c1")]
    held = guards(history, paused_tool_call_id="c1")
    assert refusal_of(segment(history)[1], held, set(), set()) == pt(1, 1)


def test_case_5_system_envelope() -> None:
    """Case 5: a turn holding a system message refuses system-envelope."""
    history = [S("sys"), U("go")]
    assert refusal_of(segment(history)[0], guards(history), set(), set()) == se(0, 0)


def test_case_6_precedence() -> None:
    """Case 6: hard reasons beat pins, and the recency pin beats the fact pin."""
    unanswered = [A(["u"])]
    turn = segment(unanswered)[0]
    assert refusal_of(turn, guards(unanswered), {0}, {0}) == urt(0, 0)
    done = [A(["u"]), T("u")]
    turn = segment(done)[0]
    assert refusal_of(turn, guards(done, current_request_index=0), {0}, {0}) == cr(0, 0)
    assert refusal_of(turn, guards(done), {0}, set()) == ltr(0, 0)
    assert refusal_of(turn, guards(done), set(), {0}) == lf(0, 0)
    assert refusal_of(turn, guards(done), {0}, {0}) == ltr(0, 0)
    assert refusal_of(turn, guards(done), set(), set()) is None


def test_precedence_anchor_before_system_and_pause() -> None:
    """The anchor outranks a system message and a pause in the same turn."""
    history = [U("go"), T("orphan"), S("sys")]
    first = segment(history)[0]
    held = guards(history, current_request_index=0, paused_tool_call_id="orphan")
    assert refusal_of(first, held, set(), set()) == cr(0, 0)
    held = guards(history, paused_tool_call_id="orphan")
    assert refusal_of(first, held, set(), set()) == pt(0, 0)


# --- plan_removal (docs/window.md#the-removal-plan)
# ---------------------------------------------------------------------


def test_case_7_keep_two() -> None:
    """Case 7: keep 2 on the case-1 window removes the oldest two turns."""
    result = plan(CASE_1, 2)
    assert result.span == (0, 1)
    assert result.refusals == (ikw(2, 3), ikw(3, 5))


def test_case_8_refusal_ends_the_span() -> None:
    """Case 8: an unremovable turn after the span's start ends it; later turns get no entry."""
    history = [U("go"), A(["dangling"]), *R("c2"), *R("c3"), *R("c4")]
    result = plan(history, 1)
    assert result.span == (0, 0)
    assert result.refusals == (urt(1, 1), ikw(4, 6))


def test_case_9_span_of_two_then_break() -> None:
    """Case 9: the span runs until the first refusing turn."""
    history = [U("go"), *R("c1"), A(["dangling"]), *R("c3"), *R("c4")]
    result = plan(history, 1)
    assert result.span == (0, 1)
    assert result.refusals == (urt(2, 3), ikw(4, 6))


def test_case_10_nothing_removable() -> None:
    """Case 10: a refusing oldest turn and a keep window leave no span."""
    history = [A(["dangling"]), *R("c2"), *R("c3")]
    result = plan(history, 2)
    assert result.span is None
    assert result.refusals == (urt(0, 0), ikw(1, 1), ikw(2, 3))


def test_case_11_within_keep_depth_no_blocks_even_with_pins() -> None:
    """Case 11: keep 99 keeps everything and attaches no observation block."""
    pins = (ToolResultPin(tool_name="look", turn_index=1, message_index=1, chars=2),)
    held = guards(CASE_1, recency_pins=pins, recency_limit=2)
    result = plan_removal(segment(CASE_1), 99, held)
    assert result.span is None
    assert result.refusals == (ikw(0, 0), ikw(1, 1), ikw(2, 3), ikw(3, 5))
    assert result.observations is msgspec.UNSET
    assert result.ledger_facts is msgspec.UNSET


def test_case_12_only_an_existing_summary() -> None:
    """Case 12: a span that is exactly one existing summary is refused only-existing-summary."""
    history = [SUM, *R("c1")]
    result = plan_removal(segment(history), 1, guards(history), is_summary)
    assert result.span is None
    assert result.refusals == (oes(0, 0), ikw(1, 1))
    history = [*history, *R("c2")]
    result = plan_removal(segment(history), 1, guards(history), is_summary)
    assert result.span == (0, 1)
    assert result.refusals == (ikw(2, 3),)


def test_case_12_predicate_is_not_consulted_without_being_given() -> None:
    """Case 12: without the summary predicate an old summary is an ordinary turn."""
    history = [SUM, *R("c1")]
    result = plan(history, 1)
    assert result.span == (0, 0)
    assert result.refusals == (ikw(1, 1),)


def test_case_14_system_and_request_stepped_over() -> None:
    """Case 14: the system turn and the request refuse; the span lies further in."""
    history = [S("rules"), U(TASK), *R("c1"), *R("c2"), *R("c3")]
    result = plan(history, 2, current_request_index=1)
    assert result.span == (2, 2)
    assert result.refusals == (se(0, 0), cr(1, 1), ikw(3, 4), ikw(4, 6))


async def test_case_14_removal_further_in_inserts_nothing() -> None:
    """Case 14: removing the span further in keeps the order of system, request and tail."""
    history = [S("rules"), U(TASK), *R("c1"), *R("c2"), *R("c3")]
    outcome = await run_stage(Dropper(keep=2), history, said=TASK)
    assert outcome is not None
    assert outcome.record.refusals == (se(0, 0), cr(1, 1), ikw(3, 4), ikw(4, 6))
    assert outcome.record.removed_message_count == 2
    assert [m.role for m in unset_free(outcome.window)] == FURTHER_IN_ROLES
    assert outcome.rebase == Rebase(head_count=2, kept_tail_count=4)


async def test_case_14_sliding_window_inserts_no_notice() -> None:
    """Case 14: sliding-window removes the span further in with no notice."""
    strategies = pytest.importorskip("afp_runtime.window.strategies")
    sliding = getattr(strategies, "sliding_window", None)
    if sliding is None:
        pytest.skip("sliding_window is not exported yet")
    history = [S("rules"), U(TASK), *R("c1"), *R("c2"), *R("c3")]
    outcome = await run_stage(sliding(keep_recent_turns=2), history, said=TASK)
    assert outcome is not None
    assert outcome.record.refusals == (se(0, 0), cr(1, 1), ikw(3, 4), ikw(4, 6))
    assert outcome.record.removed_message_count == 2
    assert [m.role for m in unset_free(outcome.window)] == FURTHER_IN_ROLES
    assert outcome.rebase == Rebase(head_count=2, kept_tail_count=4)


@pytest.mark.parametrize("keep", [0, -1, True, False, 1.5, "2", None])
def test_keep_recent_turns_must_be_an_int_of_at_least_one(keep: object) -> None:
    """A keep that is not an int >= 1 (bools included) is a strategy error naming the field."""
    with pytest.raises(WindowStrategyError) as caught:
        plan_removal(segment(CASE_1), keep, Guards())  # type: ignore[arg-type]
    assert caught.value.field == "keep_recent_turns"
    assert repr(keep) in str(caught.value)


def test_refusing_turns_before_the_span_are_stepped_over() -> None:
    """Refusals before the span are listed in scan order and the scan goes on past them."""
    history = [S("a"), A(["x"]), U("go"), *R("c1"), S("b"), *R("c2")]
    result = plan(history, 1)
    assert result.span == (2, 3)
    assert result.refusals == (se(0, 0), urt(1, 1), se(4, 5), ikw(5, 6))


# --- case 13: properties ------------------------------------------------------------------


@given(history=windows(orphans=False), keep=st.integers(1, 8), anchored=st.booleans())
def test_case_13_plan_properties(history: list[Message], keep: int, anchored: bool) -> None:
    """Case 13: the span stays out of the keep window and never splits a call from a result."""
    turns = segment(history)
    anchor = current_request_index(history, None) if anchored else None
    held = Guards(answered_call_ids=answered(history), current_request_index=anchor)
    result = plan_removal(turns, keep, held)
    if result.span is None:
        return
    first, last = result.span
    assert first <= last < len(turns) - keep
    start, end = turns[first].start, turns[last].start + turns[last].length
    span = history[start:end]
    requested = {c.id for m in span for c in m.tool_calls}
    answered_here = {m.tool_call_id for m in span if m.role == "tool"}
    assert requested == answered_here
    survivors = history[:start] + history[end:]
    calls_left = {c.id for m in survivors for c in m.tool_calls}
    assert all(m.tool_call_id in calls_left for m in survivors if m.role == "tool")
    assert anchor is None or not start <= anchor < end
    assert all(m.role != "system" for m in span)
