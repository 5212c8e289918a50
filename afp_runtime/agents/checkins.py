"""Answering and abandoning check-in questions (docs/host.md#answering-a-question,
docs/host.md#abandoning-a-question).

One code path for the host (API) and the CLI writing to the store directly: validate the value
for the question's kind before any transaction, then close the question in one
``synchronous=FULL`` commit. Starting the answer run is the agent's worker's job (it notices a
paused turn whose questions are all closed).
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.errors import (
    InvalidAnswer,
    InvalidValue,
    QuestionClosed,
    shown,
)
from afp_runtime.records import QuestionRow
from afp_runtime.store import CheckpointStore
from afp_runtime.time import AnswerProblem, judge_answer

ANSWER_LIMIT = 4_096
"""Most code points of a free-text answer."""

NOTE_LIMIT = 4_096
"""Most code points of an approval's note."""


def validate_answer(kind: str, value: Any) -> Any:
    """The answer value for a question of ``kind``, checked (docs/host.md#question-kinds).

    ``tool-ask``: free text of 1 to 4,096 code points. ``approval``: ``{"decision": "approve" |
    "decline", "note"?: str}``.

    Raises:
        InvalidAnswer: the value does not fit the kind; ``reason`` names the rule broken.
    """
    if kind == "tool-ask":
        return _text("a tool question", value, not_text="not-text")
    if kind == "approval":
        if not isinstance(value, dict):
            raise InvalidAnswer(
                f'an approval is answered with {{"decision": "approve"|"decline"}}, '
                f"not {_as_json(value)}",
                reason="not-a-decision",
                field="value",
            )
        unknown = sorted(set(value) - {"decision", "note"})
        if unknown:
            raise InvalidAnswer(
                f"an approval answer has no field {unknown[0]!r}",
                reason="unknown-field",
                field=f"value.{unknown[0]}",
            )
        if value.get("decision") not in ("approve", "decline"):
            raise InvalidAnswer(
                f"decision must be approve or decline, not {_as_json(value.get('decision'))}",
                reason="decision",
                field="value.decision",
            )
        note = value.get("note")
        if note is not None and (not isinstance(note, str) or len(note) > NOTE_LIMIT):
            raise InvalidAnswer(
                f"note must be text of at most {NOTE_LIMIT:,} code points",
                reason="note",
                field="value.note",
            )
        return dict(value)
    if kind == "time":
        # The structure only (a 422 when wrong, not counted as an attempt,
        # docs/time.md#judging-answers); the content is judged against the question by
        # ``answer_question``.
        return _text("a time question", value, not_text="not-a-string")
    raise InvalidAnswer(
        f"questions of kind {kind!r} cannot be answered by this build",
        reason="kind-not-supported",
        field="kind",
    )


def _text(what: str, value: Any, *, not_text: str) -> str:
    if not isinstance(value, str):
        raise InvalidAnswer(
            f"{what} is answered with text, not {_as_json(value)}", reason=not_text, field="value"
        )
    if not 1 <= len(value) <= ANSWER_LIMIT:
        raise InvalidAnswer(
            f"an answer holds 1 to {ANSWER_LIMIT:,} code points, not {len(value)}",
            reason="length",
            field="value",
        )
    return value


async def answer_question(
    store: CheckpointStore,
    agent_id: str,
    question_id: str,
    value: Any,
    *,
    now_ms: int,
    by: str | None = None,
    shared: bool = False,
) -> QuestionRow | None:
    """Validate ``value`` and close the question ``answered``; None when the agent has no such
    question. A time answer the question's checks refuse keeps it open (its ``repeat`` + 1 and
    the refusal on its ``detail``: the caller answers ``re-asked``), or closes it
    ``unsettled`` past the agent's limit.

    Raises:
        InvalidAnswer: the value does not fit the question's kind (nothing is written).
        QuestionClosed: the question was answered or abandoned already.
        NotOwner: ``by`` is not the conversation's owner.
    """
    question = await _open_question(store, agent_id, question_id)
    if question is None:
        return None
    checked = validate_answer(question.kind, value)
    if question.kind == "time" and question.detail is not None:
        problem = judge_answer(question.detail, checked)
        if problem is not None:
            return await _refuse_time(store, question, checked, problem, now_ms, by, shared)
    return await store.close_question(
        question_id, status="answered", answer=checked, now_ms=now_ms, by=by, shared=shared
    )


async def _refuse_time(
    store: CheckpointStore,
    question: QuestionRow,
    value: str,
    problem: AnswerProblem,
    now_ms: int,
    by: str | None,
    shared: bool,
) -> QuestionRow | None:
    """A refused time answer re-asks (``repeat`` + 1, the refusal kept on the question), or
    closes the question ``unsettled`` once ``maxAnswerRepeats`` were used
    (docs/loop.md#durability-modes)."""
    assert question.detail is not None
    detail = {
        **question.detail,
        "refused": {"answer": value, "reason": problem.reason, "why": problem.sentence},
    }
    limit = int(question.detail.get("maxAnswerRepeats", 3))
    if question.repeat >= limit:
        return await store.close_question(
            question.question_id,
            status="unsettled",
            now_ms=now_ms,
            by=by,
            shared=shared,
            detail=detail,
        )
    return await store.reask_question(
        question.question_id, repeat=question.repeat + 1, detail=detail, by=by, shared=shared
    )


async def abandon_question(
    store: CheckpointStore,
    agent_id: str,
    question_id: str,
    *,
    now_ms: int,
    by: str | None = None,
    shared: bool = False,
) -> QuestionRow | None:
    """Close the question ``abandoned`` (docs/host.md#abandoning-a-question); None when the agent
    has no such question.

    Raises:
        QuestionClosed: the question was answered or abandoned already.
        NotOwner: ``by`` is not the conversation's owner.
    """
    question = await _open_question(store, agent_id, question_id)
    if question is None:
        return None
    return await store.close_question(
        question_id, status="abandoned", now_ms=now_ms, by=by, shared=shared
    )


async def _open_question(
    store: CheckpointStore, agent_id: str, question_id: str
) -> QuestionRow | None:
    if not isinstance(question_id, str) or not question_id:
        raise InvalidValue("a question id is a non-empty text", field="questionId")
    found = await store.questions(agent_id, question_ids=[question_id])
    if not found:
        return None
    question = found[0]
    if question.status != "open":
        raise QuestionClosed(
            f"question {question_id!r} is already {question.status}",
            question_id=question_id,
            status=question.status,
        )
    return question


def _as_json(value: Any) -> str:
    """An answer as the client sent it: JSON (``null``, an object), cut to 200 code points;
    answers arrive as JSON, so they are named in JSON, not as Python writes them."""
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, ValueError):
        return shown(value)
    return text if len(text) <= 200 else text[:200] + "…"
