"""Endpoints under ``/v1/runs``: run summary, resume, commit log, epochs, served views,
receipts, conformance and window records (docs/api.md#endpoints).

Every served read goes through the store's run-log reader (``Store.read_run``, off the event
loop) and calls the pure ``served`` functions there. Readings settled here:

* An epoch path number that names no epoch (``0`` included) is 404 ``epoch-not-found``; text
  that is not a number is 400 ``invalid-path-param``.
* ``…/receipt`` answers the accepted receipt of the epoch; when the epoch exists but has no
  acceptable receipt (missing, or stored in a shape that is refused) it is 404
  ``receipt-not-found`` (the served view's gaps say which).
* ``…/conformance`` re-encodes the request bytes by default (``wire=false`` skips it), with
  the model adapter of the run's agent in this process, or the built-in adapter of the
  receipt's encoder when this host does not run the agent: the checks ``afp conform`` makes.
  The verdict is data: the answer is 200 whatever it is.
* ``POST …/resume`` is 202 once the host has accepted the request; 409 ``run-not-resumable``
  when the run's agent has no held or stalled turn whose latest run is this one, and 409
  ``agent-not-hosted`` when this host does not run the agent. A resume or dismiss by a user
  principal on a conversation another principal owns is 403 ``not-owner``
  (``_caller.owner_to_check``).
* ``…/commits`` lists bundles as stored (message lists by reference); ``expand=true`` resolves
  every message list into its messages.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.datastructures import State

from afp_runtime.api._body import no_body_fields
from afp_runtime.api._caller import owner_to_check
from afp_runtime.api._context import context_of
from afp_runtime.api._params import (
    Cursor,
    Limit,
    Page,
    PathText,
    encode_cursor,
    limit_of,
    number_param,
    offset_of,
    page_of,
    query,
    query_flag,
    query_int,
)
from afp_runtime.api._problems import ApiError, not_found, not_hosted
from afp_runtime.api.constants import MAX_SERVED_PAGE
from afp_runtime.api.shapes import (
    DismissAccepted,
    ExplainedEpoch,
    ExplainedReport,
    ExplainedView,
    ResumeAccepted,
    explained_epoch,
    explained_report,
    explained_view,
)
from afp_runtime.api.window import window_records
from afp_runtime.app import (
    Receipt,
    conform,
    epoch_list,
    epoch_listing,
    epoch_receipt,
    served_page,
)
from afp_runtime.app import served_view as view_at
from afp_runtime.errors import NotFound, RunNotHeld, RunNotResumable
from afp_runtime.host import AgentNotHosted
from afp_runtime.records import (
    AnyWrite,
    HistoryWrite,
    ListRef,
)
from afp_runtime.store import RunRow, StoredBundle


def _epoch_not_found(run_id: PathText, epoch: PathText) -> ApiError:
    return not_found(
        "epoch-not-found", f"run {run_id!r} has no epoch {epoch}", field="epoch", value=epoch
    )


@get("/v1/runs/{run_id:str}")
async def one_run(state: State, run_id: PathText) -> RunRow:
    """The run's summary: agent, turn, kind, status, usage."""
    ctx = context_of(state)
    return await ctx.run(run_id)


@post("/v1/runs/{run_id:str}/resume", status_code=202)
async def resume_run(
    state: State, request: Request[Any, Any, Any], run_id: PathText
) -> Response[ResumeAccepted]:
    """Ask the host to resume the run's held or stalled turn now (an operator run). The body is
    empty or ``{}``: a key is refused before anything happens (a client sending options it
    thinks exist must not resume for good)."""
    no_body_fields(await request.body(), "a resume request")
    ctx = context_of(state)
    run = await ctx.run(run_id)
    try:
        await ctx.host.resume(run.agent_id, run_id=run_id, principal=owner_to_check(request.scope))
    except AgentNotHosted as exc:
        raise not_hosted(run.agent_id) from exc
    except RunNotResumable as exc:
        raise ApiError(409, "run-not-resumable", exc.message, field="runId", value=run_id) from exc
    accepted = ResumeAccepted(run_id=run_id, agent_id=run.agent_id, status="accepted")
    return Response(accepted, status_code=202)


@post("/v1/runs/{run_id:str}/dismiss", status_code=200)
async def dismiss_run(
    state: State, request: Request[Any, Any, Any], run_id: PathText
) -> DismissAccepted:
    """Close the run's held turn ``dismissed``: its messages stay, the inbox moves on. The body
    is empty or ``{}``; anything else is refused and nothing is dismissed."""
    no_body_fields(await request.body(), "a dismiss request")
    ctx = context_of(state)
    run = await ctx.run(run_id)
    try:
        message_id = await ctx.host.dismiss(
            run.agent_id, run_id=run_id, principal=owner_to_check(request.scope)
        )
    except AgentNotHosted as exc:
        raise not_hosted(run.agent_id) from exc
    except RunNotHeld as exc:
        raise ApiError(409, "run-not-held", exc.message, field="runId", value=run_id) from exc
    return DismissAccepted(
        run_id=run_id, agent_id=run.agent_id, message_id=message_id, status="dismissed"
    )


@get("/v1/runs/{run_id:str}/commits")
async def commits(
    state: State,
    run_id: PathText,
    from_seq: Annotated[str | None, query("fromSeq")] = None,
    expand: Annotated[str | None, query("expand")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[StoredBundle]:
    """Commit bundles from ``fromSeq``; message lists by reference unless ``expand=true``."""
    ctx = context_of(state)
    run = await ctx.run(run_id)
    start = query_int("fromSeq", from_seq) or 0
    expanded = query_flag("expand", expand)
    size = limit_of(limit)
    page = page_of(await ctx.reader.bundles(run_id, from_seq=start), limit=size, cursor=cursor)
    if not expanded:
        return page
    items = []
    for bundle in page.items:
        writes: list[AnyWrite] = []
        for write in bundle.writes:
            if isinstance(write, HistoryWrite) and isinstance(write.value, ListRef):
                messages, _ = await ctx.reader.resolve(run.agent_id, write.value)
                # Shown, not stored: the value is the messages the reference names.
                write = msgspec.structs.replace(write, value=list(messages))
            writes.append(write)
        items.append(msgspec.structs.replace(bundle, writes=writes))
    return Page(items=items, next=page.next)


@get("/v1/runs/{run_id:str}/epochs")
async def list_epochs(
    state: State, run_id: PathText, limit: Limit = None, cursor: Cursor = None
) -> Page[ExplainedEpoch]:
    """The run's model calls in commit order, with outcome, usage, gaps and their reasons."""
    ctx = context_of(state)
    await ctx.run(run_id)
    size = limit_of(limit)
    start = offset_of(cursor)
    entries, total = await epoch_list(ctx.log_of(run_id), start=start, limit=size)
    items = [explained_epoch(entry) for entry in entries]
    return Page(items=items, next=encode_cursor(start + size) if start + size < total else None)


@get("/v1/runs/{run_id:str}/epochs/{epoch:str}")
async def one_epoch(state: State, run_id: PathText, epoch: PathText) -> ExplainedEpoch:
    """One epoch's listing entry."""
    ctx = context_of(state)
    await ctx.run(run_id)
    number = number_param("epoch", epoch)
    entry = await epoch_listing(ctx.log_of(run_id), number)
    if entry is None:
        raise _epoch_not_found(run_id, epoch)
    return explained_epoch(entry)


@get("/v1/runs/{run_id:str}/epochs/{epoch:str}/served")
async def served_view(state: State, run_id: PathText, epoch: PathText) -> ExplainedView:
    """Exactly what the model was sent at this epoch, rebuilt from the log, with its gaps and
    their reasons."""
    ctx = context_of(state)
    await ctx.run(run_id)
    number = number_param("epoch", epoch)
    view = await view_at(ctx.log_of(run_id), number)
    if view is None:
        raise _epoch_not_found(run_id, epoch)
    return explained_view(view)


@get("/v1/runs/{run_id:str}/epochs/{epoch:str}/receipt")
async def receipt(state: State, run_id: PathText, epoch: PathText) -> Receipt:
    """The epoch's receipt as stored (digests only, never content)."""
    ctx = context_of(state)
    await ctx.run(run_id)
    number = number_param("epoch", epoch)
    exists, found = await epoch_receipt(ctx.log_of(run_id), number)
    if not exists:
        raise _epoch_not_found(run_id, epoch)
    if found is None:
        raise not_found(
            "receipt-not-found",
            f"epoch {number} of run {run_id!r} has no acceptable receipt on record",
            field="epoch",
            value=epoch,
        )
    return found


@get("/v1/runs/{run_id:str}/epochs/{epoch:str}/conformance")
async def conformance(
    state: State,
    run_id: PathText,
    epoch: PathText,
    wire: Annotated[str | None, query("wire")] = None,
) -> ExplainedReport:
    """The epoch's view checked against its receipt, the request bytes re-encoded too unless
    ``wire=false`` (the checks ``afp conform`` makes)."""
    ctx = context_of(state)
    run = await ctx.run(run_id)
    number = number_param("epoch", epoch)
    with_wire = wire is None or query_flag("wire", wire)
    encoders = partial(ctx.host.wire_encoder, run.agent_id) if with_wire else None
    try:
        [report] = await conform(ctx.log_of(run_id), number, encoders=encoders)
    except NotFound as exc:
        if exc.context.get("what") != "epoch":
            raise
        raise _epoch_not_found(run_id, epoch) from None
    return explained_report(report)


@get("/v1/runs/{run_id:str}/served")
async def served_list(
    state: State,
    run_id: PathText,
    from_epoch: Annotated[str | None, query("fromEpoch")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[ExplainedView]:
    """The run's served views from ``fromEpoch``, at most 50 per page."""
    ctx = context_of(state)
    await ctx.run(run_id)
    first = query_int("fromEpoch", from_epoch, minimum=1) or 1
    size = limit_of(limit, maximum=MAX_SERVED_PAGE)
    start = offset_of(cursor)
    views, total = await served_page(ctx.log_of(run_id), from_epoch=first, start=start, limit=size)
    items = [explained_view(view) for view in views]
    return Page(items=items, next=encode_cursor(start + size) if start + size < total else None)


@get("/v1/runs/{run_id:str}/window-records")
async def run_window_records(
    state: State, run_id: PathText, limit: Limit = None, cursor: Cursor = None
) -> Page[dict[str, Any]]:
    """The window records the run's window stages filed, in commit order."""
    ctx = context_of(state)
    run = await ctx.run(run_id)
    size = limit_of(limit)
    return page_of(await window_records(ctx, [run]), limit=size, cursor=cursor)


HANDLERS = [
    one_run,
    resume_run,
    dismiss_run,
    commits,
    list_epochs,
    one_epoch,
    served_view,
    receipt,
    conformance,
    served_list,
    run_window_records,
]
