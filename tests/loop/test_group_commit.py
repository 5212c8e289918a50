"""Sync durability groups the bundles between two effects into one transaction
(docs/architecture.md#decision-1-sync-durability-commits-at-effect-boundaries): how many
transactions an iteration takes, what each FULL commit carries, and what a crash between a tool
finishing and the next commit leaves (docs/loop.md#the-tool-journal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.loop import LoopHooks
from afp_runtime.testing import answer, call, tool_reply

from .conftest import Crash, Harness

REPO = Path(__file__).resolve().parents[2]
TOOL_ITERATIONS = 4


async def test_a_tool_iteration_takes_two_transactions_one_full(harness: Harness) -> None:
    """Each iteration of a tool-calling turn commits in two transactions, exactly one FULL."""
    replies = [tool_reply(call(f"c{n}", "alpha_tool")) for n in range(TOOL_ITERATIONS)]
    driver = harness.driver([*replies, answer("done")])
    await driver.post("go")
    before = len(harness.store.committed)
    await harness.work(driver)
    commits = harness.store.committed[before:]
    by_iteration: dict[int, list[bool]] = {}
    for txn in commits:
        # Every transaction but the seed's carries one receipt or one reply: it is that
        # iteration's.
        [mark] = [b for b in txn.bundles if b.stage in ("seed", "receipt", "call-model")]
        if mark.stage != "seed":
            by_iteration.setdefault(mark.iteration, []).append(txn.full)
    assert len(commits) == 1 + 2 * (TOOL_ITERATIONS + 1)
    assert by_iteration == {n: [False, True] for n in range(1, TOOL_ITERATIONS + 2)}


async def test_a_later_group_commits_the_earlier_groups_results(harness: Harness) -> None:
    """A later dispatch group's FULL started commit carries the earlier group's finished rows."""
    driver = harness.driver(
        [tool_reply(call("a", "beta_tool"), call("b", "beta_tool")), answer("ok")]
    )
    await driver.post("go")
    await harness.work(driver)
    journal = [
        ([(j.tool_call_id, j.state) for j in t.journal], t.full)
        for t in harness.store.committed
        if t.journal
    ]
    assert journal == [
        ([("a", "started")], True),
        ([("a", "finished"), ("b", "started")], True),
        ([("b", "finished")], False),
    ]


class DieAtSecondToolEnd(LoopHooks):
    """Dies once the second tool call of the run has returned, before anything commits."""

    def __init__(self) -> None:
        self.finished = 0

    def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
        self.finished += 1
        if self.finished == 2:
            raise Crash


async def test_a_crash_before_the_results_commit_settles_calls_as_possibly_run(
    harness: Harness,
) -> None:
    """Calls that finished but whose rows were still pending at a crash stay ``started``: the
    idempotent one runs again, the other is answered interrupted, and the model is not asked."""
    reply = tool_reply(call("a", "alpha_tool"), call("c", "idem_tool"))
    driver = harness.driver([reply], hooks=DieAtSecondToolEnd())
    await driver.post("go")
    await harness.crash(driver)
    journal = await harness.store.journal("ops", "msg-1")
    assert {k: (v.started, v.finished is not None) for k, v in journal.items()} == {
        "a": (True, False),
        "c": (True, False),
    }

    await harness.restart()
    driver = harness.driver([answer("done")])
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and harness.model.calls == 1
    [settle] = [b for b in await harness.store.bundles(outcome.run_id) if b.stage == "settle"]
    results = next(w["value"] for w in settle.writes if w["key"] == "toolResults")
    assert [(r["toolCallId"], r["settled"], r["status"]) for r in results] == [
        ("a", "note", "interrupted"),
        ("c", "rerun", "ok"),
    ]
    assert dict(harness.invocations) == {"a": 1, "c": 2}


async def test_a_failed_run_commits_what_it_handed_over(harness: Harness) -> None:
    """A run that fails with an error still commits its pending results under sync."""

    class FailAtToolEnd(LoopHooks):
        def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
            raise RuntimeError("a bug after the tool ran")

    driver = harness.driver([tool_reply(call("a", "alpha_tool"))], hooks=FailAtToolEnd())
    await driver.post("go")
    try:
        await harness.work(driver)
    except BaseException as exc:  # the task group may wrap it
        assert "a bug after the tool ran" in repr(exc)
    journal = await harness.store.journal("ops", "msg-1")
    assert journal["a"].finished is not None


async def test_a_cancelled_run_commits_the_results_it_holds(harness: Harness) -> None:
    """A shutdown cancelling a run keeps the finished row of a call that ran: it commits with
    the run's ``cancelled`` mark instead of being dropped."""
    finished = anyio.Event()

    class Finished(LoopHooks):
        def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
            finished.set()

    async def hang(args: Any, ctx: Any) -> str:
        await anyio.sleep_forever()
        return "never"

    reply = tool_reply(call("a", "alpha_tool"), call("b", "alpha_tool"))
    driver = harness.driver([reply], behaviour={"b": hang}, hooks=Finished())
    await driver.post("go")
    async with anyio.create_task_group() as group:
        group.start_soon(driver.work)
        await finished.wait()
        group.cancel_scope.cancel()
    journal = await harness.store.journal("ops", "msg-1")
    assert {k: (v.started, v.finished is not None) for k, v in journal.items()} == {
        "a": (True, True),
        "b": (True, False),
    }
    assert [run.status for run in await harness.store.runs("ops")] == ["cancelled"]


# -- a real process killed between a tool finishing and the next commit ---------------------

CHILD = """
import json, os, signal, sys
import anyio
from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, LoopHooks, SystemClock, TimeOrderedIds
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool

db, mode = sys.argv[1], sys.argv[2]
ran = anyio.Path(db + ".ran")


def tool(name, **flags):
    async def fn(args, ctx):
        async with await anyio.open_file(str(ran), "a") as f:
            await f.write(ctx.tool_call_id + "\\n")
        return name + " did " + ctx.tool_call_id

    return Tool(name, name + ".", {"type": "object", "properties": {}}, fn, **flags)


class KillAtSecondToolEnd(LoopHooks):
    finished = 0

    def after_tool_finished(self, tool_call_id, iteration):
        self.finished += 1
        if self.finished == 2:
            os.kill(os.getpid(), signal.SIGKILL)


async def main():
    clock = SystemClock()
    store = await SqliteStore.open(db)
    crash = mode == "crash"
    replies = [tool_reply(call("a", "charge"), call("c", "lookup"))] if crash else []
    model = ScriptedModel([*replies, answer("done")])
    tools = [
        tool("charge", parallel_safe=True),
        tool("lookup", parallel_safe=True, idempotent=True),
    ]
    agent = Agent("ops", model, tools=tools)
    hooks = KillAtSecondToolEnd() if crash else None
    driver = AgentDriver(store, agent, clock=clock, ids=TimeOrderedIds(clock.now_ms), hooks=hooks)
    if crash:
        await driver.post("go")
        await driver.work()
        return
    [row] = await store.inbox("ops")
    journal = await store.journal("ops", row.message_id)
    [outcome] = await driver.work()
    [settle] = [b for b in await store.bundles(outcome.run_id) if b.stage == "settle"]
    results = next(w["value"] for w in settle.writes if w["key"] == "toolResults")
    print(json.dumps({
        "journal": {k: [v.started, v.finished is not None] for k, v in journal.items()},
        "status": outcome.status,
        "modelCalls": model.calls,
        "settled": [[r["toolCallId"], r["settled"], r["status"]] for r in results],
    }))
    await store.aclose()


anyio.run(main)
"""


def _child(db: Path, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(db), mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_a_process_killed_after_its_tools_finished_settles_them_as_possibly_run(
    tmp_path: Path,
) -> None:
    """SIGKILL after two tools returned, before their rows commit: the non-idempotent call is
    answered interrupted and never run again, the idempotent one runs again, the reply is kept."""
    db = tmp_path / "afp.db"
    crashed = _child(db, "crash")
    assert crashed.returncode == -9, crashed.stderr
    recovered = _child(db, "recover")
    assert recovered.returncode == 0, recovered.stderr
    report = json.loads(recovered.stdout.strip().splitlines()[-1])
    assert report == {
        "journal": {"a": [True, False], "c": [True, False]},
        "status": "answered",
        "modelCalls": 1,
        "settled": [["a", "note", "interrupted"], ["c", "rerun", "ok"]],
    }
    assert sorted((tmp_path / "afp.db.ran").read_text().split()) == ["a", "c", "c"]
