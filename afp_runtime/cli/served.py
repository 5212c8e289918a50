"""What a model was sent: epochs, served views and their diff, receipts, conformance, the n-th
call, exports. Served code is synchronous over a run's log; the store's run-log reader calls it
off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from afp_runtime.cli import _ids
from afp_runtime.cli._exits import EXIT_DAMAGED, EXIT_OK, UsageError
from afp_runtime.cli._show import add_row, print_json, say, show_table, table, write_json
from afp_runtime.cli.reads import reader
from afp_runtime.errors import NotFound
from afp_runtime.messages import Message
from afp_runtime.records import RunLog
from afp_runtime.served import (
    ConformanceReport,
    Receipt,
    ServedView,
    ViewDiff,
    check,
    diff_views,
    encode_served,
    epoch_entries,
    epochs,
    export_run,
    find_agent_call,
    load_export,
    receipt_at,
    served_at,
    served_views,
)

T = TypeVar("T")


async def _with_log(db: str, text: str, work: Callable[[RunLog], T]) -> tuple[str, T]:
    """The run ``text`` names, and sync served code run against its log, off the event loop (it
    never awaits)."""
    async with reader(db) as store:
        run_id = await _ids.run_id(store, text)
        return run_id, await store.read_run(run_id, work)


async def cmd_epochs(args: Any) -> int:
    """List a run's epochs (model calls): outcome, attempts, agent-wide call number."""

    def work(log: RunLog) -> list[Any]:
        entries, _ = epoch_entries(log, start=0, limit=len(epochs(log)))
        return entries

    run_id, entries = await _with_log(args.db, args.run, work)
    if args.json:
        # Exactly the API's body (GET /v1/runs/{id}/epochs): one page holding every epoch.
        return print_json({"items": entries, "next": None})
    grid = table("epoch", "call", "agent call", "outcome", "attempts", "tool calls", "gaps")
    for e in entries:
        add_row(
            grid,
            [
                e.epoch,
                e.call_runtime_stage_id,
                e.agent_call,
                e.outcome,
                e.attempts,
                e.tool_call_count,
                ", ".join(e.gaps),
            ],
        )
    show_table(grid, empty=f"run {run_id} made no model call")
    return EXIT_OK


def _message_line(marker: str, message: Message, limit: int = 200) -> str:
    calls = ", ".join(f"{c.name}({c.id})" for c in message.tool_calls)
    said = message.content if len(message.content) <= limit else message.content[:limit] + "…"
    tail = f" [calls {calls}]" if calls else ""
    answering = f" [answers {message.tool_call_id}]" if message.tool_call_id else ""
    return f"{marker} {message.role}: {said}{tail}{answering}"


def _print_view(view: ServedView) -> None:
    say(f"epoch {view.epoch} ({view.call_runtime_stage_id})")
    if view.system.text:
        say(f"system: {view.system.text}")
    grid = table("#", "role", "content", "calls / id")
    for i, m in enumerate(view.messages.as_sent):
        extra = ", ".join(f"{c.name}({c.id})" for c in m.tool_calls) or (m.tool_call_id or "")
        add_row(grid, [i, m.role, m.content, extra])
    for line in view.messages.request_only:
        add_row(grid, ["+", line.role, line.text, line.reason])
    show_table(grid, empty="no messages")
    say(f"tools: {', '.join(view.tools.names) or '-'}")
    say(f"gaps: {', '.join(g.gap for g in view.gaps)}")


def _print_diff(diff: ViewDiff) -> None:
    say(
        f"epoch {diff.before} -> {diff.after}: {diff.kept} kept, {len(diff.removed)} left, "
        f"{len(diff.added)} came, {len(diff.changed)} changed"
    )
    for message in diff.removed:
        say(_message_line("-", message))
    for message in diff.added:
        say(_message_line("+", message))
    for moved in diff.changed:
        say(_message_line(f"~ {moved.index} before", moved.before))
        say(_message_line(f"~ {moved.index} after ", moved.after))
    if diff.system_changed:
        say("system text changed")
    for piece in diff.pieces_removed:
        say(f"- system piece {piece.slot}: {piece.text}")
    for piece in diff.pieces_added:
        say(f"+ system piece {piece.slot}: {piece.text}")
    for piece_change in diff.pieces_changed:
        say(
            f"~ system piece {piece_change.slot}: {piece_change.before!r} -> {piece_change.after!r}"
        )
    for name in diff.tools_removed:
        say(f"- tool {name}")
    for name in diff.tools_added:
        say(f"+ tool {name}")
    for name in diff.tools_changed:
        say(f"~ tool {name} (description or schema)")


async def cmd_served(args: Any) -> int:
    """Rebuild what the model was sent at one epoch (or all; or the change between two)."""
    if args.file is not None:
        try:
            data = await anyio.Path(args.file).read_bytes()
        except OSError as exc:
            raise NotFound(f"cannot read {args.file}: {exc}", what="file", value=args.file) from exc
        log: Any = load_export(data)
        if args.run is not None:
            # The export names its run: a lone positional is the epoch.
            if args.epoch is not None or not args.run.isdecimal():
                raise UsageError("with --file, give only the EPOCH: the export names its run")
            args.epoch = int(args.run)
        if args.diff is not None:
            return _show_diff(args, log.run_id, *_two_views(log, *args.diff))
        views = served_views(log) if args.epoch is None else (served_at(log, args.epoch),)
    else:
        if args.run is None:
            raise UsageError("give RUN (or --file EXPORT)")
        if args.diff is not None:
            pair = args.diff
            run_id, views_ab = await _with_log(args.db, args.run, lambda g: _two_views(g, *pair))
            return _show_diff(args, run_id, *views_ab)

        def work(log: RunLog) -> Any:
            if args.all or args.epoch is None:
                return served_views(log)
            return (served_at(log, args.epoch),)

        _, views = await _with_log(args.db, args.run, work)
    if any(v is None for v in views):
        raise NotFound(f"no epoch {args.epoch}", what="epoch", value=args.epoch)
    if args.json:
        body = encode_served(views[0] if len(views) == 1 and args.epoch else list(views))
        write_json(body)
        return EXIT_OK
    if not views:
        say("this run made no model call")
    for view in views:
        if view is not None:
            _print_view(view)
    return EXIT_OK


def _two_views(
    log: RunLog, a: int, b: int
) -> tuple[int, ServedView | None, int, ServedView | None]:
    return a, served_at(log, a), b, served_at(log, b)


def _show_diff(
    args: Any, run_id: str, a: int, va: ServedView | None, b: int, vb: ServedView | None
) -> int:
    """``--diff A B``: what changed from epoch A to epoch B, from a store or an export."""
    if va is None or vb is None:
        missing = a if va is None else b
        raise NotFound(f"run {run_id!r} has no epoch {missing}", what="epoch", value=missing)
    diff = diff_views(va, vb)
    if args.json:
        write_json(encode_served(diff))
    else:
        _print_diff(diff)
    return EXIT_OK


async def cmd_receipt(args: Any) -> int:
    """Print the stored receipt of one epoch."""
    run_id, receipt = await _with_log(args.db, args.run, lambda log: receipt_at(log, args.epoch))
    if receipt is None:
        raise NotFound(
            f"run {run_id!r} has no accepted receipt for epoch {args.epoch}",
            what="epoch",
            value=args.epoch,
        )
    return print_json(receipt)


def _encoder_for(receipt: Receipt | None) -> Any:
    """A built-in adapter that can re-encode a receipt's request in this process."""
    if receipt is None or receipt.wire is None:
        return None
    from afp_runtime import models  # the adapters load here, in the worker thread

    return models.encoder_for(receipt.wire.encoder, receipt.basis.model)


async def cmd_conform(args: Any) -> int:
    """Check epochs against their receipts, bytes re-encoded unless ``--no-wire``; exit 3 when
    any epoch is damaged."""

    def work(log: RunLog) -> list[ConformanceReport]:
        numbers = [args.epoch] if args.epoch is not None else [e.epoch for e in epochs(log)]
        reports = []
        for number in numbers:
            view = served_at(log, number)
            if view is None:
                raise NotFound(
                    f"run {log.run_id!r} has no epoch {number}", what="epoch", value=number
                )
            receipt = receipt_at(log, number)
            encoder = None if args.no_wire else _encoder_for(receipt)
            reports.append(check(view, receipt, encoder=encoder, log=log))
        return reports

    run_id, reports = await _with_log(args.db, args.run, work)
    if args.json:
        print_json(reports)
    else:
        grid = table("epoch", "verdict", "clauses not passing")
        for r in reports:
            bad = [f"{c.clause}: {c.status}" for c in r.clauses if c.status != "pass"]
            add_row(grid, [r.epoch, r.verdict, "\n".join(bad) or "-"])
        show_table(grid, empty=f"run {run_id} made no model call")
    return EXIT_DAMAGED if any(r.verdict == "damaged" for r in reports) else EXIT_OK


async def cmd_call(args: Any) -> int:
    """The agent's n-th model call over its whole life: run, epoch and the served view."""
    async with reader(args.db) as store:
        runs = [run.run_id for run in await store.runs(await _ids.known_agent(store, args.agent))]
        found = await find_agent_call(runs, args.n, store.read_run)
    if found is not None:
        index, epoch, view = found
        body = {"agentCall": args.n, "runId": runs[index], "epoch": epoch, "view": view}
        if args.json:
            write_json(encode_served(body))
        else:
            say(f"call {args.n}: run {runs[index]}, epoch {epoch}")
            _print_view(view)
        return EXIT_OK
    raise NotFound(f"agent {args.agent!r} has made no model call {args.n}", what="call")


async def cmd_export(args: Any) -> int:
    """Export a run's log (bodies inlined) for reading without the store."""
    _, data = await _with_log(
        args.db, args.run, lambda log: export_run(log, from_seq=args.from_seq)
    )
    write_json(data)
    return EXIT_OK
