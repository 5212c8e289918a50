"""The host's schedule runner (docs/host.md#schedules): the due schedules of the agents this
host holds become inbox messages, each due instant exactly once.

One task beside the workers: it syncs the agents' declared schedules, delivers whatever is due,
then sleeps on the host's clock until the earliest next due instant of the agents it holds, or
until it is told something changed (a schedule set through this host, a claim taken, a lease
period). A delivery is one commit of the store (``deliver_schedule``): the messages and the
schedule's marks together, under a compare-and-set and the host's fence, so two hosts racing
one due instant, a restart or a kill deliver it once. A store fault is met as the workers meet
it: said once in health, tried again after a back-off, never a crash.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import anyio
from anyio.abc import TaskStatus

from afp_runtime._logging import get_logger
from afp_runtime.agents import DeliveredSchedule, deliver_due_schedules, sync_declared
from afp_runtime.errors import LeaseLost
from afp_runtime.host.leases import HostLease, store_unavailable
from afp_runtime.host.store_state import StoreState
from afp_runtime.host.workers import HostedAgent
from afp_runtime.loop import IdFactory
from afp_runtime.records import Clock, InboxAccepted
from afp_runtime.store import Store

__all__ = ["ScheduleRunner"]

log = get_logger()

# The first wait before the runner tries again after the store could not be reached.
_RETRY_FIRST_S = 0.25


class ScheduleRunner:
    """Delivers the due schedules of the agents a host holds.

    Args:
        store: the host's writer store (fenced by its lease).
        agents: the hosted agents by id (their declared schedules, their emitters).
        clock: the host's clock (it sleeps on it until the next due instant).
        ids: the host's id factory (message ids).
        lease: which agents this host holds now.
        store_state: the store's fault as the host last met it.
        wake: wakes an agent's worker to read its inbox.
        poll_interval_s: the longest back-off after a store fault.
    """

    def __init__(
        self,
        store: Store,
        agents: Mapping[str, HostedAgent],
        *,
        clock: Clock,
        ids: IdFactory,
        lease: HostLease,
        store_state: StoreState,
        wake: Callable[[str], None],
        poll_interval_s: float,
    ) -> None:
        self.store = store
        self.agents = agents
        self.clock = clock
        self.ids = ids
        self.lease = lease
        self.store_state = store_state
        self.wake = wake
        self.poll_interval_s = poll_interval_s
        self._changed = anyio.Event()
        self._synced = False
        self._wait_s: float | None = None

    def changed(self) -> None:
        """Look at the schedules again now (one was set or removed, a claim moved)."""
        self._changed.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Sync the declared schedules, report started, then deliver until cancelled."""
        await self._attempt(self._sync)
        task_status.started()
        failures = 0
        while True:
            # Made before the round: a change during it is seen by the wait after it.
            self._changed = anyio.Event()
            wait_s: float | None
            if await self._attempt(self._round_or_sync):
                failures = 0
                wait_s = self._wait_s
            else:
                failures += 1
                wait_s = min(self.poll_interval_s, _RETRY_FIRST_S * 2 ** min(failures - 1, 16))
            if wait_s is None:
                await self._changed.wait()
            else:
                with self.clock.move_on_after(wait_s):
                    await self._changed.wait()

    async def _attempt(self, work: Callable[[], Awaitable[None]]) -> bool:
        """``work()`` awaited; False when it failed (said once, as the host's other store
        calls say it)."""
        try:
            await work()
        except LeaseLost as exc:
            agent_id = exc.context.get("agent_id")
            if isinstance(agent_id, str):
                self.lease.lost(agent_id, str(exc))
            # Nothing was written; the next round, at once, delivers the agents still held.
            self._wait_s = 0.0
            return True
        except Exception as exc:
            unavailable = store_unavailable(exc)
            if unavailable is None:
                log.exception("delivering schedules failed; the runner tries again")
            else:
                self.store_state.failed(
                    unavailable, "schedules could not reach the store; they are tried again"
                )
            return False
        return True

    async def _sync(self) -> None:
        now_ms = self.clock.now_ms()
        for agent_id, agent in self.agents.items():
            await sync_declared(self.store, agent_id, agent.definition.schedules, now_ms=now_ms)
        self._synced = True

    async def _round_or_sync(self) -> None:
        if not self._synced:
            await self._sync()
        self._wait_s = await self._round()

    def _held(self) -> list[str]:
        if self.lease.epoch is None or self.lease.lapsed(self.clock.now_ms()):
            # No delivery under a lease that may be another host's by now.
            return []
        return [a for a in self.agents if a in self.lease.held and a not in self.lease.leaving]

    async def _round(self) -> float | None:
        """Deliver what is due now; how long to sleep until the next due instant (None: until
        something changes)."""
        held = self._held()
        if not held:
            return None
        now_ms = self.clock.now_ms()
        new_id = self.ids.message_id
        done = await deliver_due_schedules(self.store, held, now_ms=now_ms, new_id=new_id)
        for delivered in done:
            self._tell(delivered, now_ms)
        if done:
            self.store_state.succeeded()
        earliest = await self.store.next_schedule_due(held)
        if earliest is None:
            return None
        return max(0.0, (earliest - self.clock.now_ms()) / 1000)

    def _tell(self, delivered: DeliveredSchedule, now_ms: int) -> None:
        """``inbox.accepted`` for each message posted, and the agent's worker woken."""
        agent = self.agents.get(delivered.agent_id)
        if agent is None:
            return
        for _, ack in delivered.acks:
            agent.driver.emitter.emit(
                InboxAccepted(
                    message_id=ack.message_id,
                    position=ack.position,
                    text_chars=len(delivered.text),
                ),
                at_ms=now_ms,
                agent_id=delivered.agent_id,
            )
        if delivered.acks:
            self.wake(delivered.agent_id)
