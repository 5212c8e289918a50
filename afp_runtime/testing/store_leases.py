"""The conformance contracts of host leases, agent claims and fenced commits
(docs/host.md#ownership-and-leases). Part of ``store_conformance.CONTRACTS``."""

from __future__ import annotations

from afp_runtime.errors import LeaseLost, StoreError
from afp_runtime.records import ListRef, Txn
from afp_runtime.store import AgentClaim, Store
from afp_runtime.testing.store_conformance import (
    T0,
    TTL,
    Backend,
    Capability,
    fresh,
    new_agent,
    raises,
    turn_txn,
)

# -- contracts: leases, claims and fencing (docs/host.md#ownership-and-leases) ----------------


async def _refused_whole(store: Store, backend: Backend, txn: Txn, match: str) -> LeaseLost:
    """Commit ``txn`` expecting ``LeaseLost``; check that nothing of it was written."""
    assert txn.run_start is not None
    agent_id, run_id = txn.agent_id, txn.run_start.run_id
    before = await store.conversation_state(agent_id)
    counting = Capability.COUNT_BODIES in backend.capabilities
    bodies = await backend.body_count(store) if counting else 0
    with raises(LeaseLost, match=match) as caught:
        await store.commit(txn)
    assert await store.runs(run_id=run_id) == []
    assert await store.bundles(run_id) == []
    assert await store.conversation_state(agent_id) == before
    assert await store.journal(agent_id, f"m-{run_id}") == {}
    with raises(StoreError):
        await store.resolve(agent_id, ListRef(ranges=((txn.items[0].pos, txn.items[0].pos + 1),)))
    if counting:
        assert await backend.body_count(store) == bodies
    return caught[0]


async def two_hosts(store: Store, backend: Backend) -> tuple[Store, str, int, str, int]:
    """A second store on the same storage (another host process) and two fresh hosts holding
    leases from ``T0``: ``(other, a, ea, b, eb)``, host ``a`` on ``store``, ``b`` on ``other``."""
    other = await backend.open()
    a, b = fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    eb = await other.acquire_lease(b, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and eb is not None
    return other, a, ea, b, eb


async def test_a_lease_is_taken_with_a_new_epoch_even_when_live(store: Store) -> None:
    """A new host gets epoch 1 and the same id again epoch 2 at once, though the row is live;
    only_if_expired leaves a live row alone and takes an expired one."""
    host = fresh("host")
    assert await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL) == 1
    assert await store.acquire_lease(host, now_ms=T0 + 1, ttl_ms=TTL) == 2
    assert await store.acquire_lease(host, now_ms=T0 + 2, ttl_ms=TTL, only_if_expired=True) is None
    expired = T0 + 1 + TTL
    assert await store.acquire_lease(host, now_ms=expired, ttl_ms=TTL, only_if_expired=True) == 3


async def test_a_live_claim_keeps_other_hosts_out(store: Store, backend: Backend) -> None:
    """A claimed agent stays its host's; a second host cannot claim it while the lease is live,
    and claiming many at once skips it."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id, free = await new_agent(store), await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0 + 1)

    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL - 1)
    assert await other.claim_agents([agent_id, free], b, eb, now_ms=T0 + 1) == {free}
    assert await other.agent_claim(agent_id, now_ms=T0 + TTL - 1) == AgentClaim(
        agent_id=agent_id, host_id=a, lease_epoch=ea, live=True
    )
    claims = await other.agent_claims([free, agent_id], now_ms=T0 + 1)
    assert [(c.agent_id, c.host_id) for c in claims] == sorted([(agent_id, a), (free, b)])
    assert await store.agent_claim(fresh("agent"), now_ms=T0) is None


async def test_renewal_extends_a_lease_until_its_epoch_is_raised(
    store: Store, backend: Backend
) -> None:
    """A renewed lease is live past its first expiry; once a restart raised its epoch, the old
    epoch's renewal reports the loss and its claims are stale at once."""
    other = await backend.open()
    agent_id = await new_agent(store)
    a, b = fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert (await store.renew_lease(a, ea, now_ms=T0 + 10_000, ttl_ms=TTL)).renewed

    eb = await other.acquire_lease(b, now_ms=T0 + TTL + 5_000, ttl_ms=TTL)
    assert eb is not None
    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL + 5_000)
    assert await other.acquire_lease(a, now_ms=T0 + 11_000, ttl_ms=TTL) == ea + 1
    assert not (await store.renew_lease(a, ea, now_ms=T0 + 12_000, ttl_ms=TTL)).renewed
    claim = await other.agent_claim(agent_id, now_ms=T0 + 12_000)
    assert claim is not None and (claim.lease_epoch, claim.live) == (ea, False)
    assert not await store.claim_agent(agent_id, a, ea, now_ms=T0 + 12_000)
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + 12_000)


async def test_an_expired_lease_is_taken_over(store: Store, backend: Backend) -> None:
    """After its TTL a host's lease is taken over by another host's renewal (once); the dead
    host's renewal then fails and its agents may be claimed."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id = await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)

    early = await other.renew_lease(b, eb, now_ms=T0 + TTL - 1, ttl_ms=TTL)
    assert early.renewed and a not in early.taken_over
    taken = await other.renew_lease(b, eb, now_ms=T0 + TTL, ttl_ms=TTL)
    assert taken.renewed and a in taken.taken_over
    again = await other.renew_lease(b, eb, now_ms=T0 + TTL + 10_000, ttl_ms=TTL)
    assert again.renewed and a not in again.taken_over
    assert not (await store.renew_lease(a, ea, now_ms=T0 + TTL + 1, ttl_ms=TTL)).renewed
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL + 1)


async def test_release_lets_another_host_claim_at_once(store: Store, backend: Backend) -> None:
    """A released lease drops its claims, so another host claims at once; a release under an
    epoch that moved on changes nothing."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id = await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + 1)

    assert not await store.release_lease(a, ea + 1)
    assert await store.release_lease(a, ea)
    assert await store.agent_claim(agent_id, now_ms=T0 + 1) == AgentClaim(
        agent_id=agent_id, host_id=None, lease_epoch=None, live=False
    )
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + 1)


async def test_live_hosts_are_those_with_an_unexpired_lease(store: Store) -> None:
    """live_hosts lists the hosts whose lease has not expired, sorted; a released lease is gone
    at once."""
    a, b = sorted([fresh("host"), fresh("host")])
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None
    assert await store.acquire_lease(b, now_ms=T0 + 5_000, ttl_ms=TTL) is not None
    live = await store.live_hosts(now_ms=T0 + 1)
    assert [h for h in live if h in (a, b)] == [a, b]
    later = await store.live_hosts(now_ms=T0 + TTL)
    assert a not in later and b in later
    assert await store.release_lease(a, ea + 1) is False
    eb = await store.acquire_lease(b, now_ms=T0 + 6_000, ttl_ms=TTL)
    assert eb is not None and await store.release_lease(b, eb)
    assert b not in await store.live_hosts(now_ms=T0 + 6_001)


async def test_a_host_gives_agents_up_for_another_to_claim(store: Store, backend: Backend) -> None:
    """release_agents drops only the claims this host holds under its epoch; another host may
    claim the released agents at once, while the kept ones stay out of its reach."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    kept, given = await new_agent(store), await new_agent(store)
    assert await store.claim_agents([kept, given], a, ea, now_ms=T0) == {kept, given}

    assert await other.release_agents([given], b, eb) == set()
    assert await store.release_agents([given], a, ea + 1) == set()
    assert await store.release_agents([given, fresh("agent")], a, ea) == {given}
    assert await other.claim_agents([kept, given], b, eb, now_ms=T0 + 1) == {given}
    claim = await other.agent_claim(kept, now_ms=T0 + 1)
    assert claim is not None and (claim.host_id, claim.live) == (a, True)


async def test_a_fenced_commit_writes_while_its_claim_holds(store: Store) -> None:
    """With its claim in place a fenced store commits as an unfenced one does."""
    agent_id, host = await new_agent(store), fresh("host")
    epoch = await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL)
    assert epoch is not None and await store.claim_agent(agent_id, host, epoch, now_ms=T0)
    store.fence_with(host, epoch)
    try:
        assert store.fence == (host, epoch)
        run_id = fresh("run")
        await store.commit(turn_txn(agent_id, run_id))
        assert [r.run_id for r in await store.runs(agent_id)] == [run_id]
    finally:
        store.fence_with(None)
    assert store.fence is None


async def test_a_stale_epochs_commit_is_refused_whole(store: Store, backend: Backend) -> None:
    """Once a restart raised the host's epoch, a commit fenced by the old epoch raises LeaseLost
    and nothing of it is written (so the same txn commits cleanly later)."""
    other = await backend.open()
    agent_id, host = await new_agent(store), fresh("host")
    old = await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL)
    assert old is not None and await store.claim_agent(agent_id, host, old, now_ms=T0)
    store.fence_with(host, old)
    assert await other.acquire_lease(host, now_ms=T0 + 1, ttl_ms=TTL) == old + 1
    txn = turn_txn(agent_id, fresh("run"))

    lost = await _refused_whole(store, backend, txn, agent_id)

    assert (lost.context["agent_id"], lost.context["host_id"]) == (agent_id, host)
    store.fence_with(None)
    await store.commit(txn)
    assert len(await store.runs(agent_id)) == 1


async def test_a_commit_for_an_agent_claimed_elsewhere_is_refused_whole(
    store: Store, backend: Backend
) -> None:
    """Once another host claimed the agent (after this lease expired), this host's fenced
    commit raises LeaseLost naming agent, host and epoch, and writes nothing."""
    other = await backend.open()
    agent_id, a, b = await new_agent(store), fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await store.claim_agent(agent_id, a, ea, now_ms=T0)
    store.fence_with(a, ea)
    try:
        eb = await other.acquire_lease(b, now_ms=T0 + TTL, ttl_ms=TTL)
        assert eb is not None and await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL)

        lost = await _refused_whole(store, backend, turn_txn(agent_id, fresh("run")), agent_id)
    finally:
        store.fence_with(None)
    assert lost.context == {"agent_id": agent_id, "host_id": a, "lease_epoch": ea}


async def test_an_unfenced_store_and_the_inbox_are_not_fenced(
    store: Store, backend: Backend
) -> None:
    """Without a fence commits go through whoever claims the agent; a fenced store still
    accepts inbox messages for an agent it does not hold, but not its commits."""
    other = await backend.open()
    agent_id, a, b = await new_agent(store), fresh("host"), fresh("host")
    eb = await other.acquire_lease(b, now_ms=T0, ttl_ms=TTL)
    assert eb is not None and await other.claim_agent(agent_id, b, eb, now_ms=T0)
    assert store.fence is None
    first, refused, last = fresh("run"), fresh("run"), fresh("run")
    await store.commit(turn_txn(agent_id, first))
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None
    store.fence_with(a, ea)
    try:
        ack = await store.post(agent_id, "hi", message_id=fresh("msg"), now_ms=T0)
        with raises(LeaseLost):
            await store.commit(turn_txn(agent_id, refused, pos=1))
    finally:
        store.fence_with(None)
    await store.commit(turn_txn(agent_id, last, pos=1))
    assert [r.run_id for r in await store.runs(agent_id)] == [first, last]
    assert await store.inbox_message(ack.message_id) is not None
