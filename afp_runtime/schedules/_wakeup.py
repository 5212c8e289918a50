"""The pure half of the built-in ``scheduleWakeup`` tool: a model's arguments turned into a
once schedule, or refused with a message the model can act on
(docs/schedules.md#the-schedulewakeup-tool).

The tool's door (offering it, recording the ledger row, storing the schedule) lives elsewhere;
here are only its schema and ``wakeup_schedule``, with ``now`` and the agent's zone as arguments.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.messages import ToolSchema
from afp_runtime.schedules._forms import at_ms
from afp_runtime.schedules._refuse import refuse
from afp_runtime.schedules._value import Schedule
from afp_runtime.schedules._wall import wall_instant_ms
from afp_runtime.time import load_zone

WAKEUP_TOOL_NAME: Final = "scheduleWakeup"
WAKEUP_HORIZON_DAYS: Final = 366
"""How far ahead a wake-up may be set."""
_NAME_PATTERN: Final = "^[a-z0-9][a-z0-9._-]{0,63}$"
_IN = re.compile(r"(?P<count>[0-9]{1,6}|an?) (?P<unit>[a-z]+)")
_UNIT_MINUTES: Final = {"minute": 1, "hour": 60, "day": 24 * 60, "week": 7 * 24 * 60}
_KEYS: Final = frozenset({"in", "at", "text", "name"})
_MINUTE_MS: Final = 60_000
_UTC_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

WAKEUP_TOOL: Final = ToolSchema(
    name=WAKEUP_TOOL_NAME,
    description=(
        "Set a reminder for yourself: at the time given you receive `text` as a new message "
        "from `schedule:NAME`, even if nobody writes to you. Give either `in` (how long from "
        "now) or `at` (a local date and time in your zone), at most a year ahead."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "in": {
                "type": "string",
                "description": "How long from now: a whole number and a unit, e.g. "
                '"30 minutes", "2 hours", "3 days", "1 week". Days and weeks keep the '
                "time of day.",
            },
            "at": {
                "type": "string",
                "description": "When, as YYYY-MM-DDTHH:MM in your zone, e.g. "
                '"2026-12-08T09:00" (or with an offset, "2026-12-08T09:00+01:00").',
            },
            "text": {
                "type": "string",
                "description": "The message you will receive then: say what to do and why.",
            },
            "name": {
                "type": "string",
                "pattern": _NAME_PATTERN,
                "description": "Optional short name (a-z 0-9 . _ -); one is made if omitted. "
                "Setting a name again replaces that reminder.",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
)
"""The tool as the model is told about it."""


def wakeup_schedule(
    arguments: Mapping[str, Any],
    *,
    now_ms: int,
    zone: str,
    taken: Collection[str] = (),
) -> Schedule:
    """The once schedule a model's ``scheduleWakeup`` arguments ask for.

    ``in`` counts from ``now_ms``: minutes and hours as real time, days and weeks on the zone's
    wall clock (``in 3 days`` at 10:17 is 10:17 local three days on, across a clock change).
    ``at`` is read as the ``at`` form is, in ``zone``. Without a ``name`` one is made from the
    local due time (``wakeup-20261208-0900``), with ``-2``, ``-3``… added while it is in
    ``taken``. The schedule catches up ``latest``: a wake-up missed while no host ran is
    delivered late rather than lost.

    Raises:
        InvalidValue: the arguments are refused; ``field`` names the argument (``in``, ``at``,
            ``text``, ``name``, or ``arguments``) and the message says what to send instead.
    """
    if not isinstance(arguments, Mapping):
        raise InvalidValue(
            f"arguments: an object with text and in or at, not {shown(arguments)}",
            field="arguments",
        )
    unknown = sorted(str(key) for key in arguments if key not in _KEYS)
    if unknown:
        raise InvalidValue(
            f"arguments: unknown {', '.join(unknown)}; send text and one of in or at "
            "(and optionally name)",
            field=unknown[0],
        )
    due = _due_ms(arguments, now_ms, zone)
    name = arguments.get("name")
    if name is None:
        name = _made_name(due, zone, taken)
    text = arguments.get("text")
    if text is None:
        raise InvalidValue("text: missing; say what you should do when woken", field="text")
    at_text = arguments.get("at")
    if not isinstance(at_text, str):
        at_text = _instant_text(due, zone)
    return Schedule(name=name, text=text, at=at_text, zone=zone, catch_up="latest")


def _due_ms(arguments: Mapping[str, Any], now_ms: int, zone: str) -> int:
    given_in, given_at = arguments.get("in"), arguments.get("at")
    if (given_in is None) == (given_at is None):
        raise InvalidValue(
            'in, at: give exactly one: in (e.g. "3 days") or at (e.g. "2026-12-08T09:00")',
            field="in" if given_in is not None else "at",
        )
    if given_in is not None:
        due = _in_ms(given_in, now_ms, zone)
    else:
        if not isinstance(given_at, str):
            raise refuse("at", given_at, 'is not a string such as "2026-12-08T09:00"')
        due = at_ms(given_at, zone)
        if due <= now_ms:
            raise refuse(
                "at", given_at, f"is not in the future (it is now {_local_text(now_ms, zone)})"
            )
    if due > now_ms + WAKEUP_HORIZON_DAYS * 24 * 60 * _MINUTE_MS:
        field = "in" if given_in is not None else "at"
        raise refuse(field, given_in or given_at, "is more than a year ahead")
    return due


def _in_ms(text: object, now_ms: int, zone: str) -> int:
    found = _IN.fullmatch(" ".join(text.lower().split())) if isinstance(text, str) else None
    unit = found["unit"].removesuffix("s") if found else ""
    if found is None or unit not in _UNIT_MINUTES:
        raise refuse(
            "in",
            text,
            'expected a whole number and a unit (minutes, hours, days, weeks), e.g. "3 days"',
        )
    count = 1 if found["count"] in ("a", "an") else int(found["count"])
    if count < 1:
        raise refuse("in", text, "is not at least one minute ahead")
    minutes = count * _UNIT_MINUTES[unit]
    if minutes > WAKEUP_HORIZON_DAYS * 24 * 60:
        raise refuse("in", text, "is more than a year ahead")
    if unit in ("minute", "hour"):
        return now_ms + minutes * _MINUTE_MS
    # Days and weeks keep the local time of day, read by the clock-change rule.
    local = _local(now_ms, zone)
    return wall_instant_ms(local + timedelta(minutes=minutes), zone)


def _aware(ms: int, zone: str) -> datetime:
    """``ms`` to the second, as an aware time in ``zone``."""
    return (_UTC_EPOCH + timedelta(seconds=ms // 1000)).astimezone(load_zone(zone))


def _local(ms: int, zone: str) -> datetime:
    return _aware(ms, zone).replace(tzinfo=None)


def _local_text(ms: int, zone: str) -> str:
    return f"{_local(ms, zone).strftime('%Y-%m-%dT%H:%M')} in {zone}"


def _instant_text(ms: int, zone: str) -> str:
    """``ms`` to the second, written at the zone's offset then (``…T09:00:00-08:00``)."""
    return _aware(ms, zone).isoformat(timespec="seconds")


def _made_name(due: int, zone: str, taken: Collection[str]) -> str:
    base = f"wakeup-{_local(due, zone).strftime('%Y%m%d-%H%M')}"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name
