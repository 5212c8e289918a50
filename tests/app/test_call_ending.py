"""``app.call_ending``: how one of an agent's calls ended, read from its run's log
(afp_runtime/app/calls.py): the reply with its tool calls, the failure with its kind and
message, no reply for a call a crash abandoned, and a damaged record named, never raised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from afp_runtime.app import AgentCall, CallEnding, agent_call, call_ending
from afp_runtime.records import RunLog
from afp_runtime.served import served_at as view_of_epoch
from afp_runtime.store import RunRow, Store
from afp_runtime.store.sqlite import SqliteStore
from tests.crossed_calls import AGENT, crossed
from tests.served._log import Failure, RunSim, copy_log, tool, two_epoch_run


async def _endings(path: Path, numbers: range) -> list[CallEnding]:
    store = await SqliteStore.open(path, read_only=True)
    try:
        endings = []
        for number in numbers:
            found = await agent_call(store, AGENT, number)
            assert found is not None
            endings.append(await call_ending(store, found))
        return endings
    finally:
        await store.aclose()


async def test_replies_their_tool_calls_and_a_crash_abandoned_call(tmp_path: Path) -> None:
    """``tests/crossed_calls.py``: call 1 asked ``lookup_order`` with its arguments, call 2
    answered with text, call 3 was cut off by a crash (abandoned, no attempt recorded, no
    reply), call 4 asked again in the recovery run."""
    await crossed(tmp_path / "afp.db")
    first, second, third, fourth = await _endings(tmp_path / "afp.db", range(1, 5))
    assert (first.outcome, first.attempts, first.content) == ("replied", 1, "")
    assert [(c.name, dict(c.args)) for c in first.tool_calls] == [
        ("lookup_order", {"order_id": "1042"})
    ]
    assert second.outcome == "replied" and second.content.startswith("Done: ")
    assert second.tool_calls == () and second.stop_reason == "end"
    assert third == CallEnding(outcome="abandoned", attempts=0)
    assert fourth.outcome == "replied" and fourth.tool_calls[0].name == "lookup_order"


class _OneLog:
    """A store that holds one run's log (``call_ending`` reads nothing else)."""

    def __init__(self, log: RunLog) -> None:
        self.log = log

    async def read_run(self, run_id: str, read: Callable[[RunLog], Any]) -> Any:
        assert run_id == self.log.run_id
        return read(self.log)


def _found(sim: RunSim, epoch: int) -> AgentCall:
    run = RunRow(
        run_id=sim.log.run_id,
        agent_id="ops",
        turn=1,
        kind="initial",
        message_id="m-1",
        status="answered",
        started_at_ms=0,
        bundles=0,
    )
    view = view_of_epoch(sim.log, epoch)
    assert view is not None
    return AgentCall(number=epoch, run=run, epoch=epoch, view=view)


async def test_a_failed_call_reads_its_kind_status_message_and_attempts() -> None:
    """A call the provider refused twice: ``failed`` with kind, status, message, 2 attempts."""
    sim = RunSim("run-1", tools=[tool("alpha_tool")]).run([Failure(attempts=2)])
    ending = await call_ending(cast(Store, _OneLog(sim.log)), _found(sim, 1))
    assert ending == CallEnding(
        outcome="failed",
        attempts=2,
        error_kind="auth",
        error="the endpoint refused the call",
        status=401,
    )


async def test_a_damaged_reply_record_is_named_not_raised() -> None:
    """A reply record whose text is a number reads as ``replied`` with ``damaged`` saying
    which record does not read, and why."""
    sim = two_epoch_run()
    seq = next(
        b.seq
        for b in sim.log.bundles(0)
        if b.stage == "call-model" and any(w.key == "reply" for w in b.writes)
    )
    log = copy_log(sim.log, replace={(seq, "reply"): {"content": 5, "toolCalls": []}})
    ending = await call_ending(cast(Store, _OneLog(log)), _found(sim, 1))
    assert ending.outcome == "replied" and ending.content == ""
    assert ending.damaged.startswith("the reply record does not read: ")
    assert "content" in ending.damaged
