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

import operator
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from afp_runtime.messages import Message, chars
from afp_runtime.window import Rebase, Turn, call_names

_START = operator.attrgetter("start")


class WindowIndex:
    """The running index of one run's window (mutable, owned by the window stage).

    ``sync(history)`` takes in what the loop appended since the index last saw the window;
    ``rebase(rebase, window)`` applies a visit's new window. Every read is of the window as last
    synced or rebased.
    """

    __slots__ = (
        "_answered",
        "_answered_set",
        "_calls",
        "_chars",
        "_messages",
        "_names",
        "_turns",
        "_turns_tuple",
    )

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._turns: list[Turn] = []
        self._turns_tuple: tuple[Turn, ...] | None = None
        self._names: dict[str, str] = {}
        # How often each call id is called, and each answered id answered, in the window.
        self._calls: dict[str, int] = {}
        self._answered: dict[str, int] = {}
        self._answered_set: frozenset[str] | None = None
        self._chars = 0

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """``segment(window)``."""
        if self._turns_tuple is None:
            self._turns_tuple = tuple(self._turns)
        return self._turns_tuple

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
        if not follows or known == 0:
            self._build(history)
            return
        for index in range(known, len(history)):
            self._append(history[index])

    def rebase(self, rebase: Rebase, window: Sequence[Message]) -> None:
        """Apply a visit's new ``window``: the first ``head_count`` and last ``kept_tail_count``
        messages of the old one, with at most one inserted message between them. A rebase that
        does not cut the old window at turn starts is taken in by rebuilding."""
        head, tail = rebase.head_count, rebase.kept_tail_count
        size = len(self._messages)
        inserted = len(window) - head - tail
        first_gone = self._turn_at(head) if 0 <= head <= size else None
        first_kept = self._turn_at(size - tail) if 0 <= tail <= size - head else None
        fits = (
            first_gone is not None
            and first_kept is not None
            and inserted in (0, 1)
            and (tail == 0 or window[-tail] is self._messages[size - tail])
            and (head == 0 or window[head - 1] is self._messages[head - 1])
            and (inserted == 0 or window[head].role != "tool")
            # A tool message opens a turn only at the very front of a window.
            and (tail == 0 or head + inserted == 0 or self._messages[size - tail].role != "tool")
        )
        if not fits or first_gone is None or first_kept is None:
            self._build(window)
            return
        stale = False
        for message in self._messages[head : size - tail]:
            stale = self._forget(message) or stale
        shift = head + inserted - (size - tail)
        turns = self._turns[:first_gone]
        if inserted:
            message = window[head]
            self._count(message)
            turns.append(Turn(index=len(turns), start=head, length=1, messages=(message,)))
            # Its calls come before the tail's: the first call of an id may have moved.
            stale = stale or bool(message.tool_calls)
        # Only positions change in the kept tail: its turns keep their messages.
        base = len(turns) - first_kept
        turns += [
            Turn(index=t.index + base, start=t.start + shift, length=t.length, messages=t.messages)
            for t in self._turns[first_kept:]
        ]
        self._turns = turns
        self._turns_tuple = None
        self._messages[head : size - tail] = window[head : head + inserted]
        if stale:
            self._names = call_names(self._messages)

    def _turn_at(self, position: int) -> int | None:
        """The index of the turn starting at window ``position`` (the turn count at the end of
        the window), or None when no turn starts there."""
        if position == len(self._messages):
            return len(self._turns)
        found = bisect_left(self._turns, position, key=_START)
        if found < len(self._turns) and self._turns[found].start == position:
            return found
        return None

    def _build(self, window: Sequence[Message]) -> None:
        """Index ``window`` from scratch (a run's first visit, or a window it does not follow)."""
        self._messages = list(window)
        self._turns = _segment(window)
        self._turns_tuple = None
        self._names = call_names(window)
        self._calls = dict(Counter(call.id for m in window for call in m.tool_calls))
        self._answered = dict(
            Counter(m.tool_call_id for m in window if m.role == "tool" and m.tool_call_id)
        )
        self._answered_set = None
        self._chars = chars(window)

    def _append(self, message: Message) -> None:
        position = len(self._messages)
        self._messages.append(message)
        turns = self._turns
        if message.role == "tool" and turns:
            last = turns[-1]
            turns[-1] = Turn(
                index=last.index,
                start=last.start,
                length=last.length + 1,
                messages=(*last.messages, message),
            )
        else:
            turns.append(Turn(index=len(turns), start=position, length=1, messages=(message,)))
        self._turns_tuple = None
        self._count(message)

    def _count(self, message: Message) -> None:
        """Add what ``message`` brings to names, answered ids and chars."""
        calls = self._calls
        for call in message.tool_calls:
            self._names.setdefault(call.id, call.name)
            calls[call.id] = calls.get(call.id, 0) + 1
        key = message.tool_call_id
        if key and message.role == "tool":
            self._answered[key] = self._answered.get(key, 0) + 1
            self._answered_set = None
        self._chars += len(message.content)

    def _forget(self, message: Message) -> bool:
        """Take back what a removed ``message`` brought; True when the names must be found
        again (an id it called is called again elsewhere, and the first call names it; rare:
        the loop renames repeated ids)."""
        stale = False
        calls = self._calls
        for call in message.tool_calls:
            left = calls[call.id] - 1
            if left:
                calls[call.id] = left
                stale = True
            else:
                del calls[call.id]
                self._names.pop(call.id, None)
        key = message.tool_call_id
        if key and message.role == "tool":
            left = self._answered[key] - 1
            if left:
                self._answered[key] = left
            else:
                del self._answered[key]
            self._answered_set = None
        self._chars -= len(message.content)
        return stale


def _segment(window: Sequence[Message]) -> list[Turn]:
    """The window package's ``segment`` (not exported; tests hold the two equal): a turn is a
    non-tool message and the tool messages after it, or the tool messages a window opens with."""
    turns: list[Turn] = []
    start = 0
    for end in range(1, len(window) + 1):
        if end == len(window) or window[end].role != "tool":
            messages = tuple(window[start:end])
            turns.append(Turn(index=len(turns), start=start, length=end - start, messages=messages))
            start = end
    return turns
