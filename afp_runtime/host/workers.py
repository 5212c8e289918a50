"""The host's workers (docs/host.md#agents-and-workers): one per agent, each running
``AgentDriver.work()`` whenever it is woken (a post, a change marker that moved, the poll
interval), one turn at a time per agent and up to ``max_active_turns`` agents at once.

Beside them in the workers' own task group run the lease keeper, the periodic WAL checkpoint,
the post watcher, the agents' MCP sessions and, after an unclean stop, the store check: a stop
cancels that group (after the grace), never the code running inside ``async with host``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from afp_runtime._logging import get_logger
from afp_runtime.agents import Agent
from afp_runtime.errors import RunNotResumable, StoreError
from afp_runtime.host.leases import HostLease, store_unavailable
from afp_runtime.host.store_state import StoreState
from afp_runtime.host.watch import HostWatch
from afp_runtime.loop import AgentDriver
from afp_runtime.records import Clock
from afp_runtime.store import Store

__all__ = ["CHECKPOINT_EVERY_S", "HostedAgent", "Workers"]

log = get_logger()

# The first wait before a worker tries again after the store could not be reached.
_RETRY_FIRST_S = 0.25
# How often the host checkpoints its store's WAL (docs/storage.md#store-faults).
CHECKPOINT_EVERY_S = 30.0


class HostedAgent:
    """A hosted agent's worker state."""

    def __init__(self, definition: Agent, driver: AgentDriver) -> None:
        self.definition = definition
        self.driver = driver
        self.wake: anyio.Event | None = None
        # Whether the next pass must read the store first: something may have changed that
        # the driver was not told of (docs/host.md#what-a-worker-keeps-in-memory).
        self.fresh = True
        self.resume_requested = False
        # Held by a work pass and by a dismiss: the two never change the turn at once.
        self.lock = anyio.Lock()
        self.working = False
        # Whether its last pass found nothing to do (docs/host.md#a-message-reaches-its-host).
        self.quiet = False
        # Cancelled when the store check finds damage: the worker takes no more turns.
        self.scope = anyio.CancelScope()


class Workers:
    """Every hosted agent's worker, and the tasks that run beside them until the host stops.

    Args:
        store: the writer store (change marker, posts watched, checkpoints).
        agents: the hosted agents by id.
        clock: the injected clock (poll interval, grace, back-off).
        lease: the host lease (its keeper runs here; a pass runs only on a held agent).
        store_state: the store's fault as the host last met it.
        poll_interval_s: how often work from elsewhere is looked for.
        max_active_turns: agents working at once.
        grace_s: how long a stop lets running passes finish by default.
        admits: whether the host still admits work (a stopping host starts no new run).
        watch: told when a pass begins and ends and a checkpoint finished.
    """

    def __init__(
        self,
        store: Store,
        agents: Mapping[str, HostedAgent],
        *,
        clock: Clock,
        lease: HostLease,
        store_state: StoreState,
        poll_interval_s: float,
        max_active_turns: int,
        grace_s: float,
        admits: Callable[[], bool],
        watch: HostWatch,
    ) -> None:
        self.store = store
        self.agents = agents
        self.clock = clock
        self.lease = lease
        self.store_state = store_state
        self.poll_interval_s = poll_interval_s
        self.max_active_turns = max_active_turns
        self.admits = admits
        self.watch = watch
        self.grace = grace_s
        # Cancelled by a second stop: ends what is left of the grace (entering it then is a no-op).
        self.grace_scope = anyio.CancelScope()
        self.stop_requested = anyio.Event()
        self._limiter: anyio.CapacityLimiter | None = None
        self._all_idle = anyio.Event()
        self._live_workers = 0
        # Whether the store has a change marker (``_watch_changes`` runs).
        self._hears_changes = False
        # Posts and closed questions made through the host's own doors: they move the store's
        # change marker, but each was handed to its worker already.
        self._own_changes = 0
        # Tasks started beside the workers, each reporting started first (the schedule
        # runner, docs/host.md#schedules).
        self.beside: list[Callable[..., Coroutine[Any, Any, None]]] = []

    def wake(self, agent_id: str) -> None:
        """Make the agent's worker read the store and look for work now."""
        agent = self.agents.get(agent_id)
        if agent is not None:
            agent.fresh = True
            if agent.wake is not None:
                agent.wake.set()

    def deliver(self, agent_id: str, message_id: str, position: int, text: str) -> None:
        """Hand a message the host's own door just committed to the agent's worker: it takes
        it without reading the inbox (docs/host.md#what-a-worker-keeps-in-memory)."""
        self._own_changes += 1
        agent = self.agents.get(agent_id)
        if agent is not None:
            agent.driver.deliver(message_id, position, text)
            if agent.wake is not None:
                agent.wake.set()

    def changed_here(self, agent_id: str) -> None:
        """A change the host's own door committed (a closed question): the agent's worker
        reads the store, and the change marker's move is not taken for one from elsewhere."""
        self._own_changes += 1
        self.wake(agent_id)

    def stop(self, grace_s: float | None) -> None:
        """No new pass starts; running ones get ``grace_s`` (default: the host's grace)."""
        if grace_s is not None:
            self.grace = max(0.0, grace_s)
        if self.grace == 0:
            self.grace_scope.cancel()
        self.stop_requested.set()
        for agent_id in self.agents:
            self.wake(agent_id)

    def next_look_s(self, failures: int) -> float:
        """How long a worker waits for a wake-up before it looks again: the poll interval, or
        after passes the store could not be reached for, a back-off from 0.25 s doubling up to
        the poll interval, so a turn goes on soon after the store is back."""
        if not failures:
            return self.poll_interval_s
        return min(self.poll_interval_s, _RETRY_FIRST_S * 2 ** min(failures - 1, 16))

    async def run(
        self,
        check: Callable[[], Coroutine[Any, Any, None]] | None = None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start every worker (``check``, the store check, behind them), report started, and
        run until a stop's grace is over."""
        self._limiter = anyio.CapacityLimiter(self.max_active_turns)
        # The workers' own task group: stopping cancels it, never the code inside ``async with``.
        async with anyio.create_task_group() as workers:
            workers.start_soon(self.lease.keep)
            workers.start_soon(self._checkpoint_periodically)
            # A message posted through any process wakes its worker at once where the store
            # can tell; the poll interval is the fallback (docs/host.md#a-message-reaches-its-host).
            workers.start_soon(self.store.watch_posts, self.wake)
            # Each agent's MCP sessions open before its worker takes a turn, so a turn (and a
            # recovery, which must know which calls may run again) sees the servers' tools;
            # a server that fails leaves its tools out and is tried again (docs/mcp.md#sessions).
            sources = [a.definition.mcp for a in self.agents.values() if a.definition.mcp]
            for source in sources:
                workers.start_soon(source.run, self.clock)
            for source in sources:
                await source.wait_ready()
            # A store that tells commits from elsewhere apart: an agent with nothing to do waits
            # for a wake-up only, and one look at the store per poll interval stands in for a
            # pass of every such agent (docs/host.md#a-message-reaches-its-host).
            marker = await self._change_marker()
            if marker is not None:
                self._hears_changes = True
                workers.start_soon(self._watch_changes, marker)
            for task in self.beside:
                await workers.start(task)
            for agent in self.agents.values():
                self._live_workers += 1
                await workers.start(self._worker, agent)
            if not self._live_workers:
                self._all_idle.set()
            if check is not None:
                # Behind the serving host; a stop cancels it with the workers.
                workers.start_soon(check)
            task_status.started()
            await self.stop_requested.wait()
            with self.grace_scope, self.clock.move_on_after(self.grace):
                await self._all_idle.wait()
            # Idle workers wait for a wake-up and are simply cancelled; only work in a pass
            # is cut off by the end of the grace.
            if any(agent.working for agent in self.agents.values()):
                log.warning("shutdown grace over; cancelling the running work", grace_s=self.grace)
            workers.cancel_scope.cancel()

    async def _checkpoint_periodically(self) -> None:
        """Every ``CHECKPOINT_EVERY_S`` on the clock, fold the WAL into the main file and cut
        it back; one that keeps failing is reported in health (docs/storage.md#store-faults)."""
        while True:
            await self.clock.sleep(CHECKPOINT_EVERY_S)
            try:
                why = await self.store.checkpoint()
            except StoreError as exc:
                why = str(exc)
            self.store_state.checkpointed(why)
            self.watch.checkpointed()

    async def _change_marker(self) -> tuple[int, int] | None:
        """The store's change marker; None when it cannot tell or cannot be reached now (every
        worker then looks each poll interval, and a pass says why)."""
        try:
            return await self.store.change_marker()
        except Exception:
            return None

    async def _watch_changes(self, seen: tuple[int, int]) -> None:
        """Once per poll interval: when the store's change marker moved (or the store cannot
        say), wake every worker to read the store. Waking one in a pass sets its fresh event,
        so a change read by no pass is never missed. The host's own posts and closed questions
        move the marker's count of them, one each, and were handed to their workers already:
        a move by exactly those wakes nobody."""
        own = self._own_changes
        while True:
            await self.clock.sleep(self.poll_interval_s)
            now = await self._change_marker()
            # Read in the same step as the marker: no door commits in between.
            ours, own = self._own_changes - own, self._own_changes
            if now is not None and now == (seen[0], seen[1] + ours):
                seen = now
                continue
            seen = now if now is not None else seen
            for agent_id in self.agents:
                self.wake(agent_id)

    async def _worker(
        self, agent: HostedAgent, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        agent_id = agent.driver.agent_id
        with structlog.contextvars.bound_contextvars(agent_id=agent_id):
            agent.wake = anyio.Event()
            task_status.started()
            try:
                with agent.scope:
                    await self._work_until_stopped(agent)
            finally:
                self._live_workers -= 1
                if self._live_workers <= 0:
                    self._all_idle.set()

    async def _work_until_stopped(self, agent: HostedAgent) -> None:
        failures = 0  # passes in a row the store could not be reached for
        while not self.stop_requested.is_set():
            # A post during the pass sets the fresh event, so it is never missed.
            agent.wake = anyio.Event()
            assert self._limiter is not None
            async with self._limiter:
                failures = await self._one_pass(agent, failures)
            if self.stop_requested.is_set():
                return
            if agent.quiet and self._hears_changes:
                await agent.wake.wait()
                continue
            with self.clock.move_on_after(self.next_look_s(failures)):
                await agent.wake.wait()
            if not agent.wake.is_set():
                # The timed look is how work from elsewhere is found where nothing tells it.
                agent.fresh = True

    async def _one_pass(self, agent: HostedAgent, failures: int) -> int:
        """One work pass of a held agent; the count of passes in a row the store could not be
        reached for, after it."""
        if self.stop_requested.is_set():
            return failures
        agent_id = agent.driver.agent_id
        agent.working = True
        agent.quiet = False
        self.watch.pass_started(agent_id)
        try:
            await self.lease.run_pass(agent_id, lambda: self._pass(agent))
            return 0
        except Exception as exc:
            # What the driver knew may be what the failure left behind: read the store again.
            agent.fresh = True
            return self._pass_failed(exc, failures)
        finally:
            agent.working = False
            self.watch.pass_finished(agent_id)

    def _pass_failed(self, exc: Exception, failures: int) -> int:
        """Log a failed pass; the count of passes in a row the store could not be reached for.

        Every transaction commits whole or not at all, so what a cut-off pass leaves is what
        a crash would: the next pass reads the store again and recovers the open turn
        (docs/host.md#hosts-and-a-failing-store).
        """
        unavailable = store_unavailable(exc)
        if unavailable is None:
            log.exception("an agent's work pass failed; it retries at its next wake")
            return 0
        # Logged once per fault, not per pass: every worker meets it, every retry.
        self.store_state.failed(
            unavailable,
            "the store could not be reached; the pass is tried again",
            retry_in_s=self.next_look_s(failures + 1),
        )
        return failures + 1

    async def _pass(self, agent: HostedAgent) -> None:
        async with agent.lock:
            if agent.resume_requested:
                agent.resume_requested = False
                try:
                    await agent.driver.resume()
                except RunNotResumable as exc:
                    log.warning("operator resume skipped", reason=str(exc))
                except Exception as exc:
                    # An accepted resume the store's fault cut off is asked again at the next
                    # pass (retried as any pass is), not dropped: the turn it left held is
                    # resumed once the store is back (docs/host.md#hosts-and-a-failing-store).
                    if store_unavailable(exc) is not None:
                        agent.resume_requested = True
                    raise
                return
            # A stopping host finishes the run in progress but starts no new one
            # (docs/host.md#graceful-shutdown). A first pass may begin before ``__aenter__``
            # returns: a starting host admits work (else it would wait a poll interval).
            if agent.fresh:
                agent.fresh = False
                agent.driver.forget()
            await agent.driver.work(admit=self.admits, trust=True)
            agent.quiet = agent.driver.idle
