"""The drop mechanic and the notice ladder (docs/window.md#dropping-the-oldest-turns;
docs/window.md#how-this-is-tested cases 14, 16-23), run through the sliding-window strategy with
keep 2 as the cases say."""

from __future__ import annotations

from typing import ClassVar

import msgspec
import pytest

from afp_runtime.errors import WindowStrategyError
from afp_runtime.messages import Message
from afp_runtime.window.drop import drop_oldest_span, fitting_notice
from afp_runtime.window.stage import visit_window
from afp_runtime.window.strategies import sliding_window
from afp_runtime.window.texts import build_drop_notice, is_drop_notice
from afp_runtime.window.turns import segment, window_chars
from afp_runtime.window.visit import Eviction, Rebase, WindowResult
from tests.window._build import (
    NOW_MS,
    TASK,
    A,
    R,
    S,
    T,
    U,
    cr,
    ikw,
    origins,
    rns,
    run_stage,
    se,
    unset_free,
    urt,
    visit,
)

SW = "sliding-window"


def P(n: int, i: int, s: str = SW, kept: bool = False) -> str:
    """The plain notice."""
    return build_drop_notice(n, i, s, kept, ())


def RICH(n: int, i: int, s: str, kept: bool, names: list[str]) -> str:
    """The rich notice."""
    return build_drop_notice(n, i, s, kept, names)


def F(x: int, y: int) -> list[Message]:
    """``[U TASK, A[c1], T c1 "a"*x, A[c2], T c2 "b"*y, A[c3], T c3 "c"*y]``."""
    return [
        U(TASK),
        A(["c1"]),
        T("c1", "a" * x),
        A(["c2"]),
        T("c2", "b" * y),
        A(["c3"]),
        T("c3", "c" * y),
    ]


def results(n: int, body: str) -> list[Message]:
    """``*R r1 .. *R rn`` with ``body`` as every result."""
    out: list[Message] = []
    for k in range(1, n + 1):
        out.extend(R(f"r{k}", c=body))
    return out


async def slide(history: list[Message], keep: int = 2, **kw: object) -> WindowResult:
    """One sliding-window visit that must engage."""
    strategy = sliding_window(keep_recent_turns=keep)
    result = await strategy.plan(visit(history, **kw))  # type: ignore[arg-type]
    assert result is not None
    return result


class TestCase16:
    """Case 16: F(700,700), no anchor: the rich notice goes in at index 0."""

    async def test_record_and_window(self) -> None:
        """Case 16: 3 removed, rich notice at 0, chars 2231 -> 1400 + notice, turns 4 -> 3."""
        history = F(700, 700)
        result = await slide(history)
        notice = RICH(3, 4, SW, False, ["look"])
        assert result.window == (Message(role="user", content=notice), *history[3:])
        assert result.rebase == Rebase(head_count=0, kept_tail_count=4, inserted_at_ms=2000)
        assert result.evictions == tuple(Eviction(index=k, survival_ms=1000) for k in range(3))
        record = result.record
        assert record.removed_stage_ids == ("writer#0", "writer#1", "writer#2")
        assert record.removed_message_count == 3
        assert record.window_chars_before == 2231
        assert record.window_chars_after == 1400 + len(notice)
        assert (record.turns_before, record.turns_after) == (4, 3)  # type: ignore[union-attr]
        assert record.refusals == (ikw(2, 3), ikw(3, 5))

    async def test_stage_stamps_dropped_observations(self) -> None:
        """Case 16: through the stage the record gains ``droppedObservations ["look"]``."""
        history = F(700, 700)
        outcome = await visit_window(
            sliding_window(keep_recent_turns=2),
            history=history,
            said=None,
            measured=None,
            iteration=4,
            run_id="run-1",
            agent_model="agent-model",
            provider_name="scripted",
            now_ms=2000,
            origins=origins(len(history)),
            prior=(),
            keep_last_tool_results=False,
        )
        assert outcome is not None
        # Through the stage the person's message anchors, so only the stamp is compared here.
        assert outcome.record.dropped_observations == ("look",)


class TestRungs:
    """Cases 17-19: the plain rung, the rich rung with kept, and equal-is-not-smaller."""

    async def test_case_17_plain_rung(self) -> None:
        """Case 17: the rich rung is too long, the plain kept notice fits at index 1."""
        x = len(P(2, 4, kept=True)) + 1
        assert len(RICH(2, 4, SW, True, ["look"])) >= x
        history = F(x, 400)
        result = await slide(history, anchor=0)
        record = result.record
        assert record.refusals == (cr(0, 0), ikw(2, 3), ikw(3, 5))
        assert record.removed_message_count == 2
        assert record.removed_stage_ids == ("writer#1", "writer#2")
        assert result.rebase == Rebase(head_count=1, kept_tail_count=4, inserted_at_ms=2000)
        assert result.window is not msgspec.UNSET
        assert result.window[0].content == TASK
        assert result.window[1].content == P(2, 4, kept=True)
        assert (record.window_chars_before, record.window_chars_after) == (931 + x, 930 + x)
        assert (record.turns_before, record.turns_after) == (4, 4)  # type: ignore[union-attr]

    async def test_case_18_rich_rung_with_kept(self) -> None:
        """Case 18: with room for it, the rich kept notice goes in at index 1."""
        rich = RICH(2, 4, SW, True, ["look"])
        result = await slide(F(len(rich) + 1, 400), anchor=0)
        assert result.window is not msgspec.UNSET
        assert result.window[1].content == rich
        assert result.record.window_chars_after == 931 + len(rich)

    async def test_case_19_equal_is_not_smaller(self) -> None:
        """Case 19: a notice as long as the span does not fit; the span leaves silently."""
        x = len(P(2, 4, kept=True))
        history = F(x, 400)
        result = await slide(history, anchor=0)
        assert result.record.removed_message_count == 2
        assert result.rebase == Rebase(head_count=1, kept_tail_count=4)
        assert result.window == (history[0], *history[3:])
        record = result.record
        assert (record.window_chars_before, record.window_chars_after) == (931 + x, 931)
        assert (record.turns_before, record.turns_after) == (4, 3)  # type: ignore[union-attr]


class TestFrontCases:
    """Cases 20-23: an old notice, a large span, the wire refusal, a restored conversation."""

    async def test_case_20_old_notice_leaves_silently(self) -> None:
        """Case 20: only the old notice leaves, silently: a same-length notice does not fit."""
        old = P(2, 3)
        history = [U(old), U(TASK), *results(3, "RESULT " + "x" * 400)]
        assert len(P(1, 4)) == len(old)
        result = await slide(history, anchor=1)
        record = result.record
        assert record.removed_message_count == 1
        assert record.refusals == (cr(1, 1), ikw(3, 4), ikw(4, 6))
        assert result.window is not msgspec.UNSET
        assert result.window[0].content == TASK
        assert not any(is_drop_notice(m) for m in result.window)
        assert result.rebase == Rebase(head_count=0, kept_tail_count=7)
        assert (record.window_chars_before, record.window_chars_after) == (len(old) + 1352, 1352)
        assert (record.turns_before, record.turns_after) == (5, 4)  # type: ignore[union-attr]

    async def test_case_21_kept_and_rich_on_a_large_span(self) -> None:
        """Case 21: the kept rich notice goes in at index 1 on a 707-char span."""
        history = [U(TASK), *results(3, "RESULT " + "x" * 700)]
        result = await slide(history, anchor=0, now_ms=1000)
        notice = RICH(2, 4, SW, True, ["look"])
        record = result.record
        assert record.removed_message_count == 2
        assert result.window is not msgspec.UNSET
        assert result.window[1].content == notice
        assert result.rebase == Rebase(head_count=1, kept_tail_count=4, inserted_at_ms=1000)
        assert (record.window_chars_before, record.window_chars_after) == (
            2252,
            1545 + len(notice),
        )

    async def test_case_22_no_notice_fits_and_no_other_span(self) -> None:
        """Case 22: an assistant would lead, no notice fits and nothing else can go: the span
        leaves behind the plain notice, though it is longer than the span."""
        history = [A(["a1"]), T("a1", "ok"), A([], "thinking"), A([], "more"), A([], "latest")]
        result = await slide(history)
        record = result.record
        assert record.removed_message_count == 3
        assert record.refusals == (ikw(2, 3), ikw(3, 4))
        assert (record.window_chars_before, record.window_chars_after) == (20, 10 + len(P(3, 4)))
        assert result.window is not msgspec.UNSET
        assert [m.content for m in result.window] == [P(3, 4), "more", "latest"]
        assert result.rebase == Rebase(head_count=0, kept_tail_count=2, inserted_at_ms=NOW_MS)

    async def test_case_23_restored_conversation(self) -> None:
        """Case 23: an older exchange before the request leaves silently (61 chars)."""
        history = [
            U("what changed in the payment path?"),
            A([], "A few things — ask me again."),
            U(TASK),
            *results(3, "RESULT " + "x" * 400),
        ]
        result = await slide(history, anchor=2)
        record = result.record
        assert record.removed_message_count == 2
        assert record.refusals == (cr(2, 2), ikw(4, 5), ikw(5, 7))
        assert result.rebase == Rebase(head_count=0, kept_tail_count=7)
        assert (record.window_chars_before, record.window_chars_after) == (1413, 1352)


async def test_case_14_removal_further_in_writes_no_notice() -> None:
    """Case 14: behind a system turn and the request the span leaves with no notice."""
    history = [S("rules"), U(TASK), *R("c1"), *R("c2"), *R("c3")]
    result = await slide(history, anchor=1)
    assert result.record.refusals == (se(0, 0), cr(1, 1), ikw(3, 4), ikw(4, 6))
    assert result.record.removed_message_count == 2
    assert result.window is not msgspec.UNSET
    assert [m.role for m in result.window] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert result.rebase == Rebase(head_count=2, kept_tail_count=4)


class TestLadder:
    """``fitting_notice``: the richest rung strictly shorter than the span, or none
    (docs/window.md#the-notice-ladder)."""

    def test_rich_when_it_fits(self) -> None:
        """A span longer than the rich notice gets the rich notice."""
        span = [A(["c1"]), T("c1", "z" * 700)]
        text = fitting_notice(span, span, iteration=4, strategy=SW, kept=False)
        assert text == RICH(2, 4, SW, False, ["look"])

    def test_plain_when_only_it_fits(self) -> None:
        """A span between the plain and rich lengths gets the plain notice."""
        span = [A(["c1"]), T("c1", "z" * (len(P(2, 4)) + 1))]
        assert fitting_notice(span, span, iteration=4, strategy=SW, kept=False) == P(2, 4)

    def test_none_when_nothing_fits(self) -> None:
        """A short span gets no notice at all."""
        span = [A(["c1"]), T("c1", "z" * 50)]
        assert fitting_notice(span, span, iteration=4, strategy=SW, kept=False) is None

    def test_kept_is_never_traded_away(self) -> None:
        """When only the not-kept plain notice would fit, a kept notice is not offered."""
        span = [A(["c1"]), T("c1", "z" * (len(P(2, 4)) + 1))]
        assert fitting_notice(span, span, iteration=4, strategy=SW, kept=True) is None

    def test_unnameable_results_use_the_plain_rung(self) -> None:
        """A span whose results have no printable name never gets a tool clause."""
        span = [A(["c1"], names=["has space"]), T("c1", "z" * 700, name=None)]
        assert fitting_notice(span, span, iteration=4, strategy=SW, kept=False) == P(2, 4)

    def test_names_come_from_the_whole_window(self) -> None:
        """A result without ``tool_name`` is named from its call in the pre-change window."""
        call = A(["c9"], names=["fetch"])
        span = [T("c9", "z" * 700, name=None)]
        text = fitting_notice(span, [call, *span], iteration=4, strategy=SW, kept=False)
        assert text == RICH(1, 4, SW, False, ["fetch"])


class TestDropOldestSpan:
    """``drop_oldest_span`` used directly, as a custom strategy may."""

    def test_a_strategy_name_that_fails_the_filter_is_refused(self) -> None:
        """A strategy name that is not a plain identifier raises WindowStrategyError."""
        with pytest.raises(WindowStrategyError) as caught:
            drop_oldest_span(visit(F(700, 700)), 2, "my strategy")
        assert caught.value.field == "strategy_name"

    def test_custom_name_is_printed(self) -> None:
        """A custom strategy's name is printed in the notice it writes."""
        outcome = drop_oldest_span(visit(F(700, 700)), 2, "my-dropper")
        assert outcome.notice is not None
        assert '"my-dropper"' in outcome.notice.content
        assert outcome.plan.span == (0, 1)

    def test_nothing_to_remove_leaves_the_window(self) -> None:
        """With every turn inside the keep depth nothing is removed and no window is set."""
        history = F(10, 10)
        outcome = drop_oldest_span(visit(history), 9, SW)
        assert outcome.window is msgspec.UNSET
        assert outcome.removed_message_count == 0
        assert outcome.window_chars_after == window_chars(history)
        assert len(outcome.refusals) == len(segment(history))


async def test_a_system_only_head_still_gets_a_notice() -> None:
    """Dropping the first person turn behind an imported system envelope inserts a notice
    right after the envelope, so the wire never opens with an assistant (our reading of
    docs/window.md#the-drop-step-by-step)."""
    history = [S("house rules"), U(TASK * 5), A(["c0"]), U("and then?")]
    outcome = await run_stage(sliding_window(keep_recent_turns=1), history, said="and then?")
    assert outcome is not None
    window = unset_free(outcome.window)
    assert window[0].role == "system" and is_drop_notice(window[1])
    assert outcome.record.removed_message_count == 1
    assert [m.role for m in window[2:]] == ["assistant", "user"]


class TestBlockedSpan:
    """A span that would leave an assistant first with no fitting notice does not stop the
    window from shrinking (docs/window.md#when-the-oldest-span-cannot-go)."""

    IMPORTED: ClassVar[list[Message]] = [
        S("house rules"),
        U("hello there"),
        A(["c1"], names=["look"]),
        T("c1", "a room"),
        A(["c2"], "never answered"),
        U("next"),
        A([], "ok"),
        U("later"),
        A([], "fine"),
        U(TASK),
    ]

    async def test_the_visit_moves_on_to_the_next_span(self) -> None:
        """The issue's imported shape: the turns after the unanswered call leave, silently."""
        history = self.IMPORTED
        result = await slide(history, keep=1, anchor=9)
        record = result.record
        assert record.removed_message_count == 4
        assert record.refusals == (rns(1, 1), se(0, 0), urt(3, 4), ikw(8, 9))
        assert result.window is not msgspec.UNSET
        assert [m.content for m in result.window] == [
            "house rules",
            "hello there",
            "",
            "a room",
            "never answered",
            TASK,
        ]
        assert result.rebase == Rebase(head_count=5, kept_tail_count=1)

    async def test_the_blocked_span_goes_once_nothing_else_can(self) -> None:
        """When only the blocked span can go, it leaves behind the plain notice."""
        history = [*self.IMPORTED[:5], U(TASK)]
        result = await slide(history, keep=1, anchor=5)
        assert result.record.refusals == (se(0, 0), urt(3, 4), ikw(4, 5))
        assert result.window is not msgspec.UNSET
        assert [m.role for m in result.window] == ["system", "user", "assistant", "user"]
        assert result.window[1].content == P(3, 4)

    async def test_a_lone_notice_is_not_replaced_by_a_notice(self) -> None:
        """A blocked span that is one drop notice stays: only a notice could replace it."""
        history = [S("house rules"), U(P(3, 2)), A(["c2"], "never answered"), U(TASK)]
        result = await slide(history, keep=1, anchor=3)
        assert result.record.removed_message_count == 0
        assert result.record.refusals == (rns(1, 1), se(0, 0), urt(2, 2), ikw(3, 3))
        assert result.window is msgspec.UNSET

    async def test_sliding_window_is_bounded_over_many_visits(self) -> None:
        """Visit after visit the imported shape settles at the notice, the unanswered call and
        the kept turns instead of growing."""
        history: list[Message] = list(self.IMPORTED)
        for visit_number in range(12):
            history += [A([], f"step {visit_number}"), U(f"ask {visit_number}")]
            result = await slide(history, keep=1, anchor=len(history) - 1)
            if result.window is not msgspec.UNSET:
                history = list(result.window)
        assert len(segment(history)) <= 5
