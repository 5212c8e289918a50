"""The pause loop on the command line (docs/api.md#the-pause-loop): a paused ``afp run`` prints
each question with the command that answers it, that command runs as printed in a shell without
``afp`` on its PATH, ``afp answer`` says how the turn goes on, and ``--run CONFIG`` goes on with
it here. Real processes on real database files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from afp_runtime.cli._show import visible
from afp_runtime.records import QuestionRow
from afp_runtime.store import open_store

DESK_TOOLS = '''
import afp_runtime as afp
from afp_runtime.testing import answer, call, tool_reply


@afp.tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded " + order_id


@afp.tool
def ask(text: str, ctx: afp.ToolContext) -> str:
    """Ask the person."""
    ctx.ask_person(text)


def script(request, number):
    person = [m for m in request.messages if m.role == "user"][-1].content
    last = request.messages[-1]
    if last.role == "user":
        if person.startswith("ask "):
            return tool_reply(call("c%d" % number, "ask", text=person[4:]))
        return tool_reply(call("c%d" % number, "refund", order_id="4520"))
    if person.startswith("twice") and last.content == "refunded 4520":
        return tool_reply(call("c%d" % number, "refund", order_id="4521"))
    return answer("done: " + last.content)
'''

DESK = """
[[agents]]
id = "desk"
[agents.model]
provider = "scripted"
model = "m"
script = "desk_tools:script"
[[agents.tools]]
ref = "desk_tools:refund"
checkIn = true
[[agents.tools]]
ref = "desk_tools:ask"
"""

PROMPT = 'May the agent run "refund" with these arguments? {"order_id":"4520"}'

# ANSI colour, a bell, a carriage return, a right-to-left override, markup and a newline.
HOSTILE = "which host?\x1b[31m red\x1b[0m\x07 [bold]b[/bold]\r\u202eZ\nsecond line"


def _env() -> dict[str, str]:
    """A fresh shell's environment: ``afp`` not on PATH, no ``AFP_DB`` (the code under test
    still imported, through PYTHONPATH when the run gives one)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def afp(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=folder,
        env=_env(),
    )


def shell(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into bash in ``folder``, ``afp`` not on its PATH."""
    return subprocess.run(
        ["/bin/bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=folder,
        env=_env(),
    )


@pytest.fixture(name="desk")
def fixture_desk(tmp_path: Path) -> Path:
    """A folder holding the desk agent's config and its tools module."""
    (tmp_path / "desk_tools.py").write_text(DESK_TOOLS, encoding="utf-8")
    (tmp_path / "desk.toml").write_text(DESK, encoding="utf-8")
    return tmp_path


def _read(db: Path) -> tuple[list[QuestionRow], list[str]]:
    """The desk agent's open questions and its runs' statuses, read from the file in this
    process (what the commands wrote, without starting another one)."""

    async def read() -> tuple[list[QuestionRow], list[str]]:
        store = await open_store(db, read_only=True, now_ms=0)
        try:
            runs = await store.runs("desk")
            return await store.questions("desk", status="open"), [r.status for r in runs]
        finally:
            await store.aclose()

    return anyio.run(read)


def _open_questions(db: Path) -> list[QuestionRow]:
    return _read(db)[0]


def _answer_commands(stdout: str) -> list[str]:
    """The commands printed after ``answer:``, without the note that follows them."""
    return [
        line.split("answer: ", 1)[1].rsplit("   (", 1)[0]
        for line in stdout.splitlines()
        if line.lstrip().startswith("answer: ")
    ]


def test_a_paused_run_prints_the_question_and_a_command_that_runs_as_printed(
    desk: Path,
) -> None:
    """The paused run names the question's id, kind and prompt and the command answering it,
    for the default store without ``--db``; the turn already paused prints them again. Pasted
    into a shell without ``afp`` on PATH the command answers, and says the turn waits for a
    host or ``afp run``: it is not run until then."""
    paused = afp(desk, "run", "desk.toml", "-m", "Please refund order 4520")
    assert paused.returncode == 6, paused.stderr
    [question] = _open_questions(desk / "afp.db")
    qid = question.question_id
    assert f"question {qid} (approval): {PROMPT}" in paused.stdout
    [command] = _answer_commands(paused.stdout)
    assert command.endswith(f" answer desk {qid} approve") and "--db" not in command
    assert not command.startswith("afp ")  # afp is not on this shell's PATH
    assert "(or: decline)" in paused.stdout
    assert "add --run desk.toml to the answer" in paused.stdout

    again = afp(desk, "run", "desk.toml", "-m", "and another")
    assert again.returncode == 6, again.stderr
    assert "turn 1 is paused; the message waits behind it" in again.stdout
    assert _answer_commands(again.stdout) == [command]

    answered = shell(desk, command)
    assert answered.returncode == 0, answered.stderr
    assert f"{qid} answered" in answered.stdout
    afp_path = command.split(" answer ", 1)[0]
    assert (
        f"no host holds agent desk, so turn 1 waits: {afp_path} run CONFIG continues it here"
        in answered.stdout
    )
    assert "afp serve" in answered.stdout
    assert _read(desk / "afp.db") == ([], ["paused"])  # answered, not run

    done = shell(desk, f"{afp_path} run desk.toml")
    assert done.returncode == 6, done.stderr  # the queued message pauses in turn 2
    assert "turn 1 (answer run " in done.stdout and "): done: refunded 4520" in done.stdout


def test_answer_run_continues_the_turn_here_and_prints_what_run_prints(desk: Path) -> None:
    """``afp answer … --run CONFIG`` answers and goes on with the turn as ``afp run`` would: a
    turn that pauses again prints its new question and exits 6, the last answer prints the
    turn's answer and exits 0; ``--json`` prints ``{answer, runs}``. A store path holding a
    space is quoted in the printed command, which runs as printed."""
    db = ["--db", "my store.db"]
    paused = afp(desk, "run", "desk.toml", "-m", "twice please", *db)
    assert paused.returncode == 6, paused.stderr
    [command] = _answer_commands(paused.stdout)
    assert command.endswith(" approve --db 'my store.db'")

    first = shell(desk, command + " --run desk.toml")
    assert first.returncode == 6, first.stderr
    [question] = _open_questions(desk / "my store.db")
    assert question.prompt == PROMPT.replace("4520", "4521")
    assert f"question {question.question_id} (approval): " in first.stdout
    assert "turn 1 (answer run " in first.stdout and "): paused" in first.stdout
    [next_command] = _answer_commands(first.stdout)
    assert next_command.endswith(f" answer desk {question.question_id} approve --db 'my store.db'")

    done = afp(
        desk, "answer", "desk", question.question_id, "approve", "--run", "desk.toml",
        *db, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["answer"]["status"] == "accepted"
    assert body["answer"]["question"]["answer"] == {"decision": "approve"}
    assert [(r["kind"], r["status"]) for r in body["runs"]] == [("answer", "answered")]
    assert body["runs"][0]["finalAnswer"] == "done: refunded 4521"
    assert _open_questions(desk / "my store.db") == []


def test_answer_run_with_a_live_host_holding_the_agent_is_refused(desk: Path) -> None:
    """``--run`` would race the host that holds the agent: exit 5 naming it, nothing written,
    no traceback. Without ``--run`` the answer says that host continues the turn."""
    db = desk / "afp.db"
    paused = afp(desk, "run", "desk.toml", "-m", "refund 4520", "--json")
    assert paused.returncode == 6, paused.stderr
    [row] = json.loads(paused.stdout)  # a paused run's row carries its open questions
    [(asked_id, kind, prompt)] = [
        (q["questionId"], q["kind"], q["prompt"]) for q in row["questions"]
    ]
    assert (kind, prompt) == ("approval", PROMPT)

    async def hold() -> None:
        store = await open_store(db, now_ms=0)
        try:
            epoch = await store.acquire_lease("host-a", now_ms=0, ttl_ms=2**62)
            assert epoch is not None
            assert await store.claim_agent("desk", "host-a", epoch, now_ms=0)
        finally:
            await store.aclose()

    anyio.run(hold)
    [question] = _open_questions(db)
    qid = question.question_id
    assert asked_id == qid
    refused = afp(desk, "answer", "desk", qid, "approve", "--run", "desk.toml")
    assert refused.returncode == 5, refused.stderr
    assert "host 'host-a' holds agent 'desk'" in refused.stderr
    assert "answer without --run" in refused.stderr and "Traceback" not in refused.stderr
    assert [q.question_id for q in _open_questions(db)] == [qid]

    answered = afp(desk, "answer", "desk", qid, "approve")
    assert answered.returncode == 0, answered.stderr
    assert "host host-a holds agent desk: it continues turn 1" in answered.stdout


def test_abandon_says_how_the_turn_goes_on(desk: Path) -> None:
    """``afp abandon`` says the same as ``afp answer``: the turn waits for a host or a run
    here; ``--run`` goes on with it (the tool told nobody replied)."""
    assert afp(desk, "run", "desk.toml", "-m", "refund 4520").returncode == 6
    [question] = _open_questions(desk / "afp.db")
    closed = afp(desk, "abandon", "desk", question.question_id)
    assert closed.returncode == 0, closed.stderr
    assert f"{question.question_id} abandoned" in closed.stdout
    assert "no host holds agent desk, so turn 1 waits: " in closed.stdout
    assert _read(desk / "afp.db") == ([], ["paused"])

    both = afp(desk, "run", "desk.toml", "-m", "ask which one?")
    assert both.returncode == 6, both.stderr  # turn 1 ends, turn 2 asks
    assert "turn 1 (answer run " in both.stdout
    [asked] = _open_questions(desk / "afp.db")
    ran = afp(desk, "abandon", "desk", asked.question_id, "--run", "desk.toml")
    assert ran.returncode == 0, ran.stderr
    assert f"{asked.question_id} abandoned" in ran.stdout
    assert "turn 2 (answer run " in ran.stdout and "): done: " in ran.stdout


def test_a_hostile_prompt_is_shown_inert(desk: Path) -> None:
    """A question's prompt with ANSI escapes, a bell, a carriage return and a bidi override
    reaches the terminal as visible pictures, never raw; the command for a text question
    carries a quoted placeholder."""
    paused = afp(desk, "run", "desk.toml", "-m", "ask " + HOSTILE)
    assert paused.returncode == 6, paused.stderr
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in paused.stdout
    first, second = visible(HOSTILE).split("\n")
    assert f"(tool-ask): {first}\n    {second}\n" in paused.stdout
    [command] = _answer_commands(paused.stdout)
    assert command.endswith(" '<your answer>'")
    [question] = _open_questions(desk / "afp.db")
    assert question.prompt == HOSTILE


def test_run_with_a_live_host_holding_the_agent_is_refused_before_anything_runs(
    desk: Path,
) -> None:
    """``afp run`` beside a host that holds the agent would run its turns a second time (a
    refund twice): exit 5 naming the host and what to do instead, nothing posted or run."""
    db = desk / "afp.db"
    first = afp(desk, "run", "desk.toml", "-m", "hello")
    assert first.returncode in (0, 6), first.stderr

    async def hold() -> list[str]:
        store = await open_store(db, now_ms=0)
        try:
            epoch = await store.acquire_lease("host-a", now_ms=0, ttl_ms=2**62)
            assert epoch is not None
            assert await store.claim_agent("desk", "host-a", epoch, now_ms=0)
            return [row.message_id for row in await store.inbox("desk")]
        finally:
            await store.aclose()

    before = anyio.run(hold)
    refused = afp(desk, "run", "desk.toml", "-m", "refund 4520")
    assert refused.returncode == 5, refused.stderr
    assert "host 'host-a' holds agent 'desk'" in refused.stderr
    assert "afp send" in refused.stderr and "Traceback" not in refused.stderr

    async def inbox() -> list[str]:
        store = await open_store(db, now_ms=0)
        try:
            return [row.message_id for row in await store.inbox("desk")]
        finally:
            await store.aclose()

    assert anyio.run(inbox) == before
