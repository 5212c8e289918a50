"""The schedule operations of the API's table (``_operations.OPERATIONS``;
docs/api.md#schedules), kept apart so the table's module stays one screenful of rows per area."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.api._operation_parts import AGENT, Operation, path_param, text_pattern
from afp_runtime.api._params import AGENT_ID, Page
from afp_runtime.app import ScheduleView


class ScheduleBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``PUT …/schedules/{name}``: the schedule's wire form (docs/schedules.md#a-schedule);
    exactly one of ``at``, ``cron`` and ``every``; ``name``, when given, is the path's."""

    text: str
    name: str | None = None
    at: str | None = None
    cron: str | None = None
    every: str | None = None
    zone: str | None = None
    catchUp: Literal["latest", "all", "none"] | None = None


NAME = path_param("name", text_pattern(AGENT_ID), "the schedule's name")

_VIEW: dict[str, Any] = {
    "agentId": "desk",
    "name": "morning",
    "source": "api",
    "paused": False,
    "delivered": 3,
    "anchorMs": 1796663198998,
    "createdAtMs": 1796663198998,
    "updatedAtMs": 1796663198998,
    "schedule": {
        "name": "morning",
        "text": "Check the overnight tickets.",
        "every": "weekday at 09:00",
        "zone": "Europe/Berlin",
    },
    "nextDueMs": 1796716800000,
    "lastDueMs": 1796630400000,
}

_ONE = "/v1/agents/{agentId}/schedules/{name}"

SCHEDULE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "GET",
        "/v1/agents/{agentId}/schedules",
        "List the agent's schedules",
        "schedules",
        Page[ScheduleView],
        params=(AGENT,),
        example={"items": [_VIEW], "next": None},
    ),
    Operation(
        "GET", _ONE, "One schedule", "schedules", ScheduleView, params=(AGENT, NAME), example=_VIEW
    ),
    Operation(
        "PUT",
        _ONE,
        "Set a schedule (create or replace)",
        "schedules",
        ScheduleView,
        params=(AGENT, NAME),
        status=201,
        body=ScheduleBody,
        errors=(403, 415, 422),
        also={200: "it replaced the agent's schedule of that name"},
        example=_VIEW,
    ),
    Operation(
        "DELETE",
        _ONE,
        "Remove a schedule",
        "schedules",
        None,
        params=(AGENT, NAME),
        status=204,
        errors=(403,),
    ),
    Operation(
        "POST",
        _ONE + "/pause",
        "Pause a schedule",
        "schedules",
        ScheduleView,
        params=(AGENT, NAME),
        errors=(403,),
        example={**_VIEW, "paused": True, "nextDueMs": None},
    ),
    Operation(
        "POST",
        _ONE + "/resume",
        "Resume a schedule from now",
        "schedules",
        ScheduleView,
        params=(AGENT, NAME),
        errors=(403, 409),
        example=_VIEW,
    ),
)
