"""An agent's schedules, the use cases every door calls (docs/host.md#schedules): list them with
their marks, set one, remove one, pause and resume one; and the embedded store's delivery.
A door checks nothing of its own and only renders: a schedule is checked here (named fields),
and an agent or schedule that does not exist is ``NotFound`` naming what does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.agents import (
    SCHEDULE_SOURCES,
    DeliveredSchedule,
    deliver_due_schedules,
    schedule_entry,
    stored_schedule,
    sync_declared,
    zones_loaded,
)
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.schedules import Schedule, check_schedule, decode_schedule, due_text, next_due
from afp_runtime.store import ScheduleEntry, ScheduleRow, Store

__all__ = [
    "ScheduleView",
    "deliver_schedules",
    "due_text",
    "list_schedules",
    "pause_schedule",
    "remove_schedule",
    "resume_schedule",
    "set_schedule",
]


class ScheduleView(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One schedule of an agent as the doors show it.

    Attributes:
        agent_id: the agent (wire ``agentId``).
        name: the schedule's name; its messages come from ``schedule:NAME``.
        schedule: the definition (``at``/``cron``/``every``, ``zone``, ``catchUp``, ``text``);
            None when the stored row does not read (``damaged`` says why).
        source: ``declared``, ``api``, ``cli``, ``python``, ``inspector`` or
            ``model``.
        paused: a paused schedule delivers nothing until resumed.
        delivered: messages delivered so far.
        anchor_ms: when it was set (interval forms count from it; wire ``anchorMs``).
        next_due_ms: the next due instant; absent when paused or finished (wire ``nextDueMs``).
        last_due_ms: the latest due instant handled (delivered or skipped by the catch-up
            rule); absent while none has come since it was set (wire ``lastDueMs``).
        created_at_ms / updated_at_ms: when the row was first written and last changed.
        damaged: why the stored definition does not read, for a damaged row.
    """

    agent_id: str
    name: str
    source: str
    paused: bool
    delivered: int
    anchor_ms: int
    created_at_ms: int
    updated_at_ms: int
    schedule: Schedule | None = None
    next_due_ms: int | None = None
    last_due_ms: int | None = None
    damaged: str | None = None


def view_of(row: ScheduleRow) -> ScheduleView:
    """The view of a stored row (a damaged definition says so instead of raising)."""
    schedule: Schedule | None = None
    damaged: str | None = None
    try:
        schedule = stored_schedule(row)
    except InvalidValue as exc:
        damaged = str(exc)
    return ScheduleView(
        agent_id=row.agent_id,
        name=row.name,
        source=row.source,
        paused=row.paused,
        delivered=row.delivered,
        anchor_ms=row.anchor_ms,
        created_at_ms=row.created_at_ms,
        updated_at_ms=row.updated_at_ms,
        schedule=schedule,
        next_due_ms=row.next_due_ms,
        last_due_ms=None if row.last_due_ms == row.anchor_ms else row.last_due_ms,
        damaged=damaged,
    )


async def _known_agent(store: Store, agent_id: str) -> None:
    if await store.conversation_state(agent_id) is None:
        known = sorted(row.agent_id for row in await store.agents())
        raise NotFound(
            f"no agent {agent_id!r} in {store.location}; the agents are: "
            f"{', '.join(known) if known else 'none'}",
            what="agent",
            value=agent_id,
        )


async def _row(store: Store, agent_id: str, name: str) -> ScheduleRow:
    rows = await store.schedules(agent_id)
    for row in rows:
        if row.name == name:
            return row
    await _known_agent(store, agent_id)
    names = ", ".join(repr(row.name) for row in rows) or "none"
    raise NotFound(
        f"agent {agent_id!r} has no schedule {name!r}; its schedules are: {names}",
        what="schedule",
        value=name,
    )


async def list_schedules(store: Store, agent_id: str) -> list[ScheduleView]:
    """The agent's schedules by name, with their marks.

    Raises:
        NotFound: the store holds no such agent (the message names those it holds).
    """
    rows = await store.schedules(agent_id)
    if not rows:
        await _known_agent(store, agent_id)
    return [view_of(row) for row in rows]


def checked(value: Schedule | Mapping[str, Any] | bytes) -> Schedule:
    """A schedule from a door: an ``afp.schedule`` value, or its wire form (JSON bytes or a
    mapping), checked strictly.

    Raises:
        InvalidValue: a field is wrong (named: ``name``, ``every``, ``zone``, ``catchUp``…).
    """
    if isinstance(value, Schedule):
        return check_schedule(value)
    return decode_schedule(value)


async def set_schedule(
    store: Store,
    agent_id: str,
    value: Schedule | Mapping[str, Any] | bytes,
    *,
    source: str,
    now_ms: int,
) -> ScheduleView:
    """Create the schedule, or replace the agent's schedule of that name: anchored at
    ``now_ms``, so nothing of an earlier definition is caught up. A host running the agent
    sees it at its next look (at once through ``Host.wake``).

    Raises:
        InvalidValue: the schedule is wrong (the field named), or ``source`` is unknown.
        NotFound: the store holds no such agent.
    """
    if source not in SCHEDULE_SOURCES:
        raise InvalidValue(
            f"source must be one of {', '.join(SCHEDULE_SOURCES)}, not {source!r}", field="source"
        )
    schedule = checked(value)
    await _known_agent(store, agent_id)
    await zones_loaded([schedule])
    row = await store.put_schedule(
        agent_id, schedule_entry(schedule, source=source, now_ms=now_ms), now_ms=now_ms
    )
    return view_of(row)


async def remove_schedule(store: Store, agent_id: str, name: str) -> None:
    """Remove the agent's schedule; a message it delivered already stays in the inbox.

    Raises:
        NotFound: no such agent, or no schedule of that name (the message names its
            schedules).
    """
    if not await store.remove_schedule(agent_id, name):
        await _row(store, agent_id, name)


async def pause_schedule(store: Store, agent_id: str, name: str, *, now_ms: int) -> ScheduleView:
    """Pause the schedule: it delivers nothing, due instants passing meanwhile included.

    Raises:
        NotFound: as ``remove_schedule``.
    """
    row = await _row(store, agent_id, name)
    if row.paused:
        return view_of(row)
    entry = _entry(row, paused=True, last_due_ms=row.last_due_ms, next_due_ms=None)
    return view_of(await store.put_schedule(agent_id, entry, now_ms=now_ms))


async def resume_schedule(store: Store, agent_id: str, name: str, *, now_ms: int) -> ScheduleView:
    """Resume a paused schedule from ``now_ms``: what came due while it was paused is not
    delivered; interval forms keep their anchor.

    Raises:
        NotFound: as ``remove_schedule``.
        InvalidValue: the stored definition does not read (set it again).
    """
    row = await _row(store, agent_id, name)
    if not row.paused:
        return view_of(row)
    schedule = stored_schedule(row)
    await zones_loaded([schedule])
    following = next_due(schedule, after_ms=now_ms, anchor_ms=row.anchor_ms)
    entry = _entry(row, paused=False, last_due_ms=now_ms, next_due_ms=following)
    return view_of(await store.put_schedule(agent_id, entry, now_ms=now_ms))


def _entry(
    row: ScheduleRow, *, paused: bool, last_due_ms: int, next_due_ms: int | None
) -> ScheduleEntry:
    return ScheduleEntry(
        name=row.name,
        definition=row.definition,
        source=row.source,
        anchor_ms=row.anchor_ms,
        last_due_ms=last_due_ms,
        next_due_ms=next_due_ms,
        paused=paused,
    )


async def deliver_schedules(
    store: Store,
    agent_id: str,
    declared: Sequence[Schedule],
    *,
    now_ms: int,
    new_id: Callable[[], str],
) -> list[DeliveredSchedule]:
    """The embedded store's delivery at ``work()``: the agent's declared schedules synced, then
    what is due at ``now_ms`` delivered (as a host delivers it, one commit each)."""
    await sync_declared(store, agent_id, declared, now_ms=now_ms)
    return await deliver_due_schedules(store, [agent_id], now_ms=now_ms, new_id=new_id)
