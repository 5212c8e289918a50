"""Endpoints for the host and its agents: health, the agents, an agent's runs, its n-th
model call and the diff of two of its calls (docs/api.md#endpoints).

Readings settled here:

* An agent exists when the store knows it or this host runs it. Its ``status`` is its open
  turn's status (``running``, ``paused``, ``stalled``, ``held``) or ``idle``; an agent this host
  does not run (or does not hold now) is ``not-leased``, except that a turn left ``running``
  that no live host holds is ``interrupted`` (docs/host.md#status-values).
* ``…/calls/{n}/diff?against=m`` compares call ``m`` (default ``n - 1``) to call ``n``
  (``app.call_diff``). A number that names no call (``0`` included) is 404 ``call-not-found``
  naming the calls that exist, its ``field`` ``n`` or ``against``; ``against`` that is not
  digits is 400 ``invalid-query``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from litestar import get
from litestar.datastructures import State

from afp_runtime._version import VERSION
from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import (
    Cursor,
    Limit,
    Page,
    PathText,
    limit_of,
    number_param,
    page_of,
    query,
    query_int,
)
from afp_runtime.api._problems import ApiError, not_found
from afp_runtime.api.shapes import (
    AgentView,
    CallView,
    Health,
    explained_view,
)
from afp_runtime.api.views import agent_view
from afp_runtime.app import CallDiff, call_diff
from afp_runtime.app import agent_call as find_call
from afp_runtime.errors import NotFound
from afp_runtime.store import AgentRow, RunRow


@get("/v1/health", summary="Health", tags=["host"])
async def health(state: State) -> Health:
    """Whether the host runs, and which host answered; needs no token. A store that failed
    its check after an unclean stop is ``damaged``: the host takes no turns. A running host
    whose store cannot be written now (or whose WAL keeps failing to checkpoint) is
    ``degraded``, ``storeFault`` saying why: it serves reads and refuses writes until the
    fault clears."""
    ctx = context_of(state)
    phase = ctx.host.state
    fault = ctx.host.store_fault
    status: Literal["ok", "starting", "shutting-down", "damaged", "degraded"] = (
        "ok" if phase == "running" else "starting" if phase == "starting" else "shutting-down"
    )
    if ctx.host.store_check == "damaged":
        status = "damaged"
    elif status == "ok" and fault is not None:
        status = "degraded"
    return Health(
        status=status,
        version=VERSION,
        schema_version=ctx.host.store.schema_version,
        host_id=ctx.host.host_id,
        store_check=ctx.host.store_check,
        store_fault=fault,
    )


@get(
    "/v1/metrics",
    summary="Metrics",
    tags=["host"],
    media_type="text/plain; version=0.0.4; charset=utf-8",
)
async def metrics(state: State) -> str:
    """The host's metrics in the Prometheus text format (docs/telemetry.md#metrics); 404
    ``telemetry-off`` when the host runs without telemetry."""
    sink = context_of(state).host.telemetry
    if sink is None:
        raise ApiError(
            404,
            "telemetry-off",
            "this host runs without telemetry: enable [host.telemetry] to serve metrics",
        )
    return sink.prometheus()


async def agent_summary(ctx: ApiContext, row: AgentRow) -> AgentView:
    """One agent as `GET /v1/agents` lists it (the inspector shows the same)."""
    profile = ctx.host.profile(row.agent_id)
    override = ctx.host.status_override(row.agent_id) if profile is not None else None
    live = "not-leased" if profile is None else override or row.status
    now_ms = ctx.host.clock.now_ms()
    return await agent_view(ctx.reader, row, profile, now_ms=now_ms, live=live)


@get("/v1/agents")
async def list_agents(state: State, limit: Limit = None, cursor: Cursor = None) -> Page[AgentView]:
    """Every agent with its summary, by id."""
    ctx = context_of(state)
    size = limit_of(limit)
    page = page_of(await ctx.reader.agents(), limit=size, cursor=cursor)
    return Page(items=[await agent_summary(ctx, row) for row in page.items], next=page.next)


@get("/v1/agents/{agent_id:str}")
async def one_agent(state: State, agent_id: PathText) -> AgentView:
    """One agent: status, model, turn, counters, inbox depth, active run."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    rows = [row for row in await ctx.reader.agents() if row.agent_id == agent_id]
    if not rows:
        # Hosted but not yet in the store: the host ensures agents at start, so rarely seen.
        raise ApiError(404, "agent-not-found", f"there is no agent {agent_id!r}")
    return await agent_summary(ctx, rows[0])


@get("/v1/agents/{agent_id:str}/runs")
async def agent_runs(
    state: State, agent_id: PathText, limit: Limit = None, cursor: Cursor = None
) -> Page[RunRow]:
    """The agent's runs, newest first."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    size = limit_of(limit)
    runs = list(reversed(await ctx.reader.runs(agent_id)))
    return page_of(runs, limit=size, cursor=cursor)


@get("/v1/agents/{agent_id:str}/calls/{n:str}")
async def agent_call(state: State, agent_id: PathText, n: PathText) -> CallView:
    """Where the agent's n-th model call sits, and what it was sent."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    number = number_param("n", n)
    found = await find_call(ctx.reader, agent_id, number)
    if found is not None:
        return CallView(
            agent_call=number,
            run_id=found.run.run_id,
            epoch=found.epoch,
            view=explained_view(found.view),
        )
    raise not_found(
        "call-not-found",
        f"agent {agent_id!r} has made no model call numbered {number}",
        field="n",
        value=n,
    )


@get("/v1/agents/{agent_id:str}/calls/{n:str}/diff")
async def agent_call_diff(
    state: State,
    agent_id: PathText,
    n: PathText,
    against: Annotated[str | None, query("against")] = None,
) -> CallDiff:
    """What changed in what the model was sent from the agent's call ``against`` (default
    ``n - 1``) to its call ``n``, across runs and turns."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    number = number_param("n", n)
    other = query_int("against", against)
    try:
        return await call_diff(ctx.reader, agent_id, number, number - 1 if other is None else other)
    except NotFound as exc:
        if exc.context.get("what") != "call":
            raise ApiError(404, "agent-not-found", exc.message) from exc
        if exc.context.get("argument") == "n":
            raise not_found("call-not-found", exc.message, field="n", value=n) from exc
        shown = against if against is not None else str(number - 1)
        raise not_found("call-not-found", exc.message, field="against", value=shown) from exc


HANDLERS = [
    health,
    metrics,
    list_agents,
    one_agent,
    agent_runs,
    agent_call,
    agent_call_diff,
]
