"""Endpoints of an agent's inbox: posting a message, the list, one message
(docs/api.md#endpoints).

Readings settled here:

* ``POST …/inbox`` takes ``{text, idempotencyKey?, from?, time?}``. A body that is not a JSON
  object is 400 ``invalid-body``; a wrong field is 422 ``invalid-body`` naming it (unknown
  fields included, ``time.zone`` and the like too); ``time`` for an agent without time is 422
  ``time-not-enabled``. ``from`` is 1..128 code points. The 200 of an idempotent repeat
  carries the original acknowledgement (status ``queued``). With tokens, ``from`` is checked
  against the caller's principal (``_caller.acting_as``, 403 ``not-your-principal``).
* An inbox message's ``runId`` is the latest run of its turn, and its ``answer`` (answered) or
  ``errorKind``/``error`` (stalled, held) come from that run, in lists too; the one-message
  endpoint also reads them from the commit log or the open turn for runs of older schemas.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.datastructures import State

from afp_runtime.api._body import json_object
from afp_runtime.api._caller import acting_as
from afp_runtime.api._context import context_of
from afp_runtime.api._params import (
    IDEMPOTENCY_KEY,
    MESSAGE_ID,
    Cursor,
    Limit,
    Page,
    PathText,
    limit_of,
    page_of,
    path_param,
    query,
    query_choice,
)
from afp_runtime.api._problems import (
    ApiError,
    invalid_body,
    not_found,
    not_hosted,
    unknown_field,
)
from afp_runtime.api.constants import INBOX_STATUSES, SENDER_LIMIT, TEXT_LIMIT
from afp_runtime.api.shapes import (
    InboxMessage,
    InboxPosted,
    iso_instant,
)
from afp_runtime.api.views import inbox_message
from afp_runtime.app import message_outcome, message_outcomes
from afp_runtime.errors import IdempotencyConflict, InvalidValue, TimeNotEnabled
from afp_runtime.host import AgentNotHosted

_BODY_FIELDS = frozenset({"text", "idempotencyKey", "from", "time"})
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _text_field(body: dict[str, Any], field: str, limit: int) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise invalid_body(field, f"{field} must be a string of 1 to {limit:,} characters", value)
    if _SURROGATE.search(value):
        raise invalid_body(field, f"{field} must not hold lone surrogate code points", value)
    return value


@post("/v1/agents/{agent_id:str}/inbox", status_code=202)
async def post_inbox(
    state: State, agent_id: PathText, request: Request[Any, Any, Any]
) -> Response[InboxPosted]:
    """Accept a person's message durably; 202 only after it is committed."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    body = json_object(await request.body())
    for field in body:
        if field not in _BODY_FIELDS:
            raise unknown_field(field, "an inbox message", body[field], takes=_BODY_FIELDS)
    text = _text_field(body, "text", TEXT_LIMIT)
    if text is None:
        raise invalid_body("text", "text is required")
    key = body.get("idempotencyKey")
    if key is not None and (not isinstance(key, str) or IDEMPOTENCY_KEY.fullmatch(key) is None):
        raise invalid_body(
            "idempotencyKey", "idempotencyKey must be 1 to 128 of [A-Za-z0-9._:-]", key
        )
    sender = acting_as(request.scope, _text_field(body, "from", SENDER_LIMIT))
    time = body.get("time")
    if time is not None and not isinstance(time, dict):
        raise invalid_body("time", "time must be an object {now?, zone?, window?}", time)
    try:
        ack = await ctx.host.post(agent_id, text, idempotency_key=key, sender=sender, time=time)
    except TimeNotEnabled as exc:
        raise ApiError(422, "time-not-enabled", exc.message, field="time", value=time) from exc
    except AgentNotHosted as exc:
        raise not_hosted(agent_id) from exc
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
        raise invalid_body(field, exc.message, value) from exc
    posted = InboxPosted(
        message_id=ack.message_id,
        agent_id=agent_id,
        accepted_at=iso_instant(ack.accepted_at_ms),
        status="queued",
        position=ack.position,
    )
    return Response(posted, status_code=200 if ack.duplicate else 202)


@get("/v1/agents/{agent_id:str}/inbox")
async def list_inbox(
    state: State,
    agent_id: PathText,
    status: Annotated[str | None, query("status")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[InboxMessage]:
    """The agent's inbox messages in position order, optionally of one status."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    query_choice("status", status, INBOX_STATUSES)
    size = limit_of(limit)
    outcomes = await message_outcomes(ctx.reader, agent_id, status=status)
    return page_of([inbox_message(found) for found in outcomes], limit=size, cursor=cursor)


@get("/v1/agents/{agent_id:str}/inbox/{message_id:str}")
async def one_message(state: State, agent_id: PathText, message_id: PathText) -> InboxMessage:
    """One message with its status, latest run, answer or error."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    path_param("messageId", message_id, MESSAGE_ID)
    found = await message_outcome(ctx.reader, message_id)
    if found is None or found.row.agent_id != agent_id:
        raise not_found(
            "message-not-found",
            f"agent {agent_id!r} has no inbox message {message_id!r}",
            field="messageId",
            value=message_id,
        )
    return inbox_message(found)


HANDLERS = [
    post_inbox,
    list_inbox,
    one_message,
]
