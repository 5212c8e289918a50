"""A run's window index: what every window visit needs of its window (turns, call names, answered
call ids, chars), kept from one visit to the next (docs/window.md#the-running-index). The window
stage hands its answers to ``visit_window``.

A window changes in two ways between visits: the loop appends messages, and a visit rebases it
(``head + (one inserted message)? + tail``). The index follows both, so a window that grew by k
messages, or slid by one turn, costs the index O(k) message work instead of a fresh
segmentation of the whole window. What it answers always equals the from-scratch functions
(``segment``, ``call_names``, ``window_chars``) over the same window; whenever it cannot tell
that it follows the window it is given (another list, a rebase that does not fit), it rebuilds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from afp_runtime.messages import Message
from afp_runtime.window import Rebase, Turn, call_names


class WindowIndex:
    """The running index of one run's window (mutable, owned by the window stage).

    ``sync(history)`` takes in what the loop appended since the index last saw the window;
    ``rebase(rebase, window)`` applies a visit's new window. Every read is of the window as last
    synced or rebased.
    """

    __slots__ = ("_answered", "_answered_set", "_calls", "_chars", "_messages", "_names", "_turns")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        # Turns as (start, messages): the index and start of a ``Turn`` are positions, which a
        # rebase shifts, so the structs are made per visit from these (no message is re-read).
        self._turns: list[tuple[int, tuple[Message, ...]]] = []
        self._names: dict[str, str] = {}
        self._calls: Counter[str] = Counter()
        self._answered: Counter[str] = Counter()
        self._answered_set: frozenset[str] | None = None
        self._chars = 0

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """``segment(window)``."""
        return tuple(
            Turn(index=i, start=start, length=len(messages), messages=messages)
            for i, (start, messages) in enumerate(self._turns)
        )

    @property
    def names(self) -> Mapping[str, str]:
        """``call_names(window)``, read-only."""
        return MappingProxyType(self._names)

    @property
    def answered_call_ids(self) -> frozenset[str]:
        """The ``tool_call_id`` of every tool message of the window."""
        if self._answered_set is None:
            self._answered_set = frozenset(self._answered)
        return self._answered_set

    @property
    def chars(self) -> int:
        """``window_chars(window)``."""
        return self._chars

    def sync(self, history: Sequence[Message]) -> None:
        """Take in ``history``: the messages appended since the index last saw it, or the whole
        list when it is not the window the index follows (judged by its first and last known
        messages: the window is only appended to, or rebased through ``rebase``)."""
        known = len(self._messages)
        follows = len(history) >= known and (
            known == 0
            or (history[0] is self._messages[0] and history[known - 1] is self._messages[-1])
        )
        if not follows:
            self._reset()
            known = 0
        for index in range(known, len(history)):
            self._append(history[index])

    def rebase(self, rebase: Rebase, window: Sequence[Message]) -> None:
        """Apply a visit's new ``window``: the first ``head_count`` and last ``kept_tail_count``
        messages of the old one, with at most one inserted message between them. A rebase that
        does not cut the old window at turn starts is taken in by rebuilding."""
        head, tail = rebase.head_count, rebase.kept_tail_count
        size = len(self._messages)
        starts = {start: i for i, (start, _) in enumerate(self._turns)}
        starts[size] = len(self._turns)
        inserted = len(window) - head - tail
        fits = (
            0 <= head <= size
            and 0 <= tail <= size - head
            and inserted in (0, 1)
            and head in starts
            and size - tail in starts
            and (tail == 0 or window[-tail] is self._messages[size - tail])
            and (head == 0 or window[head - 1] is self._messages[head - 1])
            and (inserted == 0 or window[head].role != "tool")
            # A tool message opens a turn only at the very front of a window.
            and (tail == 0 or head + inserted == 0 or self._messages[size - tail].role != "tool")
        )
        if not fits:
            self._reset()
            self.sync(window)
            return
        stale = False
        for message in self._messages[head : size - tail]:
            stale = self._forget(message) or stale
        first_tail = starts[size - tail]
        kept_head = self._turns[: starts[head]]
        shift = head + inserted - (size - tail)
        kept_tail = [(start + shift, messages) for start, messages in self._turns[first_tail:]]
        self._messages = [
            *self._messages[:head],
            *window[head : head + inserted],
            *self._messages[size - tail :],
        ]
        self._turns = kept_head
        if inserted:
            message = window[head]
            self._count(message)
            self._turns.append((head, (message,)))
            # Its calls come before the tail's: the first call of an id may have moved.
            stale = stale or bool(message.tool_calls)
        self._turns.extend(kept_tail)
        if stale:
            self._names = call_names(self._messages)

    def _reset(self) -> None:
        self._messages = []
        self._turns = []
        self._names = {}
        self._calls = Counter()
        self._answered = Counter()
        self._answered_set = None
        self._chars = 0

    def _append(self, message: Message) -> None:
        position = len(self._messages)
        self._messages.append(message)
        if message.role == "tool" and self._turns:
            start, messages = self._turns[-1]
            self._turns[-1] = (start, (*messages, message))
        else:
            self._turns.append((position, (message,)))
        self._count(message)

    def _count(self, message: Message) -> None:
        """Add what ``message`` brings to names, answered ids and chars."""
        for call in message.tool_calls:
            self._names.setdefault(call.id, call.name)
            self._calls[call.id] += 1
        if message.role == "tool" and message.tool_call_id:
            self._answered[message.tool_call_id] += 1
            self._answered_set = None
        self._chars += len(message.content)

    def _forget(self, message: Message) -> bool:
        """Take back what a removed ``message`` brought; True when the names must be found
        again (an id it called is called again elsewhere, and the first call names it; rare:
        the loop renames repeated ids)."""
        stale = False
        for call in message.tool_calls:
            self._calls[call.id] -= 1
            if self._calls[call.id] == 0:
                del self._calls[call.id]
                self._names.pop(call.id, None)
            else:
                stale = True
        if message.role == "tool" and message.tool_call_id:
            key = message.tool_call_id
            self._answered[key] -= 1
            if self._answered[key] == 0:
                del self._answered[key]
            self._answered_set = None
        self._chars -= len(message.content)
        return stale
