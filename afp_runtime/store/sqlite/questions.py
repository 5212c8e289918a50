"""Check-in questions: asking order, closing and re-asking under the owner check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiosqlite

from afp_runtime.errors import QuestionClosed
from afp_runtime.records import QuestionRow
from afp_runtime.store import checks
from afp_runtime.store import rows as common
from afp_runtime.store.sqlite._core import SqliteCore, encoder, rows_of
from afp_runtime.store.sqlite.inbox import check_owner

_QUESTION_COLUMNS = ", ".join(
    ("a." if name == "agent_id" else "q.") + name for name in common.QUESTION_FIELDS
)


class Questions(SqliteCore):
    """An agent's check-in questions."""

    async def questions(
        self,
        agent_id: str,
        *,
        status: str | None = None,
        question_ids: Sequence[str] | None = None,
    ) -> list[QuestionRow]:
        """An agent's questions in asking order (optionally one status, or these ids)."""
        sql = (
            f"SELECT {_QUESTION_COLUMNS} FROM questions q JOIN agents a ON a.agent=q.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if status is not None:
            sql += " AND q.status=?"
            params += (status,)
        if question_ids is not None:
            sql += f" AND q.question_id IN ({', '.join('?' * len(question_ids))})"
            params += tuple(question_ids)
        rows = await self._fetch(sql + " ORDER BY q.question", params)
        return [common.question_row(row) for row in rows]

    async def question(self, question_id: str) -> QuestionRow | None:
        """One question by id, or None."""
        rows = await self._fetch(
            f"SELECT {_QUESTION_COLUMNS} FROM questions q JOIN agents a ON a.agent=q.agent"
            " WHERE q.question_id=?",
            (question_id,),
        )
        return common.question_row(rows[0]) if rows else None

    async def close_question(
        self,
        question_id: str,
        *,
        status: str,
        now_ms: int,
        answer: Any = None,
        by: str | None = None,
        shared: bool = False,
        repeat: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> QuestionRow | None:
        """Close an open question ``answered`` (with ``answer``), ``abandoned`` or
        ``unsettled`` (a time question whose answers were refused too often; ``repeat`` and
        ``detail`` then record the last refusal), durably (a
        ``synchronous=FULL`` commit) — the answer acknowledgement of docs/loop.md#durability-modes.

        Returns:
            The closed question, or None when no question has that id.

        Raises:
            QuestionClosed: the question is no longer open; nothing changes.
            NotOwner: ``by`` is not the conversation's owner; nothing changes.
        """
        checks.check_sender(by)
        async with self._transaction(full=True) as db:
            if not await self._writable_question(db, question_id, by, shared=shared):
                return None
            await db.execute(
                "UPDATE questions SET status=?, answer=?, answered_at_ms=?, answered_by=?,"
                " repeat=COALESCE(?, repeat), detail=COALESCE(?, detail) WHERE question_id=?",
                (
                    status,
                    None if answer is None else encoder.encode(answer),
                    now_ms,
                    by,
                    repeat,
                    None if detail is None else encoder.encode(detail),
                    question_id,
                ),
            )
        self.wakeful_commits += 1
        return await self.question(question_id)

    async def _writable_question(
        self, db: aiosqlite.Connection, question_id: str, by: str | None, *, shared: bool
    ) -> bool:
        """Whether the question exists; raises unless it is open and ``by`` may write it."""
        rows = await rows_of(
            db,
            "SELECT q.status, q.agent, a.agent_id FROM questions q"
            " JOIN agents a ON a.agent=q.agent WHERE q.question_id=?",
            (question_id,),
        )
        if not rows:
            return False
        current, agent, agent_id = rows[0]
        if current != "open":
            raise QuestionClosed(
                f"question {question_id!r} is already {current}",
                question_id=question_id,
                status=current,
            )
        await check_owner(db, agent, agent_id, by, shared=shared, claim=False)
        return True

    async def reask_question(
        self,
        question_id: str,
        *,
        repeat: int,
        detail: dict[str, Any],
        by: str | None = None,
        shared: bool = False,
    ) -> QuestionRow | None:
        """Keep an open question open after a refused answer: its ``repeat`` and ``detail``
        (the refusal) change, in a ``synchronous=FULL`` commit (the answer's acknowledgement).

        Raises:
            QuestionClosed: the question is no longer open.
            NotOwner: ``by`` is not the conversation's owner.
        """
        async with self._transaction(full=True) as db:
            if not await self._writable_question(db, question_id, by, shared=shared):
                return None
            await db.execute(
                "UPDATE questions SET repeat=?, detail=? WHERE question_id=?",
                (repeat, encoder.encode(detail), question_id),
            )
        return await self.question(question_id)
