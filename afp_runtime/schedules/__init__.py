"""Schedules (docs/schedules.md): when a standing agent is woken without a message — once at
an instant, or on a cron or English rule in a named zone — and what to deliver after a host was
down. A pure layer: values, checks, due instants and the catch-up rule; the clock is an
argument and the store and host deliver (docs/host.md#schedules)."""

from afp_runtime.schedules._delivery import LATE_MS, Delivery, plan_delivery
from afp_runtime.schedules._due import next_due
from afp_runtime.schedules._shown import due_text
from afp_runtime.schedules._value import (
    CatchUp,
    Schedule,
    check_schedule,
    decode_schedule,
    schedule,
)
from afp_runtime.schedules._wakeup import WAKEUP_TOOL, wakeup_schedule

__all__ = [
    "CatchUp",
    "Delivery",
    "LATE_MS",
    "Schedule",
    "WAKEUP_TOOL",
    "check_schedule",
    "decode_schedule",
    "due_text",
    "next_due",
    "plan_delivery",
    "schedule",
    "wakeup_schedule",
]
