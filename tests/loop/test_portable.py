"""Portable checkpoints: strict validation on import, export round trips, imported windows."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.agents import export_checkpoint, import_checkpoint, parse_checkpoint
from afp_runtime.errors import CheckpointInvalid, ConversationMismatch, RunNotResumable
from afp_runtime.findings import StandingRow
from afp_runtime.loop import load_folded_conversation
from afp_runtime.records import ledger_row_to_wire
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import sliding_window
from afp_runtime.window.folds import folded_messages, folded_span_for

from .conftest import Harness


def doc(**fields: Any) -> bytes:
    base: dict[str, Any] = {"version": 1, "agentId": "ops", "history": []}
    base.update(fields)
    return msgspec.json.encode(base)


IMPORTED = [
    {"role": "system", "content": "house rules"},
    {"role": "user", "content": "q1"},
    {"role": "assistant", "content": "", "toolCalls": [{"id": "x1", "name": "alpha_tool"}]},
    {"role": "user", "content": "q2"},
]
FOREIGN_SPAN = {
    "summaryFingerprint": "d0472e28",
    "runId": "elsewhere-7",
    "iteration": 1,
    "foldedAtMs": 1,
    "model": "other-system",
    "messageCount": 1,
    "removedStageIds": [],
    "retained": "conversation",
    "messages": [{"role": "user", "content": "very old"}],
}


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (doc(version=2), "newer"),
        (doc(version="1"), "version"),
        (doc(agentId="Bad Id"), "agentId"),
        (
            doc(history=[{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]),
            "history[1]",
        ),
        (doc(history=[{"role": "tool", "content": "x", "toolCallId": "nope"}]), "nope"),
        pytest.param(
            doc(
                history=[
                    {"role": "user", "content": "start"},
                    {
                        "role": "assistant",
                        "content": "",
                        "toolCalls": [{"id": "h1", "name": "t"}, {"id": "h2", "name": "t"}],
                    },
                    {"role": "tool", "content": "a", "toolCallId": "h1"},
                    {"role": "user", "content": "interjection"},
                    {"role": "tool", "content": "b", "toolCallId": "h2"},
                ]
            ),
            "history[4] answers call 'h2', whose assistant message it does not follow",
            id="result-apart-from-its-call",
        ),
        (doc(extra=1), "extra"),
        (doc(turn=-1), "turn"),
        pytest.param(doc(turn=10**30), "turn must be from 0", id="turn-beyond-2**53"),
        pytest.param(doc(modelCalls=2**53), "model_calls", id="calls-beyond-2**53"),
        pytest.param(doc(usageTotals={"input": 2**64}), "usage", id="usage-beyond-2**53"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "JSON", id="nested-too-deeply"),
        (b"[1, 2]", "object"),
        (b"{not json", "JSON"),
    ],
)
def test_strict_validation_names_what_is_wrong(data: bytes, named: str) -> None:
    """Case 13: a bad checkpoint is refused with a message naming the field or value."""
    with pytest.raises(CheckpointInvalid, match=named.replace("[", r"\[").replace("]", r"\]")):
        parse_checkpoint(data, agent_id="ops")


def test_another_agents_checkpoint_is_a_mismatch() -> None:
    """Case 13: a checkpoint of agent billing imported into ops names both ids."""
    with pytest.raises(ConversationMismatch, match="billing"):
        parse_checkpoint(doc(agentId="billing"), agent_id="ops")


async def test_import_then_export_round_trips(harness: Harness) -> None:
    """Case 35: system messages, unanswered calls and foreign spans are accepted verbatim."""
    checkpoint = parse_checkpoint(doc(history=IMPORTED, folded=[FOREIGN_SPAN]), agent_id="ops")
    await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5)
    exported = await export_checkpoint(harness.store, "ops")
    assert exported.history == checkpoint.history
    assert exported.folded == checkpoint.folded
    conversation = await load_folded_conversation(harness.store, "ops")
    assert folded_messages(conversation)[0].content == "very old"
    for message in exported.history:
        assert folded_span_for(conversation, message) is None  # a foreign span never matches


async def test_import_refuses_to_merge_and_replace_archives(harness: Harness) -> None:
    """An agent with a conversation refuses a plain import; replace starts a new one."""
    driver = harness.driver([answer("one")])
    await driver.post("first")
    await harness.work(driver)
    checkpoint = parse_checkpoint(doc(history=IMPORTED), agent_id="ops")
    with pytest.raises(RunNotResumable, match="replace"):
        await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5)
    state = await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5, replace=True)
    assert state.turn == 0 and len(state.history) == 4
    assert state.model_calls == 1  # agent-wide call numbers never repeat
    loaded = await harness.store.load_conversation("ops")
    assert [m.content for m in loaded.history] == ["house rules", "q1", "", "q2"]


async def test_a_replacing_import_keeps_the_notice_positions_already_used(
    harness: Harness,
) -> None:
    """Notices and summaries take item positions of their own (-1, -2, …); an import that
    replaces a conversation carries that count on, so the next window's notices never collide
    with the archived conversation's (docs/storage.md#message-bodies-and-list-references)."""

    async def big(args: Any, ctx: Any) -> str:
        return "y" * 600

    def script() -> list[Any]:
        return [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(6)] + [answer("done")]

    window = sliding_window(keep_recent_turns=1)
    driver = harness.driver(script(), behaviour={"alpha_tool": big}, window=window)
    await driver.post("first")
    await harness.work(driver)
    before = await harness.store.conversation_state("ops")
    assert before is not None and before.inserted_count > 0
    checkpoint = parse_checkpoint(doc(history=IMPORTED[1:2]), agent_id="ops")
    state = await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5, replace=True)
    assert state.inserted_count == before.inserted_count
    driver = harness.driver(script(), behaviour={"alpha_tool": big}, window=window)
    await driver.post("second")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    after = await harness.store.conversation_state("ops")
    assert after is not None and after.inserted_count > before.inserted_count


async def test_imported_window_keeps_its_envelope(harness: Harness) -> None:
    """Case 52: the system message and the unanswered call stay in every request while
    sliding keep 1 drops what it may; the records refuse them system-envelope and
    unresolved-tool-call."""
    envelope = [IMPORTED[0], IMPORTED[2], IMPORTED[3]]  # [S rules, A[x1], U q2]
    checkpoint = parse_checkpoint(doc(history=envelope), agent_id="ops")
    await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5)
    script = [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(6)] + [answer("done")]
    driver = harness.driver(script, window=sliding_window(keep_recent_turns=1))
    await driver.post("new question")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    for request in harness.model.requests:
        assert request.messages[0].content == "house rules"
        assert request.messages[1].tool_calls[0].id == "x1"
    bundles = await harness.store.bundles(outcome.run_id)
    reasons = {
        refusal["reason"]
        for b in bundles
        for w in b.writes
        if w["key"] == "compactions"
        for record in w["value"]
        for refusal in record["refusals"]
    }
    assert {"system-envelope", "unresolved-tool-call"} <= reasons
    assert not any(m.content == "q2" for m in harness.model.requests[-1].messages)


BAD_ROW = {
    "kind": "standing",
    "toolCallId": "c1",
    "standing": "maybe",
    "assertions": [],
    "declaredOn": "answer",
    "turn": 1,
    "iteration": 1,
}


def test_a_bad_ledger_row_is_refused_naming_index_kind_and_field() -> None:
    """docs/findings.md case 20: an imported row with standing 'maybe' names row 0, standing."""
    with pytest.raises(CheckpointInvalid) as caught:
        parse_checkpoint(doc(findingsLedger=[BAD_ROW]), agent_id="ops")
    assert caught.value.context.get("index") == 0
    assert caught.value.context.get("kind") == "standing"
    assert "standing" in str(caught.value.context.get("field"))


async def test_the_ledger_travels_with_the_checkpoint(harness: Harness) -> None:
    """Exported ledger rows come back on import, unchanged and counted on the checkpoint."""
    good = dict(BAD_ROW, standing="fact", toolCallId="c9")
    checkpoint = parse_checkpoint(doc(findingsLedger=[good]), agent_id="ops")
    state = await import_checkpoint(harness.store, "ops", checkpoint, now_ms=5)
    assert state.ledger_count == 1
    assert [ledger_row_to_wire(r) for r in await harness.store.ledger("ops")] == [good]
    assert [type(r) for r in await harness.store.ledger("ops")] == [StandingRow]
    exported = await export_checkpoint(harness.store, "ops")
    assert exported.findings_ledger == (good,)


CLOCK = {
    "kind": "clock",
    "turn": 1,
    "iteration": 1,
    "now": "2026-10-09T15:40:00Z",
    "nowSource": "inbox",
    "zone": "America/Los_Angeles",
    "zoneSource": "agent",
}
FILLED = {
    "kind": "call-window",
    "turn": 1,
    "iteration": 1,
    "toolCallId": "c1",
    "toolName": "client_activity",
    "how": "filled",
    "form": 0,
    "asked": {"from": "2026-10-09T15:00:00Z", "to": "2026-10-09T15:41:00Z"},
}
DST_GAP = {
    "kind": "call-window",
    "turn": 1,
    "iteration": 1,
    "toolCallId": "c1",
    "toolName": "search_logs",
    "how": "refused",
    "refused": "dst-gap",
    "form": 0,
}
ANSWER = {
    "kind": "time-answer",
    "turn": 1,
    "iteration": 1,
    "mention": 0,
    "from": "2026-10-09T15:00:00Z",
    "to": "2026-10-09T15:41:00Z",
    "zone": "America/Los_Angeles",
    "how": "confirmed",
}


@pytest.mark.parametrize(
    ("row", "named"),
    [
        (FILLED, "person"),
        (DST_GAP, "argument"),
        ({**ANSWER, "label": "x"}, "label"),
        ({**CLOCK, "now": "2026-10-09t15:40:00z"}, "now"),
    ],
)
def test_case_53_time_rows_are_validated_strictly_on_import(
    row: dict[str, Any], named: str
) -> None:
    """docs/time.md case 53: bad time rows are refused, naming the field; valid ones pass."""
    with pytest.raises(CheckpointInvalid, match=named):
        parse_checkpoint(doc(findingsLedger=[CLOCK, row]), agent_id="ops")
    assert parse_checkpoint(doc(findingsLedger=[CLOCK, ANSWER]), agent_id="ops")
