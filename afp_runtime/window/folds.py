"""Folded spans: what a summary stands for, with the original messages when retained."""

from __future__ import annotations

from typing import Literal

import msgspec

from afp_runtime.messages import Message

Retain = Literal["conversation", "discard"]


class FoldedSpan(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One successful fold (window.md §12.4).

    Attributes:
        summary_fingerprint: fingerprint of the whole summary message (wire
            ``summaryFingerprint``); 64 lower-case hex on spans afp writes.
        run_id: the run that folded (wire ``runId``).
        iteration: the visit iteration.
        folded_at_ms: the visit instant, epoch milliseconds (wire ``foldedAtMs``).
        model: the summarizer's model id.
        message_count: messages folded (wire ``messageCount``).
        removed_stage_ids: runtime stage ids that had appended them (wire ``removedStageIds``).
        retained: ``conversation`` (messages kept) or ``discard`` (key absent).
        messages: the folded messages in order; present iff ``retained == "conversation"``.
    """

    summary_fingerprint: str
    run_id: str
    iteration: int
    folded_at_ms: int
    model: str
    message_count: int
    removed_stage_ids: tuple[str, ...]
    retained: Retain
    messages: tuple[Message, ...] | msgspec.UnsetType = msgspec.UNSET
