"""Folding: the summary message, the transcript a summarizer reads, the latch key, folded spans
and the joins from a summary back to what it stands for (docs/window.md#folding).

A "conversation" here is anything with an optional ``folded`` attribute, or a mapping with an
optional ``"folded"`` key, holding ``FoldedSpan`` values (oldest fold first). An absent, UNSET,
None or empty ``folded`` all mean "no folds".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from afp_runtime.messages import Message, fingerprint, sha256_hex
from afp_runtime.window.names import call_names, tool_name_of
from afp_runtime.window.texts import (
    SUMMARY_PREFIX,
    TRANSCRIPT_BEGIN,
    TRANSCRIPT_CALL_SEPARATOR,
    TRANSCRIPT_CALLS_LABEL,
    TRANSCRIPT_END,
    TRANSCRIPT_HEAD_CLOSE,
    TRANSCRIPT_HEAD_OPEN,
    TRANSCRIPT_SEPARATOR,
    TRANSCRIPT_TOOL_LABEL,
    TRANSCRIPT_UNNAMED_TOOL,
    build_summary_frame,
)

Retain = Literal["conversation", "discard"]


class FoldedSpan(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One successful fold (docs/window.md#folded-spans).

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


_OWN_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_json = msgspec.json.Encoder()


def build_summary_message(text: str, n: int, iteration: int, model: str, retain: str) -> Message:
    """The ``user`` message that stands in for a folded span: frame, blank line, text
    (docs/window.md#the-summary-message).

    The summary text is appended verbatim, never edited or trimmed.
    """
    frame = build_summary_frame(n, iteration, model, retain)
    return Message(role="user", content=frame + "\n\n" + text)


def is_compacted_summary(message: Message) -> bool:
    """A summary by its look: a ``user`` message opening with ``SUMMARY_PREFIX``.

    Only a look: identity is the fingerprint (``folded_span_for``).
    """
    return message.role == "user" and message.content.startswith(SUMMARY_PREFIX)


def _head(message: Message, names: Mapping[str, str]) -> str:
    """The bracketed head of one transcript line."""
    if message.role == "tool":
        name = tool_name_of(message, names) or TRANSCRIPT_UNNAMED_TOOL
        label = TRANSCRIPT_TOOL_LABEL + name
    elif message.role == "assistant" and message.tool_calls:
        calls = TRANSCRIPT_CALL_SEPARATOR.join(
            f"{call.name}({_json.encode(call.args).decode('utf-8')})" for call in message.tool_calls
        )
        label = message.role + TRANSCRIPT_CALLS_LABEL + calls
    else:
        label = message.role
    return TRANSCRIPT_HEAD_OPEN + label + TRANSCRIPT_HEAD_CLOSE


def transcript(span: Sequence[Message], context: Sequence[Message]) -> str:
    """The text a summarizer reads: the fences around one line per span message
    (docs/window.md#the-transcript).

    Each line is a bracketed head, ``TRANSCRIPT_SEPARATOR``, then the content verbatim (its
    embedded newlines kept). A tool result's head names its tool, recovered from ``context``
    (usually the whole pre-change window) when the message does not carry it. An assistant
    message with calls lists every call as ``name(args)``, the args encoded as compact JSON in
    their insertion order. Only span messages appear.
    """
    names = call_names(context)
    lines = [TRANSCRIPT_BEGIN]
    lines.extend(_head(m, names) + TRANSCRIPT_SEPARATOR + m.content for m in span)
    lines.append(TRANSCRIPT_END)
    return "\n".join(lines)


def span_key(span: Sequence[Message]) -> str:
    """The latch key of a span: SHA-256 over its members' fingerprints, one per line
    (docs/window.md#the-latch)."""
    return sha256_hex("\n".join(fingerprint(m) for m in span).encode("ascii"))


def is_foreign(span: FoldedSpan) -> bool:
    """True for a span another system wrote: its summary fingerprint is not 64 lower-case hex.

    A foreign span is carried and its messages count, but it never joins a message
    (docs/window.md#folded-spans).
    """
    return _OWN_FINGERPRINT.fullmatch(span.summary_fingerprint) is None


def _spans(conversation: object) -> tuple[FoldedSpan, ...]:
    """The ``folded`` spans of a conversation, oldest fold first; () when there are none."""
    if isinstance(conversation, Mapping):
        folded = conversation.get("folded")
    else:
        folded = getattr(conversation, "folded", None)
    if folded is None or folded is msgspec.UNSET:
        return ()
    return tuple(folded)


def folded_span_for(conversation: object, message: Message) -> FoldedSpan | None:
    """The newest afp span whose summary is exactly ``message``, else None
    (docs/window.md#joins-and-fold-chains).

    The join is by fingerprint (content), never by index; foreign spans are skipped. Two folds
    can write byte-identical summaries (same count, iteration and text, in different runs): the
    newest is the one a summary still in the window came from. None means "no fold recorded for
    this message", not "no originals".
    """
    spans = _spans(conversation)
    wanted = fingerprint(message) if spans else None
    matching = [s for s in spans if not is_foreign(s) and s.summary_fingerprint == wanted]
    return matching[-1] if matching else None


def folded_messages(conversation: object) -> tuple[Message, ...]:
    """Every retained folded message, oldest fold first; discarded spans add nothing
    (docs/window.md#joins-and-fold-chains).

    Foreign spans count like any other.
    """
    spans = _spans(conversation)
    return tuple(m for span in spans if span.messages is not msgspec.UNSET for m in span.messages)
