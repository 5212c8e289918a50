"""What a running tool sees: its clock port and its call context.

The ``tools`` layer may not import ``records`` (where the shared Clock port lives), so it declares
the small structural Protocol it needs here
(docs/architecture.md#decision-6-imports-between-layers-follow-fixed-arrows). Any clock
with ``now_ms``, ``sleep`` and ``fail_after`` fits, the host's system clock and the fake clock
alike.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, Protocol

import msgspec


class AskedSpan(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """``ctx.time.asked``: the row's ``asked``, always half-open
    (docs/time.md#the-time-a-tool-sees).

    Attributes:
        start: wire ``from``, as written in the row.
        end: wire ``to``, as written in the row.
        edge: always ``exclusive``.
    """

    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")
    edge: Literal["exclusive"] = "exclusive"


class ToolTime(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The time a tool sees on its context (``ctx.time``, docs/time.md#the-time-a-tool-sees).

    Wire: ``{version: 1, asked?: {from, to, edge: "exclusive"}, zone, now, dispatchedAt,
    zoneUnknown?: true}``.

    Attributes:
        version: the shape's version, 1 (always written).
        zone: the turn's clock zone (``"UTC"`` when the zone is unknown).
        now: the turn's clock ``now`` as filed.
        dispatched_at: the ``call`` row's ``dispatchedAt`` (wire ``dispatchedAt``).
        asked: copied from the latest ``call-window`` row; absent when it has none.
        zone_unknown: the clock's ``zoneSource`` is ``unknown`` (wire ``zoneUnknown``).
    """

    version: int
    zone: str
    now: str
    dispatched_at: str
    asked: AskedSpan | None = None
    zone_unknown: bool = False


QUESTION_LIMIT = 4_096
"""Most code points of a question a tool may ask the person."""


class PersonAsked(BaseException):
    """Raised by ``ToolContext.ask_person``: the call pauses the turn with ``question``.

    A ``BaseException`` so a tool's own ``except Exception`` cannot swallow the pause; the
    dispatcher catches it around the tool function and nowhere else.
    """

    def __init__(self, question: str) -> None:
        super().__init__(question)
        self.question = question


ProgressSink = Callable[[Any], None]
"""Receives a tool's progress payloads (the loop turns them into ``tool.progress`` events)."""


class ToolClock(Protocol):
    """The clock a tool call runs under; every tool deadline goes through it
    (docs/architecture.md#decision-7-every-deadline-goes-through-the-clock)."""

    def now_ms(self) -> int:
        """Current time on this clock, epoch milliseconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` on this clock."""
        ...

    def fail_after(self, seconds: float) -> AbstractContextManager[Any]:
        """A scope that cancels its body and raises TimeoutError once ``seconds`` pass."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The context handed to a tool function with its arguments.

    A plain frozen dataclass rather than a ``msgspec.Struct``: it holds a clock and a callback and
    is never encoded.

    Attributes:
        tool_call_id: the id of the call being run (wire ``toolCallId``).
        tool_name: the name of the tool being run.
        agent_id: the agent the call belongs to.
        run_id: the run the call belongs to.
        turn: the turn number within the agent.
        iteration: the iteration number within the turn.
        clock: the clock the call runs under; tools sleep on it, never on the wall clock.
        on_progress: where ``progress`` payloads go; ``None`` drops them.
        time: the call's time (``ToolTime``: the asked range, the turn's zone and clock, when
            the call was dispatched), present only for a call with a ``call-window`` row in
            this turn (docs/time.md#the-time-a-tool-sees); a tool declaring ``filtersToAsked`` must
            keep its output within ``time.asked``.
    """

    tool_call_id: str
    tool_name: str
    agent_id: str
    run_id: str
    turn: int
    iteration: int
    clock: ToolClock
    on_progress: ProgressSink | None = None
    time: ToolTime | None = None

    def progress(self, payload: Any) -> None:
        """Report progress of the call (a JSON-able payload); a no-op without a sink.

        Safe from an async tool and from a plain ``def`` tool in its worker thread: the
        dispatcher hands a sync tool a context whose sink hops back to the event loop.
        """
        if self.on_progress is not None:
            self.on_progress(payload)

    def ask_person(self, question: str) -> NoReturn:
        """Pause the turn and ask the person ``question`` (docs/host.md#check-ins); never returns.

        The tool is not invoked again: after the answer, the call's result is the person's
        reply, framed as such. Works from async and from sync (worker thread) tools.

        Raises:
            PersonAsked: always (the dispatcher turns it into a pause).
            ValueError: ``question`` is not a str of 1 to 4,096 code points (the call then
                fails like any tool error).
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("ask_person needs a non-empty question text")
        if len(question) > QUESTION_LIMIT:
            raise ValueError(
                f"ask_person's question holds {len(question)} code points; at most "
                f"{QUESTION_LIMIT:,} are allowed"
            )
        raise PersonAsked(question)
