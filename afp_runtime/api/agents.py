"""Endpoints under ``/v1/agents`` (and health): agents, inbox, runs, calls, window records,
folded spans and findings (docs/api.md#endpoints).

Readings settled here:

* An agent exists when the store knows it or this host runs it. Its ``status`` is its open
  turn's status (``running``, ``paused``, ``stalled``, ``held``) or ``idle``; an agent this host
  does not run is ``not-leased``.
* ``POST …/inbox`` takes ``{text, idempotencyKey?, from?, time?}``. A body that is not a JSON
  object is 400 ``invalid-body``; a wrong field is 422 ``invalid-body`` naming it (unknown
  fields included, ``time.zone`` and the like too); ``time`` for an agent without time is 422
  ``time-not-enabled``. ``from`` is 1..128 code points. The 200 of an idempotent repeat
  carries the original acknowledgement (status ``queued``).
* An inbox message's ``runId`` is the latest run of its turn, and its ``answer`` (answered) or
  ``errorKind``/``error`` (stalled, held) come from that run, in lists too; the one-message
  endpoint also reads them from the commit log or the open turn for runs of older schemas.
* ``findings`` filters: ``kind`` (a row kind, e.g. ``basis``, ``standing``, ``conflict``),
  ``turn`` (an integer) and ``toolCallId``.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, get, post
from litestar.datastructures import State

from afp_runtime.api._body import json_object
from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import (
    FINGERPRINT,
    IDEMPOTENCY_KEY,
    MESSAGE_ID,
    ROW_KIND,
    RUN_ID,
    TOOL_CALL_ID,
    Page,
    PathText,
    limit_of,
    number_param,
    offset_of,
    page_of,
    path_param,
    query,
    query_choice,
    query_flag,
    query_int,
    query_text,
)
from afp_runtime.api._problems import ApiError
from afp_runtime.api.constants import INBOX_STATUSES, SENDER_LIMIT, TEXT_LIMIT
from afp_runtime.api.shapes import (
    AgentView,
    CallView,
    FoldedMessages,
    FoldedSpanView,
    Health,
    InboxMessage,
    InboxPosted,
    iso_instant,
)
from afp_runtime.api.views import agent_view, inbox_messages
from afp_runtime.errors import IdempotencyConflict, InvalidValue, TimeNotEnabled
from afp_runtime.host import AgentNotHosted
from afp_runtime.records import StoredFoldedSpan
from afp_runtime.served import find_call, folded_from_log
from afp_runtime.store import AgentRow, RunRow

try:
    VERSION = metadata.version("afp-runtime")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"

_BODY_FIELDS = frozenset({"text", "idempotencyKey", "from", "time"})
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@get("/v1/health", summary="Health", tags=["host"])
async def health(state: State) -> Health:
    """Whether the host runs; needs no token."""
    ctx = context_of(state)
    phase = ctx.host.state
    status: Literal["ok", "starting", "shutting-down"] = (
        "ok" if phase == "running" else "starting" if phase == "starting" else "shutting-down"
    )
    return Health(status=status, version=VERSION, schema_version=ctx.host.store.schema_version)


async def _agent_view(ctx: ApiContext, row: AgentRow) -> AgentView:
    profile = ctx.host.profile(row.agent_id)
    status = (
        (ctx.host.status_override(row.agent_id) or row.status)
        if profile is not None
        else "not-leased"
    )
    return await agent_view(ctx.reader, row, profile, status=status)


@get("/v1/agents", summary="List agents", tags=["agents"])
async def list_agents(
    state: State,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> Page[AgentView]:
    """Every agent with its summary, by id."""
    ctx = context_of(state)
    size = limit_of(limit)
    rows = await ctx.reader.agents()
    start = offset_of(cursor)
    views = [await _agent_view(ctx, row) for row in rows[start : start + size]]
    nxt = page_of(rows, limit=size, cursor=cursor).next
    return Page(items=views, next=nxt)


@get("/v1/agents/{agent_id:str}", summary="One agent", tags=["agents"])
async def one_agent(state: State, agent_id: PathText) -> AgentView:
    """One agent: status, model, turn, counters, inbox depth, active run."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    rows = [row for row in await ctx.reader.agents() if row.agent_id == agent_id]
    if not rows:
        # Hosted but not yet in the store: the host ensures agents at start, so rarely seen.
        raise ApiError(404, "agent-not-found", f"there is no agent {agent_id!r}")
    return await _agent_view(ctx, rows[0])


def _invalid(field: str, message: str, value: object) -> ApiError:
    return ApiError(422, "invalid-body", message, field=field, value=value)


def _text_field(body: dict[str, Any], field: str, limit: int) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise _invalid(field, f"{field} must be a string of 1 to {limit:,} characters", value)
    if _SURROGATE.search(value):
        raise _invalid(field, f"{field} must not hold lone surrogate code points", value)
    return value


@post(
    "/v1/agents/{agent_id:str}/inbox",
    summary="Post a message",
    tags=["inbox"],
    status_code=202,
)
async def post_inbox(
    state: State, agent_id: PathText, request: Request[Any, Any, Any]
) -> Response[InboxPosted]:
    """Accept a person's message durably; 202 only after it is committed."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    body = json_object(await request.body())
    for field in body:
        if field not in _BODY_FIELDS:
            raise _invalid(field, f"{field} is not a field of an inbox message", body[field])
    text = _text_field(body, "text", TEXT_LIMIT)
    if text is None:
        raise _invalid("text", "text is required", None)
    key = body.get("idempotencyKey")
    if key is not None and (not isinstance(key, str) or IDEMPOTENCY_KEY.fullmatch(key) is None):
        raise _invalid("idempotencyKey", "idempotencyKey must be 1 to 128 of [A-Za-z0-9._:-]", key)
    sender = _text_field(body, "from", SENDER_LIMIT)
    time = body.get("time")
    if time is not None and not isinstance(time, dict):
        raise _invalid("time", "time must be an object {now?, zone?, window?}", time)
    try:
        ack = await ctx.host.post(agent_id, text, idempotency_key=key, sender=sender, time=time)
    except TimeNotEnabled as exc:
        raise ApiError(422, "time-not-enabled", exc.message, field="time", value=time) from exc
    except AgentNotHosted as exc:
        raise ApiError(
            409, "agent-not-hosted", f"agent {agent_id!r} is not run by this host"
        ) from exc
    except IdempotencyConflict as exc:
        raise ApiError(
            409,
            "idempotency-conflict",
            "this idempotencyKey was used before for another text",
            field="idempotencyKey",
            value=key,
        ) from exc
    except InvalidValue as exc:
        field = str(exc.context.get("field", "text"))
        value = body.get(field) if "." not in field else time
        raise _invalid(field, exc.message, value) from exc
    posted = InboxPosted(
        message_id=ack.message_id,
        agent_id=agent_id,
        accepted_at=iso_instant(ack.accepted_at_ms),
        status="queued",
        position=ack.position,
    )
    return Response(posted, status_code=200 if ack.duplicate else 202)


@get("/v1/agents/{agent_id:str}/inbox", summary="List the inbox", tags=["inbox"])
async def list_inbox(
    state: State,
    agent_id: PathText,
    status: Annotated[str | None, query("status")] = None,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> Page[InboxMessage]:
    """The agent's inbox messages in position order, optionally of one status."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    query_choice("status", status, INBOX_STATUSES)
    size = limit_of(limit)
    rows = await ctx.reader.inbox(agent_id, status=status)
    messages = inbox_messages(rows, await ctx.reader.runs(agent_id))
    return page_of(messages, limit=size, cursor=cursor)


@get(
    "/v1/agents/{agent_id:str}/inbox/{message_id:str}",
    summary="One inbox message",
    tags=["inbox"],
)
async def one_message(state: State, agent_id: PathText, message_id: PathText) -> InboxMessage:
    """One message with its status, latest run, answer or error."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    path_param("messageId", message_id, MESSAGE_ID)
    row = await ctx.reader.inbox_message(message_id)
    if row is None or row.agent_id != agent_id:
        raise ApiError(
            404,
            "message-not-found",
            f"agent {agent_id!r} has no inbox message {message_id!r}",
            field="messageId",
            value=message_id,
        )
    runs = [run for run in await ctx.reader.runs(agent_id) if run.message_id == message_id]
    [shown] = inbox_messages([row], runs)
    if row.status == "answered" and shown.answer is None and runs:
        # A run that ended before schema version 11 keeps its answer in its commit log only.
        last = await ctx.reader.last_bundle(runs[-1].run_id)
        found = next(
            (
                w.get("value")
                for w in (last.writes if last else [])
                if w.get("key") == "finalAnswer"
            ),
            None,
        )
        shown = msgspec.structs.replace(shown, answer=found if isinstance(found, str) else None)
    if row.status in ("stalled", "held") and shown.error_kind is None:
        conversation = await ctx.reader.conversation_state(agent_id)
        turn = conversation.open_turn if conversation is not None else None
        if turn is not None and turn.message_id == message_id:
            shown = msgspec.structs.replace(shown, error_kind=turn.error_kind, error=turn.error)
    return shown


@get("/v1/agents/{agent_id:str}/runs", summary="An agent's runs", tags=["runs"])
async def agent_runs(
    state: State,
    agent_id: PathText,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> Page[RunRow]:
    """The agent's runs, newest first."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    size = limit_of(limit)
    runs = list(reversed(await ctx.reader.runs(agent_id)))
    return page_of(runs, limit=size, cursor=cursor)


@get("/v1/agents/{agent_id:str}/calls/{n:str}", summary="The n-th model call", tags=["served"])
async def agent_call(state: State, agent_id: PathText, n: PathText) -> CallView:
    """Where the agent's n-th model call sits, and what it was sent."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    number = number_param("n", n)
    for run in await ctx.reader.runs(agent_id):
        found = await ctx.with_log(run.run_id, lambda log: find_call(log, number))
        if found is not None:
            epoch, view = found
            return CallView(agent_call=number, run_id=run.run_id, epoch=epoch, view=view)
    raise ApiError(
        404,
        "call-not-found",
        f"agent {agent_id!r} has made no model call numbered {number}",
        field="n",
        value=n,
    )


async def window_records(ctx: ApiContext, runs: list[RunRow]) -> list[dict[str, Any]]:
    """The window records (``compactions``) of these runs, in commit order."""
    records: list[dict[str, Any]] = []
    for run in runs:
        for bundle in await ctx.reader.bundles(run.run_id):
            for write in bundle.writes:
                if write.get("key") != "compactions":
                    continue
                for record in write.get("value") or []:
                    records.append(
                        {
                            "runId": run.run_id,
                            "turn": run.turn,
                            "runtimeStageId": bundle.runtime_stage_id,
                            **record,
                        }
                    )
    return records


@get(
    "/v1/agents/{agent_id:str}/window-records",
    summary="An agent's window records",
    tags=["window"],
)
async def agent_window_records(
    state: State,
    agent_id: PathText,
    run_id: Annotated[str | None, query("runId")] = None,
    turn: Annotated[str | None, query("turn")] = None,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
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
    return FoldedSpanView(
        summary_fingerprint=span.summary_fingerprint,
        run_id=span.run_id,
        iteration=span.iteration,
        folded_at_ms=span.folded_at_ms,
        model=span.model,
        message_count=span.message_count,
        removed_stage_ids=list(span.removed_stage_ids),
        retained=span.retained,
    )


@get("/v1/agents/{agent_id:str}/folded", summary="Folded spans", tags=["window"])
async def list_folded(
    state: State,
    agent_id: PathText,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> Page[FoldedSpanView]:
    """The agent's folded spans, oldest first, without their messages."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    size = limit_of(limit)
    spans = await ctx.reader.folded_spans(agent_id)
    return page_of([_span_view(span) for span in spans], limit=size, cursor=cursor)


async def _span(ctx: ApiContext, agent_id: str, fingerprint: str) -> StoredFoldedSpan:
    await ctx.agent(agent_id)
    path_param("summaryFingerprint", fingerprint, FINGERPRINT)
    spans = await ctx.reader.folded_spans(agent_id, summary_fingerprint=fingerprint)
    if not spans:
        raise ApiError(
            404,
            "fold-not-found",
            f"agent {agent_id!r} has no folded span with this summary fingerprint",
            field="summaryFingerprint",
            value=fingerprint,
        )
    return spans[0]


@get(
    "/v1/agents/{agent_id:str}/folded/{fingerprint:str}",
    summary="One folded span",
    tags=["window"],
)
async def one_folded(state: State, agent_id: PathText, fingerprint: PathText) -> FoldedSpanView:
    """One folded span, by its summary message's fingerprint."""
    ctx = context_of(state)
    return _span_view(await _span(ctx, agent_id, fingerprint))


@get(
    "/v1/agents/{agent_id:str}/folded/{fingerprint:str}/messages",
    summary="A folded span's original messages",
    tags=["window"],
)
async def folded_messages(
    state: State,
    agent_id: PathText,
    fingerprint: PathText,
    from_log: Annotated[str | None, query("fromLog")] = None,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> FoldedMessages:
    """The span's originals: kept with the conversation, or (``fromLog=true``) from the log."""
    ctx = context_of(state)
    span = await _span(ctx, agent_id, fingerprint)
    use_log = query_flag("fromLog", from_log)
    size = limit_of(limit)
    if span.messages is not None:
        messages, _ = await ctx.reader.resolve(agent_id, span.messages)
        page = page_of(list(messages), limit=size, cursor=cursor)
        return FoldedMessages(items=page.items, next=page.next, source="span")
    resolved = None
    if use_log and await ctx.reader.runs(run_id=span.run_id):
        resolved = await ctx.with_log(span.run_id, lambda log: folded_from_log(log, span))
    if resolved is None:
        hint = "" if use_log else "; ask with fromLog=true to read them from the commit log"
        raise ApiError(
            404,
            "messages-not-retained",
            f"this span was folded without keeping its messages{hint}",
            field="summaryFingerprint",
            value=fingerprint,
        )
    page = page_of(resolved, limit=size, cursor=cursor)
    return FoldedMessages(items=page.items, next=page.next, source="log")


@get("/v1/agents/{agent_id:str}/findings", summary="Findings ledger rows", tags=["findings"])
async def findings(
    state: State,
    agent_id: PathText,
    kind: Annotated[str | None, query("kind")] = None,
    turn: Annotated[str | None, query("turn")] = None,
    tool_call_id: Annotated[str | None, query("toolCallId")] = None,
    limit: Annotated[str | None, query("limit")] = None,
    cursor: Annotated[str | None, query("cursor")] = None,
) -> Page[dict[str, Any]]:
    """The agent's ledger rows in filing order; filters ``kind``, ``turn``, ``toolCallId``."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    query_text("kind", kind, ROW_KIND)
    turn_number = query_int("turn", turn, minimum=1)
    query_text("toolCallId", tool_call_id, TOOL_CALL_ID)
    size = limit_of(limit)
    rows = await ctx.reader.ledger(agent_id, kind=kind, turn=turn_number)
    if tool_call_id is not None:
        rows = [row for row in rows if row.get("toolCallId") == tool_call_id]
    return page_of(rows, limit=size, cursor=cursor)


HANDLERS = [
    health,
    list_agents,
    one_agent,
    post_inbox,
    list_inbox,
    one_message,
    agent_runs,
    agent_call,
    agent_window_records,
    list_folded,
    one_folded,
    folded_messages,
    findings,
]
