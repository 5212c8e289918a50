"""Copying agents from one store to another through the port (``afp copy``,
docs/storage.md#moving-between-stores): any backend to any backend, whole agents in one
destination transaction."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

from afp_runtime.errors import CopyRefused, NotFound
from afp_runtime.store.base import Store
from afp_runtime.store.dump import AgentDump, CopyCounts


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids[:10]) + (f" and {len(ids) - 10} more" if ids[10:] else "")


async def agents_to_copy(
    source: Store, agent_ids: Sequence[str] | None = None, *, now_ms: int
) -> list[str]:
    """The agents a copy from ``source`` takes: ``agent_ids`` (default: every agent), in the
    store's order, none of them held by a live host.

    Raises:
        NotFound: ``source`` holds no agent of one of the ids (names them).
        CopyRefused: a live host holds one of them in ``source`` (names them and the host).
    """
    known = [a.agent_id for a in await source.agents()]
    chosen = known
    if agent_ids is not None:
        missing = sorted(set(agent_ids) - set(known))
        if missing:
            raise NotFound(
                f"{source.location} holds no agent {_listed(missing)}",
                what="agent",
                value=missing[0],
            )
        chosen = [a for a in known if a in set(agent_ids)]
    held = [c for c in await source.agent_claims(chosen, now_ms=now_ms) if c.live]
    if held:
        raise CopyRefused(
            f"a live host holds {_listed([c.agent_id for c in held])} in {source.location} "
            f"(host {held[0].host_id!r}); stop it first, so the copy is of a settled agent"
        )
    return chosen


async def copy_agents(
    source: Store,
    destination: Store,
    agent_ids: Sequence[str] | None = None,
    *,
    now_ms: int,
    on_agent: Callable[[AgentDump], None] | None = None,
) -> CopyCounts:
    """Copy agents with their whole history (runs, commit logs, bodies, inbox, questions,
    ledger, folds, journal) from ``source`` into ``destination``, in one destination
    transaction: every agent, or nothing. ``on_agent`` hears of each dump once it is written
    into that transaction. Leases, claims and the clean-shutdown marker stay behind; the recall
    index of the copies is rebuilt from their commit logs once they are written.

    Args:
        agent_ids: the agents to copy (default: every agent of ``source``; ``agents_to_copy``).
        now_ms: the clock that says whether a host's lease in ``source`` is live.

    Raises:
        NotFound: ``source`` holds no agent of that id.
        CopyRefused: ``destination`` holds one of the agents already, a live host holds one
            in ``source``, or both are the same store (each names what it found).
        StoreDamaged: a row of ``source`` does not read back (``destination`` is unchanged).
    """
    if source.location == destination.location:
        raise CopyRefused(f"--from and --to name the same store ({source.location})")
    chosen = await agents_to_copy(source, agent_ids, now_ms=now_ms)
    present = sorted(set(chosen) & {a.agent_id for a in await destination.agents()})
    if present:
        raise CopyRefused(
            f"{destination.location} holds {_listed(present)} already; nothing was copied "
            "(choose other agents with --agents, or another destination)"
        )

    async def dumps() -> AsyncGenerator[AgentDump, None]:
        for agent_id in chosen:
            dump = await source.export_agent(agent_id)
            yield dump
            if on_agent is not None:
                on_agent(dump)

    async with aclosing(dumps()) as stream:
        counts = await destination.import_agents(stream)
    # A dump carries no recall index: the copies' entries are rebuilt from their commit logs
    # (docs/recall.md#rebuilding), each in a transaction of its own after the copy.
    for agent_id in chosen:
        await destination.reindex_recall(agent_id)
    return counts
