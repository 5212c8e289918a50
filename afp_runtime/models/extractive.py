"""The extractive summarizer: a built-in, offline Model adapter that condenses a transcript by
picking out what matters, with no network and no randomness.

It is meant as the ``summarizer`` of the summarize-oldest window strategy when no summarizing
endpoint is configured (tests, demos, air-gapped hosts). It reads the transcript the window
family puts in the request's last ``user`` message: a fence line, one line per message opening
with a bracketed head (``[user]: …``, ``[assistant calls name({…})]: …``,
``[tool result name]: …``), and a closing fence line. This layer may not import the window, so
the line shape is recognised here on its own: the fences are taken by position (the first and
last line, when they are not message lines) and a line that opens with no head continues the
previous message (its content held a newline).

The digest keeps, in order: the person's asks (verbatim, whitespace collapsed, clipped), every
tool call as ``name(args)``, the identifiers and numbers found in each tool result, and what the
assistant said (clipped). It is never longer than
``min(MAX_BUDGET, max(MIN_BUDGET, content_chars // 2))`` code points, where ``content_chars`` is
the transcript's message content, so a span of more than ``2 * MIN_BUDGET`` chars always yields
a digest at most half its size. Lines are clipped narrower and narrower until the digest fits;
if it still does not, the lowest-ranked lines (assistant remarks, then tool findings, then
calls; the person's asks last) are left out and counted. The digest does not name the model;
the summary frame does.

Usage is reported as ``ceil(chars / 4)`` of the request's system and message text (input) and
of the digest (output).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from afp_runtime.messages import ModelReply, ModelRequest, Usage, canonical_json
from afp_runtime.models.base import DeltaSink, EncodedRequest, ReplyDelta

MIN_BUDGET = 160
"""The digest's length ceiling for short spans, in code points."""

MAX_BUDGET = 2000
"""The digest's length ceiling for long spans, in code points."""

_WIDTHS = (240, 160, 100, 60, 32, 16)
_MAX_KEYS = 8
_KEY_WIDTH = 40

_PLAIN_HEAD = re.compile(r"\[(user|system|assistant)\]: ?")
_CALLS_HEAD = re.compile(r"\[assistant calls (.*?)\]: ?")
_TOOL_HEAD = re.compile(r"\[tool result (.*?)\]: ?")
_TOKEN = re.compile(r"[\w./:#@-]+")
_KEYLIKE = re.compile(r"\d|[/_#@]|\w[.:-]\w")
_SPACE = re.compile(r"\s+")

_request_decoder = msgspec.json.Decoder(ModelRequest)


@dataclass
class _Entry:
    """One message of the transcript, as parsed."""

    kind: str  # user, system, assistant, calls, tool, text
    label: str
    content: str


def _clip(text: str, width: int) -> str:
    """Collapse whitespace and cut to ``width`` code points, marking a cut with an ellipsis."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _head_of(line: str) -> _Entry | None:
    """The entry a line opens, or None when the line continues the previous message."""
    match = _PLAIN_HEAD.match(line)
    if match:
        return _Entry(match.group(1), "", line[match.end() :])
    match = _CALLS_HEAD.match(line)
    if match:
        return _Entry("calls", match.group(1), line[match.end() :])
    match = _TOOL_HEAD.match(line)
    if match:
        return _Entry("tool", match.group(1), line[match.end() :])
    return None


def _parse(text: str) -> list[_Entry]:
    """Split a transcript into messages; text with no message line is one ``text`` entry."""
    lines = text.split("\n")
    heads = [_head_of(line) for line in lines]
    if not any(heads):
        return [_Entry("text", "", text)] if text.strip() else []
    if heads[0] is None:
        lines, heads = lines[1:], heads[1:]
    if len(lines) > 1 and heads[-1] is None:
        lines, heads = lines[:-1], heads[:-1]
    entries: list[_Entry] = []
    for line, head in zip(lines, heads, strict=True):
        if head is not None:
            entries.append(head)
        elif entries:
            entries[-1].content += "\n" + line
    return entries


def _keys(text: str) -> list[str]:
    """Identifier- and number-like tokens of a tool result, first appearance, at most 8."""
    found: dict[str, None] = {}
    for raw in _TOKEN.findall(text):
        token = raw.strip(".:-/")
        if token and _KEYLIKE.search(token):
            found.setdefault(token[:_KEY_WIDTH], None)
            if len(found) == _MAX_KEYS:
                break
    return list(found)


def _join_within(keys: list[str], width: int) -> str:
    """The keys joined by commas, as many whole keys as fit in ``width`` (at least one)."""
    out = ""
    for key in keys:
        joined = f"{out}, {key}" if out else key
        if out and len(joined) > width:
            break
        out = joined
    return _clip(out, width)


# Lower ranks survive longest when the digest must shed lines.
_RANK = {"user": 0, "calls": 1, "tool": 2, "text": 2, "assistant": 3, "system": 4}


def _render(entry: _Entry, width: int) -> str:
    """One digest line for one message."""
    if entry.kind == "user":
        return "asked: " + _clip(entry.content, width)
    if entry.kind == "calls":
        said = f"; said: {_clip(entry.content, width)}" if entry.content.strip() else ""
        return "called: " + _clip(entry.label, width) + said
    if entry.kind == "tool":
        shown = _join_within(_keys(entry.content), width) or _clip(entry.content, width)
        return f"{_clip(entry.label, 48)} returned: " + shown
    if entry.kind == "assistant":
        return "said: " + _clip(entry.content, width)
    return f"{entry.kind}: " + _clip(entry.content, width)


def digest(text: str) -> str:
    """The extractive digest of a transcript (see the module docstring for its rules)."""
    entries = _parse(text)
    if not entries:
        return ""
    content_chars = sum(len(e.content) for e in entries)
    budget = min(MAX_BUDGET, max(MIN_BUDGET, content_chars // 2))
    header = f"Digest of {len(entries)} messages:"
    for width in _WIDTHS:
        out = "\n".join([header, *(_render(e, width) for e in entries)])
        if len(out) <= budget:
            return out
    # Still too long at the narrowest width: keep the highest-ranked lines that fit.
    width = _WIDTHS[-1]
    lines = [_render(e, width) for e in entries]
    omitted_note = f"(+{len(lines)} more lines left out)"
    room = budget - len(header) - 1 - len(omitted_note) - 1
    chosen: set[int] = set()
    for index in sorted(range(len(lines)), key=lambda i: (_RANK.get(entries[i].kind, 5), i)):
        cost = len(lines[index]) + 1
        if cost <= room:
            chosen.add(index)
            room -= cost
    kept = [lines[i] for i in sorted(chosen)]
    omitted = len(lines) - len(kept)
    tail = [f"(+{omitted} more lines left out)"] if omitted else []
    return "\n".join([header, *kept, *tail])


def _quarter(chars: int) -> int:
    """``ceil(chars / 4)``: a rough token count that is never 0 for non-empty text."""
    return -(-chars // 4)


class ExtractiveSummarizer:
    """A deterministic, offline summarizer shaped like every Model adapter.

    Attributes:
        provider: ``extractive``.
        model: ``extractive/1``.
        encoder: ``extractive/1`` (the canonical JSON of the request).
        deterministic: True.
        calls: how many requests it has answered.
    """

    provider = "extractive"
    encoder: str | None = "extractive/1"
    deterministic = True

    def __init__(self) -> None:
        self.model = "extractive/1"
        self.calls = 0

    def settings(self) -> Mapping[str, Any]:
        """No body-shaping settings."""
        return {}

    def encode(self, request: ModelRequest) -> EncodedRequest:
        """The canonical JSON of the request (pure)."""
        return EncodedRequest(body=canonical_json(request), path="/extractive")

    async def send(
        self, request: EncodedRequest | ModelRequest, *, on_delta: DeltaSink | None = None
    ) -> ModelReply:
        """Digest the transcript in the request's last ``user`` message."""
        decoded = (
            _request_decoder.decode(request.body)
            if isinstance(request, EncodedRequest)
            else request
        )
        self.calls += 1
        source = next((m.content for m in reversed(decoded.messages) if m.role == "user"), "")
        text = digest(source)
        input_chars = len(decoded.system) + sum(len(m.content) for m in decoded.messages)
        if on_delta is not None and text:
            on_delta(ReplyDelta(text=text))
        return ModelReply(
            content=text,
            usage=Usage(input=_quarter(input_chars), output=_quarter(len(text))),
            stop_reason="end",
        )

    async def aclose(self) -> None:
        """Nothing to release."""
