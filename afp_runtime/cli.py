"""The ``afp`` command.

Read commands open the SQLite store read-only, so they work while an agent runs. ``--json``
prints data as JSON; otherwise rich tables. Exit codes: 0 success, 1 the named thing does not
exist, 2 usage or config error, 3 a conformance verdict ``damaged``, 4 the store cannot be
opened or is damaged, 5 refused (ownership, a closed question, a turn in the wrong state).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import structlog
from rich.console import Console
from rich.table import Table

from afp_runtime.api import DEFAULT_HOST, DEFAULT_PORT, check_binding, serve_until_stopped
from afp_runtime.api import open_listener as open_api_listener
from afp_runtime.api.agents import agent_view, inbox_messages
from afp_runtime.api.questions import question_view
from afp_runtime.api.shapes import AnswerAccepted, DismissAccepted
from afp_runtime.demo import QUESTIONS
from afp_runtime.errors import (
    AfpError,
    ConfigError,
    IdempotencyConflict,
    NotOwner,
    QuestionClosed,
    RunNotHeld,
    RunNotResumable,
    StoreError,
    StoreUnavailable,
)
from afp_runtime.findings import fold_ledger, rows_from_wire
from afp_runtime.host import Host
from afp_runtime.loop import (
    Agent,
    AgentDriver,
    Emitter,
    EventRecorder,
    HostConfig,
    RunOutcome,
    SystemClock,
    TimeOrderedIds,
    abandon_question,
    answer_question,
    dismiss_turn,
    export_checkpoint,
    import_checkpoint,
    load_folded_spans,
    parse_checkpoint,
    read_config,
    validate_ledger,
)
from afp_runtime.models import encoder_for
from afp_runtime.periods import message_time_from_wire
from afp_runtime.records import ListRef
from afp_runtime.scenario import decode_scenario, encode_result, run_scenario
from afp_runtime.served import (
    ConformanceReport,
    Receipt,
    ServedView,
    check,
    encode_served,
    epochs,
    export_run,
    load_export,
    receipt_at,
    served_at,
    served_views,
    thaw_message,
)
from afp_runtime.store import SqliteRunLog, SqliteStore
from afp_runtime.window import SUMMARY_PREFIX

DEFAULT_DB = "afp.db"

EXIT_OK, EXIT_MISSING, EXIT_USAGE, EXIT_STORE, EXIT_REFUSED = 0, 1, 2, 4, 5

out = Console()
err = Console(stderr=True)


class NotFound(Exception):
    """The named thing does not exist (exit code 1)."""


class Refused(Exception):
    """The host refused the request (auth, ownership, conflict: exit code 5)."""


class UsageError(Exception):
    """The command's arguments do not fit together (exit code 2)."""


def _configure_logging(verbose: bool, log_format: str | None) -> None:
    """The application's structlog setup: stderr only, JSON lines with ``--log-format json``
    (or ``AFP_LOG_FORMAT=json``), ANSI colour only when stderr is a terminal."""
    level = logging.INFO if verbose else logging.WARNING
    chosen = log_format or os.environ.get("AFP_LOG_FORMAT") or "console"
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if chosen == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )


def _json(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value)).decode() + "\n")


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


# -- running agents ---------------------------------------------------------------------------


async def _definition_from(path: str, agent: str | None) -> Agent:
    config, agents = await anyio.to_thread.run_sync(read_config, path)
    for definition in agents:
        if agent is None or definition.agent_id == agent:
            return definition
    names = ", ".join(a.id for a in config.agents)
    raise ConfigError(f"{path} declares no agent {agent!r} (it declares: {names})", path=path)


async def _drive(
    args: argparse.Namespace, messages: Sequence[str]
) -> tuple[Agent, list[RunOutcome], EventRecorder]:
    definition = await _definition_from(args.config, args.agent)
    clock = SystemClock()
    recorder = EventRecorder()
    store = await SqliteStore.open(args.db, now_ms=clock.now_ms())
    try:
        driver = AgentDriver(
            store,
            definition,
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            emitter=Emitter([recorder]),
        )
        # Finish what an earlier process left unfinished before taking anything new.
        outcomes = await driver.work()
        for text in messages:
            await driver.post(text)
        outcomes += await driver.work()
    finally:
        await definition.aclose()
        await store.aclose()
    return definition, outcomes, recorder


def _print_outcomes(outcomes: Sequence[RunOutcome]) -> None:
    for outcome in outcomes:
        label = f"turn {outcome.turn} ({outcome.kind} run {outcome.run_id})"
        if outcome.status == "answered":
            out.print(f"[bold]{label}[/bold]: {outcome.final_answer}")
        else:
            out.print(f"[bold red]{label}: {outcome.status}[/bold red] {outcome.error or ''}")


async def cmd_run(args: argparse.Namespace) -> int:
    """Run an agent config once: finish unfinished work, then answer ``--message``."""
    messages = [args.message] if args.message else []
    _, outcomes, _ = await _drive(args, messages)
    if args.json:
        _json(outcomes)
    else:
        _print_outcomes(outcomes)
        if not outcomes:
            out.print("nothing to do: no unfinished turn and no message (use --message)")
    return EXIT_OK


async def cmd_demo(args: argparse.Namespace) -> int:
    """The demo: a standing agent answering a few messages, continuing its conversation."""
    store = await SqliteStore.open(args.db)
    try:
        state = await store.conversation_state("demo")
    finally:
        await store.aclose()
    done = state.turn if state is not None else 0
    messages = [QUESTIONS[(done + i) % len(QUESTIONS)] for i in range(args.turns)]
    definition, outcomes, recorder = await _drive(args, messages)
    _print_outcomes(outcomes)
    store = await SqliteStore.open(args.db, read_only=True)
    try:
        agents = {a.agent_id: a for a in await store.agents()}
        runs = await store.runs(definition.agent_id)
        spans = await store.folded_spans(definition.agent_id)
        records = await _window_records(store, [o.run_id for o in outcomes])
    finally:
        await store.aclose()
    agent = agents[definition.agent_id]
    tool_calls = recorder.of_type("tool.ended")
    table = Table(title=f"standing agent {definition.agent_id!r}", show_header=False)
    table.add_row(
        "this run",
        f"{len(outcomes)} runs, {len(recorder.of_type('iteration.ended'))} "
        f"iterations, {len(recorder.of_type('receipt.minted'))} model calls, "
        f"{len(tool_calls)} tool calls",
    )
    table.add_row(
        "tools called", ", ".join(sorted({e.payload["toolName"] for e in tool_calls})) or "-"
    )
    table.add_row(
        "conversation",
        f"{agent.turn} turns, {agent.messages} messages, {agent.model_calls} model calls in all",
    )
    removed = sum(r.get("removedMessageCount", 0) for r in records)
    pinned = sorted(
        {p["toolName"] for r in records for p in (r.get("observations") or {}).get("pinned", [])}
    )
    table.add_row(
        "window",
        f"{len(records)} records this run, {removed} messages folded out; "
        f"pins held: {', '.join(pinned) or 'none'}",
    )
    table.add_row("folds", f"{len(spans)} folded spans kept with the conversation")
    table.add_row("status", agent.status)
    table.add_row("data", str(await anyio.Path(args.db).resolve()))
    out.print(table)
    last = runs[-1].run_id if runs else "RUN"
    db = args.db

    def say(line: str) -> None:
        out.print(line, soft_wrap=True, highlight=False)

    say("next:")
    say(f"  afp runs demo --db {db}                 # every run of the agent")
    say(f"  afp commits {last} --db {db}   # the commit log of the last run")
    say(f"  afp window --agent demo --db {db}       # what each window visit did")
    if spans:
        fp = spans[-1].summary_fingerprint
        say(f"  afp folded demo {fp} --messages --db {db}   # a fold's originals")
    say("  scripts/demo                               # continue the same conversation")
    return EXIT_OK


# -- reading the store ------------------------------------------------------------------------


async def _reader(db: str) -> SqliteStore:
    return await SqliteStore.open(db, read_only=True)


async def cmd_agents(args: argparse.Namespace) -> int:
    """List agents with their conversation summaries."""
    store = await _reader(args.db)
    try:
        agents = await store.agents()
    finally:
        await store.aclose()
    if args.json:
        _json(agents)
        return EXIT_OK
    table = Table("agent", "status", "turns", "messages", "model calls", "tokens in/out", "created")
    for a in agents:
        table.add_row(
            a.agent_id,
            a.status,
            str(a.turn),
            str(a.messages),
            str(a.model_calls),
            f"{a.usage_totals.input}/{a.usage_totals.output}",
            _when(a.created_at_ms),
        )
    out.print(table)
    return EXIT_OK


async def cmd_agent(args: argparse.Namespace) -> int:
    """One agent's summary: status, turn, counters, inbox depth, open questions."""
    store = await _reader(args.db)
    try:
        rows = [row for row in await store.agents() if row.agent_id == args.agent]
        if not rows:
            raise NotFound(f"no agent {args.agent!r} in {args.db}")
        view = await agent_view(store, rows[0], None, status=rows[0].status)
    finally:
        await store.aclose()
    if args.json:
        _json(view)
        return EXIT_OK
    table = Table("field", "value")
    for name, value in msgspec.to_builtins(view).items():
        if name != "openQuestions":
            table.add_row(name, _brief(value, 80))
    out.print(table)
    for question in view.open_questions:
        out.print(f"open question {question.question_id} ({question.kind}): {question.prompt}")
    return EXIT_OK


async def cmd_health(args: argparse.Namespace) -> int:
    """The running host's health (``GET /v1/health``): exit 4 when no host answers."""
    url = f"{args.api.rstrip('/')}/v1/health"
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        raise StoreUnavailable(f"no host answered at {args.api} ({exc})") from exc
    if args.json:
        out.print(response.text, soft_wrap=True, highlight=False)
    else:
        body = response.json()
        out.print(
            f"{body.get('status')} (afp-runtime {body.get('version')}, "
            f"schema {body.get('schemaVersion')})"
        )
    return EXIT_OK


async def cmd_runs(args: argparse.Namespace) -> int:
    """List runs: every agent's, one agent's, or one by id."""
    store = await _reader(args.db)
    try:
        runs = await store.runs(args.agent, run_id=args.id)
    finally:
        await store.aclose()
    if args.id and not runs:
        raise NotFound(f"no run {args.id!r}")
    if args.json:
        # Exactly the API's bodies: one run (GET /v1/runs/{id}), else a page newest first.
        _json(runs[0] if args.id else {"items": list(reversed(runs)), "next": None})
        return EXIT_OK
    table = Table("run", "agent", "turn", "kind", "status", "bundles", "started", "recovered from")
    for r in runs:
        table.add_row(
            r.run_id,
            r.agent_id,
            str(r.turn),
            r.kind,
            r.status,
            str(r.bundles),
            _when(r.started_at_ms),
            r.recovered_from or "",
        )
    out.print(table)
    return EXIT_OK


def _brief(value: Any, limit: int = 60) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def cmd_commits(args: argparse.Namespace) -> int:
    """Show a run's commit log."""
    store = await _reader(args.db)
    try:
        if not await store.runs(run_id=args.run):
            raise NotFound(f"no run {args.run!r}")
        bundles = await store.bundles(args.run, from_seq=args.from_seq)
        if args.expand:
            agent_id = (await store.runs(run_id=args.run))[0].agent_id
            expanded = []
            for bundle in bundles:
                writes = []
                for write in bundle.writes:
                    if write["key"] == "history":
                        ref = msgspec.convert(write["value"], ListRef)
                        messages, _ = await store.resolve(agent_id, ref)
                        write = {**write, "value": msgspec.to_builtins(messages)}
                    writes.append(write)
                expanded.append(msgspec.structs.replace(bundle, writes=writes))
            bundles = expanded
    finally:
        await store.aclose()
    if args.json:
        _json(bundles)
        return EXIT_OK
    table = Table("id", "iteration", "committed", "writes")
    for b in bundles:
        shown = "\n".join(
            f"{w['verb']} {w['key']} = {_brief(w.get('value'), 200 if args.expand else 60)}"
            for w in b.writes
        )
        table.add_row(b.runtime_stage_id, str(b.iteration), _when(b.committed_at_ms), shown or "-")
    out.print(table)
    return EXIT_OK


async def cmd_inbox(args: argparse.Namespace) -> int:
    """List an agent's inbox messages."""
    store = await _reader(args.db)
    try:
        rows = await store.inbox(args.agent, status=args.status)
        runs = await store.runs(args.agent) if args.json else []
    finally:
        await store.aclose()
    if args.json:
        # Exactly the API's body (GET …/inbox): one page holding every message.
        _json({"items": inbox_messages(rows, runs), "next": None})
        return EXIT_OK
    table = Table("message", "position", "status", "turn", "accepted", "text")
    for r in rows:
        table.add_row(
            r.message_id,
            str(r.position),
            r.status,
            str(r.turn or ""),
            _when(r.accepted_at_ms),
            _brief(r.text, 50),
        )
    out.print(table)
    return EXIT_OK


async def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the database: SQLite integrity, every stored body against its fingerprint, and
    every ledger row strictly (nothing is changed)."""
    store = await _reader(args.db)
    try:
        integrity = await store.integrity_check()
        damaged = await store.body_check()
        problems = []
        for agent in await store.agents():
            try:
                validate_ledger(await store.ledger(agent.agent_id))
            except AfpError as exc:
                problems.append(f"{agent.agent_id}: {exc}")
    finally:
        await store.aclose()
    report = {"integrity": integrity, "damagedBodies": damaged, "ledgerProblems": problems}
    healthy = integrity == ["ok"] and not damaged and not problems
    if args.json:
        _json({**report, "healthy": healthy})
    else:
        out.print(f"integrity_check: {', '.join(integrity)}")
        out.print(f"bodies: {damaged if damaged else 'all match their fingerprints'}")
        out.print(f"ledger: {problems if problems else 'every row is valid'}")
    return EXIT_OK if healthy else EXIT_STORE


async def _window_records(store: SqliteStore, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    records = []
    for run_id in run_ids:
        for bundle in await store.bundles(run_id):
            for write in bundle.writes:
                if write["key"] == "compactions":
                    for record in write["value"]:
                        records.append({"runId": run_id, **record})
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


async def cmd_window(args: argparse.Namespace) -> int:
    """Show the window records of a run, or of every run of an agent."""
    if (args.run is None) == (args.agent is None):
        raise UsageError("give either RUN or --agent AGENT")
    store = await _reader(args.db)
    try:
        if args.agent is not None:
            run_ids = [r.run_id for r in await store.runs(args.agent)]
        else:
            if not await store.runs(run_id=args.run):
                raise NotFound(f"no run {args.run!r}")
            run_ids = [args.run]
        records = await _window_records(store, run_ids)
    finally:
        await store.aclose()
    if args.json:
        _json(records)
        return EXIT_OK
    table = Table(
        "run", "strategy", "iteration", "removed", "chars before → after", "refusals", "pins"
    )
    for r in records:
        refusals = ", ".join(
            f"{x['reason']}({x['turnIndex']},{x['messageIndex']})" for x in r.get("refusals", [])
        )
        table.add_row(
            r["runId"],
            r.get("strategy", "?"),
            str(r.get("iteration")),
            str(r.get("removedMessageCount")),
            f"{r.get('windowCharsBefore')} → {r.get('windowCharsAfter')}",
            refusals or "-",
            _pins(r),
        )
    out.print(table)
    return EXIT_OK


async def cmd_folded(args: argparse.Namespace) -> int:
    """List an agent's folded spans, or one span (and its retained originals)."""
    store = await _reader(args.db)
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r}")
        spans = await load_folded_spans(store, args.agent, summary_fingerprint=args.fingerprint)
    finally:
        await store.aclose()
    if args.fingerprint is not None and not spans:
        raise NotFound(f"no folded span with summary fingerprint {args.fingerprint!r}")
    if args.messages:
        if args.fingerprint is None:
            raise UsageError("--messages needs a FINGERPRINT")
        messages = spans[0].messages if spans[0].messages is not msgspec.UNSET else ()
        if args.json:
            _json(messages)
            return EXIT_OK
        if not messages:
            out.print("this span was folded with retain='discard': no originals were kept")
            return EXIT_OK
        table = Table("#", "role", "content", "tool calls / id")
        for i, m in enumerate(messages):
            extra = ", ".join(f"{c.name}({c.id})" for c in m.tool_calls) or (m.tool_call_id or "")
            table.add_row(str(i), m.role, m.content, extra)
        out.print(table)
        return EXIT_OK
    if args.json:
        _json([msgspec.structs.replace(s, messages=msgspec.UNSET) for s in spans])
        return EXIT_OK
    table = Table("summary fingerprint", "run", "iteration", "folded", "model", "messages", "kept")
    for span in spans:
        table.add_row(
            span.summary_fingerprint,
            span.run_id,
            str(span.iteration),
            _when(span.folded_at_ms),
            span.model,
            str(span.message_count),
            span.retained,
        )
    out.print(table)
    return EXIT_OK


async def cmd_findings(args: argparse.Namespace) -> int:
    """List an agent's ledger rows, its current standing per tool call, and its conflicts."""
    store = await _reader(args.db)
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r}")
        rows = await store.ledger(args.agent, kind=args.kind, turn=args.turn)
        every = await store.ledger(args.agent)
    finally:
        await store.aclose()
    fold = fold_ledger(None, rows_from_wire(every))
    if args.json:
        _json(rows)
        return EXIT_OK
    table = Table("#", "kind", "turn", "iteration", "tool call", "tool", "detail")
    for i, row in enumerate(rows):
        kind = row.get("kind", "?")
        if kind == "standing":
            detail = f"{row.get('standing')}; {len(row.get('assertions', []))} assertions"
            if row.get("unknownId"):
                detail += "; unknown id"
        elif kind == "basis":
            detail = ", ".join(f"{k}={row[k]}" for k in ("basis", "expect") if k in row) or "-"
        elif kind == "conflict":
            detail = "/".join(str(k) for k in row.get("key", []))
        else:
            detail = _time_detail(row)
        table.add_row(
            str(i),
            kind,
            str(row.get("turn", "")),
            str(row.get("iteration", "")),
            str(row.get("toolCallId", "")),
            str(row.get("toolName", "")),
            detail,
        )
    out.print(table)
    if fold.standing_of:
        standings = ", ".join(f"{cid}: {s}" for cid, s in fold.standing_of.items())
        out.print(f"current standings: {standings}", soft_wrap=True)
    conflicts = list(fold.conflicts_in_order())
    out.print(f"conflicts: {len(conflicts)}")
    for key, witnesses in conflicts:
        ids = ", ".join(w.tool_call_id for w in witnesses)
        out.print(f"  {'/'.join(key)}: {ids}", soft_wrap=True)
    return EXIT_OK


def _time_detail(row: dict[str, Any]) -> str:
    """A one-line summary of a time row (docs/time.md#row-kinds) for the findings table."""
    kind = row.get("kind")
    if kind == "call-window":
        parts = [str(row.get("how"))]
        for key in ("why", "refused", "by", "argument", "assumed"):
            if key in row:
                parts.append(f"{key}={row[key]}")
        if "form" in row:
            parts.append(f"form={row['form']}")
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


EXIT_DAMAGED = 3


def _open_log(db: str, run_id: str) -> SqliteRunLog:
    try:
        return SqliteRunLog(db, run_id)
    except KeyError:
        raise NotFound(f"no run {run_id!r}") from None


async def _with_log(db: str, run_id: str, work: Callable[[Any], Any]) -> Any:
    """Run sync served code against a run's log in a worker thread (it never awaits)."""
    if not await anyio.Path(db).exists():
        raise StoreUnavailable(f"no database at {db}", path=db)

    def go() -> Any:
        with _open_log(db, run_id) as log:
            return work(log)

    return await anyio.to_thread.run_sync(go)


def _encoder_for(receipt: Receipt | None) -> Any:
    """A built-in adapter that can re-encode a receipt's request in this process."""
    if receipt is None or receipt.wire is None:
        return None
    return encoder_for(receipt.wire.encoder, receipt.basis.model)


async def cmd_epochs(args: argparse.Namespace) -> int:
    """List a run's epochs (model calls): outcome, attempts, agent-wide call number."""

    def work(log: Any) -> list[dict[str, Any]]:
        rows = []
        for location in epochs(log):
            receipt = receipt_at(log, location.epoch)
            view = served_at(log, location.epoch)
            rows.append(
                {
                    **msgspec.to_builtins(location),
                    "agentCall": receipt.agent_call if receipt else None,
                    "wire": bool(receipt and receipt.wire),
                    "gaps": [g.gap for g in view.gaps] if view else [],
                }
            )
        return rows

    rows = await _with_log(args.db, args.run, work)
    if args.json:
        _json(rows)
        return EXIT_OK
    table = Table("epoch", "call", "agent call", "outcome", "attempts", "gaps")
    for r in rows:
        table.add_row(
            str(r["epoch"]),
            r["callRuntimeStageId"],
            str(r["agentCall"]),
            r["outcome"],
            str(r["attempts"]),
            ", ".join(r["gaps"]),
        )
    out.print(table)
    return EXIT_OK


def _print_view(view: ServedView) -> None:
    out.print(f"epoch {view.epoch} ({view.call_runtime_stage_id})")
    if view.system.text:
        out.print(f"system: {view.system.text}", soft_wrap=True)
    table = Table("#", "role", "content", "calls / id")
    for i, m in enumerate(view.messages.as_sent):
        extra = ", ".join(f"{c.name}({c.id})" for c in m.tool_calls) or (m.tool_call_id or "")
        table.add_row(str(i), m.role, _brief(m.content, 120), extra)
    for line in view.messages.request_only:
        table.add_row("+", line.role, _brief(line.text, 120), line.reason)
    out.print(table)
    out.print(f"tools: {', '.join(view.tools.names) or '-'}")
    out.print(f"gaps: {', '.join(g.gap for g in view.gaps)}")


def _diff(a: ServedView, b: ServedView) -> dict[str, Any]:
    """What changed in the window between two epochs of a run."""
    from afp_runtime.messages import fingerprint

    def fps(view: ServedView) -> list[str]:
        return [fingerprint(thaw_message(m)) for m in view.messages.as_sent]

    before, after = fps(a), fps(b)
    kept = set(before) & set(after)
    return {
        "from": a.epoch,
        "to": b.epoch,
        "added": [i for i, fp in enumerate(after) if fp not in set(before)],
        "removed": [i for i, fp in enumerate(before) if fp not in set(after)],
        "folded": [
            i
            for i, m in enumerate(b.messages.as_sent)
            if m.role == "user" and m.content.startswith(SUMMARY_PREFIX) and after[i] not in kept
        ],
        "kept": len(kept),
    }


async def cmd_served(args: argparse.Namespace) -> int:
    """Rebuild what the model was sent at one epoch (or all; or the change between two)."""
    if args.file is not None:
        data = await anyio.Path(args.file).read_bytes()
        log: Any = load_export(data)
        views = served_views(log) if args.epoch is None else (served_at(log, args.epoch),)
    elif args.diff is not None:
        a, b = args.diff

        def work_diff(log: Any) -> Any:
            return served_at(log, a), served_at(log, b)

        va, vb = await _with_log(args.db, args.run, work_diff)
        if va is None or vb is None:
            raise NotFound(f"run {args.run!r} has no epoch {a if va is None else b}")
        diff = _diff(va, vb)
        if args.json:
            _json(diff)
        else:
            out.print(diff)
        return EXIT_OK
    else:
        if args.run is None:
            raise UsageError("give RUN (or --file EXPORT)")

        def work(log: Any) -> Any:
            if args.all or args.epoch is None:
                return served_views(log)
            return (served_at(log, args.epoch),)

        views = await _with_log(args.db, args.run, work)
    if any(v is None for v in views):
        raise NotFound(f"no epoch {args.epoch}")
    if args.json:
        body = encode_served(views[0] if len(views) == 1 and args.epoch else list(views))
        sys.stdout.write(body.decode() + "\n")
        return EXIT_OK
    for view in views:
        if view is not None:
            _print_view(view)
    return EXIT_OK


async def cmd_receipt(args: argparse.Namespace) -> int:
    """Print the stored receipt of one epoch."""
    receipt = await _with_log(args.db, args.run, lambda log: receipt_at(log, args.epoch))
    if receipt is None:
        raise NotFound(f"run {args.run!r} has no accepted receipt for epoch {args.epoch}")
    _json(receipt)
    return EXIT_OK


async def cmd_conform(args: argparse.Namespace) -> int:
    """Check epochs against their receipts; exit 3 when any epoch is damaged."""

    def work(log: Any) -> list[ConformanceReport]:
        numbers = [args.epoch] if args.epoch is not None else [e.epoch for e in epochs(log)]
        reports = []
        for number in numbers:
            view = served_at(log, number)
            if view is None:
                raise NotFound(f"run {args.run!r} has no epoch {number}")
            receipt = receipt_at(log, number)
            encoder = None if args.no_wire else _encoder_for(receipt)
            reports.append(check(view, receipt, encoder=encoder, log=log))
        return reports

    reports = await _with_log(args.db, args.run, work)
    if args.json:
        _json(reports)
    else:
        table = Table("epoch", "verdict", "clauses not passing")
        for r in reports:
            bad = [f"{c.clause}: {c.status}" for c in r.clauses if c.status != "pass"]
            table.add_row(str(r.epoch), r.verdict, "\n".join(bad) or "-")
        out.print(table)
    return EXIT_DAMAGED if any(r.verdict == "damaged" for r in reports) else EXIT_OK


async def cmd_call(args: argparse.Namespace) -> int:
    """The agent's n-th model call over its whole life: run, epoch and the served view."""
    store = await _reader(args.db)
    try:
        runs = await store.runs(args.agent)
    finally:
        await store.aclose()
    for run in runs:

        def work(log: Any) -> Any:
            for location in epochs(log):
                receipt = receipt_at(log, location.epoch)
                if receipt is not None and receipt.agent_call == args.n:
                    return location.epoch, served_at(log, location.epoch)
            return None

        found = await _with_log(args.db, run.run_id, work)
        if found is not None:
            epoch, view = found
            body = {"agentCall": args.n, "runId": run.run_id, "epoch": epoch, "view": view}
            if args.json:
                sys.stdout.write(encode_served(body).decode() + "\n")
            else:
                out.print(f"call {args.n}: run {run.run_id}, epoch {epoch}")
                _print_view(view)
            return EXIT_OK
    raise NotFound(f"agent {args.agent!r} has no model call {args.n}")


async def cmd_export(args: argparse.Namespace) -> int:
    """Export a run's log (bodies inlined) for reading without the store."""
    data = await _with_log(args.db, args.run, lambda log: export_run(log, from_seq=args.from_seq))
    sys.stdout.write(data.decode() + "\n")
    return EXIT_OK


async def cmd_checkpoint(args: argparse.Namespace) -> int:
    """Print an agent's conversation checkpoint in portable form (JSON)."""
    store = await _reader(args.db)
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r}")
        checkpoint = await export_checkpoint(store, args.agent)
    finally:
        await store.aclose()
    _json(checkpoint)
    return EXIT_OK


async def cmd_import(args: argparse.Namespace) -> int:
    """Start an agent's conversation from a portable checkpoint (--replace archives the old)."""
    try:
        data = await anyio.Path(args.file).read_bytes()
    except OSError as exc:
        raise NotFound(f"cannot read {args.file}: {exc}") from exc
    checkpoint = parse_checkpoint(data, agent_id=args.agent)
    clock = SystemClock()
    store = await SqliteStore.open(args.db, now_ms=clock.now_ms())
    try:
        state = await import_checkpoint(
            store, args.agent, checkpoint, now_ms=clock.now_ms(), replace=args.replace
        )
    finally:
        await store.aclose()
    out.print(
        f"imported {len(state.history)} messages and {state.folded_count} folded spans "
        f"into {args.agent!r}"
    )
    return EXIT_OK


async def cmd_scenario_run(args: argparse.Namespace) -> int:
    """Run a scenario file offline (docs/scenarios.md) and print or write its result JSON."""
    if not args.verbose:
        # Scripted failures (tool errors, 5xx replies) log warnings by design: errors only.
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    try:
        data = await anyio.Path(args.file).read_bytes()
    except OSError as exc:
        raise NotFound(f"cannot read {args.file}: {exc}") from exc
    scenario = decode_scenario(data)
    if args.db is not None:
        result = await run_scenario(scenario, db_path=args.db)
    else:
        folder = await anyio.to_thread.run_sync(tempfile.mkdtemp)
        try:
            result = await run_scenario(scenario, db_path=Path(folder) / "scenario.db")
        finally:
            await anyio.to_thread.run_sync(shutil.rmtree, folder)
    encoded = encode_result(result)
    if args.out is not None:
        await anyio.Path(args.out).write_bytes(encoded)
    else:
        sys.stdout.write(encoded.decode("utf-8"))
    return EXIT_OK


# -- writing the inbox ------------------------------------------------------------------------


async def cmd_send(args: argparse.Namespace) -> int:
    """Post a person's message to an agent's durable inbox; prints the ack after the commit.

    The same path as the API's inbox (``SqliteStore.post``: a ``synchronous=FULL`` commit, then
    the ack); a running host notices the row within its poll interval. No host is needed.
    """
    clock = SystemClock()
    if not await anyio.Path(args.db).exists():
        raise NotFound(f"no database at {args.db}")
    store = await SqliteStore.open(args.db, now_ms=clock.now_ms())
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r} in {args.db}")
        ack = await store.post(
            args.agent,
            args.text,
            message_id=TimeOrderedIds(clock.now_ms).message_id(),
            now_ms=clock.now_ms(),
            idempotency_key=args.idempotency_key,
            sender=args.sender,
            time=_message_time(args),
        )
    finally:
        await store.aclose()
    if args.wait:
        return await _wait_for(args, ack.message_id)
    if args.json:
        _json(ack)
    elif ack.duplicate:
        out.print(f"already accepted as {ack.message_id} (position {ack.position})")
    else:
        out.print(f"accepted {ack.message_id} (position {ack.position})")
    return EXIT_OK


async def _writer(db: str) -> SqliteStore:
    """The store opened for a write command (it must exist already)."""
    if not await anyio.Path(db).exists():
        raise NotFound(f"no database at {db}")
    return await SqliteStore.open(db, now_ms=SystemClock().now_ms())


async def cmd_questions(args: argparse.Namespace) -> int:
    """List an agent's open check-in questions (``--all``: every status)."""
    store = await _reader(args.db)
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r} in {args.db}")
        rows = await store.questions(args.agent, status=None if args.all else "open")
    finally:
        await store.aclose()
    views = [question_view(row) for row in rows]
    if args.json:
        # Exactly the API's body: one page holding every question.
        _json({"items": views, "next": None})
        return EXIT_OK
    table = Table("question", "kind", "status", "asked", "calls", "prompt")
    for row in rows:
        table.add_row(
            row.question_id,
            row.kind,
            row.status,
            _when(row.asked_at_ms),
            ", ".join(row.tool_call_ids),
            _brief(row.prompt, 60),
        )
    out.print(table)
    return EXIT_OK


def _answer_value(text: str) -> Any:
    """An approval's command-line answer: ``approve``/``decline``, or the decision as a JSON
    object (``{"decision": "approve", "note": "..."}``). Other questions take the text as
    typed."""
    if text in ("approve", "decline"):
        return {"decision": text}
    if text.lstrip().startswith("{"):
        try:
            return msgspec.json.decode(text)
        except msgspec.DecodeError:
            return text
    return text


async def cmd_answer(args: argparse.Namespace) -> int:
    """Answer a question durably; a running host starts the answer run within its poll
    interval (the same code path as the API's answer endpoint)."""
    store = await _writer(args.db)
    clock = SystemClock()
    try:
        if await store.conversation_state(args.agent) is None:
            raise NotFound(f"no agent {args.agent!r} in {args.db}")
        if args.abandon:
            row = await abandon_question(
                store, args.agent, args.question, now_ms=clock.now_ms(), by=args.sender
            )
        else:
            asked = await store.questions(args.agent, question_ids=[args.question])
            kind = asked[0].kind if asked else None
            row = await answer_question(
                store,
                args.agent,
                args.question,
                _answer_value(args.value) if kind == "approval" else args.value,
                now_ms=clock.now_ms(),
                by=args.sender,
            )
    finally:
        await store.aclose()
    if row is None:
        raise NotFound(f"agent {args.agent!r} has no question {args.question!r}")
    if args.json:
        view = question_view(row)
        status: Any = (
            "abandoned"
            if args.abandon
            else {"open": "re-asked", "unsettled": "unsettled"}.get(row.status, "accepted")
        )
        accepted = AnswerAccepted(status=status, question=view)
        _json(accepted)
    else:
        out.print(f"{row.question_id} {row.status}")
    return EXIT_OK


async def cmd_dismiss(args: argparse.Namespace) -> int:
    """Close a held turn ``dismissed`` (by one of its runs) so the agent's queue moves on."""
    store = await _writer(args.db)
    clock = SystemClock()
    try:
        rows = await store.runs(run_id=args.run)
        if not rows:
            raise NotFound(f"no run {args.run!r} in {args.db}")
        agent_id = rows[0].agent_id
        message_id = await dismiss_turn(store, agent_id, run_id=args.run, clock=clock)
    finally:
        await store.aclose()
    if args.json:
        _json(
            DismissAccepted(
                run_id=args.run, agent_id=agent_id, message_id=message_id, status="dismissed"
            )
        )
    else:
        out.print(f"dismissed {message_id} (agent {agent_id})")
    return EXIT_OK


async def cmd_resume(args: argparse.Namespace) -> int:
    """Ask the running host (through its API) to resume a held or stalled run."""
    token = os.environ.get("AFP_API_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"{args.api.rstrip('/')}/v1/runs/{args.run}/resume"
    try:
        async with httpx.AsyncClient(timeout=30.0) as client:
            response = await client.post(url, json={}, headers=headers)
    except httpx.HTTPError as exc:
        raise StoreUnavailable(
            f"resume needs a running host; none answered at {args.api} ({exc})"
        ) from exc
    if response.status_code == 404:
        raise NotFound(response.json().get("error", {}).get("message", "not found"))
    if response.status_code in (401, 403, 409):
        detail = response.json().get("error", {}).get("message", response.text)
        raise Refused(f"the host refused the resume: {detail}")
    if response.status_code >= 400:
        detail = response.json().get("error", {}).get("message", response.text)
        raise UsageError(f"the host refused the resume: {detail}")
    if args.json:
        out.print(response.text, soft_wrap=True, highlight=False)
    else:
        out.print(f"resume of {args.run} accepted")
    return EXIT_OK


_SETTLED = ("answered", "paused", "held", "dismissed")


def _message_time(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--zone``/``--now`` as the message's ``time``, checked like the API checks it."""
    time = {key: value for key, value in (("zone", args.zone), ("now", args.now)) if value}
    if not time:
        return None
    message_time_from_wire(time)
    return time


async def _wait_for(args: argparse.Namespace, message_id: str) -> int:
    """Poll the store (read-only) until the message is answered, paused, held or dismissed."""
    with anyio.move_on_after(args.timeout):
        while True:
            store = await _reader(args.db)
            try:
                row = await store.inbox_message(message_id)
                answer: str | None = None
                if row is not None and row.status == "answered":
                    runs = [r for r in await store.runs(row.agent_id) if r.message_id == message_id]
                    last = await store.last_bundle(runs[-1].run_id) if runs else None
                    found = [
                        w["value"]
                        for w in (last.writes if last else [])
                        if w["key"] == "finalAnswer"
                    ]
                    answer = found[0] if found else None
            finally:
                await store.aclose()
            if row is not None and row.status in _SETTLED:
                if args.json:
                    _json({"messageId": message_id, "status": row.status, "answer": answer})
                else:
                    out.print(f"{message_id} {row.status}")
                    if answer is not None:
                        out.print(answer, soft_wrap=True, highlight=False)
                return EXIT_OK
            await anyio.sleep(0.25)
    raise UsageError(
        f"{message_id} was not answered within {args.timeout:g} s (is a host serving the agent?)"
    )


# -- serving ----------------------------------------------------------------------------------


async def _api_token(token_file: str | None) -> str | None:
    """The API token: ``--token-file`` (surrounding whitespace stripped) or ``AFP_API_TOKEN``."""
    if token_file is not None:
        try:
            text = await anyio.Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read api.token from {token_file}: {exc}", field="api.token"
            ) from exc
        return text.strip() or None
    return os.environ.get("AFP_API_TOKEN") or None


async def _definitions_from(path: str) -> tuple[HostConfig, list[Agent]]:
    config, agents = await anyio.to_thread.run_sync(read_config, path)
    return config.host, agents


async def cmd_serve(args: argparse.Namespace) -> int:
    """Run the standing host and the local API until SIGTERM or SIGINT (then exit 0)."""
    token = await _api_token(args.token_file)
    check_binding(args.host, token)
    if not 0 <= args.port <= 65_535:
        raise UsageError(f"--port must be from 0 to 65535, not {args.port}")
    settings, definitions = await _definitions_from(args.agents)
    clock = SystemClock()
    try:
        listener = await open_api_listener(args.host, args.port)
    except OSError as exc:
        for definition in definitions:
            await definition.aclose()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from exc
    port = listener.getsockname()[1]
    try:
        store = await SqliteStore.open(args.db, now_ms=clock.now_ms())
    except BaseException:
        listener.close()
        for definition in definitions:
            await definition.aclose()
        raise
    try:
        host = Host(
            store,
            definitions,
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            max_active_turns=settings.max_active_turns,
            poll_interval_s=settings.poll_interval_s,
            shutdown_grace_s=settings.shutdown_grace_s if args.grace is None else args.grace,
            host_id=settings.host_id,
            lease_ttl_s=settings.lease_ttl_s,
        )
        async with anyio.create_task_group() as watch:
            # The receiver outlives the API server: a second signal during the grace skips
            # what is left of it.
            watch.start_soon(host.stop_on_signals)
            try:
                async with host:
                    err.print(
                        f"afp: serving {', '.join(host.agent_ids)} on "
                        f"http://{args.host}:{port} (database {args.db})",
                        soft_wrap=True,
                        highlight=False,
                    )
                    await serve_until_stopped(host, Path(args.db), listener=listener, token=token)
            finally:
                watch.cancel_scope.cancel()
    finally:
        listener.close()
        await store.aclose()
    return EXIT_OK


# -- the parser -------------------------------------------------------------------------------

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def build_parser() -> argparse.ArgumentParser:
    """The ``afp`` argument parser."""
    parser = argparse.ArgumentParser(prog="afp", description="Run and inspect standing agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        help="how logs on stderr look (default: AFP_LOG_FORMAT, else console)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Command, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--db", default=DEFAULT_DB, help=f"SQLite file (default ./{DEFAULT_DB})")
        p.set_defaults(func=func)
        return p

    p = add("run", cmd_run, "Run an agent config once: finish unfinished work, answer a message.")
    p.add_argument("config", help="agent config file (TOML)")
    p.add_argument("--message", "-m", help="a person's message to answer")
    p.add_argument("--agent", help="which agent of the file (default: the first)")
    p.add_argument("--json", action="store_true", help="print run outcomes as JSON")

    p = add("demo", cmd_demo, "Run the demo standing agent with its scripted model.")
    p.add_argument("--config", default="configs/demo.toml", help="the demo config")
    p.add_argument("--turns", type=int, default=2, help="messages to send this time")
    p.set_defaults(agent=None)

    p = add("agents", cmd_agents, "List agents.")
    p.add_argument("--json", action="store_true")

    p = add("agent", cmd_agent, "One agent's summary (status, turn, inbox, open questions).")
    p.add_argument("agent")
    p.add_argument("--json", action="store_true")

    p = add("health", cmd_health, "Ask the running host whether it is up (GET /v1/health).")
    p.add_argument(
        "--api", default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}", help="the host's API URL"
    )
    p.add_argument("--json", action="store_true")

    p = add("runs", cmd_runs, "List runs (all, one agent's, or one by --id).")
    p.add_argument("agent", nargs="?")
    p.add_argument("--id", help="one run by id")
    p.add_argument("--json", action="store_true")

    p = add("commits", cmd_commits, "Show a run's commit log.")
    p.add_argument("run")
    p.add_argument("--from-seq", type=int, default=0)
    p.add_argument("--expand", action="store_true", help="resolve message references")
    p.add_argument("--json", action="store_true")

    p = add("inbox", cmd_inbox, "List an agent's inbox.")
    p.add_argument("agent")
    p.add_argument("--status")
    p.add_argument("--json", action="store_true")

    p = add("send", cmd_send, "Post a message to an agent's durable inbox (no host needed).")
    p.add_argument("agent")
    p.add_argument("text")
    p.add_argument(
        "--idempotency-key", help="a retry with the same key and text is not stored twice"
    )
    p.add_argument("--zone", help="the person's zone for this message (time-enabled agents)")
    p.add_argument("--now", help="the instant the message speaks from (strict ISO 8601)")
    p.add_argument("--from", dest="sender", help="the sending principal (owner check)")
    p.add_argument(
        "--wait", action="store_true", help="wait until it is answered, paused, held or dismissed"
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds --wait waits at most")
    p.add_argument("--json", action="store_true", help="print the ack as JSON")

    p = add("questions", cmd_questions, "List an agent's open check-in questions.")
    p.add_argument("agent")
    p.add_argument("--all", action="store_true", help="every question, closed ones too")
    p.add_argument("--json", action="store_true")

    p = add("answer", cmd_answer, "Answer a check-in question (text, approve/decline, JSON).")
    p.add_argument("agent")
    p.add_argument("question")
    p.add_argument("value")
    p.add_argument("--from", dest="sender", help="the answering principal")
    p.add_argument("--json", action="store_true")
    p.set_defaults(abandon=False)

    p = add("abandon", cmd_answer, "Close a check-in question without an answer.")
    p.add_argument("agent")
    p.add_argument("question")
    p.add_argument("--from", dest="sender", help="the principal closing it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(abandon=True, value=None)

    p = add("dismiss", cmd_dismiss, "Dismiss a held turn (by a run) so the queue moves on.")
    p.add_argument("run")
    p.add_argument("--json", action="store_true")

    p = add("resume", cmd_resume, "Ask the running host to resume a held or stalled run.")
    p.add_argument("run")
    p.add_argument(
        "--api", default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}", help="the host's API URL"
    )
    p.add_argument("--json", action="store_true")

    p = add("window", cmd_window, "Show window records (what left, what refused, pins).")
    p.add_argument("run", nargs="?", help="one run")
    p.add_argument("--agent", help="every run of this agent")
    p.add_argument("--json", action="store_true")

    p = add("folded", cmd_folded, "List folded spans; recover one span's originals.")
    p.add_argument("agent")
    p.add_argument("fingerprint", nargs="?", help="a summary message's fingerprint")
    p.add_argument("--messages", action="store_true", help="print the retained originals")
    p.add_argument("--json", action="store_true")

    p = add("findings", cmd_findings, "List the findings ledger: rows, standings, conflicts.")
    p.add_argument("agent")
    p.add_argument("--kind", help="only rows of this kind (basis, standing, conflict, ...)")
    p.add_argument("--turn", type=int, help="only rows of this turn")
    p.add_argument("--json", action="store_true")

    p = add("epochs", cmd_epochs, "List a run's model calls (epochs).")
    p.add_argument("run")
    p.add_argument("--json", action="store_true")

    p = add("served", cmd_served, "Rebuild exactly what the model was sent at an epoch.")
    p.add_argument("run", nargs="?")
    p.add_argument("epoch", nargs="?", type=int)
    p.add_argument("--all", action="store_true", help="every epoch of the run")
    p.add_argument("--file", help="read a run export instead of the store")
    p.add_argument("--diff", nargs=2, type=int, metavar=("A", "B"), help="what changed from A to B")
    p.add_argument("--json", action="store_true")

    p = add("receipt", cmd_receipt, "Print the receipt digested when an epoch was sent.")
    p.add_argument("run")
    p.add_argument("epoch", type=int)

    p = add("conform", cmd_conform, "Check epochs against their receipts (exit 3 if damaged).")
    p.add_argument("run")
    p.add_argument("epoch", nargs="?", type=int)
    p.add_argument(
        "--wire", action="store_true", help="re-encode and check the bytes (the default)"
    )
    p.add_argument("--no-wire", action="store_true", help="skip the byte check")
    p.add_argument("--json", action="store_true")

    p = add("call", cmd_call, "Show the agent's n-th model call (agent-wide number).")
    p.add_argument("agent")
    p.add_argument("n", type=int)
    p.add_argument("--json", action="store_true")

    p = add("export", cmd_export, "Export a run's log as JSON (bodies inlined).")
    p.add_argument("run")
    p.add_argument("--from-seq", type=int, default=0)

    p = add("checkpoint", cmd_checkpoint, "Print an agent's conversation checkpoint as JSON.")
    p.add_argument("agent")

    p = add("import", cmd_import, "Start an agent's conversation from a checkpoint file.")
    p.add_argument("agent")
    p.add_argument("file", help="a portable checkpoint (JSON)")
    p.add_argument("--replace", action="store_true", help="archive and replace a conversation")

    p = add("doctor", cmd_doctor, "Check the database's integrity and stored bodies.")
    p.add_argument("--json", action="store_true")

    p = add("serve", cmd_serve, "Run the standing host and the local HTTP API.")
    p.add_argument("--agents", required=True, help="agents file (TOML, like configs/demo.toml)")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--token-file", help="file holding the API token (else AFP_API_TOKEN; >= 32 chars)"
    )
    p.add_argument(
        "--grace",
        type=float,
        default=None,
        help="seconds running work may finish after SIGTERM/SIGINT (default: the file's "
        "[host] shutdownGraceS, else 30); a second signal skips the rest",
    )

    text = "Offline scenarios: a scripted conversation, model, tools and clock."
    group = sub.add_parser("scenario", help=text, description=text)
    scenario_sub = group.add_subparsers(dest="scenario_command", required=True, metavar="COMMAND")
    text = "Run a scenario file and print its result JSON (or write it with --out)."
    p = scenario_sub.add_parser("run", help=text, description=text)
    p.add_argument("file", help="a scenario file (afp-scenario/1 JSON)")
    p.add_argument("--out", help="write the result JSON to this file instead of printing it")
    p.add_argument(
        "--db", help="the SQLite file to create (default: a temporary file, deleted afterwards)"
    )
    p.set_defaults(func=cmd_scenario_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``afp``: parse, then cross into async exactly once."""
    args = build_parser().parse_args(argv)
    if args.log_format is None and os.environ.get("AFP_LOG_FORMAT", "console") not in (
        "console",
        "json",
    ):
        err.print("afp: AFP_LOG_FORMAT must be console or json", highlight=False)
        return EXIT_USAGE
    _configure_logging(args.verbose, args.log_format)
    try:
        return anyio.run(args.func, args)
    except NotFound as exc:
        err.print(f"afp: {exc}")
        return EXIT_MISSING
    except UsageError as exc:
        err.print(f"afp: {exc}")
        return EXIT_USAGE
    except ConfigError as exc:
        err.print(f"afp: {exc}")
        return EXIT_USAGE
    except (NotOwner, QuestionClosed, RunNotHeld, RunNotResumable, IdempotencyConflict) as exc:
        # docs/api.md#the-afp-command: a write the state or ownership refuses.
        err.print(f"afp: {exc}")
        return EXIT_REFUSED
    except Refused as exc:
        err.print(f"afp: {exc}")
        return EXIT_REFUSED
    except StoreError as exc:
        err.print(f"afp: {exc}")
        return EXIT_STORE
    except AfpError as exc:
        err.print(f"afp: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
