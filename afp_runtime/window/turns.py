"""Turns of a window, its chars, and the current request (docs/window.md#turns,
docs/window.md#the-current-request)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from afp_runtime.messages import Message, chars
from afp_runtime.window.texts import AUTHORED_PREFIXES


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One non-tool message and every consecutive tool message after it: the removal unit.

    Attributes:
        index: position in this segmentation.
        start: index of its first message in the window.
        length: message count.
        messages: the messages.
    """

    index: int
    start: int
    length: int
    messages: tuple[Message, ...]


def segment(history: Sequence[Message]) -> tuple[Turn, ...]:
    """Split a window into turns; a call and all its results always share a turn."""
    turns: list[Turn] = []
    start = 0
    for i in range(1, len(history) + 1):
        if i == len(history) or history[i].role != "tool":
            turns.append(
                Turn(
                    index=len(turns),
                    start=start,
                    length=i - start,
                    messages=tuple(history[start:i]),
                )
            )
            start = i
    return tuple(turns) if history else ()


def turn_count(history: Sequence[Message]) -> int:
    """``len(segment(history))`` without building the turns: every non-tool message after the
    first opens a turn."""
    if not history:
        return 0
    return 1 + sum(1 for i in range(1, len(history)) if history[i].role != "tool")


window_chars = chars
"""Code points of the messages' content, summed (never tokens): ``messages.chars``."""


def is_person_message(message: Message) -> bool:
    """A person's own message: user role, not injected, not opening with an authored prefix."""
    return (
        message.role == "user"
        and message.injected_by is None
        and not message.content.startswith(AUTHORED_PREFIXES)
    )


def current_request_index(history: Sequence[Message], said: str | None) -> int | None:
    """The anchor: the last person message equal to ``said``, else the last person message."""
    last_person: int | None = None
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if not is_person_message(message):
            continue
        if said is not None and message.content == said:
            return index
        if last_person is None:
            last_person = index
    return last_person
