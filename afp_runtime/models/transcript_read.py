"""Reading the transcript a summarizer is sent, for the offline summarizers (``extractive/1``
and ``extractive/2``, docs/window.md#the-extractive-summarizer).

The window family puts the transcript in the request's last ``user`` message: a fence line, one
line per message opening with a bracketed head (``[user]: …``, ``[assistant calls
name({…})]: …``, ``[tool result name]: …``), and a closing fence line. This layer may not
import the window, so the line shape is recognised here on its own: the fences are taken by
position (the first and last line, when they are not message lines) and a line that opens with
no head continues the previous message (its content held a newline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_BUDGET = 160
"""The digest's length ceiling for short spans, in code points."""

MAX_BUDGET = 2000
"""The digest's length ceiling for long spans, in code points."""

_PLAIN_HEAD = re.compile(r"\[(user|system|assistant)\]: ?")
_CALLS_HEAD = re.compile(r"\[assistant calls (.*?)\]: ?")
_TOOL_HEAD = re.compile(r"\[tool result (.*?)\]: ?")
_SPACE = re.compile(r"\s+")


@dataclass
class Entry:
    """One message of the transcript, as parsed."""

    kind: str  # user, system, assistant, calls, tool, text
    label: str
    content: str


def clip(text: str, width: int) -> str:
    """Collapse whitespace and cut to ``width`` code points, marking a cut with an ellipsis."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _head_of(line: str) -> Entry | None:
    """The entry a line opens, or None when the line continues the previous message."""
    match = _PLAIN_HEAD.match(line)
    if match:
        return Entry(match.group(1), "", line[match.end() :])
    match = _CALLS_HEAD.match(line)
    if match:
        return Entry("calls", match.group(1), line[match.end() :])
    match = _TOOL_HEAD.match(line)
    if match:
        return Entry("tool", match.group(1), line[match.end() :])
    return None


def parse_transcript(text: str) -> list[Entry]:
    """Split a transcript into messages; text with no message line is one ``text`` entry."""
    lines = text.split("\n")
    heads = [_head_of(line) for line in lines]
    if not any(heads):
        return [Entry("text", "", text)] if text.strip() else []
    if heads[0] is None:
        lines, heads = lines[1:], heads[1:]
    if len(lines) > 1 and heads[-1] is None:
        lines, heads = lines[:-1], heads[:-1]
    entries: list[Entry] = []
    for line, head in zip(lines, heads, strict=True):
        if head is not None:
            entries.append(head)
        elif entries:
            entries[-1].content += "\n" + line
    return entries


def budget_of(entries: list[Entry]) -> int:
    """The digest's ceiling in code points: ``min(MAX_BUDGET, max(MIN_BUDGET, chars // 2))``
    of the messages' content chars (both versions)."""
    content_chars = sum(len(e.content) for e in entries)
    return min(MAX_BUDGET, max(MIN_BUDGET, content_chars // 2))
