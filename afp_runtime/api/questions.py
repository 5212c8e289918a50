"""Check-in questions over HTTP (docs/api.md#endpoints, docs/host.md#check-ins): list, answer,
abandon.

Readings settled here:

* ``GET …/questions`` lists the agent's **open** questions in asking order, paged like every
  list (``{items, next}``); ``status=`` (``open``, ``answered``, ``abandoned``, ``unsettled``,
  ``all``) widens it.
* ``POST …/answer`` takes ``{"value": …, "from"?: principal}``; ``…/abandon`` takes an empty
  body or ``{"from"?: principal}``. Both answer 200 once the question is closed on disk (a
  ``synchronous=FULL`` commit). 404 ``question-not-found``, 409 ``question-closed``, 422
  ``invalid-answer`` with a ``reason`` code, 403 ``not-owner``; with tokens, ``from`` is checked
  against the caller's principal (403 ``not-your-principal``, ``_caller.acting_as``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from litestar import Request, get, post
from litestar.datastructures import State

from afp_runtime.api._body import json_object
from afp_runtime.api._caller import acting_as
from afp_runtime.api._context import context_of
from afp_runtime.api._params import (
    RUN_ID,
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
from afp_runtime.api.constants import QUESTION_STATUSES, SENDER_LIMIT
from afp_runtime.api.shapes import AnswerAccepted, QuestionView
from afp_runtime.api.views import question_view
from afp_runtime.errors import InvalidAnswer, QuestionClosed
from afp_runtime.host import AgentNotHosted
from afp_runtime.records import QuestionRow


def _answer_status(row: QuestionRow) -> Literal["accepted", "re-asked", "unsettled"]:
    if row.status == "open":
        return "re-asked"
    return "unsettled" if row.status == "unsettled" else "accepted"


@get("/v1/agents/{agent_id:str}/questions")
async def list_questions(
    state: State,
    agent_id: PathText,
    status: Annotated[str | None, query("status")] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Page[QuestionView]:
    """The agent's open questions (tool asks, approvals, time asks), oldest first, paged."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    chosen = query_choice("status", status, QUESTION_STATUSES) or "open"
    size = limit_of(limit)
    rows = await ctx.reader.questions(agent_id, status=None if chosen == "all" else chosen)
    return page_of([question_view(row) for row in rows], limit=size, cursor=cursor)


# An approval's decision and note go inside ``value``; a client that sent them at the top
# level is told the shape it meant.
_APPROVAL_KEYS = frozenset({"decision", "note"})
_APPROVAL_HINT = ' (an approval is answered {"value": {"decision": "approve"}})'


async def _body(request: Request[Any, Any, Any], fields: frozenset[str]) -> dict[str, Any]:
    body = json_object(await request.body(), empty_is_object=True)
    for field in body:
        if field not in fields:
            hint = _APPROVAL_HINT if "value" in fields and field in _APPROVAL_KEYS else ""
            raise unknown_field(field, "this request", body[field], takes=fields, hint=hint)
    sender = body.get("from")
    if sender is not None and (not isinstance(sender, str) or not 1 <= len(sender) <= SENDER_LIMIT):
        raise invalid_body(
            "from", f"from must be a string of 1 to {SENDER_LIMIT} characters", sender
        )
    return body


def _already_closed(exc: QuestionClosed, question_id: str) -> ApiError:
    return ApiError(409, "question-closed", exc.message, field="questionId", value=question_id)


def _closed(row: QuestionRow | None, agent_id: str, question_id: str) -> QuestionRow:
    if row is None:
        raise not_found(
            "question-not-found",
            f"agent {agent_id!r} has no question {question_id!r}",
            field="questionId",
            value=question_id,
        )
    return row


@post("/v1/agents/{agent_id:str}/questions/{question_id:str}/answer", status_code=200)
async def answer(
    state: State, agent_id: PathText, question_id: PathText, request: Request[Any, Any, Any]
) -> AnswerAccepted:
    """Answer an open question; the turn resumes once its batch's questions are all closed."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    path_param("questionId", question_id, RUN_ID)
    body = await _body(request, frozenset({"value", "from"}))
    if "value" not in body:
        raise invalid_body("value", "value is required")
    try:
        row = await ctx.host.answer(
            agent_id, question_id, body["value"], sender=acting_as(request.scope, body.get("from"))
        )
    except AgentNotHosted as exc:
        raise not_hosted(agent_id) from exc
    except InvalidAnswer as exc:
        raise ApiError(
            422,
            "invalid-answer",
            exc.message,
            field=str(exc.context.get("field", "value")),
            value=body["value"],
            reason=exc.reason,
        ) from exc
    except QuestionClosed as exc:
        raise _already_closed(exc, question_id) from exc
    closed = _closed(row, agent_id, question_id)
    return AnswerAccepted(status=_answer_status(closed), question=question_view(closed))


@post("/v1/agents/{agent_id:str}/questions/{question_id:str}/abandon", status_code=200)
async def abandon(
    state: State, agent_id: PathText, question_id: PathText, request: Request[Any, Any, Any]
) -> AnswerAccepted:
    """Close an open question unanswered; waiting calls are declined or told nobody replied."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    path_param("questionId", question_id, RUN_ID)
    body = await _body(request, frozenset({"from"}))
    try:
        row = await ctx.host.abandon(
            agent_id, question_id, sender=acting_as(request.scope, body.get("from"))
        )
    except AgentNotHosted as exc:
        raise not_hosted(agent_id) from exc
    except QuestionClosed as exc:
        raise _already_closed(exc, question_id) from exc
    return AnswerAccepted(
        status="abandoned", question=question_view(_closed(row, agent_id, question_id))
    )


HANDLERS = [list_questions, answer, abandon]
