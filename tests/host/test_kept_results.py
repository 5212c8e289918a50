"""A tool result the store could not take is kept and committed once the store is back
(docs/loop.md#results-kept-through-a-store-outage, docs/host.md#hosts-and-a-failing-store): a
real host on a Postgres server of the test's own, stopped with ``pg_ctl stop`` while a
non-idempotent tool finishes and started again, and on a SQLite file another connection holds
the write lock of past the busy timeout. Within the bound the turn goes on with the tool's real
result; past it the result is logged lost with its call id and the call is settled as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.agents import Agent
from afp_runtime.host import Host
from afp_runtime.loop import KeptResults, SequentialIds, SystemClock
from afp_runtime.messages import Message
from afp_runtime.models import ScriptedModel
from afp_runtime.records import JournalRow
from afp_runtime.store import open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from tests.api.conftest import until
from tests.host.processes import PostgresServer

_SCHEMA = {"type": "object", "properties": {}}
_RESULT = "mail 42 sent to the customer"


class JumpingClock(SystemClock):
    """The system clock, which the test may move ahead (a kept result's age)."""

    def __init__(self) -> None:
        self.ahead_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.ahead_ms


@pytest.fixture(name="pg")
def fixture_pg() -> Iterator[PostgresServer]:
    """A Postgres server of this test's own, started; stopped and removed after it."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


class Outage:
    """What one turn through a Postgres stop and start left: the tool's invocations, what the
    model was sent last, the stored history and every ``toolResults`` row."""

    ran: list[str]
    sent: list[Message]
    history: list[Message]
    results: list[dict[str, Any]]


async def _turn_through_an_outage(pg: PostgresServer, *, max_age_s: float) -> Outage:
    """``send_mail`` (not idempotent) stops the server before it answers, so its result cannot
    be committed; once the host kept it, the clock moves 5 s ahead and the server starts again;
    the turn is then answered."""
    found = Outage()
    found.ran = []
    stopped = anyio.Event()

    async def send_mail(args: Mapping[str, Any], ctx: ToolContext) -> str:
        found.ran.append(ctx.tool_call_id)
        await anyio.to_thread.run_sync(pg.stop, "fast")
        stopped.set()
        return _RESULT

    def model(request: Any, number: int) -> Any:
        found.sent = list(request.messages)
        return tool_reply(call("c1", "send_mail")) if number == 1 else answer("done")

    tool = Tool("send_mail", "Send a mail.", _SCHEMA, send_mail, idempotent=False)
    definition = Agent("ops", ScriptedModel(model, model="mock"), tools=[tool])
    clock = JumpingClock()
    kept = KeptResults(clock, max_age_s=max_age_s)
    store = await open_store(pg.url, now_ms=clock.now_ms())
    try:
        async with Host(
            store,
            [definition],
            clock=clock,
            ids=SequentialIds(),
            poll_interval_s=0.5,
            lease_ttl_s=60.0,
            shutdown_grace_s=5.0,
            kept=kept,
        ) as host:
            ack = await host.post("ops", "Tell the customer")
            with anyio.fail_after(30):
                await stopped.wait()

            await until(lambda: len(kept) == 1, within_s=30)
            clock.ahead_ms += 5000
            await anyio.to_thread.run_sync(pg.start)

            async def answered() -> bool:
                try:
                    row = await store.inbox_message(ack.message_id)
                except Exception:
                    return False  # the pool may still be reconnecting
                return row is not None and row.status == "answered"

            await until(answered, within_s=60)
            found.history = list((await store.load_conversation("ops")).history)
            found.results = [
                result
                for run in await store.runs("ops")
                for bundle in await store.bundles(run.run_id)
                for write in bundle.writes
                if write["key"] == "toolResults"
                for result in write["value"]
            ]
            host.stop()
    finally:
        await store.aclose()
    return found


def _lost(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "kept tool result lost"]


@pytest.mark.timeout(120)
async def test_a_result_finished_while_postgres_is_down_reaches_the_model_once_it_is_back(
    pg: PostgresServer, logs: list[dict[str, Any]]
) -> None:
    """Within the bound: the model reads the real result, the tool ran once, the result was
    settled from memory (``kept``) and no call of the turn was answered ``interrupted``."""
    found = await _turn_through_an_outage(pg, max_age_s=600.0)

    assert found.ran == ["c1"]
    [tool_message] = [m for m in found.history if m.role == "tool"]
    assert tool_message.content == _RESULT
    assert [m.content for m in found.sent if m.role == "tool"] == [_RESULT]
    assert [(r["toolCallId"], r["status"], r.get("settled")) for r in found.results] == [
        ("c1", "ok", "kept")
    ]
    assert not _lost(logs)


@pytest.mark.timeout(120)
async def test_a_kept_result_past_its_age_bound_is_logged_lost_with_its_call_id(
    pg: PostgresServer, logs: list[dict[str, Any]]
) -> None:
    """Past the bound (1 s, the clock moved 5 s): the kept result is dropped and logged lost
    naming the call; the call is settled as a crash leaves it (``interrupted``), never run
    again."""
    found = await _turn_through_an_outage(pg, max_age_s=1.0)

    assert found.ran == ["c1"]
    [lost] = _lost(logs)
    assert (lost["tool_call_id"], lost["agent_id"]) == ("c1", "ops")
    assert lost["reason"] == "kept longer than the bound"
    assert [(r["toolCallId"], r["status"], r.get("settled")) for r in found.results] == [
        ("c1", "interrupted", "note")
    ]


@pytest.mark.timeout(60)
async def test_a_result_finished_while_the_sqlite_file_is_locked_reaches_the_model(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """SQLite: ``send_mail`` leaves another connection holding the file's write lock, so the
    commit after it fails once the busy timeout (5 s) is over; once the lock is let go the turn
    goes on with the real result, settled ``kept``, the tool run once."""
    path = tmp_path / "afp.db"
    ran: list[str] = []
    other = sqlite3.connect(path, check_same_thread=False, isolation_level=None)

    async def send_mail(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ran.append(ctx.tool_call_id)
        await anyio.to_thread.run_sync(other.execute, "BEGIN IMMEDIATE")
        return _RESULT

    sent: list[Message] = []

    def model(request: Any, number: int) -> Any:
        sent[:] = request.messages
        return tool_reply(call("c1", "send_mail")) if number == 1 else answer("done")

    tool = Tool("send_mail", "Send a mail.", _SCHEMA, send_mail, idempotent=False)
    definition = Agent("ops", ScriptedModel(model, model="mock"), tools=[tool])
    clock = SystemClock()
    kept = KeptResults(clock)
    store = await SqliteStore.open(path, now_ms=clock.now_ms())
    try:
        async with Host(
            store, [definition], clock=clock, ids=SequentialIds(), poll_interval_s=0.5, kept=kept
        ) as host:
            ack = await host.post("ops", "Tell the customer")
            await until(lambda: len(kept) == 1, within_s=30)
            await anyio.to_thread.run_sync(other.execute, "ROLLBACK")

            async def answered() -> bool:
                row = await store.inbox_message(ack.message_id)
                return row is not None and row.status == "answered"

            await until(answered, within_s=30)
            results = [
                result
                for run in await store.runs("ops")
                for bundle in await store.bundles(run.run_id)
                for write in bundle.writes
                if write["key"] == "toolResults"
                for result in write["value"]
            ]
            host.stop()
    finally:
        await store.aclose()
        await anyio.to_thread.run_sync(other.close)

    assert ran == ["c1"]
    assert [m.content for m in sent if m.role == "tool"] == [_RESULT]
    assert [(r["toolCallId"], r["status"], r.get("settled")) for r in results] == [
        ("c1", "ok", "kept")
    ]
    assert not _lost(logs)


def _finished(call_id: str, size: int) -> JournalRow:
    return JournalRow(
        agent_id="ops",
        message_id="msg-1",
        tool_call_id=call_id,
        state="finished",
        run_id="run-1",
        outcome=b"x" * size,
    )


def test_past_the_memory_bound_the_oldest_kept_results_are_logged_lost(
    logs: list[dict[str, Any]],
) -> None:
    """Kept rows past ``max_bytes`` drop oldest first, each logged lost with its call id; a
    ``started`` row is never kept, and a row kept again keeps its first time."""
    clock = FakeClock()
    kept = KeptResults(clock, max_bytes=250)
    kept.keep([_finished("a", 100), _finished("b", 100)])
    clock.advance(1)
    kept.keep([_finished("a", 100), JournalRow(**_started("s"))])
    assert sorted(kept.for_turn("ops", "msg-1")) == ["a", "b"]
    kept.keep([_finished("c", 100)])
    assert sorted(kept.for_turn("ops", "msg-1")) == ["b", "c"]
    assert [(e["tool_call_id"], e["reason"]) for e in _lost(logs)] == [
        ("a", "past the memory bound")
    ]
    kept.committed("ops", "msg-1", ["b"])
    kept.keep_only_turn("ops", "msg-2")
    assert [e["tool_call_id"] for e in _lost(logs)] == ["a", "c"]
    assert len(kept) == 0


def _started(call_id: str) -> dict[str, Any]:
    return {
        "agent_id": "ops",
        "message_id": "msg-1",
        "tool_call_id": call_id,
        "state": "started",
        "run_id": "run-1",
    }
