"""The CheckpointStore port: only the operations the loop, host and CLI need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from afp_runtime.messages import Message
from afp_runtime.records import ConversationState, ListRef, QuestionRow, StoredFoldedSpan, Txn
from afp_runtime.store.sqlite.rows import InboxRow, RunRow, StoredBundle
from afp_runtime.store.sqlite.store import Ack, JournalEntry, LoadedConversation


class CheckpointStore(Protocol):
    """Durable state of agents: commit log, conversation checkpoints, inbox, tool journal."""

    async def ensure_agent(self, agent_id: str, *, now_ms: int) -> None:
        """Create the agent with an empty conversation if it does not exist."""
        ...

    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint without messages."""
        ...

    async def load_conversation(self, agent_id: str) -> LoadedConversation:
        """The checkpoint and its resolved history."""
        ...

    async def resolve(
        self, agent_id: str, ref: ListRef
    ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
        """Messages and fingerprints of a list reference."""
        ...

    async def fingerprints(self, agent_id: str, ref: ListRef) -> tuple[str, ...]:
        """Fingerprints of a list reference's items, without bodies."""
        ...

    async def commit(self, txn: Txn) -> None:
        """Write one transaction atomically."""
        ...

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        message_id: str,
        now_ms: int,
        idempotency_key: str | None = None,
        sender: str | None = None,
        shared: bool = False,
        time: dict[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably (the owner check included)."""
        ...

    async def questions(
        self,
        agent_id: str,
        *,
        status: str | None = None,
        question_ids: Sequence[str] | None = None,
    ) -> list[QuestionRow]:
        """An agent's check-in questions in asking order."""
        ...

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
        """Close an open question durably."""
        ...

    async def reask_question(
        self,
        question_id: str,
        *,
        repeat: int,
        detail: dict[str, Any],
        by: str | None = None,
        shared: bool = False,
    ) -> QuestionRow | None:
        """Keep a question open after a refused answer."""
        ...

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """The tool journal of one turn."""
        ...

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order."""
        ...

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""
        ...

    async def runs(self, agent_id: str | None = None, *, run_id: str | None = None) -> list[RunRow]:
        """Runs in start order: all, one agent's, or one by id."""
        ...

    async def last_bundle(self, run_id: str) -> StoredBundle | None:
        """The last committed bundle of a run."""
        ...

    async def ledger(
        self, agent_id: str, *, kind: str | None = None, turn: int | None = None
    ) -> list[dict[str, Any]]:
        """The conversation's ledger rows in wire form, oldest first."""
        ...

    async def folded_spans(
        self, agent_id: str, *, summary_fingerprint: str | None = None
    ) -> list[StoredFoldedSpan]:
        """The conversation's folded spans, oldest first."""
        ...

    async def aclose(self) -> None:
        """Close the store."""
        ...
