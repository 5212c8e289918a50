"""An agent's schedules over HTTP (docs/api.md#schedules): list, one, set, remove, pause and
resume, each one use case of ``afp_runtime.app`` (the CLI's too); this module only translates.

Readings settled here:

* ``PUT …/schedules/{name}`` takes the schedule's wire form (``text``, one of ``at``/``cron``/
  ``every``, ``zone?``, ``catchUp?``); ``name`` may be left out and, given, must be the path's.
  201 when it was created, 200 when it replaced one (source ``api``, anchored now). A wrong
  field is 422 ``invalid-body`` naming it.
* An unknown agent is 404 ``agent-not-found``, an unknown schedule 404 ``schedule-not-found``
  whose message names the agent's schedules.
* With tokens, a write by a ``user`` principal on a conversation another owns is 403
  ``not-owner`` (as a resume or dismiss); an ``admin`` may write to every agent.
* After a write the host is woken (``Host.wake``), so its schedule runner looks again at once.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.datastructures import State

from afp_runtime.api._body import json_object
from afp_runtime.api._caller import owner_to_check
from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import AGENT_ID, Page, PathText, path_param
from afp_runtime.api._problems import ApiError, invalid_body, not_found
from afp_runtime.app import (
    ScheduleView,
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
    set_schedule,
)
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.store import check_owner

_PATH = "/v1/agents/{agent_id:str}/schedules"


def _missing(exc: NotFound, agent_id: str, name: str) -> ApiError:
    if exc.context.get("what") == "schedule":
        return not_found("schedule-not-found", exc.message, field="name", value=name)
    return not_found("agent-not-found", exc.message, field="agentId", value=agent_id)


async def _checked(state: State, agent_id: str, name: str | None = None) -> ApiContext:
    ctx = context_of(state)
    try:
        await ctx.agent(agent_id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        known = ", ".join(sorted(row.agent_id for row in await ctx.reader.agents())) or "none"
        raise not_found(
            "agent-not-found",
            f"there is no agent {agent_id!r}; the agents are: {known}",
            field="agentId",
            value=agent_id,
        ) from None
    if name is not None:
        path_param("name", name, AGENT_ID)
    return ctx


async def _writer(
    state: State, agent_id: str, name: str, request: Request[Any, Any, Any]
) -> ApiContext:
    """The context of a write: with tokens, a user principal must own the conversation (as
    for a resume or dismiss; 403 ``not-owner``), since a schedule writes to its inbox."""
    ctx = await _checked(state, agent_id, name)
    principal = owner_to_check(request.scope)
    if principal is not None:
        check_owner(await ctx.reader.owner(agent_id), agent_id, principal)
    return ctx


@get(_PATH)
async def get_schedules(state: State, agent_id: PathText) -> Page[ScheduleView]:
    """The agent's schedules by name with their marks, one page."""
    ctx = await _checked(state, agent_id)
    try:
        views = await list_schedules(ctx.reader, agent_id)
    except NotFound as exc:
        raise _missing(exc, agent_id, "") from exc
    return Page(items=views, next=None)


@get(_PATH + "/{name:str}")
async def get_schedule(state: State, agent_id: PathText, name: PathText) -> ScheduleView:
    """One schedule of the agent."""
    ctx = await _checked(state, agent_id, name)
    views = await list_schedules(ctx.reader, agent_id)
    for view in views:
        if view.name == name:
            return view
    names = ", ".join(repr(view.name) for view in views) or "none"
    raise not_found(
        "schedule-not-found",
        f"agent {agent_id!r} has no schedule {name!r}; its schedules are: {names}",
        field="name",
        value=name,
    )


@put(_PATH + "/{name:str}")
async def put_schedule(
    state: State, agent_id: PathText, name: PathText, request: Request[Any, Any, Any]
) -> Response[ScheduleView]:
    """Create or replace the schedule, anchored now; 201 created, 200 replaced."""
    ctx = await _writer(state, agent_id, name, request)
    body = json_object(await request.body())
    if body.get("name", name) != name:
        raise invalid_body("name", f"name must be the path's schedule name {name!r}", body["name"])
    existed = any(view.name == name for view in await list_schedules(ctx.reader, agent_id))
    try:
        view = await set_schedule(
            ctx.host.store,
            agent_id,
            {**body, "name": name},
            source="api",
            now_ms=ctx.host.clock.now_ms(),
        )
    except InvalidValue as exc:
        field = str(exc.context.get("field", "body"))
        raise invalid_body(field, exc.message, body.get(field)) from exc
    ctx.host.wake(agent_id)
    return Response(view, status_code=200 if existed else 201)


@delete(_PATH + "/{name:str}", status_code=204)
async def delete_schedule(
    state: State, agent_id: PathText, name: PathText, request: Request[Any, Any, Any]
) -> None:
    """Remove the schedule; what it delivered stays in the inbox."""
    ctx = await _writer(state, agent_id, name, request)
    try:
        await remove_schedule(ctx.host.store, agent_id, name)
    except NotFound as exc:
        raise _missing(exc, agent_id, name) from exc
    ctx.host.wake(agent_id)


@post(_PATH + "/{name:str}/pause", status_code=200)
async def pause(
    state: State, agent_id: PathText, name: PathText, request: Request[Any, Any, Any]
) -> ScheduleView:
    """Pause the schedule: it delivers nothing until resumed."""
    ctx = await _writer(state, agent_id, name, request)
    try:
        view = await pause_schedule(ctx.host.store, agent_id, name, now_ms=ctx.host.clock.now_ms())
    except NotFound as exc:
        raise _missing(exc, agent_id, name) from exc
    ctx.host.wake(agent_id)
    return view


@post(_PATH + "/{name:str}/resume", status_code=200)
async def resume(
    state: State, agent_id: PathText, name: PathText, request: Request[Any, Any, Any]
) -> ScheduleView:
    """Resume the schedule from now; what came due while paused is not delivered."""
    ctx = await _writer(state, agent_id, name, request)
    try:
        view = await resume_schedule(ctx.host.store, agent_id, name, now_ms=ctx.host.clock.now_ms())
    except NotFound as exc:
        raise _missing(exc, agent_id, name) from exc
    except InvalidValue as exc:
        raise ApiError(409, "schedule-damaged", exc.message, field="name", value=name) from exc
    ctx.host.wake(agent_id)
    return view


HANDLERS = [get_schedules, get_schedule, put_schedule, delete_schedule, pause, resume]
