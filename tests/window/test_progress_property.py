"""A window over its bound always shrinks when some turn can go
(docs/window.md#when-the-oldest-span-cannot-go), for random windows: system heads, imported
shapes, unanswered and half-answered calls, old notices and summaries, recency and fact pins."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from afp_runtime.messages import Message, Usage
from afp_runtime.window.plan import RemovalPlan
from afp_runtime.window.strategies import sliding_window, token_budget
from afp_runtime.window.texts import is_drop_notice
from afp_runtime.window.turns import Turn, segment
from afp_runtime.window.visit import WindowResult, WindowStrategy, WindowVisit
from tests.window._build import S, run_stage
from tests.window._gen import PERSON_TEXTS, texts, windows


class Watched:
    """A drop strategy, with the plan the visit offered before the strategy ran: its span is
    None exactly when no turn outside the keep depth may leave."""

    def __init__(self, inner: WindowStrategy, keep: int) -> None:
        self.name = inner.name
        self.inner = inner
        self.keep = keep
        self.offered: RemovalPlan | None = None
        self.next_span: RemovalPlan | None = None
        self.turns: tuple[Turn, ...] = ()

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Look at the plan, then let the strategy run."""
        self.offered = visit.plan_removal(self.keep)
        if self.offered.span is not None:
            self.next_span = visit.plan_removal(self.keep, resume_after=self.offered.span[1])
        self.turns = visit.turns
        return await self.inner.plan(visit)


@st.composite
def imported(draw: st.DrawFn) -> list[Message]:
    """A random window, sometimes behind a head of system messages, as an import leaves it."""
    head = [S(draw(texts)) for _ in range(draw(st.integers(0, 2)))]
    return head + draw(windows(max_turns=14))


def standing(turn: Turn) -> str | None:
    """A fact standing for every third turn, so the fact pin has candidates."""
    return "fact" if turn.index % 3 == 0 else None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=imported(),
    by_budget=st.booleans(),
    keep=st.integers(1, 4),
    dial=st.one_of(st.just(False), st.integers(0, 3)),
    facts=st.integers(0, 2),
    said=st.one_of(st.none(), st.sampled_from(PERSON_TEXTS)),
)
async def test_a_visit_over_its_bound_removes_a_turn_when_one_can_go(
    history: list[Message],
    by_budget: bool,
    keep: int,
    dial: int | bool,
    facts: int,
    said: str | None,
) -> None:
    """Whenever a turn may leave, the visit removes at least one, and every call that had its
    results keeps them; the one exception is a lone drop notice only a notice could replace."""
    inner = (
        token_budget(threshold_tokens=1, keep_recent_turns=keep)
        if by_budget
        else sliding_window(keep_recent_turns=keep)
    )
    watched = Watched(inner, keep)
    outcome = await run_stage(
        watched,
        history,
        said=said,
        keep_last_tool_results=dial,
        fact_limit=facts,
        turn_standing=standing,
        measured=Usage(input=10_000, output=1),
    )
    if len(segment(history)) <= keep:
        event("within the bound")
        return
    assert outcome is not None and watched.offered is not None
    if watched.offered.span is None:
        event("nothing may leave")
        assert outcome.window is msgspec.UNSET
        return
    window = outcome.window
    if window is msgspec.UNSET:
        # The only visit that may remove nothing: the oldest span is one drop notice at the
        # wire's head, nothing after it may leave, and only another notice could replace it.
        event("a lone notice stays")
        first, last = watched.offered.span
        turn = watched.turns[first]
        assert first == last and turn.length == 1 and is_drop_notice(turn.messages[0])
        assert watched.next_span is not None and watched.next_span.span is None
        assert outcome.record.refusals[0].reason == "replacement-not-smaller"
        return
    event("notice in" if outcome.rebase.inserted_at_ms is not msgspec.UNSET else "silent drop")  # type: ignore[union-attr]
    assert outcome.record.removed_message_count >= 1
    calls_kept = {call.id for m in window for call in m.tool_calls}
    results_before = {m.tool_call_id for m in history if m.role == "tool"}
    results_kept = {m.tool_call_id for m in window if m.role == "tool"}
    assert calls_kept & results_before <= results_kept
    assert results_kept <= calls_kept | (
        results_before - {c.id for m in history for c in m.tool_calls}
    )
    first_talker = next((m.role for m in window if m.role != "system"), None)
    before_talker = next((m.role for m in history if m.role != "system"), None)
    if before_talker == "user":
        assert first_talker == "user"
