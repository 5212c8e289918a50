"""The built-in ``scheduleWakeup`` tool as a loop extension
(docs/schedules.md#the-schedulewakeup-tool): an agent with ``scheduleWakeup = true`` is offered
the tool; a call sets a durable once schedule (source ``model``) in the run's store and files a
``schedule`` ledger row naming it.

The tool's pure half (schema, arguments to a ``Schedule``) is ``afp_runtime.schedules``; here
are its door: the agent's tool entry, the run-bound function that writes the schedule, the
bound on what the model may hold, and the ledger row.

Crash safety: the schedule is written by the call, before the call's result is committed; a
call run again after a crash (same tool call id) sets the same name again, and setting a name
is an upsert, so a crash never leaves two schedules for one call. Without a ``name`` argument
the name is made from the tool call id for that reason.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import anyio.to_thread
import msgspec

from afp_runtime.agents.builtin_tools import BoundToolRun
from afp_runtime.agents.schedules import schedule_entry
from afp_runtime.errors import InvalidValue, StateError
from afp_runtime.extensions import RunStart
from afp_runtime.records import LedgerRowBase, register_ledger_row
from afp_runtime.schedules import WAKEUP_TOOL, wakeup_schedule
from afp_runtime.store import ScheduleRow
from afp_runtime.time import load_zone
from afp_runtime.tools import Tool, ToolContext

WAKEUP_LIMIT: Final = 20
"""How many model-set schedules still to fire an agent may hold at once."""
_CALL_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,56}")


class WakeupRow(LedgerRowBase, frozen=True, kw_only=True, tag="schedule"):
    """A wake-up the model set with ``scheduleWakeup`` (docs/schedules.md#the-schedulewakeup-tool).

    Attributes:
        turn: the turn of the call.
        tool_call_id: the call (wire ``toolCallId``).
        name: the schedule's name; it delivers as ``schedule:NAME``.
        text: the text it delivers.
        due_ms: when it fires (wire ``dueMs``), epoch milliseconds.
        zone: the zone it was read in.
    """

    turn: int
    tool_call_id: str
    name: str
    text: str
    due_ms: int
    zone: str


register_ledger_row(WakeupRow)


async def _not_bound(args: Any, ctx: ToolContext) -> str:
    raise StateError("scheduleWakeup runs only inside a run of its agent, with its store")


WAKEUP_ENTRY: Final = Tool(
    name=WAKEUP_TOOL.name,
    description=WAKEUP_TOOL.description,
    input_schema=dict(WAKEUP_TOOL.input_schema),
    fn=_not_bound,
    idempotent=True,
)
"""The agent's tool entry (served and planned as any tool); each run binds it to its store."""


class WakeupExtension:
    """The ``scheduleWakeup`` switch of an agent: its zone (the time table's, else UTC)."""

    name = "scheduleWakeup"

    def __init__(self, zone: str | None) -> None:
        self.zone = zone or "UTC"

    def shape(self) -> Any:
        return {"zone": self.zone, "limit": WAKEUP_LIMIT}

    def start(self, run: RunStart) -> WakeupRun:
        return WakeupRun(self.zone, run)


class WakeupRun(BoundToolRun):
    """One run: the tool bound to the run's store."""

    entry = WAKEUP_ENTRY

    async def _call(self, args: Any, ctx: ToolContext) -> str:
        put = getattr(self.store, "put_schedule", None)
        listed = getattr(self.store, "schedules", None)
        if put is None or listed is None:
            raise StateError("this run's store keeps no schedules")
        arguments = dict(args) if isinstance(args, Mapping) else args
        if isinstance(arguments, dict) and arguments.get("name") is None:
            arguments["name"] = call_name(ctx.tool_call_id)
        # A first use of a zone reads the zone database: off the event loop.
        await anyio.to_thread.run_sync(load_zone, self.zone)
        now = ctx.clock.now_ms()
        schedule = wakeup_schedule(arguments, now_ms=now, zone=self.zone)
        held: list[ScheduleRow] = await listed(self.agent_id)
        _check_room(held, schedule.name)
        entry = schedule_entry(schedule, source="model", now_ms=now)
        row: ScheduleRow = await put(self.agent_id, entry, now_ms=now)
        due = row.next_due_ms if row.next_due_ms is not None else now
        self.rows.append(
            msgspec.to_builtins(
                WakeupRow(
                    turn=ctx.turn,
                    tool_call_id=ctx.tool_call_id,
                    name=schedule.name,
                    text=schedule.text,
                    due_ms=due,
                    zone=self.zone,
                )
            )
        )
        return (
            f"Set: at {_local_text(due, self.zone)} ({_utc_text(due)}) you will receive your "
            f"text as a message from schedule:{schedule.name}."
        )


def call_name(tool_call_id: str) -> str:
    """The schedule name made from a tool call id: ``wakeup-`` and the id when it is a valid
    name already, else ``wakeup-`` and 12 hex digits of its SHA-256 (the same for the same id,
    so a call run again after a crash replaces its own schedule)."""
    if _CALL_NAME.fullmatch(tool_call_id):
        return f"wakeup-{tool_call_id}"
    return f"wakeup-{hashlib.sha256(tool_call_id.encode()).hexdigest()[:12]}"


def _check_room(held: list[ScheduleRow], name: str) -> None:
    """Refuse a schedule the model may not set: a name a person's schedule has, or one past the
    bound (a name the model set already is replaced and takes no more room)."""
    same = next((row for row in held if row.name == name), None)
    if same is not None and same.source != "model":
        raise InvalidValue(
            f"name: {name!r} is a schedule set by your owner ({same.source}); choose another name",
            field="name",
        )
    pending = [r for r in held if r.source == "model" and r.next_due_ms is not None]
    if same is None and len(pending) >= WAKEUP_LIMIT:
        raise InvalidValue(
            f"you hold {len(pending)} wake-ups still to fire, the most allowed "
            f"({WAKEUP_LIMIT}); set a name you used before to replace one instead",
            field="name",
        )


def _aware(ms: int, zone: str) -> datetime:
    return datetime.fromtimestamp(ms // 1000, tz=UTC).astimezone(load_zone(zone))


def _local_text(ms: int, zone: str) -> str:
    return f"{_aware(ms, zone).strftime('%Y-%m-%d %H:%M')} {zone}"


def _utc_text(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms // 1000, tz=UTC).strftime('%Y-%m-%d %H:%M')} UTC"
