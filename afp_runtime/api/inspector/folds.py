"""An agent's folds: each folded span with its summary and, where they were kept, its
original messages; found by a prefix of the summary's fingerprint; and the search box over what
left the window, folded or dropped (docs/inspector.md#folds, docs/recall.md#for-people)."""

from __future__ import annotations

import re
from typing import Any

from afp_runtime.api._context import ApiContext
from afp_runtime.api._params import path_param
from afp_runtime.api._problems import not_found
from afp_runtime.api.inspector.call import message_view
from afp_runtime.api.inspector.timeline import span_row, when
from afp_runtime.api.recall_answer import recall_answer
from afp_runtime.app import fold_summary, originals, stored_folds
from afp_runtime.errors import InvalidValue
from afp_runtime.store import RecallHit

__all__ = ["FOLD_PREFIX", "fold_page", "folds_page", "search_of"]

FOLD_PREFIX = re.compile(r"^[0-9a-f]{4,64}$")
# Originals shown on one page; a longer span says how many more it holds.
_ORIGINALS_SHOWN = 500


async def folds_page(
    ctx: ApiContext,
    agent_id: str,
    *,
    q: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """Every folded span of the agent, oldest first; with ``q``, the search's results above
    them (``status`` 400 when the search is refused, the reason beside the box)."""
    return {
        "folds": [span_row(span) for span in await stored_folds(ctx.reader, agent_id)],
        **await search_of(ctx, agent_id, q=q, since=since, until=until),
    }


def _hit_row(hit: RecallHit) -> dict[str, Any]:
    """One hit as the page lists it: when, role, where it left the window, its content."""
    source = hit.source
    fold = source.fingerprint if source.kind == "fold" else None
    return {
        "said": when(hit.said_at_ms),
        "role": hit.role,
        "kind": source.kind,
        "fingerprint": fold or "",
        "short": (fold or "")[:12],
        "run_id": source.run_id,
        "stage_id": source.stage_id,
        "content": hit.content,
        "cut": hit.content_cut,
        "tool_name": hit.tool_name or "",
        "tool_calls": list(hit.tool_calls),
    }


async def search_of(
    ctx: ApiContext, agent_id: str, *, q: str | None, since: str | None, until: str | None
) -> dict[str, Any]:
    """The search box's values (what was typed, kept), its results, or why it was refused."""
    search: dict[str, Any] = {
        "asked": q is not None,
        "q": q or "",
        "since": since or "",
        "until": until or "",
        "problem": "",
        "field": "",
        "hits": [],
    }
    if q is None:
        return {"search": search, "status_code": 200}
    try:
        answer = await recall_answer(
            ctx.reader, agent_id, q, since=since or None, until=until or None
        )
    except InvalidValue as exc:
        field = exc.context.get("field")
        search.update(problem=exc.message, field=field if isinstance(field, str) else "q")
        return {"search": search, "status_code": 400}
    search["hits"] = [_hit_row(hit) for hit in answer.items]
    return {"search": search, "status_code": 200}


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
