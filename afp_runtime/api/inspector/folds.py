"""An agent's folds: each folded span with its summary and, where they were kept, its
original messages; found by a prefix of the summary's fingerprint (docs/inspector.md#folds)."""

from __future__ import annotations

import re
from typing import Any

from afp_runtime.api._context import ApiContext
from afp_runtime.api._params import path_param
from afp_runtime.api._problems import not_found
from afp_runtime.api.inspector.call import message_view
from afp_runtime.api.inspector.timeline import span_row
from afp_runtime.messages import Message, fingerprint
from afp_runtime.records import RunLog, StoredFoldedSpan
from afp_runtime.served import folded_from_log, served_at

__all__ = ["FOLD_PREFIX", "fold_page", "folds_page"]

FOLD_PREFIX = re.compile(r"^[0-9a-f]{4,64}$")
# Originals shown on one page; a longer span says how many more it holds.
_ORIGINALS_SHOWN = 500


async def folds_page(ctx: ApiContext, agent_id: str) -> dict[str, Any]:
    """Every folded span of the agent, oldest first."""
    return {"folds": [span_row(span) for span in await ctx.reader.folded_spans(agent_id)]}


def _summary(log: RunLog, span: StoredFoldedSpan) -> Message | None:
    """The summary message as the call after the fold sent it."""
    view = served_at(log, span.iteration)
    if view is None:
        return None
    for message in view.messages.as_sent:
        # A summary is text; only such messages are fingerprinted (a view's tool arguments
        # are read-only mappings).
        if not message.tool_calls and fingerprint(message) == span.summary_fingerprint:
            return message
    return None


async def fold_page(ctx: ApiContext, agent_id: str, prefix: str) -> dict[str, Any]:
    """One fold found by a fingerprint prefix, or the folds that share it."""
    path_param("fingerprint", prefix, FOLD_PREFIX)
    spans = [
        span
        for span in await ctx.reader.folded_spans(agent_id)
        if span.summary_fingerprint.startswith(prefix)
    ]
    if not spans:
        raise not_found(
            "fold-not-found",
            f"agent {agent_id!r} has no fold whose summary fingerprint starts {prefix!r}",
            field="fingerprint",
            value=prefix,
        )
    if len({span.summary_fingerprint for span in spans}) > 1:
        return {"matches": [span_row(span) for span in spans], "fold": None}
    span = spans[-1]  # the newest of folds that wrote the same summary (docs/window.md)
    summary: Message | None = None
    originals: list[Message] | None = None
    source = "span"
    if await ctx.reader.runs(run_id=span.run_id):
        summary = await ctx.with_log(span.run_id, lambda log: _summary(log, span))
    if span.messages is not None:
        resolved, _ = await ctx.reader.resolve(agent_id, span.messages)
        originals = list(resolved)
    elif await ctx.reader.runs(run_id=span.run_id):
        originals = await ctx.with_log(span.run_id, lambda log: folded_from_log(log, span))
        source = "log"
    shown = (originals or [])[:_ORIGINALS_SHOWN]
    return {
        "matches": [],
        "fold": span_row(span),
        "summary": message_view(summary, 0, entered=False) if summary is not None else None,
        "originals": [message_view(m, i, entered=False) for i, m in enumerate(shown)],
        "originals_known": originals is not None,
        "originals_left_out": max(0, len(originals or []) - len(shown)),
        "source": source,
    }
