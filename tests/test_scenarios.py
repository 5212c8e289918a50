"""Offline scenarios (docs/scenarios.md): golden files, determinism, path-naming errors, the
command.

Every ``tests/scenarios/NAME.json`` runs twice to byte-identical results equal to
``NAME.expected.json``, and each expected file is checked for the behaviour its name claims.
After an intended change, regenerate the expected files (the tests never write) and read the
diff before committing it:

    AFP_UPDATE_SCENARIOS=1 .venv/bin/python tests/test_scenarios.py [NAME ...]
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import structlog

from afp_runtime.errors import (
    AfpError,
    AgentDefinitionError,
    CheckpointInvalid,
    FindingsConfigError,
    InvalidAnswer,
    InvalidValue,
    PeriodDeclarationError,
    ScriptExhausted,
    TimeNotEnabled,
    ToolDefinitionError,
    WindowConfigError,
)
from afp_runtime.findings.texts import FINDINGS_INSTRUCTION, LEDGER_HEADER
from afp_runtime.scenario import (
    RESULT_FORMAT,
    Scenario,
    decode_scenario,
    encode_result,
    run_scenario,
)
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.time import TIME_ROW_KINDS
from afp_runtime.time._decide import TIME_QUOTE
from afp_runtime.time._facts import Facts
from afp_runtime.time._texts import TIME_LINE_PREFIX, refusal_observation, unsettled_observation
from afp_runtime.tools import (
    declined_text,
    halted_text,
    interrupted_text,
    no_reply_text,
    not_dispatched_text,
    permission_denied_text,
    person_reply_text,
    repeated_call_note,
    timeout_text,
)
from afp_runtime.window.texts import (
    DROP_NOTICE_PREFIX,
    NOTICE_KEPT_STATEMENT,
    SUMMARY_PREFIX,
    WRAP_UP_PREFIX,
)

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests" / "scenarios"
NAMES = sorted(
    path.name.removesuffix(".json")
    for path in SCENARIOS.glob("*.json")
    if not path.name.endswith(".expected.json")
)
UPDATE_HINT = "AFP_UPDATE_SCENARIOS=1 .venv/bin/python tests/test_scenarios.py"

Result = dict[str, Any]


async def _result_bytes(data: bytes | Scenario, db: Path) -> bytes:
    return encode_result(await run_scenario(data, db_path=db))


async def _read(path: Path) -> bytes:
    return await anyio.Path(path).read_bytes()


async def _expected(name: str) -> Result:
    data: Result = json.loads(await _read(SCENARIOS / f"{name}.expected.json"))
    return data


# -- golden files -----------------------------------------------------------------------------


def test_there_are_golden_scenarios() -> None:
    """At least ten scenario files exist, each with its expected result beside it."""
    assert len(NAMES) >= 10
    missing = [n for n in NAMES if not (SCENARIOS / f"{n}.expected.json").is_file()]
    assert not missing, f"no expected file for {missing}; run {UPDATE_HINT}"


@pytest.mark.parametrize("name", NAMES)
async def test_scenario_is_deterministic_and_matches_its_expected_result(
    name: str, tmp_path: Path
) -> None:
    """Two runs of a scenario give the same bytes, and those are its expected file's bytes."""
    data = await _read(SCENARIOS / f"{name}.json")
    first = await _result_bytes(data, tmp_path / "first.db")
    second = await _result_bytes(data, tmp_path / "second.db")
    assert first == second, "the same scenario gave different results"
    expected = await _read(SCENARIOS / f"{name}.expected.json")
    assert json.loads(first) == json.loads(expected), f"regenerate with {UPDATE_HINT} {name}"
    assert first == expected, f"regenerate with {UPDATE_HINT} {name}"


async def _receipts(db: Path) -> set[tuple[str, int, int]]:
    store = await SqliteStore.open(db, read_only=True)
    try:
        found = set()
        for run in await store.runs("scenario"):
            for bundle in await store.bundles(run.run_id):
                for write in bundle.writes:
                    if write["key"] == "receipt":
                        receipt = write["value"]
                        basis = receipt["basis"]
                        found.add((basis["runId"], basis["epoch"], receipt["agentCall"]))
        return found
    finally:
        await store.aclose()


# Under iteration or turn durability a lost iteration's receipt is never committed, so the
# law below holds for sync scenarios only.
SYNC_NAMES = [
    n
    for n in NAMES
    if '"durability": "iteration"' not in (SCENARIOS / f"{n}.json").read_text()
    and '"durability": "turn"' not in (SCENARIOS / f"{n}.json").read_text()
]


@pytest.mark.parametrize("name", SYNC_NAMES)
async def test_every_send_carries_a_committed_receipt(name: str, tmp_path: Path) -> None:
    """Under sync durability the (runId, epoch, agentCall) of the sends are exactly the
    receipts the store committed: one set, no send without a receipt and no receipt unsent."""
    data = await _read(SCENARIOS / f"{name}.json")
    scenario = decode_scenario(data)
    assert scenario.agent.durability == "sync"
    result = json.loads(await _result_bytes(scenario, tmp_path / "afp.db"))
    sent = {(c["runId"], c["epoch"], c["agentCall"]) for c in result["modelCalls"]}
    assert sent == await _receipts(tmp_path / "afp.db")


# -- what each golden file must show ------------------------------------------------------------


def _requests(result: Result) -> list[list[dict[str, Any]]]:
    return [call["request"]["messages"] for call in result["modelCalls"]]


def _sent_starting(result: Result, prefix: str) -> list[dict[str, Any]]:
    """Every sent message whose content starts with ``prefix`` (empty content is omitted)."""
    return [m for req in _requests(result) for m in req if m.get("content", "").startswith(prefix)]


def _records(result: Result) -> list[dict[str, Any]]:
    return [record for turn in result["turns"] for record in turn.get("compactions", [])]


def _run_statuses(turn: dict[str, Any]) -> list[tuple[str, str]]:
    return [(run["kind"], run["status"]) for run in turn["runs"]]


def _plain_tool_loop(r: Result) -> None:
    assert _records(r) == [] and r["folded"] == []
    statuses = {e["toolCallId"]: e["result"] for e in r["toolExecutions"]}
    assert statuses["b1"] == {"error": "carrier API returned 502"}
    assert "no result for call 2" in statuses["c1"]["error"]
    assert statuses["c2"] is None  # stopped at its 2 s limit
    last = _requests(r)[-1]
    assert last[-1]["content"] == timeout_text("refund_check", 2)
    # a1 (400 ms) and a2 (100 ms) ran concurrently: the next call came 400 ms + 1 s later.
    assert r["modelCalls"][1]["clockMs"] - r["modelCalls"][0]["clockMs"] == 1400
    assert r["turns"][0]["answer"].startswith("Order 1042")


def _sliding_notices(r: Result) -> None:
    records = _records(r)
    assert {rec["strategy"] for rec in records} == {"sliding-window"}
    assert any(rec["removedMessageCount"] > 0 for rec in records)
    notices = _sent_starting(r, DROP_NOTICE_PREFIX)
    assert notices and any(NOTICE_KEPT_STATEMENT in m["content"] for m in notices)
    assert all(sum(m in req for m in notices) <= 1 for req in _requests(r))
    second = _requests(r)[-1]
    assert not any(m.get("content") == "Run probes x, y and z." for m in second)


def _token_budget(r: Result) -> None:
    [record] = _records(r)
    assert record["strategy"] == "token-budget" and record["overBudget"] is True
    assert record["measuredTokens"] > record["thresholdTokens"]
    assert record["removedMessageCount"] > 0


def _summarize(retain: str) -> Callable[[Result], None]:
    def check(r: Result) -> None:
        spans = r["folded"]
        assert len(spans) == 2 and {s["retained"] for s in spans} == {retain}
        assert ("messages" in spans[0]) is (retain == "conversation")
        assert len(r["summarizerCalls"]) == 2
        assert _sent_starting(r, SUMMARY_PREFIX), "a summary message reached the model"
        assert all(rec["removedMessageCount"] > 0 for rec in _records(r))

    return check


def _summarizer_failure(r: Result) -> None:
    failed, folded = _records(r)
    assert failed["refusals"][0]["reason"] == "summarizer-failed"
    assert failed["removedMessageCount"] == 0
    assert folded["removedMessageCount"] > 0
    assert len(r["folded"]) == 1
    assert r["summarizerCalls"][0]["response"]["error"]["status"] == 500


def _recency_pin(r: Result) -> None:
    records = _records(r)
    blocked = [rec for rec in records if rec.get("observations", {}).get("pinned")]
    assert len(blocked) == 2 and all(rec["removedMessageCount"] == 0 for rec in blocked)
    assert all(p["toolName"] == "look_around" for p in blocked[0]["observations"]["pinned"])
    stood_down = records[records.index(blocked[1]) + 1]
    assert stood_down["observations"]["standDown"] is True
    assert "look_around" in stood_down["droppedObservations"]


def _wrap_up(r: Result) -> None:
    last = r["modelCalls"][-1]["request"]
    assert last["tools"] == []
    assert last["messages"][-1]["content"].startswith(WRAP_UP_PREFIX)
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["x1"]
    assert r["turns"][0]["answer"] == r["modelCalls"][-1]["response"]["content"]


def _cut_short(r: Result) -> None:
    assert len(r["modelCalls"]) == 2
    assert r["turns"][0]["answer"] == "x is up; checking y next."
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["x1"]


def _stall(r: Result) -> None:
    turn = r["turns"][0]
    assert _run_statuses(turn) == [("initial", "stalled"), ("retry", "answered")]
    first, last = r["modelCalls"][0], r["modelCalls"][-1]
    assert [c["attempt"] for c in r["modelCalls"][:5]] == [1, 2, 3, 4, 5]
    assert last["clockMs"] - r["modelCalls"][4]["clockMs"] == 60_000 + 1_000
    assert last["agentCall"] == first["agentCall"] + 1 and last["attempt"] == 1


def _rate_limited(r: Result) -> None:
    first, second = r["modelCalls"]
    assert (first["agentCall"], first["epoch"]) == (second["agentCall"], second["epoch"])
    assert (first["attempt"], second["attempt"]) == (1, 2)
    assert second["clockMs"] - first["clockMs"] > 1_000  # a backoff wait came in between
    assert _run_statuses(r["turns"][0]) == [("initial", "answered")]


def _auth_held(r: Result) -> None:
    turn = r["turns"][0]
    assert turn["outcome"] == "held" and "answer" not in turn
    assert len(r["modelCalls"]) == 1


def _crash_after_call_model(r: Result) -> None:
    assert r["turns"][0] == {"index": 0, "kind": "crash"}
    assert _run_statuses(r["turns"][1]) == [("initial", "crashed"), ("recovery", "answered")]
    assert len(r["modelCalls"]) == 2  # the committed reply was settled, not asked again
    assert r["modelCalls"][1]["epoch"] == 2


def _crash_tool_start(r: Result) -> None:
    assert _run_statuses(r["turns"][1]) == [("initial", "crashed"), ("recovery", "answered")]
    assert [(e["toolCallId"], e["result"]) for e in r["toolExecutions"]] == [
        ("l1", "1042: 25.00 EUR, card on file"),
        ("p1", None),
    ]
    sent = _requests(r)[-1]
    charge = next(m for m in sent if m.get("toolCallId") == "p1")
    assert charge["content"] == interrupted_text("charge_card")


def _crash_during_send(r: Result) -> None:
    statuses = _run_statuses(r["turns"][2])
    assert statuses == [("initial", "crashed"), ("recovery", "crashed"), ("recovery", "answered")]
    cut = r["modelCalls"][1]
    assert cut["response"] is None
    assert r["modelCalls"][2]["request"] == cut["request"]
    assert r["modelCalls"][2]["agentCall"] == cut["agentCall"] + 1


def _assembled(fragments: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str, str]]]:
    """A streamed send's text and its calls' (id, name, arguments text), from its fragments."""
    text = "".join(f.get("text", "") for f in fragments)
    calls: dict[int, list[str]] = {}
    for f in fragments:
        if "toolCallIndex" in f:
            call = calls.setdefault(f["toolCallIndex"], ["", "", ""])
            call[0] = f.get("toolCallId", call[0])
            call[1] = f.get("toolName", call[1])
            call[2] += f.get("arguments", "")
    return text, [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]


def _streamed_crash_mid_stream(r: Result) -> None:
    assert _run_statuses(r["turns"][1]) == [("initial", "crashed"), ("recovery", "answered")]
    cut, again, last = r["modelCalls"]
    # Cut after four fragments: the text in pieces of 4, then the call's first piece.
    assert cut["response"] is None
    assert [len(f.get("text", "")) for f in cut["fragments"]] == [4, 4, 3, 0]
    assert _assembled(cut["fragments"]) == ("Checking x.", [("x1", "probe_x", '{"id')])
    # Asked for again under a new receipt; the unconsumed reply streams in full.
    assert again["request"] == cut["request"]
    assert (again["runId"], again["agentCall"]) == ("run-2", cut["agentCall"] + 1)
    for call in (again, last):
        text, calls = _assembled(call["fragments"])
        assert text == call["response"]["content"]
        assert calls == [
            (c["id"], c["name"], json.dumps(c["args"], separators=(",", ":")))
            for c in call["response"]["toolCalls"]
        ]
    assert [f["text"] for f in last["fragments"]] == ["x i", "s u", "p."]
    assert len(r["toolExecutions"]) == 1  # the tool ran once
    assert r["turns"][1]["answer"] == "x is up."


def _crash_iteration(r: Result) -> None:
    assert _run_statuses(r["turns"][1]) == [("initial", "crashed"), ("recovery", "answered")]
    assert [e["callNumber"] for e in r["toolExecutions"]] == [1, 2]
    assert len(r["modelCalls"]) == 3  # the lost iteration's reply was asked for again


def _restart(r: Result) -> None:
    assert r["turns"][1] == {"index": 1, "kind": "restart"}
    second = _requests(r)[2]
    assert any(m.get("content") == "Order 1042 is packed." for m in second)
    assert [c["agentCall"] for c in r["modelCalls"]] == [1, 2, 3, 4]


def _continue_from(r: Result) -> None:
    request = _requests(r)[1]
    assert request[0] == {"role": "system", "content": "House rule: never promise delivery dates."}
    assert any(c["id"] == "old-1" for m in request for c in m.get("toolCalls", []))
    reasons = {x["reason"] for rec in r["turns"][1]["compactions"] for x in rec["refusals"]}
    assert {"system-envelope", "unresolved-tool-call"} <= reasons
    assert [s["summaryFingerprint"] for s in r["folded"]] == ["helpdesk-v2:summary-88"]
    assert not any(m.get("content") == "Where is order 1042?" for m in request)
    # docs/window.md#when-the-oldest-span-cannot-go: every visit over the bound removes a turn.
    records = r["turns"][1]["compactions"]
    assert records and all(rec["removedMessageCount"] > 0 for rec in records)
    assert not any(m.get("content") == "Never mind that." for m in _requests(r)[-1])


def _cost_budget_halt(r: Result) -> None:
    halted, later = r["turns"]
    assert halted["outcome"] == "halted" and "answer" not in halted
    assert halted["halted"]["errorKind"] == "budget-turn"
    assert halted["cost"]["amount"] == pytest.approx(0.0019 + 0.0027)
    # The halted call never ran and no wrap-up call was made: 2 calls in turn 0, 2 in turn 1.
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["s1", "s3"]
    assert [c["turn"] for c in r["modelCalls"]] == [0, 0, 1, 1]
    halted_result = _tool_contents(_requests(r)[2])["s2"]
    assert halted_result == halted_text("ship", "budget-turn")
    assert later["outcome"] == "answered"
    assert later["cost"]["unknown"] == 1 and later["cost"]["total"] is None


def _permission_gate(r: Result) -> None:
    denied, asked, approved, halted = r["turns"]
    assert denied["outcome"] == "answered"
    decided = [
        (row["toolCallId"], row["decision"], row["rule"])
        for step in r["turns"]
        for row in step.get("permissions", [])
    ]
    assert decided == [
        ("r1", "deny", "no-etc"),
        ("f1", "allow", "default"),
        ("r2", "ask", "confirm-removals"),
        ("w1", "halt", "never-wipe"),
    ]
    contents = _tool_contents(_requests(r)[1])
    assert contents["r1"] == permission_denied_text("remove_file", "no-etc", "system files stay")
    assert contents["f1"] == "log: all quiet"
    assert asked["outcome"] == "paused" and approved["outcome"] == "answered"
    assert halted["outcome"] == "halted" and halted["halted"]["errorKind"] == "permission"
    # Only the allowed and the approved calls ran; the halt made no further model call.
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["f1", "r2"]
    assert [c["turn"] for c in r["modelCalls"]] == [0, 0, 1, 2, 3]


def _repeated_call_note(r: Result) -> None:
    first_turn = _tool_contents(_requests(r)[4])
    shipped = "1042: shipped 2025-06-16"
    assert first_turn == {
        "o1": shipped,
        "o2": shipped + repeated_call_note(2),
        "o3": "7: awaiting stock",
        "o4": shipped + repeated_call_note(3),
    }
    assert _tool_contents(_requests(r)[-1])["o5"] == shipped
    assert [e["result"] for e in r["toolExecutions"]] == [shipped] * 2 + ["7: awaiting stock"] + [
        shipped
    ] * 2


def _stub(standing: str, ident: str) -> str:
    return f'{{"withheld":true,"standing":"{standing}","toolCallId":"{ident}"}}'


def _tool_contents(request: list[dict[str, Any]]) -> dict[str, str]:
    return {m["toolCallId"]: m.get("content", "") for m in request if m["role"] == "tool"}


def _findings_facts_pinned(r: Result) -> None:
    rows = r["turns"][0]["findingsLedger"]
    judged = {row["toolCallId"]: row["standing"] for row in rows if row["kind"] == "standing"}
    assert judged == {"t1": "fact", "p1": "noise", "p2": "noise", "p3": "noise", "p4": "noise"}
    assert all("_findings" not in e["args"] for e in r["toolExecutions"])
    sensor = r["toolExecutions"][0]["result"]
    for call in r["modelCalls"]:
        for tool in call["request"]["tools"]:
            schema = tool["inputSchema"]
            assert "_findings" in schema["properties"]
            assert "_findings" not in schema.get("required", [])
    for request in _requests(r)[1:]:
        assert _tool_contents(request)["t1"] == sensor  # the fact is served in full, always
    records = _records(r)
    pins = [rec["ledgerFacts"] for rec in records if "ledgerFacts" in rec]
    assert len(pins) >= 3
    for pin in pins:
        assert pin["limit"] == 4 and "standDown" not in pin
        assert [(p["toolName"], p["turnIndex"]) for p in pin["pinned"]] == [("read_sensor", 1)]
    dropped = [d for rec in records for d in rec.get("droppedStandings", [])]
    assert [d["toolCallId"] for d in dropped] == ["p1", "p2", "p3"]
    assert {d["standing"] for d in dropped} == {"noise"}
    last = _tool_contents(_requests(r)[-1])
    assert set(last) == {"t1", "p4", "p5"}
    assert last["p4"] == _stub("noise", "p4")


def _findings_stand_down(r: Result) -> None:
    records = _records(r)
    first = next(i for i, rec in enumerate(records) if rec.get("ledgerFacts", {}).get("standDown"))
    for blocked in records[first - 2 : first]:
        assert blocked["removedMessageCount"] == 0 and blocked["ledgerFacts"]["pinned"]
        assert "ledger-fact" in {x["reason"] for x in blocked["refusals"]}
    released = records[first]
    assert released["ledgerFacts"] == {"pinned": [], "yielded": 0, "limit": 4, "standDown": True}
    assert released["removedMessageCount"] > 0 and "observations" not in released
    gone = [d["toolCallId"] for d in released["droppedStandings"]]
    assert gone and {d["standing"] for d in released["droppedStandings"]} == {"fact"}
    [after] = [c for c in r["modelCalls"] if c["epoch"] == released["iteration"]]
    assert not set(gone) & set(_tool_contents(after["request"]["messages"]))
    later = records[first + 1 :]
    assert later and not any(rec.get("ledgerFacts", {}).get("standDown") for rec in later[:2])


def _findings_restart(r: Result) -> None:
    first, restart, second = r["turns"]
    assert restart == {"index": 1, "kind": "restart"}
    assert {row["turn"] for row in first["findingsLedger"]} == {1}
    assert {row["turn"] for row in second["findingsLedger"]} == {2}
    opening, closing = [c["request"] for c in r["modelCalls"] if c["turn"] == 2]
    # Read back from the store alone: the ledger piece is there before turn 2 declares anything.
    piece = opening["system"].rsplit("\n\n", 1)[-1]
    assert piece.startswith(LEDGER_HEADER) and "(tool:s1)" in piece
    assert FINDINGS_INSTRUCTION in opening["system"]
    served = _tool_contents(closing["messages"])
    assert served["c1"] == _stub("noise", "c1")
    assert served["s1"] == _stub("ruled-out", "s1")
    assert json.loads(second["answer"]) == {"answer": "order 1042 shipped on Tuesday"}
    assert "_findings" in r["modelCalls"][-1]["response"]["content"]
    assert second["findingsLedger"][-1]["declaredOn"] == "answer"
    assert [c["agentCall"] for c in r["modelCalls"]] == [1, 2, 3, 4, 5]


HOST_QUESTION = "Which host should I restart first?"


def _by_call(request: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["toolCallId"]: m for m in request if m["role"] == "tool"}


def _paused_first(r: Result) -> dict[str, Any]:
    """The message step ended paused: its one run paused, no answer; the model was asked once."""
    first = r["turns"][0]
    assert first["outcome"] == "paused" and "answer" not in first
    assert _run_statuses(first) == [("initial", "paused")]
    assert [c["turn"] for c in r["modelCalls"]].count(0) == 1
    return first


def _checkin_tool_ask(r: Result) -> None:
    _paused_first(r)
    resume = r["turns"][1]
    assert resume["answerStatus"] == "accepted" and resume["outcome"] == "answered"
    assert _run_statuses(resume) == [("answer", "answered")]
    assert resume["answer"] == r["modelCalls"][-1]["response"]["content"]
    asked = {e["toolCallId"]: e["result"] for e in r["toolExecutions"]}
    assert asked["k1"] == {"pause": {"question": HOST_QUESTION}}
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["s1", "k1", "r1"]  # k1 ran once
    after = _by_call(_requests(r)[1])
    assert after["s1"]["content"] == asked["s1"]  # finished before the ask: kept
    reply = person_reply_text("pick_host", HOST_QUESTION, "web-2, it serves the checkout")
    assert after["k1"]["content"] == reply and "notDispatched" not in after["k1"]
    # runGapMs before the resume, then the model call step.
    assert r["modelCalls"][1]["clockMs"] - r["modelCalls"][0]["clockMs"] == 200 + 60_000 + 1_000
    assert (
        r["modelCalls"][1]["epoch"] == 2
        and r["modelCalls"][1]["runId"] == resume["runs"][0]["runId"]
    )


def _checkin_approval(r: Result) -> None:
    _paused_first(r)
    declined, approved = r["turns"][1:]
    assert declined["outcome"] == "paused" and declined["runs"] == []
    assert "runId" not in declined and declined["answerStatus"] == "accepted"
    assert approved["outcome"] == "answered" and _run_statuses(approved) == [("answer", "answered")]
    assert [(e["toolCallId"], e["turn"]) for e in r["toolExecutions"]] == [("d1", 2), ("c1", 2)]
    after = _by_call(_requests(r)[-1])
    assert after["d1"]["content"] == "api deployed: build 512"
    assert after["d2"]["content"] == declined_text("deploy") and after["d2"]["notDispatched"]
    assert list(after) == ["d1", "d2", "c1"]  # committed in the model's order


def _checkin_abandoned(r: Result) -> None:
    _paused_first(r)
    resume = r["turns"][1]
    assert _run_statuses(resume) == [("answer", "answered")] and resume["answer"]
    after = _by_call(_requests(r)[-1])
    assert after["k1"]["content"] == no_reply_text("pick_host", HOST_QUESTION)
    assert "notDispatched" not in after["k1"]
    assert after["r1"]["content"] == not_dispatched_text("restart_host")
    assert after["r1"]["notDispatched"] is True
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["k1"]


def _checkin_restart(r: Result) -> None:
    _paused_first(r)
    assert r["turns"][1] == {"index": 1, "kind": "restart"}
    resume, later = r["turns"][2:]
    assert _run_statuses(resume) == [("answer", "answered")]
    assert _run_statuses(later) == [("initial", "answered")]
    reply = person_reply_text("pick_host", HOST_QUESTION, "web-2")
    assert _by_call(_requests(r)[-1])["k1"]["content"] == reply  # read back from the store
    assert [c["agentCall"] for c in r["modelCalls"]] == [1, 2, 3, 4]


def _checkin_crash_in_answer_run(r: Result) -> None:
    _paused_first(r)
    assert r["turns"][1] == {"index": 1, "kind": "crash"}
    resume = r["turns"][2]
    assert _run_statuses(resume) == [("answer", "crashed"), ("recovery", "answered")]
    assert [(e["toolCallId"], e["result"]) for e in r["toolExecutions"]] == [("p1", None)]
    charge = _by_call(_requests(r)[-1])["p1"]
    assert charge["content"] == interrupted_text("charge_card")
    assert len(r["modelCalls"]) == 2


def _checkin_crash_after_settle(r: Result) -> None:
    _paused_first(r)
    resume = r["turns"][2]
    assert _run_statuses(resume) == [("answer", "crashed"), ("recovery", "answered")]
    crashed, recovery = (run["runId"] for run in resume["runs"])
    # The answer run died after its settle: it sent nothing; the recovery went on from there.
    assert {c["runId"] for c in r["modelCalls"][1:]} == {recovery} != {crashed}
    reply = person_reply_text("pick_host", HOST_QUESTION, "web-2")
    assert _by_call(_requests(r)[1])["k1"]["content"] == reply
    assert [e["toolCallId"] for e in r["toolExecutions"]] == ["k1", "r1"]


LA = "America/Los_Angeles"
# 2026-03-08 in Los Angeles: 02:00 PST jumps to 03:00 PDT, so the date lasts 23 hours.
MAR7 = "2026-03-07T00:00:00-08:00"
MAR8 = "2026-03-08T00:00:00-08:00"
MAR8_NOON = "2026-03-08T12:00:00-07:00"
MAR9 = "2026-03-09T00:00:00-07:00"
MS = {  # epoch milliseconds of the instants above (and 03:00 PDT on 2026-03-08)
    MAR7: 1772870400000,
    MAR8: 1772956800000,
    "2026-03-08T03:00:00-07:00": 1772964000000,
    MAR8_NOON: 1772996400000,
    MAR9: 1773039600000,
}


def _time_rows(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = turn["timeRows"]
    assert {row["kind"] for row in rows} <= set(TIME_ROW_KINDS)
    return [row for row in rows if row["kind"] == kind]


def _latest_windows(turn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The most recent call-window row of each call the step decided."""
    return {row["toolCallId"]: row for row in _time_rows(turn, "call-window")}


def _executed(r: Result) -> dict[str, dict[str, Any]]:
    return {e["toolCallId"]: e["args"] for e in r["toolExecutions"]}


def _time_lines(r: Result) -> list[str]:
    """The time line ending every request (docs/time.md#the-served-time-line); one text per turn."""
    lines = [req[-1]["content"] for req in _requests(r)]
    assert all(line.startswith(TIME_LINE_PREFIX) for line in lines)
    return lines


def _period_tools_offer_a_time_quote(r: Result) -> None:
    for call in r["modelCalls"]:
        for tool in call["request"]["tools"]:
            assert TIME_QUOTE in tool["inputSchema"]["properties"]
    assert all(TIME_QUOTE not in args for args in _executed(r).values())


def _time_dst_control_window(r: Result) -> None:
    [turn] = r["turns"]
    assert turn["outcome"] == "answered" and _run_statuses(turn) == [("initial", "answered")]
    [clock] = _time_rows(turn, "clock")
    control = {"from": MAR8, "to": MAR8_NOON, "source": "control"}
    assert clock["window"] == control and (clock["zone"], clock["zoneSource"]) == (LA, "agent")
    assert clock["now"] == "2026-03-08T20:00:00Z"  # startMs + runGapMs, from the inbox
    [reading] = _time_rows(turn, "time-reading")
    assert reading["mentions"] == 0
    rows = _latest_windows(turn)
    assert [(k, v["how"]) for k, v in rows.items()] == [
        ("c1", "filled"),
        ("c2", "bound"),
        ("c3", "model-chosen"),
        ("c4", "refused"),
        ("c5", "filled"),
    ]
    assert rows["c1"]["person"] == control and rows["c1"]["asked"] == {
        "from": MAR8,
        "to": MAR8_NOON,
    }
    assert rows["c2"]["by"] == "value" and rows["c2"]["person"] == control
    assert rows["c3"]["person"] == control
    assert rows["c3"]["asked"] == {"from": "2026-03-08T10:00:00Z", "to": "2026-03-08T19:00:00Z"}
    gap = rows["c4"]
    assert (gap["refused"], gap["argument"], gap["form"]) == ("dst-gap", "start", 0)
    assert "asked" not in gap
    # The day form covers the whole local date: 23 hours, the rest noted as extra.
    assert rows["c5"]["sent"] == {"from": "2026-03-08T08:00:00Z", "to": "2026-03-09T07:00:00Z"}
    assert rows["c5"]["differs"] == {
        "extra": [{"from": "2026-03-08T19:00:00Z", "to": "2026-03-09T07:00:00Z"}]
    }
    assert [row["toolCallId"] for row in _time_rows(turn, "call")] == ["c1", "c2", "c3", "c5"]
    args = _executed(r)
    assert list(args) == ["c1", "c2", "c3", "c5"]  # the dst-gap call never ran
    assert args["c1"] == args["c2"] == {"start_time": MS[MAR8], "end_time": MS[MAR8_NOON]}
    assert args["c3"]["start_time"] == MS["2026-03-08T03:00:00-07:00"]
    assert args["c5"] == {"date": "2026-03-08", "tz": LA}
    sent = _by_call(_requests(r)[-1])
    refused = refusal_observation(
        "search_logs", "dst-gap", Facts(direction="past"), argument="start"
    )
    assert sent["c4"]["content"] == refused and sent["c4"]["notDispatched"] is True
    first, second = _time_lines(r)
    assert first == second and "Sunday, 2026-03-08, 13:00" in first and "UTC-07:00" in first
    _period_tools_offer_a_time_quote(r)


def _time_question_confirmed(r: Result) -> None:
    paused = _paused_first(r)
    opened = _latest_windows(paused)
    assert {k: (v["how"], v["why"]) for k, v in opened.items()} == {
        "e1": ("not-filled", "open-reading"),
        "d1": ("not-filled", "open-reading"),
    }
    [reading] = _time_rows(paused, "time-reading")
    assert reading["quote"] == "yesterday"
    assert [c["range"] for c in reading["candidates"]] == [{"from": MAR8, "to": MAR9}]
    assert _time_rows(paused, "call") == []
    assert {e["turn"] for e in r["toolExecutions"]} == {1}  # nothing ran before the answer
    resume = r["turns"][1]
    assert resume["answerStatus"] == "accepted" and resume["outcome"] == "answered"
    assert _run_statuses(resume) == [("answer", "answered")]
    assert _time_rows(resume, "clock") == []  # the turn keeps the clock of its first seed
    [answered] = _time_rows(resume, "time-answer")
    assert answered == {
        "kind": "time-answer",
        "turn": 1,
        "iteration": 1,
        "mention": 0,
        "from": MAR8,
        "to": MAR9,
        "zone": LA,
        "how": "confirmed",
    }
    rows = _latest_windows(resume)
    person = {"from": MAR8, "to": MAR9, "source": "answered", "mention": 0}
    assert rows["e1"]["how"] == rows["d1"]["how"] == "filled"
    assert rows["e1"]["person"] == rows["d1"]["person"] == person
    assert "sent" not in rows["d1"]  # the 23-hour date is written exactly
    bound = rows["s1"]
    assert (bound["how"], bound["by"], bound["iteration"]) == ("bound", "value", 2)
    assert bound["person"] == person
    args = _executed(r)
    assert args["e1"] == {"start_time": MS[MAR8], "end_time": MS[MAR9]}
    assert args["d1"] == {"date": "2026-03-08", "tz": LA}
    assert args["s1"] == {"start": "2026-03-08T00:00", "end": "2026-03-09T00:00", "tz": LA}
    assert len(set(_time_lines(r))) == 1
    _period_tools_offer_a_time_quote(r)


def _time_reasked_multi_day(r: Result) -> None:
    paused = _paused_first(r)
    [reading] = _time_rows(paused, "time-reading")
    assert (reading["quote"], reading["problem"]) == ("the weekend", "unreadable")
    reasked, accepted = r["turns"][1:]
    assert reasked["answerStatus"] == "re-asked" and reasked["outcome"] == "paused"
    assert reasked["runs"] == [] and "runId" not in reasked and reasked["timeRows"] == []
    assert accepted["answerStatus"] == "accepted" and accepted["outcome"] == "answered"
    [answered] = _time_rows(accepted, "time-answer")
    assert (answered["from"], answered["to"], answered["how"]) == (MAR7, MAR9, "edited")
    rows = _latest_windows(accepted)
    person = {"from": MAR7, "to": MAR9, "source": "answered", "mention": 0}
    day = rows["d1"]
    assert (day["how"], day["refused"], day["person"]) == ("refused", "multi-day", person)
    assert day["asked"] == {"from": MAR7, "to": MAR9} and "form" not in day
    assert (rows["e1"]["how"], rows["e1"]["person"]) == ("filled", person)
    assert [row["toolCallId"] for row in _time_rows(accepted, "call")] == ["e1"]
    assert _executed(r) == {"e1": {"start_time": MS[MAR7], "end_time": MS[MAR9]}}
    assert MS[MAR9] - MS[MAR7] == 47 * 3_600_000  # two dates, one of them 23 hours long
    sent = _by_call(_requests(r)[-1])
    refused = refusal_observation("daily_report", "multi-day", Facts(direction="past"))
    assert sent["d1"]["content"] == refused and sent["d1"]["notDispatched"] is True


def _time_zone_asked(r: Result) -> None:
    paused = _paused_first(r)
    [clock] = _time_rows(paused, "clock")
    assert (clock["zone"], clock["zoneSource"]) == ("UTC", "unknown")
    [reading] = _time_rows(paused, "time-reading")
    assert reading["choice"] == {"by": "open", "remaining": [], "open": ["zone"]}
    not_a_zone, zone, confirmed, later = r["turns"][1:]
    assert not_a_zone["answerStatus"] == "re-asked" and not_a_zone["runs"] == []
    # The zone is accepted; the answer run asks the range question next and pauses again.
    assert zone["answerStatus"] == "accepted" and zone["outcome"] == "paused"
    assert _run_statuses(zone) == [("answer", "paused")] and zone["timeRows"] == []
    assert confirmed["outcome"] == "answered"
    [answered] = _time_rows(confirmed, "time-answer")
    assert (answered["from"], answered["to"], answered["zone"]) == (MAR8, MAR9, LA)
    assert answered["how"] == "confirmed"
    assert _executed(r) == {"e1": {"start_time": MS[MAR8], "end_time": MS[MAR9]}}
    [next_clock] = _time_rows(later, "clock")
    assert (next_clock["zone"], next_clock["zoneSource"]) == (LA, "answered")
    [today] = _time_rows(later, "time-reading")
    assert today["candidates"][0]["range"] == {"from": MAR9, "to": "2026-03-10T00:00:00-07:00"}
    lines = _time_lines(r)
    assert "not known" in lines[0] and "not known" not in lines[-1] and LA in lines[-1]


def _schedules_week(r: Result) -> None:
    # docs/scenarios.md#wait-steps: every weekday at 09:00 Berlin (07:00Z in CEST), never on
    # the weekend; the model's wake-up on Saturday; the down host's two missed mornings give
    # one late delivery (catch-up latest); every delivery a turn that was answered.
    [wakeup] = r["turns"][0]["scheduleRows"]
    assert (wakeup["name"], wakeup["toolCallId"]) == ("wakeup-w1", "w1")
    delivered = [
        (d["sender"], d["due"], d["outcome"])
        for step in r["turns"]
        for d in step.get("deliveries", [])
    ]
    mornings = ["01", "02", "03", "06", "08", "09", "10"]
    assert [due for sender, due, _ in delivered if sender == "schedule:morning"] == [
        f"2026-04-{day}T07:00:00Z" for day in mornings
    ]
    assert [s for s, due, _ in delivered if s != "schedule:morning"] == ["schedule:wakeup-w1"]
    assert {outcome for *_, outcome in delivered} == {"answered"}
    [late] = r["turns"][4]["deliveries"]
    assert late["deliveredAtMs"] - late["dueMs"] == 5 * 3_600_000
    assert r["turns"][2] == {"index": 2, "kind": "restart"}


def _recall_april_july(r: Result) -> None:
    # docs/recall.md#the-recall-tool: the April turn folded into a summary without the code;
    # in July the recall observation holds the original message verbatim, its row names it.
    fact = "Note for later: the gate code for the Lisbon warehouse is 4471."
    [fold] = r["turns"][2]["compactions"]
    assert fold["removedMessageCount"] == 4
    assert "4471" not in r["summarizerCalls"][0]["response"]["content"]
    assert r["turns"][3]["clockMs"] == 1_784_106_000_000  # 2026-07-15T09:00:00Z
    [row] = r["turns"][4]["recallRows"]
    [returned] = row["returned"]
    assert (row["query"], returned["source"], returned["runId"]) == (
        "gate code Lisbon warehouse",
        "fold",
        "run-3",
    )
    observation = r["modelCalls"][-1]["request"]["messages"][-1]
    assert observation["role"] == "tool" and observation["toolName"] == "recall"
    assert observation["content"].endswith("\n" + fact)
    assert "2026-04-02 09:01 UTC; user; folded into summary" in observation["content"]
    assert r["turns"][4]["answer"].startswith("The gate code for the Lisbon warehouse is 4471")


CLAIMS: dict[str, Callable[[Result], None]] = {
    "auth_error_held": _auth_held,
    "checkin_abandoned": _checkin_abandoned,
    "checkin_approval_approve_and_decline": _checkin_approval,
    "checkin_crash_after_settle": _checkin_crash_after_settle,
    "checkin_crash_in_answer_run": _checkin_crash_in_answer_run,
    "checkin_restart_while_paused": _checkin_restart,
    "checkin_tool_ask_answered": _checkin_tool_ask,
    "continue_from_import": _continue_from,
    "cost_budget_halt": _cost_budget_halt,
    "crash_after_call_model": _crash_after_call_model,
    "crash_at_tool_start_interrupted": _crash_tool_start,
    "crash_during_send": _crash_during_send,
    "crash_iteration_durability": _crash_iteration,
    "cut_short_without_wrap_up": _cut_short,
    "findings_fact_stand_down": _findings_stand_down,
    "findings_facts_pinned": _findings_facts_pinned,
    "findings_restart_ledger": _findings_restart,
    "permission_gate": _permission_gate,
    "plain_tool_loop": _plain_tool_loop,
    "rate_limited_then_success": _rate_limited,
    "repeated_call_note": _repeated_call_note,
    "recall_april_july": _recall_april_july,
    "recency_pin_stand_down": _recency_pin,
    "restart_between_messages": _restart,
    "schedules_weekday_week_and_wakeup": _schedules_week,
    "sliding_window_keep1_notices": _sliding_notices,
    "stall_503_retried": _stall,
    "streamed_reply_crash_mid_stream": _streamed_crash_mid_stream,
    "summarize_oldest_conversation": _summarize("conversation"),
    "summarize_oldest_discard": _summarize("discard"),
    "summarizer_failure": _summarizer_failure,
    "time_answer_reasked_multi_day": _time_reasked_multi_day,
    "time_dst_control_window_calls": _time_dst_control_window,
    "time_question_confirmed": _time_question_confirmed,
    "time_zone_asked_then_range": _time_zone_asked,
    "token_budget": _token_budget,
    "wrap_up_at_max_iterations": _wrap_up,
}


@pytest.mark.parametrize("name", NAMES)
async def test_expected_result_shows_what_the_scenario_claims(name: str) -> None:
    """Each expected file shows the behaviour its scenario is named for (a fold, a notice…)."""
    assert name in CLAIMS, f"add a check of what {name} claims to CLAIMS"
    result = await _expected(name)
    assert result["format"] == RESULT_FORMAT and result["name"] == name
    # Every epoch of every run, abandoned ones included, conforms to its receipt
    # (docs/served.md#the-conformance-law).
    assert result["served"], "a scenario that calls the model has served views"
    assert all(entry["conforms"] for entry in result["served"])
    # A lost iteration's receipt is never committed (docs/served.md#when-a-receipt-is-minted).
    if name in SYNC_NAMES:
        sends = {(c["runId"], c["epoch"]) for c in result["modelCalls"]}
        assert sends <= {(e["runId"], e["epoch"]) for e in result["served"]}
    CLAIMS[name](result)


# -- errors name their JSON path -----------------------------------------------------------------

BASE: dict[str, Any] = {
    "format": "afp-scenario/1",
    "name": "base",
    "clock": {"startMs": 1_000_000, "modelCallStepMs": 10, "toolStepMs": 5, "runGapMs": 100},
    "agent": {"model": "mock-main"},
    "provider": {"replies": [{"content": "hello", "usage": {"input": 3, "output": 1}}]},
    "tools": [
        {
            "name": "probe",
            "inputSchema": {"type": "object", "properties": {}},
            "results": ["ok"],
        }
    ],
    "turns": [{"kind": "message", "message": "hi"}],
}


def _scenario(change: Callable[[dict[str, Any]], Any]) -> bytes:
    data = copy.deepcopy(BASE)
    change(data)
    return msgspec.json.encode(data)


async def _fails(data: bytes, tmp_path: Path, kind: type[AfpError] = InvalidValue) -> str:
    with pytest.raises(kind) as caught:
        await run_scenario(data, db_path=tmp_path / "afp.db")
    return caught.value.message


async def test_base_scenario_runs(tmp_path: Path) -> None:
    """The base of the error cases below is itself a valid scenario that answers."""
    result = await run_scenario(_scenario(lambda d: None), db_path=tmp_path / "afp.db")
    assert result.turns[0].answer == "hello"


async def test_a_decoded_scenario_struct_runs_like_its_bytes(tmp_path: Path) -> None:
    """run_scenario accepts a Scenario struct and gives the same result as its bytes."""
    data = _scenario(lambda d: None)
    from_bytes = await _result_bytes(data, tmp_path / "a.db")
    from_struct = await _result_bytes(decode_scenario(data), tmp_path / "b.db")
    assert from_bytes == from_struct


@pytest.mark.parametrize(
    ("change", "path"),
    [
        pytest.param(
            lambda d: d["agent"].update(max_iterations=3),
            "$.agent.max_iterations",
            id="snake-case",
        ),
        pytest.param(lambda d: d.update(seed=4), "$.seed", id="unknown-top-level"),
        pytest.param(
            lambda d: d["turns"][0].update(text="x"), "$.turns[0].text", id="unknown-in-step"
        ),
        pytest.param(lambda d: d["turns"][0].update(message=""), "$.turns[0].message", id="empty"),
        pytest.param(
            lambda d: d["agent"].update(maxIterations=0), "$.agent.maxIterations", id="range"
        ),
        pytest.param(lambda d: d["turns"].append({"kind": "pause"}), "$.turns[1].kind", id="kind"),
        pytest.param(lambda d: d.update(format="afp-scenario/2"), "$.format", id="format"),
        pytest.param(
            lambda d: d["provider"]["replies"].append({"error": {"status": 200}}),
            "$.provider.replies[1].error.status",
            id="status",
        ),
        pytest.param(
            lambda d: d["provider"]["replies"].append({"content": "x", "error": {"status": 500}}),
            "$.provider.replies[1]",
            id="error-and-content",
        ),
        pytest.param(
            lambda d: d["tools"][0]["results"].append({"text": "a", "error": "b"}),
            "$.tools[0].results[1]",
            id="result-both",
        ),
        pytest.param(
            lambda d: d["tools"].append(d["tools"][0]), "$.tools[1].name", id="duplicate-tool"
        ),
        pytest.param(
            lambda d: d["agent"].update(keepLastToolResults=True),
            "$.agent.keepLastToolResults",
            id="keep-true",
        ),
        pytest.param(
            lambda d: d["turns"].insert(0, {"kind": "crash", "after": "send", "call": "x"}),
            "$.turns[0].call",
            id="call-on-send",
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "crash", "after": "final"}),
            "$.turns[1]",
            id="trailing-crash",
        ),
        pytest.param(
            lambda d: d["turns"].insert(0, {"kind": "crash", "after": "send", "fragments": 2}),
            "$.turns[0].fragments",
            id="fragments-on-send",
        ),
        pytest.param(
            lambda d: d["turns"].insert(
                0, {"kind": "crash", "after": "mid-stream", "fragments": 0}
            ),
            "$.turns[0].fragments",
            id="zero-fragments",
        ),
        pytest.param(
            lambda d: d["provider"]["replies"][0].update(stream={"sizes": []}),
            "$.provider.replies[0].stream.sizes",
            id="stream-no-sizes",
        ),
        pytest.param(
            lambda d: d["provider"]["replies"][0].update(stream={"sizes": [3, 0]}),
            "$.provider.replies[0].stream.sizes[1]",
            id="stream-zero-size",
        ),
        pytest.param(
            lambda d: d["provider"]["replies"][0].update(stream={"every": 3}),
            "$.provider.replies[0].stream.every",
            id="stream-unknown-key",
        ),
        pytest.param(
            lambda d: d["provider"]["replies"].append(
                {"error": {"status": 503}, "stream": {"sizes": [2]}}
            ),
            "$.provider.replies[1].stream",
            id="stream-on-an-error",
        ),
        pytest.param(
            lambda d: d["tools"][0]["results"].append({"pause": {"question": "?"}, "text": "a"}),
            "$.tools[0].results[1]",
            id="pause-and-text",
        ),
        pytest.param(
            lambda d: d["tools"][0]["results"].append({"pause": {"prompt": "?"}}),
            "$.tools[0].results[1].pause.prompt",
            id="pause-unknown-key",
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "resume"}), "$.turns[1]", id="resume-empty"
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "resume", "answer": "x", "abandon": True}),
            "$.turns[1]",
            id="resume-answer-and-abandon",
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "resume", "answer": "x", "question": -1}),
            "$.turns[1].question",
            id="resume-negative-position",
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "resume", "answer": {"decision": "maybe"}}),
            "$.turns[1].answer.decision",
            id="resume-bad-decision",
        ),
        pytest.param(
            lambda d: d["turns"].append({"kind": "resume", "answer": 3}),
            "$.turns[1].answer",
            id="resume-answer-type",
        ),
    ],
)
async def test_a_bad_value_is_refused_naming_its_path(
    change: Callable[[dict[str, Any]], Any], path: str, tmp_path: Path
) -> None:
    """A bad key or value is an InvalidValue whose message starts with its JSON path."""
    message = await _fails(_scenario(change), tmp_path)
    assert message.startswith(f"{path}: "), message
    assert not await anyio.Path(tmp_path / "afp.db").exists()


@pytest.mark.parametrize(
    "strategy",
    [
        {"kind": "tokenBudget", "options": {"thresholdTokens": 10**400}},
        {"kind": "slidingWindow", "options": {"keepRecentTurns": 10**30}},
    ],
    ids=["threshold-too-large-for-a-float", "keep-recent-turns-past-2-53"],
)
async def test_a_window_option_out_of_range_is_refused_before_any_store(
    strategy: dict[str, Any], tmp_path: Path
) -> None:
    """A strategy option beyond 2**53 - 1 (one too large even for a float) is a
    WindowConfigError naming its path, raised before the store file is made."""
    message = await _fails(
        _scenario(lambda d: d.update(strategy=strategy)), tmp_path, WindowConfigError
    )
    assert message.startswith("$.strategy.options: "), message
    assert not await anyio.Path(tmp_path / "afp.db").exists()


async def test_a_bad_findings_option_is_refused_naming_its_path(tmp_path: Path) -> None:
    """A findings option the runtime refuses keeps its class with its JSON path in front."""
    message = await _fails(
        _scenario(lambda d: d["agent"].update(findings={"keepLedgerFacts": -1})),
        tmp_path,
        FindingsConfigError,
    )
    assert message.startswith("$.agent.findings: "), message


async def test_extensions_are_not_checked(tmp_path: Path) -> None:
    """Anything under an extensions key passes, at the top level and inside objects."""

    def change(d: dict[str, Any]) -> None:
        d["extensions"] = {"owner": "qa", "any_key": [1, {"x": None}]}
        d["agent"]["extensions"] = {"note": "free text"}
        d["turns"][0]["extensions"] = {"ticket": 42}

    result = await run_scenario(_scenario(change), db_path=tmp_path / "afp.db")
    assert result.turns[0].outcome == "answered"


WINDOW_SCHEMA = {
    "type": "object",
    "properties": {
        "window": {"type": "string"},
        "tz": {"type": "string"},
        "n": {"type": "integer"},
    },
}


def _timed(change: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], None]:
    """``change`` applied to the base scenario with time on (Los Angeles) and a probe tool
    whose schema has ``window``, ``tz`` and ``n``."""

    def both(d: dict[str, Any]) -> None:
        d["agent"]["time"] = {"zone": LA}
        d["tools"][0]["inputSchema"] = copy.deepcopy(WINDOW_SCHEMA)
        change(d)

    return both


def _period(period: Any) -> Callable[[dict[str, Any]], Any]:
    return _timed(lambda d: d["tools"][0].update(period=period))


@pytest.mark.parametrize(
    ("change", "path", "kind"),
    [
        pytest.param(
            _timed(lambda d: d["agent"]["time"].update(maxAnswerRepeats=-1)),
            "$.agent.time.maxAnswerRepeats",
            AgentDefinitionError,
            id="repeats",
        ),
        pytest.param(
            _timed(lambda d: d["agent"]["time"].update(zone="PST")),
            "$.agent.time.zone",
            AgentDefinitionError,
            id="zone",
        ),
        pytest.param(
            _timed(lambda d: d["agent"]["time"].update(policy={"dateOrder": "XYZ"})),
            "$.agent.time.policy.dateOrder",
            AgentDefinitionError,
            id="date-order",
        ),
        pytest.param(
            _timed(lambda d: d["agent"]["time"].update(max_answer_repeats=2)),
            "$.agent.time.max_answer_repeats",
            AgentDefinitionError,
            id="time-snake-case",
        ),
        pytest.param(
            _timed(lambda d: d["agent"]["time"].update(reader="acme/llm-reader")),
            "$.agent.time.reader",
            AgentDefinitionError,
            id="reader-is-code",
        ),
        pytest.param(
            lambda d: d["agent"].update(time="LA"), "$.agent.time", AgentDefinitionError, id="type"
        ),
        pytest.param(
            lambda d: d["turns"][0].update(time={"zone": "UTC"}),
            "$.turns[0].time",
            TimeNotEnabled,
            id="msg-time-without-agent-time",
        ),
        pytest.param(
            _timed(lambda d: d["turns"][0].update(time={"now": "2026-10-09T15:40:00"})),
            "$.turns[0].time.now",
            InvalidValue,
            id="msg-now-no-offset",
        ),
        pytest.param(
            _timed(lambda d: d["turns"][0].update(time={"when": "now"})),
            "$.turns[0].time.when",
            InvalidValue,
            id="msg-time-unknown-key",
        ),
        pytest.param(
            _timed(
                lambda d: d["turns"][0].update(
                    time={"window": {"from": "2026-10-09T15:40:00Z", "to": 3}}
                )
            ),
            "$.turns[0].time.window.to",
            InvalidValue,
            id="msg-window-type",
        ),
        pytest.param(
            _timed(
                lambda d: d["turns"][0].update(
                    time={"window": {"from": "2026-10-09T15:40:00Z", "to": "2026-10-09T15:00Z"}}
                )
            ),
            "$.turns[0].time.window",
            InvalidValue,
            id="msg-window-backwards",
        ),
        pytest.param(
            _period({"argument": "window", "spelling": "iso-range", "zone_argument": "tz"}),
            "$.tools[0].period.zone_argument",
            PeriodDeclarationError,
            id="period-snake-case",
        ),
        pytest.param(
            _period({"argument": "window", "spelling": "wall-range"}),
            "$.tools[0].period.zoneArgument",
            PeriodDeclarationError,
            id="wall-range-without-zone",
        ),
        pytest.param(
            _period(
                {
                    "forms": [
                        {
                            "kind": "bounds",
                            "from": {"argument": "window", "as": "iso"},
                            "to": {"argument": "tz", "as": "iso"},
                        }
                    ]
                }
            ),
            "$.tools[0].period.forms[0].to.edge",
            PeriodDeclarationError,
            id="bounds-without-edge",
        ),
        pytest.param(
            _period({"forms": [{"kind": "day", "argument": "n", "zone": {"argument": "tz"}}]}),
            "$.tools[0].period.forms[0].argument",
            PeriodDeclarationError,
            id="day-on-an-integer",
        ),
        pytest.param(
            _period({"argument": "window", "accepts": ["iso-range"], "retention": "30 days"}),
            "$.tools[0].period.retention",
            PeriodDeclarationError,
            id="retention",
        ),
        pytest.param(_period([1]), "$.tools[0].period", PeriodDeclarationError, id="not-object"),
    ],
)
async def test_a_bad_time_value_is_refused_naming_its_path(
    change: Callable[[dict[str, Any]], Any], path: str, kind: type[AfpError], tmp_path: Path
) -> None:
    """agent.time, a message's time and tool periods are decoded by the runtime's own
    decoders: their errors keep the runtime's class, the message starting with the JSON path,
    and nothing runs."""
    message = await _fails(_scenario(change), tmp_path, kind)
    assert message.startswith(f"{path}: "), message
    assert not await anyio.Path(tmp_path / "afp.db").exists()


@pytest.mark.parametrize("timed", [True, False], ids=["time-on", "time-off"])
async def test_a_time_quote_in_a_schema_is_a_tool_definition_error(
    timed: bool, tmp_path: Path
) -> None:
    """An input schema defining _timeQuote is refused on every tool, time on or off, with a
    period or without (docs/loop.md#tool-declarations)."""

    def change(d: dict[str, Any]) -> None:
        if timed:
            _period({"argument": "window", "accepts": ["iso-range"]})(d)
        d["tools"][0]["inputSchema"]["properties"][TIME_QUOTE] = {"type": "string"}

    message = await _fails(_scenario(change), tmp_path, ToolDefinitionError)
    assert message.startswith("$.tools[0]: ") and TIME_QUOTE in message


async def test_a_period_without_agent_time_changes_nothing(tmp_path: Path) -> None:
    """A tool period on an agent without time is accepted and inert, as in the runtime
    (docs/time.md#time-disabled): no rows, no _timeQuote, the base result unchanged."""

    def change(d: dict[str, Any]) -> None:
        _period({"argument": "window", "accepts": ["iso-range"]})(d)
        d["agent"]["time"] = None

    def plain(d: dict[str, Any]) -> None:
        d["tools"][0]["inputSchema"] = copy.deepcopy(WINDOW_SCHEMA)

    with_period = await _result_bytes(_scenario(change), tmp_path / "a.db")
    without = await _result_bytes(_scenario(plain), tmp_path / "b.db")
    assert with_period == without
    assert json.loads(with_period)["turns"][0]["timeRows"] == []


async def test_a_message_time_sets_the_turn_clock(tmp_path: Path) -> None:
    """A message's time {now, zone} is what the turn's clock row says
    (docs/time.md#the-clock-row)."""

    def change(d: dict[str, Any]) -> None:
        time = {"now": "2026-10-09T08:40:00-07:00", "zone": "Europe/London"}
        _timed(lambda d: d["turns"][0].update(time=time))(d)

    result = json.loads(await _result_bytes(_scenario(change), tmp_path / "afp.db"))
    [clock] = _time_rows(result["turns"][0], "clock")
    assert (clock["now"], clock["nowSource"]) == ("2026-10-09T08:40:00-07:00", "message")
    assert (clock["zone"], clock["zoneSource"]) == ("Europe/London", "message")
    assert result["turns"][0]["findingsLedger"] == []
    [line] = _time_lines(result)
    assert "Europe/London" in line and "16:40" in line


def _time_asked(d: dict[str, Any]) -> None:
    """Time on with one answer allowed to be refused; the model calls a look-back tool with no
    period about "the last 2 hours", so the turn pauses with a time question."""
    d["agent"]["time"] = {"zone": LA, "maxAnswerRepeats": 1}
    d["tools"][0].update(
        inputSchema=copy.deepcopy(WINDOW_SCHEMA),
        period={"argument": "window", "spelling": "lookback"},
        results=["3 errors"],
    )
    d["provider"]["replies"] = [
        {"toolCalls": [{"id": "w1", "name": "probe", "args": {}}]},
        {"content": "could not agree on a time", "usage": {"input": 3, "output": 1}},
    ]
    d["turns"][0]["message"] = "any errors in the last 2 hours?"


async def test_a_refused_answer_past_the_repeats_is_unsettled(tmp_path: Path) -> None:
    """Refused time answers are re-asked (the step runs nothing) until maxAnswerRepeats is
    used; the next refusal closes the question unsettled (answerStatus as the API says it) and
    the answer run goes on without running the waiting call (docs/time.md#judging-answers)."""

    def change(d: dict[str, Any]) -> None:
        _time_asked(d)
        d["turns"] += [
            {"kind": "resume", "answer": "yesterday"},
            {"kind": "resume", "answer": "2026-10-09T08:00/2026-10-09T09:00"},
        ]

    db = tmp_path / "afp.db"
    result = json.loads(await _result_bytes(_scenario(change), db))
    paused, reasked, unsettled = result["turns"]
    assert paused["outcome"] == "paused"
    assert (reasked["answerStatus"], reasked["outcome"], reasked["runs"]) == (
        "re-asked",
        "paused",
        [],
    )
    assert unsettled["answerStatus"] == "unsettled" and unsettled["outcome"] == "answered"
    assert _run_statuses(unsettled) == [("answer", "answered")]
    assert result["toolExecutions"] == []
    assert unsettled["timeRows"] == []  # no answer, no second call-window row, no call row
    sent = _by_call(_requests(result)[-1])
    assert sent["w1"]["content"] == unsettled_observation("probe")
    assert sent["w1"]["notDispatched"] is True
    store = await SqliteStore.open(db, read_only=True)
    try:
        [question] = await store.questions("scenario")
    finally:
        await store.aclose()
    assert (question.kind, question.status, question.repeat) == ("time", "unsettled", 1)
    assert question.detail is not None and question.detail["refused"]["reason"] == "no-offset"


async def test_the_re_asked_golden_answer_was_refused_for_its_dst_gap(tmp_path: Path) -> None:
    """The re-asked step of time_answer_reasked_multi_day was refused dst-gap: 02:30 on
    2026-03-08 never happens in Los Angeles (the result does not carry the reason; the
    store's question does)."""
    db = tmp_path / "afp.db"
    await _result_bytes(await _read(SCENARIOS / "time_answer_reasked_multi_day.json"), db)
    store = await SqliteStore.open(db, read_only=True)
    try:
        [question] = await store.questions("scenario")
    finally:
        await store.aclose()
    assert (question.status, question.repeat) == ("answered", 1)
    assert question.detail is not None
    refused = question.detail["refused"]
    assert refused["reason"] == "dst-gap" and refused["answer"].startswith("2026-03-08T02:30")


async def test_a_decision_to_a_time_question_is_an_invalid_answer(tmp_path: Path) -> None:
    """A time question takes text; a decision object is the runtime's InvalidAnswer (422,
    not counted as an attempt), naming the step's answer path."""

    def change(d: dict[str, Any]) -> None:
        _time_asked(d)
        d["turns"].append({"kind": "resume", "answer": {"decision": "approve"}})

    with pytest.raises(InvalidAnswer) as caught:
        await run_scenario(_scenario(change), db_path=tmp_path / "afp.db")
    assert caught.value.reason == "not-a-string"
    assert caught.value.message.startswith("$.turns[1].answer: ")


async def test_a_reserved_tool_argument_is_a_tool_definition_error(tmp_path: Path) -> None:
    """An input schema declaring _findings is refused (ToolDefinitionError) naming the tool."""

    def change(d: dict[str, Any]) -> None:
        d["tools"][0]["inputSchema"]["properties"]["_findings"] = {"type": "string"}

    message = await _fails(_scenario(change), tmp_path, ToolDefinitionError)
    assert message.startswith("$.tools[0]: ") and "_findings" in message


async def test_an_import_refusal_names_the_history_path(tmp_path: Path) -> None:
    """A tool message answering no earlier call is refused naming $.turns[i].history[j]."""

    def change(d: dict[str, Any]) -> None:
        d["turns"] = [
            {
                "kind": "continueFrom",
                "history": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "content": "x", "toolCallId": "nobody"},
                ],
                "message": "go on",
            }
        ]

    message = await _fails(_scenario(change), tmp_path, CheckpointInvalid)
    assert message.startswith("$.turns[0].history[1]"), message


async def test_running_out_of_replies_names_the_call(tmp_path: Path) -> None:
    """A send with no scripted reply left fails the scenario naming the call and the step."""
    data = _scenario(lambda d: d["turns"].append({"kind": "message", "message": "again"}))
    message = await _fails(data, tmp_path, ScriptExhausted)
    assert "model call 2" in message and "$.turns[1]" in message


async def test_a_crash_never_reached_names_its_step(tmp_path: Path) -> None:
    """A crash armed for a tool call the model never makes is an error naming the crash step."""
    data = _scenario(
        lambda d: d["turns"].insert(0, {"kind": "crash", "after": "tool-start", "call": "zz"})
    )
    message = await _fails(data, tmp_path)
    assert message.startswith("$.turns[0]: ") and "never reached" in message


async def test_posting_behind_a_held_turn_names_the_step(tmp_path: Path) -> None:
    """A message after a turn the runtime held (here a 401) is an error naming that step."""

    def change(d: dict[str, Any]) -> None:
        d["provider"]["replies"] = [{"error": {"status": 401, "message": "bad key"}}]
        d["turns"].append({"kind": "message", "message": "again"})

    message = await _fails(_scenario(change), tmp_path)
    assert message.startswith("$.turns[1]: ") and "held" in message


def _ask_first(d: dict[str, Any]) -> None:
    """The base scenario with probe asking the person, then a final answer."""
    d["provider"]["replies"] = [
        {"toolCalls": [{"id": "p1", "name": "probe", "args": {}}]},
        {"content": "done", "usage": {"input": 3, "output": 1}},
    ]
    d["tools"][0]["results"] = [{"pause": {"question": "go on?"}}]


def _approval_first(d: dict[str, Any]) -> None:
    """The base scenario with probe a check-in tool the model calls once."""
    _ask_first(d)
    d["tools"][0].update(checkIn=True, results=["probed"])


async def test_a_resume_with_no_open_question_names_the_step(tmp_path: Path) -> None:
    """Resuming after an answered turn (or before any) is an error naming the resume step."""
    data = _scenario(lambda d: d["turns"].append({"kind": "resume", "answer": "yes"}))
    message = await _fails(data, tmp_path)
    assert message.startswith("$.turns[1]: ") and "no open question" in message
    data = _scenario(lambda d: d["turns"].insert(0, {"kind": "resume", "abandon": True}))
    await anyio.Path(tmp_path / "first").mkdir()
    message = await _fails(data, tmp_path / "first")
    assert message.startswith("$.turns[0]: ") and "no turn is open" in message


async def test_a_message_while_paused_names_the_step(tmp_path: Path) -> None:
    """Posting behind a paused turn is an error naming the message step
    (docs/host.md#messages-while-paused)."""

    def change(d: dict[str, Any]) -> None:
        _ask_first(d)
        d["turns"].append({"kind": "message", "message": "anyone there?"})

    message = await _fails(_scenario(change), tmp_path)
    assert message.startswith("$.turns[1]: ") and "paused" in message
    assert "1 open question" in message


@pytest.mark.parametrize(
    ("setup", "answer", "reason"),
    [
        pytest.param(_approval_first, "yes please", "not-a-decision", id="text-to-approval"),
        pytest.param(_ask_first, {"decision": "approve"}, "not-text", id="decision-to-ask"),
        pytest.param(_ask_first, "", "length", id="empty-text"),
    ],
)
async def test_an_answer_that_does_not_fit_its_question_names_the_step_and_reason(
    setup: Callable[[dict[str, Any]], None], answer: Any, reason: str, tmp_path: Path
) -> None:
    """The runtime's InvalidAnswer stops the scenario: its reason kept, the message naming
    $.turns[i].answer, the question's kind and the reason code."""

    def change(d: dict[str, Any]) -> None:
        setup(d)
        d["turns"].append({"kind": "resume", "answer": answer})

    with pytest.raises(InvalidAnswer) as caught:
        await run_scenario(_scenario(change), db_path=tmp_path / "afp.db")
    assert caught.value.reason == reason
    message = caught.value.message
    assert message.startswith("$.turns[1].answer: ") and f"(reason {reason})" in message
    assert "q-1" in message


async def test_a_question_position_past_the_open_ones_names_the_step(tmp_path: Path) -> None:
    """question: 1 with one question open is an error at $.turns[i].question."""

    def change(d: dict[str, Any]) -> None:
        _ask_first(d)
        d["turns"].append({"kind": "resume", "question": 1, "answer": "yes"})

    message = await _fails(_scenario(change), tmp_path)
    assert message.startswith("$.turns[1].question: ") and "1 open" in message


async def test_a_crash_armed_on_a_resume_that_runs_nothing_is_never_reached(
    tmp_path: Path,
) -> None:
    """Two approvals open; the first resume closes one and runs nothing: its crash is never
    reached, an error naming the crash step."""

    def change(d: dict[str, Any]) -> None:
        _approval_first(d)
        d["provider"]["replies"][0]["toolCalls"].append({"id": "p2", "name": "probe", "args": {}})
        d["turns"] += [
            {"kind": "crash", "after": "settle"},
            {"kind": "resume", "answer": {"decision": "approve"}},
        ]

    message = await _fails(_scenario(change), tmp_path)
    assert message.startswith("$.turns[1]: ") and "never reached" in message


async def test_a_blank_pause_question_is_a_tool_error(tmp_path: Path) -> None:
    """ctx.ask_person refuses a blank question: the call fails like any tool error and the
    turn goes on (as the runtime does), recorded as an error execution."""

    def change(d: dict[str, Any]) -> None:
        _ask_first(d)
        d["tools"][0]["results"] = [{"pause": {"question": "   "}}]

    result = await run_scenario(_scenario(change), db_path=tmp_path / "afp.db")
    assert result.turns[0].outcome == "answered"
    [execution] = result.tool_executions
    assert "non-empty question" in execution.result["error"]


async def test_a_resume_with_a_position_answers_that_question(tmp_path: Path) -> None:
    """question: 1 picks the second open question; abandoning an approval declines its call;
    the step that leaves a question open ends paused and runs nothing."""

    def change(d: dict[str, Any]) -> None:
        _approval_first(d)
        d["provider"]["replies"][0]["toolCalls"].append({"id": "p2", "name": "probe", "args": {}})
        d["turns"] += [
            {"kind": "resume", "question": 1, "abandon": True},
            {"kind": "resume", "answer": {"decision": "approve", "note": "fine"}},
        ]

    result = json.loads(await _result_bytes(_scenario(change), tmp_path / "afp.db"))
    paused, first, last = result["turns"]
    assert paused["outcome"] == first["outcome"] == "paused"
    assert first["runs"] == [] and first["answerStatus"] == "accepted"
    assert _run_statuses(last) == [("answer", "answered")] and last["answer"] == "done"
    assert [e["toolCallId"] for e in result["toolExecutions"]] == ["p1"]
    sent = _by_call(_requests(result)[-1])
    assert sent["p2"]["content"] == declined_text("probe")


async def test_a_resume_step_lists_only_the_ledger_rows_it_added(tmp_path: Path) -> None:
    """Findings armed: the message step shows the rows filed up to the pause, the resume step
    only the rows its answer run added (same turn)."""

    def change(d: dict[str, Any]) -> None:
        d["agent"]["findings"] = {}
        schema = {"type": "object", "properties": {}}
        d["tools"] = [
            {"name": "look", "inputSchema": schema, "results": ["x", "y"]},
            {"name": "ask", "inputSchema": schema, "results": [{"pause": {"question": "which?"}}]},
        ]

        def calls(ident: str, name: str, findings: dict[str, Any]) -> dict[str, Any]:
            return {"toolCalls": [{"id": ident, "name": name, "args": {"_findings": findings}}]}

        d["provider"]["replies"] = [
            calls("s1", "look", {"basis": "direct", "proposition": "p"}),
            calls(
                "a1",
                "ask",
                {"basis": "direct", "previous": [{"toolCallId": "s1", "standing": "fact"}]},
            ),
            calls(
                "s2",
                "look",
                {"basis": "direct", "previous": [{"toolCallId": "a1", "standing": "noise"}]},
            ),
            {"content": "done"},
        ]
        d["turns"].append({"kind": "resume", "answer": "this one"})

    result = await run_scenario(_scenario(change), db_path=tmp_path / "afp.db")
    paused, resumed = result.turns
    assert paused.outcome == "paused" and resumed.outcome == "answered"

    def rows(step: Any) -> list[tuple[str, str]]:
        return [(row["kind"], row["toolCallId"]) for row in step.findings_ledger]

    assert rows(paused) == [("basis", "s1"), ("standing", "s1"), ("basis", "a1")]
    assert rows(resumed) == [("standing", "a1"), ("basis", "s2")]


async def test_the_database_file_must_be_fresh(tmp_path: Path) -> None:
    """A db_path that already exists is refused; the file is left untouched."""
    db = tmp_path / "afp.db"
    await anyio.Path(db).write_bytes(b"keep me")
    with pytest.raises(InvalidValue, match="already exists"):
        await run_scenario(_scenario(lambda d: None), db_path=db)
    assert await anyio.Path(db).read_bytes() == b"keep me"


async def test_malformed_json_is_refused_at_the_root(tmp_path: Path) -> None:
    """A file that is not JSON is an InvalidValue at path $."""
    message = await _fails(b'{"format": ', tmp_path)
    assert message.startswith("$: ") and "not valid JSON" in message


# -- the command ----------------------------------------------------------------------------------


def _afp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_command_writes_the_expected_result(tmp_path: Path) -> None:
    """`afp scenario run FILE --out RESULT` writes the expected bytes and prints nothing."""
    out = tmp_path / "result.json"
    done = _afp("scenario", "run", str(SCENARIOS / "crash_during_send.json"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert out.read_bytes() == (SCENARIOS / "crash_during_send.expected.json").read_bytes()


def test_command_prints_the_result_and_keeps_a_given_database(tmp_path: Path) -> None:
    """Without --out the result is printed; --db keeps the store at the given path."""
    db = tmp_path / "kept.db"
    done = _afp("scenario", "run", str(SCENARIOS / "auth_error_held.json"), "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (SCENARIOS / "auth_error_held.expected.json").read_text()
    assert db.is_file()


def test_command_refuses_a_bad_file_with_exit_2_naming_the_path(tmp_path: Path) -> None:
    """A scenario with a snake_case key exits 2 with a message naming the key's path."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(_scenario(lambda d: d["clock"].update(start_ms=0)))
    done = _afp("scenario", "run", str(bad))
    assert done.returncode == 2
    assert "$.clock.start_ms" in done.stderr


# -- regenerating the expected files (never run by the tests) -------------------------------------


async def _update(names: list[str]) -> None:
    # Scripted failures log warnings by design; only errors are worth showing here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    for name in names:
        data = await _read(SCENARIOS / f"{name}.json")
        folder = await anyio.to_thread.run_sync(tempfile.mkdtemp)
        try:
            encoded = await _result_bytes(data, Path(folder) / "afp.db")
        finally:
            await anyio.to_thread.run_sync(shutil.rmtree, folder)
        await anyio.Path(SCENARIOS / f"{name}.expected.json").write_bytes(encoded)
        sys.stdout.write(f"wrote tests/scenarios/{name}.expected.json\n")


def main(argv: list[str]) -> int:
    """Rewrite the expected files of the named scenarios (all by default)."""
    if os.environ.get("AFP_UPDATE_SCENARIOS") != "1":
        sys.stderr.write(f"set AFP_UPDATE_SCENARIOS=1 to rewrite expected files: {UPDATE_HINT}\n")
        return 2
    unknown = sorted(set(argv) - set(NAMES))
    if unknown:
        sys.stderr.write(f"no scenario named {unknown}; known: {', '.join(NAMES)}\n")
        return 2
    anyio.run(_update, argv or NAMES)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
