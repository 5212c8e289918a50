"""A standing agent under a sliding window does O(new) window work per iteration
(docs/window.md#the-running-index, docs/served.md#the-running-digest): counted over a real loop
on a real SQLite file, the messages its visits read grow with what the iterations appended and
removed, not with the window times the iterations; and every receipt it minted still verifies.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.loop import window_index as window_index_module
from afp_runtime.messages import Message, ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.served import check, epochs, receipt_at, served_at
from afp_runtime.served import receipt as receipt_module
from afp_runtime.store.sqlite import SqliteRunLog, SqliteStore
from afp_runtime.testing import FakeClock
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window
from afp_runtime.window import stage as stage_module
from afp_runtime.window import turns as turns_module

KEEP = 30
ROUNDS = 60


async def _look(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return f"seen {ctx.tool_call_id}"


def _script(request: ModelRequest, number: int) -> ModelReply:
    """``ROUNDS`` tool rounds, then an answer."""
    if number <= ROUNDS:
        call = ToolCall(id=f"c{number}", name="look", args={"n": number})
        return ModelReply(tool_calls=(call,), usage=Usage(input=10, output=5))
    return ModelReply(content="done", usage=Usage(input=10, output=2))


class Reads(Counter[str]):
    """Messages read, by who read them."""


@pytest.fixture(name="reads")
def fixture_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    """Count the messages the from-scratch functions and the index read."""
    reads = Reads()

    def counting(name: str, fn: Any) -> Any:
        def wrapped(window: Sequence[Message], *args: Any) -> Any:
            reads[name] += len(window)
            return fn(window, *args)

        return wrapped

    monkeypatch.setattr(stage_module, "segment", counting("segment", turns_module.segment))
    encode = receipt_module.canonical_json

    def encoding(value: Any) -> bytes:
        reads["entry-encodings"] += 1
        return encode(value)

    # The receipt module encodes only running-digest entries, schemas and settings with it.
    monkeypatch.setattr(receipt_module, "canonical_json", encoding)
    monkeypatch.setattr(stage_module, "call_names", counting("names", stage_module.call_names))
    monkeypatch.setattr(
        window_index_module, "_segment", counting("index-build", window_index_module._segment)
    )
    index = window_index_module.WindowIndex
    for method in ("_count", "_forget"):
        original = getattr(index, method)

        def wrapped(
            self: Any, message: Message, _original: Any = original, _m: str = method
        ) -> Any:
            reads[f"index{_m}"] += 1
            return _original(self, message)

        monkeypatch.setattr(index, method, wrapped)
    yield reads


async def test_visits_read_what_changed_not_the_window(tmp_path: Path, reads: Reads) -> None:
    """Sixty sliding visits over a window of thirty turns read the messages that entered and
    left the window (about five per iteration), not the window at each visit (about sixty)."""
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "afp.db", now_ms=clock.now_ms())
    try:
        tool = Tool("look", "Look.", {"type": "object"}, _look)
        model = ScriptedModel(_script)
        agent = Agent(
            "ops",
            model,
            tools=[tool],
            max_iterations=ROUNDS + 1,
            window=sliding_window(keep_recent_turns=KEEP),
        )
        driver = AgentDriver(store, agent, clock=clock, ids=SequentialIds(), rng=random.Random(7))
        await driver.post("go")
        async with clock.autojump():
            [outcome] = await driver.work()
        assert outcome.status == "answered"
    finally:
        await store.aclose()

    def verdicts() -> list[str]:
        with SqliteRunLog(tmp_path / "afp.db", outcome.run_id) as log:
            found: list[str] = []
            for e in epochs(log):
                view = served_at(log, e.epoch)
                assert view is not None
                found.append(check(view, receipt_at(log, e.epoch), encoder=model).verdict)
            return found

    # Every receipt's digests, chained from cached parts, verify against the rebuilt views.
    found = await anyio.to_thread.run_sync(verdicts)
    assert len(found) == ROUNDS + 1
    assert set(found) == {"verified"}
    # No visit segments or names its window from scratch: the index answers, built once at
    # the run's first visit (the person's message and the first round).
    assert reads["segment"] == reads["names"] == 0
    assert reads["index-build"] <= 3
    # Each round appends two messages (call and result); each slide, from round KEEP on,
    # removes one turn (two messages) and the previous notice and inserts a new notice.
    appended = 1 + 2 * ROUNDS
    slides = ROUNDS - KEEP + 1
    assert reads["index_count"] <= appended + slides
    assert reads["index_forget"] <= 3 * slides
    # Each entry is encoded once (the chain re-hashes the window, from cached bytes), beside
    # the tool schema and settings of each receipt.
    assert reads["entry-encodings"] <= appended + slides + 2 * (ROUNDS + 1)
    # From scratch, every visit reads its whole window: at least KEEP turns from the KEEP-th on.
    assert reads["index_count"] + reads["index_forget"] < slides * 2 * KEEP / 4
