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
from afp_runtime.app import fold_summary, originals, stored_folds

__all__ = ["FOLD_PREFIX", "fold_page", "folds_page"]

FOLD_PREFIX = re.compile(r"^[0-9a-f]{4,64}$")
# Originals shown on one page; a longer span says how many more it holds.
_ORIGINALS_SHOWN = 500


async def folds_page(ctx: ApiContext, agent_id: str) -> dict[str, Any]:
    """Every folded span of the agent, oldest first."""
    return {"folds": [span_row(span) for span in await stored_folds(ctx.reader, agent_id)]}


async def fold_page(ctx: ApiContext, agent_id: str, prefix: str) -> dict[str, Any]:
    """One fold found by a fingerprint prefix, or the folds that share it."""
    path_param("fingerprint", prefix, FOLD_PREFIX)
    spans = [
        span
        for span in await stored_folds(ctx.reader, agent_id)
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
    summary = await fold_summary(ctx.reader, span)
    found = await originals(ctx.reader, agent_id, span)
    messages = found.messages if found is not None else ()
    shown = messages[:_ORIGINALS_SHOWN]
    return {
        "matches": [],
        "fold": span_row(span),
        "summary": message_view(summary, 0, entered=False) if summary is not None else None,
        "originals": [message_view(m, i, entered=False) for i, m in enumerate(shown)],
        "originals_known": found is not None,
        "originals_left_out": max(0, len(messages) - len(shown)),
        # Shown only with the originals.
        "source": found.source if found is not None else "span",
    }
