"""The endpoint of an agent's findings ledger (docs/api.md#endpoints).

Filters: ``kind`` (a row kind, e.g. ``basis``, ``standing``, ``conflict``), ``turn`` (an
integer) and ``toolCallId``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import get
from litestar.datastructures import State

from afp_runtime.api._context import context_of
from afp_runtime.api._params import (
    ROW_KIND,
    TOOL_CALL_ID,
    Cursor,
    Limit,
    Page,
    PathText,
    limit_of,
    page_of,
    query,
    query_int,
    query_text,
)
from afp_runtime.app import findings as ledger_rows


@get("/v1/agents/{agent_id:str}/findings")
async def findings(
    state: State,
    agent_id: PathText,
    kind: Annotated[str | None, query("kind")] = None,
    turn: Annotated[str | None, query("turn")] = None,
    tool_call_id: Annotated[str | None, query("toolCallId")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[dict[str, Any]]:
    """The agent's ledger rows in filing order; filters ``kind``, ``turn``, ``toolCallId``."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    query_text("kind", kind, ROW_KIND)
    turn_number = query_int("turn", turn, minimum=1)
    query_text("toolCallId", tool_call_id, TOOL_CALL_ID)
    size = limit_of(limit)
    rows = await ledger_rows(
        ctx.reader, agent_id, kind=kind, turn=turn_number, tool_call_id=tool_call_id
    )
    return page_of(rows, limit=size, cursor=cursor)


HANDLERS = [
    findings,
]
