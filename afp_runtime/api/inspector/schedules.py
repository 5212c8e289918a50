"""An agent's schedules on its timeline (docs/inspector.md#schedules): rows to show (the form in
words, zone, next and last due in the schedule's zone and UTC, source, paused) and the pause,
resume and remove forms, each one use case of ``afp_runtime.app`` as the API's are."""

from __future__ import annotations

from typing import Any

from afp_runtime.api._context import ApiContext
from afp_runtime.api._params import AGENT_ID
from afp_runtime.api.principals import Principal
from afp_runtime.api.schedule_views import dues_shown, form_words
from afp_runtime.app import (
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
)
from afp_runtime.errors import InvalidValue, NotFound, NotOwner
from afp_runtime.store import check_owner

__all__ = ["ACTIONS", "schedule_action", "schedule_rows"]

ACTIONS = ("pause", "resume", "remove")


async def schedule_rows(ctx: ApiContext, agent_id: str) -> dict[str, Any]:
    """The template's ``schedules``: one row per schedule, by name."""
    views = await list_schedules(ctx.reader, agent_id)
    dues = await dues_shown(views)
    rows = []
    for view, (next_due, last_due) in zip(views, dues, strict=True):
        zone = view.schedule.zone if view.schedule is not None else "UTC"
        rows.append(
            {
                "name": view.name,
                "form": form_words(view),
                "zone": zone,
                "next": next_due or "—",
                "last": last_due or "—",
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
