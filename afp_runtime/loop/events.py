"""Events the loop emits while it works (docs/host.md#events): an envelope around one of the
typed payloads registered in ``afp_runtime.records.events``.

Events are emitted during a stage, before its commit: the commit log wins where they differ.
Delivery is in-process and never waits on a subscriber. With no sink an event is numbered but
not built, so a sink added later sees the ids it would have seen from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from afp_runtime._logging import get_logger
from afp_runtime.records import Event, EventPayload, Payload

log = get_logger()

P = TypeVar("P", bound=Payload)


EventSink = Callable[[Event], None]


class EventRecorder:
    """A sink that keeps every event in order (the CLI summary, tests)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: type[Payload]) -> list[Event]:
        """The events whose payload is a ``kind``, in order."""
        return [e for e in self.events if isinstance(e.payload, kind)]

    def payloads(self, kind: type[P]) -> list[P]:
        """The payloads of the events of one type, in order."""
        return [e.payload for e in self.events if isinstance(e.payload, kind)]


class Emitter:
    """Numbers events and hands them to sinks; a failing sink never stops the loop."""

    def __init__(self, sinks: list[EventSink] | None = None) -> None:
        self._sinks = list(sinks or [])
        self._next_id = 0

    def add(self, sink: EventSink) -> None:
        """Deliver future events to ``sink`` too."""
        self._sinks.append(sink)

    @property
    def listening(self) -> bool:
        """Whether any sink receives events (when none does, an event is only numbered)."""
        return bool(self._sinks)

    def skip(self) -> None:
        """Number an event nobody receives, so ids stay the same as if it had been built."""
        self._next_id += 1

    def emit(
        self,
        payload: EventPayload,
        *,
        at_ms: int,
        agent_id: str,
        run_id: str | None = None,
        turn: int | None = None,
        iteration: int | None = None,
        runtime_stage_id: str | None = None,
    ) -> None:
        """Emit one event (its type is its payload's) to every sink, with the envelope's
        context (docs/host.md#the-event-envelope)."""
        self._next_id += 1
        event = Event(
            id=self._next_id,
            at_ms=at_ms,
            agent_id=agent_id,
            payload=payload,
            run_id=run_id,
            turn=turn,
            iteration=iteration,
            runtime_stage_id=runtime_stage_id,
        )
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:
                log.exception("event sink failed", event_type=event.type)
