"""An agent's schedules over the store port (docs/host.md#schedules): declared ones checked and
synced, and the due ones delivered. What is due when is the pure ``afp_runtime.schedules``;
this module moves its answers into the store, for the host and the embedded store alike."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio.to_thread
import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import AgentDefinitionError, InvalidValue, shown
from afp_runtime.schedules import Schedule, check_schedule, decode_schedule, next_due, plan_delivery
from afp_runtime.store import Ack, ScheduleEntry, ScheduleRow, ScheduleStore
from afp_runtime.time import load_zone

__all__ = [
    "SCHEDULE_SOURCES",
    "DeliveredSchedule",
    "check_declared_schedules",
    "deliver_due_schedules",
    "schedule_entry",
    "stored_schedule",
    "schedule_wire",
    "sync_declared",
    "zones_loaded",
]

log = get_logger()

SCHEDULE_SOURCES = ("declared", "api", "cli", "python", "inspector", "model")
"""Where a stored schedule came from: the agent's declaration (TOML or ``afp.Agent``), a door
at run time (the inspector's form among them), or the model's own ``scheduleWakeup`` tool."""


class DeliveredSchedule(msgspec.Struct, frozen=True, kw_only=True):
    """What one delivering commit posted of a schedule: its fresh messages (``(due_ms, ack)``;
    an instant posted before is left out) and how many missed instants the catch-up rule
    dropped."""

    agent_id: str
    name: str
    text: str
    acks: tuple[tuple[int, Ack], ...]
    skipped: int


def schedule_wire(schedule: Schedule) -> dict[str, Any]:
    """A schedule's wire form, as the store keeps it."""
    wire: dict[str, Any] = msgspec.to_builtins(schedule)
    return wire


def check_declared_schedules(key: str, value: Any) -> tuple[Schedule, ...]:
    """The ``schedules`` option: ``afp.schedule`` values (or their wire form, as a file gives
    them), checked, names unique.

    Raises:
        AgentDefinitionError: an entry is wrong; the field names it (``schedules[1].every``).
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise AgentDefinitionError(
            f"{key} must be a list of schedules, not {shown(value)}", field=key
        )
    kept: list[Schedule] = []
    for index, item in enumerate(value):
        at = f"{key}[{index}]"
        try:
            if isinstance(item, Schedule):
                kept.append(check_schedule(item))
            elif isinstance(item, Mapping):
                kept.append(decode_schedule(item))
            else:
                raise InvalidValue(f"a schedule, not {shown(item)}")
        except InvalidValue as exc:
            field = exc.context.get("field")
            path = f"{at}.{field}" if isinstance(field, str) else at
            # The pure layer's messages lead with their field ("every: …"): the path takes its
            # place, so a file's error reads "agents[0].schedules[1].every: …".
            words = exc.message
            if isinstance(field, str) and words.startswith(f"{field}: "):
                words = words.removeprefix(f"{field}: ")
            raise AgentDefinitionError(f"{path}: {words}", field=path) from exc
        if kept[-1].name in {s.name for s in kept[:-1]}:
            raise AgentDefinitionError(
                f"two schedules are named {kept[-1].name!r}; schedule names must be unique",
                field=f"{at}.name",
            )
    return tuple(kept)


async def zones_loaded(schedules: Iterable[Schedule]) -> None:
    """Load the schedules' zones in a worker thread (a first use reads the zone database), so
    working out due instants after it never reads a file on the event loop."""
    zones = sorted({schedule.zone for schedule in schedules})
    if zones:
        await anyio.to_thread.run_sync(lambda: [load_zone(zone) for zone in zones])


def schedule_entry(
    schedule: Schedule, *, source: str, now_ms: int, paused: bool = False
) -> ScheduleEntry:
    """The row of a schedule set at ``now_ms``: anchored there, nothing before it due (its zone
    loaded already: ``zones_loaded``)."""
    return ScheduleEntry(
        name=schedule.name,
        definition=schedule_wire(schedule),
        source=source,
        anchor_ms=now_ms,
        last_due_ms=now_ms,
        next_due_ms=None if paused else next_due(schedule, after_ms=now_ms, anchor_ms=now_ms),
        paused=paused,
    )


def stored_schedule(row: ScheduleRow) -> Schedule:
    """The schedule a stored row holds.

    Raises:
        InvalidValue: the stored definition does not read (a damaged row).
    """
    return decode_schedule(row.definition)


async def sync_declared(
    store: ScheduleStore, agent_id: str, declared: Sequence[Schedule], *, now_ms: int
) -> None:
    """Bring the agent's stored schedules in line with its declaration (at host start, at
    ``afp.open``'s ``work``): a new or changed declared schedule is set anew, anchored at
    ``now_ms`` (nothing of its old definition is caught up); an unchanged one is left alone,
    its marks and a pause kept; a declared one no longer declared is removed. Schedules set at
    run time stay; a declared schedule of the same name replaces one."""
    rows = {row.name: row for row in await store.schedules(agent_id)}
    await zones_loaded(declared)
    for schedule in declared:
        row = rows.get(schedule.name)
        if (
            row is not None
            and row.source == "declared"
            and row.definition == schedule_wire(schedule)
        ):
            continue
        entry = schedule_entry(schedule, source="declared", now_ms=now_ms)
        await store.put_schedule(agent_id, entry, now_ms=now_ms)
        log.info("declared schedule set", agent_id=agent_id, schedule=schedule.name)
    names = {schedule.name for schedule in declared}
    for row in rows.values():
        if row.source == "declared" and row.name not in names:
            await store.remove_schedule(agent_id, row.name)
            log.info("declared schedule removed", agent_id=agent_id, schedule=row.name)


async def deliver_due_schedules(
    store: ScheduleStore,
    agent_ids: Sequence[str],
    *,
    now_ms: int,
    new_id: Callable[[], str],
) -> list[DeliveredSchedule]:
    """Deliver every due schedule of ``agent_ids`` at ``now_ms``, each in its own commit; what
    another host delivered first (the compare-and-set refused it) is left out."""
    done: list[DeliveredSchedule] = []
    for row in await store.due_schedules(agent_ids, now_ms=now_ms):
        delivered = await _deliver(store, row, now_ms=now_ms, new_id=new_id)
        if delivered is not None:
            done.append(delivered)
    return done


async def _deliver(
    store: ScheduleStore, row: ScheduleRow, *, now_ms: int, new_id: Callable[[], str]
) -> DeliveredSchedule | None:
    try:
        schedule = stored_schedule(row)
    except InvalidValue as exc:
        # A damaged row is parked (no next due instant), never retried in a loop nor raised.
        log.error(
            "a stored schedule does not read; it is not delivered until set again",
            agent_id=row.agent_id,
            schedule=row.name,
            error=str(exc),
        )
        await store.deliver_schedule(
            row.agent_id,
            row.name,
            revision=row.revision,
            due=(),
            text="",
            through_ms=row.last_due_ms,
            next_due_ms=None,
            now_ms=now_ms,
        )
        return None
    await zones_loaded([schedule])
    plan = plan_delivery(schedule, last_ms=row.last_due_ms, now_ms=now_ms, anchor_ms=row.anchor_ms)
    through = max(plan.through_ms, row.last_due_ms)
    following = plan.next_ms
    if following is not None and following <= now_ms and not plan.deliver and not plan.skipped:
        # A plan that moved nothing would be found due again at once, for ever: go on from
        # now. (Under ``all`` a next instant at or before now with progress made is the rest
        # of a long catch-up, delivered by the next round.)
        following = next_due(schedule, after_ms=now_ms, anchor_ms=row.anchor_ms)
    result = await store.deliver_schedule(
        row.agent_id,
        row.name,
        revision=row.revision,
        due=[(due_ms, new_id()) for due_ms in plan.deliver],
        text=schedule.text,
        through_ms=through,
        next_due_ms=following,
        now_ms=now_ms,
    )
    if result is None:
        return None
    fresh = tuple((due_ms, ack) for due_ms, ack in result.acks if not ack.duplicate)
    log.info(
        "schedule delivered",
        agent_id=row.agent_id,
        schedule=row.name,
        due_ms=[due_ms for due_ms, _ in fresh],
        skipped=plan.skipped_count,
        next_due_ms=following,
    )
    return DeliveredSchedule(
        agent_id=row.agent_id,
        name=row.name,
        text=schedule.text,
        acks=fresh,
        skipped=plan.skipped_count,
    )
