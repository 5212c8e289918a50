"""Events the loop emits while it works (docs/host.md#events): an envelope and a type-tagged
payload.

Events are emitted during a stage, before its commit: the commit log wins where they differ.
Delivery is in-process and never waits on a subscriber. With no sink an event is numbered but
not built, so a sink added later sees the ids it would have seen from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from afp_runtime._logging import get_logger

log = get_logger()


class Event(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One event: a per-emitter increasing ``id``, its ``type``, time and context."""

    id: int
    type: str
    at_ms: int
    agent_id: str
    payload: dict[str, Any]
    run_id: str | None = None
    turn: int | None = None
    iteration: int | None = None
    runtime_stage_id: str | None = None


EventSink = Callable[[Event], None]


class EventRecorder:
    """A sink that keeps every event in order (the CLI summary, tests)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: str) -> list[Event]:
        """The events of one type, in order."""
        return [e for e in self.events if e.type == kind]


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
        self, kind: str, *, at_ms: int, agent_id: str, payload: dict[str, Any], **ctx: Any
    ) -> None:
        """Emit one event to every sink."""
        self._next_id += 1
        event = Event(
            id=self._next_id, type=kind, at_ms=at_ms, agent_id=agent_id, payload=payload, **ctx
        )
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:
                log.exception("event sink failed", event_type=kind)
