"""Group commit on Postgres, one round trip per group (docs/storage.md#one-round-trip-per-commit).

Commits queue their ``afp_part`` (``parts.Member``); whoever gets the group lock with its own
part still queued sends everything queued (up to ``_GROUP``) as one call of ``afp_commit``, so
what coalesces is what arrived while the previous group was being written, and a lone commit
waits for nothing. One group is written at a time per store, so one store's groups never wait
on each other's row locks.
"""

from __future__ import annotations

import anyio

from afp_runtime.errors import StoreError
from afp_runtime.store.postgres import parts
from afp_runtime.store.postgres._core import PostgresCore

# Txns per group: each part is a subtransaction, and past 64 of them in one transaction
# Postgres stops caching their ids (every other session's snapshots then get slower).
_GROUP = 48
# Times a part rolled back by a deadlock or a serialization failure is written again.
_TRIES = 3


class Grouping(PostgresCore):
    """``_commit_grouped`` over the pool of ``_core``."""

    async def _commit_grouped(self, member: parts.Member) -> None:
        """Commit ``member``'s txn with whatever other commits queued meanwhile, in one call of
        ``afp_commit``; its own failure is its own. Shielded from enqueueing on: once queued it
        commits or rolls back, never half-way.

        Raises:
            LeaseLost: the fence no longer holds; nothing of it was written.
            StoreError: the store is read-only, the agent or a run is unknown, or a statement of
                its part failed (nothing of it was written).
            StoreUnavailable: the connection was lost (during the call, the outcome is unknown).
        """
        if self._read_only:
            raise StoreError("this store was opened read-only")
        with anyio.CancelScope(shield=True):
            self._queue.append(member)
            while not member.done:  # a part chosen as a deadlock's victim is queued again
                async with self._group_lock:
                    if not member.done:
                        await self._write_group()
        if member.error is not None:
            raise member.error

    async def _write_group(self) -> None:
        members = self._take()
        if not members:
            return
        full = any(member.full for member in members)
        values = [member.part for member in members]
        try:
            outcomes: list[str | None] = await self._statement(
                lambda conn: conn.fetchval(parts.CALL, values, full)
            )
            if len(outcomes) != len(members):
                raise StoreError(
                    f"afp_commit answered {len(outcomes)} outcomes for {len(members)} commits"
                )
        except BaseException as exc:
            for member in members:
                member.error = exc
                member.done = True
            if not isinstance(exc, Exception):
                raise
            return
        again: list[parts.Member] = []
        for member, outcome in zip(members, outcomes, strict=True):
            if parts.retryable(outcome) and member.tries < _TRIES:
                # Rolled back alone as the victim of a deadlock (with another host's claims):
                # written again in the next group, as Postgres advises.
                member.tries += 1
                again.append(member)
                continue
            member.error = parts.part_error(outcome, member)
            member.done = True
        self._queue[:0] = again
        self.transactions += 1
        self.full_transactions += int(full)

    def _take(self) -> list[parts.Member]:
        """The next group: up to ``_GROUP`` queued parts, at most one per agent (a later part of
        an agent waits for the next group, so a part rolled back as a deadlock's victim and
        written again never lands after its own agent's next commit), with the agents' rows
        locked in one order, by id, so two groups on one database lock them alike."""
        taken: dict[str, parts.Member] = {}
        left: list[parts.Member] = []
        for member in self._queue:
            if len(taken) < _GROUP and member.agent_id not in taken:
                taken[member.agent_id] = member
            else:
                left.append(member)
        self._queue[:] = left
        return sorted(taken.values(), key=lambda member: member.agent_id)
