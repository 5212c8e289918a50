"""Findings in the loop on a real SQLite file: schemas served, peeling, ledger rows in the
commit bundles and the store, serving, the answer, persistence, the fact pin and the
``afp findings`` command (docs/findings.md#how-this-is-tested)."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import msgspec
import pytest

from afp_runtime.agents import Agent
from afp_runtime.findings import FindingsConfig, ServeMode, fold_ledger, rows_from_wire
from afp_runtime.findings.serve import ledger_piece
from afp_runtime.findings.texts import FINDINGS_INSTRUCTION
from afp_runtime.loop import AgentDriver, Emitter
from afp_runtime.messages import Message, ModelRequest, canonical_json
from afp_runtime.models import ScriptedModel, ScriptEntry
from afp_runtime.records import FindingsDeclared, FindingsStanding, ToolStarted, ledger_row_to_wire
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import WindowStrategy, sliding_window
from tests.findings._build import PROBE_SCHEMA

from .conftest import Harness

ARMED = FindingsConfig()
PROMPT = "You check hosts."


# -- helpers ---------------------------------------------------------------------------------


class Probe:
    """The ``probe`` tool of docs/findings.md#how-this-is-tested, recording the arguments each call
    received."""

    def __init__(self, *, strict: bool = False, results: Mapping[str, str] | None = None):
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.results = dict(results or {})
        schema = dict(PROBE_SCHEMA)
        if strict:
            # Argument validation refuses any key it does not know: _findings must be gone.
            schema["additionalProperties"] = False
        self.tool = Tool("probe", "Probe a host.", schema, self.run, parallel_safe=True)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
        self.received.append((ctx.tool_call_id, dict(args)))
        return self.results.get(ctx.tool_call_id, f"{args.get('host')}: ok")


def probe_driver(
    harness: Harness, script: Sequence[ScriptEntry], tools: Sequence[Tool], **options: Any
) -> AgentDriver:
    """Agent ``ops`` on the harness's store with the given tools instead of the counting ones."""
    assert harness.store is not None
    harness.model = ScriptedModel(script)
    definition = Agent("ops", harness.model, tools=tools, **options)
    return AgentDriver(
        harness.store,
        definition,
        clock=harness.clock,
        ids=harness.ids,
        emitter=Emitter([harness.recorder]),
        rng=random.Random(7),
    )


def probe(call_id: str, host: str, findings: Any = msgspec.UNSET) -> Any:
    """A ``probe`` call; ``findings`` (any JSON value) goes in as ``_findings`` when given."""
    if findings is msgspec.UNSET:
        return call(call_id, "probe", host=host)
    return call(call_id, "probe", host=host, _findings=findings)


def judge(*entries: tuple[str, str], basis: str = "direct") -> dict[str, Any]:
    """A ``_findings`` value judging earlier results by ``(toolCallId, standing)``."""
    return {
        "basis": basis,
        "previous": [{"toolCallId": ident, "standing": judged} for ident, judged in entries],
    }


def declaring(*entries: dict[str, Any], basis: str = "direct") -> dict[str, Any]:
    """A ``_findings`` value with full ``previous`` entries."""
    return {"basis": basis, "previous": list(entries)}


def fact_on(ident: str, value: Any, *, kind: str = "host", of: str = "db-1") -> dict[str, Any]:
    """A ``previous`` entry declaring ``ident`` a fact with one ``status`` assertion."""
    return {
        "toolCallId": ident,
        "standing": "fact",
        "assertions": [
            {"subject": {"kind": kind, "id": of}, "predicate": "status", "value": value}
        ],
    }


def armed_rounds(entries: Sequence[tuple[str, str]], *, tool: str = "alpha_tool") -> list[Any]:
    """Rounds ``r1..rN`` of one tool; round k+1 declares ``entries[k]`` on an earlier result;
    then an answer."""
    script: list[Any] = [tool_reply(call("r1", tool))]
    for number, entry in enumerate(entries, start=2):
        script.append(tool_reply(call(f"r{number}", tool, _findings=judge(entry))))
    return [*script, answer("done")]


async def writes_of(harness: Harness, run_id: str, key: str) -> list[tuple[str, int, Any]]:
    """``(stage, iteration, value)`` of every write of ``key`` in a run's bundles, in order."""
    assert harness.store is not None
    return [
        (bundle.stage, bundle.iteration, write["value"])
        for bundle in await harness.store.bundles(run_id)
        for write in bundle.writes
        if write["key"] == key
    ]


async def appended_rows(harness: Harness, run_id: str) -> list[dict[str, Any]]:
    """The rows a run's bundles appended to ``findingsLedger``, in commit order."""
    assert harness.store is not None
    return [
        row
        for bundle in await harness.store.bundles(run_id)
        for write in bundle.writes
        if write["key"] == "findingsLedger" and write["verb"] == "append"
        for row in write["value"]
    ]


async def records_of(harness: Harness, run_id: str) -> list[dict[str, Any]]:
    """The window records a run filed."""
    return [r for _, _, value in await writes_of(harness, run_id, "compactions") for r in value]


async def ledger(harness: Harness, **filters: Any) -> list[dict[str, Any]]:
    assert harness.store is not None
    return [ledger_row_to_wire(r) for r in await harness.store.ledger("ops", **filters)]


async def ledger_count(harness: Harness) -> int:
    """The conversation checkpoint's count of ledger rows."""
    assert harness.store is not None
    state = await harness.store.conversation_state("ops")
    assert state is not None
    return state.ledger_count


def tool_message(request: ModelRequest, ident: str) -> Message:
    """The ``tool`` message answering ``ident`` in a received request."""
    [found] = [m for m in request.messages if m.role == "tool" and m.tool_call_id == ident]
    return found


def contents(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages]


def stub(standing: str, ident: str) -> str:
    """The compact stub a set-aside result is served as
    (docs/findings.md#stubs-for-set-aside-results)."""
    return f'{{"withheld":true,"standing":"{standing}","toolCallId":"{ident}"}}'


async def run_turn(harness: Harness, driver: AgentDriver, text: str = "go") -> Any:
    await driver.post(text)
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered", outcome
    return outcome


# -- case 1: schemas -------------------------------------------------------------------------


async def test_case_1_armed_schemas_gain_an_optional_findings_property(harness: Harness) -> None:
    """Case 1: armed, the served probe schema has host and _findings, required only host; the
    registry's schema is unchanged."""
    tool = Probe()
    script = [tool_reply(probe("c1", "db-1")), tool_reply(probe("c2", "db-2")), answer("ok")]
    driver = probe_driver(harness, script, [tool.tool], findings=ARMED)
    await run_turn(harness, driver)
    for request in harness.model.requests:
        [served] = request.tools
        schema = served.input_schema
        assert list(schema["properties"]) == ["host", "_findings"]
        assert schema["required"] == ["host"]
        assert schema["properties"]["_findings"]["required"] == ["basis"]
    assert tool.tool.input_schema == PROBE_SCHEMA
    assert tool.tool.schema().input_schema == PROBE_SCHEMA
    # The offer (case 17): nothing to offer on the first call, then the results newest first.
    first, second, third = (
        r.tools[0].input_schema["properties"]["_findings"]["properties"]["previous"]["items"]
        for r in harness.model.requests
    )
    assert "enum" not in first["properties"]["toolCallId"]
    assert second["properties"]["toolCallId"]["enum"] == ["c1"]
    assert third["properties"]["toolCallId"]["enum"] == ["c2", "c1"]


async def test_case_1_unarmed_schemas_equal_the_registry(harness: Harness) -> None:
    """Case 1: unarmed, the served schema's canonical JSON equals the registry's."""
    tool = Probe()
    script = [tool_reply(probe("c1", "db-1")), answer("ok")]
    driver = probe_driver(harness, script, [tool.tool])
    await run_turn(harness, driver)
    registry = canonical_json(tool.tool.schema().input_schema)
    for request in harness.model.requests:
        [served] = request.tools
        assert canonical_json(served.input_schema) == registry


# -- cases 3 and 4: peeling and basis rows ---------------------------------------------------


async def test_case_3_peel_and_basis_row(harness: Harness) -> None:
    """Case 3: the tool and argument validation see {"host":"db-1"}; the committed assistant
    message keeps the original args; the ledger holds one basis row."""
    declared = {"basis": "direct", "expect": "high", "proposition": "db-1 is down"}
    tool = Probe(strict=True)
    script = [tool_reply(probe("c1", "db-1", declared)), answer("done")]
    driver = probe_driver(harness, script, [tool.tool], findings=ARMED)
    outcome = await run_turn(harness, driver)
    assert tool.received == [("c1", {"host": "db-1"})]
    [(_, _, results)] = await writes_of(harness, outcome.run_id, "toolResults")
    assert [r["status"] for r in results] == ["ok"]
    assert harness.store is not None
    history = (await harness.store.load_conversation("ops")).history
    [assistant] = [m for m in history if m.tool_calls]
    assert assistant.tool_calls[0].args == {"host": "db-1", "_findings": declared}
    # What the model said is what the next request carries back to it, verbatim.
    resent = harness.model.requests[1].messages[1]
    assert resent.tool_calls[0].args == {"host": "db-1", "_findings": declared}
    row = {
        "kind": "basis",
        "toolCallId": "c1",
        "toolName": "probe",
        "turn": 1,
        "iteration": 1,
        "basis": "direct",
        "expect": "high",
        "proposition": "db-1 is down",
    }
    assert await ledger(harness) == [row]
    assert await appended_rows(harness, outcome.run_id) == [row]
    [event] = harness.recorder.of_type(FindingsDeclared)
    assert msgspec.json.decode(msgspec.json.encode(event))["payload"] == {
        "toolName": "probe",
        "toolCallId": "c1",
        "turn": 1,
        "iteration": 1,
        "basis": "direct",
        "expect": "high",
        "hasProposition": True,
    }


MALFORMED: list[tuple[str, Any, dict[str, Any]]] = [
    (
        "m1",
        {"basis": "sure", "expect": "very", "proposition": 42, "predicts": "x" * 300},
        {"predicts": "x" * 240, "cut": ["predicts"], "malformed": 3},
    ),
    ("m2", "yes", {"malformed": 1}),
    ("m3", None, {"malformed": 1}),
    ("m4", [1, 2], {"malformed": 1}),
    ("m5", 3.5, {"malformed": 1}),
    ("m6", {"basis": 7, "previous": "m1"}, {"malformed": 2}),
    (
        "m7",
        {"basis": "direct", "previous": [{"toolCallId": "m0", "standing": "maybe"}]},
        {"basis": "direct", "malformed": 1},
    ),
    ("m8", {"basis": "direct", "bogus": True}, {"basis": "direct", "malformed": 1}),
    (
        "m9",
        {"basis": "exploratory", "proposition": "p" * 100_000},
        {"basis": "exploratory", "proposition": "p" * 240, "cut": ["proposition"]},
    ),
    ("m10", {"junk": "j" * 100_000}, {"malformed": 2}),
]


async def test_case_4_malformed_values_never_break_the_run(harness: Harness) -> None:
    """Case 4: malformed _findings (a string, wrong types, an unknown standing, 100 KB) are
    peeled and counted; every tool runs with its own arguments and the run answers."""
    tool = Probe(strict=True)
    first = tool_reply(probe("m0", "db-0"))
    batch = tool_reply(*(probe(ident, f"h-{ident}", value) for ident, value, _ in MALFORMED))
    driver = probe_driver(harness, [first, batch, answer("done")], [tool.tool], findings=ARMED)
    outcome = await run_turn(harness, driver)
    assert sorted(tool.received) == sorted(
        [("m0", {"host": "db-0"})] + [(ident, {"host": f"h-{ident}"}) for ident, _, _ in MALFORMED]
    )
    [_, (_, _, results)] = await writes_of(harness, outcome.run_id, "toolResults")
    assert {r["status"] for r in results} == {"ok"}
    expected = [
        {"kind": "basis", "toolCallId": ident, "toolName": "probe", "turn": 1, "iteration": 2}
        | fields
        for ident, _, fields in MALFORMED
    ]
    assert await ledger(harness) == expected
    assert [r.get("standing") for r in await ledger(harness)] == [None] * len(MALFORMED)
    # The committed assistant message still says exactly what the model sent.
    assert harness.store is not None
    history = (await harness.store.load_conversation("ops")).history
    sent = [c.args.get("_findings") for m in history for c in m.tool_calls][1:]
    assert sent == [value for _, value, _ in MALFORMED]


# -- case 5: batch order -----------------------------------------------------------------------


async def test_case_5_standings_first_then_basis_rows_per_call(harness: Harness) -> None:
    """Case 5: the tool-calls bundle appends the batch's standing rows first, then each call's
    basis row in call order, and all are filed before any call of the batch starts."""
    c2 = declaring(fact_on("c1", "down"), basis="exploratory")
    script = [
        tool_reply(probe("c1", "db-1")),
        tool_reply(probe("c2", "db-2", c2), probe("c3", "db-3", {"basis": "direct"})),
        answer("done"),
    ]
    driver = probe_driver(harness, script, [Probe().tool], findings=ARMED)
    outcome = await run_turn(harness, driver)
    appends = await writes_of(harness, outcome.run_id, "findingsLedger")
    assert [(stage, iteration) for stage, iteration, _ in appends] == [("tool-calls", 2)]
    assertion = {
        "subject": {"kind": "host", "id": "db-1"},
        "predicate": "status",
        "value": "down",
        "stratum": "asserted",
        "provenance": "tool:c1",
    }
    assert appends[0][2] == [
        {
            "kind": "standing",
            "toolCallId": "c1",
            "toolName": "probe",
            "standing": "fact",
            "assertions": [assertion],
            "declaredOn": {"toolCallId": "c2"},
            "turn": 1,
            "iteration": 2,
        },
        {
            "kind": "basis",
            "toolCallId": "c2",
            "toolName": "probe",
            "turn": 1,
            "iteration": 2,
            "basis": "exploratory",
        },
        {
            "kind": "basis",
            "toolCallId": "c3",
            "toolName": "probe",
            "turn": 1,
            "iteration": 2,
            "basis": "direct",
        },
    ]
    order = [
        (e.type, e.payload.tool_call_id)
        for e in harness.recorder.events
        if isinstance(e.payload, FindingsStanding | FindingsDeclared | ToolStarted)
        and e.iteration == 2
    ]
    assert order == [
        ("findings.standing", "c1"),
        ("findings.declared", "c2"),
        ("findings.declared", "c3"),
        ("tool.started", "c2"),
        ("tool.started", "c3"),
    ]


# -- case 7: conflicts ---------------------------------------------------------------------------


async def test_case_7_conflict_row_follows_the_standing_that_causes_it(harness: Harness) -> None:
    """Case 7: c4 contradicting c1 files a conflict row right after its standing row; judging
    c4 noise files none; 1 and 1.0 agree while true and 1 conflict."""
    script = [
        tool_reply(probe("c1", "db-1")),
        tool_reply(probe("c4", "db-1", declaring(fact_on("c1", "down")))),
        tool_reply(probe("c5", "db-1", declaring(fact_on("c4", "up")))),
        tool_reply(probe("c6", "db-1", judge(("c4", "noise")))),
        tool_reply(probe("c7", "x", declaring(fact_on("c6", 1, of="n")))),
        tool_reply(probe("c8", "x", declaring(fact_on("c7", 1.0, of="n")))),
        tool_reply(probe("c9", "x", declaring(fact_on("c8", True, of="n")))),
        answer("done"),
    ]
    driver = probe_driver(harness, script, [Probe().tool], findings=ARMED)
    await run_turn(harness, driver)
    rows = await ledger(harness)
    kinds = [(r["kind"], r["iteration"]) for r in rows]
    assert kinds == [
        ("standing", 2),
        ("basis", 2),
        ("standing", 3),
        ("conflict", 3),
        ("basis", 3),
        ("standing", 4),
        ("basis", 4),
        ("standing", 5),
        ("basis", 5),
        ("standing", 6),
        ("basis", 6),
        ("standing", 7),
        ("conflict", 7),
        ("basis", 7),
    ]
    host = {"kind": "host", "id": "db-1"}
    assert rows[3] == {
        "kind": "conflict",
        "key": ["host", "db-1", "status"],
        "witnesses": [
            {"toolCallId": "c1", "subject": host, "predicate": "status"},
            {"toolCallId": "c4", "subject": host, "predicate": "status"},
        ],
        "turn": 1,
        "iteration": 3,
    }
    assert rows[12]["key"] == ["host", "n", "status"]
    assert [w["toolCallId"] for w in rows[12]["witnesses"]] == ["c6", "c7", "c8"]
    [conflicts] = [
        p.conflict_keys
        for p in harness.recorder.payloads(FindingsStanding)
        if p.tool_call_id == "c4" and p.conflict_keys is not msgspec.UNSET
    ]
    assert conflicts == [["host", "db-1", "status"]]
    fold = fold_ledger(None, rows_from_wire(rows))
    assert list(fold.conflicts) == [("host", "n", "status")]


# -- case 18: serving ----------------------------------------------------------------------------


@pytest.mark.parametrize("serve", ["ledger-and-facts", "ledger-only"])
async def test_case_18_set_aside_results_are_served_as_stubs(
    harness: Harness, serve: ServeMode
) -> None:
    """Case 18: a noise result reaches the model as its stub while history keeps it; the system
    text carries the instruction and the ledger piece; context writes substitutions."""
    config = FindingsConfig(serve=serve)
    tool = Probe(results={"c1": "db-1: timeout after 30s", "c2": "db-2: ok"})
    script = [
        tool_reply(probe("c1", "db-1")),
        tool_reply(probe("c2", "db-2", declaring(fact_on("c1", "down")))),
        tool_reply(probe("c3", "db-3", judge(("c2", "noise")))),
        answer("done"),
    ]
    driver = probe_driver(harness, script, [tool.tool], findings=config, system_prompt=PROMPT)
    outcome = await run_turn(harness, driver)
    first, second, third, last = harness.model.requests
    assert first.system == f"{PROMPT}\n\n{FINDINGS_INSTRUCTION}"  # no standing yet: no piece
    assert second.system == first.system  # only a basis row so far: still no piece
    assert tool_message(second, "c1").content == "db-1: timeout after 30s"

    assert harness.store is not None
    history = (await harness.store.load_conversation("ops")).history
    committed = history[:-1]  # the window the last request was composed from
    assert [m.content for m in committed if m.role == "tool"] == [
        "db-1: timeout after 30s",
        "db-2: ok",
        "db-3: ok",
    ]
    # Same count, roles, ids and order; only the set-aside contents differ.
    assert len(last.messages) == len(committed) == 7
    assert [(m.role, m.tool_call_id) for m in last.messages] == [
        (m.role, m.tool_call_id) for m in committed
    ]
    assert tool_message(last, "c2").content == stub("noise", "c2")
    c1 = tool_message(last, "c1").content
    assert c1 == (stub("fact", "c1") if serve == "ledger-only" else "db-1: timeout after 30s")
    assert tool_message(last, "c3").content == "db-3: ok"
    assert tool_message(third, "c2").content == "db-2: ok"  # judged only on the third call
    rows = rows_from_wire(await ledger(harness))
    piece = ledger_piece(committed, fold_ledger(None, rows), config)
    assert piece is not None
    assert last.system == f"{PROMPT}\n\n{FINDINGS_INSTRUCTION}\n\n{piece}"
    assert "db-1" in piece and "down" in piece and "tool:c1" in piece
    pieces = await writes_of(harness, outcome.run_id, "systemPieces")
    assert [p["source"] for p in pieces[-1][2]] == ["definition", "findings", "findings"]
    substitutions = await writes_of(harness, outcome.run_id, "substitutions")
    stage, iteration, value = substitutions[-1]
    assert (stage, iteration) == ("context", 4)
    served = {s["index"]: s["message"]["content"] for s in value}
    assert served[4] == stub("noise", "c2")
    assert (2 in served) is (serve == "ledger-only")


# -- case 19: the answer -------------------------------------------------------------------------


async def test_case_19_answer_declarations_are_peeled_and_filed(harness: Harness) -> None:
    """Case 19: the delivered answer omits _findings, a standing row is declared on "answer",
    and the call-model bundle keeps the raw reply."""
    raw = json.dumps(
        {
            "answer": "db-1 is down",
            "_findings": {"previous": [{"toolCallId": "c1", "standing": "fact"}]},
        }
    )
    script = [tool_reply(probe("c1", "db-1")), answer(raw)]
    driver = probe_driver(harness, script, [Probe().tool], findings=ARMED)
    outcome = await run_turn(harness, driver)
    assert json.loads(outcome.final_answer) == {"answer": "db-1 is down"}
    [(stage, _, delivered)] = await writes_of(harness, outcome.run_id, "finalAnswer")
    assert stage == "final" and json.loads(delivered) == {"answer": "db-1 is down"}
    assert harness.store is not None
    history = (await harness.store.load_conversation("ops")).history
    assert json.loads(history[-1].content) == {"answer": "db-1 is down"}
    replies = await writes_of(harness, outcome.run_id, "reply")
    assert replies[-1][0] == "call-model" and replies[-1][2]["content"] == raw
    row = {
        "kind": "standing",
        "toolCallId": "c1",
        "toolName": "probe",
        "standing": "fact",
        "assertions": [],
        "declaredOn": "answer",
        "turn": 1,
        "iteration": 2,
    }
    assert await ledger(harness) == [row]
    [(stage, _, appended)] = await writes_of(harness, outcome.run_id, "findingsLedger")
    assert stage == "final" and appended == [row]
    [event] = harness.recorder.payloads(FindingsStanding)
    assert event.declared_on == "answer"


async def test_case_19_an_answer_that_is_not_a_json_object_is_untouched(harness: Harness) -> None:
    """Case 19 (docs/findings.md#declarations-on-the-final-answer): a plain-text answer mentioning
    _findings is delivered as written."""
    text = 'All fine; I did not use "_findings" here.'
    driver = probe_driver(harness, [answer(text)], [Probe().tool], findings=ARMED)
    outcome = await run_turn(harness, driver)
    assert outcome.final_answer == text
    assert await ledger(harness) == []


# -- case 20: persistence ----------------------------------------------------------------------


async def test_case_20_the_ledger_belongs_to_the_conversation(harness: Harness) -> None:
    """Case 20: turn 2 starts from turn 1's rows and appends; a restart keeps them; an unarmed
    agent continuing carries them unchanged and serves nothing from them."""
    turn_1 = [
        tool_reply(call("a1", "alpha_tool")),
        tool_reply(call("a2", "alpha_tool", _findings=judge(("a1", "fact")))),
        tool_reply(call("a3", "alpha_tool", _findings=judge(("a2", "noise")))),
        answer("one"),
    ]
    turn_2 = [tool_reply(call("b1", "alpha_tool", _findings=judge(("a3", "open")))), answer("two")]
    driver = harness.driver(turn_1 + turn_2, findings=ARMED, system_prompt=PROMPT)
    first = await run_turn(harness, driver, "first")
    rows_1 = await appended_rows(harness, first.run_id)
    assert len(rows_1) == 4
    assert await ledger(harness) == rows_1
    assert await ledger_count(harness) == 4

    second = await run_turn(harness, driver, "second")
    seeded = await writes_of(harness, second.run_id, "findingsLedger")
    assert [(stage, value) for stage, _, value in seeded[:1]] == [("seed", {"rows": [0, 4]})]
    rows_2 = await appended_rows(harness, second.run_id)
    assert [r["kind"] for r in rows_2] == ["standing", "basis"]
    assert all(r["turn"] == 2 for r in rows_2)
    assert await ledger(harness) == rows_1 + rows_2
    assert await ledger(harness, turn=1) == rows_1
    opening = harness.model.requests[4]  # turn 2's first request: the ledger is served at once
    assert tool_message(opening, "a2").content == stub("noise", "a2")
    assert "tool:a1" in opening.system

    await harness.restart()
    after = harness.driver([answer("three")], findings=ARMED, system_prompt=PROMPT)
    await run_turn(harness, after, "third")
    [request] = harness.model.requests
    assert tool_message(request, "a2").content == stub("noise", "a2")
    assert "tool:a1" in request.system and FINDINGS_INSTRUCTION in request.system

    seen: list[Mapping[str, Any]] = []

    async def record(args: Mapping[str, Any], ctx: ToolContext) -> str:
        seen.append(dict(args))
        return "unarmed did it"

    unarmed_script = [
        tool_reply(call("u1", "alpha_tool", _findings=judge(("a1", "noise")))),
        answer("four"),
    ]
    unarmed = harness.driver(unarmed_script, behaviour={"alpha_tool": record}, system_prompt=PROMPT)
    events = len([e for e in harness.recorder.events if e.type.startswith("findings.")])
    fourth = await run_turn(harness, unarmed, "fourth")
    assert await ledger(harness) == rows_1 + rows_2
    seeded = await writes_of(harness, fourth.run_id, "findingsLedger")
    assert [(stage, value) for stage, _, value in seeded] == [("seed", {"rows": [0, 6]})]
    assert seen == [{"_findings": judge(("a1", "noise"))}]  # unarmed: never peeled
    registry = [t.schema() for t in unarmed.definition.tools]
    for request in harness.model.requests:
        assert request.system == PROMPT
        assert list(request.tools) == registry
        assert tool_message(request, "a2").content == "alpha_tool did a2"
    assert events == len([e for e in harness.recorder.events if e.type.startswith("findings.")])


async def test_case_20_an_armed_agent_that_never_declares_writes_no_key(harness: Harness) -> None:
    """Case 20: armed but silent, the model's turns write no findingsLedger key and no rows;
    requests carry the instruction but no ledger piece and no stubs."""
    script = [tool_reply(call("s1", "alpha_tool")), tool_reply(call("s2", "beta_tool"))]
    driver = harness.driver([*script, answer("quiet")], findings=ARMED)
    outcome = await run_turn(harness, driver)
    again = harness.driver([answer("still quiet")], findings=ARMED)
    second = await run_turn(harness, again)
    for run_id in (outcome.run_id, second.run_id):
        assert await writes_of(harness, run_id, "findingsLedger") == []
    assert await ledger(harness) == []
    assert await ledger_count(harness) == 0
    [request] = harness.model.requests
    assert request.system == FINDINGS_INSTRUCTION
    assert [m.content for m in request.messages if m.role == "tool"] == [
        "alpha_tool did s1",
        "beta_tool did s2",
    ]


# -- case 21: unarmed identity -----------------------------------------------------------------


class Spy:
    """A window strategy that never engages and remembers each visit's ``turn_standing``."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def plan(self, visit: Any) -> None:
        self.seen.append(visit.turn_standing)


def identity_script() -> list[Any]:
    script = [tool_reply(call(f"i{n}", "alpha_tool"), call(f"j{n}", "beta_tool")) for n in range(5)]
    return [*script, answer("done")]


async def test_case_21_unarmed_requests_carry_nothing_of_the_family(harness: Harness) -> None:
    """Case 21: unarmed (even with keep_ledger_facts set) the bodies never mention _findings,
    the system text is the prompt, no row or ledger key is written, records carry no findings
    fields, and the bodies equal those of an agent given no findings option at all."""
    window: WindowStrategy = sliding_window(keep_recent_turns=1)
    options: dict[str, Any] = {
        "window": window,
        "system_prompt": PROMPT,
        "keep_last_tool_results": False,
    }
    driver = harness.driver(identity_script(), keep_ledger_facts=7, **options)
    outcome = await run_turn(harness, driver)
    unarmed_bodies = list(harness.model.bodies)
    assert all(b"_findings" not in body for body in unarmed_bodies)
    assert all(r.system == PROMPT for r in harness.model.requests)
    assert await ledger(harness) == []
    assert await writes_of(harness, outcome.run_id, "findingsLedger") == []
    records = await records_of(harness, outcome.run_id)
    assert any(r["removedMessageCount"] > 0 for r in records)
    assert not any("ledgerFacts" in r or "droppedStandings" in r for r in records)

    harness.path = harness.path.with_name("plain.db")
    await harness.restart()
    harness.ids = type(harness.ids)()
    plain = harness.driver(identity_script(), **options)
    await run_turn(harness, plain)
    assert list(harness.model.bodies) == unarmed_bodies


async def test_case_21_strategies_see_turn_standing_only_when_armed(harness: Harness) -> None:
    """Case 21: an unarmed agent's visits carry turn_standing None; an armed one's a callable."""
    unarmed_spy, armed_spy = Spy(), Spy()
    script = [tool_reply(call("p1", "alpha_tool")), answer("done")]
    await run_turn(harness, harness.driver(script, window=unarmed_spy))
    script = [tool_reply(call("q1", "alpha_tool")), answer("done")]
    await run_turn(harness, harness.driver(script, window=armed_spy, findings=ARMED))
    assert unarmed_spy.seen == [None, None]
    assert len(armed_spy.seen) == 2 and all(callable(s) for s in armed_spy.seen)


# -- the ledger-fact pin and its stand-down --------------------------------------------------------


async def test_a_declared_fact_stays_while_noise_leaves(harness: Harness) -> None:
    """docs/findings.md#keeping-facts-in-the-window: under sliding keep 2 with recency off, a result
    the model declared fact stays in every later request while noise results leave; records carry
    ledgerFacts and droppedStandings."""
    script = [
        tool_reply(call("f1", "beta_tool")),
        tool_reply(call("n1", "alpha_tool", _findings=judge(("f1", "fact")))),
        *(
            tool_reply(call(f"n{k}", "alpha_tool", _findings=judge((f"n{k - 1}", "noise"))))
            for k in range(2, 7)
        ),
        answer("done"),
    ]
    driver = harness.driver(
        script,
        findings=ARMED,
        window=sliding_window(keep_recent_turns=2),
        keep_last_tool_results=False,
    )
    outcome = await run_turn(harness, driver)
    requests = list(harness.model.requests)
    assert len(requests) == 8
    for request in requests[1:]:
        assert "beta_tool did f1" in contents(request)
    last = contents(requests[-1])
    for gone in ("n1", "n2", "n3"):
        assert f"alpha_tool did {gone}" not in last
        assert stub("noise", gone) not in last
    records = {r["iteration"]: r for r in await records_of(harness, outcome.run_id)}
    held = {"pinned": [{"toolName": "beta_tool", "turnIndex": 1, "chars": 16}], "yielded": 0}
    assert [r.get("ledgerFacts") for r in records.values()] == [None] + [held | {"limit": 4}] * 5
    assert {i: r.get("droppedStandings") for i, r in records.items()} == {
        3: None,
        4: None,
        5: [{"toolCallId": "n1", "standing": "noise"}],
        6: [{"toolCallId": "n2", "standing": "noise"}],
        7: [{"toolCallId": "n3", "standing": "noise"}],
        8: [{"toolCallId": "n4", "standing": "noise"}],
    }


async def test_the_fact_pin_stands_down_on_the_third_blocked_visit(harness: Harness) -> None:
    """docs/findings.md#ceiling-precedence-and-stand-down / case 14: facts pinned under sliding keep
    1 block two visits in a row; the third stands down, releases them (droppedStandings fact) and
    the released results leave."""
    entries = [(f"r{k}", "fact") for k in range(1, 5)]
    driver = harness.driver(
        armed_rounds(entries),
        findings=ARMED,
        window=sliding_window(keep_recent_turns=1),
        keep_last_tool_results=False,
    )
    outcome = await run_turn(harness, driver)
    records = {r["iteration"]: r for r in await records_of(harness, outcome.run_id)}
    for blocked in (3, 4):
        record = records[blocked]
        assert record["removedMessageCount"] == 0
        assert "ledger-fact" in {x["reason"] for x in record["refusals"]}
        assert record["ledgerFacts"]["pinned"]
    released = records[5]
    assert released["ledgerFacts"] == {"pinned": [], "yielded": 0, "limit": 4, "standDown": True}
    assert released["removedMessageCount"] > 0
    assert released["droppedStandings"] == [
        {"toolCallId": "r1", "standing": "fact"},
        {"toolCallId": "r2", "standing": "fact"},
        {"toolCallId": "r3", "standing": "fact"},
    ]
    assert "observations" not in released
    assert not records[6].get("ledgerFacts", {}).get("standDown")
    fifth = contents(harness.model.requests[4])
    assert "alpha_tool did r1" not in fifth and "alpha_tool did r4" in fifth


# -- the command -------------------------------------------------------------------------------


async def afp(*args: str) -> Any:
    done = await anyio.run_process([sys.executable, "-m", "afp_runtime.cli", *args], check=False)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


async def test_afp_findings_lists_the_rows_and_filters_by_kind(harness: Harness) -> None:
    """`afp findings AGENT --json` prints the ledger's rows; --kind standing keeps only those."""
    script = [
        tool_reply(call("a1", "alpha_tool")),
        tool_reply(call("a2", "alpha_tool", _findings=judge(("a1", "fact")))),
        answer("done"),
    ]
    driver = harness.driver(script, findings=ARMED)
    await run_turn(harness, driver)
    rows = await ledger(harness)
    assert [r["kind"] for r in rows] == ["standing", "basis"]
    db = str(harness.path)
    assert await afp("findings", "ops", "--db", db, "--json") == rows
    assert await afp("findings", "ops", "--db", db, "--json", "--kind", "standing") == rows[:1]
    assert await afp("findings", "ops", "--db", db, "--json", "--turn", "2") == []


# -- crash and recovery ----------------------------------------------------------------------------


async def test_a_crash_after_the_reply_files_its_rows_once_on_settle(harness: Harness) -> None:
    """docs/findings.md#where-the-ledger-lives: a crash between the committed reply and its
    tool-calls commit files the reply's rows once, in the recovery's settle bundle, and the
    recovered run serves from them."""
    script = armed_rounds([("r1", "fact"), ("r2", "noise")])
    driver = harness.driver(script, findings=ARMED)
    await driver.post("go")
    assert harness.store is not None
    harness.store.crash_after = lambda txn: any(
        b.stage == "call-model" and b.iteration == 2 for b in txn.bundles
    )
    await harness.crash(driver)
    assert await ledger(harness) == []

    await harness.restart()
    driver = harness.driver(script[2:], findings=ARMED)
    [outcome] = await harness.work(driver)
    assert (outcome.kind, outcome.status) == ("recovery", "answered")
    settled = await writes_of(harness, outcome.run_id, "findingsLedger")
    assert [(stage, [r["kind"] for r in value]) for stage, _, value in settled] == [
        ("settle", ["standing", "basis"]),
        ("tool-calls", ["standing", "basis"]),
    ]
    rows = await ledger(harness)
    assert [(r["kind"], r["toolCallId"]) for r in rows] == [
        ("standing", "r1"),
        ("basis", "r2"),
        ("standing", "r2"),
        ("basis", "r3"),
    ]
    assert await ledger_count(harness) == 4
    last = harness.model.requests[-1]
    assert tool_message(last, "r2").content == stub("noise", "r2")
    assert "tool:r1" in last.system
