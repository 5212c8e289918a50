"""The built-in ``recall`` tool as a loop extension (docs/recall.md#the-recall-tool): an agent with
``recall = true`` is offered the tool; a call searches what left the agent's window (the store's
recall index) and answers the best matching original messages, bounded, with a ``recall``
ledger row naming what it returned.

A call is a read: run again after a crash (same tool call id) it searches again and files its
row again with the result that is committed, so a crash leaves nothing half-done.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import anyio.to_thread
import msgspec

from afp_runtime.agents.builtin_tools import BoundToolRun
from afp_runtime.errors import InvalidValue, StateError
from afp_runtime.extensions import RunStart
from afp_runtime.records import LedgerRowBase, register_ledger_row
from afp_runtime.store import RecallHit, within_chars
from afp_runtime.time import load_zone
from afp_runtime.tools import Tool, ToolContext

RECALL_TOOL_NAME: Final = "recall"
DEFAULT_LIMIT: Final = 5
"""Messages a call answers unless the model asks for another count."""
MAX_LIMIT: Final = 20
"""The most messages one call answers."""
HIT_CHARS: Final = 2_000
"""Characters of one message's content a call shows at most."""
TOTAL_CHARS: Final = 6_000
"""Characters of all messages' contents together a call shows at most."""
CALL_CHARS: Final = 300
"""Characters of each tool call an answered assistant message made, shown beside it."""
FINGERPRINT_CHARS: Final = 12
"""How much of a fold's summary fingerprint names the source."""
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

RECALL_DESCRIPTION: Final = (
    "Search the earlier messages of this conversation that are no longer in front of you "
    "(folded into a summary or dropped to save room). Give the words to look for (an id, a "
    "name, a number); you get back the best matching original messages verbatim, each with "
    "when it was said and where it left your window."
)
RECALL_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "The words to look for; every word must match, else any may.",
        },
        "since": {
            "type": "string",
            "description": "Only messages said at or after this: a date (YYYY-MM-DD) or an "
            "instant (YYYY-MM-DDTHH:MM, in your zone unless it has an offset).",
        },
        "until": {
            "type": "string",
            "description": "Only messages said before this: a date (that whole day is "
            "included) or an instant, as for since.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"How many messages at most (default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


class RecallReturned(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One message a ``recall`` call returned, as its ledger row names it.

    Attributes:
        source: ``fold`` or ``drop``.
        run_id: the run whose window visit removed it (wire ``runId``).
        stage_id: that visit's stage (wire ``stageId``).
        said_at_ms: when it was said (wire ``saidAtMs``).
        chars: characters of its content shown.
        fingerprint: the fold's summary fingerprint, for a fold.
        cut: characters of its content cut.
    """

    source: str
    run_id: str
    stage_id: str
    said_at_ms: int
    chars: int
    fingerprint: str | None = None
    cut: int = 0


class RecallRow(LedgerRowBase, frozen=True, kw_only=True, tag="recall"):
    """A search the model made with ``recall`` (docs/recall.md#the-recall-tool).

    Attributes:
        turn: the turn of the call.
        tool_call_id: the call (wire ``toolCallId``).
        query: the query, as the model gave it.
        since_ms: the range's inclusive start, epoch ms (wire ``sinceMs``), when given.
        until_ms: the range's exclusive end, epoch ms (wire ``untilMs``), when given.
        limit: the most messages asked for.
        returned: the messages it returned, best first.
        left_out: messages the store found that the character bound left out (wire
            ``leftOut``).
    """

    turn: int
    tool_call_id: str
    query: str
    limit: int
    returned: tuple[RecallReturned, ...]
    since_ms: int | None = None
    until_ms: int | None = None
    left_out: int = 0


register_ledger_row(RecallRow)


async def _not_bound(args: Any, ctx: ToolContext) -> str:
    raise StateError("recall runs only inside a run of its agent, with its store")


RECALL_ENTRY: Final = Tool(
    name=RECALL_TOOL_NAME,
    description=RECALL_DESCRIPTION,
    input_schema=dict(RECALL_SCHEMA),
    fn=_not_bound,
    idempotent=True,
)
"""The agent's tool entry (served and planned as any tool); each run binds it to its store."""


class RecallExtension:
    """The ``recall`` switch of an agent: its zone (the time table's, else UTC)."""

    name = "recall"

    def __init__(self, zone: str | None) -> None:
        self.zone = zone or "UTC"

    def shape(self) -> Any:
        return {"zone": self.zone, "limit": MAX_LIMIT, "chars": [HIT_CHARS, TOTAL_CHARS]}

    def start(self, run: RunStart) -> RecallRun:
        return RecallRun(self.zone, run)


class RecallRun(BoundToolRun):
    """One run: the tool bound to the run's store."""

    entry = RECALL_ENTRY

    async def _call(self, args: Any, ctx: ToolContext) -> str:
        search = getattr(self.store, "recall", None)
        if search is None:
            raise StateError("this run's store keeps no recall index")
        query, limit = args["query"], args.get("limit", DEFAULT_LIMIT)
        # A first use of a zone reads the zone database: off the event loop.
        zone = await anyio.to_thread.run_sync(load_zone, self.zone)
        since = _bound_ms(args.get("since"), "since", zone, end=False)
        until = _bound_ms(args.get("until"), "until", zone, end=True)
        if since is not None and until is not None and since >= until:
            raise InvalidValue(
                f"until: {args['until']!r} is not after since {args['since']!r}; nothing to "
                "search between them",
                field="until",
            )
        # Asked for twice the limit: the agent's own earlier recall calls and results leave the
        # window too and would match their own words; they are set aside.
        found: list[RecallHit] = await search(
            self.agent_id,
            query,
            since_ms=since,
            until_ms=until,
            limit=2 * limit,
            max_chars=HIT_CHARS,
        )
        found = [hit for hit in found if not _own(hit)][:limit]
        hits = within_chars(found, TOTAL_CHARS)
        left_out = len(found) - len(hits)
        self.rows.append(
            msgspec.to_builtins(
                RecallRow(
                    turn=ctx.turn,
                    tool_call_id=ctx.tool_call_id,
                    query=query,
                    limit=limit,
                    returned=tuple(_returned(hit) for hit in hits),
                    since_ms=since,
                    until_ms=until,
                    left_out=left_out,
                )
            )
        )
        return recall_text(query, hits, self.zone, since=since, until=until, left_out=left_out)


def _own(hit: RecallHit) -> bool:
    """A message of an earlier ``recall`` call: its result, or an assistant message that only
    called it."""
    if hit.role == "tool":
        return hit.tool_name == RECALL_TOOL_NAME
    calls = hit.tool_calls
    return (
        hit.role == "assistant"
        and not hit.content.strip()
        and bool(calls)
        and all(c.startswith(f"{RECALL_TOOL_NAME} ") for c in calls)
    )


def _bound_ms(value: Any, field: str, zone: Any, *, end: bool) -> int | None:
    """A ``since``/``until`` argument as epoch ms: a date is its first instant in ``zone`` (for
    ``until``, the next day's: the date is included); an instant without an offset is read in
    ``zone``."""
    if value is None:
        return None
    problem = (
        f"{field}: {value!r} is not a date (YYYY-MM-DD) or an instant (YYYY-MM-DDTHH:MM, "
        "optionally with an offset such as +02:00 or Z)"
    )
    text = str(value).strip()
    try:
        if _DAY.fullmatch(text):
            day = date.fromisoformat(text) + timedelta(days=1 if end else 0)
            moment = datetime(day.year, day.month, day.day, tzinfo=zone)
        elif "T" in text or " " in text:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=zone)
        else:
            raise InvalidValue(problem, field=field)
    except (ValueError, OverflowError):
        raise InvalidValue(problem, field=field) from None
    return int(moment.timestamp() * 1000)


def _returned(hit: RecallHit) -> RecallReturned:
    return RecallReturned(
        source=hit.source.kind,
        run_id=hit.source.run_id,
        stage_id=hit.source.stage_id,
        said_at_ms=hit.said_at_ms,
        chars=len(hit.content),
        fingerprint=hit.source.fingerprint,
        cut=hit.content_cut,
    )


def recall_text(
    query: str,
    hits: Sequence[RecallHit],
    zone: str,
    *,
    since: int | None,
    until: int | None,
    left_out: int = 0,
) -> str:
    """The observation of a ``recall`` call: what was searched, then each message found with
    its header line (when it was said, in ``zone`` and UTC; its role; where it left the window)
    and its content verbatim between the header and the next one."""
    searched = f"the messages that left your window, {_range_text(since, until, zone)}"
    if not hits:
        return f"Nothing matched {query!r} in {searched}."
    head = f"{len(hits)} message{'s' if len(hits) != 1 else ''} matched {query!r} in {searched}"
    lines = [head + (f" ({left_out} more left out to keep this short)." if left_out else ".")]
    for number, hit in enumerate(hits, 1):
        lines.append("")
        lines.append(f"[{number}] {_said(hit.said_at_ms, zone)}; {_who(hit)}; {_source(hit)}")
        lines.append(hit.content)
        lines.extend(f"(called {call[:CALL_CHARS]})" for call in hit.tool_calls)
        if hit.content_cut:
            lines.append(f"[{hit.content_cut} more characters of this message cut]")
    return "\n".join(lines)


def _range_text(since: int | None, until: int | None, zone: str) -> str:
    if since is None and until is None:
        return "at any time"
    parts = ([f"from {_said(since, zone)}"] if since is not None else []) + (
        [f"before {_said(until, zone)}"] if until is not None else []
    )
    return " ".join(parts)


def _said(ms: int, zone: str) -> str:
    utc = datetime.fromtimestamp(ms / 1000, tz=UTC)
    if zone == "UTC":
        return utc.strftime("%Y-%m-%d %H:%M UTC")
    local = utc.astimezone(load_zone(zone))
    return f"{local.strftime('%Y-%m-%d %H:%M')} {zone} ({utc.strftime('%Y-%m-%d %H:%M')} UTC)"


def _who(hit: RecallHit) -> str:
    return f"tool {hit.tool_name}" if hit.role == "tool" and hit.tool_name else hit.role


def _source(hit: RecallHit) -> str:
    where = f"run {hit.source.run_id}, {hit.source.stage_id}"
    if hit.source.kind == "fold" and hit.source.fingerprint:
        return f"folded into summary {hit.source.fingerprint[:FINGERPRINT_CHARS]} ({where})"
    return f"dropped from the window ({where})"
