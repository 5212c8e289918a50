"""Refusals: why a turn did not leave the window, in a closed set of reasons
(docs/window.md#why-a-turn-stays)."""

from __future__ import annotations

from typing import Literal

import msgspec

RefusalReason = Literal[
    "current-request",
    "system-envelope",
    "paused-tool",
    "pending-check-in",
    "unresolved-tool-call",
    "last-tool-result",
    "ledger-fact",
    "inside-keep-window",
    "only-existing-summary",
    "summarizer-failed",
    "replacement-not-smaller",
]

REFUSAL_REASONS: frozenset[str] = frozenset(RefusalReason.__args__)  # type: ignore[attr-defined]

Standing = Literal["fact", "open", "noise", "ruled-out"]


class Refusal(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One turn that did not leave, and why.

    Attributes:
        reason: one of the eleven reasons.
        turn_index: the turn's index in this visit's segmentation (wire ``turnIndex``).
        message_index: the turn's first message in the pre-change window (wire
            ``messageIndex``).
    """

    reason: RefusalReason
    turn_index: int
    message_index: int
