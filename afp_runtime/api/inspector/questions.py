"""Answering or abandoning a paused turn's question from the timeline
(docs/inspector.md#questions): the forms post here, the host checks the value and the owner
exactly as for ``POST /v1/agents/ID/questions/QID/answer``."""

from __future__ import annotations

import urllib.parse
from typing import Any

from afp_runtime.api._context import ApiContext
from afp_runtime.api._params import RUN_ID, path_param
from afp_runtime.api._problems import ApiError
from afp_runtime.api.constants import SENDER_LIMIT
from afp_runtime.api.principals import Principal
from afp_runtime.errors import InvalidAnswer, NotOwner, QuestionClosed
from afp_runtime.host import AgentNotHosted

__all__ = ["Outcome", "act", "form_fields"]


class Outcome:
    """What became of a form: an HTTP status and a sentence for the person (None: done)."""

    def __init__(self, status: int, problem: str | None) -> None:
        self.status = status
        self.problem = problem


def form_fields(body: bytes) -> dict[str, str]:
    """A form body's fields, the first value of each.

    Raises:
        ApiError: 400 when the body, or a value once its %-escapes are read, is not UTF-8
            (a lone surrogate included): nothing of it is stored as replacement characters.
    """
    try:
        parsed = urllib.parse.parse_qs(
            body.decode("utf-8"), keep_blank_values=True, errors="strict"
        )
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, "invalid-body", f"the form is not UTF-8 text ({exc.reason})", field="body"
        ) from None
    return {name: values[0] for name, values in parsed.items()}


def _value(kind: str, fields: dict[str, str]) -> Any:
    """The answer value the form stands for: an approval's decision and note, else the text."""
    if kind == "approval":
        decision = {"decision": fields.get("decision", "")}
        note = fields.get("note", "").strip()
        return {**decision, "note": note} if note else decision
    return fields.get("value", "")


async def act(
    ctx: ApiContext,
    agent_id: str,
    question_id: str,
    action: str,
    fields: dict[str, str],
    *,
    principal: Principal | None,
) -> Outcome:
    """Answer (``action="answer"``) or abandon the question with the form's fields, as the
    form's “Answering as”; a user principal's session answers as that principal, and may name
    no one else (docs/inspector.md#signing-in)."""
    path_param("questionId", question_id, RUN_ID)
    sender = fields.get("from", "").strip() or None
    if principal is not None and not principal.admin:
        if sender is not None and sender != principal.name:
            return Outcome(
                403,
                f"You are signed in as “{principal.name}” and may answer only as yourself, "
                f"not as “{sender[:SENDER_LIMIT]}”.",
            )
        sender = principal.name
    if sender is not None and len(sender) > SENDER_LIMIT:
        return Outcome(422, f"“Answering as” may hold at most {SENDER_LIMIT} characters.")
    rows = await ctx.reader.questions(agent_id)
    row = next((r for r in rows if r.question_id == question_id), None)
    if row is None:
        return Outcome(404, "This agent has no such question.")
    try:
        if action == "answer":
            closed = await ctx.host.answer(
                agent_id, question_id, _value(row.kind, fields), sender=sender
            )
        else:
            closed = await ctx.host.abandon(agent_id, question_id, sender=sender)
    except InvalidAnswer as exc:
        return Outcome(422, f"The answer was refused: {exc.message}")
    except QuestionClosed:
        return Outcome(409, "This question is closed already.")
    except NotOwner:
        field = "“Answering as”" if action == "answer" else "“Abandoning as”"
        if sender is None:
            return Outcome(403, f"This conversation has an owner: name it in {field}.")
        return Outcome(403, f"This conversation belongs to someone else, not “{sender}”.")
    except AgentNotHosted:
        return Outcome(409, "Another host runs this agent; answer it there.")
    if closed is None:
        return Outcome(404, "This agent has no such question.")
    return Outcome(303, None)
