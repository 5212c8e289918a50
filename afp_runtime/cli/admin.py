"""Looking after a database: ``afp doctor``, ``afp migrate``, ``afp checkpoint``, ``afp import``
(docs/storage.md#checking-a-database, docs/storage.md#store-locations,
docs/storage.md#portable-checkpoints)."""

from __future__ import annotations

import time
from typing import Any

import anyio

from afp_runtime.cli import _ids
from afp_runtime.cli._exits import EXIT_OK, EXIT_UNAVAILABLE
from afp_runtime.cli._lazy import load
from afp_runtime.cli._show import print_json, say
from afp_runtime.cli.reads import opened, reader
from afp_runtime.errors import AfpError, NotFound
from afp_runtime.records import ledger_row_to_wire


async def cmd_doctor(args: Any) -> int:
    """Check the database: SQLite integrity, every stored body against its fingerprint, every
    agent's conversation and every run's commit log as the readers read them, and every
    ledger row strictly (nothing is changed); exit 4 when anything is wrong. ``--reindex``
    first fills the recall index from the commit log (docs/recall.md#rebuilding)."""
    agents = await load("afp_runtime.agents")
    added = None
    if args.reindex:
        async with opened(args.db, create=False) as writer:
            added = await writer.reindex_recall()
    async with reader(args.db) as store:
        integrity = await store.integrity_check()
        damaged = await store.body_check()
        problems: list[str] = []
        unreadable: list[str] = []
        try:
            rows = await store.agents()
        except AfpError as exc:
            rows, unreadable = [], [f"agents: {exc}"]
        for agent in rows:
            try:
                ledger = await store.ledger(agent.agent_id)
                agents.validate_ledger([ledger_row_to_wire(row) for row in ledger])
            except AfpError as exc:
                problems.append(f"{agent.agent_id}: {exc}")
            unreadable.extend(await _unreadable(store, agent.agent_id))
    report: dict[str, Any] = {
        "integrity": integrity,
        "damagedBodies": damaged,
        "unreadable": unreadable,
        "ledgerProblems": problems,
    }
    healthy = integrity == ["ok"] and not damaged and not unreadable and not problems
    if added is not None:
        report["recallEntriesAdded"] = added
    if args.json:
        print_json({**report, "healthy": healthy})
    else:
        if added is not None:
            say(f"recall index: {added} entries added from the commit log")
        say(f"integrity_check: {', '.join(integrity)}")
        say(f"bodies: {damaged if damaged else 'all match their fingerprints'}")
        say(f"conversations and commit logs: {unreadable if unreadable else 'all read'}")
        say(f"ledger: {problems if problems else 'every row is valid'}")
    return EXIT_OK if healthy else EXIT_UNAVAILABLE


async def _unreadable(store: Any, agent_id: str) -> list[str]:
    """What of one agent does not read back: its conversation (every item and body its
    history names) and each run's commit log (every bundle decoded)."""
    found: list[str] = []
    try:
        await store.load_conversation(agent_id)
    except AfpError as exc:
        found.append(f"{agent_id}: {exc}")
    try:
        runs = await store.runs(agent_id)
    except AfpError as exc:
        return [*found, f"{agent_id}: {exc}"]
    for run in runs:
        try:
            await store.bundles(run.run_id)
        except AfpError as exc:
            found.append(f"{run.run_id}: {exc}")
    return found


async def cmd_checkpoint(args: Any) -> int:
    """Print an agent's conversation checkpoint in portable form (JSON)."""
    agents = await load("afp_runtime.agents")
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        checkpoint = await agents.export_checkpoint(store, args.agent)
    return print_json(checkpoint)


async def cmd_import(args: Any) -> int:
    """Start an agent's conversation from a portable checkpoint (--replace archives the old)."""
    agents = await load("afp_runtime.agents")
    try:
        data = await anyio.Path(args.file).read_bytes()
    except OSError as exc:
        raise NotFound(f"cannot read {args.file}: {exc}", what="file", value=args.file) from exc
    checkpoint = agents.parse_checkpoint(data, agent_id=args.agent)
    now_ms = time.time_ns() // 1_000_000
    async with opened(args.db, now_ms=now_ms) as store:
        state = await agents.import_checkpoint(
            store, args.agent, checkpoint, now_ms=now_ms, replace=args.replace
        )
    say(
        f"imported {len(state.history)} messages and {state.folded_count} folded spans "
        f"into {args.agent!r}"
    )
    return EXIT_OK


async def cmd_migrate(args: Any) -> int:
    """Open the store as a writer, which applies every migration it lacks (opening does that
    anyway; this says so), and print the schema version it is at."""
    async with opened(args.db, now_ms=int(time.time() * 1000)) as store:
        report = {"store": store.location, "schemaVersion": store.schema_version}
    if args.json:
        print_json(report)
    else:
        say(f"{report['store']}: schema version {report['schemaVersion']}")
    return EXIT_OK
