"""A host's life (docs/host.md#start-up, #graceful-shutdown): start-up in order, the stop and
its grace, the signals that ask for it, the store check after an unclean stop and the
clean-shutdown marker.

Start-up: telemetry, the store check's first step, every agent's rows, the reader, the host
lease, then the workers (``host/workers.py``). What start-up opened is closed in reverse order
through one exit stack, whether start-up failed half-way or the host stopped: the marker is set
once the workers stopped, then the lease is released, the reader closed and the adapters closed.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Mapping

import anyio

from afp_runtime._logging import get_logger
from afp_runtime.errors import StoreError, StoreUnavailable
from afp_runtime.host._timed import TimedCommits
from afp_runtime.host.events import EventBus
from afp_runtime.host.leases import HostLease
from afp_runtime.host.states import HostState, HostStopping, StoreCheck
from afp_runtime.host.store_state import StoreState
from afp_runtime.host.workers import HostedAgent, Workers
from afp_runtime.loop import Event
from afp_runtime.records import Clock, HostDamagedEvent, HostStartedEvent, HostStoppingEvent
from afp_runtime.store import Store
from afp_runtime.telemetry import Telemetry, TelemetrySink

__all__ = ["Lifecycle"]

log = get_logger()

# Agents whose rows start-up makes sure of at once: a SQLite group's worth, and a bound on the
# waiters for a Postgres pool.
_ENSURE_AT_ONCE = 64


class Lifecycle:
    """Starts and stops a host and knows where it is in its life.

    Args:
        store: the writer store.
        agents: the hosted agents by id.
        clock: the injected clock.
        events: the host's event bus (closed at a stop).
        lease: the host lease (acquired at start-up, released at exit).
        workers: the workers (run from start-up until a stop's grace is over).
        store_state: the store's fault as the host last met it.
        telemetry: export spans and metrics (docs/telemetry.md), or None.
        timed: the drivers' commit timer when there is telemetry.
    """

    def __init__(
        self,
        store: Store,
        agents: Mapping[str, HostedAgent],
        *,
        clock: Clock,
        events: EventBus,
        lease: HostLease,
        workers: Workers,
        store_state: StoreState,
        telemetry: Telemetry | None,
        timed: TimedCommits | None,
    ) -> None:
        self.store = store
        self._agents = agents
        self.clock = clock
        self.events = events
        self._lease = lease
        self._workers = workers
        self.store_state = store_state
        self.telemetry_options = telemetry
        self._timed = timed
        self.telemetry: TelemetrySink | None = None
        self.state: HostState = "starting"
        self.store_check: StoreCheck = "not-needed"
        self.store_problems: tuple[str, ...] = ()
        self._reader: Store | None = None
        self._stack = contextlib.AsyncExitStack()

    @property
    def reader(self) -> Store:
        """The host's read-only connection to its store (open while the host runs)."""
        if self._reader is None:
            raise HostStopping("the host is not running")
        return self._reader

    async def start(self) -> None:
        """Start up (docs/host.md#start-up); on failure, close what was opened and raise."""
        try:
            # Callbacks run last-in first-out: adapters close after the workers have stopped.
            self._stack.push_async_callback(self._close_definitions)
            await self._start_telemetry()
            await self._check_store()
            await self._ensure_agents()
            self._reader = await self.store.open_reader()
            self._stack.push_async_callback(self._close_reader)
            # Released after the workers stopped (the callbacks run last-in first-out).
            self._stack.push_async_callback(self._lease.release)
            await self._lease.acquire()
            # Runs first at exit, once the workers have stopped: nothing is half-written then.
            self._stack.push_async_callback(self._mark_clean_shutdown)
            outer = await self._stack.enter_async_context(anyio.create_task_group())
            check = self._check_in_background if self.store_check == "checking" else None
            await outer.start(self._workers.run, check)
        except BaseException as exc:
            # A start the store's fault ended is said once, by its caller: a release over the
            # same fault is logged quietly (how many writes fit a full disk is luck).
            self._lease.quiet_release = isinstance(exc, StoreUnavailable)
            self.state = "stopping"
            self.events.close()
            await self._stack.aclose()
            self.state = "stopped"
            raise
        self.state = "running"
        self._host_event(HostStartedEvent)
        log.info("host started", agents=list(self._agents))

    async def finish(self, *exc: object) -> bool | None:
        """Leave the host's ``async with``: wait for the workers, then close what start-up
        opened."""
        # Leaving without a stop cancels at once (as a process that ends would); after a
        # stop it waits out that stop's grace (not ``stop()``, which would cut the grace).
        self._begin_stop(0.0)
        try:
            return await self._stack.__aexit__(*exc)  # type: ignore[arg-type]
        finally:
            self.state = "stopped"
            log.info("host stopped")

    def stop(self, grace_s: float | None = None) -> None:
        """``Host.stop``: a first call begins the stop, a second skips what is left of the
        grace."""
        if self.state == "stopped":
            return
        if self.state == "stopping":
            self._workers.grace_scope.cancel()
            return
        self._begin_stop(grace_s)

    async def wait_stopping(self) -> None:
        """Return once a stop was asked for (``stop()``, or leaving the ``async with``)."""
        await self._workers.stop_requested.wait()

    async def stop_on_signals(self) -> None:
        """``stop()`` at every SIGTERM or SIGINT until cancelled."""
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.stop()

    def _begin_stop(self, grace_s: float | None) -> None:
        if self.state in ("stopping", "stopped"):
            return
        self.state = "stopping"
        self._host_event(HostStoppingEvent)
        self.events.close()
        self._workers.stop(grace_s)

    async def _start_telemetry(self) -> None:
        """Turn events into spans and metrics; flushed last at exit (docs/telemetry.md)."""
        if self.telemetry_options is None:
            return
        sink = await anyio.to_thread.run_sync(self.telemetry_options.start)
        self.telemetry = sink
        if self._timed is not None:
            self._timed.sink = sink

        async def flush() -> None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(sink.shutdown)

        self._stack.push_async_callback(flush)
        for agent in self._agents.values():
            agent.driver.emitter.add(sink)

    async def _ensure_agents(self) -> None:
        """Make sure every hosted agent's rows exist, many at once: on SQLite their commits
        share transactions (docs/storage.md#group-commit), on Postgres pooled connections."""
        now_ms = self.clock.now_ms()
        limiter = anyio.CapacityLimiter(_ENSURE_AT_ONCE)
        failures: list[Exception] = []

        async def ensure(agent_id: str) -> None:
            # The definition's summary is stored too (docs/storage.md#definition-summaries).
            definition = self._agents[agent_id].definition.profile()
            async with limiter:
                try:
                    await self.store.ensure_agent(agent_id, now_ms=now_ms, definition=definition)
                except Exception as exc:
                    failures.append(exc)  # the first is raised as it is, not in a group

        async with anyio.create_task_group() as group:
            for agent_id in self._agents:
                group.start_soon(ensure, agent_id)
        if failures:
            raise failures[0]

    async def _check_store(self) -> None:
        """docs/host.md#start-up step 1: after a clean stop, clear the marker until this host
        stops cleanly; after an unclean stop the marker is clear already and ``quick_check``
        runs behind the serving host (``_check_in_background``)."""
        if await self.store.clean_shutdown():
            await self.store.begin_serving()
        else:
            self.store_check = "checking"

    async def _check_in_background(self) -> None:
        """docs/host.md#after-an-unclean-stop: ``quick_check`` on a connection of its own (its
        work runs in that connection's thread); on damage, stop taking turns and admitting. A
        store that cannot be reached now is not damage: the check is done again once it can be."""
        failures = 0
        while True:
            try:
                problems = await self._quick_check()
            except StoreUnavailable as exc:
                failures += 1
                self.store_state.failed(
                    exc, "the store check could not reach the store; it is tried again"
                )
                await self.clock.sleep(self._workers.next_look_s(failures))
                continue
            break
        if problems == ["ok"]:
            self.store_check = "ok"
            log.info("store check passed after an unclean stop", path=self.store.location)
            return
        self.store_check = "damaged"
        self.store_problems = tuple(problems)
        log.error(
            "the store failed quick_check after an unclean stop; the host takes no more turns "
            "and admits nothing: run `afp doctor` and restore a backup",
            path=self.store.location,
            problems=problems[:5],
        )
        self._host_event(HostDamagedEvent)
        for agent in self._agents.values():
            agent.scope.cancel()

    async def _quick_check(self) -> list[str]:
        """``quick_check`` on a reader of its own; problems, or ``StoreUnavailable``."""
        try:
            checker = await self.store.open_reader()
            try:
                return await checker.quick_check()
            finally:
                with anyio.CancelScope(shield=True):
                    await checker.aclose()
        except StoreUnavailable:
            raise
        except StoreError as exc:  # a file that cannot be read back is not known healthy
            return [str(exc)]

    async def _mark_clean_shutdown(self) -> None:
        """Set the clean-shutdown marker only on a store known healthy: after a failed or
        unfinished check it stays clear, so the next start checks again. A store that cannot
        be written now leaves it clear too: the stop is still clean (exit 0), and the next
        start checks the file."""
        if self.store_check in ("not-needed", "ok"):
            try:
                await self.store.mark_clean_shutdown()
            except StoreUnavailable as exc:
                log.warning(
                    "the clean-shutdown marker stays clear: the store cannot be written",
                    path=self.store.location,
                    cause=exc.cause,
                    error=str(exc),
                )
        else:
            log.warning(
                "the clean-shutdown marker stays clear: the store check did not pass",
                path=self.store.location,
                store_check=self.store_check,
            )

    async def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            with anyio.CancelScope(shield=True):
                await reader.aclose()

    async def _close_definitions(self) -> None:
        with anyio.CancelScope(shield=True):
            for agent in self._agents.values():
                try:
                    await agent.definition.aclose()
                except Exception:
                    log.exception(
                        "closing an agent's adapters failed", agent_id=agent.driver.agent_id
                    )

    def _host_event(
        self, kind: type[HostStartedEvent | HostStoppingEvent | HostDamagedEvent]
    ) -> None:
        payload = kind(
            host_id=self._lease.host_id, boot_id=self.events.boot_id, agents=list(self._agents)
        )
        self.events.publish(Event(id=0, at_ms=self.clock.now_ms(), agent_id="", payload=payload))
