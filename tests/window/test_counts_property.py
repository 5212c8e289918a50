"""Counts the visit takes by shortcut (turns after a drop, chars after it, names indexed once)
equal the counts taken over the whole new window, for random windows."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.messages import Message
from afp_runtime.window.strategies import sliding_window
from afp_runtime.window.turns import segment, turn_count, window_chars
from tests.window._build import A, T, U, run_stage


@st.composite
def windows(draw: st.DrawFn) -> list[Message]:
    """A person request, then exchanges of an assistant call and its results, with answers and
    person messages between them; contents of random lengths."""
    body = st.text(alphabet="abc ", max_size=400)
    out: list[Message] = [U(draw(body) or "go")]
    for n in range(draw(st.integers(0, 9))):
        kind = draw(st.sampled_from(["call", "call", "answer", "person"]))
        if kind == "call":
            ids = [f"c{n}-{k}" for k in range(draw(st.integers(1, 3)))]
            out.append(A(ids, draw(body)))
            out.extend(
                T(i, draw(body), name=draw(st.sampled_from(["look", "find", None]))) for i in ids
            )
        elif kind == "answer":
            out.append(A([], draw(body) or "ok"))
        else:
            out.append(U(draw(body) or "more"))
    return out


@given(st.lists(st.sampled_from(["user", "assistant", "tool", "system"]), max_size=20))
def test_turn_count_is_the_number_of_turns(roles: list[str]) -> None:
    """``turn_count`` counts what ``segment`` builds."""
    history = [
        Message(role="tool", tool_call_id="c") if r == "tool" else Message(role=r)  # type: ignore[arg-type]
        for r in roles
    ]
    assert turn_count(history) == len(segment(history))


@given(windows(), st.integers(1, 4))
async def test_a_drop_records_the_counts_of_its_new_window(
    history: list[Message], keep: int
) -> None:
    """A sliding-window visit that passes validation records the chars and turns of the new
    window as counted over all of it."""
    outcome = await run_stage(sliding_window(keep_recent_turns=keep), history)
    if outcome is None:
        assert len(segment(history)) <= keep
        return
    record = outcome.record
    window = history if outcome.window is msgspec.UNSET else list(outcome.window)
    assert record.window_chars_before == window_chars(history)
    assert record.window_chars_after == window_chars(window)
    assert record.turns_after == len(segment(window))  # type: ignore[union-attr]
