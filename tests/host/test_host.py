"""The minimal standing host: durable posts that wake a worker, polling, start-up recovery,
parallel agents under a capacity bound, operator resume, events and stopping
(docs/host.md#the-standing-host)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from afp_runtime.errors import (
    AgentDefinitionError,
    ModelCallError,
    RunNotResumable,
    StoreUnavailable,
)
from afp_runtime.host import AgentNotHosted, Host, HostStopping, HostWatch, StreamGap
from afp_runtime.host.workers import CHECKPOINT_EVERY_S
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.records import Txn
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from tests.api.conftest import Api, agent, settle, until, watch_of


async def test_post_is_durable_then_wakes_the_worker(api: Api) -> None:
    """post returns the ack after the row is committed, and the agent's worker answers it."""
    model = ScriptedModel([answer("hello")], model="mock")
    async with api.host(agent(model)) as host:
        ack = await host.post("ops", "hi", sender="alice")
        stored = await host.reader.inbox_message(ack.message_id)
        await settle(host)
        answered = await host.reader.inbox_message(ack.message_id)
    assert stored is not None and stored.sender == "alice"
    assert answered is not None and answered.status == "answered"
    assert model.calls == 1 and not ack.duplicate


class _Told(HostWatch):
    """Each watch point in the order the host called it, with the model's calls so far."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.told: list[tuple[str, str, int]] = []

    def pass_started(self, agent_id: str) -> None:
        self.told.append(("pass_started", agent_id, self.model.calls))

    def pass_finished(self, agent_id: str) -> None:
        self.told.append(("pass_finished", agent_id, self.model.calls))

    def lease_period(self) -> None:
        self.told.append(("lease_period", "", self.model.calls))

    def checkpointed(self) -> None:
        self.told.append(("checkpointed", "", self.model.calls))


async def test_a_watch_given_at_construction_is_told_what_no_row_shows(api: Api) -> None:
    """``Host(watch=…)`` (docs/host.md#watching-a-host-in-tests) hears every pass begin and
    end around the work it did, each lease period and each periodic checkpoint."""
    model = ScriptedModel([answer("hello")], model="mock")
    watch = _Told(model)
    async with api.host(agent(model), watch=watch) as host:
        await host.post("ops", "hi")
        await until(lambda: ("pass_finished", "ops", 1) in watch.told)
        api.clock.advance(CHECKPOINT_EVERY_S)
        await until(lambda: {"checkpointed", "lease_period"} <= {k for k, _, _ in watch.told})
    passes = [(kind, calls) for kind, agent_id, calls in watch.told if agent_id == "ops"]
    # Passes never overlap, and the one that called the model is bracketed by the watch.
    assert passes[0::2] == [("pass_started", c) for _, c in passes[0::2]]
    assert passes[1::2] == [("pass_finished", c) for _, c in passes[1::2]]
    assert [("pass_started", 0), ("pass_finished", 1)] in [
        passes[i : i + 2] for i in range(0, len(passes), 2)
    ]


async def test_rows_written_elsewhere_are_noticed_within_the_poll_interval(api: Api) -> None:
    """A row another writer committed is picked up when the poll interval passes on the clock."""
    model = ScriptedModel([answer("seen")], model="mock")
    async with api.host(agent(model), poll_interval_s=5.0) as host:
        await settle(host)
        await host.store.post("ops", "from the cli", message_id="msg-x", now_ms=0)
        await anyio.wait_all_tasks_blocked()
        assert model.calls == 0  # nobody woke the worker
        api.clock.advance(5.0)
        await settle(host)
        row = await host.reader.inbox_message("msg-x")
    assert row is not None and row.status == "answered" and model.calls == 1


async def test_an_idle_agent_costs_no_pass_until_something_changes(api: Api) -> None:
    """On SQLite an agent with nothing to do is not looked at again while nothing changes, over
    many poll intervals; a message another connection commits (as ``afp send`` would) is
    answered within one poll interval all the same."""
    model = ScriptedModel([answer("seen")], model="mock")
    async with api.host(agent(model), poll_interval_s=1.0) as host:
        await settle(host)
        before = watch_of(host).passes("ops")
        for _ in range(20):
            api.clock.advance(1.0)
            await anyio.wait_all_tasks_blocked()
        idle_passes = watch_of(host).passes("ops") - before
        elsewhere = await SqliteStore.open(api.path, now_ms=0)
        try:
            await elsewhere.post("ops", "from another process", message_id="msg-y", now_ms=0)
        finally:
            await elsewhere.aclose()
        api.clock.advance(1.0)
        await settle(host)
        row = await host.reader.inbox_message("msg-y")
    assert idle_passes == 0
    assert row is not None and row.status == "answered" and model.calls == 1


async def test_start_up_answers_what_an_earlier_process_left(api: Api) -> None:
    """Messages queued while no host ran are answered when a host starts."""
    store = await SqliteStore.open(api.path, now_ms=0)
    try:
        await store.ensure_agent("ops", now_ms=0)
        await store.post("ops", "left over", message_id="msg-old", now_ms=0)
    finally:
        await store.aclose()
    model = ScriptedModel([answer("done")], model="mock")
    async with api.host(agent(model)) as host:
        await settle(host)
        row = await host.reader.inbox_message("msg-old")
    assert row is not None and row.status == "answered"


def _gated(gate: anyio.Event, started: list[str], name: str) -> ScriptedModel:
    async def reply(request: ModelRequest, number: int) -> ModelReply:
        started.append(name)
        await gate.wait()
        return answer(f"{name} done")

    return ScriptedModel(reply, model="mock")


@pytest.mark.parametrize(("limit", "in_flight"), [(1, 1), (2, 2)])
async def test_agents_work_in_parallel_up_to_max_active_turns(
    api: Api, limit: int, in_flight: int
) -> None:
    """Two agents' turns run at once only as far as max_active_turns allows."""
    gate = anyio.Event()
    started: list[str] = []
    one = agent(_gated(gate, started, "one"), agent_id="one")
    two = agent(_gated(gate, started, "two"), agent_id="two")
    async with api.host(one, two, max_active_turns=limit) as host:
        await host.post("one", "go")
        await host.post("two", "go")
        await until(lambda: len(started) >= in_flight)
        await anyio.sleep(0.05)  # room for a turn the limit should hold back
        assert len(started) == in_flight
        gate.set()
        await settle(host, "one")
        await settle(host, "two")
    assert sorted(started) == ["one", "two"]


async def test_operator_resume_of_a_held_turn(api: Api) -> None:
    """resume() refuses an agent without a held turn, then resumes a held one to its answer."""
    refused = ModelCallError("no key", error_kind="auth", provider="scripted")
    model = ScriptedModel([refused, answer("resumed")], model="mock")
    async with api.host(agent(model)) as host:
        with pytest.raises(RunNotResumable):
            await host.resume("ops")
        await host.post("ops", "go")
        await settle(host)
        state = await host.reader.conversation_state("ops")
        assert state is not None and state.open_turn is not None
        assert state.open_turn.status == "held"
        with pytest.raises(RunNotResumable):
            await host.resume("ops", run_id="run-9")
        await host.resume("ops", run_id="run-1")

        async def answered() -> bool:
            row = await host.reader.inbox_message("msg-1")
            return row is not None and row.status == "answered"

        await until(answered)
        runs = await host.reader.runs("ops")
    assert [(r.kind, r.status) for r in runs] == [("initial", "held"), ("operator", "answered")]


async def test_a_subscriber_that_never_reads_does_not_delay_a_turn(api: Api) -> None:
    """A subscriber that never reads lets a whole turn finish, then learns of its losses."""
    script = [tool_reply(call(f"c{i}", "alpha_tool")) for i in range(3)] + [answer("done")]
    async with api.host(agent(script), subscriber_buffer=2) as host:
        stuck = host.events.subscribe(agent_ids=["ops"])
        await host.post("ops", "go")
        await settle(host, within_s=10)
        first = await stuck.next()
        rest = [await stuck.next(), await stuck.next()]
    assert isinstance(first, StreamGap) and first.reason == "slow-client"
    assert first.count is not None and first.count > 10
    assert [getattr(e, "type", None) for e in rest][-1] is not None


async def test_events_are_published_with_host_wide_ids(api: Api) -> None:
    """The host publishes its start and every agent event on one numbered stream."""
    async with api.host(agent([answer("x")])) as host:
        listener = host.events.subscribe(last_event_id=f"{host.events.boot_id}-0")
        await host.post("ops", "go")
        await settle(host)
        seen = []
        with anyio.fail_after(5):
            while listener.pending:
                seen.append(await listener.next())
    types = [getattr(e, "type", "") for e in seen]
    assert types[0] == "host.started" and "inbox.accepted" in types and "turn.ended" in types
    # A reply's fragment (model.delta) is live only and takes no number of its own
    # (docs/host.md#streamed-fragments): it carries the id of the event before it.
    numbered = [e for e in seen if getattr(e, "type", "") != "model.delta"]
    assert [getattr(e, "id", 0) for e in numbered] == list(range(1, len(numbered) + 1))
    assert types.count("model.delta") == 1


async def test_stop_refuses_new_work_and_closes_adapters_once(api: Api) -> None:
    """After stop, post and resume raise HostStopping, streams end and each adapter closed once."""
    model = ScriptedModel([], model="mock")
    async with api.host(agent(model)) as host:
        subscription = host.events.subscribe()
        host.stop()
        host.stop()
        with pytest.raises(HostStopping):
            await host.post("ops", "late")
        with pytest.raises(HostStopping):
            await host.resume("ops")
        with pytest.raises(AgentNotHosted):
            await host.post("ghost", "hi")
        assert host.state == "stopping"
    assert host.state == "stopped" and model.closed == 1
    assert await subscription.next() is not None  # host.stopping was delivered before the end
    assert await subscription.next() is None


async def test_duplicate_agent_ids_are_refused(api: Api) -> None:
    """Two definitions with one id are refused naming agents."""
    store = await SqliteStore.open(api.path, now_ms=0)
    try:
        with pytest.raises(AgentDefinitionError, match="ops"):
            Host(store, [agent([]), agent([])], clock=api.clock, ids=api.ids)
    finally:
        await store.aclose()


async def test_a_pass_that_cannot_reach_the_store_is_tried_again_soon(api: Api, logs: Any) -> None:
    """A pass cut off by StoreUnavailable is logged as a warning without a traceback and tried
    again 0.25 s later on the clock, not at the next poll (an hour here): the turn is then
    answered, once."""
    model = ScriptedModel([answer("after the outage")], model="mock")
    async with api.host(agent(model), poll_interval_s=3600.0) as host:
        await settle(host)
        commit = host.store.commit
        outage = [StoreUnavailable("the server is away")]

        async def flaky(txn: Txn) -> None:
            if outage:
                raise outage.pop()
            await commit(txn)

        host.store.commit = flaky  # type: ignore[method-assign]
        ack = await host.post("ops", "hi")
        await until(lambda: not outage and not watch_of(host).working("ops"))
        await anyio.wait_all_tasks_blocked()
        queued = await host.reader.inbox_message(ack.message_id)
        api.clock.advance(0.25)
        await settle(host, within_s=5)
        answered = await host.reader.inbox_message(ack.message_id)
    assert queued is not None and queued.status == "queued"  # the seed never committed
    assert answered is not None and answered.status == "answered" and model.calls == 1
    warned = [e for e in logs if e["event"].startswith("the store could not be reached")]
    assert [(e["log_level"], e["retry_in_s"], "exc_info" in e) for e in warned] == [
        ("warning", 0.25, False)
    ]
    assert not [e for e in logs if e["event"].startswith("an agent's work pass failed")]
