"""Port operations written once for every backend: the fence a store's commits are checked by,
and reading a conversation (its list references resolved over one primitive read)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from afp_runtime.errors import StoreError
from afp_runtime.messages import Message
from afp_runtime.records import ConversationState, ListRef
from afp_runtime.store import rows
from afp_runtime.store.values import LoadedConversation


class Fencing:
    """``fence_with`` and ``fence`` of the port over a backend's ``_fence``."""

    _fence: tuple[str, int] | None

    def fence_with(self, host_id: str | None, epoch: int | None = None) -> None:
        """Fence every later ``commit`` by this host's claim: it writes only while the agent is
        claimed by ``(host_id, epoch)`` and the host's lease row still carries ``epoch``, and
        raises ``LeaseLost`` otherwise. ``fence_with(None)`` removes the fence."""
        self._fence = None if host_id is None or epoch is None else (host_id, epoch)

    @property
    def fence(self) -> tuple[str, int] | None:
        """The ``(host_id, lease_epoch)`` commits are fenced by, or None."""
        return self._fence


class Loading(abc.ABC):
    """``load_conversation``, ``resolve`` and ``fingerprints`` over a backend's
    ``conversation_state`` and one primitive read (``_read_rows``, spelled by ``_placeholder``)."""

    @abc.abstractmethod
    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint (each backend answers it)."""

    @staticmethod
    @abc.abstractmethod
    def _placeholder(n: int) -> str:
        """The backend's spelling of the ``n``-th placeholder."""

    @abc.abstractmethod
    async def _read_rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Every row of one read (each backend answers it)."""

    async def resolve(
        self, agent_id: str, ref: ListRef
    ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
        """The messages (with their markers) and fingerprints of a list reference: one read
        per ``RANGES_PER_READ`` ranges (docs/storage.md#message-bodies-and-list-references)."""
        found = await self._items(
            agent_id,
            ref,
            "i.pos, i.fp, i.flags, i.injected_by, b.body",
            " LEFT JOIN bodies b ON b.fp = i.fp",
        )
        messages, fps = rows.resolved_ref(agent_id, ref.ranges, found)
        return tuple(messages), tuple(fps)

    async def fingerprints(self, agent_id: str, ref: ListRef) -> tuple[str, ...]:
        """The fingerprints of a list reference's items, in order, without reading bodies."""
        found = await self._items(agent_id, ref, "i.pos, i.fp", "")
        return tuple(rows.ref_fingerprints(ref.ranges, found))

    async def _items(self, agent_id: str, ref: ListRef, columns: str, joins: str) -> list[Any]:
        found: list[Any] = []
        for ranges in rows.chunks(ref.ranges):
            sql, params = rows.ranges_read(columns, joins, ranges, self._placeholder)
            found += await self._read_rows(sql, [agent_id, *params])
        # A read that found no item may have named no agent.
        if not found and not await self._read_rows(
            f"SELECT 1 FROM agents WHERE agent_id = {self._placeholder(1)}", [agent_id]
        ):
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        return found

    async def load_conversation(self, agent_id: str) -> LoadedConversation:
        """The checkpoint and its history, resolved: O(window), not O(all history)."""
        state = await self.conversation_state(agent_id)
        if state is None:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        messages, fps = await self.resolve(agent_id, state.history)
        return LoadedConversation(state=state, history=messages, fingerprints=fps)
