"""`afp questions`, `afp answer`, `afp abandon`, `afp dismiss`: real processes on a real file,
against turns paused and held by an in-process driver (the host's own code path)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.agents import Agent
from afp_runtime.errors import ModelCallError
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext

from .test_cli import afp


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person("which host?")


def _definition(script: list[Any]) -> Agent:
    tool = Tool("beta_tool", "asks", {"type": "object"}, _ask)
    return Agent("ops", ScriptedModel(script), tools=[tool])


async def _work(db: Path, script: list[Any], post: str | None = None, start: int = 1) -> list[Any]:
    store = await SqliteStore.open(db)
    try:
        driver = AgentDriver(
            store, _definition(script), clock=FakeClock(), ids=SequentialIds(start=start)
        )
        if post is not None:
            await driver.post(post)
        return await driver.work()
    finally:
        await store.aclose()


def test_questions_answer_and_the_turn_completes(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    script = [tool_reply(call("c1", "beta_tool")), answer("using db-1")]
    [paused] = anyio.run(_work, db, script, "go")
    assert paused.status == "paused"

    listed = afp("questions", "ops", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    [question] = json.loads(listed.stdout)["items"]
    assert (question["questionId"], question["kind"], question["prompt"]) == (
        "q-1",
        "tool-ask",
        "which host?",
    )
    table = afp("questions", "ops", "--db", str(db))
    assert "which host?" in table.stdout

    missing = afp("answer", "ops", "q-9", "x", "--db", str(db))
    assert missing.returncode == 1
    answered = afp("answer", "ops", "q-1", "db-1", "--db", str(db), "--json")
    assert answered.returncode == 0, answered.stderr
    body = json.loads(answered.stdout)
    assert body["status"] == "accepted" and body["question"]["answer"] == "db-1"
    again = afp("answer", "ops", "q-1", "db-2", "--db", str(db))
    assert again.returncode == 5 and "already answered" in again.stderr
    assert json.loads(afp("questions", "ops", "--db", str(db), "--json").stdout)["items"] == []

    [done] = anyio.run(_work, db, script[1:], None, 10)
    assert (done.kind, done.status, done.final_answer) == ("answer", "answered", "using db-1")


def test_abandon_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    script = [tool_reply(call("c1", "beta_tool")), answer("fine")]
    anyio.run(_work, db, script, "go")
    result = afp("abandon", "ops", "q-1", "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["question"]["status"] == "abandoned"
    [done] = anyio.run(_work, db, script[1:], None, 10)
    assert done.status == "answered"


def test_dismiss_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    [held] = anyio.run(_work, db, [refused], "go")
    assert held.status == "held"
    wrong = afp("dismiss", "nope", "--db", str(db))
    assert wrong.returncode == 1
    result = afp("dismiss", held.run_id, "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["messageId"] == "msg-1"
    again = afp("dismiss", held.run_id, "--db", str(db))
    assert again.returncode == 5 and "no held turn" in again.stderr
    inbox = json.loads(afp("inbox", "ops", "--db", str(db), "--json").stdout)["items"]
    assert [m["status"] for m in inbox] == ["dismissed"]


def test_send_from_checks_the_owner_and_wait_prints_the_answer(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    anyio.run(_work, db, [answer("hi")], "hello", 1)
    first = afp("send", "ops", "one", "--from", "alice", "--db", str(db))
    assert first.returncode == 0, first.stderr
    other = afp("send", "ops", "two", "--from", "bob", "--db", str(db))
    assert other.returncode == 5 and "another principal" in other.stderr
    anonymous = afp("send", "ops", "who?", "--db", str(db))
    assert anonymous.returncode == 5 and "name it (from)" in anonymous.stderr
    timed_out = afp(
        "send", "ops", "three", "--from", "alice", "--wait", "--timeout", "0.5", "--db", str(db)
    )
    assert timed_out.returncode == 4 and "not answered within" in timed_out.stderr

    # No host holds the agent here (the test plays the host below): --timeout says to wait.
    command = ["send", "ops", "four", "--from", "alice", "--wait", "--timeout", "60"]
    command += ["--json", "--db", str(db)]
    waiting = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "four" not in afp("inbox", "ops", "--db", str(db), "--json").stdout:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        anyio.run(_work, db, [answer("a1"), answer("a3"), answer("four done")], None, 20)
        stdout, stderr = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, stderr
    assert json.loads(stdout)["answer"] == "four done"


def test_a_tool_question_takes_approve_as_text(tmp_path: Path) -> None:
    """Only an approval reads `approve`/`decline` as a decision; a tool question's answer is
    the text as typed, JSON-looking or not."""
    db = tmp_path / "afp.db"
    anyio.run(_work, db, [tool_reply(call("c1", "beta_tool")), answer("ok")], "go")
    result = afp("answer", "ops", "q-1", "approve", "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["question"]["answer"] == "approve"


def test_agent_summary_and_health(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    anyio.run(_work, db, [tool_reply(call("c1", "beta_tool")), answer("ok")], "go")
    shown = afp("agent", "ops", "--db", str(db), "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert (view["status"], view["turn"], view["pendingQuestion"]) == ("paused", 1, "q-1")
    assert [q["prompt"] for q in view["openQuestions"]] == ["which host?"]
    assert afp("agent", "nobody", "--db", str(db)).returncode == 1
    health = afp("health", "--api", "http://127.0.0.1:9")
    assert health.returncode == 4 and "no host answered" in health.stderr
