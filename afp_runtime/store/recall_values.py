"""The values of the recall index (docs/recall.md): a message that left an agent's window, as
the store indexes it and as a search answers it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

RecallKind = Literal["fold", "drop"]


class RecallSource(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Where an indexed message left the window (docs/recall.md#entries).

    Attributes:
        kind: ``fold`` (a summary replaced it) or ``drop`` (a sliding window or token budget
            removed it).
        fingerprint: for a fold, the fingerprint of the summary that replaced it.
        run_id: the run whose window visit removed it (wire ``runId``).
        stage_id: that visit's stage id, ``window#<seq>`` (wire ``stageId``): the commit log
            holds the window before it at the bundle just before.
    """

    kind: RecallKind
    run_id: str
    stage_id: str
    fingerprint: str | None = None


class RecallEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One message to index: its item position in the agent's log, its source, and its text."""

    pos: int
    source: RecallSource
    role: str
    content: str
    tool_calls: tuple[str, ...]
    tool_name: str | None
    said_at_ms: int

    def text(self) -> str:
        """What the index searches: the content, the tool's name and each call's text."""
        return "\n".join((self.content, self.tool_name or "", *self.tool_calls))


class RecallHit(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One message a recall search found (docs/recall.md#search).

    Attributes:
        agent_id: the agent (wire ``agentId``).
        source: where it left the window.
        role: ``user``, ``assistant``, ``tool`` or ``system``.
        content: the message's text, verbatim (the app layer may cut it: ``content_cut``).
        said_at_ms: when it was said, by the rule of docs/recall.md#when-it-was-said (wire
            ``saidAtMs``).
        rank: how well it matched, higher is better; comparable within one answer only.
        tool_calls: each tool call of an assistant message, ``name`` and its arguments as JSON
            (wire ``toolCalls``).
        tool_name: the tool that produced a ``tool`` message (wire ``toolName``).
        content_cut: how many characters of ``content`` the app layer cut (wire
            ``contentCut``); 0 when whole.
    """

    agent_id: str
    source: RecallSource
    role: str
    content: str
    said_at_ms: int
    rank: float
    tool_calls: tuple[str, ...] = ()
    tool_name: str | None = None
    content_cut: int = 0


def within_chars(hits: Sequence[RecallHit], total: int) -> list[RecallHit]:
    """``hits`` with their contents cut to ``total`` characters together, in order: a hit that
    would pass it is cut to what is left (its ``content_cut`` grows by what was cut), and once
    nothing is left the rest are left out (docs/recall.md#search)."""
    kept: list[RecallHit] = []
    left = total
    for hit in hits:
        if left <= 0:
            break
        if len(hit.content) > left:
            cut = len(hit.content) - left
            hit = msgspec.structs.replace(
                hit, content=hit.content[:left], content_cut=hit.content_cut + cut
            )
        left -= len(hit.content)
        kept.append(hit)
    return kept
