"""diff_views: what changed in what the model was sent between two calls."""

from __future__ import annotations

from afp_runtime.messages import Message
from afp_runtime.served import (
    ServedMessages,
    ServedSystem,
    ServedTools,
    ServedView,
    diff_views,
)


def view(epoch: int, messages: list[Message], *, system: str = "", tools: tuple[str, ...] = ()):
    return ServedView(
        epoch=epoch,
        call_runtime_stage_id=f"call-model#{epoch}",
        system=ServedSystem(text=system, pieces=()),
        messages=ServedMessages(as_sent=tuple(messages), request_only=()),
        tools=ServedTools(names=tools, schemas=()),
        gaps=(),
    )


def test_a_fold_shows_as_removed_originals_and_an_added_summary() -> None:
    """Messages are matched by content: folded ones are removed, the summary is added."""
    first, second, third = (Message(role="user", content=f"m{i}") for i in range(3))
    summary = Message(role="user", content="[afp:folded-summary] m0 m1")
    diff = diff_views(view(1, [first, second, third]), view(2, [summary, third]))
    assert (diff.before, diff.after) == (1, 2)
    assert diff.removed == (first, second)
    assert diff.added == (summary,)
    assert diff.kept == 1


def test_system_text_and_tools_are_compared() -> None:
    """A changed system text and tools served only on one side are reported."""
    diff = diff_views(
        view(1, [], system="old", tools=("a", "b")), view(2, [], system="new", tools=("b", "c"))
    )
    assert diff.system_changed
    assert (diff.tools_added, diff.tools_removed) == (("c",), ("a",))


def test_identical_views_have_no_change() -> None:
    """Two views that sent the same thing differ in nothing."""
    same = [Message(role="user", content="hi")]
    diff = diff_views(view(1, same, system="s"), view(2, same, system="s"))
    assert (diff.removed, diff.added, diff.kept, diff.system_changed) == ((), (), 1, False)
