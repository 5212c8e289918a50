"""The run's window index answers what the from-scratch functions answer, over random histories
grown by appends and changed by rebases (docs/window.md#the-running-index); a visit given the
index's answers is the visit that finds them itself."""

from __future__ import annotations

import anyio
import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.loop.window_index import WindowIndex
from afp_runtime.messages import Message
from afp_runtime.window import Rebase, call_names, sliding_window, visit_window
from afp_runtime.window.stage import VisitOutcome
from afp_runtime.window.turns import segment, window_chars
from afp_runtime.window.visit import WindowStrategy
from tests.window._build import NOW_MS, RUN_ID, A, Dropper, T, U, answered, origins
from tests.window._gen import windows


def assert_follows(index: WindowIndex, window: list[Message]) -> None:
    """Every answer of ``index`` is the from-scratch one of ``window``."""
    assert len(index) == len(window)
    assert index.turns == segment(window)
    assert dict(index.names) == call_names(window)
    assert index.answered_call_ids == answered(window)
    assert index.chars == window_chars(window)


# One step on a window: append messages, or rebase (cut points are drawn as fractions of the
# window, so some fall inside turns and exercise the rebuild).
appends = st.tuples(st.just("append"), windows(max_turns=3))
rebases = st.tuples(
    st.just("rebase"),
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.sampled_from([None, "notice", "asker", "tool"])),
)
# Call ids drawn from a small pool repeat, and a repeated id's first call names it.
repeats = st.lists(st.sampled_from(["c0", "c1", "x"]), min_size=1, max_size=2).map(
    lambda ids: [A(ids, names=[f"n{i}" for i in range(len(ids))]), T(ids[0])]
)

repeated = st.tuples(st.just("append"), repeats)


def _rebase(
    window: list[Message], how: tuple[float, float, str | None]
) -> tuple[Rebase, list[Message]]:
    """A rebase of ``window`` cutting ``head`` and ``tail`` at the drawn fractions."""
    head_part, tail_part, insert = how
    head = int(head_part * len(window))
    tail = int(tail_part * (len(window) - head))
    inserted = {
        None: [],
        "notice": [U("[dropped]")],
        "asker": [A(["c0"], names=["inserted"])],
        "tool": [T("c0")],
    }[insert]
    new = window[:head] + inserted + window[len(window) - tail :]
    rebase = Rebase(
        head_count=head,
        kept_tail_count=tail,
        inserted_at_ms=NOW_MS if inserted else msgspec.UNSET,
    )
    return rebase, new


@settings(max_examples=80, deadline=None)
@given(windows(max_turns=8), st.lists(st.one_of(appends, rebases, repeated), max_size=8))
def test_the_index_follows_appends_and_rebases(
    start: list[Message], steps: list[tuple[str, object]]
) -> None:
    """After any mix of appends and rebases the index answers as segment, call_names,
    the answered ids and window_chars do over the window as it now is."""
    index = WindowIndex()
    window = list(start)
    index.sync(window)
    assert_follows(index, window)
    for kind, arg in steps:
        if kind == "append":
            window = window + list(arg)  # type: ignore[call-overload]
            index.sync(window)
        else:
            rebase, window = _rebase(window, arg)  # type: ignore[arg-type]
            index.rebase(rebase, window)
            # The loop syncs before every visit: a synced index is unchanged by it.
            index.sync(window)
        assert_follows(index, window)


@given(windows(max_turns=6), windows(max_turns=6))
def test_a_list_the_index_does_not_follow_is_taken_from_scratch(
    first: list[Message], second: list[Message]
) -> None:
    """Synced with another list than the one it follows, the index answers for that list."""
    index = WindowIndex()
    index.sync(first)
    index.sync(second)
    assert_follows(index, second)


def _visit(
    strategy: WindowStrategy, window: list[Message], index: WindowIndex | None
) -> VisitOutcome | None:
    known = (
        {}
        if index is None
        else {
            "turns": index.turns,
            "names": index.names,
            "answered_call_ids": index.answered_call_ids,
            "chars": index.chars,
        }
    )

    async def go() -> VisitOutcome | None:
        return await visit_window(
            strategy,
            history=window,
            said=None,
            measured=None,
            iteration=4,
            run_id=RUN_ID,
            agent_model="m",
            provider_name="p",
            now_ms=NOW_MS,
            origins=origins(len(window)),
            prior=(),
            keep_last_tool_results=1,
            **known,  # type: ignore[arg-type]
        )

    return anyio.run(go)


@settings(max_examples=30, deadline=None)
@given(windows(max_turns=10), st.integers(1, 4), st.integers(1, 6), st.booleans())
def test_visits_given_the_index_are_the_visits_from_scratch(
    start: list[Message], keep: int, rounds: int, dropper: bool
) -> None:
    """Visit after visit, appending a round between them and applying each rebase to the index,
    the outcome given the index's answers equals the outcome that finds them itself."""
    strategy: WindowStrategy = Dropper(keep) if dropper else sliding_window(keep_recent_turns=keep)
    index = WindowIndex()
    window = list(start)
    for n in range(rounds):
        window += [A([f"round{n}"], names=["look"]), T(f"round{n}", "r" * n)]
        index.sync(window)
        outcome = _visit(strategy, window, index)
        assert outcome == _visit(strategy, window, None)
        if outcome is not None and outcome.rebase is not msgspec.UNSET:
            assert outcome.window is not msgspec.UNSET
            window = list(outcome.window)
            index.rebase(outcome.rebase, window)
