"""What a driver knows of its agent without reading the store
(docs/host.md#what-a-worker-keeps-in-memory): whether it has an open turn, its queued messages
in position order (the inbox head) with the highest position known, and the conversation as its
last answered run committed it. A host's worker runs from it; whatever the driver was not told
of makes it ``forget``, and the next look reads the store.
"""

from __future__ import annotations

from afp_runtime.store import InboxRow, LoadedConversation

__all__ = ["Known", "Queued"]

# A queued message: its id, position and text.
Queued = tuple[str, int, str]


class Known:
    """One driver's knowledge of its agent; empty until a read or a run fills it."""

    def __init__(self) -> None:
        # None: nothing known; else the agent has no open turn and these are queued.
        self.queue: list[Queued] | None = None
        # The highest inbox position known, so a delivered post is known to be the next one.
        self.last_position: int | None = None
        # The conversation as the last answered run committed it (kept with ``queue``).
        self.loaded: LoadedConversation | None = None
        # Moves at every ``forget``: a read or a run begun before it may not fill what it
        # forgot.
        self.generation = 0

    def forget(self) -> None:
        """Know nothing: the next look reads the store."""
        self.queue = None
        self.last_position = None
        self.loaded = None
        self.generation += 1

    def deliver(self, message_id: str, position: int, text: str) -> None:
        """A message posted in this process: kept when it is the next position known (no
        message from elsewhere came between), else everything is forgotten."""
        if self.queue is not None and self.last_position == position - 1:
            self.queue.append((message_id, position, text))
            self.last_position = position
        else:
            self.forget()

    def read(self, queued: list[InboxRow], generation: int) -> list[Queued]:
        """The queued messages a read found (there was no open turn), kept unless the driver
        forgot since ``generation`` (a post raced the read): then they serve once."""
        found = [(m.message_id, m.position, m.text) for m in queued]
        if generation == self.generation:
            self.queue = found
            if found:
                self.last_position = max(self.last_position or 0, found[-1][1])
        return found

    def take_loaded(self) -> LoadedConversation | None:
        """The kept conversation, handed to the run about to change it (kept no longer)."""
        loaded, self.loaded = self.loaded, None
        return loaded

    def answered(self, loaded: LoadedConversation, generation: int) -> None:
        """A run begun at ``generation`` answered, committing ``loaded``: the next run may
        start from it, unless the driver forgot meanwhile."""
        if generation == self.generation:
            self.loaded = loaded
