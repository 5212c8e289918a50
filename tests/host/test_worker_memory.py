"""What a worker keeps in memory (docs/host.md#what-a-worker-keeps-in-memory): a post through
the host is handed to the agent's worker, which takes it without reading the inbox; what other
store objects commit is still found through the change marker; the host's own posts wake no
other worker."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.window import sliding_window
from tests.api.conftest import Api, agent, settle, watch_of


class Reads:
    """Counts the calls of some of a store object's reads (the object's own methods wrapped)."""

    def __init__(self, store: Any, *names: str) -> None:
        self.counts = dict.fromkeys(names, 0)
        for name in names:
            setattr(store, name, self._counted(name, getattr(store, name)))

    def _counted(
        self, name: str, read: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] += 1
            return await read(*args, **kwargs)

        return counted


async def test_a_post_through_the_host_reaches_a_held_agent_without_reading_the_inbox(
    api: Api,
) -> None:
    """Once the worker knows its agent's inbox and conversation, each message posted through
    ``Host.post`` is answered with no read of the inbox or the conversation."""
    model = ScriptedModel([answer(f"reply {n}") for n in range(4)], model="mock")
    async with api.host(agent(model)) as host:
        await host.post("ops", "first")  # the worker learns the inbox here
        await settle(host)
        reads = Reads(host.store, "inbox", "conversation_state", "resolve")
        acks = []
        for n in range(3):
            acks.append(await host.post("ops", f"next {n}"))
            await settle(host)
        rows = [await host.reader.inbox_message(ack.message_id) for ack in acks]
    assert [row.status if row else None for row in rows] == ["answered"] * 3
    assert model.calls == 4
    assert reads.counts == {"inbox": 0, "conversation_state": 0, "resolve": 0}


async def test_a_post_by_another_store_object_is_found_and_answered_in_order(api: Api) -> None:
    """A message another connection commits between two of the host's own posts is not
    skipped: the host's next post is not the next position the worker knows, so the worker
    reads the inbox and answers both in position order."""
    model = ScriptedModel([answer(f"reply {n}") for n in range(3)], model="mock")
    async with api.host(agent(model), poll_interval_s=60.0) as host:
        await host.post("ops", "first")
        await settle(host)
        elsewhere = await SqliteStore.open(api.path, now_ms=0)
        try:
            await elsewhere.post("ops", "from elsewhere", message_id="msg-else", now_ms=0)
        finally:
            await elsewhere.aclose()
        # No poll interval passes: only the host's own post can make the worker look.
        ack = await host.post("ops", "from the host")
        await settle(host)
        other = await host.reader.inbox_message("msg-else")
        own = await host.reader.inbox_message(ack.message_id)
    assert other is not None and own is not None
    assert (other.status, own.status) == ("answered", "answered")
    assert other.turn is not None and own.turn is not None and other.turn < own.turn


async def test_a_commit_elsewhere_is_found_within_the_poll_interval(api: Api) -> None:
    """After the worker answered posts handed to it in memory, a message another connection
    commits is still answered once the poll interval passes (the change marker moved)."""
    model = ScriptedModel([answer("one"), answer("two")], model="mock")
    async with api.host(agent(model), poll_interval_s=5.0) as host:
        await host.post("ops", "first")
        await settle(host)
        elsewhere = await SqliteStore.open(api.path, now_ms=0)
        try:
            await elsewhere.post("ops", "from elsewhere", message_id="msg-else", now_ms=0)
        finally:
            await elsewhere.aclose()
        await anyio.wait_all_tasks_blocked()
        assert model.calls == 1  # nothing told the worker yet
        api.clock.advance(5.0)
        await settle(host)
        row = await host.reader.inbox_message("msg-else")
    assert row is not None and row.status == "answered" and model.calls == 2


async def test_the_hosts_own_posts_wake_no_other_worker(api: Api) -> None:
    """Posts through the host move the store's change marker, but the host knows they were
    its own: a poll interval after them wakes no idle agent's worker."""
    model = ScriptedModel([answer(f"reply {n}") for n in range(3)], model="mock")
    quiet = ScriptedModel([], model="mock")
    async with api.host(agent(model), agent(quiet, agent_id="idle"), poll_interval_s=1.0) as host:
        await settle(host, "idle")
        before = watch_of(host).passes("idle")
        for n in range(3):
            await host.post("ops", f"message {n}")
            await settle(host)
            api.clock.advance(1.0)
            await anyio.wait_all_tasks_blocked()
        idle_passes = watch_of(host).passes("idle") - before
    assert idle_passes == 0
    assert model.calls == 3 and quiet.calls == 0


class Recorded:
    """A scripted model that keeps every request's messages: two tool calls, then an answer,
    each turn."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.model = ScriptedModel(self, model="mock")

    async def __call__(self, request: ModelRequest, number: int) -> ModelReply:
        self.sent.append(tuple(request.messages))
        if number % 3:
            return tool_reply(call(f"c{number}", "alpha_tool", n=number))
        return answer(f"done {number}")


def _windowed(model: ScriptedModel) -> Agent:
    return agent(model, window=sliding_window(keep_recent_turns=2), max_iterations=5)


async def test_a_run_from_the_kept_conversation_sends_what_a_run_from_the_store_would(
    api: Api, tmp_path: Path
) -> None:
    """Turn after turn under a sliding window, the model is sent the same messages when the
    worker starts each run from the conversation it kept as when every run loads it from the
    store (a driver that reads before every run, as after a restart)."""
    kept = Recorded()
    async with api.host(_windowed(kept.model)) as host:
        for n in range(5):
            await host.post("ops", f"turn {n}")
            await settle(host)
    read = Recorded()
    store = await SqliteStore.open(tmp_path / "read.db", now_ms=0)
    try:
        driver = AgentDriver(store, _windowed(read.model), clock=FakeClock(), ids=SequentialIds())
        for n in range(5):
            await driver.post(f"turn {n}")
            await driver.work()
    finally:
        await store.aclose()
    assert len(kept.sent) == 15
    assert kept.sent == read.sent
