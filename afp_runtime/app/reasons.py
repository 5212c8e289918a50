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
from typing import Final

# Why a turn did not leave the window (docs/window.md#why-a-turn-stays).
_REFUSALS: Final = {
    "current-request": "This turn holds the message being answered now, so it always stays.",
    "system-envelope": "This turn holds a system message, which never leaves the window.",
    "paused-tool": "This turn holds the tool call the run is paused on, or its result.",
    "pending-check-in": "This turn holds a question to a person that is still waiting for an "
    "answer.",
    "unresolved-tool-call": "One of this turn's tool calls has no result in the window yet, "
    "and a call never travels without its result.",
    "last-tool-result": "This turn holds one of the latest tool results, which are pinned so "
    "the model keeps seeing them.",
    "ledger-fact": "This turn holds a fact the model declared, which is pinned while it stands.",
    "inside-keep-window": "This turn is among the most recent turns the strategy always keeps.",
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
    "no-fold-base": "This record starts part-way through the run, so what was sent before its "
    "first kept entry cannot be shown or proved.",
    "no-conversation-on-record": "The conversation sent with this call is not in this record, "
    "so its messages cannot be shown or compared.",
    "body-missing": "Some stored texts this call referred to are missing from the store, so "
    "the lists that lost them cannot be proved.",
    "no-receipt-on-record": "No receipt was recorded for this call, so nothing shown here is "
    "checked against what was sent.",
    "no-wire-digest": "The adapter did not digest the request bytes, so the content is proved "
    "but the exact bytes sent are not.",
    "wire-not-reproducible": "The request bytes were digested but cannot be re-encoded from "
    "the record, so only the content is proved, not the bytes.",
    "provider-defaults": "Settings this runtime did not send (temperature and the like) were "
    "chosen by the provider, so the view cannot say what they were.",
}

# How a tool call ended without its function running to a result (docs/tools.md).
_TOOL_STATUSES: Final = {
    "error": "The tool ran and raised an error; the model was told what went wrong.",
    "timeout": "The tool ran past its time limit and was stopped.",
    "invalid-args": "The model's arguments did not match the tool's schema, so the tool never ran.",
    "unknown-tool": "The model called a tool this agent does not have, so nothing ran.",
    "not-dispatched": "The call was not run (it came after a call that asked a person, or its "
    "time question was closed unsettled); the model may ask for it again.",
    "interrupted": "A crash cut this call off while it ran; it is not idempotent, so it was "
    "not run again and the model was told.",
    "unencodable": "The tool's result could not be encoded as text for the model.",
    "declined": "A person declined this call when asked for approval, so it never ran.",
    "refused": "A permission rule refused this call, so it never ran.",
    "resource": "The tool could not get a resource it needed (a connection, a process).",
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
