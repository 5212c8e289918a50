"""Pins: the turns a visit holds back on purpose, and the ceilings that bound them
(docs/window.md#pins).

The stage computes the candidates of both pin kinds and binds them into the guards, so every
strategy, custom ones included, is subject to them. Everything here is linear in window length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from afp_runtime.messages import Message
from afp_runtime.window.names import CallNames, names_index, tool_name_of
from afp_runtime.window.observations import (
    LedgerFactPin,
    PinnedTurn,
    ToolResultPin,
    WindowObservations,
)
from afp_runtime.window.refusals import Standing
from afp_runtime.window.turns import Turn, window_chars


def _beyond(position: int, after: int | None) -> bool:
    """A window index lies past the anchor bound (no bound without an anchor)."""
    return after is None or position > after


def tool_result_pins(
    turns: Sequence[Turn], history: Sequence[Message] | CallNames, after: int | None
) -> tuple[ToolResultPin, ...]:
    """Last-tool-result pin candidates, newest first (docs/window.md#last-tool-result-pin).

    At most one pin per tool name (its latest result) and per turn (named after the turn's
    newest nameable result). Messages at window index ``<= after`` (the anchor) are never
    examined, so a new person turn releases the whole previous loop. Names come from
    ``tool_name_of`` with the whole window as context.
    """
    names = names_index(history)
    seen: set[str] = set()
    pins: list[ToolResultPin] = []
    # Positions at or before the anchor are never examined (no bound without an anchor).
    bound = -1 if after is None else after
    for turn in reversed(turns):
        pinned = False
        for offset in range(turn.length - 1, -1, -1):
            if turn.start + offset <= bound:
                break
            message = turn.messages[offset]
            # Only a tool message can name a tool (``tool_name_of`` is None for the others).
            name = tool_name_of(message, names) if message.role == "tool" else None
            if name is None or name in seen:
                continue
            seen.add(name)
            if pinned:
                # The name is consumed: a batch's other tools do not pin older turns.
                continue
            pinned = True
            pins.append(
                ToolResultPin(
                    tool_name=name,
                    turn_index=turn.index,
                    message_index=turn.start,
                    chars=window_chars(turn.messages),
                )
            )
        if not _beyond(turn.start, after):
            break
    return tuple(pins)


def ledger_fact_pins(
    turns: Sequence[Turn],
    history: Sequence[Message] | CallNames,
    turn_standing: Callable[[Turn], Standing | None],
    after: int | None,
) -> tuple[LedgerFactPin, ...]:
    """Ledger-fact pin candidates, newest first (docs/window.md#ledger-fact-pin,
    docs/findings.md#which-turns-are-candidates).

    A turn is a candidate when its standing is ``fact``. Its ids are the ``tool_call_id`` of
    every tool message of the turn past ``after``, in wire order (batch members judged
    otherwise included); its name is the newest nameable one of those messages. A turn with
    no surviving id or no recoverable name is skipped. ``turn_standing`` is consulted only for
    turns that hold a surviving tool message (the outcome is the same; fewer calls).
    """
    names = names_index(history)
    pins: list[LedgerFactPin] = []
    for turn in reversed(turns):
        if not _beyond(turn.start + turn.length - 1, after):
            break
        surviving = [
            message
            for offset, message in enumerate(turn.messages)
            if message.role == "tool"
            and message.tool_call_id
            and _beyond(turn.start + offset, after)
        ]
        if not surviving or turn_standing(turn) != "fact":
            continue
        name = next(
            (n for n in (tool_name_of(m, names) for m in reversed(surviving)) if n is not None),
            None,
        )
        if name is None:
            continue
        pins.append(
            LedgerFactPin(
                tool_call_ids=tuple(m.tool_call_id for m in surviving if m.tool_call_id),
                tool_name=name,
                turn_index=turn.index,
                message_index=turn.start,
                chars=window_chars(turn.messages),
            )
        )
    return tuple(pins)


def spend_ceiling(
    candidates: Sequence[ToolResultPin] | Sequence[LedgerFactPin],
    limit: int,
    candidate_count: int,
) -> tuple[WindowObservations | msgspec.UnsetType, frozenset[int]]:
    """Admit newest-first pin candidates against their ceiling
    (docs/window.md#ceilings-and-yielded), for either pin kind.

    Returns the record block (UNSET when none is owed) and the admitted turn indexes. Only
    candidates below ``candidate_count`` contest a slot; a pin already inside the keep window
    is free (costs nothing, is not listed). ``yielded`` counts the contested pins the ceiling
    turned away; they are ordinary candidates again.
    """
    if limit <= 0 or not candidates:
        return msgspec.UNSET, frozenset()
    contested = [pin for pin in candidates if pin.turn_index < candidate_count]
    admitted = contested[:limit]
    if not admitted:
        return msgspec.UNSET, frozenset()
    block = WindowObservations(
        pinned=tuple(msgspec.convert(pin, PinnedTurn, from_attributes=True) for pin in admitted),
        yielded=len(contested) - len(admitted),
        limit=limit,
    )
    return block, frozenset(pin.turn_index for pin in admitted)
