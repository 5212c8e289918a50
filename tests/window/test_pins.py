"""Pins, ceilings and tool names (docs/window.md#pins, docs/window.md#naming-a-tool-result;
docs/window.md#how-this-is-tested cases 29-34, 37)."""

from __future__ import annotations

import msgspec

from afp_runtime.messages import Message
from afp_runtime.window import Standing, Turn, call_names, tool_name_of
from afp_runtime.window.names import dropped_tool_names
from afp_runtime.window.observations import (
    LedgerFactPin,
    PinnedTurn,
    ToolResultPin,
    WindowObservations,
)
from afp_runtime.window.pins import ledger_fact_pins, spend_ceiling, tool_result_pins
from afp_runtime.window.plan import RemovalPlan, plan_removal
from afp_runtime.window.turns import current_request_index, segment
from tests.window._build import (
    HOLDS,
    TASK,
    A,
    Dropper,
    R,
    T,
    U,
    cr,
    guards,
    ikw,
    ltr,
    run_stage,
    unset_free,
)


def pin(name: str, turn: int, message: int, chars: int) -> ToolResultPin:
    """A recency pin candidate."""
    return ToolResultPin(tool_name=name, turn_index=turn, message_index=message, chars=chars)


def pinned(name: str, turn: int, chars: int) -> PinnedTurn:
    """An admitted pin as a block lists it."""
    return PinnedTurn(tool_name=name, turn_index=turn, chars=chars)


def pinned_plan(history: list[Message], keep: int, limit: int) -> RemovalPlan:
    """The plan with the recency pin at ``limit``, anchored at TASK
    (docs/window.md#how-this-is-tested pure pin cases)."""
    anchor = current_request_index(history, TASK)
    turns = segment(history)
    pins = tool_result_pins(turns, history, anchor) if limit > 0 else ()
    held = guards(
        history,
        current_request_index=anchor,
        recency_pins=pins,
        recency_limit=limit if pins else 0,
    )
    return plan_removal(turns, keep, held)


# --- candidates (docs/window.md#last-tool-result-pin)
# ---------------------------------------------------------------------


def test_case_29_latest_result_per_name_after_the_anchor() -> None:
    """Case 29: one pin per tool name, newest first, nothing at or before the anchor."""
    history = [
        *R("old", "whats_here", "STALE"),
        U(TASK),
        *R("a", "whats_here", HOLDS),
        *R("b", "move"),
        *R("c", "move"),
    ]
    pins = tool_result_pins(segment(history), history, current_request_index(history, TASK))
    assert pins == (pin("move", 4, 7, 2), pin("whats_here", 2, 3, 62))


def test_case_29_without_an_anchor_every_result_counts() -> None:
    """Case 29: with no anchor there is no bound, so older results may pin too."""
    history = [*R("old", "whats_here", "STALE"), *R("b", "move")]
    pins = tool_result_pins(segment(history), history, None)
    assert pins == (pin("move", 1, 2, 2), pin("whats_here", 0, 0, 5))


def test_case_30_batch_is_pinned_once() -> None:
    """Case 30: a batch turn is pinned once, named after its newest nameable result."""
    history = [
        U(TASK),
        A(["x1", "x2", "x3"], names=["alpha", "beta", "gamma"]),
        T("x1", name="alpha"),
        T("x2", name=None),
        T("x3", name="gamma"),
        *R("y", "delta"),
    ]
    pins = tool_result_pins(segment(history), history, 0)
    assert pins == (pin("delta", 2, 5, 2), pin("gamma", 1, 1, 6))


def test_case_30_name_from_the_call_and_orphans_name_nothing() -> None:
    """Case 30: an unnamed result takes its call's name; an orphan names nothing."""
    history = [
        U(TASK),
        A(["p"], names=["pan_view"]),
        T("p", name=None),
        T("zz", name=None),
        *R("q", "move"),
    ]
    pins = tool_result_pins(segment(history), history, 0)
    assert pins == (pin("move", 2, 4, 2), pin("pan_view", 1, 1, 4))


def test_batch_consumes_names_so_older_turns_of_those_tools_do_not_pin() -> None:
    """docs/window.md#last-tool-result-pin: a batch's other tools are consumed, so their older
    results do not pin."""
    history = [
        U(TASK),
        *R("o", "beta"),
        A(["x1", "x2"], names=["alpha", "beta"]),
        T("x1", name="alpha"),
        T("x2", name="beta"),
    ]
    pins = tool_result_pins(segment(history), history, 0)
    assert pins == (pin("beta", 2, 3, 4),)


def test_settled_results_name_nothing_and_do_not_pin() -> None:
    """docs/window.md#naming-a-tool-result: a not-dispatched result names no tool, so it never
    pins."""
    settled = Message(
        role="tool", content="refused", tool_call_id="s", tool_name="look", not_dispatched=True
    )
    history = [U(TASK), A(["s"]), settled]
    assert tool_result_pins(segment(history), history, 0) == ()


# --- ceilings (docs/window.md#ceilings-and-yielded)
# -----------------------------------------------------------------------


def test_case_31_ceiling_admits_the_newest_contested_pins() -> None:
    """Case 31: the ceiling admits the two newest contested pins and yields the rest."""
    history = [
        U(TASK),
        *R("t1", "tool_one"),
        *R("t2", "tool_two"),
        *R("t3", "tool_three"),
        *R("t4", "tool_four"),
        *R("t5", "tool_five"),
        *R("t6", "tool_five"),
        *R("t7", "tool_five"),
    ]
    result = pinned_plan(history, 2, 2)
    assert result.span == (1, 2)
    assert result.refusals == (cr(0, 0), ltr(3, 5), ikw(6, 11), ikw(7, 13))
    assert result.observations == WindowObservations(
        pinned=(pinned("tool_four", 4, 2), pinned("tool_three", 3, 2)), yielded=2, limit=2
    )


def test_case_32_free_pin_and_limits() -> None:
    """Case 32: a pin inside the keep window is free; limit 0 and a new request release."""
    history = [
        U(TASK),
        *R("o", "observer", HOLDS),
        *R("a1", "actuator"),
        *R("a2", "actuator"),
        *R("a3", "actuator"),
    ]
    result = pinned_plan(history, 2, 1)
    assert result.observations == WindowObservations(
        pinned=(pinned("observer", 1, 62),), yielded=0, limit=1
    )
    assert result.span == (2, 2)
    assert result.refusals == (cr(0, 0), ltr(1, 1), ikw(3, 5), ikw(4, 7))

    result = pinned_plan(history, 2, 0)
    assert result.observations is msgspec.UNSET
    assert result.span == (1, 2)
    assert result.refusals == (cr(0, 0), ikw(3, 5), ikw(4, 7))

    released = [U("q"), *R("w", "whats_here"), *R("m", "move"), U(TASK)]
    result = pinned_plan(released, 2, 2)
    assert result.observations is msgspec.UNSET
    assert result.span == (0, 1)
    assert result.refusals == (ikw(2, 3), ikw(3, 5))


async def test_case_33_contiguity_the_hold_shields_nothing_younger() -> None:
    """Case 33: the span stops at the held turn; the next visit steps over it."""
    history = [
        U(TASK),
        *R("a"),
        *R("b"),
        *R("c"),
        *R("pin", "observer", HOLDS),
        *R("d"),
        *R("e"),
        *R("f"),
    ]
    result = pinned_plan(history, 2, 2)
    assert result.span == (1, 3)
    assert result.refusals == (cr(0, 0), ltr(4, 7), ikw(6, 11), ikw(7, 13))

    outcome = await run_stage(Dropper(keep=2), history, said=TASK, keep_last_tool_results=2)
    assert outcome is not None
    assert outcome.record.removed_message_count == 6
    assert outcome.record.window_chars_before - outcome.record.window_chars_after == 6
    after = list(unset_free(outcome.window))
    assert after == [U(TASK), *R("pin", "observer", HOLDS), *R("d"), *R("e"), *R("f")]

    result = pinned_plan(after, 2, 2)
    assert result.span == (2, 2)
    assert result.refusals == (cr(0, 0), ltr(1, 1), ikw(3, 5), ikw(4, 7))


def test_case_34_superseded_results_inside_the_keep_window_are_free() -> None:
    """Case 34: when the latest results sit in the keep window no block is filed."""
    history = [
        U(TASK),
        *R("a", "whats_here", HOLDS),
        *R("b", "move"),
        *R("c", "whats_here"),
        *R("d", "move"),
    ]
    result = pinned_plan(history, 2, 2)
    assert result.observations is msgspec.UNSET
    assert result.span == (1, 2)


def test_spend_ceiling_edges() -> None:
    """docs/window.md#ceilings-and-yielded: no limit, no candidates or no contested candidate means
    no block, nothing held."""
    pins = (pin("a", 5, 9, 1), pin("b", 3, 5, 1), pin("c", 1, 1, 1))
    assert spend_ceiling(pins, 0, 4) == (msgspec.UNSET, frozenset())
    assert spend_ceiling((), 2, 4) == (msgspec.UNSET, frozenset())
    assert spend_ceiling(pins, 2, 1) == (msgspec.UNSET, frozenset())
    block, held = spend_ceiling(pins, 1, 4)
    assert held == frozenset({3})
    assert block == WindowObservations(pinned=(pinned("b", 3, 1),), yielded=1, limit=1)


def test_spend_ceiling_serves_fact_pins_too() -> None:
    """docs/window.md#ceilings-and-yielded: the same ceiling admits ledger-fact candidates."""
    facts = (
        LedgerFactPin(
            tool_call_ids=("x",), tool_name="look", turn_index=2, message_index=3, chars=4
        ),
    )
    block, held = spend_ceiling(facts, 4, 3)
    assert held == frozenset({2})
    assert block == WindowObservations(pinned=(pinned("look", 2, 4),), yielded=0, limit=4)


# --- ledger-fact candidates (docs/window.md#ledger-fact-pin)
# ---------------------------------------------------------


def test_ledger_fact_pins_newest_first_over_fact_turns() -> None:
    """docs/window.md#ledger-fact-pin: fact turns pin newest first with all their surviving ids in
    wire order."""
    history = [
        U(TASK),
        A(["f1", "f2"], names=["scan", "probe"]),
        T("f1", "aa", name="scan"),
        T("f2", "bb", name=None),
        *R("n1", "move"),
        *R("f3", "look", "ccc"),
    ]
    facts = {1, 3}

    def standing(turn: Turn) -> Standing | None:
        return "fact" if turn.index in facts else "noise"

    pins = ledger_fact_pins(segment(history), history, standing, 0)
    assert pins == (
        LedgerFactPin(
            tool_call_ids=("f3",), tool_name="look", turn_index=3, message_index=6, chars=3
        ),
        LedgerFactPin(
            tool_call_ids=("f1", "f2"), tool_name="probe", turn_index=1, message_index=1, chars=4
        ),
    )


def test_ledger_fact_pins_skip_turns_without_survivors_or_names() -> None:
    """docs/window.md#ledger-fact-pin: turns before the anchor, with no id past it, or with no name
    are skipped."""
    settled = Message(
        role="tool", content="x", tool_call_id="s", tool_name="look", not_dispatched=True
    )
    history = [*R("early", "look"), U(TASK), A(["s"]), settled, A([], "plain")]
    pins = ledger_fact_pins(segment(history), history, lambda turn: "fact", 2)
    assert pins == ()


# --- names (docs/window.md#naming-a-tool-result, docs/window.md#names-of-what-left)
# --------------------------------------------------------------------


def test_tool_name_of_rules() -> None:
    """docs/window.md#naming-a-tool-result: own name first, then the first call's name; no name for
    settled or unknown ones."""
    context = [A(["p"], names=["pan_view"]), A(["p"], names=["later"]), A(["e"], names=[""])]
    assert tool_name_of(T("p", name="own"), context) == "own"
    assert tool_name_of(T("p", name=None), context) == "pan_view"
    assert tool_name_of(T("p", name=""), call_names(context)) == "pan_view"
    assert tool_name_of(T("e", name=None), context) is None
    assert tool_name_of(T("zz", name=None), context) is None
    assert tool_name_of(U("look"), context) is None
    settled = Message(role="tool", content="", tool_call_id="p", tool_name="x", not_dispatched=True)
    assert tool_name_of(settled, context) is None


def test_case_37_dropped_tool_names_first_appearance_once() -> None:
    """Case 37: names of a span in first-appearance order, each once, unnameable skipped."""
    span = [
        A(["w"], names=["whats_here"]),
        T("w", name="whats_here"),
        A(["p"], names=["pan_view"]),
        T("p", name=None),
        T("zz", name=None),
        A(["w2"], names=["whats_here"]),
        T("w2", name="whats_here"),
    ]
    assert dropped_tool_names(span) == ("whats_here", "pan_view")


def test_dropped_tool_names_uses_the_given_context() -> None:
    """docs/window.md#names-of-what-left: an evicted result whose call stayed behind is named from
    the context."""
    history = [A(["p"], names=["pan_view"]), T("p", name=None)]
    assert dropped_tool_names(history[1:]) == ()
    assert dropped_tool_names(history[1:], history) == ("pan_view",)
