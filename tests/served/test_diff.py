"""diff_views: what changed in what the model was sent between two calls."""

from __future__ import annotations

from afp_runtime.messages import Message
from afp_runtime.served import ServedView, diff_views
from afp_runtime.served.view import (
    ServedMessages,
    ServedPiece,
    ServedSystem,
    ServedTool,
    ServedTools,
)


def view(
    epoch: int,
    messages: list[Message],
    *,
    pieces: tuple[ServedPiece, ...] = (),
    tools: tuple[ServedTool, ...] = (),
) -> ServedView:
    return ServedView(
        epoch=epoch,
        call_runtime_stage_id=f"call-model#{epoch}",
        system=ServedSystem(text="\n".join(p.text for p in pieces), pieces=pieces),
        messages=ServedMessages(as_sent=tuple(messages), request_only=()),
        tools=ServedTools(names=tuple(t.name for t in tools), schemas=tools),
        gaps=(),
    )


def user(text: str) -> Message:
    return Message(role="user", content=text)


def test_a_fold_shows_as_removed_originals_and_an_added_summary() -> None:
    """Messages are matched by content: folded ones left, the summary came."""
    first, second, third = user("m0"), user("m1"), user("m2")
    summary = user("[afp:folded-summary] m0 m1")
    diff = diff_views(view(1, [first, second, third]), view(2, [summary, third]))
    assert (diff.before, diff.after) == (1, 2)
    assert diff.removed == (first, second)
    assert diff.added == (summary,)
    assert (diff.changed, diff.kept) == ((), 1)


def test_a_message_between_two_that_stayed_changed() -> None:
    """Same place, same role, same neighbours, other content: one changed message."""
    a, b, c = user("a"), user("b"), user("c")
    edited = user("b, edited")
    diff = diff_views(view(1, [a, b, c]), view(2, [a, edited, c]))
    assert (diff.removed, diff.added) == ((), ())
    [change] = diff.changed
    assert (change.index, change.before, change.after) == (1, b, edited)
    assert diff.kept == 2


def test_a_tool_result_for_the_same_call_changed() -> None:
    """A tool result answering the same call at the same place is a change, not a swap."""
    asked = Message(role="user", content="go")
    before = Message(role="tool", content="long result", tool_call_id="c1", tool_name="t")
    after = Message(role="tool", content="cut", tool_call_id="c1", tool_name="t")
    diff = diff_views(view(1, [asked, before]), view(2, [asked, after, user("next")]))
    assert [c.after for c in diff.changed] == [after]
    assert diff.added == (user("next"),)


def test_system_pieces_and_tools_are_compared() -> None:
    """System pieces by slot (added, removed, changed) and tools by name and schema."""
    old_pieces = (
        ServedPiece(text="be kind", slot="instructions", source="definition"),
        ServedPiece(text="ledger v1", slot="ledger", source="findings"),
    )
    new_pieces = (
        ServedPiece(text="be brief", slot="instructions", source="definition"),
        ServedPiece(text="time line", slot="time", source="time"),
    )
    schema = {"type": "object"}
    old_tools = (
        ServedTool(name="a", description="A.", input_schema=schema),
        ServedTool(name="b", description="B.", input_schema=schema),
    )
    new_tools = (
        ServedTool(name="b", description="B, now more.", input_schema=schema),
        ServedTool(name="c", description="C.", input_schema=schema),
    )
    diff = diff_views(
        view(1, [], pieces=old_pieces, tools=old_tools),
        view(2, [], pieces=new_pieces, tools=new_tools),
    )
    assert diff.system_changed
    assert [p.slot for p in diff.pieces_added] == ["time"]
    assert [p.slot for p in diff.pieces_removed] == ["ledger"]
    assert [(c.slot, c.before, c.after) for c in diff.pieces_changed] == [
        ("instructions", "be kind", "be brief")
    ]
    assert (diff.tools_added, diff.tools_removed, diff.tools_changed) == (("c",), ("a",), ("b",))


def test_identical_views_have_no_change() -> None:
    """Two views that sent the same thing differ in nothing."""
    same = [user("hi")]
    diff = diff_views(view(1, same), view(2, same))
    assert (diff.removed, diff.added, diff.changed, diff.kept) == ((), (), (), 1)
    assert not diff.system_changed and not diff.tools_changed
