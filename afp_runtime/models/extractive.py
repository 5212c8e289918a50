"""The extractive summarizer: a built-in, offline Model adapter that condenses a transcript by
picking out what matters, with no network and no randomness.

It is meant as the ``summarizer`` of the summarize-oldest window strategy when no summarizing
endpoint is configured (tests, demos, air-gapped hosts). It reads the transcript in the
request's last ``user`` message (``afp_runtime/models/transcript_read.py``). It has two
versions, chosen by its model id; a digest once written is never rewritten, so version 1 stays
byte for byte (golden scenarios and stored summaries hold its output):

``extractive/1`` keeps, in order: the person's asks (verbatim, whitespace collapsed, clipped),
every tool call as ``name(args)``, the identifiers and numbers found in each tool result, and
what the assistant said (clipped). Lines are clipped narrower and narrower until the digest
fits; if it still does not, the lowest-ranked lines (assistant remarks, then tool findings, then
calls; the person's asks last) are left out and counted.

``extractive/2`` keeps the facts the clips cut off (``afp_runtime/models/extractive_facts.py``).

Both are never longer than ``min(MAX_BUDGET, max(MIN_BUDGET, content_chars // 2))`` code
points, where ``content_chars`` is the transcript's message content, so a span of more than
``2 * MIN_BUDGET`` chars always yields a digest at most half its size. The digest does not name
the model; the summary frame does.

Usage is reported as ``ceil(chars / 4)`` of the request's system and message text (input) and
of the digest (output).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import msgspec

from afp_runtime.errors import ConfigError
from afp_runtime.messages import ModelReply, ModelRequest, Usage, canonical_json
from afp_runtime.models.base import DeltaSink, EncodedRequest, ReplyDelta
from afp_runtime.models.extractive_facts import digest_facts
from afp_runtime.models.transcript_read import (
    Entry,
    budget_of,
    clip,
    parse_transcript,
)

_WIDTHS = (240, 160, 100, 60, 32, 16)
_MAX_KEYS = 8
_KEY_WIDTH = 40

_TOKEN = re.compile(r"[\w./:#@-]+")
_KEYLIKE = re.compile(r"\d|[/_#@]|\w[.:-]\w")

_request_decoder = msgspec.json.Decoder(ModelRequest)


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
    return clip(out, width)


# Lower ranks survive longest when the digest must shed lines.
_RANK = {"user": 0, "calls": 1, "tool": 2, "text": 2, "assistant": 3, "system": 4}


def _render(entry: Entry, width: int) -> str:
    """One digest line for one message."""
    if entry.kind == "user":
        return "asked: " + clip(entry.content, width)
    if entry.kind == "calls":
        said = f"; said: {clip(entry.content, width)}" if entry.content.strip() else ""
        return "called: " + clip(entry.label, width) + said
    if entry.kind == "tool":
        shown = _join_within(_keys(entry.content), width) or clip(entry.content, width)
        return f"{clip(entry.label, 48)} returned: " + shown
    if entry.kind == "assistant":
        return "said: " + clip(entry.content, width)
    return f"{entry.kind}: " + clip(entry.content, width)


def digest(text: str) -> str:
    """The extractive digest of a transcript (see the module docstring for its rules)."""
    entries = parse_transcript(text)
    if not entries:
        return ""
    budget = budget_of(entries)
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


DIGESTS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {"extractive/1": digest, "extractive/2": digest_facts}
)
"""The digest of each version, by model id."""


class ExtractiveSummarizer:
    """A deterministic, offline summarizer shaped like every Model adapter.

    Attributes:
        provider: ``extractive``.
        model: its version's model id, ``extractive/1`` (the default) or ``extractive/2``.
        encoder: the model id (the canonical JSON of the request).
        deterministic: True.
        calls: how many requests it has answered.
    """

    provider = "extractive"
    deterministic = True
    MODELS = tuple(DIGESTS)
    """The model ids of its versions."""

    def __init__(self, model: str = "extractive/1") -> None:
        """Raises:
        ConfigError: ``model`` is not one of ``DIGESTS`` (the message names them).
        """
        if model not in DIGESTS:
            known = ", ".join(sorted(DIGESTS))
            raise ConfigError(
                f"model is {model!r}, which is not an extractive summarizer (known: {known})",
                field="model",
            )
        self.model = model
        self.encoder: str | None = model
        self._digest = DIGESTS[model]
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
        text = self._digest(source)
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
