"""Endpoints of what an agent's window did: window records and folded spans with their
original messages (docs/api.md#endpoints)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import get
from litestar.datastructures import State

from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import (
    FINGERPRINT,
    RUN_ID,
    Cursor,
    Limit,
    Page,
    PathText,
    limit_of,
    page_of,
    path_param,
    query,
    query_flag,
    query_int,
    query_text,
)
from afp_runtime.api._problems import not_found
from afp_runtime.api.shapes import (
    FoldedMessages,
    FoldedSpanView,
)
from afp_runtime.app import fold, originals, record_reasons, stored_folds
from afp_runtime.records import (
    CompactionsWrite,
    StoredFoldedSpan,
)
from afp_runtime.store import RunRow


async def window_records(ctx: ApiContext, runs: list[RunRow]) -> list[dict[str, Any]]:
    """The window records (``compactions``) of these runs, in commit order, each with the
    sentences of its refusal reasons (``reasons``)."""
    return [
        {
            "runId": run.run_id,
            "turn": run.turn,
            "runtimeStageId": bundle.runtime_stage_id,
            **record,
            "reasons": record_reasons(record),
        }
        for run in runs
        for bundle in await ctx.reader.bundles(run.run_id)
        for write in bundle.writes
        if isinstance(write, CompactionsWrite)
        for record in write.value
    ]


@get("/v1/agents/{agent_id:str}/window-records")
async def agent_window_records(
    state: State,
    agent_id: PathText,
    run_id: Annotated[str | None, query("runId")] = None,
    turn: Annotated[str | None, query("turn")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[dict[str, Any]]:
    """Window records across the agent's runs; filters ``runId`` and ``turn``."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    query_text("runId", run_id, RUN_ID)
    turn_number = query_int("turn", turn, minimum=1)
    size = limit_of(limit)
    runs = [
        run
        for run in await ctx.reader.runs(agent_id)
        if (run_id is None or run.run_id == run_id)
        and (turn_number is None or run.turn == turn_number)
    ]
    return page_of(await window_records(ctx, runs), limit=size, cursor=cursor)


def _span_view(span: StoredFoldedSpan) -> FoldedSpanView:
    """The span's own fields, by the same names, without its messages."""
    fields = msgspec.structs.asdict(span)
    del fields["messages"]
    return FoldedSpanView(**{**fields, "removed_stage_ids": list(span.removed_stage_ids)})


@get("/v1/agents/{agent_id:str}/folded")
async def list_folded(
    state: State, agent_id: PathText, limit: Limit = None, cursor: Cursor = None
) -> Page[FoldedSpanView]:
    """The agent's folded spans, oldest first, without their messages."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    size = limit_of(limit)
    spans = await stored_folds(ctx.reader, agent_id)
    return page_of([_span_view(span) for span in spans], limit=size, cursor=cursor)


async def _span(ctx: ApiContext, agent_id: str, fingerprint: str) -> StoredFoldedSpan:
    await ctx.agent(agent_id)
    path_param("summaryFingerprint", fingerprint, FINGERPRINT)
    span = await fold(ctx.reader, agent_id, fingerprint)
    if span is None:
        raise not_found(
            "fold-not-found",
            f"agent {agent_id!r} has no folded span with this summary fingerprint",
            field="summaryFingerprint",
            value=fingerprint,
        )
    return span


@get("/v1/agents/{agent_id:str}/folded/{fingerprint:str}")
async def one_folded(state: State, agent_id: PathText, fingerprint: PathText) -> FoldedSpanView:
    """One folded span, by its summary message's fingerprint."""
    ctx = context_of(state)
    return _span_view(await _span(ctx, agent_id, fingerprint))


@get("/v1/agents/{agent_id:str}/folded/{fingerprint:str}/messages")
async def folded_messages(
    state: State,
    agent_id: PathText,
    fingerprint: PathText,
    from_log: Annotated[str | None, query("fromLog")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> FoldedMessages:
    """The span's originals: kept with the conversation, or (``fromLog=true``) from the log."""
    ctx = context_of(state)
    span = await _span(ctx, agent_id, fingerprint)
    use_log = query_flag("fromLog", from_log)
    size = limit_of(limit)
    found = await originals(ctx.reader, agent_id, span, from_log=use_log)
    if found is None:
        hint = "" if use_log else "; ask with fromLog=true to read them from the commit log"
        raise not_found(
            "messages-not-retained",
            f"this span was folded without keeping its messages{hint}",
            field="summaryFingerprint",
            value=fingerprint,
        )
    page = page_of(list(found.messages), limit=size, cursor=cursor)
    return FoldedMessages(items=page.items, next=page.next, source=found.source)


HANDLERS = [
    agent_window_records,
    list_folded,
    one_folded,
    folded_messages,
]
