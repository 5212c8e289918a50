"""Crashes at named points, then a restart: the turn continues from its last committed stage."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from afp_runtime.loop import LoopHooks
from afp_runtime.records import TurnHeld
from afp_runtime.testing import answer, call, tool_reply

from .conftest import Crash, Harness, StopAfter


def stage_ids(bundles: list) -> list[str]:
    return [b.runtime_stage_id for b in bundles]


def committed_stage(stage: str):
    return lambda txn: any(b.stage == stage for b in txn.bundles)


async def test_crash_before_the_call_reruns_the_iteration(harness: Harness) -> None:
    """A crash right after context#2 leaves run-1 ending there; a recovery run answers once."""
    driver = harness.driver([answer("done")], hooks=StopAfter("context"))
    await driver.post("go")
    await harness.crash(driver)
    assert stage_ids(await harness.store.bundles("run-1")) == ["seed#0", "window#1", "context#2"]
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "running"

    await harness.restart()
    driver = harness.driver([answer("done")])
    [outcome] = await harness.work(driver)
    assert (outcome.run_id, outcome.kind, outcome.status) == ("run-2", "recovery", "answered")
    bundles = await harness.store.bundles("run-2")
    assert stage_ids(bundles)[:5] == [
        "seed#0",
        "window#1",
        "context#2",
        "receipt#3",
        "call-model#4",
    ]
    seed = {w["key"]: w["value"] for w in bundles[0].writes}
    assert seed["recoveredFrom"] == "run-1" and seed["iteration"] == 1
    state = await harness.store.conversation_state("ops")
    assert state.open_turn is None and state.turn == 1
    history = (await harness.store.load_conversation("ops")).history
    assert [m.content for m in history] == ["go", "done"]
    [row] = await harness.store.inbox("ops")
    assert row.status == "answered"


async def test_crash_inside_send_resends_identical_bytes(harness: Harness) -> None:
    """A crash in send keeps run-1's receipt; run-2 sends the same bytes as agent call 2."""

    def crash_on_send(request: Any, number: int) -> Any:
        raise Crash

    driver = harness.driver(crash_on_send)
    await driver.post("go")
    await harness.crash(driver)
    first_body = harness.model.bodies[0]
    assert stage_ids(await harness.store.bundles("run-1"))[-1] == "receipt#3"

    await harness.restart()
    driver = harness.driver([answer("done")])
    await harness.work(driver)
    assert harness.model.bodies[0] == first_body
    receipts = [
        w["value"]
        for run in ("run-1", "run-2")
        for b in await harness.store.bundles(run)
        for w in b.writes
        if w["key"] == "receipt"
    ]
    assert [r["agentCall"] for r in receipts] == [1, 2]
    assert (await harness.store.conversation_state("ops")).model_calls == 2


async def test_crash_after_the_reply_settles_without_asking_again(harness: Harness) -> None:
    """Calls in flight at a crash are settled from the journal: reused, noted, re-run, run."""
    never = anyio.Event()

    async def hang(args: Any, ctx: Any) -> str:
        await never.wait()
        return "never"

    async def die_once_b_runs(args: Any, ctx: Any) -> str:
        while not harness.invocations["b"]:
            await anyio.lowlevel.checkpoint()
        raise Crash

    # a runs alone first: its finished row commits with the started rows of b and c, which are
    # both running when c's process dies (a finished row waits for the next commit).
    reply = tool_reply(
        call("a", "beta_tool"),
        call("b", "alpha_tool"),
        call("c", "idem_tool"),
        call("d", "beta_tool"),
    )
    driver = harness.driver([reply], behaviour={"b": hang, "c": die_once_b_runs})
    await driver.post("go")
    await harness.crash(driver)
    journal = await harness.store.journal("ops", "msg-1")
    assert {k: (v.started, v.finished is not None) for k, v in journal.items()} == {
        "a": (True, True),
        "b": (True, False),
        "c": (True, False),
    }

    await harness.restart()
    driver = harness.driver([answer("done")])
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert harness.model.calls == 1  # only iteration 2: the committed reply was not re-asked
    bundles = await harness.store.bundles("run-2")
    assert stage_ids(bundles)[:3] == ["seed#0", "settle#1", "window#2"]
    results = next(w["value"] for w in bundles[1].writes if w["key"] == "toolResults")
    assert [(r["toolCallId"], r["settled"]) for r in results] == [
        ("a", "journal"),
        ("b", "note"),
        ("c", "rerun"),
        ("d", "dispatched"),
    ]
    assert [r["status"] for r in results][:2] == ["ok", "interrupted"]
    assert dict(harness.invocations) == {"a": 1, "b": 1, "c": 2, "d": 1}
    history = (await harness.store.load_conversation("ops")).history
    assert [m.tool_call_id for m in history if m.role == "tool"] == ["a", "b", "c", "d"]
    assert not next(m for m in history if m.tool_call_id == "b").not_dispatched
    iteration = next(w["value"] for w in bundles[1].writes if w["key"] == "iteration")
    assert iteration == 2
    # The turn is closed: its settlements live in the log, the journal rows are gone.
    assert await harness.store.journal("ops", "msg-1") == {}


async def test_iteration_durability_repeats_the_lost_iteration(harness: Harness) -> None:
    """Under iteration durability a crash mid-iteration loses it: the model is asked again."""

    async def crash_tool(args: Any, ctx: Any) -> str:
        await anyio.lowlevel.checkpoint()
        raise Crash

    reply = tool_reply(
        call("a", "alpha_tool"),
        call("b", "alpha_tool"),
        call("c", "idem_tool"),
        call("d", "beta_tool"),
    )
    driver = harness.driver([reply], behaviour={"b": crash_tool}, durability="iteration")
    await driver.post("go")
    await harness.crash(driver)
    assert stage_ids(await harness.store.bundles("run-1")) == ["seed#0"]
    assert await harness.store.journal("ops", "msg-1") == {}

    await harness.restart()
    driver = harness.driver([reply, answer("done")], durability="iteration")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert dict(harness.invocations) == {"a": 2, "b": 2, "c": 2, "d": 1}


async def test_sync_mode_commit_accounting(harness: Harness) -> None:
    """Sync durability: bundles between two effects share a transaction; FULL only before
    effects leave the process."""
    full_before = harness.store.full_transactions
    driver = harness.driver([tool_reply(call("c1", "alpha_tool")), answer("done")])
    await driver.post("go")
    assert harness.store.full_transactions == full_before + 1  # the inbox acknowledgement
    await harness.work(driver)
    commits = harness.store.committed
    assert [
        ([b.stage for b in t.bundles], [j.state for j in t.journal], t.full) for t in commits
    ] == [
        (["seed"], [], False),
        (["window", "context", "receipt"], [], False),
        (["call-model"], ["started"], True),
        (["tool-calls", "window", "context", "receipt"], ["finished"], False),
        (["call-model", "final"], [], True),
    ]
    assert harness.store.full_transactions == full_before + 3


async def test_a_later_turn_seeds_with_its_first_call(harness: Harness) -> None:
    """A driver's later initial runs commit the seed with the first pre-call bundles: one
    transaction before the model call, as every other iteration has."""
    driver = harness.driver([answer("one"), answer("two")])
    await driver.post("first")
    await harness.work(driver)
    await driver.post("second")
    harness.store.committed.clear()
    await harness.work(driver)
    assert [([b.stage for b in t.bundles], t.full) for t in harness.store.committed] == [
        (["seed", "window", "context", "receipt"], False),
        (["call-model", "final"], True),
    ]


class DiesAfterWindow(LoopHooks):
    """Once armed, the process dies right after each window stage, before anything of it is
    committed (no stop point asks for a flush)."""

    armed = False

    def after_stage(self, stage: str, iteration: int) -> None:
        if self.armed and stage == "window":
            raise Crash


async def test_a_turn_that_kills_the_process_before_its_call_is_still_held(
    harness: Harness,
) -> None:
    """A message that kills the process before the first model call, on a driver that already
    ran, loses that run; the next driver's first run seeds alone, so recoveries count and the
    turn is held after max_recoveries more crashes."""
    hooks = DiesAfterWindow()
    driver = harness.driver([answer("fine")], hooks=hooks, max_recoveries=2)
    await driver.post("first")
    await harness.work(driver)
    hooks.armed = True
    await driver.post("poison")
    await harness.crash(driver)
    # Nothing of the lost run was committed: the message is still queued.
    assert [row.status for row in await harness.store.inbox("ops")] == ["answered", "queued"]
    assert [run.run_id for run in await harness.store.runs("ops")] == ["run-1"]
    for _ in range(3):
        await harness.restart()
        await harness.crash(harness.driver([], hooks=hooks, max_recoveries=2))
    await harness.restart()
    assert await harness.work(harness.driver([], hooks=hooks, max_recoveries=2)) == []
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "held" and state.open_turn.error_kind == "crash-loop"
    kinds = [run.kind for run in await harness.store.runs("ops")]
    assert kinds == ["initial", "initial", "recovery", "recovery"]


async def test_markers_survive_a_restart(harness: Harness) -> None:
    """not_dispatched marks exactly the calls whose tool never ran, read back after a restart."""

    async def boom(args: Any, ctx: Any) -> str:
        raise RuntimeError("down")

    bad = msgspec.structs.replace(call("v", "alpha_tool"), args_text="{oops")
    reply = tool_reply(call("u", "gamma"), bad, call("w", "alpha_tool"), call("e", "beta_tool"))
    driver = harness.driver([reply, answer("ok")], behaviour={"beta_tool": boom})
    await driver.post("go")
    await harness.work(driver)
    await harness.restart()
    history = (await harness.store.load_conversation("ops")).history
    marked = {m.tool_call_id: m.not_dispatched for m in history if m.role == "tool"}
    assert marked == {"u": True, "v": True, "w": False, "e": False}


async def test_crash_loop_holds_the_turn(harness: Harness) -> None:
    """After max_recoveries recovery runs crash too, the turn is held and later messages wait."""

    def crash_on_send(request: Any, number: int) -> Any:
        raise Crash

    driver = harness.driver(crash_on_send, max_recoveries=2)
    await driver.post("go")
    await driver.post("later")
    for _ in range(3):
        await harness.crash(driver)
        await harness.restart()
        driver = harness.driver(crash_on_send, max_recoveries=2)
    assert await harness.work(driver) == []
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "held" and state.open_turn.error_kind == "crash-loop"
    statuses = [row.status for row in await harness.store.inbox("ops")]
    assert statuses == ["held", "queued"]
    # The run the last crash cut off is not left "running", and watchers learn of the hold.
    runs = await harness.store.runs("ops")
    assert "running" not in {run.status for run in runs}
    [held] = harness.recorder.of_type(TurnHeld)
    assert isinstance(held.payload, TurnHeld) and held.payload.error_kind == "crash-loop"
    assert held.payload.run_id == state.open_turn.last_run_id == held.run_id


async def test_a_recovery_cut_after_its_seed_still_settles(harness: Harness) -> None:
    """A recovery run that crashed right after its seed hides nothing: the next recovery
    still settles the first run's committed reply, so a non-idempotent call in flight is
    never run again and the model is not asked again."""
    never = anyio.Event()

    async def hang(args: Any, ctx: Any) -> str:
        await never.wait()
        return "never"

    driver = harness.driver([tool_reply(call("b", "alpha_tool"))], behaviour={"b": hang})
    await driver.post("go")
    harness.store.crash_after = lambda txn: any(j.state == "started" for j in txn.journal)
    await harness.crash(driver)  # run-1: reply committed, b journaled started, process died

    await harness.restart()
    harness.store.crash_after = committed_stage("seed")
    await harness.crash(harness.driver([]))  # run-2: recovery dies right after its seed

    await harness.restart()
    driver = harness.driver([answer("done")])
    [outcome] = await harness.work(driver)
    assert (outcome.run_id, outcome.status) == ("run-3", "answered")
    assert harness.model.calls == 1  # only the call after the settled batch
    assert "b" not in harness.invocations  # "started" means "may have run": never re-run
    bundles = await harness.store.bundles("run-3")
    assert stage_ids(bundles)[:2] == ["seed#0", "settle#1"]
    results = next(w["value"] for w in bundles[1].writes if w["key"] == "toolResults")
    assert [(r["toolCallId"], r["settled"], r["status"]) for r in results] == [
        ("b", "note", "interrupted")
    ]
