"""An agent's schedules on its timeline (docs/inspector.md#schedules): rows to show (the form in
words, zone, next and last due in the schedule's zone and UTC, source, paused), the form that
sets one, and the pause, resume and remove forms, each one use case of ``afp_runtime.app`` as
the API's are."""

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
    set_schedule,
)
from afp_runtime.errors import InvalidValue, NotFound, NotOwner, shown
from afp_runtime.store import check_owner

__all__ = [
    "ACTIONS",
    "FORMS",
    "SetOutcome",
    "schedule_action",
    "schedule_rows",
    "set_from_form",
]

ACTIONS = ("pause", "resume", "remove")
FORMS = ("every", "cron", "at")
"""The set form's ``form`` choices: each names the wire field its one ``value`` goes to."""


class SetOutcome:
    """What became of the set form: an HTTP status, a sentence for the person (None: done),
    the wire field refused (None when it was no one field) and the form's values to show
    again."""

    def __init__(
        self, status: int, problem: str | None, field: str | None, values: dict[str, str]
    ) -> None:
        self.status = status
        self.problem = problem
        self.field = field
        self.values = values


def _zone_default(ctx: ApiContext, agent_id: str) -> str:
    """The agent's own zone (its time layer's) when this host runs it with one, else UTC."""
    profile = ctx.host.profile(agent_id)
    return profile.time_zone if profile is not None and profile.time_zone else "UTC"


def _blank(ctx: ApiContext, agent_id: str) -> dict[str, str]:
    return {
        "name": "",
        "text": "",
        "form": "every",
        "value": "",
        "zone": _zone_default(ctx, agent_id),
        "catchUp": "latest",
    }


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
    return {"schedules": rows, "set_values": _blank(ctx, agent_id), "set_field": None}


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


async def set_from_form(
    ctx: ApiContext, agent_id: str, fields: dict[str, str], *, principal: Principal | None
) -> SetOutcome:
    """Create or replace the schedule the set form describes, as ``PUT …/schedules/NAME``
    does but with source ``inspector``: ``303`` when done, else the API's status with the
    refusal (the field named as ``InvalidValue`` names it) and the person's input kept."""
    values = {key: fields.get(key, default) for key, default in _blank(ctx, agent_id).items()}
    form = values["form"]
    if form not in FORMS:
        problem = f"form: {shown(form)} is not a schedule form (one of {', '.join(FORMS)})"
        return SetOutcome(422, problem, "form", {**values, "form": "every"})
    wire = {
        "name": values["name"],
        "text": values["text"],
        form: values["value"],
        "zone": values["zone"].strip() or _zone_default(ctx, agent_id),
        "catchUp": values["catchUp"],
    }
    try:
        if principal is not None and not principal.admin:
            check_owner(await ctx.reader.owner(agent_id), agent_id, principal.name)
        await set_schedule(
            ctx.host.store, agent_id, wire, source="inspector", now_ms=ctx.host.clock.now_ms()
        )
    except NotOwner:
        problem = "This conversation belongs to someone else; its schedules are theirs."
        return SetOutcome(403, problem, None, values)
    except NotFound as exc:
        return SetOutcome(404, exc.message, None, values)
    except InvalidValue as exc:
        field = exc.context.get("field")
        return SetOutcome(422, exc.message, field if isinstance(field, str) else None, values)
    ctx.host.wake(agent_id)
    return SetOutcome(303, None, None, values)
