"""Read commands: agents, runs, commits, inbox, window records, folds and findings. Each opens
the store read-only, so it works while an agent runs; tables and ``--json`` list in the same
order (the API's), and an empty result says so."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import msgspec

from afp_runtime.app import findings, folded, ledger_fold, message_outcomes, record_reasons
from afp_runtime.cli import _ids
from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._lazy import load
from afp_runtime.cli._reasons import say_reasons
from afp_runtime.cli._show import (
    add_row,
    brief,
    print_json,
    say,
    show_table,
    table,
    when,
)
from afp_runtime.cost import cost_text
from afp_runtime.records import (
    AnyWrite,
    CompactionsWrite,
    HistoryWrite,
    ListRef,
    ToolResultsWrite,
)
from afp_runtime.store import Store, open_store


@asynccontextmanager
async def opened(db: str, **options: Any) -> AsyncIterator[Store]:
    """The store at ``db`` opened with ``open_store``'s ``options``, closed after the block."""
    store = await open_store(db, **options)
    try:
        yield store
    finally:
        await store.aclose()


def _now_ms() -> int:
    """The reader's clock: the system's (a claim's lease is live until its expiry on it)."""
    return time.time_ns() // 1_000_000


def reader(db: str) -> AbstractAsyncContextManager[Store]:
    """The store opened read-only; a missing file is exit 4, never a new empty database."""
    return opened(db, read_only=True)


async def cmd_agents(args: Any) -> int:
    """List agents with their conversation summaries; a turn left running that no live host
    holds reads ``interrupted`` (docs/host.md#status-values)."""
    async with reader(args.db) as store:
        views = await load("afp_runtime.api.views")
        now_ms = _now_ms()
        agents = [
            msgspec.structs.replace(
                row, status=await views.shown_status(store, row, now_ms=now_ms, live=None)
            )
            for row in await store.agents()
        ]
    if args.json:
        return print_json(agents)
    columns = ("agent", "status", "model", "turns", "messages", "model calls", "tokens in/out")
    grid = table(*columns, "created")
    for a in agents:
        tokens = f"{a.usage_totals.input}/{a.usage_totals.output}"
        add_row(
            grid,
            [
                a.agent_id,
                a.status,
                a.definition.model if a.definition is not None else "",
                a.turn,
                a.messages,
                a.model_calls,
                tokens,
                when(a.created_at_ms),
            ],
        )
    show_table(grid, empty="no agents")
    return EXIT_OK


async def cmd_agent(args: Any) -> int:
    """One agent's summary: status, definition, turn, counters, inbox depth, open questions;
    an ``interrupted`` agent's summary says what continues it."""
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        rows = [row for row in await store.agents() if row.agent_id == args.agent]
        views = await load("afp_runtime.api.views")
        view = await views.agent_view(store, rows[0], None, now_ms=_now_ms())
    if args.json:
        return print_json(view)
    grid = table("field", "value")
    for name, value in msgspec.to_builtins(view).items():
        if name not in ("openQuestions", "continuesWith"):
            add_row(grid, [name, brief(value, 80)])
    show_table(grid, empty="no fields")
    for question in view.open_questions:
        say(f"open question {question.question_id} ({question.kind}): {question.prompt}")
    if view.continues_with is not None:
        # In full, not cut to a cell: it is the next step.
        say(f"{view.status}: {view.continues_with}")
    return EXIT_OK


async def cmd_runs(args: Any) -> int:
    """List runs newest first: every agent's, one agent's, or one by id."""
    async with reader(args.db) as store:
        if args.id is not None:
            run_id = await _ids.run_id(store, args.id)
            runs = await store.runs(run_id=run_id)
        elif args.agent is not None:
            runs = await store.runs(await _ids.known_agent(store, args.agent))
        else:
            runs = await store.runs()
        every = [run.run_id for run in await store.runs()]
    newest_first = list(reversed(runs))
    if args.json:
        # Exactly the API's bodies: one run (GET /v1/runs/{id}), else a page newest first.
        return print_json(runs[0] if args.id is not None else {"items": newest_first, "next": None})
    short = _ids.shortest(every)
    columns = ["run", "agent", "turn", "kind", "status", "bundles", "started", "recovered from"]
    priced = any(r.cost is not None for r in newest_first)
    grid = table(*columns, *(["cost"] if priced else []))
    for r in newest_first:
        recovered = short.get(r.recovered_from, r.recovered_from) if r.recovered_from else ""
        add_row(
            grid,
            [
                short[r.run_id],
                r.agent_id,
                r.turn,
                r.kind,
                r.status,
                r.bundles,
                when(r.started_at_ms),
                recovered,
                *([cost_text(r.cost)] if priced else []),
            ],
        )
    show_table(grid, empty="no runs")
    return EXIT_OK


async def cmd_commits(args: Any) -> int:
    """Show a run's commit log."""
    async with reader(args.db) as store:
        run_id = await _ids.run_id(store, args.run)
        bundles = await store.bundles(run_id, from_seq=args.from_seq)
        if args.expand:
            agent_id = (await store.runs(run_id=run_id))[0].agent_id
            expanded = []
            for bundle in bundles:
                writes: list[AnyWrite] = []
                for write in bundle.writes:
                    if isinstance(write, HistoryWrite) and isinstance(write.value, ListRef):
                        messages, _ = await store.resolve(agent_id, write.value)
                        # Shown, not stored: the value is the messages the reference names.
                        write = msgspec.structs.replace(write, value=tuple(messages))
                    writes.append(write)
                expanded.append(msgspec.structs.replace(bundle, writes=writes))
            bundles = expanded
    if args.json:
        return print_json(bundles)
    grid = table("id", "iteration", "committed", "writes")
    limit = 200 if args.expand else 60
    for b in bundles:
        shown = "\n".join(
            f"{w.verb} {w.key} = {brief(msgspec.to_builtins(w.value), limit)}" for w in b.writes
        )
        add_row(grid, [b.runtime_stage_id, b.iteration, when(b.committed_at_ms), shown or "-"])
    show_table(grid, empty=f"run {run_id} has no bundles from seq {args.from_seq}")
    say_reasons(_codes_in(b.writes for b in bundles))
    return EXIT_OK


def _codes_in(writes: Iterable[Sequence[AnyWrite]]) -> Iterator[str]:
    """The refusal reasons of the window records and the tool statuses these writes hold."""
    for bundle in writes:
        for write in bundle:
            if isinstance(write, CompactionsWrite):
                for record in write.value:
                    yield from record_reasons(record)
            elif isinstance(write, ToolResultsWrite):
                for result in write.value:
                    status = result.get("status") if isinstance(result, dict) else None
                    if isinstance(status, str):
                        yield status


async def cmd_inbox(args: Any) -> int:
    """List an agent's inbox messages in position order."""
    views = await load("afp_runtime.api.views")
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        outcomes = await message_outcomes(store, args.agent, status=args.status)
    if args.json:
        # Exactly the API's body (GET …/inbox): one page holding every message.
        return print_json({"items": [views.inbox_message(o) for o in outcomes], "next": None})
    rows = [found.row for found in outcomes]
    short = _ids.shortest(row.message_id for row in rows)
    grid = table("message", "position", "status", "turn", "accepted", "text")
    for r in rows:
        add_row(
            grid,
            [
                short[r.message_id],
                r.position,
                r.status,
                r.turn or "",
                when(r.accepted_at_ms),
                brief(r.text, 50),
            ],
        )
    status = f" {args.status}" if args.status else ""
    show_table(grid, empty=f"agent {args.agent!r} has no{status} inbox messages")
    return EXIT_OK


async def window_records(store: Store, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The window records (``compactions``) of these runs, in commit order, each with the
    sentences of its refusal reasons (``reasons``, as the API answers them)."""
    records = []
    for run_id in run_ids:
        for bundle in await store.bundles(run_id):
            for write in bundle.writes:
                if isinstance(write, CompactionsWrite):
                    for record in write.value:
                        reasons = record_reasons(record)
                        records.append({"runId": run_id, **record, "reasons": reasons})
    return records


def _pins(record: dict[str, Any]) -> str:
    parts = []
    for key in ("observations", "ledgerFacts"):
        block = record.get(key)
        if block:
            if block.get("standDown"):
                parts.append(f"{key}: stood down")
            else:
                names = ", ".join(p["toolName"] for p in block.get("pinned", []))
                parts.append(f"{key}: {names or '-'} (yielded {block.get('yielded', 0)})")
    return "\n".join(parts) or "-"


async def cmd_window(args: Any) -> int:
    """Show the window records of a run, or of every run of an agent."""
    if (args.run is None) == (args.agent is None):
        raise UsageError("give either RUN or --agent AGENT")
    async with reader(args.db) as store:
        if args.agent is not None:
            run_ids = [
                r.run_id for r in await store.runs(await _ids.known_agent(store, args.agent))
            ]
        else:
            run_ids = [await _ids.run_id(store, args.run)]
        records = await window_records(store, run_ids)
        short = _ids.shortest(r.run_id for r in await store.runs())
    if args.json:
        return print_json(records)
    grid = table(
        "run", "strategy", "iteration", "removed", "chars before → after", "refusals", "pins"
    )
    for r in records:
        refusals = ", ".join(
            f"{x['reason']}({x['turnIndex']},{x['messageIndex']})" for x in r.get("refusals", [])
        )
        chars = f"{r.get('windowCharsBefore')} → {r.get('windowCharsAfter')}"
        add_row(
            grid,
            [
                short.get(r["runId"], r["runId"]),
                r.get("strategy", "?"),
                r.get("iteration"),
                r.get("removedMessageCount"),
                chars,
                refusals or "-",
                _pins(r),
            ],
        )
    show_table(grid, empty="no window records: no visit engaged")
    if any(r["reasons"] for r in records):
        say(
            "a refusal reads reason(turn,message): the turn's index in that visit and the index "
            "of its first message in the window before it"
        )
    say_reasons(code for r in records for code in r["reasons"])
    return EXIT_OK


async def cmd_folded(args: Any) -> int:
    """List an agent's folded spans, or one span (and its retained originals)."""
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        fingerprint = (
            await _ids.fingerprint(store, args.agent, args.fingerprint)
            if args.fingerprint is not None
            else None
        )
        spans = await folded(store, args.agent, summary_fingerprint=fingerprint)
    if args.messages:
        if fingerprint is None:
            raise UsageError("--messages needs a FINGERPRINT")
        newest = spans[-1]  # of folds that wrote the same summary (docs/window.md)
        messages = newest.messages if newest.messages is not msgspec.UNSET else ()
        if args.json:
            return print_json(messages)
        if not messages:
            say("this span was folded with retain='discard': no originals were kept")
            return EXIT_OK
        grid = table("#", "role", "content", "tool calls / id")
        for i, m in enumerate(messages):
            extra = ", ".join(f"{c.name}({c.id})" for c in m.tool_calls) or (m.tool_call_id or "")
            add_row(grid, [i, m.role, m.content, extra])
        show_table(grid, empty="no messages")
        return EXIT_OK
    if args.json:
        return print_json([msgspec.structs.replace(s, messages=msgspec.UNSET) for s in spans])
    short = _ids.shortest(s.summary_fingerprint for s in spans)
    grid = table("summary fingerprint", "run", "iteration", "folded", "model", "messages", "kept")
    for span in spans:
        add_row(
            grid,
            [
                short[span.summary_fingerprint],
                span.run_id,
                span.iteration,
                when(span.folded_at_ms),
                span.model,
                span.message_count,
                span.retained,
            ],
        )
    show_table(grid, empty=f"agent {args.agent!r} has no folded spans")
    return EXIT_OK


async def cmd_findings(args: Any) -> int:
    """List an agent's ledger rows, its current standing per tool call, and its conflicts."""
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        rows = await findings(store, args.agent, kind=args.kind, turn=args.turn)
        fold = await ledger_fold(store, args.agent)
    if args.json:
        return print_json(rows)
    grid = table("#", "kind", "turn", "iteration", "tool call", "tool", "detail")
    for i, row in enumerate(rows):
        add_row(
            grid,
            [
                i,
                row.get("kind", "?"),
                row.get("turn", ""),
                row.get("iteration", ""),
                row.get("toolCallId", ""),
                row.get("toolName", ""),
                _row_detail(row),
            ],
        )
    show_table(grid, empty=f"agent {args.agent!r} has no ledger rows that match")
    if fold.standing_of:
        standings = ", ".join(f"{cid}: {s}" for cid, s in fold.standing_of.items())
        say(f"current standings: {standings}")
    conflicts = list(fold.conflicts_in_order())
    say(f"conflicts: {len(conflicts)}")
    for key, witnesses in conflicts:
        ids = ", ".join(w.tool_call_id for w in witnesses)
        say(f"  {'/'.join(key)}: {ids}")
    return EXIT_OK


def _row_detail(row: dict[str, Any]) -> str:
    kind = row.get("kind")
    if kind == "permission":
        reason = f": {row['reason']}" if row.get("reason") else ""
        return f"{row.get('decision')} by {row.get('rule')}{reason}"
    if kind == "standing":
        detail = f"{row.get('standing')}; {len(row.get('assertions', []))} assertions"
        return detail + ("; unknown id" if row.get("unknownId") else "")
    if kind == "basis":
        return ", ".join(f"{k}={row[k]}" for k in ("basis", "expect") if k in row) or "-"
    if kind == "conflict":
        return "/".join(str(k) for k in row.get("key", []))
    return _time_detail(row)


def _time_detail(row: dict[str, Any]) -> str:
    """A one-line summary of a time row (docs/time.md#row-kinds) for the findings table."""
    kind = row.get("kind")
    if kind == "call-window":
        keys = ("why", "refused", "by", "argument", "assumed", "form")
        parts = [str(row.get("how")), *(f"{key}={row[key]}" for key in keys if key in row)]
        asked = row.get("asked")
        if isinstance(asked, dict):
            parts.append(f"asked={asked.get('from')}/{asked.get('to')}")
        return "; ".join(parts)
    if kind == "clock":
        now = f"now={row.get('now')} ({row.get('nowSource')})"
        return f"{now}; zone={row.get('zone')} ({row.get('zoneSource')})"
    if kind == "time-reading":
        if row.get("mentions") == 0:
            return "no time mentioned"
        return f"mention {row.get('mention')}: {row.get('quote', row.get('refused', ''))!r}"
    if kind == "time-answer":
        return f"mention {row.get('mention')}: {row.get('from')}/{row.get('to')} ({row.get('how')})"
    if kind == "call":
        drift = row.get("drift")
        return f"dispatched {row.get('dispatchedAt')}" + (f"; drift {drift}" if drift else "")
    return ""
