"""What a model was sent: epochs, served views and their diff, receipts, conformance, the n-th
call and the diff of two calls, exports. Served code is synchronous over a run's log; the
store's run-log reader calls it off the event loop."""

from __future__ import annotations

from typing import Any

import anyio

from afp_runtime.app import (
    CallDiff,
    CallSide,
    RunSource,
    ServedView,
    StoredRun,
    ViewDiff,
    agent_call,
    all_served_views,
    builtin_encoder,
    call_diff,
    conform,
    encode_served,
    epoch_list,
    epoch_receipt,
    export,
    exported_run,
    served_view,
    view_diff,
)
from afp_runtime.cli import _ids
from afp_runtime.cli._exits import EXIT_DAMAGED, EXIT_OK, UsageError
from afp_runtime.cli._lazy import load
from afp_runtime.cli._reasons import say_reasons
from afp_runtime.cli._show import add_row, print_json, say, show_table, table, write_json
from afp_runtime.cli.reads import reader
from afp_runtime.errors import NotFound
from afp_runtime.messages import Message
from afp_runtime.store import Store


async def _run(store: Store, text: str) -> StoredRun:
    """The run ``text`` names (an id, a prefix, ``agent:last``...)."""
    return StoredRun(store, await _ids.run_id(store, text))


async def cmd_epochs(args: Any) -> int:
    """List a run's epochs (model calls): outcome, attempts, agent-wide call number."""
    async with reader(args.db) as store:
        run = await _run(store, args.run)
        entries, _ = await epoch_list(run)
    run_id = run.run_id
    if args.json:
        # Exactly the API's body (GET /v1/runs/{id}/epochs): one page holding every epoch.
        shapes = await load("afp_runtime.api.shapes")
        return print_json({"items": [shapes.explained_epoch(e) for e in entries], "next": None})
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
    say_reasons(gap for e in entries for gap in e.gaps)
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
        source: RunSource = exported_run(data)
        if args.run is not None:
            # The export names its run: a lone positional is the epoch.
            if args.epoch is not None or not args.run.isdecimal():
                raise UsageError("with --file, give only the EPOCH: the export names its run")
            args.epoch = int(args.run)
        return await _show_views(args, source, every=args.epoch is None)
    if args.run is None:
        raise UsageError("give RUN (or --file EXPORT)")
    async with reader(args.db) as store:
        return await _show_views(
            args, await _run(store, args.run), every=args.all or args.epoch is None
        )


async def _show_views(args: Any, source: RunSource, *, every: bool) -> int:
    """Print the views (or ``--diff A B``) of a run read from a store or an export."""
    if args.diff is not None:
        diff = await view_diff(source, *args.diff)
        if args.json:
            write_json(encode_served(diff))
        else:
            _print_diff(diff)
        return EXIT_OK
    if every:
        views: tuple[ServedView | None, ...] = await all_served_views(source)
    else:
        views = (await served_view(source, args.epoch),)
    if any(v is None for v in views):
        raise NotFound(f"no epoch {args.epoch}", what="epoch", value=args.epoch)
    if args.json:
        # The API's served body: each view with the sentences of its gaps.
        shapes = await load("afp_runtime.api.shapes")
        shown = [shapes.explained_view(v) for v in views if v is not None]
        write_json(encode_served(shown[0] if len(shown) == 1 and args.epoch else shown))
        return EXIT_OK
    if not views:
        say("this run made no model call")
    for view in views:
        if view is not None:
            _print_view(view)
    say_reasons(gap.gap for view in views if view is not None for gap in view.gaps)
    return EXIT_OK


async def cmd_receipt(args: Any) -> int:
    """Print the stored receipt of one epoch."""
    async with reader(args.db) as store:
        run = await _run(store, args.run)
        _, receipt = await epoch_receipt(run, args.epoch)
    if receipt is None:
        raise NotFound(
            f"run {run.run_id!r} has no accepted receipt for epoch {args.epoch}",
            what="epoch",
            value=args.epoch,
        )
    return print_json(receipt)


async def cmd_conform(args: Any) -> int:
    """Check epochs against their receipts, bytes re-encoded unless ``--no-wire``; exit 3 when
    any epoch is damaged."""
    async with reader(args.db) as store:
        run = await _run(store, args.run)
        encoders = None if args.no_wire else builtin_encoder
        reports = await conform(run, args.epoch, encoders=encoders)
    if args.json:
        # Each report as the API answers it (GET …/conformance): with its gaps' sentences.
        shapes = await load("afp_runtime.api.shapes")
        print_json([shapes.explained_report(r) for r in reports])
    else:
        grid = table("epoch", "verdict", "clauses not passing")
        for r in reports:
            bad = [f"{c.clause}: {c.status}" for c in r.clauses if c.status != "pass"]
            add_row(grid, [r.epoch, r.verdict, "\n".join(bad) or "-"])
        show_table(grid, empty=f"run {run.run_id} made no model call")
    return EXIT_DAMAGED if any(r.verdict == "damaged" for r in reports) else EXIT_OK


async def cmd_call(args: Any) -> int:
    """The agent's n-th model call over its whole life: run, epoch and the served view."""
    async with reader(args.db) as store:
        found = await agent_call(store, await _ids.known_agent(store, args.agent), args.n)
    if found is not None:
        run_id = found.run.run_id
        if args.json:
            # The API's body (GET /v1/agents/{id}/calls/{n}): the view with its gaps' sentences.
            shapes = await load("afp_runtime.api.shapes")
            view = shapes.explained_view(found.view)
            body = {"agentCall": args.n, "runId": run_id, "epoch": found.epoch, "view": view}
            write_json(encode_served(body))
        else:
            say(f"call {args.n}: run {run_id}, epoch {found.epoch}")
            _print_view(found.view)
            say_reasons(gap.gap for gap in found.view.gaps)
        return EXIT_OK
    raise NotFound(f"agent {args.agent!r} has made no model call {args.n}", what="call")


def _side_line(label: str, side: CallSide) -> str:
    said = f"{label} call {side.agent_call}: run {side.run_id}, turn {side.turn}"
    said += f", epoch {side.epoch}"
    return said if side.outcome == "replied" else f"{said} ({side.outcome})"


def _print_call_diff(found: CallDiff) -> None:
    say(_side_line("before", found.before))
    say(_side_line("after ", found.after))
    _print_diff(found.diff)


async def cmd_diff(args: Any) -> int:
    """What changed in what the model was sent from the agent's call M (default N-1) to its
    call N, by agent-wide number: across runs and turns (``store.diff_calls``)."""
    async with reader(args.db) as store:
        agent_id = await _ids.known_agent(store, args.agent)
        m = args.n - 1 if args.m is None else args.m
        found = await call_diff(store, agent_id, args.n, m)
    if args.json:
        # Exactly the API's body (GET /v1/agents/{id}/calls/{n}/diff?against=m).
        write_json(encode_served(found))
    else:
        _print_call_diff(found)
    return EXIT_OK


async def cmd_export(args: Any) -> int:
    """Export a run's log (bodies inlined) for reading without the store."""
    async with reader(args.db) as store:
        data = await export(await _run(store, args.run), from_seq=args.from_seq)
    write_json(data)
    return EXIT_OK
