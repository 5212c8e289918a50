"""Reasons in words: one sentence for every code a person meets when the runtime explains
itself — why a turn stayed in the window, what a served view cannot prove, how a tool call
ended without running — written once here and shown beside the code by every door (the CLI,
the API's ``reasons`` field, the inspector; docs/architecture.md#reasons-in-words).

The table is closed over the catalogues it covers: a test checks that every ``RefusalReason``,
``GapKind`` and unrun tool status has its sentence, so a new code cannot ship unexplained.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

# Why a turn did not leave the window (docs/window.md#why-a-turn-stays).
_REFUSALS: Final = {
    "current-request": "This turn holds the message being answered now, so it always stays.",
    "system-envelope": "This turn holds a system message, which never leaves the window.",
    "paused-tool": "This turn holds the tool call the run is paused on, or its result, which "
    "stay until the pause is settled.",
    "pending-check-in": "This turn holds the tool call that waits for a person's check-in, or "
    "its result, which stay until the person answers.",
    "unresolved-tool-call": "One of this turn's tool calls has no result in the window yet, "
    "and a call never travels without its result.",
    "last-tool-result": "This turn holds the latest result of one of the agent's tools, pinned "
    "(keepLastToolResults) so the model keeps seeing it.",
    "ledger-fact": "This turn holds a tool result the model declared a fact in the findings "
    "ledger, pinned so the model keeps relying on it.",
    "inside-keep-window": "This turn is among the most recent turns the strategy always keeps "
    "(keepRecentTurns).",
    "only-existing-summary": "Everything that could be folded here is already a single "
    "summary, so folding it again would gain nothing.",
    "summarizer-failed": "The summarizer call failed, so nothing was folded this time; the "
    "turns stay until a later visit folds them.",
    "replacement-not-smaller": "What would replace these turns (a summary or a notice) is not "
    "shorter than the turns themselves, so removing them would not save room.",
}

# What a served view cannot prove (docs/served.md#gaps); GAP_WHY in the served layer says
# the same at length.
_GAPS: Final = {
    "no-fold-base": "This record starts part-way through the run, so the system text, messages "
    "and tools shown may be incomplete and are not proved.",
    "no-conversation-on-record": "The conversation sent with this call is not in this record, "
    "so its messages cannot be shown or compared.",
    "body-missing": "Some stored texts this call referred to are missing from the store, so "
    "the lists that lost them cannot be proved.",
    "no-receipt-on-record": "No usable receipt is on record for this call, so nothing shown "
    "here is checked against what was sent.",
    "no-wire-digest": "The adapter did not digest the request bytes, so the content is proved "
    "but the exact bytes sent are not.",
    "wire-not-reproducible": "The request bytes were digested but cannot be re-encoded from "
    "the record, so only the content is proved, not the bytes.",
    "provider-defaults": "Sampling settings this runtime did not send (temperature and the "
    "like) were left to the provider's own defaults, which no record shows; every call has "
    "this gap.",
}

# How a tool call ended without its function running to a result (docs/tools.md).
_TOOL_STATUSES: Final = {
    "error": "The tool ran and raised an error; the model was told what went wrong.",
    "timeout": "The tool ran past its time limit and was stopped; what it did is unknown.",
    "invalid-args": "The model's arguments did not match the tool's schema, so the tool never ran.",
    "unknown-tool": "The model called a tool this agent does not have, so nothing ran.",
    "not-dispatched": "The call was not run (it came after a call that asked a person, or its "
    "time question was closed unsettled); the model may ask for it again.",
    "interrupted": "A crash cut this call off while it ran; it is not idempotent, so it was "
    "not run again, its effects are unknown, and the model was told.",
    "unencodable": "The tool's result could not be encoded as text for the model.",
    "declined": "A person declined this call when asked for approval (or closed the question "
    "unanswered), so it never ran.",
    "refused": "A permission rule or the time layer refused this call, so it never ran; the "
    "model was told why.",
    "resource": "The tool ran short of a machine resource (file descriptors, memory, disk "
    "space), so the turn stalled and its retry runs the call again.",
}

REASONS: Final[Mapping[str, str]] = MappingProxyType({**_REFUSALS, **_GAPS, **_TOOL_STATUSES})
"""Every explained code and its one sentence."""


def reason_text(code: str) -> str | None:
    """The sentence for ``code``, or None for a code the table does not explain."""
    return REASONS.get(code)


def reasons_for(codes: Iterable[str]) -> dict[str, str]:
    """The sentences for the explained codes among ``codes``, in first-seen order (the API's
    ``reasons`` field)."""
    found: dict[str, str] = {}
    for code in codes:
        text = REASONS.get(code)
        if text is not None and code not in found:
            found[code] = text
    return found


def record_reasons(record: Mapping[str, Any]) -> dict[str, str]:
    """The sentences for the refusal reasons a window record names (its ``refusals``), read
    defensively: a custom or damaged record may hold anything there."""
    refusals = record.get("refusals")
    if not isinstance(refusals, list | tuple):
        return {}
    return reasons_for(
        r["reason"] for r in refusals if isinstance(r, Mapping) and isinstance(r.get("reason"), str)
    )
