"""Check-in questions on Postgres: asking order, closing and re-asking under the owner check."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg

from afp_runtime.errors import QuestionClosed
from afp_runtime.records import QuestionRow
from afp_runtime.store import checks
from afp_runtime.store import rows as common
from afp_runtime.store.postgres._core import POSTS_CHANNEL, PostgresCore
from afp_runtime.store.postgres.inbox import owner_check
from afp_runtime.store.rows import encoder

_QUESTION_COLUMNS = ", ".join(
    ("a." if name == "agent_id" else "q.") + name for name in common.QUESTION_FIELDS
)

_FROM = f"SELECT {_QUESTION_COLUMNS} FROM questions q JOIN agents a ON a.agent = q.agent"


class Questions(PostgresCore):
    """An agent's check-in questions."""

    async def questions(
        self,
        agent_id: str,
        *,
        status: str | None = None,
        question_ids: Sequence[str] | None = None,
    ) -> list[QuestionRow]:
        """An agent's questions in asking order (optionally one status, or these ids)."""
        found = await self._fetch(
            f"{_FROM} WHERE a.agent_id = $1 AND ($2::text IS NULL OR q.status = $2)"
            " AND ($3::text[] IS NULL OR q.question_id = ANY($3)) ORDER BY q.question",
            agent_id,
            status,
            None if question_ids is None else list(question_ids),
        )
        return [common.question_row(row) for row in found]

    async def question(self, question_id: str) -> QuestionRow | None:
        """One question by id, or None."""
        found = await self._fetch(f"{_FROM} WHERE q.question_id = $1", question_id)
        return common.question_row(found[0]) if found else None

    async def _change_open(
        self,
        question_id: str,
        by: str | None,
        shared: bool,
        change: Callable[[asyncpg.Connection], Awaitable[None]],
    ) -> QuestionRow | None:
        """``change`` in one durable transaction, once the question is known to be open and
        ``by`` may write it; the question as it then is, or None when there is none."""

        async def work(conn: asyncpg.Connection) -> bool:
            found = await conn.fetchrow(
                "SELECT q.status, q.agent, a.agent_id FROM questions q"
                " JOIN agents a ON a.agent = q.agent WHERE q.question_id = $1 FOR UPDATE OF q",
                question_id,
            )
            if found is None:
                return False
            current, agent, agent_id = found
            if current != "open":
                raise QuestionClosed(
                    f"question {question_id!r} is already {current}",
                    question_id=question_id,
                    status=current,
                )
            if not shared:
                await owner_check(conn, agent, agent_id, by, claim=False)
            await change(conn)
            # A closed question may let a paused turn go on: its host hears of it at COMMIT.
            await conn.execute("SELECT pg_notify($1, $2)", POSTS_CHANNEL, agent_id)
            return True

        if not await self._write(work, full=True):
            return None
        return await self.question(question_id)

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
        """Close an open question ``answered``, ``abandoned`` or ``unsettled`` durably, as
        ``CheckpointStore.close_question`` states.

        Raises:
            QuestionClosed: the question is no longer open; nothing changes.
            NotOwner: ``by`` is not the conversation's owner; nothing changes.
        """
        checks.check_sender(by)

        async def change(conn: asyncpg.Connection) -> None:
            await conn.execute(
                "UPDATE questions SET status = $1, answer = $2, answered_at_ms = $3,"
                " answered_by = $4, repeat = COALESCE($5, repeat), detail = COALESCE($6, detail)"
                " WHERE question_id = $7",
                status,
                None if answer is None else encoder.encode(answer),
                now_ms,
                by,
                repeat,
                None if detail is None else encoder.encode(detail),
                question_id,
            )

        return await self._change_open(question_id, by, shared, change)

    async def reask_question(
        self,
        question_id: str,
        *,
        repeat: int,
        detail: dict[str, Any],
        by: str | None = None,
        shared: bool = False,
    ) -> QuestionRow | None:
        """Keep an open question open after a refused answer (its ``repeat`` and ``detail``
        change), durably.

        Raises:
            QuestionClosed: the question is no longer open.
            NotOwner: ``by`` is not the conversation's owner.
        """

        async def change(conn: asyncpg.Connection) -> None:
            await conn.execute(
                "UPDATE questions SET repeat = $1, detail = $2 WHERE question_id = $3",
                repeat,
                encoder.encode(detail),
                question_id,
            )

        return await self._change_open(question_id, by, shared, change)
