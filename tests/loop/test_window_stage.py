"""The window stage in the loop: records, durable folds, holds
(docs/window.md#how-this-is-tested)."""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio
import msgspec

from afp_runtime.loop import load_folded_conversation
from afp_runtime.messages import ModelReply, ModelRequest, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.served import check, epochs, receipt_at, served_at
from afp_runtime.store.sqlite import SqliteRunLog
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import sliding_window, summarize_oldest, token_budget
from afp_runtime.window.folds import folded_messages, folded_span_for
from afp_runtime.window.texts import DROP_NOTICE_PREFIX, SUMMARY_PREFIX

from .conftest import Harness

BIG = Usage(input=5_000, output=10)


async def big_result(args: Any, ctx: Any) -> str:
    """A result large enough that a summary frame is smaller than the span it folds."""
    return f"{ctx.tool_call_id}: " + "x" * 600


def rounds(n: int, *, usage: Usage | None = BIG, content: str = "x" * 300) -> list[Any]:
    """n tool rounds (alpha_tool), then an answer."""
    return [tool_reply(call(f"r{i}", "alpha_tool"), usage=usage) for i in range(n)] + [
        answer("done", usage=usage)
    ]


def compactions(bundles: list) -> list[dict[str, Any]]:
    return [r for b in bundles for w in b.writes if w["key"] == "compactions" for r in w["value"]]


async def test_keep_99_files_no_record_and_sends_the_same_bytes(harness: Harness) -> None:
    """Case 46: sliding keep 99 never engages; requests equal those without a strategy."""
    driver = harness.driver(rounds(4), window=sliding_window(keep_recent_turns=99))
    await driver.post("go")
    [outcome] = await harness.work(driver)
    with_window = list(harness.model.bodies)
    assert compactions(await harness.store.bundles(outcome.run_id)) == []

    harness.path = harness.path.with_name("plain.db")
    await harness.restart()
    harness.ids = type(harness.ids)()
    driver = harness.driver(rounds(4))
    await driver.post("go")
    await harness.work(driver)
    assert list(harness.model.bodies) == with_window


async def test_small_windows_keep_the_wire_well_formed(harness: Harness) -> None:
    """Case 47: under sliding keep 1 every request starts with a user message, pairs every
    result with its call, and holds at most one notice."""
    driver = harness.driver(rounds(10), window=sliding_window(keep_recent_turns=1))
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    for request in harness.model.requests:
        messages = request.messages
        assert messages[0].role == "user"
        asked = {c.id for m in messages for c in m.tool_calls}
        assert all(m.tool_call_id in asked for m in messages if m.role == "tool")
        notices = [m for m in messages if m.content.startswith(DROP_NOTICE_PREFIX)]
        assert len(notices) <= 1
    records = compactions(await harness.store.bundles(outcome.run_id))
    assert any(r["removedMessageCount"] > 0 for r in records)


async def test_recency_pin_keeps_a_lone_observation(harness: Harness) -> None:
    """Case 48: the latest result of a tool called once survives thirty move rounds."""
    holds = "h" * 62

    async def whats_here(args: Any, ctx: Any) -> str:
        return holds

    script = (
        [tool_reply(call("w", "beta_tool"))]
        + [tool_reply(call(f"m{i}", "alpha_tool")) for i in range(29)]
        + [answer("done")]
    )
    driver = harness.driver(
        script,
        behaviour={"beta_tool": whats_here},
        window=sliding_window(keep_recent_turns=2),
        keep_last_tool_results=2,
        max_iterations=40,
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    last = harness.model.requests[-1].messages
    assert any(m.content == holds for m in last)
    assert all(len(r.messages) <= 12 for r in harness.model.requests)
    records = compactions(await harness.store.bundles(outcome.run_id))
    assert sum(1 for r in records if r["removedMessageCount"] > 0) >= 20


async def test_a_steady_sliding_window_keeps_its_history_in_three_ranges(harness: Harness) -> None:
    """A window spanning more visits than a list may have ranges: each visit's notice is held
    apart from the appended messages, so the stored history stays the kept request, the notice
    and one range,
    no visit copies the window's references again, and every call still verifies after a
    restart (docs/storage.md#message-bodies-and-list-references)."""
    driver = harness.driver(
        rounds(60, usage=None),
        behaviour={"alpha_tool": big_result},
        window=sliding_window(keep_recent_turns=20),
        max_iterations=80,
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    await harness.restart()
    assert harness.store is not None
    state = await harness.store.conversation_state("ops")
    assert state is not None and state.inserted_count >= 20
    assert len(state.history.ranges) == 3

    def read() -> tuple[int, list[str]]:
        with sqlite3.connect(harness.path) as db:
            [(rows,)] = db.execute("SELECT count(*) FROM items")
        with SqliteRunLog(harness.path, outcome.run_id) as log:
            found = []
            for epoch in epochs(log):
                receipt = receipt_at(log, epoch.epoch)
                assert receipt is not None
                found.append(check(served_at(log, epoch.epoch), receipt, encoder=model).verdict)
        return rows, found

    model = harness.model
    rows, verdicts = await anyio.to_thread.run_sync(read)
    # The person's message, 60 calls and results, the answer, and one notice per drop.
    assert rows == 1 + 2 * 60 + 1 + state.inserted_count
    assert len(verdicts) == 61 and set(verdicts) == {"verified"}


async def test_folds_are_durable_and_recoverable(harness: Harness) -> None:
    """Case 49: a fold commits history, record and span together; the originals come back
    by fingerprint after a restart, and an agent without a strategy carries the spans on."""
    summarizer = ScriptedModel(
        lambda request, n: ModelReply(content="S", usage=Usage(input=7, output=3))
    )
    strategy = summarize_oldest(
        threshold_tokens=100, summarizer=summarizer, model="cheap", keep_recent_turns=1
    )
    driver = harness.driver(rounds(4), window=strategy, behaviour={"alpha_tool": big_result})
    await driver.post("go")
    [outcome] = await harness.work(driver)
    bundles = await harness.store.bundles(outcome.run_id)
    folding = [b for b in bundles if any(w["key"] == "foldedSpans" for w in b.writes)]
    assert folding
    for bundle in folding:
        keys = {w["key"] for w in bundle.writes}
        assert {"history", "compactions", "foldedSpans"} <= keys
    await harness.restart()
    conversation = await load_folded_conversation(harness.store, "ops")
    assert len(conversation.folded) == len(folding)
    history = (await harness.store.load_conversation("ops")).history
    summaries = [m for m in history if m.content.startswith(SUMMARY_PREFIX)]
    span = folded_span_for(conversation, summaries[-1])
    assert span is not None and span.retained == "conversation"
    assert len(span.messages) == span.message_count
    assert folded_messages(conversation)

    driver = harness.driver([answer("plain")])  # no strategy: spans are carried on
    await driver.post("again")
    await harness.work(driver)
    again = await load_folded_conversation(harness.store, "ops")
    assert again.folded == conversation.folded


async def test_discard_keeps_no_originals(harness: Harness) -> None:
    """Case 49: retain='discard' files spans without messages; folded_messages is empty."""
    summarizer = ScriptedModel(
        lambda request, n: ModelReply(content="S", usage=Usage(input=7, output=3))
    )
    strategy = summarize_oldest(
        threshold_tokens=100,
        summarizer=summarizer,
        model="cheap",
        keep_recent_turns=1,
        retain="discard",
    )
    driver = harness.driver(rounds(4), window=strategy, behaviour={"alpha_tool": big_result})
    await driver.post("go")
    await harness.work(driver)
    conversation = await load_folded_conversation(harness.store, "ops")
    assert conversation.folded
    assert all(s.messages is msgspec.UNSET for s in conversation.folded)
    assert folded_messages(conversation) == ()


async def test_summarizer_failure_writes_no_span(harness: Harness) -> None:
    """Case 49: a failing summarizer leaves no foldedSpans key and no span on the checkpoint."""

    def boom(request: ModelRequest, n: int) -> ModelReply:
        raise RuntimeError("summarizer down")

    strategy = summarize_oldest(
        threshold_tokens=100, summarizer=ScriptedModel(boom), model="cheap", keep_recent_turns=1
    )
    driver = harness.driver(rounds(3), window=strategy)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    bundles = await harness.store.bundles(outcome.run_id)
    assert not any(w["key"] == "foldedSpans" for b in bundles for w in b.writes)
    assert (await harness.store.conversation_state("ops")).folded_count == 0
    reasons = {x["reason"] for r in compactions(bundles) for x in r["refusals"]}
    assert "summarizer-failed" in reasons


async def test_stale_usage_stands_down_with_one_warning(harness: Harness, logs: list) -> None:
    """Case 51: one big reading, then none: at most one removal and one stale-usage warning."""
    script = [tool_reply(call("r0", "alpha_tool"), usage=Usage(input=99_999, output=10))]
    script += [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(1, 6)] + [answer("done")]
    driver = harness.driver(script, window=token_budget(threshold_tokens=1000, keep_recent_turns=1))
    await driver.post("go")
    [outcome] = await harness.work(driver)
    records = compactions(await harness.store.bundles(outcome.run_id))
    assert sum(1 for r in records if r.get("measuredTokens") == 99_999) <= 1
    assert sum(1 for r in records if r["removedMessageCount"] > 0) <= 1
    stale = [e for e in logs if "stopped reporting" in e["event"]]
    assert len(stale) == 1 and stale[0]["strategy"] == "token-budget"


async def test_a_sliding_window_gets_no_stale_usage_warning(harness: Harness, logs: list) -> None:
    """sliding-window counts turns: a model that reports no usage gives it no warning."""
    script = [tool_reply(call("r0", "alpha_tool"), usage=Usage(input=10, output=1))]
    script += [tool_reply(call("r1", "alpha_tool")), answer("done")]
    driver = harness.driver(script, window=sliding_window(keep_recent_turns=1))
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert not [e for e in logs if "stopped reporting" in e["event"]]


async def test_zero_usage_holds_the_turn(harness: Harness) -> None:
    """A 0/0 usage reading under token-budget holds the turn as usage-unmeasurable."""
    script = [tool_reply(call("r0", "alpha_tool"), usage=Usage(input=0, output=0)), answer("x")]
    driver = harness.driver(script, window=token_budget(threshold_tokens=10))
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert (outcome.status, outcome.error_kind) == ("held", "usage-unmeasurable")
    assert harness.model.calls == 1


class BrokenStrategy:
    """Returns a window without a rebase: the stage must refuse it."""

    name = "broken"

    async def plan(self, visit: Any) -> Any:
        from afp_runtime.window import CustomRecord, WindowResult

        if visit.iteration < 2:
            return None
        record = CustomRecord(
            strategy="broken",
            iteration=visit.iteration,
            removed_stage_ids=(),
            removed_message_count=0,
            window_chars_before=0,
            window_chars_after=0,
            refusals=(),
        )
        return WindowResult(record=record, window=visit.history[1:])


async def test_a_broken_strategy_holds_the_turn_and_commits_nothing(harness: Harness) -> None:
    """Case 53: a strategy failing validation holds the turn (window-strategy), no retry."""
    driver = harness.driver(rounds(3), window=BrokenStrategy())
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert (outcome.status, outcome.error_kind) == ("held", "window-strategy")
    bundles = await harness.store.bundles(outcome.run_id)
    assert [b.stage for b in bundles if b.iteration == 2] == []
    assert compactions(bundles) == []
    harness.clock.advance(10_000)
    assert await harness.work(driver) == []  # held turns are never retried automatically

    fixed = harness.driver(
        [tool_reply(call("r1", "alpha_tool")), answer("fixed")],
        window=sliding_window(keep_recent_turns=2),
    )
    async with harness.clock.autojump():
        outcome, *_ = await fixed.resume()
    assert (outcome.kind, outcome.status, outcome.final_answer) == ("operator", "answered", "fixed")
    seed = (await harness.store.bundles(outcome.run_id))[0]
    assert {w["key"]: w["value"] for w in seed.writes}["iteration"] == 2
