"""Receipts as the loop mints them: entries new since the base receipt, pieces, request-only."""

from __future__ import annotations

from typing import Any

from afp_runtime.messages import message_body, salted
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import sliding_window

from .conftest import Crash, Harness


async def receipts(harness: Harness, run_id: str) -> list[dict[str, Any]]:
    return [
        w["value"]
        for b in await harness.store.bundles(run_id)
        for w in b.writes
        if w["key"] == "receipt"
    ]


async def test_new_entries_list_what_each_call_added(harness: Harness) -> None:
    """docs/served.md case 8: epoch 1 lists the user message; epoch 2 the call and its result."""
    driver = harness.driver(
        [tool_reply(call("c1", "alpha_tool")), answer("done")], system_prompt="you are a bot"
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    first, second = await receipts(harness, outcome.run_id)
    assert [(e["index"], e["role"]) for e in first["messages"]["newEntries"]] == [(0, "user")]
    assert [e["index"] for e in second["messages"]["newEntries"]] == [1, 2]
    assert second["messages"]["newEntries"][1]["key"] == "c1"
    assert second["messages"]["count"] == 3
    sent = harness.model.requests[1].messages
    assert second["messages"]["newEntries"][0]["hash"] == salted(
        outcome.run_id, message_body(sent[1])
    )
    [piece] = first["system"]["pieces"]
    assert (piece["slot"], piece["source"]) == ("instructions", "definition")
    assert piece["hash"] == salted(outcome.run_id, "you are a bot")


async def test_a_recovery_runs_first_receipt_uses_the_crashed_one_as_base(harness: Harness) -> None:
    """docs/served.md case 16: run-2's first receipt re-sends what run-1's abandoned receipt listed,
    so it has no new entries."""

    def crash_on_send(request: Any, number: int) -> Any:
        raise Crash

    driver = harness.driver(crash_on_send)
    await driver.post("go")
    await harness.crash(driver)
    await harness.restart()
    driver = harness.driver([answer("done")])
    await harness.work(driver)
    [abandoned] = await receipts(harness, "run-1")
    [retried] = await receipts(harness, "run-2")
    assert len(abandoned["messages"]["newEntries"]) == 1
    assert retried["messages"]["newEntries"] == []
    assert retried["wire"]["hash"] != abandoned["wire"]["hash"]  # salted per run


async def test_receipts_grow_with_new_messages_only(harness: Harness) -> None:
    """docs/served.md case 37: under a sliding window each receipt lists at most the call, its
    result and a notice; the full digest still covers the whole window."""
    script = [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(12)] + [answer("done")]
    driver = harness.driver(script, window=sliding_window(keep_recent_turns=2), max_iterations=20)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    found = await receipts(harness, outcome.run_id)
    assert len(found) == 13
    assert all(len(r["messages"]["newEntries"]) <= 3 for r in found[1:])
    assert any("omittedForAttention" in r for r in found)


async def test_incremental_entries_equal_the_full_computation(harness: Harness) -> None:
    """The O(new) path of a growing window lists exactly what the multiset rule lists."""
    from afp_runtime.messages import fingerprint
    from afp_runtime.served import new_entries

    script = [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(6)] + [answer("done")]
    driver = harness.driver(script)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    found = await receipts(harness, outcome.run_id)
    base: dict[str, int] = {}
    for request, receipt in zip(harness.model.requests, found, strict=True):
        sent = request.messages
        fps = [fingerprint(m) for m in sent]
        expected = new_entries(outcome.run_id, sent, fps, base)
        got = [(e["index"], e["hash"]) for e in receipt["messages"]["newEntries"]]
        assert got == [(e.index, e.hash) for e in expected]
        base = {}
        for fp in fps:
            base[fp] = base.get(fp, 0) + 1


async def test_receipts_under_rebases_equal_the_full_computation(harness: Harness) -> None:
    """Under a sliding window that drops a turn at every call, each receipt's running digest,
    new entries and omitted hashes (computed from cached hashes) are the from-scratch ones."""
    from afp_runtime.messages import fingerprint
    from afp_runtime.served import extend_digest, new_entries, start_digest

    script = [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(8)] + [answer("done")]
    driver = harness.driver(script, window=sliding_window(keep_recent_turns=2), max_iterations=20)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    run_id = outcome.run_id
    found = await receipts(harness, run_id)
    base: dict[str, int] = {}
    before: list[Any] = []
    omissions = 0
    for request, receipt in zip(harness.model.requests, found, strict=True):
        sent = list(request.messages)
        fps = [fingerprint(m) for m in sent]
        whole = extend_digest(run_id, start_digest(run_id), sent, fps)
        assert receipt["messages"]["digest"] == whole.digest
        expected = new_entries(run_id, sent, fps, base)
        got = [(e["index"], e["hash"]) for e in receipt["messages"]["newEntries"]]
        assert got == [(e.index, e.hash) for e in expected]
        gone = [m for m in before if fingerprint(m) not in set(fps)]
        hashes = receipt.get("omittedForAttention", {}).get("hashes", [])
        assert hashes == [salted(run_id, message_body(m)) for m in gone]
        omissions += len(hashes)
        base = {}
        for fp in fps:
            base[fp] = base.get(fp, 0) + 1
        before = sent
    assert omissions > 0
