"""The conformance contracts of durable schedules and their delivering commit
(docs/host.md#schedules). Part of ``store_conformance.CONTRACTS``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import msgspec

from afp_runtime.errors import LeaseLost, StoreError
from afp_runtime.records import ConversationState
from afp_runtime.store import AgentDump, ScheduleDelivered, ScheduleEntry, Store
from afp_runtime.testing.store_conformance import T0, Backend, fresh, new_agent, raises

HOUR = 3_600_000
_state = msgspec.msgpack.Decoder(ConversationState)
_encoder = msgspec.msgpack.Encoder()


def entry(
    name: str = "morning", *, next_due_ms: int | None = T0 + HOUR, **fields: object
) -> ScheduleEntry:
    """A schedule set at ``T0`` whose next due instant is an hour later."""
    values: dict[str, object] = {
        "name": name,
        "definition": {"name": name, "text": f"wake up ({name})", "every": "1 hours"},
        "source": "api",
        "anchor_ms": T0,
        "last_due_ms": T0,
        "next_due_ms": next_due_ms,
    }
    values.update(fields)
    return ScheduleEntry(**values)  # type: ignore[arg-type]


async def deliver(
    store: Store, agent_id: str, name: str, revision: int, *due_ms: int, next_ms: int | None
) -> ScheduleDelivered | None:
    """Deliver ``due_ms`` of the schedule planned on ``revision``."""
    return await store.deliver_schedule(
        agent_id,
        name,
        revision=revision,
        due=[(ms, fresh("msg")) for ms in due_ms],
        text=f"wake up ({name})",
        through_ms=max(due_ms),
        next_due_ms=next_ms,
        now_ms=max(due_ms) + 5,
    )


# -- contracts: setting, listing and removing --------------------------------------------------


async def test_a_schedule_is_put_listed_replaced_and_removed(store: Store) -> None:
    """put_schedule creates a row (revision 1) and replaces it by name (its creation time kept,
    its revision raised); schedules lists an agent's by name; remove_schedule removes one."""
    agent_id, other = await new_agent(store), await new_agent(store)
    first = await store.put_schedule(agent_id, entry("zeta"), now_ms=T0)
    await store.put_schedule(agent_id, entry("alpha", source="declared"), now_ms=T0 + 1)
    await store.put_schedule(other, entry("zeta"), now_ms=T0)
    assert (first.revision, first.created_at_ms, first.delivered) == (1, T0, 0)
    assert first.definition == entry("zeta").definition

    replaced = await store.put_schedule(
        agent_id, entry("zeta", paused=True, next_due_ms=None), now_ms=T0 + 9
    )
    assert (replaced.revision, replaced.created_at_ms, replaced.updated_at_ms) == (2, T0, T0 + 9)
    assert replaced.paused and replaced.next_due_ms is None
    listed = await store.schedules(agent_id)
    assert [(r.name, r.source, r.agent_id) for r in listed] == [
        ("alpha", "declared", agent_id),
        ("zeta", "api", agent_id),
    ]
    assert await store.remove_schedule(agent_id, "zeta")
    assert not await store.remove_schedule(agent_id, "zeta")
    assert [r.name for r in await store.schedules(agent_id)] == ["alpha"]
    assert [r.name for r in await store.schedules(other)] == ["zeta"]
    assert await store.schedules(fresh("agent")) == []
    with raises(StoreError):
        await store.put_schedule(fresh("agent"), entry(), now_ms=T0)


async def test_due_schedules_are_found_by_their_next_due_instant(store: Store) -> None:
    """due_schedules answers the unpaused schedules of the agents named whose next due instant
    has come, earliest first; next_schedule_due the earliest of them all."""
    a, b, c = await new_agent(store), await new_agent(store), await new_agent(store)
    await store.put_schedule(a, entry("late", next_due_ms=T0 + 3 * HOUR), now_ms=T0)
    await store.put_schedule(a, entry("soon", next_due_ms=T0 + HOUR), now_ms=T0)
    await store.put_schedule(b, entry("paused", next_due_ms=T0, paused=True), now_ms=T0)
    await store.put_schedule(b, entry("done", next_due_ms=None), now_ms=T0)
    await store.put_schedule(c, entry("other", next_due_ms=T0), now_ms=T0)

    assert await store.due_schedules([a, b], now_ms=T0 + HOUR - 1) == []
    due = await store.due_schedules([a, b], now_ms=T0 + 3 * HOUR)
    assert [(r.agent_id, r.name) for r in due] == [(a, "soon"), (a, "late")]
    assert await store.next_schedule_due([a, b]) == T0 + HOUR
    assert await store.next_schedule_due([b]) is None
    assert await store.next_schedule_due([c, a]) == T0
    assert await store.next_schedule_due([]) is None


# -- contracts: the delivering commit ----------------------------------------------------------


async def test_a_delivery_posts_its_messages_and_moves_the_marks(store: Store) -> None:
    """deliver_schedule posts one queued message per due instant (sender ``schedule:NAME``, key
    ``schedule:NAME@<due>``, the agent's next positions after a person's message) and moves
    ``last_due_ms``/``next_due_ms`` in the same commit."""
    agent_id = await new_agent(store)
    person = await store.post(agent_id, "hello", message_id=fresh("msg"), now_ms=T0)
    row = await store.put_schedule(agent_id, entry(), now_ms=T0)
    done = await deliver(
        store, agent_id, "morning", row.revision, T0 + HOUR, T0 + 2 * HOUR, next_ms=T0 + 3 * HOUR
    )

    assert done is not None
    assert [due for due, _ in done.acks] == [T0 + HOUR, T0 + 2 * HOUR]
    assert [ack.position for _, ack in done.acks] == [person.position + 1, person.position + 2]
    assert (done.row.last_due_ms, done.row.next_due_ms, done.row.delivered) == (
        T0 + 2 * HOUR,
        T0 + 3 * HOUR,
        2,
    )
    assert done.row.revision == row.revision + 1
    inbox = await store.inbox(agent_id)
    assert [(m.sender, m.idempotency_key, m.status, m.text) for m in inbox[1:]] == [
        ("schedule:morning", f"schedule:morning@{T0 + HOUR}", "queued", "wake up (morning)"),
        ("schedule:morning", f"schedule:morning@{T0 + 2 * HOUR}", "queued", "wake up (morning)"),
    ]
    # No owner check: the schedule's messages do not make "schedule:morning" the owner.
    assert await store.owner(agent_id) is None
    assert (await store.schedules(agent_id))[0] == done.row


async def test_a_delivery_is_written_once_however_many_try(store: Store, backend: Backend) -> None:
    """Two stores (two hosts) delivering the same due instant planned on the same revision: one
    commit writes it, the other gets None and writes nothing; a plan on a replaced schedule's
    old revision is refused alike."""
    other = await backend.open()
    agent_id = await new_agent(store)
    row = await store.put_schedule(agent_id, entry(), now_ms=T0)
    results: list[ScheduleDelivered | None] = []

    async def one(on: Store) -> None:
        results.append(
            await deliver(on, agent_id, "morning", row.revision, T0 + HOUR, next_ms=T0 + 2 * HOUR)
        )

    async with anyio.create_task_group() as group:
        group.start_soon(one, store)
        group.start_soon(one, other)
    assert sorted(r is None for r in results) == [False, True]
    assert len(await store.inbox(agent_id)) == 1

    replaced = await store.put_schedule(agent_id, entry(), now_ms=T0 + 1)
    assert (
        await deliver(other, agent_id, "morning", row.revision + 1, T0 + 2 * HOUR, next_ms=None)
        is None
    )
    assert (
        await deliver(
            store, agent_id, "morning", replaced.revision - 2, T0 + 2 * HOUR, next_ms=None
        )
        is None
    )
    assert await deliver(store, agent_id, "gone", 1, T0 + 2 * HOUR, next_ms=None) is None
    assert len(await store.inbox(agent_id)) == 1


async def test_a_due_instant_delivered_before_is_not_posted_again(store: Store) -> None:
    """A due instant whose message exists already (its key) is acknowledged as that message,
    not posted a second time, even after the schedule was set again."""
    agent_id = await new_agent(store)
    row = await store.put_schedule(agent_id, entry(), now_ms=T0)
    first = await deliver(store, agent_id, "morning", row.revision, T0 + HOUR, next_ms=None)
    again = await store.put_schedule(agent_id, entry(), now_ms=T0 + 1)
    second = await deliver(store, agent_id, "morning", again.revision, T0 + HOUR, next_ms=None)
    assert first is not None and second is not None
    assert second.acks[0][1].duplicate
    assert second.acks[0][1].message_id == first.acks[0][1].message_id
    assert second.row.delivered == 1
    assert len(await store.inbox(agent_id)) == 1


async def test_a_fenced_delivery_needs_the_claim(store: Store, backend: Backend) -> None:
    """A store fenced by a host that does not hold the agent delivers nothing (``LeaseLost``);
    once the host claims it, the delivery goes through."""
    other = await backend.open()
    host = fresh("host")
    epoch = await other.acquire_lease(host, now_ms=T0, ttl_ms=30_000)
    assert epoch is not None
    agent_id = await new_agent(store)
    row = await store.put_schedule(agent_id, entry(), now_ms=T0)
    other.fence_with(host, epoch)
    try:
        with raises(LeaseLost):
            await deliver(other, agent_id, "morning", row.revision, T0 + HOUR, next_ms=None)
        assert await store.inbox(agent_id) == []
        assert await other.claim_agent(agent_id, host, epoch, now_ms=T0)
        done = await deliver(other, agent_id, "morning", row.revision, T0 + HOUR, next_ms=None)
    finally:
        other.fence_with(None)
    assert done is not None and len(await store.inbox(agent_id)) == 1


async def test_schedules_travel_with_an_agents_dump(store: Store) -> None:
    """export_agent carries the agent's schedules with their marks; import_agents writes them,
    so the copy's schedules go on where the source's left off."""
    agent_id = await new_agent(store)
    row = await store.put_schedule(agent_id, entry(), now_ms=T0)
    await deliver(store, agent_id, "morning", row.revision, T0 + HOUR, next_ms=T0 + 2 * HOUR)
    await store.put_schedule(agent_id, entry("quiet", paused=True, next_due_ms=None), now_ms=T0)
    dump = await store.export_agent(agent_id)
    assert [(s.name, s.last_due_ms, s.next_due_ms, s.paused) for s in dump.schedules] == [
        ("morning", T0 + HOUR, T0 + 2 * HOUR, 0),
        ("quiet", T0, None, 1),
    ]
    copy = fresh("agent")
    state = msgspec.structs.replace(_state.decode(dump.state), agent_id=copy)
    moved = msgspec.structs.replace(
        dump, agent_id=copy, state=_encoder.encode(state), inbox=(), runs=(), bundles=()
    )

    async def dumps() -> AsyncIterator[AgentDump]:
        yield moved

    await store.import_agents(dumps())
    copied = await store.schedules(copy)
    original = await store.schedules(agent_id)
    assert [msgspec.structs.replace(r, agent_id=agent_id) for r in copied] == original
    assert await store.next_schedule_due([copy]) == T0 + 2 * HOUR
