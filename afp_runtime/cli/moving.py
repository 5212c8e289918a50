"""``afp copy``: agents with their whole history from one store into another, any backend to
any backend, in one transaction of the destination (docs/storage.md#moving-between-stores)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import err, print_json, say
from afp_runtime.cli.reads import opened
from afp_runtime.store import AgentDump, CopyCounts, agents_to_copy, copy_agents


def _agent_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    agent_ids = list(dict.fromkeys(a.strip() for a in text.split(",") if a.strip()))
    if not agent_ids:
        raise UsageError("--agents names no agent (give ids separated by commas)")
    return agent_ids


@contextmanager
def _progress(total: int) -> Iterator[Callable[[AgentDump], None]]:
    """A bar on stderr, one step per agent written, when stderr is a terminal."""
    columns = (
        TextColumn("{task.description}", markup=False),  # shown as data (cli/_show.py)
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("copying agents", total=total)

        def step(dump: AgentDump) -> None:
            runs = f"{len(dump.runs)} runs, {len(dump.bundles)} bundles"
            bar.update(task, advance=1, description=f"copied {dump.agent_id} ({runs})")

        yield step


def _summary(counts: CopyCounts) -> str:
    return (
        f"{counts.runs} runs, {counts.bundles} bundles, {counts.bodies} message bodies "
        f"({counts.new_bodies} new to the destination), {counts.items} items, "
        f"{counts.inbox} inbox messages, {counts.questions} questions, "
        f"{counts.ledger_rows} ledger rows, "
        f"{counts.folded_spans} folded spans"
    )


async def cmd_copy(args: Any) -> int:
    """Copy agents (every one of ``--from``, or ``--agents``) into ``--to``, whole: all of them
    in one transaction, or nothing; refused when ``--to`` holds one already."""
    agent_ids = _agent_list(args.agents)
    now_ms = time.time_ns() // 1_000_000
    # Both are writers: opening migrates an older schema and refuses a newer one.
    async with opened(args.source, create=False, now_ms=now_ms) as source:
        # Refused or unknown agents are said before the destination is created.
        chosen = await agents_to_copy(source, agent_ids, now_ms=now_ms)
        async with opened(args.destination, now_ms=now_ms) as destination:
            with _progress(len(chosen)) as step:
                counts = await copy_agents(
                    source, destination, chosen, now_ms=now_ms, on_agent=step
                )
            shown = {"from": source.location, "to": destination.location}
    if args.json:
        print_json({**shown, **msgspec.to_builtins(counts)})
    elif counts.agents == 0:
        say(f"{shown['from']} holds no agents: nothing was copied")
    else:
        agents = f"{counts.agents} agent{'' if counts.agents == 1 else 's'}"
        say(f"copied {agents} from {shown['from']} to {shown['to']}")
        say(_summary(counts))
        say(f"check the copy: afp doctor --db {shown['to']}")
    return EXIT_OK
