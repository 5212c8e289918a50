"""The host's lease and its claims on agents (docs/host.md#ownership-and-leases,
docs/host.md#start-up step 2; docs/architecture.md#decision-7-every-deadline-goes-through-the-clock,
12 and 16).

Several host processes may share one store. Each holds one lease row, renewed every
``lease_ttl_s / 3`` on the injected clock in one small transaction however many agents it runs,
and claims an agent before running it; the store fences every commit by the claim
(``LeaseStore.fence_with``), so a host that lost an agent writes nothing more for it.

Readings settled here:

* The default ``host_id`` is the machine's host name. It is stable across restarts of the same
  service, so a crashed host that restarts takes its lease over at once
  (docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once); it names no
  file, since lease rows live in the store they lease (docs/host.md#choosing-a-hostid). Two hosts
  started on one machine and one store must therefore be given distinct ids.
* Each period the keeper renews (and, in the same transaction, takes over other hosts' expired
  leases), reads the claims of its agents once, forgets the claims another host took (their
  passes are cancelled), and claims what became claimable, waking those agents' workers.
* A pass starts only on an agent this host holds (a worker tries to claim it first). A commit
  that raises ``LeaseLost`` ends the pass; the agent is ``not-leased`` until a later claim.
* A renewal that finds the epoch raised cancels every pass in progress and forgets every claim.
  From then on the keeper takes its row back (new epoch) only once the row has expired: a row
  kept live means another process with this ``host_id`` holds it now, and wresting it back each
  period would make the two fence each other out forever.
* A clean exit releases the lease (expired at once, claims dropped) after the workers stopped,
  and unfences the store.
"""

from __future__ import annotations

import math
import re
import socket
from collections.abc import Awaitable, Callable, Collection
from typing import Literal

import anyio
import msgspec
from anyio.abc import TaskStatus

from afp_runtime._logging import get_logger
from afp_runtime.errors import AgentDefinitionError, LeaseLost, StoreUnavailable
from afp_runtime.host.events import EventBus
from afp_runtime.host.store_state import StoreState
from afp_runtime.loop import Event
from afp_runtime.records import Clock, LeaseLostEvent
from afp_runtime.store import LeaseStore

log = get_logger()

_HOST_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


def default_host_id() -> str:
    """The machine's host name (letters, digits, ``.`` and ``-``; ``host`` when it has none):
    stable across restarts of one service, distinct for another machine."""
    return _UNSAFE.sub("-", socket.gethostname()).strip("-")[:64] or "host"


def _checked_host_id(host_id: object) -> str:
    if not isinstance(host_id, str) or not _HOST_ID.match(host_id):
        raise AgentDefinitionError(
            f"hostId must be 1 to 128 characters of letters, digits and . _ : @ -, not {host_id!r}",
            field="hostId",
        )
    return host_id


def _checked_ttl(ttl_s: object) -> float:
    if (
        isinstance(ttl_s, bool)
        or not isinstance(ttl_s, int | float)
        or not (math.isfinite(ttl_s) and ttl_s > 0)
    ):
        raise AgentDefinitionError(
            f"leaseTtlS must be a finite number > 0, not {ttl_s!r}", field="leaseTtlS"
        )
    return float(ttl_s)


class HostLease:
    """This host's lease row, its claims, and the per-period keeper.

    Args:
        store: the host's writer store; fenced once the lease is acquired.
        clock: the injected clock (lease times, the renewal period).
        host_id: the lease row's id; default ``default_host_id()``.
        ttl_s: how long a lease lives without renewal (renewed every third of it).
        agent_ids: the hosted agents, claimed in this order.
        events: where ``lease.lost`` is published.
        wake: asks an agent's worker to look for work now (after a claim).
        store_state: told of each period's outcome (a period always writes its renewal).
        on_period: called at the end of every period, however it went (a test's watch).

    Raises:
        AgentDefinitionError: a bad ``host_id`` (field ``hostId``) or ``ttl_s``
            (field ``leaseTtlS``).
    """

    def __init__(
        self,
        store: LeaseStore,
        *,
        clock: Clock,
        host_id: str | None,
        ttl_s: float,
        agent_ids: Collection[str],
        events: EventBus,
        wake: Callable[[str], None],
        store_state: StoreState | None = None,
        on_period: Callable[[], None] | None = None,
    ) -> None:
        self.ttl_s = _checked_ttl(ttl_s)
        self.host_id = default_host_id() if host_id is None else _checked_host_id(host_id)
        self.store = store
        self.clock = clock
        self.agent_ids = tuple(agent_ids)
        self.events = events
        self.wake = wake
        self.store_state = store_state
        self.epoch: int | None = None
        # When the lease was last taken or renewed, by this host's clock (the time asked before
        # the write, so never later than the row's own start).
        self._renewed_at_ms = 0
        self.held: set[str] = set()
        # Set by a start that failed with the store's fault: its release logs a failure quietly.
        self.quiet_release = False
        # How many agents this host holds at most: its fair share among the live hosts
        # (docs/host.md#agents-spread-over-the-hosts), fixed at each period.
        self.share = len(self.agent_ids)
        # Held agents this host gives up as soon as no pass runs on them.
        self.leaving: set[str] = set()
        # Told at the end of every period (docs/host.md#watching-a-host-in-tests).
        self._on_period = on_period
        self._passes: dict[str, anyio.CancelScope] = {}
        # Held while this host reads claims and changes them (a period, a worker's claim, a
        # give-up): a period comparing a read of the claims with ``held`` must not see a claim
        # a worker made in between, or it would forget an agent the store says it holds.
        self._claiming = anyio.Lock()

    @property
    def ttl_ms(self) -> int:
        """The TTL in whole milliseconds, as lease rows store it."""
        return max(1, round(self.ttl_s * 1000))

    # -- start and stop ---------------------------------------------------------------------

    async def acquire(self) -> None:
        """Take this host's lease with a new epoch (at once,
        docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once), fence the
        store by it and claim every agent not held under another host's live lease
        (docs/host.md#start-up)."""
        now = self.clock.now_ms()
        epoch = await self.store.acquire_lease(self.host_id, now_ms=now, ttl_ms=self.ttl_ms)
        assert epoch is not None  # an unconditional acquire always takes the row
        self._renewed_at_ms = now
        self._hold(epoch)
        await self._spread(self.clock.now_ms())
        await self._claim(self._wanted(list(self.agent_ids)))
        log.info(
            "host lease acquired",
            host_id=self.host_id,
            lease_epoch=epoch,
            not_leased=[a for a in self.agent_ids if a not in self.held],
        )

    async def release(self) -> None:
        """Release the lease (clean exit, after the workers stopped) and unfence the store."""
        epoch, self.epoch = self.epoch, None
        self.held.clear()
        with anyio.CancelScope(shield=True):
            try:
                if epoch is not None and await self.store.release_lease(self.host_id, epoch):
                    log.info("host lease released", host_id=self.host_id, lease_epoch=epoch)
            except StoreUnavailable as exc:
                # A full disk, say: one line, as every other fault of the store.
                (log.debug if self.quiet_release else log.warning)(
                    "releasing the host lease failed; it lapses at its expiry",
                    host_id=self.host_id,
                    cause=exc.cause,
                    error=str(exc),
                )
            except Exception:
                log.exception("releasing the host lease failed; it lapses at its expiry")
            finally:
                self.store.fence_with(None)

    # -- reading ----------------------------------------------------------------------------

    def status_override(self, agent_id: str) -> Literal["not-leased"] | None:
        """``not-leased`` when this host does not hold the agent now, else None."""
        return None if agent_id in self.held else "not-leased"

    # -- the keeper -------------------------------------------------------------------------

    async def keep(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run a lease period every ``ttl_s / 3`` on the clock until cancelled."""
        task_status.started()
        while True:
            await self.clock.sleep(self.ttl_s / 3)
            try:
                await self.period()
            except Exception as exc:
                unavailable = store_unavailable(exc)
                if unavailable is None:
                    log.exception("a lease period failed; the next period tries again")
                elif self.store_state is None:
                    # Each step of a period is its own transaction: the next period redoes
                    # whichever did not happen (docs/host.md#hosts-and-a-failing-store).
                    log.warning(
                        "a lease period could not reach the store; the next period tries again",
                        host_id=self.host_id,
                        error=str(unavailable),
                    )
                else:
                    self.store_state.failed(
                        unavailable,
                        "a lease period could not reach the store; the next period tries again",
                        host_id=self.host_id,
                    )
            else:
                if self.store_state is not None:
                    self.store_state.succeeded()
            if self._on_period is not None:
                self._on_period()

    async def period(self) -> None:
        """Renew (or take the row back once expired), drop claims other hosts took, and claim
        what became claimable."""
        async with self._claiming:
            now = self.clock.now_ms()
            if self.epoch is None:
                epoch = await self.store.acquire_lease(
                    self.host_id, now_ms=now, ttl_ms=self.ttl_ms, only_if_expired=True
                )
                if epoch is None:
                    return
                self._renewed_at_ms = now
                self._hold(epoch)
                log.info("host lease acquired again", host_id=self.host_id, lease_epoch=epoch)
            else:
                renewal = await self.store.renew_lease(
                    self.host_id, self.epoch, now_ms=now, ttl_ms=self.ttl_ms
                )
                if not renewal.renewed:
                    self._lose_everything()
                    return
                lapsed = self.lapsed(now)
                self._renewed_at_ms = now
                if lapsed:
                    # Passes were refused while the lease had run out: they may start now.
                    for agent_id in self.held:
                        self.wake(agent_id)
                if renewal.taken_over:
                    log.warning("took over expired host leases", hosts=list(renewal.taken_over))
            claims = await self.store.agent_claims(self.agent_ids, now_ms=now)
            ours = (self.host_id, self.epoch)
            for claim in claims:
                if claim.agent_id in self.held and (claim.host_id, claim.lease_epoch) != ours:
                    self.lost(claim.agent_id, f"claimed by {claim.host_id!r}")
            await self._spread(now)
            claimable = self._wanted(
                [
                    c.agent_id
                    for c in claims
                    if c.agent_id not in self.held and (not c.live or c.host_id == self.host_id)
                ]
            )
            if claimable:
                await self._claim(claimable)

    # -- passes -----------------------------------------------------------------------------

    async def run_pass(self, agent_id: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run one work pass if this host holds (or can now claim) the agent; a ``LeaseLost``
        ends it, and losing the lease cancels it, nothing more being committed either way."""
        if not await self._ready(agent_id):
            return
        reason: str | None = None
        with anyio.CancelScope() as scope:
            self._passes[agent_id] = scope
            try:
                await work()
            except* LeaseLost as group:
                reason = str(_first_leaf(group))
            finally:
                self._passes.pop(agent_id, None)
        if reason is None and agent_id in self.leaving:
            async with self._claiming:
                await self._give_up([agent_id])
        elif reason is not None and agent_id not in self.held:
            # The whole lease went first (a host frozen past its TTL): say what was refused.
            log.warning(
                "a commit was fenced off; nothing of it was written",
                agent_id=agent_id,
                host_id=self.host_id,
                reason=reason,
            )
        elif reason is not None:
            self.lost(agent_id, reason)

    def lapsed(self, now_ms: int) -> bool:
        """Whether this host's lease has run out by its own clock: no renewal for a TTL (the
        store was out of reach, say), so another host may be taking its agents over."""
        return now_ms - self._renewed_at_ms >= self.ttl_ms

    async def _ready(self, agent_id: str) -> bool:
        if self.epoch is not None and self.lapsed(self.clock.now_ms()):
            # No new pass, hence no new effect, under a lease that may be another host's by now:
            # the next period renews it or finds it lost (docs/host.md#hosts-and-a-failing-store).
            return False
        if agent_id in self.held and agent_id not in self.leaving and self.epoch is not None:
            return True
        async with self._claiming:
            if self.epoch is None:
                return False
            if agent_id in self.leaving:
                return False  # given up: it waits for the host that claims it
            if agent_id in self.held:
                return True
            # A read first: the write transaction of a claim only when it can succeed.
            claim = await self.store.agent_claim(agent_id, now_ms=self.clock.now_ms())
            if claim is not None and claim.live and claim.host_id != self.host_id:
                return False
            if len(self.held) >= self.share:
                return False  # over its share: another host takes it
            return agent_id in await self._claim([agent_id])

    def lost(self, agent_id: str, reason: str) -> None:
        """Forget the claim on one agent, stop its pass, and say so (``lease.lost``)."""
        if agent_id not in self.held:
            return
        self.held.discard(agent_id)
        self.leaving.discard(agent_id)
        scope = self._passes.get(agent_id)
        if scope is not None:
            scope.cancel()
        self._publish(agent_id)
        log.warning(
            "agent lease lost",
            agent_id=agent_id,
            host_id=self.host_id,
            lease_epoch=self.epoch,
            reason=reason,
        )

    # -- internals --------------------------------------------------------------------------

    def _hold(self, epoch: int) -> None:
        self.epoch = epoch
        self.store.fence_with(self.host_id, epoch)

    async def _claim(self, agent_ids: list[str]) -> set[str]:
        assert self.epoch is not None
        claimed = await self.store.claim_agents(
            agent_ids, self.host_id, self.epoch, now_ms=self.clock.now_ms()
        )
        fresh = claimed - self.held
        self.held |= claimed
        for agent_id in self.agent_ids:
            if agent_id in fresh:
                self.wake(agent_id)
        return claimed

    def _wanted(self, candidates: list[str]) -> list[str]:
        """The first of ``candidates`` this host may still claim within its share."""
        return candidates[: max(0, self.share - len(self.held))]

    async def _spread(self, now_ms: int) -> None:
        """Fix this host's share, ``ceil(agents / live hosts)``, and give up the agents held
        beyond it (the last in the file's order first) for the other hosts to claim: an idle
        one at once, one whose pass runs when the pass ends (no pass starts on it meanwhile)."""
        hosts = set(await self.store.live_hosts(now_ms=now_ms)) | {self.host_id}
        self.share = math.ceil(len(self.agent_ids) / len(hosts))
        surplus = len(self.held) - self.share
        if surplus <= 0:
            self.leaving.clear()
        else:
            # Keep the agents chosen already; add more from the end when the surplus grew.
            order = [a for a in reversed(self.agent_ids) if a in self.held]
            chosen = [a for a in order if a in self.leaving][:surplus]
            others = [a for a in order if a not in self.leaving]
            self.leaving = {*chosen, *others[: surplus - len(chosen)]}
        await self._give_up([a for a in self.leaving if a not in self._passes])

    async def _give_up(self, agent_ids: list[str]) -> None:
        if not agent_ids or self.epoch is None:
            return
        released = await self.store.release_agents(agent_ids, self.host_id, self.epoch)
        self.held -= released
        self.leaving -= released
        if released:
            log.info(
                "agents given up for other hosts",
                host_id=self.host_id,
                agents=sorted(released),
                share=self.share,
            )

    def _lose_everything(self) -> None:
        epoch, self.epoch = self.epoch, None
        self.held.clear()
        self.leaving.clear()
        for scope in self._passes.values():
            scope.cancel()
        self._publish(None, epoch)
        log.warning(
            "host lease lost: its epoch was raised; every agent's work stops",
            host_id=self.host_id,
            lease_epoch=epoch,
        )

    def _publish(self, agent_id: str | None, epoch: int | None = None) -> None:
        payload = LeaseLostEvent(
            host_id=self.host_id,
            host_lease_epoch=epoch if agent_id is None else self.epoch,
            agent_id=agent_id if agent_id is not None else msgspec.UNSET,
        )
        self.events.publish(
            Event(id=0, at_ms=self.clock.now_ms(), agent_id=agent_id or "", payload=payload)
        )


def store_unavailable(exc: BaseException) -> StoreUnavailable | None:
    """The ``StoreUnavailable`` that ``exc`` is or (in an exception group) holds, else None."""
    if isinstance(exc, BaseExceptionGroup):
        found = exc.split(StoreUnavailable)[0]
        exc = _first_leaf(found) if found is not None else exc
    return exc if isinstance(exc, StoreUnavailable) else None


def _first_leaf(found: BaseException) -> BaseException:
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found
