"""Answering and abandoning a paused turn's question (docs/host.md#answering-a-question,
docs/host.md#abandoning-a-question), written once for the doors that write to a store: the
Python ``Store``, ``afp answer`` and the scenario runner. A host closes questions the same way
(``agents.answer_question``) and wakes its worker; the door then only renders the row.
"""

from __future__ import annotations

from typing import Any, Literal

from afp_runtime.agents import abandon_question, answer_question
from afp_runtime.errors import NotFound
from afp_runtime.records import Clock, QuestionRow
from afp_runtime.store import Store

AnswerStatus = Literal["accepted", "re-asked", "unsettled", "abandoned"]
"""How an answer was taken (the API's ``AnswerAccepted.status``): ``re-asked`` when a time
question asks again, ``unsettled`` when its answer could not be judged
(docs/time.md#judging-answers)."""


def answer_status(row: QuestionRow) -> AnswerStatus:
    """How the answer that closed (or re-opened) ``row`` was taken."""
    if row.status == "abandoned":
        return "abandoned"
    if row.status == "open":
        return "re-asked"
    return "unsettled" if row.status == "unsettled" else "accepted"


def _found(row: QuestionRow | None, agent_id: str, question_id: str) -> QuestionRow:
    if row is None:
        raise NotFound(
            f"agent {agent_id!r} has no question {question_id!r}",
            what="question",
            value=question_id,
        )
    return row


async def answer(
    store: Store,
    agent_id: str,
    question_id: str,
    value: Any,
    *,
    clock: Clock,
    sender: str | None = None,
    shared: bool = False,
) -> QuestionRow:
    """Answer an open question durably; the turn runs on once its batch is closed.

    Raises:
        NotFound: the agent has no such question.
        InvalidAnswer: the value does not fit the question's kind.
        QuestionClosed: the question was answered or abandoned already.
        NotOwner: ``sender`` is not the conversation's owner.
    """
    row = await answer_question(
        store, agent_id, question_id, value, now_ms=clock.now_ms(), by=sender, shared=shared
    )
    return _found(row, agent_id, question_id)


async def abandon(
    store: Store,
    agent_id: str,
    question_id: str,
    *,
    clock: Clock,
    sender: str | None = None,
    shared: bool = False,
) -> QuestionRow:
    """Close an open question unanswered (the tool is told nobody replied). Raises as
    ``answer``, without ``InvalidAnswer``."""
    row = await abandon_question(
        store, agent_id, question_id, now_ms=clock.now_ms(), by=sender, shared=shared
    )
    return _found(row, agent_id, question_id)
