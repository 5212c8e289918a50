"""The SQL of host leases and agent claims (docs/host.md#ownership-and-leases,
docs/architecture.md#decision-12-one-lease-row-per-host-process,
docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once).

A host process holds one ``host_leases`` row, ``(host_id, lease_epoch, expires_at_ms)``, renewed
once per period in one small transaction however many agents it runs. Before running an agent
it claims it by writing ``(claim_host, claim_epoch)`` on the agent's row. A claim is *live*
while its host's row still carries the claim's epoch and has not expired; any other claim may be
replaced. Every commit of a fenced store checks the agent's claim and the lease row's epoch in
the same transaction (``writes.check_fence``), so a host that lost either writes nothing more.

Expiry compares ``expires_at_ms`` with the *reader's* clock: hosts sharing a file are assumed to
have clocks in step to well within a TTL. Each write of ``Leases`` is one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from afp_runtime.store.mixins import Fencing
from afp_runtime.store.sqlite._core import SqliteCore, chunks
from afp_runtime.store.values import AgentClaim, LeaseRenewal

_CLAIMABLE = (
    "(claim_host IS NULL OR claim_host = :host OR NOT EXISTS ("
    " SELECT 1 FROM host_leases l WHERE l.host_id = agents.claim_host"
    " AND l.lease_epoch = agents.claim_epoch AND l.expires_at_ms > :now))"
)
# Our own row must still carry the epoch we claim under: a host whose lease was taken over
# cannot hand out claims under its dead epoch.
_OURS = "EXISTS (SELECT 1 FROM host_leases WHERE host_id = :host AND lease_epoch = :epoch)"


class Leases(Fencing, SqliteCore):
    """Host leases, agent claims and the fence every commit is checked by."""

    async def acquire_lease(
        self, host_id: str, *, now_ms: int, ttl_ms: int, only_if_expired: bool = False
    ) -> int | None:
        """Take ``host_id``'s row with a new epoch and return it: 1 for a new host, the row's
        epoch + 1 otherwise.

        A host starting with the id of an existing row takes it over at once, even when the row
        is live (docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once).
        ``only_if_expired`` leaves a live row alone (None): a host that lost its lease does not
        wrest it back from a restarted process that now holds its id.
        """
        sql = (
            "INSERT INTO host_leases VALUES (:host, 1, :expires, :now) ON CONFLICT (host_id)"
            " DO UPDATE SET lease_epoch = lease_epoch + 1, expires_at_ms = excluded.expires_at_ms,"
            " renewed_at_ms = excluded.renewed_at_ms"
        )
        if only_if_expired:
            sql += " WHERE host_leases.expires_at_ms <= :now"
        async with self._transaction() as db:
            found = list(
                await db.execute_fetchall(
                    sql + " RETURNING lease_epoch",
                    {"host": host_id, "expires": now_ms + ttl_ms, "now": now_ms},
                )
            )
        return int(found[0][0]) if found else None

    async def renew_lease(
        self, host_id: str, epoch: int, *, now_ms: int, ttl_ms: int, take_over: bool = True
    ) -> LeaseRenewal:
        """One period's transaction: extend the lease (not renewed when its epoch was raised by
        someone else: lost) and, when it was still ours and ``take_over``, raise by 1 the epoch
        of every other host's expired lease that still backs a claim.

        Every claim made under such an old epoch is stale from then on, and the dead host's
        renewal (should it wake) finds its lease lost. A lease no claim rests on is left as it
        is, so the same dead row is not raised again every period.
        """
        async with self._transaction() as db:
            cursor = await db.execute(
                "UPDATE host_leases SET expires_at_ms = ?, renewed_at_ms = ?"
                " WHERE host_id = ? AND lease_epoch = ?",
                (now_ms + ttl_ms, now_ms, host_id, epoch),
            )
            if cursor.rowcount != 1:
                return LeaseRenewal(renewed=False)
            if not take_over:
                return LeaseRenewal(renewed=True)
            rows = await db.execute_fetchall(
                "UPDATE host_leases SET lease_epoch = lease_epoch + 1"
                " WHERE host_id != :host AND expires_at_ms <= :now AND EXISTS ("
                " SELECT 1 FROM agents a WHERE a.claim_host = host_leases.host_id"
                " AND a.claim_epoch = host_leases.lease_epoch) RETURNING host_id",
                {"host": host_id, "now": now_ms},
            )
            taken = tuple(sorted(str(row[0]) for row in rows))
            return LeaseRenewal(renewed=True, taken_over=taken)

    async def claim_agents(
        self, agent_ids: Sequence[str], host_id: str, epoch: int, *, now_ms: int
    ) -> set[str]:
        """Claim, in one transaction, the agents of ``agent_ids`` that are unclaimed, already
        ours, or claimed under a lease that is expired or whose epoch moved on; returns the ids
        now claimed by ``(host_id, epoch)`` (skipping agents under another host's live lease)."""
        if not agent_ids:
            return set()
        claimed: set[str] = set()
        async with self._transaction() as db:
            for chunk in chunks(list(agent_ids)):
                names = {f"a{i}": agent_id for i, agent_id in enumerate(chunk)}
                rows = await db.execute_fetchall(
                    "UPDATE agents SET claim_host = :host, claim_epoch = :epoch"
                    f" WHERE agent_id IN ({', '.join(':' + name for name in names)})"
                    f" AND {_OURS} AND {_CLAIMABLE} RETURNING agent_id",
                    {"host": host_id, "epoch": epoch, "now": now_ms, **names},
                )
                claimed.update(str(row[0]) for row in rows)
        return claimed

    async def claim_agent(self, agent_id: str, host_id: str, epoch: int, *, now_ms: int) -> bool:
        """Claim one agent; False when another host's live lease holds it."""
        return agent_id in await self.claim_agents([agent_id], host_id, epoch, now_ms=now_ms)

    async def release_lease(self, host_id: str, epoch: int) -> bool:
        """Expire the lease and drop its claims (clean shutdown), so other hosts may claim at
        once; nothing happens, and False is returned, when the epoch moved on (the lease was
        lost already)."""
        async with self._transaction() as db:
            cursor = await db.execute(
                "UPDATE host_leases SET expires_at_ms = 0 WHERE host_id = ? AND lease_epoch = ?",
                (host_id, epoch),
            )
            if cursor.rowcount != 1:
                return False
            await db.execute(
                "UPDATE agents SET claim_host = NULL, claim_epoch = NULL"
                " WHERE claim_host = ? AND claim_epoch = ?",
                (host_id, epoch),
            )
            return True

    async def agent_claims(
        self, agent_ids: Sequence[str] | None = None, *, now_ms: int
    ) -> list[AgentClaim]:
        """The claim state of the named agents (every agent when None), by agent id."""
        sql = (
            "SELECT a.agent_id, a.claim_host, a.claim_epoch,"
            " l.lease_epoch = a.claim_epoch AND l.expires_at_ms > ?"
            " FROM agents a LEFT JOIN host_leases l ON l.host_id = a.claim_host"
        )
        if agent_ids is None:
            found = await self._fetch(sql, (now_ms,))
        else:
            found = []
            for chunk in chunks(list(agent_ids)):
                marks = ", ".join("?" * len(chunk))
                found += await self._fetch(f"{sql} WHERE a.agent_id IN ({marks})", (now_ms, *chunk))
        return [
            AgentClaim(agent_id=r[0], host_id=r[1], lease_epoch=r[2], live=bool(r[3]))
            for r in sorted(found, key=lambda r: r[0])
        ]

    async def agent_claim(self, agent_id: str, *, now_ms: int) -> AgentClaim | None:
        """The claim state of one agent, or None when the store does not know it."""
        found = await self.agent_claims([agent_id], now_ms=now_ms)
        return found[0] if found else None

    async def live_hosts(self, *, now_ms: int) -> list[str]:
        """The ids of the hosts whose lease is unexpired, sorted."""
        rows = await self._fetch(
            "SELECT host_id FROM host_leases WHERE expires_at_ms > ? ORDER BY host_id", (now_ms,)
        )
        return [str(row[0]) for row in rows]

    async def release_agents(self, agent_ids: Sequence[str], host_id: str, epoch: int) -> set[str]:
        """Drop, in one transaction, the claims ``(host_id, epoch)`` holds on ``agent_ids``; the
        ids released."""
        if not agent_ids:
            return set()
        released: set[str] = set()
        async with self._transaction() as db:
            for chunk in chunks(list(agent_ids)):
                rows = await db.execute_fetchall(
                    "UPDATE agents SET claim_host = NULL, claim_epoch = NULL"
                    f" WHERE agent_id IN ({', '.join('?' * len(chunk))})"
                    " AND claim_host = ? AND claim_epoch = ? RETURNING agent_id",
                    [*chunk, host_id, epoch],
                )
                released.update(str(row[0]) for row in rows)
        return released
