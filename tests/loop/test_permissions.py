"""The permission gate per tool call (docs/permissions.md): a rule table or a function allows,
denies, asks or halts before dispatch, and every decision is a ``permission`` ledger row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.permissions import Rule, Verdict
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import permission_denied_text
from tests.loop.conftest import Crash, Harness

removed: list[str] = []


@afp.tool
def remove(path: str) -> str:
    """Remove a file."""
    removed.append(path)
    return f"removed {path}"


@afp.tool(idempotent=True)
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def shell(calls: list[afp.ToolCall], permissions: Any) -> afp.Agent:
    """An agent that makes ``calls`` in one batch, then answers."""
    model = afp.ScriptedModel([tool_reply(*calls), answer("done")])
    return afp.Agent("ops", model, tools=[remove, look], permissions=permissions)


RULES = [
    Rule(
        tool="remove",
        args={"path": "/etc/*"},
        decision="deny",
        name="no-etc",
        reason="system files stay",
    ),
    Rule(tool="remove", decision="ask"),
    Rule(tool="l*", decision="allow"),
]


def tool_texts(view: afp.ServedView) -> dict[str, str]:
    return {m.tool_call_id or "": m.content for m in view.messages.as_sent if m.role == "tool"}


async def test_a_denied_call_is_refused_naming_the_rule_and_every_decision_is_a_row(
    tmp_path: Path,
) -> None:
    """The first matching rule decides; the model reads a refusal naming it; the ledger
    lists one row per call with the rule that decided."""
    removed.clear()
    agent = shell(
        [call("c1", "remove", path="/etc/passwd"), call("c2", "look", path="/tmp/a")], RULES
    )
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "tidy up")
        view = await store.served(result.run_id, 2)
        rows = await store.findings(agent, kind="permission")
    assert result.status == "answered" and removed == []
    texts = tool_texts(view)
    assert texts["c1"] == permission_denied_text("remove", "no-etc", "system files stay")
    assert texts["c2"] == "contents of /tmp/a"
    assert [(r["toolCallId"], r["decision"], r["rule"]) for r in rows] == [
        ("c1", "deny", "no-etc"),
        ("c2", "allow", "permissions[2]"),
    ]


async def test_no_matching_rule_allows_and_says_so(tmp_path: Path) -> None:
    """A call no rule matches runs, and its row names the default."""
    agent = shell([call("c1", "look", path="/x")], [Rule(tool="remove", decision="deny")])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "read")
        rows = await store.findings(agent, kind="permission")
    assert result.status == "answered"
    assert [(r["decision"], r["rule"]) for r in rows] == [("allow", "default")]


async def test_ask_pauses_for_approval_and_the_answer_decides(tmp_path: Path) -> None:
    """An ``ask`` rule pauses the batch on an approval question; approving runs the call,
    and a declined one is not run."""
    removed.clear()
    agent = shell([call("c1", "remove", path="/tmp/old")], RULES)
    async with afp.open(tmp_path / "afp.db") as store:
        paused = await store.run(agent, "remove /tmp/old")
        (question,) = paused.questions
        assert paused.status == "paused" and question.kind == "approval"
        assert "permission rule" in question.prompt and "/tmp/old" in question.prompt
        assert removed == []
        done = await store.answer(agent, question.question_id, {"decision": "approve"})
    assert done.status == "answered" and removed == ["/tmp/old"]


async def test_a_halt_rule_ends_the_turn_halted_without_running_anything(tmp_path: Path) -> None:
    """``halt`` closes the turn with status ``halted`` naming the rule; no call of the batch
    runs, and the next turn works."""
    removed.clear()
    rules = [Rule(tool="remove", decision="halt", name="stop-removals")]
    model = afp.ScriptedModel(
        [tool_reply(call("c1", "look", path="/a"), call("c2", "remove", path="/a")), answer("ok")]
    )
    agent = afp.Agent("ops", model, tools=[remove, look], permissions=rules)
    async with afp.open(tmp_path / "afp.db") as store:
        halted = await store.run(agent, "clean /a")
        later = await store.run(agent, "anything?")
        rows = await store.findings(agent, kind="permission")
    assert halted.status == "halted" and halted.error_kind == "permission"
    assert "stop-removals" in (halted.error or "")
    assert removed == []
    assert [r["decision"] for r in rows] == ["allow", "halt"]
    assert later.status == "answered"


async def test_a_gate_that_raises_denies_naming_the_exception(tmp_path: Path) -> None:
    """A gate function's exception is the call's refusal, never a crash of the turn."""

    def gate(tool_call: afp.ToolCall) -> str:
        raise RuntimeError("policy service down")

    agent = shell([call("c1", "look", path="/a")], gate)
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "read")
        view = await store.served(result.run_id, 2)
        (row,) = await store.findings(agent, kind="permission")
    assert result.status == "answered"
    assert row["decision"] == "deny" and row["rule"] == "gate"
    assert "RuntimeError: policy service down" in row["reason"]
    assert "RuntimeError: policy service down" in tool_texts(view)["c1"]


async def test_an_async_gate_returns_verdicts(tmp_path: Path) -> None:
    """An async gate may return a Verdict with its own rule name and reason, or a bare
    decision; anything else denies."""

    async def gate(tool_call: afp.ToolCall) -> Any:
        if tool_call.args.get("path") == "/secret":
            return Verdict(decision="deny", rule="vault", reason="sealed")
        if tool_call.args.get("path") == "/odd":
            return 42
        return "allow"

    agent = shell(
        [
            call("c1", "look", path="/secret"),
            call("c2", "look", path="/ok"),
            call("c3", "look", path="/odd"),
        ],
        gate,
    )
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "read")
        rows = await store.findings(agent, kind="permission")
    assert result.status == "answered"
    assert [(r["decision"], r["rule"]) for r in rows] == [
        ("deny", "vault"),
        ("allow", "gate"),
        ("deny", "gate"),
    ]
    assert "not allow, deny, ask or halt" in rows[2]["reason"]


def test_bad_rules_are_refused_and_a_file_declares_them(tmp_path: Path) -> None:
    """A rule with an unknown decision names its entry; a file's rules reach the agent."""
    model = afp.ScriptedModel([answer("hi")])
    with pytest.raises(AgentDefinitionError, match=r"permissions\[0\]\.decision"):
        afp.Agent("a", model, permissions=[Rule(tool="x", decision="maybe")])  # type: ignore[arg-type]
    (tmp_path / "agents.toml").write_text(
        """
[[agents]]
id = "ops"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
permissions = [
  {tool = "remove", args = {path = "/etc/*"}, decision = "deny", name = "no-etc"},
  {tool = "*", decision = "ask"},
]
"""
    )
    (ops,) = afp.load_agents(tmp_path / "agents.toml")
    (gate,) = [e for e in ops.extensions if e.name == "permissions"]
    assert gate.shape()[0]["name"] == "no-etc"


async def test_a_call_started_before_a_crash_is_settled_from_the_journal(
    harness: Harness,
) -> None:
    """After a crash mid-batch, a gate that now denies does not rewrite history: the calls
    that had started are settled from the journal (interrupted: they may have run), never
    answered as refused and not dispatched."""

    async def crash_tool(args: Any, ctx: Any) -> str:
        await anyio.lowlevel.checkpoint()
        raise Crash

    reply = tool_reply(call("a", "alpha_tool"), call("b", "alpha_tool"))
    driver = harness.driver([reply], behaviour={"b": crash_tool}, permissions=[])
    await driver.post("go")
    await harness.crash(driver)
    await harness.restart()
    deny_all = [Rule(tool="*", decision="deny", name="frozen")]
    driver = harness.driver([answer("done")], permissions=deny_all)
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    history = (await harness.store.load_conversation("ops")).history
    results = {m.tool_call_id: m for m in history if m.role == "tool"}
    assert {call_id: m.not_dispatched for call_id, m in results.items()} == {
        "a": False,
        "b": False,
    }
    assert all("frozen" not in m.content for m in results.values())
