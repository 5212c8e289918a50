"""A call repeated with the same arguments that returns the same result again within a turn
carries the repeated-call note (docs/loop.md#repeated-calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

import afp_runtime as afp
from afp_runtime.store import open_store
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import REPEATED_CALL_PREFIX, repeated_call_note

ran: list[str] = []


@afp.tool(idempotent=True)
def stock(sku: str) -> str:
    """How many of an item are in stock."""
    ran.append(sku)
    return f"{sku}: 4 in stock"


def looping_model(skus: list[str]) -> afp.ScriptedModel:
    """Calls ``stock`` once per sku, one call per iteration, then answers."""
    replies: list[Any] = [tool_reply(call(f"c{i}", "stock", sku=s)) for i, s in enumerate(skus)]
    return afp.ScriptedModel([*replies, answer("done")])


def tool_messages(view: afp.ServedView) -> list[str]:
    """The contents of the tool messages a call was sent."""
    return [m.content for m in view.messages.as_sent if m.role == "tool"]


async def run_turn(tmp_path: Path, skus: list[str], **options: Any) -> tuple[Any, list[str]]:
    """One turn of an agent calling ``stock`` for ``skus``; the result and the last call's tool
    messages as served."""
    agent = afp.Agent("shop", looping_model(skus), tools=[stock], **options)
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "check the stock")
        epochs = await store.epochs(result.run_id)
        view = await store.served(result.run_id, len(epochs))
    return result, tool_messages(view)


async def test_the_second_and_third_identical_results_carry_the_note(tmp_path: Path) -> None:
    """The first result is as the tool returned it; the second and third say how many times."""
    result, tools = await run_turn(tmp_path, ["A1", "A1", "B2", "A1"])
    assert result.status == "answered"
    assert tools == [
        "A1: 4 in stock",
        "A1: 4 in stock" + repeated_call_note(2),
        "B2: 4 in stock",
        "A1: 4 in stock" + repeated_call_note(3),
    ]


async def test_the_note_is_off_when_the_agent_says_so(tmp_path: Path) -> None:
    """``repeated_call_note=False`` leaves every result as the tool returned it."""
    _, tools = await run_turn(tmp_path, ["A1", "A1"], repeated_call_note=False)
    assert tools == ["A1: 4 in stock", "A1: 4 in stock"]


async def test_different_arguments_or_results_get_no_note(tmp_path: Path) -> None:
    """Another argument is another call, and a changed result is news."""
    results = iter(["3 left", "2 left", "2 left"])

    @afp.tool
    def left(sku: str) -> str:
        """Items left."""
        return next(results)

    model = afp.ScriptedModel(
        [
            tool_reply(call("c1", "left", sku="A1")),
            tool_reply(call("c2", "left", sku="A1")),
            tool_reply(call("c3", "left", sku="B2")),
            answer("done"),
        ]
    )
    agent = afp.Agent("shop", model, tools=[left])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "check")
        view = await store.served(result.run_id, 4)
    assert all(REPEATED_CALL_PREFIX not in text for text in tool_messages(view))


async def test_the_count_starts_again_each_turn(tmp_path: Path) -> None:
    """A result repeated in a later turn is that turn's first."""
    model = afp.ScriptedModel(
        [
            tool_reply(call("c1", "stock", sku="A1")),
            answer("one"),
            tool_reply(call("c2", "stock", sku="A1")),
            answer("two"),
        ]
    )
    agent = afp.Agent("shop", model, tools=[stock])
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "first")
        second = await store.run(agent, "second")
        view = await store.served(second.run_id, 2)
    assert tool_messages(view) == ["A1: 4 in stock", "A1: 4 in stock"]


async def test_the_journal_keeps_the_tools_own_result(tmp_path: Path) -> None:
    """The committed tool message carries the note; the tool journal holds the raw result (read
    while the turn is paused, before the journal of a finished turn is cleared)."""

    @afp.tool
    def confirm(ctx: afp.ToolContext) -> str:
        """Ask the person to confirm."""
        ctx.ask_person("Order them?")

    model = afp.ScriptedModel(
        [
            tool_reply(call("c1", "stock", sku="A1")),
            tool_reply(call("c2", "stock", sku="A1")),
            tool_reply(call("c3", "confirm")),
        ]
    )
    agent = afp.Agent("shop", model, tools=[stock, confirm])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "check")
        view = await store.served(result.run_id, 3)
    assert result.status == "paused"
    assert tool_messages(view) == ["A1: 4 in stock", "A1: 4 in stock" + repeated_call_note(2)]
    store = await open_store(tmp_path / "afp.db", now_ms=0)
    try:
        (message,) = await store.inbox("shop")
        journal = await store.journal("shop", message.message_id)
    finally:
        await store.aclose()
    finished = {
        call_id: msgspec.msgpack.decode(entry.finished)["content"]
        for call_id, entry in journal.items()
        if entry.finished
    }
    assert finished == {"c1": "A1: 4 in stock", "c2": "A1: 4 in stock"}


def test_the_notes_length_depends_only_on_the_counts_digits() -> None:
    """The note opens with its prefix after a blank line and is 180 code points up to count 9."""
    assert repeated_call_note(2).startswith("\n\n" + REPEATED_CALL_PREFIX)
    assert {len(repeated_call_note(n)) for n in range(2, 10)} == {180}
    assert len(repeated_call_note(10)) == 181
