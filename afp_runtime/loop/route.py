"""The route after a model reply, and tool call ids kept unique in a conversation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from afp_runtime.messages import (
    ModelReply,
    ToolCall,
)

Route = Literal["tool-calls", "wrap-up", "final"]


def decide_route(
    reply: ModelReply, *, iteration: int, max_iterations: int, wrap_up: bool, wrap_up_asked: bool
) -> tuple[Route, str]:
    """The route after a reply and why (docs/loop.md#routing-after-a-reply)."""
    if not reply.tool_calls:
        return "final", "no-tool-calls"
    if wrap_up_asked:
        return "final", "wrap-up-call"
    if iteration < max_iterations:
        return "tool-calls", "tool-calls"
    if wrap_up:
        return "wrap-up", "max-iterations"
    return "final", "cut-short"


def unique_call_ids(calls: Sequence[ToolCall], used: set[str]) -> tuple[ToolCall, ...]:
    """Rename call ids already used in the conversation (``<id>~2``, ``<id>~3``…); adds to ``used``.
    A call with an empty id (a model or adapter that sent none) is named ``call``, then
    ``call~2``…: a tool result must name the call it answers. A U+0000 in an id becomes U+FFFD
    (no provider sends one, and the tool journal keys calls by id in text).

    Renaming is deterministic, so a recovery that re-plans the same committed reply gets the
    same ids.
    """
    result = []
    for call in calls:
        base = call.id.replace("\x00", "\ufffd") or "call"
        new_id = base
        n = 1
        while new_id in used:
            n += 1
            new_id = f"{base}~{n}"
        used.add(new_id)
        result.append(call if new_id == call.id else msgspec.structs.replace(call, id=new_id))
    return tuple(result)
