"""The conformance contracts of concurrent commits (docs/storage.md#group-commit): the commits
of many agents at once may share one database transaction, but each is still its own, whole
or not at all. Part of ``store_conformance.CONTRACTS``.
"""

from __future__ import annotations

import anyio

from afp_runtime.errors import LeaseLost, StoreError
from afp_runtime.records import Txn
from afp_runtime.store import Store
from afp_runtime.testing.store_conformance import (
    T0,
    TTL,
    Backend,
    bundle,
    cancel_after,
    fresh,
    new_agent,
    turn_txn,
)

_MANY = 12


async def commit_all(store: Store, txns: list[Txn]) -> dict[str, BaseException | None]:
    """Commit ``txns`` from concurrent tasks; what each commit raised (None: nothing), by the
    id of its run."""
    outcomes: dict[str, BaseException | None] = {}

    async def one(txn: Txn) -> None:
        assert txn.run_start is not None
        try:
            await store.commit(txn)
        except (LeaseLost, StoreError) as exc:
            outcomes[txn.run_start.run_id] = exc
        else:
            outcomes[txn.run_start.run_id] = None

    async with anyio.create_task_group() as tg:
        for txn in txns:
            tg.start_soon(one, txn)
    return outcomes


async def written_whole(store: Store, txn: Txn) -> bool:
    """Whether every part of a ``turn_txn`` is in the store (False: none of it is)."""
    assert txn.run_start is not None and txn.conversation is not None
    run_id = txn.run_start.run_id
    parts = [
        bool(await store.runs(run_id=run_id)),
        bool(await store.bundles(run_id)),
        await store.conversation_state(txn.agent_id) == txn.conversation,
        bool(await store.journal(txn.agent_id, f"m-{run_id}")),
    ]
    assert parts in ([True] * 4, [False] * 4), f"half-written txn: {parts}"
    return parts[0]


async def test_concurrent_commits_of_many_agents_are_all_written(store: Store) -> None:
    """Many agents committing at once each find their whole txn written."""
    agents = [await new_agent(store) for _ in range(_MANY)]
    txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
    assert set((await commit_all(store, txns)).values()) == {None}
    for txn in txns:
        assert await written_whole(store, txn)


async def test_a_failing_commit_among_concurrent_ones_fails_alone(store: Store) -> None:
    """A commit that breaks a constraint (a bundle already stored) raises StoreError to its own
    caller only, and writes nothing; the commits running beside it are written whole."""
    agents = [await new_agent(store) for _ in range(_MANY)]
    bad_agent = agents[_MANY // 2]
    taken = turn_txn(bad_agent, fresh("run"))
    await store.commit(taken)
    assert taken.run_start is not None and taken.conversation is not None
    # A second run whose seed collides with nothing, carrying the first run's seed again.
    duplicate = turn_txn(bad_agent, fresh("run"), pos=1)
    duplicate.bundles.append(bundle(taken.run_start.run_id, 0, "seed"))
    txns = [turn_txn(a, fresh("run")) if a != bad_agent else duplicate for a in agents]

    outcomes = await commit_all(store, txns)

    for txn in txns:
        assert txn.run_start is not None
        if txn is duplicate:
            assert isinstance(outcomes[txn.run_start.run_id], StoreError)
            assert not await store.runs(run_id=txn.run_start.run_id)
            assert await store.conversation_state(bad_agent) == taken.conversation
        else:
            assert outcomes[txn.run_start.run_id] is None
            assert await written_whole(store, txn)
    # The failed txn left nothing behind: without the colliding bundle it commits.
    duplicate.bundles.pop()
    await store.commit(duplicate)
    assert await written_whole(store, duplicate)


async def test_a_fenced_off_commit_among_concurrent_ones_fails_alone(
    store: Store, backend: Backend
) -> None:
    """On a fenced store, the commit of an agent another host claimed raises LeaseLost to its
    own caller only; the commits of the agents this host holds are written whole."""
    other = await backend.open()
    a, b = fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    eb = await other.acquire_lease(b, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and eb is not None
    agents = [await new_agent(store) for _ in range(_MANY)]
    lost = agents[1]
    assert await other.claim_agent(lost, b, eb, now_ms=T0)
    held = [agent_id for agent_id in agents if agent_id != lost]
    assert await store.claim_agents(held, a, ea, now_ms=T0) == set(held)
    txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
    store.fence_with(a, ea)
    try:
        outcomes = await commit_all(store, txns)
    finally:
        store.fence_with(None)

    for txn in txns:
        assert txn.run_start is not None
        outcome = outcomes[txn.run_start.run_id]
        if txn.agent_id == lost:
            assert isinstance(outcome, LeaseLost) and outcome.context["agent_id"] == lost
            assert not await written_whole(store, txn)
        else:
            assert outcome is None and await written_whole(store, txn)


async def test_a_cancelled_commit_among_concurrent_ones_loses_nothing(store: Store) -> None:
    """Cancelling one caller while many commit at once leaves its txn whole or absent, and every
    other txn written whole."""
    for checkpoints in range(8):
        agents = [await new_agent(store) for _ in range(_MANY // 2)]
        txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
        cancelled, others = (
            txns[len(txns) // 2],
            txns[: len(txns) // 2] + txns[len(txns) // 2 + 1 :],
        )

        async def cancel_one(scope: anyio.CancelScope, txn: Txn = cancelled) -> None:
            with scope:
                await store.commit(txn)

        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()
            for txn in txns:
                if txn is cancelled:
                    tg.start_soon(cancel_one, scope)
                else:
                    tg.start_soon(store.commit, txn)
            tg.start_soon(cancel_after, scope, checkpoints)

        for txn in others:
            assert await written_whole(store, txn)
        if not await written_whole(store, cancelled):
            await store.commit(cancelled)  # nothing of it was left behind to collide with
            assert await written_whole(store, cancelled)
