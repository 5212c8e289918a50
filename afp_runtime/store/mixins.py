"""Port operations that read no table of their own, written once for every backend: the fence
a store's commits are checked by, and a conversation loaded from its checkpoint and history."""

from __future__ import annotations

import abc

from afp_runtime.errors import StoreError
from afp_runtime.messages import Message
from afp_runtime.records import ConversationState, ListRef
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
    """``load_conversation`` over a backend's ``conversation_state`` and ``resolve``."""

    @abc.abstractmethod
    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint (each backend answers it)."""

    @abc.abstractmethod
    async def resolve(
        self, agent_id: str, ref: ListRef
    ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
        """Messages and fingerprints of a list reference (each backend answers it)."""

    async def load_conversation(self, agent_id: str) -> LoadedConversation:
        """The checkpoint and its history, resolved: O(window), not O(all history)."""
        state = await self.conversation_state(agent_id)
        if state is None:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        messages, fps = await self.resolve(agent_id, state.history)
        return LoadedConversation(state=state, history=messages, fingerprints=fps)
