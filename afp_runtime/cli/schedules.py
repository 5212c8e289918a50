"""``afp schedules``: list an agent's schedules, and set, remove, pause or resume one
(docs/api.md#command-reference). Each action is one use case of ``afp_runtime.app`` (the
API's too); like ``afp send``, a write goes to the store directly and a host running the agent
sees it at its next look. ``--json`` prints the API's body."""

from __future__ import annotations

import time
from typing import Any

from afp_runtime.api.schedule_views import dues_shown, form_words
from afp_runtime.app import (
    ScheduleView,
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
    set_schedule,
)
from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import add_row, print_json, say, show_table, table
from afp_runtime.cli.reads import opened, reader

_FORMS = ("at", "cron", "every")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def _show(views: list[ScheduleView], agent: str) -> None:
    dues = await dues_shown(views)
    grid = table(
        "schedule", "form", "zone", "next due", "last due", "source", "paused", "sent", "text"
    )
    for view, (next_due, last_due) in zip(views, dues, strict=True):
        zone = view.schedule.zone if view.schedule is not None else "UTC"
        add_row(
            grid,
            [
                view.name,
                form_words(view),
                zone,
                next_due or "-",
                last_due or "-",
                view.source,
                "yes" if view.paused else "no",
                view.delivered,
                view.schedule.text if view.schedule is not None else view.damaged,
            ],
        )
    show_table(grid, empty=f"agent {agent!r} has no schedules")


def _definition(args: Any) -> dict[str, Any]:
    """``set``'s options as the schedule's wire form (checked by the use case, not here)."""
    given = {form: getattr(args, form) for form in _FORMS if getattr(args, form) is not None}
    wire: dict[str, Any] = {"name": args.name, **given}
    if args.text is not None:
        wire["text"] = args.text
    if args.zone is not None:
        wire["zone"] = args.zone
    if args.catch_up is not None:
        wire["catchUp"] = args.catch_up
    return wire


async def cmd_schedules(args: Any) -> int:
    """List the agent's schedules, or set, remove, pause or resume one of them."""
    action = args.action or "list"
    if action == "list":
        if args.name is not None:
            raise UsageError(f"afp schedules {args.agent} list takes no name ({args.name!r})")
        async with reader(args.db) as store:
            views = await list_schedules(store, args.agent)
        if args.json:
            return print_json({"items": views, "next": None})
        await _show(views, args.agent)
        return EXIT_OK
    if args.name is None:
        raise UsageError(f"afp schedules {args.agent} {action} needs the schedule's NAME")
    async with opened(args.db, create=False, now_ms=_now_ms()) as store:
        if action == "set":
            view: ScheduleView | None = await set_schedule(
                store, args.agent, _definition(args), source="cli", now_ms=_now_ms()
            )
        elif action == "remove":
            await remove_schedule(store, args.agent, args.name)
            view = None
        elif action == "pause":
            view = await pause_schedule(store, args.agent, args.name, now_ms=_now_ms())
        else:
            view = await resume_schedule(store, args.agent, args.name, now_ms=_now_ms())
    if args.json:
        return print_json(view if view is not None else {"removed": args.name})
    if view is None:
        say(f"removed schedule {args.name!r} of agent {args.agent!r}")
    else:
        await _show([view], args.agent)
    return EXIT_OK
