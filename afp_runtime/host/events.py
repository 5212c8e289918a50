"""The host's in-process event bus (docs/host.md#the-event-envelope, docs/api.md#the-event-stream).

Every event an agent's loop emits is renumbered with a per-host increasing id, kept in a ring
buffer of recent events and handed to every matching subscriber. Publishing never waits: each
subscriber has a bounded queue, and on overflow its oldest queued events are dropped.

Readings settled here:

* A subscriber is told about drops and missed history with a ``StreamGap`` marker, delivered
  in place of what it lost: ``slow-client`` (its queue overflowed; ``count`` events dropped,
  ``missedFrom`` the first of them), ``restarted`` (it resumes from an id of another boot) or
  ``evicted`` (the id it resumes from is older than the ring buffer). docs/host.md names the
  in-process overflow marker ``events.dropped {count}``; here it is the same ``StreamGap`` the
  API sends as ``stream.gap``, so one marker serves both.
* Event ids on the wire are ``<bootId>-<seq>``; the boot id is random per host object, so an id
  from an earlier process (or an unparsable one) reads as ``restarted``.
* After a ``restarted`` or ``evicted`` marker the subscriber receives what the ring still holds
  (filtered), then live events. The replay is the subscription's backlog, outside its queue
  bound: a resume gets everything the ring holds after the given id, however busy the host
  was, and only live events that pile up behind it can be dropped as ``slow-client``.
* A ``model.delta`` (one fragment of a streamed reply) is live only: offered to subscribers
  as it comes but not numbered (it carries the id of the event before it, and its SSE frame
  has no ``id`` line) and never kept in the ring, so a resume or a ``follow=False`` history
  holds no fragments. One streamed reply is hundreds of fragments; numbered and kept, a few
  replies would push out of the ring the events a resuming client needs, while the reply they
  assemble is committed and read from the store (docs/host.md#streamed-fragments). In a
  subscriber's queue they count like any event: a client that cannot keep up loses the oldest
  and gets ``slow-client``, whose ``missedFrom`` names the first numbered event it lost.
* Host-wide events (``host.started``, ``host.stopping``, ``host.damaged``) carry an empty
  ``agentId``; a subscriber filtering by agent does not receive them.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Iterable
from typing import Literal

import anyio
import msgspec

from afp_runtime.loop import Event
from afp_runtime.records import ModelDelta

GapReason = Literal["slow-client", "restarted", "evicted"]

DEFAULT_RING_SIZE = 4_096
DEFAULT_SUBSCRIBER_BUFFER = 1_000


class StreamGap(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A marker: the subscriber missed events and should read durable state to catch up.

    Attributes:
        reason: ``slow-client``, ``restarted`` or ``evicted``.
        missed_from: the wire id of the first missed event, or the id the subscriber resumed
            from (wire ``missedFrom``).
        count: events dropped from this subscriber's queue (``slow-client`` only).
    """

    reason: GapReason
    missed_from: str | None = None
    count: int | None = None

    @property
    def type(self) -> str:
        """The event type the marker is sent as."""
        return "stream.gap"


Delivered = Event | StreamGap


class Subscription:
    """One subscriber's bounded view of the bus; an async iterator of events and markers.

    Registered when created, so nothing published afterwards is missed. Iteration ends when the
    bus closes or the subscription is closed. Use as a context manager to unregister.
    """

    def __init__(
        self,
        bus: EventBus,
        *,
        agent_ids: frozenset[str] | None,
        types: tuple[str, ...] | None,
        capacity: int,
    ) -> None:
        self._bus = bus
        self._agent_ids = agent_ids
        self._types = types
        self._capacity = capacity
        self._queue: deque[Delivered] = deque()
        # What a resume replays from the ring: delivered first, never dropped (the ring bounds it).
        self._backlog: deque[Delivered] = deque()
        self._dropped = 0
        self._first_dropped: str | None = None
        self._ready = anyio.Event()
        self._closed = False

    def matches(self, event: Event) -> bool:
        """Whether the subscriber's filters let ``event`` through."""
        if self._agent_ids is not None and event.agent_id not in self._agent_ids:
            return False
        return self._types is None or event.type.startswith(self._types)

    def offer(self, item: Delivered) -> None:
        """Queue an item without waiting; drop the oldest queued event when full."""
        if self._closed:
            return
        while len(self._queue) >= self._capacity:
            dropped = self._queue.popleft()
            if isinstance(dropped, Event):
                fragment = isinstance(dropped.payload, ModelDelta)
                if self._first_dropped is None and not fragment:
                    self._first_dropped = self._bus.wire_id(dropped.id)
                self._dropped += 1
        self._queue.append(item)
        self._ready.set()

    def replay(self, items: Iterable[Delivered]) -> None:
        """Queue a resume's replay ahead of live events, outside the queue bound."""
        self._backlog.extend(items)
        if self._backlog:
            self._ready.set()

    @property
    def pending(self) -> int:
        """Items queued and not yet read (markers and the replay included)."""
        return len(self._backlog) + len(self._queue)

    async def next(self) -> Delivered | None:
        """The next event or marker; None once the subscription or the bus is closed."""
        while True:
            if self._backlog:
                return self._backlog.popleft()
            if self._dropped:
                gap = StreamGap(
                    reason="slow-client", count=self._dropped, missed_from=self._first_dropped
                )
                self._dropped, self._first_dropped = 0, None
                return gap
            if self._queue:
                return self._queue.popleft()
            if self._closed:
                return None
            self._ready = anyio.Event()
            await self._ready.wait()

    def close(self) -> None:
        """Stop receiving; a waiting ``next`` returns None."""
        if not self._closed:
            self._closed = True
            self._bus.unsubscribe(self)
            self._ready.set()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Delivered:
        item = await self.next()
        if item is None:
            raise StopAsyncIteration
        return item

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventBus:
    """Fans events out to subscribers and keeps the most recent ones for resuming.

    Args:
        boot_id: this host's boot id (random when omitted); it prefixes wire ids.
        ring_size: recent events kept for ``Last-Event-ID`` resumes.
        subscriber_buffer: the default per-subscriber queue bound.
    """

    def __init__(
        self,
        *,
        boot_id: str | None = None,
        ring_size: int = DEFAULT_RING_SIZE,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
    ) -> None:
        if ring_size < 1 or subscriber_buffer < 1:
            raise ValueError("ring_size and subscriber_buffer must be >= 1")
        self.boot_id = boot_id or secrets.token_hex(6)
        self.subscriber_buffer = subscriber_buffer
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._subscribers: list[Subscription] = []
        self._last_id = 0
        self._closed = False

    @property
    def last_id(self) -> int:
        """The id of the last published event (0 before the first)."""
        return self._last_id

    def wire_id(self, seq: int) -> str:
        """The wire form ``<bootId>-<seq>`` of an event id."""
        return f"{self.boot_id}-{seq}"

    def publish(self, event: Event) -> None:
        """Number ``event`` for this host, remember it and offer it to every matching
        subscriber; never waits (an ``EventSink``). A reply's fragment is only offered."""
        if self._closed:
            return
        if isinstance(event.payload, ModelDelta):
            numbered = msgspec.structs.replace(event, id=self._last_id)
        else:
            self._last_id += 1
            numbered = msgspec.structs.replace(event, id=self._last_id)
            self._ring.append(numbered)
        for subscriber in list(self._subscribers):
            if subscriber.matches(numbered):
                subscriber.offer(numbered)

    def subscribe(
        self,
        *,
        agent_ids: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        last_event_id: str | None = None,
        buffer: int | None = None,
        follow: bool = True,
    ) -> Subscription:
        """A new subscription, optionally resuming after the wire id ``last_event_id``.

        Args:
            agent_ids: only events of these agents (None: every event).
            types: only events whose type starts with one of these prefixes (None: all).
            last_event_id: the last wire id the subscriber saw; what the ring holds after it
                is queued first (after a ``restarted``/``evicted`` marker when it cannot).
            buffer: the queue bound (default: the bus's ``subscriber_buffer``).
            follow: False for history only: what the ring holds after ``last_event_id`` (all
                of it without one), after which the subscription ends.
        """
        subscription = Subscription(
            self,
            agent_ids=frozenset(agent_ids) if agent_ids is not None else None,
            types=tuple(types) if types is not None else None,
            capacity=buffer or self.subscriber_buffer,
        )
        history: list[Delivered] | None = None
        if last_event_id is not None:
            history = self._replay(last_event_id)
        elif not follow:
            history = list(self._ring)
        if history is not None:
            subscription.replay(
                item
                for item in history
                if isinstance(item, StreamGap) or subscription.matches(item)
            )
        if self._closed or not follow:
            subscription.close()
        else:
            self._subscribers.append(subscription)
        return subscription

    def _replay(self, last_event_id: str) -> list[Delivered]:
        boot, _, seq_text = last_event_id.rpartition("-")
        # ASCII digits only: str.isdigit also takes "²", which int() refuses.
        if boot != self.boot_id or not (seq_text.isascii() and seq_text.isdigit()):
            return [StreamGap(reason="restarted", missed_from=last_event_id), *self._ring]
        seq = int(seq_text)
        oldest = self._ring[0].id if self._ring else self._last_id + 1
        if seq + 1 < oldest:
            return [StreamGap(reason="evicted", missed_from=last_event_id), *self._ring]
        return [event for event in self._ring if event.id > seq]

    def unsubscribe(self, subscription: Subscription) -> None:
        """Forget a subscription (its ``close`` calls this)."""
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def close(self) -> None:
        """End every subscription; later publishes reach nobody."""
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.close()
