"""Host leases and agent claims on Postgres (docs/storage.md#leases-and-fencing): the same rows
and rules as SQLite's, each operation one transaction. A claim and a take-over are single
``UPDATE`` statements whose conditions Postgres re-checks on rows changed concurrently; the
fence is checked inside every commit by ``writes.write_txn``."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from afp_runtime.store.mixins import Fencing
from afp_runtime.store.postgres._core import PostgresCore
from afp_runtime.store.values import AgentClaim, LeaseRenewal

_ACQUIRE = (
    "INSERT INTO host_leases VALUES ($1, 1, $2, $3) ON CONFLICT (host_id)"
    " DO UPDATE SET lease_epoch = host_leases.lease_epoch + 1,"
    " expires_at_ms = excluded.expires_at_ms, renewed_at_ms = excluded.renewed_at_ms"
)
# Claimable: unclaimed, already ours, or claimed under a lease that expired or moved on; and our
# own row must still carry the epoch we claim under.
_CLAIM = (
    "UPDATE agents SET claim_host = $1, claim_epoch = $2"
    " WHERE agent_id = ANY($3::text[])"
    " AND EXISTS (SELECT 1 FROM host_leases WHERE host_id = $1 AND lease_epoch = $2)"
    " AND (claim_host IS NULL OR claim_host = $1 OR NOT EXISTS ("
    " SELECT 1 FROM host_leases l WHERE l.host_id = agents.claim_host"
    " AND l.lease_epoch = agents.claim_epoch AND l.expires_at_ms > $4))"
    " RETURNING agent_id"
)
_TAKE_OVER = (
    "UPDATE host_leases SET lease_epoch = lease_epoch + 1"
    " WHERE host_id <> $1 AND expires_at_ms <= $2 AND EXISTS ("
    " SELECT 1 FROM agents a WHERE a.claim_host = host_leases.host_id"
    " AND a.claim_epoch = host_leases.lease_epoch) RETURNING host_id"
)


class Leases(Fencing, PostgresCore):
    """Host leases, agent claims and the fence every commit is checked by."""

    async def acquire_lease(
        self, host_id: str, *, now_ms: int, ttl_ms: int, only_if_expired: bool = False
    ) -> int | None:
        """Take ``host_id``'s lease with a new epoch (at once, even live); with
        ``only_if_expired`` a live row is left alone (None)."""
        sql = _ACQUIRE + (" WHERE host_leases.expires_at_ms <= $3" if only_if_expired else "")

        async def work(conn: asyncpg.Connection) -> int | None:
            epoch = await conn.fetchval(
                sql + " RETURNING lease_epoch", host_id, now_ms + ttl_ms, now_ms
            )
            return None if epoch is None else int(epoch)

        return await self._write(work)

    async def renew_lease(
        self, host_id: str, epoch: int, *, now_ms: int, ttl_ms: int, take_over: bool = True
    ) -> LeaseRenewal:
        """One period's transaction: extend the lease and (when it was still ours and
        ``take_over``) take over the expired leases of other hosts that claims rest on."""

        async def work(conn: asyncpg.Connection) -> LeaseRenewal:
            status = await conn.execute(
                "UPDATE host_leases SET expires_at_ms = $1, renewed_at_ms = $2"
                " WHERE host_id = $3 AND lease_epoch = $4",
                now_ms + ttl_ms,
                now_ms,
                host_id,
                epoch,
            )
            if status != "UPDATE 1":
                return LeaseRenewal(renewed=False)
            taken = await conn.fetch(_TAKE_OVER, host_id, now_ms) if take_over else []
            return LeaseRenewal(renewed=True, taken_over=tuple(sorted(r[0] for r in taken)))

        return await self._write(work)

    async def claim_agents(
        self, agent_ids: Sequence[str], host_id: str, epoch: int, *, now_ms: int
    ) -> set[str]:
        """Claim what may be claimed of ``agent_ids`` in one statement; the ids now claimed
        by ``(host_id, epoch)`` (agents under another host's live lease are skipped)."""
        if not agent_ids:
            return set()

        async def work(conn: asyncpg.Connection) -> set[str]:
            found = await conn.fetch(_CLAIM, host_id, epoch, list(agent_ids), now_ms)
            return {str(r[0]) for r in found}

        return await self._write(work)

    async def claim_agent(self, agent_id: str, host_id: str, epoch: int, *, now_ms: int) -> bool:
        """Claim one agent; False when another host's live lease holds it."""
        return agent_id in await self.claim_agents([agent_id], host_id, epoch, now_ms=now_ms)

    async def release_lease(self, host_id: str, epoch: int) -> bool:
        """Expire the lease and drop its claims (clean shutdown); False when already lost."""

        async def work(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "UPDATE host_leases SET expires_at_ms = 0 WHERE host_id = $1 AND lease_epoch = $2",
                host_id,
                epoch,
            )
            if status != "UPDATE 1":
                return False
            await conn.execute(
                "UPDATE agents SET claim_host = NULL, claim_epoch = NULL"
                " WHERE claim_host = $1 AND claim_epoch = $2",
                host_id,
                epoch,
            )
            return True

        return await self._write(work)

    async def agent_claims(
        self, agent_ids: Sequence[str] | None = None, *, now_ms: int
    ) -> list[AgentClaim]:
        """The claim state of the named agents (every agent when None), by agent id."""
        found = await self._fetch(
            "SELECT a.agent_id, a.claim_host, a.claim_epoch,"
            " COALESCE(l.lease_epoch = a.claim_epoch AND l.expires_at_ms > $1, false)"
            " FROM agents a LEFT JOIN host_leases l ON l.host_id = a.claim_host"
            ' WHERE $2::text[] IS NULL OR a.agent_id = ANY($2) ORDER BY a.agent_id COLLATE "C"',
            now_ms,
            None if agent_ids is None else list(agent_ids),
        )
        return [
            AgentClaim(agent_id=r[0], host_id=r[1], lease_epoch=r[2], live=bool(r[3]))
            for r in found
        ]

    async def agent_claim(self, agent_id: str, *, now_ms: int) -> AgentClaim | None:
        """The claim state of one agent, or None when the store does not know it."""
        found = await self.agent_claims([agent_id], now_ms=now_ms)
        return found[0] if found else None

    async def live_hosts(self, *, now_ms: int) -> list[str]:
        """The ids of the hosts whose lease is unexpired, sorted."""
        found = await self._fetch(
            'SELECT host_id FROM host_leases WHERE expires_at_ms > $1 ORDER BY host_id COLLATE "C"',
            now_ms,
        )
        return [str(r[0]) for r in found]

    async def release_agents(self, agent_ids: Sequence[str], host_id: str, epoch: int) -> set[str]:
        """Drop this host's claims on ``agent_ids`` in one statement; the ids released."""
        if not agent_ids:
            return set()

        async def work(conn: asyncpg.Connection) -> set[str]:
            found = await conn.fetch(
                "UPDATE agents SET claim_host = NULL, claim_epoch = NULL"
                " WHERE agent_id = ANY($1::text[]) AND claim_host = $2 AND claim_epoch = $3"
                " RETURNING agent_id",
                list(agent_ids),
                host_id,
                epoch,
            )
            return {str(r[0]) for r in found}

        return await self._write(work)
