"""``afp recall AGENT QUERY``: search what left an agent's window (docs/recall.md#for-people).

The same translation and use case as ``GET /v1/agents/{agentId}/recall`` (``recall_answer``);
``--json`` prints that endpoint's body byte for byte, the table shows each hit's content
verbatim with its control characters made visible (``_show.visible``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.api.recall_answer import recall_answer
from afp_runtime.cli import _ids
from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import add_row, show_table, table, when, write_json
from afp_runtime.cli.reads import reader
from afp_runtime.errors import InvalidValue
from afp_runtime.store import RecallHit

_OPTIONS = {"q": "QUERY", "since": "--since", "until": "--until", "limit": "--limit"}


def source_text(hit: RecallHit) -> str:
    """Where a hit left the window: ``fold <fingerprint>`` or ``drop <run> <stage>``."""
    source = hit.source
    if source.kind == "fold" and source.fingerprint is not None:
        return f"fold {source.fingerprint[:12]}"
    return f"{source.kind} {source.run_id} {source.stage_id}"


def content_text(hit: RecallHit) -> str:
    """The hit's content (with its tool calls and how much was cut, when any)."""
    parts = [hit.content]
    parts.extend(f"[calls {call}]" for call in hit.tool_calls)
    if hit.tool_name:
        parts.append(f"[from {hit.tool_name}]")
    if hit.content_cut:
        parts.append(f"[{hit.content_cut} more characters cut]")
    return " ".join(part for part in parts if part)


async def cmd_recall(args: Any) -> int:
    """The agent's messages that left its window matching QUERY, best first."""
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        try:
            answer = await recall_answer(
                store,
                args.agent,
                args.query,
                since=args.since,
                until=args.until,
                limit=args.limit,
            )
        except InvalidValue as exc:
            field = exc.context.get("field")
            named = _OPTIONS.get(field, field) if isinstance(field, str) else "QUERY"
            raise UsageError(f"{named} refused: {exc.message}") from None
    if args.json:
        write_json(msgspec.json.encode(answer))  # GET /v1/agents/{agentId}/recall's body
        return EXIT_OK
    grid = table("said (UTC)", "role", "source", "content")
    for hit in answer.items:
        add_row(grid, [when(hit.said_at_ms), hit.role, source_text(hit), content_text(hit)])
    show_table(grid, empty=f"nothing that left {args.agent}'s window matches {args.query!r}")
    return EXIT_OK
