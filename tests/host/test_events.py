"""The host's event bus: host-wide ids, filters, bounded subscribers, resuming from the ring
buffer (docs/host.md#the-event-envelope, docs/api.md#the-event-stream)."""

from __future__ import annotations

import gc
import weakref

import anyio
import msgspec
import pytest

from afp_runtime.host import EventBus, StreamGap, Subscription
from afp_runtime.loop import Event
from afp_runtime.messages import Usage
from afp_runtime.records import ModelDelta, ModelEnded, ModelStarted, ToolStarted

_PAYLOADS = {
    "model.started": ModelStarted(
        epoch=1,
        provider="scripted",
        model="m",
        system_chars=0,
        message_count=1,
        request_only_count=0,
        tool_count=0,
    ),
    "model.ended": ModelEnded(
        epoch=1,
        stop_reason="end",
        tool_call_count=0,
        content_chars=2,
        duration_ms=0,
        attempts=1,
        usage=Usage(),
    ),
    "tool.started": ToolStarted(
        tool_call_id="c1", tool_name="t", call_index=0, batch_size=1, concurrent=False
    ),
}


def event(kind: str = "model.started", agent_id: str = "ops", n: int = 0) -> Event:
    """An event as a driver's emitter makes it (its own id is replaced on publish)."""
    payload = _PAYLOADS[kind]
    if n:
        payload = msgspec.structs.replace(payload, epoch=n)
    return Event(id=99, at_ms=0, agent_id=agent_id, payload=payload)


def drain(bus: EventBus, count: int) -> None:
    """Publish ``count`` numbered events of agent ``ops``."""
    for n in range(count):
        bus.publish(event(n=n))


async def take(subscription: object, count: int) -> list[Event | StreamGap]:
    """The next ``count`` items of a subscription (bounded in real time)."""
    items = []
    with anyio.fail_after(5):
        for _ in range(count):
            item = await subscription.next()  # type: ignore[attr-defined]
            assert item is not None
            items.append(item)
    return items


async def test_publish_numbers_events_host_wide_and_filters_deliver() -> None:
    """Published events get increasing host-wide ids; agent and type-prefix filters apply."""
    bus = EventBus(boot_id="boot")
    every = bus.subscribe()
    ops = bus.subscribe(agent_ids=["ops"])
    models = bus.subscribe(types=["model."])
    bus.publish(event("model.started", "ops"))
    bus.publish(event("tool.started", "other"))
    bus.publish(event("model.ended", "other"))
    assert [e.id for e in await take(every, 3)] == [1, 2, 3]  # type: ignore[union-attr]
    assert [e.type for e in await take(ops, 1)] == ["model.started"]
    assert [e.type for e in await take(models, 2)] == ["model.started", "model.ended"]
    assert ops.pending == 0 and bus.last_id == 3 and bus.wire_id(3) == "boot-3"


async def test_a_slow_subscriber_loses_the_oldest_and_gets_a_gap() -> None:
    """A full queue drops its oldest events; the reader first gets a slow-client gap with the
    count and the first missed id, then the newest events."""
    bus = EventBus(boot_id="b", subscriber_buffer=3)
    slow = bus.subscribe()
    drain(bus, 10)
    items = await take(slow, 4)
    assert items[0] == StreamGap(reason="slow-client", count=7, missed_from="b-1")
    assert [e.id for e in items[1:]] == [8, 9, 10]  # type: ignore[union-attr]


async def test_resume_after_a_known_id_replays_the_rest() -> None:
    """Resuming after id 5 of this boot replays 6.. in order, then live events."""
    bus = EventBus(boot_id="b")
    drain(bus, 8)
    resumed = bus.subscribe(last_event_id="b-5")
    bus.publish(event())
    assert [e.id for e in await take(resumed, 4)] == [6, 7, 8, 9]  # type: ignore[union-attr]


async def test_a_resume_replays_all_the_ring_holds_whatever_the_queue_bound() -> None:
    """After a busy period the replay is not cut to the subscriber's queue: everything the ring
    holds after the id comes, in order, with no slow-client marker."""
    bus = EventBus(boot_id="b", ring_size=5_000, subscriber_buffer=10)
    drain(bus, 3_000)
    resumed = bus.subscribe(last_event_id="b-100")
    items = await take(resumed, 2_900)
    assert [e.id for e in items] == list(range(101, 3_001))  # type: ignore[union-attr]
    assert not any(isinstance(item, StreamGap) for item in items)


async def test_an_evicted_resume_marks_exactly_where_history_is_gone() -> None:
    """Resuming from before the ring: the marker first, then everything the ring holds."""
    bus = EventBus(boot_id="b", ring_size=50, subscriber_buffer=10)
    drain(bus, 200)
    resumed = bus.subscribe(last_event_id="b-3")
    items = await take(resumed, 51)
    assert items[0] == StreamGap(reason="evicted", missed_from="b-3")
    assert [e.id for e in items[1:]] == list(range(151, 201))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("last_event_id", "reason"),
    [
        ("other-5", "restarted"),
        ("garbage", "restarted"),
        ("b-\u00b2", "restarted"),
        ("b-1", "evicted"),
    ],
)
async def test_resume_from_an_unknown_point_starts_with_a_gap(
    last_event_id: str, reason: str
) -> None:
    """An id from another boot (or unreadable) is restarted, one older than the ring evicted;
    the ring's events follow the marker."""
    bus = EventBus(boot_id="b", ring_size=3)
    drain(bus, 10)
    resumed = bus.subscribe(last_event_id=last_event_id)
    items = await take(resumed, 4)
    assert items[0] == StreamGap(reason=reason, missed_from=last_event_id)  # type: ignore[arg-type]
    assert [e.id for e in items[1:]] == [8, 9, 10]  # type: ignore[union-attr]


async def test_closing_the_bus_ends_every_subscription() -> None:
    """Closing ends waiting readers and later subscriptions at once."""
    bus = EventBus()
    first = bus.subscribe()
    received: list[object] = []

    async def read(subscription: Subscription) -> None:
        async for item in subscription:
            received.append(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, first)
        await anyio.wait_all_tasks_blocked()
        bus.publish(event())
        bus.close()
    late = bus.subscribe()
    assert len(received) == 1 and await late.next() is None
    # The bus keeps neither: once the test lets go of them, they are gone.
    kept = [weakref.ref(first), weakref.ref(late)]
    del first, late
    gc.collect()
    assert [ref() for ref in kept] == [None, None]


async def test_a_closed_subscription_stops_receiving() -> None:
    """A subscription closed by its context manager is unregistered."""
    bus = EventBus()
    with bus.subscribe() as subscription:
        bus.publish(event())
    bus.publish(event())
    assert [e.id for e in await take(subscription, 1)] == [1]  # type: ignore[union-attr]
    assert await subscription.next() is None
    kept = weakref.ref(subscription)  # unregistered: the bus holds it no more
    del subscription
    gc.collect()
    assert kept() is None


def delta(index: int) -> Event:
    """A ``model.delta`` of agent ``ops`` (one fragment of a streamed reply)."""
    payload = ModelDelta(epoch=1, attempt=1, index=index, text="x")
    return Event(id=99, at_ms=0, agent_id="ops", payload=payload)


async def test_fragments_go_live_only_and_never_push_events_out_of_the_ring() -> None:
    """A streamed reply's fragments reach live subscribers, each with the id of the event
    before it, but take no id and no place in the ring: thousands of them leave a resume every
    event (no ``evicted``), and neither a resume nor a history replays them."""
    bus = EventBus(boot_id="b", ring_size=10, subscriber_buffer=10_000)
    live = bus.subscribe(types=["model."])
    bus.publish(event("model.started"))
    for index in range(5_000):
        bus.publish(delta(index))
    bus.publish(event("model.ended"))
    heard = await take(live, 5_002)
    assert [(e.id, e.type) for e in heard[:2]] == [(1, "model.started"), (1, "model.delta")]  # type: ignore[union-attr]
    assert [(e.id, e.type) for e in heard[-1:]] == [(2, "model.ended")]  # type: ignore[union-attr]
    assert bus.last_id == 2
    resumed = bus.subscribe(last_event_id="b-1", follow=False)
    assert [(e.id, e.type) async for e in resumed] == [(2, "model.ended")]  # type: ignore[union-attr]
    history = bus.subscribe(follow=False)
    assert [e.type async for e in history] == ["model.started", "model.ended"]  # type: ignore[union-attr]


async def test_a_slow_subscriber_behind_fragments_is_told_the_first_event_it_lost() -> None:
    """Fragments fill a queue like any event; the gap counts every drop, and its ``missedFrom``
    is the first numbered event lost (a fragment cannot be resumed from)."""
    bus = EventBus(boot_id="b", subscriber_buffer=3)
    slow = bus.subscribe()
    bus.publish(event())
    for index in range(4):
        bus.publish(delta(index))
    bus.publish(event("model.ended"))
    bus.publish(event("tool.started"))
    items = await take(slow, 4)
    assert items[0] == StreamGap(reason="slow-client", count=4, missed_from="b-1")
    assert [e.type for e in items[1:]] == ["model.delta", "model.ended", "tool.started"]  # type: ignore[union-attr]
    again = bus.subscribe(buffer=1)
    bus.publish(delta(0))
    bus.publish(delta(1))
    assert await take(again, 2) == [StreamGap(reason="slow-client", count=1), delta_at(1, 3)]


def delta_at(index: int, event_id: int) -> Event:
    return msgspec.structs.replace(delta(index), id=event_id)
