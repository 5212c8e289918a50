"""How the doors show a schedule to a person (docs/api.md#command-reference,
docs/inspector.md#schedules): its form in words and its due instants in its zone and in UTC,
shared by ``afp schedules`` and the inspector so the two read alike."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread

from afp_runtime.app import ScheduleView, due_text

__all__ = ["dues_shown", "form_words"]


def form_words(view: ScheduleView) -> str:
    """The schedule's form as the doors show it: ``every weekday at 09:00``, ``cron 0 9 * * *``,
    ``once at 2026-12-08T09:00``; ``damaged`` for a row that does not read."""
    schedule = view.schedule
    if schedule is None:
        return "damaged"
    if schedule.every is not None:
        return f"every {schedule.every}"
    if schedule.cron is not None:
        return f"cron {schedule.cron}"
    return f"once at {schedule.at}"


async def dues_shown(views: Sequence[ScheduleView]) -> list[tuple[str | None, str | None]]:
    """Each view's next and last due instants as the doors show them, in the schedule's zone
    and in UTC (``2026-12-08 09:00 Europe/Berlin (2026-12-08 08:00 UTC)``; None for none),
    worked out in a worker thread (a first use of a zone reads its file)."""

    def shown(ms: int | None, zone: str) -> str | None:
        return None if ms is None else due_text(ms, zone)

    def work() -> list[tuple[str | None, str | None]]:
        zones = [view.schedule.zone if view.schedule is not None else "UTC" for view in views]
        return [
            (shown(view.next_due_ms, zone), shown(view.last_due_ms, zone))
            for view, zone in zip(views, zones, strict=True)
        ]

    return await anyio.to_thread.run_sync(work)
