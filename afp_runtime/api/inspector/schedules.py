"""An agent's schedules on its timeline (docs/inspector.md#schedules): rows to show (the form in
words, zone, next and last due in the schedule's zone and UTC, source, paused) and the pause,
resume and remove forms, each one use case of ``afp_runtime.app`` as the API's are."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from afp_runtime.agents import zones_loaded
from afp_runtime.api._context import ApiContext
from afp_runtime.api._params import AGENT_ID
from afp_runtime.api.principals import Principal
from afp_runtime.app import (
    ScheduleView,
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
)
from afp_runtime.errors import InvalidValue, NotFound, NotOwner
from afp_runtime.store import check_owner
from afp_runtime.time import load_zone

__all__ = ["ACTIONS", "schedule_action", "schedule_rows"]

ACTIONS = ("pause", "resume", "remove")


def _form(view: ScheduleView) -> str:
    schedule = view.schedule
    if schedule is None:
        return "damaged"
    if schedule.every is not None:
        return f"every {schedule.every}"
    if schedule.cron is not None:
        return f"cron {schedule.cron}"
    return f"once at {schedule.at}"


def _instant(ms: int | None, zone: str) -> str:
    if ms is None:
        return "—"
    utc = datetime.fromtimestamp(ms / 1000, UTC)
    local = utc.astimezone(load_zone(zone))
    shown = f"{local:%Y-%m-%d %H:%M} {zone}"
    return shown if zone == "UTC" else f"{shown} ({utc:%Y-%m-%d %H:%M} UTC)"


async def schedule_rows(ctx: ApiContext, agent_id: str) -> dict[str, Any]:
    """The template's ``schedules``: one row per schedule, by name."""
    views = await list_schedules(ctx.reader, agent_id)
    await zones_loaded([view.schedule for view in views if view.schedule is not None])
    rows = []
    for view in views:
        zone = view.schedule.zone if view.schedule is not None else "UTC"
        rows.append(
            {
                "name": view.name,
                "form": _form(view),
                "zone": zone,
                "next": _instant(view.next_due_ms, zone),
                "last": _instant(view.last_due_ms, zone),
                "source": view.source,
                "paused": view.paused,
                "delivered": view.delivered,
                "text": view.schedule.text if view.schedule is not None else view.damaged or "",
            }
        )
    return {"schedules": rows}


async def schedule_action(
    ctx: ApiContext, agent_id: str, name: str, action: str, *, principal: Principal | None
) -> tuple[int, str | None]:
    """Pause, resume or remove the schedule: ``(303, None)`` when done, else the status the API
    would give and a sentence for the person. A user principal must own the conversation."""
    if action not in ACTIONS:
        return 404, f"There is no “{action[:40]}” for a schedule."
    if AGENT_ID.fullmatch(name) is None:
        return 404, "This agent has no such schedule."
    try:
        if principal is not None and not principal.admin:
            check_owner(await ctx.reader.owner(agent_id), agent_id, principal.name)
        now_ms = ctx.host.clock.now_ms()
        if action == "pause":
            await pause_schedule(ctx.host.store, agent_id, name, now_ms=now_ms)
        elif action == "resume":
            await resume_schedule(ctx.host.store, agent_id, name, now_ms=now_ms)
        else:
            await remove_schedule(ctx.host.store, agent_id, name)
    except NotOwner:
        return 403, "This conversation belongs to someone else; its schedules are theirs."
    except NotFound as exc:
        return 404, exc.message
    except InvalidValue as exc:
        return 409, f"This schedule cannot be resumed: {exc.message}"
    ctx.host.wake(agent_id)
    return 303, None
