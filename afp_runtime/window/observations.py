"""Pins and the observation blocks that records carry about them (docs/window.md#pins)."""

from __future__ import annotations

from typing import Literal

import msgspec


class ToolResultPin(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate last-tool-result pin: the turn holding a tool's latest result."""

    tool_name: str
    turn_index: int
    message_index: int
    chars: int


class LedgerFactPin(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate ledger-fact pin: a turn whose standing is ``fact`` (armed agents only)."""

    tool_call_ids: tuple[str, ...]
    tool_name: str
    turn_index: int
    message_index: int
    chars: int


class PinnedTurn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An admitted pin as a record lists it."""

    tool_name: str
    turn_index: int
    chars: int


class WindowObservations(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """A pin block of a record: admitted pins (newest first), how many the ceiling turned away.

    ``stand_down`` (wire ``standDown``) is present, and true, only on a stand-down visit.
    """

    pinned: tuple[PinnedTurn, ...]
    yielded: int
    limit: int
    stand_down: Literal[True] | msgspec.UnsetType = msgspec.UNSET
