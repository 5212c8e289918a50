"""The standing host, minimal form (docs/host.md#running-a-host): agents, inbox, scheduling,
stop.

``async with Host(store, definitions, clock=…, ids=…) as host:`` ensures every agent exists in
the store, opens a read-only connection for readers (``host.reader``), and starts one worker per
agent in the host's task group. A worker runs ``AgentDriver.work()`` whenever a message is
posted (``host.post`` wakes it) and, so that rows written by other processes are noticed too,
within one ``poll_interval_s`` of the store's change marker moving, or every ``poll_interval_s``
where the store has none or the agent has an open turn (docs/host.md#agents-and-workers). Its
first pass finishes what an earlier process left unfinished (``work()`` recovers running turns
and retries due stalls).

Readings settled here (leases, check-ins and status are described in docs/host.md):

* One turn at a time per agent (one worker each); agents work in parallel up to
  ``max_active_turns`` (an ``anyio.CapacityLimiter``, which admits waiting workers in the order
  they asked: the agent whose worker woke first goes first).
* Graceful shutdown (docs/host.md#graceful-shutdown): ``stop()`` (``afp serve`` calls it on
  SIGTERM/SIGINT)
  stops admitting (``post`` and ``resume`` raise ``HostStopping``, which the API answers 503
  ``shutting-down``), ends every event subscription and wakes every worker; a worker starts no
  new pass. Passes in progress get up to ``shutdown_grace_s`` on the injected clock
  (``clock.move_on_after``); at the deadline the workers are cancelled through the cancel
  scope of their task group (a group of its own inside the host's, so the code running inside
  ``async with`` is never cancelled by a stop). A commit in progress completes (commits are
  shielded), and interrupted runs are recovered at the next start. A second ``stop()`` (a
  second signal) skips what is left of the grace. Leaving the ``async with`` block waits for
  the workers; without an earlier ``stop()`` it cancels them at once. Then every definition's
  adapters are closed once and the reader is closed. A pass finishes its current
  ``AgentDriver.work()``, which may start the agent's next queued turn inside the grace.
* After an unclean stop ``quick_check`` runs behind the serving host, on a connection of its
  own in the workers' task group (``store_check``); damage stops every worker and admission,
  and the clean-shutdown marker is set only when the check passed or was not needed
  (docs/host.md#after-an-unclean-stop).
* Leases (docs/host.md#ownership-and-leases, ``host/leases.py``): start-up acquires the host lease,
  fences the store
  and claims the agents; a keeper task renews every ``lease_ttl_s / 3``; a pass runs only on an
  agent this host holds; a clean exit releases the lease after the workers stopped.
* ``resume(agent_id)`` checks synchronously that the agent's turn is held or stalled (and, when
  a run id is given, that it is the turn's latest run), then asks the worker to run an operator
  resume; it returns before that run starts.
* A worker that fails with an unexpected error logs it and tries again at its next wake-up; the
  host keeps running.
"""

from __future__ import annotations

import contextlib
import math
import random
import signal
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import anyio
import msgspec
import structlog
from anyio.abc import TaskStatus

from afp_runtime import models
from afp_runtime._logging import get_logger
from afp_runtime.agents import Agent, abandon_question, answer_question
from afp_runtime.errors import (
    AgentDefinitionError,
    LeaseLost,
    RunNotResumable,
    StateError,
    StoreError,
    StoreUnavailable,
)
from afp_runtime.host._timed import TimedCommits
from afp_runtime.host.events import DEFAULT_RING_SIZE, DEFAULT_SUBSCRIBER_BUFFER, EventBus
from afp_runtime.host.leases import HostLease, store_unavailable
from afp_runtime.host.store_state import StoreState
from afp_runtime.loop import (
    AgentDriver,
    Emitter,
    Event,
    IdFactory,
    KeptResults,
    LoopHooks,
    post_message,
    resumable_turn,
)
from afp_runtime.models import Model
from afp_runtime.records import (
    Clock,
    HostDamagedEvent,
    HostStartedEvent,
    HostStoppingEvent,
    QuestionRow,
    StoreFault,
)
from afp_runtime.store import Ack, Store, check_owner
from afp_runtime.telemetry import Telemetry, TelemetrySink

log = get_logger()

# The first wait before a worker tries again after the store could not be reached.
_RETRY_FIRST_S = 0.25
# How often the host checkpoints its store's WAL (docs/storage.md#store-faults).
CHECKPOINT_EVERY_S = 30.0
# Agents whose rows start-up makes sure of at once: a SQLite group's worth, and a bound on the
# waiters for a Postgres pool.
_ENSURE_AT_ONCE = 64

HostState = Literal["starting", "running", "stopping", "stopped"]
# The start-up store check (docs/host.md#after-an-unclean-stop): ``not-needed`` after a clean
# stop; else ``checking`` while ``quick_check`` runs behind the serving host, then ``ok`` or
# ``damaged`` (the host then takes no more turns and admits nothing).
StoreCheck = Literal["not-needed", "checking", "ok", "damaged"]


class HostStopping(StateError):
    """The host is stopping (or not started): it admits no new message or run."""


class StoreCheckFailed(HostStopping):
    """The store failed its check after an unclean stop: the host takes no turns and admits
    nothing (docs/host.md#after-an-unclean-stop)."""


class AgentNotHosted(StateError):
    """The named agent is not run by this host."""


class AgentProfile(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What the host knows of a hosted agent's definition.

    Attributes:
        agent_id: the agent (wire ``agentId``).
        model: the model id sent on the wire.
        provider: the adapter's provider name.
        tool_names: the agent's tools in declaration order (wire ``toolNames``).
        max_iterations: the step budget (wire ``maxIterations``).
        durability: ``sync``, ``iteration`` or ``turn``.
        window_strategy: the window strategy's name, absent without one (wire
            ``windowStrategy``).
        time_zone: the agent's configured zone (time layer), absent without one.
    """

    agent_id: str
    model: str
    provider: str
    tool_names: tuple[str, ...]
    max_iterations: int
    durability: str
    window_strategy: str | None = None
    time_zone: str | None = None


class _Agent:
    """A hosted agent's worker state."""

    def __init__(self, definition: Agent, driver: AgentDriver) -> None:
        self.definition = definition
        self.driver = driver
        self.wake: anyio.Event | None = None
        self.resume_requested = False
        # Held by a work pass and by a dismiss: the two never change the turn at once.
        self.lock = anyio.Lock()
        self.working = False
        # Whether its last pass found nothing to do (docs/host.md#a-message-reaches-its-host).
        self.quiet = False
        self.passes = 0
        # Cancelled when the store check finds damage: the worker takes no more turns.
        self.scope = anyio.CancelScope()


class Host:
    """Runs standing agents on one store.

    Args:
        store: the open (writer) store.
        definitions: the agents to host; ids must be unique.
        clock: the injected clock (timestamps, poll interval).
        ids: the injected id factory (run and message ids).
        max_active_turns: agents working at once.
        poll_interval_s: how often work from elsewhere is looked for (on ``clock``).
        shutdown_grace_s: how long a stop lets running passes finish (on ``clock``) before
            cancelling them.
        ring_size: recent events kept for resuming event streams.
        subscriber_buffer: the per-subscriber event queue bound.
        boot_id: the event boot id (random when omitted).
        rng: random source for the drivers' retry jitter.
        hooks: loop hooks handed to every driver (tests).
        telemetry: export spans and metrics of the agents' work (docs/telemetry.md).
        host_id: this host's lease id (default: the machine's host name, so a restart takes
            its lease over at once).
        lease_ttl_s: how long the host lease lives unrenewed; renewed every third of it.
        kept: where every agent's tool results whose commit failed with the store away wait
            for it, bounded in age and bytes (docs/host.md#hosts-and-a-failing-store); default
            ``KeptResults(clock)``.

    Raises:
        AgentDefinitionError: two definitions share an id (field ``agents``), a bad
            ``hostId`` or ``leaseTtlS``.
    """

    def __init__(
        self,
        store: Store,
        definitions: Sequence[Agent],
        *,
        clock: Clock,
        ids: IdFactory,
        max_active_turns: int = 8,
        poll_interval_s: float = 1.0,
        shutdown_grace_s: float = 30.0,
        ring_size: int = DEFAULT_RING_SIZE,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
        boot_id: str | None = None,
        rng: random.Random | None = None,
        hooks: LoopHooks | None = None,
        host_id: str | None = None,
        lease_ttl_s: float = 30.0,
        telemetry: Telemetry | None = None,
        kept: KeptResults | None = None,
    ) -> None:
        if (
            isinstance(max_active_turns, bool)
            or not isinstance(max_active_turns, int)
            or max_active_turns < 1
        ):
            raise AgentDefinitionError(
                f"maxActiveTurns must be an int >= 1, not {max_active_turns!r}",
                field="maxActiveTurns",
            )
        if not (math.isfinite(poll_interval_s) and poll_interval_s > 0):
            raise AgentDefinitionError(
                f"pollIntervalS must be a finite number > 0, not {poll_interval_s!r}",
                field="pollIntervalS",
            )
        if isinstance(shutdown_grace_s, bool) or not (
            isinstance(shutdown_grace_s, int | float)
            and math.isfinite(shutdown_grace_s)
            and shutdown_grace_s >= 0
        ):
            raise AgentDefinitionError(
                f"shutdownGraceS must be a finite number >= 0, not {shutdown_grace_s!r}",
                field="shutdownGraceS",
            )
        self.store = store
        self.clock = clock
        self.shutdown_grace_s = float(shutdown_grace_s)
        self.ids = ids
        self.poll_interval_s = poll_interval_s
        self.max_active_turns = max_active_turns
        self.events = EventBus(
            boot_id=boot_id, ring_size=ring_size, subscriber_buffer=subscriber_buffer
        )
        self.telemetry_options = telemetry
        self.telemetry: TelemetrySink | None = None
        """The spans and metrics sink while the host runs with telemetry (docs/telemetry.md)."""
        # With telemetry the drivers commit through a timer (the host's own reads do not).
        self._timed = TimedCommits(store) if telemetry is not None else None
        driver_store = cast(Store, self._timed) if self._timed is not None else store
        self.state: HostState = "starting"
        self.store_check: StoreCheck = "not-needed"
        self.store_problems: tuple[str, ...] = ()
        self.store_state = StoreState(clock, store.location)
        """The store's fault as this host last met it (docs/host.md#hosts-and-a-failing-store)."""
        self._agents: dict[str, _Agent] = {}
        rng = rng or random.Random()
        # One bound on kept results for the whole process.
        self.kept = kept if kept is not None else KeptResults(clock)
        for definition in definitions:
            if definition.agent_id in self._agents:
                raise AgentDefinitionError(
                    f"two agents are named {definition.agent_id!r}; agent ids must be unique",
                    field="agents",
                )
            driver = AgentDriver(
                driver_store,
                definition,
                clock=clock,
                ids=ids,
                emitter=Emitter([self.events.publish]),
                rng=rng,
                hooks=hooks,
                kept=self.kept,
            )
            self._agents[definition.agent_id] = _Agent(definition, driver)
        self._reader: Store | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._stop_requested = anyio.Event()
        self._all_idle = anyio.Event()
        self._live_workers = 0
        # Whether the store has a change marker (``_watch_changes`` runs).
        self._hears_changes = False
        self._grace = self.shutdown_grace_s
        # Cancelled by a second stop: ends what is left of the grace (entering it then is a no-op).
        self._grace_scope = anyio.CancelScope()
        self._stack = contextlib.AsyncExitStack()
        self._lease = HostLease(
            store,
            clock=clock,
            host_id=host_id,
            ttl_s=lease_ttl_s,
            agent_ids=self._agents,
            events=self.events,
            wake=self.wake,
            store_state=self.store_state,
        )

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Host:
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
            self._limiter = anyio.CapacityLimiter(self.max_active_turns)
            outer = await self._stack.enter_async_context(anyio.create_task_group())
            await outer.start(self._run_workers)
        except BaseException:
            self.state = "stopping"
            self.events.close()
            await self._stack.aclose()
            self.state = "stopped"
            raise
        self.state = "running"
        self._host_event(HostStartedEvent)
        log.info("host started", agents=list(self._agents))
        return self

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
            async with limiter:
                try:
                    await self.store.ensure_agent(agent_id, now_ms=now_ms)
                except Exception as exc:
                    failures.append(exc)  # the first is raised as it is, not in a group

        async with anyio.create_task_group() as group:
            for agent_id in self._agents:
                group.start_soon(ensure, agent_id)
        if failures:
            raise failures[0]

    async def __aexit__(self, *exc: object) -> bool | None:
        # Leaving without a stop cancels at once (as a process that ends would); after a
        # stop it waits out that stop's grace (not ``stop()``, which would cut the grace).
        self._begin_stop(0.0)
        try:
            return await self._stack.__aexit__(*exc)  # type: ignore[arg-type]
        finally:
            self.state = "stopped"
            log.info("host stopped")

    def stop(self, grace_s: float | None = None) -> None:
        """Stop admitting, end every event stream, and let running passes finish for up to
        ``grace_s`` (default ``shutdown_grace_s``) on the clock before cancelling them.

        A second call skips what is left of the grace: the workers are cancelled now. Leaving
        the ``async with`` block waits for the workers either way.
        """
        if self.state == "stopped":
            return
        if self.state == "stopping":
            self._grace_scope.cancel()
            return
        self._begin_stop(grace_s)

    async def wait_stopping(self) -> None:
        """Return once a stop was asked for (``stop()``, or leaving the ``async with``)."""
        await self._stop_requested.wait()

    async def stop_on_signals(self) -> None:
        """Call ``stop()`` at every SIGTERM or SIGINT until cancelled: the first lets running
        work finish within the grace, a second skips what is left of it (run it in a task
        group of the main thread, around ``async with host``)."""
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.stop()

    def _begin_stop(self, grace_s: float | None) -> None:
        if self.state in ("stopping", "stopped"):
            return
        self.state = "stopping"
        if grace_s is not None:
            self._grace = max(0.0, grace_s)
        if self._grace == 0:
            self._grace_scope.cancel()
        self._host_event(HostStoppingEvent)
        self.events.close()
        self._stop_requested.set()
        for agent_id in self._agents:
            self.wake(agent_id)

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
                await self.clock.sleep(self._next_look_s(failures))
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

    # -- reading ------------------------------------------------------------------------------

    @property
    def reader(self) -> Store:
        """The host's read-only connection to its store (open while the host runs)."""
        if self._reader is None:
            raise HostStopping("the host is not running")
        return self._reader

    @property
    def agent_ids(self) -> tuple[str, ...]:
        """The hosted agents, in registration order."""
        return tuple(self._agents)

    def hosts(self, agent_id: str) -> bool:
        """Whether this host runs ``agent_id``."""
        return agent_id in self._agents

    def profile(self, agent_id: str) -> AgentProfile | None:
        """The hosted agent's definition summary, or None when it is not hosted."""
        agent = self._agents.get(agent_id)
        if agent is None:
            return None
        d = agent.definition
        return AgentProfile(
            agent_id=agent_id,
            model=d.model.model,
            provider=d.model.provider,
            tool_names=tuple(tool.name for tool in d.tools),
            max_iterations=d.max_iterations,
            durability=d.durability,
            window_strategy=d.window.name if d.window is not None else None,
            time_zone=d.time.zone if d.time is not None else None,
        )

    def wire_encoder(self, agent_id: str, encoder: str, model: str) -> Model | None:
        """The adapter that re-encodes a call's request bytes for the wire check: the hosted
        agent's own, else one that encodes as the receipt's ``encoder`` did for ``model`` (None
        when this build has no such encoder)."""
        agent = self._agents.get(agent_id)
        if agent is not None:
            return agent.definition.model
        # Reached through the lazy package: the encoders bring the HTTP adapters, which only
        # this check needs.
        return models.encoder_for(encoder, model)

    def working(self, agent_id: str) -> bool:
        """Whether the agent's worker is inside a pass right now."""
        agent = self._agents.get(agent_id)
        return agent is not None and agent.working

    def passes(self, agent_id: str) -> int:
        """How many work passes the agent's worker has finished (tests wait on it)."""
        agent = self._agents.get(agent_id)
        return agent.passes if agent is not None else 0

    @property
    def host_id(self) -> str:
        """This host's lease id."""
        return self._lease.host_id

    @property
    def lease_epoch(self) -> int | None:
        """The epoch of the lease this host holds, None before start-up or once lost."""
        return self._lease.epoch

    @property
    def store_fault(self) -> StoreFault | None:
        """Why the store is degraded now, None while it is healthy
        (docs/host.md#hosts-and-a-failing-store)."""
        return self.store_state.fault

    @property
    def lease_periods(self) -> int:
        """How many lease periods the keeper has finished (tests wait on it)."""
        return self._lease.periods

    def status_override(self, agent_id: str) -> Literal["not-leased"] | None:
        """``not-leased`` when this host does not hold the agent's claim now (its status then
        says so, docs/host.md#status-values), else None: the stored status stands."""
        return self._lease.status_override(agent_id)

    # -- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write asked through the host: its outcome tells the store's state."""
        try:
            yield
        except StoreUnavailable as exc:
            self.store_state.failed(exc)
            raise
        self.store_state.succeeded()

    def _admit(self, agent_id: str) -> _Agent:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise AgentNotHosted(f"agent {agent_id!r} is not run by this host", agent_id=agent_id)
        if self.store_check == "damaged":
            raise StoreCheckFailed(
                f"{self.store.location} failed quick_check after an unclean stop "
                f"({'; '.join(self.store_problems[:5])}); the host admits nothing: run "
                "`afp doctor` and restore a backup"
            )
        if self.state != "running":
            raise HostStopping(f"the host is {self.state}; it admits nothing new")
        return agent

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        idempotency_key: str | None = None,
        sender: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably and wake the agent; returns after the commit.

        ``time`` (``{now?, zone?, window?}``, docs/time.md#the-clock-row) is accepted only by an
        agent with time enabled.

        Raises:
            AgentNotHosted: the agent is not run here.
            HostStopping: the host is stopping.
            InvalidValue: the text is empty or too long (field ``text``).
            IdempotencyConflict: the key was used before with other text.
            NotOwner: ``sender`` is not the conversation's owner (nothing is stored).
        """
        agent = self._admit(agent_id)
        checked = agent.definition.check_message_time(time)
        with self._writing():
            ack = await post_message(
                self.store,
                agent_id,
                text,
                message_id=self.ids.message_id(),
                now_ms=self.clock.now_ms(),
                idempotency_key=idempotency_key,
                sender=sender,
                shared=agent.definition.shared,
                time=checked,
                emitter=agent.driver.emitter,
            )
        self.wake(agent_id)
        return ack

    async def resume(
        self, agent_id: str, *, run_id: str | None = None, principal: str | None = None
    ) -> None:
        """Ask for an operator resume of the agent's held or stalled turn
        (docs/host.md#stalled-and-held-turns). With ``principal``, only the conversation's owner
        may (docs/host.md#the-owner-check); without, the caller is the operator.

        Raises:
            AgentNotHosted: the agent is not run here.
            HostStopping: the host is stopping.
            NotOwner: ``principal`` is not the owner of the conversation (nothing happens).
            LeaseLost: another host holds the agent now (the request lives in this host's
                memory, so only the holder can carry it out; a dismiss is refused alike).
            RunNotResumable: the turn is not held or stalled, or ``run_id`` is not its latest
                run.
            StoreUnavailable: the host's store is in a write fault now: the operator run could
                not be written, so the request is refused like any other write
                (docs/host.md#hosts-and-a-failing-store).
        """
        agent = self._admit(agent_id)
        await self._check_operator(agent, principal)
        if self._lease.status_override(agent_id) is not None:
            raise LeaseLost(
                f"host {self.host_id!r} does not hold agent {agent_id!r} now; resume it through "
                "the host that does",
                agent_id=agent_id,
            )
        resumable_turn(await self.reader.conversation_state(agent_id), agent_id, run_id)
        # The request is carried out by the worker after this returns: accepted during a write
        # fault, it would be acknowledged and not happen (until the store is back).
        fault = self.store_state.write
        if fault is not None:
            raise StoreUnavailable(
                f"the store cannot be written now ({fault.message}); the resume was not "
                "accepted, ask again once it is back",
                cause=fault.cause,
                agent_id=agent_id,
            )
        agent.resume_requested = True
        self.wake(agent_id)

    async def answer(
        self, agent_id: str, question_id: str, value: Any, *, sender: str | None = None
    ) -> QuestionRow | None:
        """Answer an open question of the agent's paused turn durably, then wake the agent
        (its worker starts the answer run once every question of the batch is closed).

        Returns:
            The closed question, or None when the agent has no question of that id.

        Raises:
            AgentNotHosted / HostStopping: as ``post``.
            InvalidAnswer: the value does not fit the question's kind.
            QuestionClosed: the question is no longer open.
            NotOwner: ``sender`` is not the conversation's owner.
        """
        agent = self._admit(agent_id)
        with self._writing():
            closed = await answer_question(
                self.store,
                agent_id,
                question_id,
                value,
                now_ms=self.clock.now_ms(),
                by=sender,
                shared=agent.definition.shared,
            )
        self.wake(agent_id)
        return closed

    async def abandon(
        self, agent_id: str, question_id: str, *, sender: str | None = None
    ) -> QuestionRow | None:
        """Close an open question unanswered (docs/host.md#abandoning-a-question), then wake the
        agent.

        Raises:
            As ``answer``, without ``InvalidAnswer``.
        """
        agent = self._admit(agent_id)
        with self._writing():
            closed = await abandon_question(
                self.store,
                agent_id,
                question_id,
                now_ms=self.clock.now_ms(),
                by=sender,
                shared=agent.definition.shared,
            )
        self.wake(agent_id)
        return closed

    async def dismiss(
        self, agent_id: str, *, run_id: str | None = None, principal: str | None = None
    ) -> str:
        """Close the agent's held turn ``dismissed`` so its queue moves on
        (docs/host.md#stalled-and-held-turns); returns the dismissed message's id. With
        ``principal``, only the conversation's owner may, as ``resume``.

        Raises:
            AgentNotHosted / HostStopping: as ``post``.
            NotOwner: ``principal`` is not the owner of the conversation (nothing happens).
            RunNotHeld: the turn is not held, or ``run_id`` is not one of its runs.
        """
        agent = self._admit(agent_id)
        await self._check_operator(agent, principal)
        async with agent.lock:
            with self._writing():
                message_id = await agent.driver.dismiss(run_id)
        self.wake(agent_id)
        return message_id

    async def _check_operator(self, agent: _Agent, principal: str | None) -> None:
        """The owner check of a resume or dismiss asked for by ``principal`` (None: the
        operator, who may act on every conversation). The owner is written once, so a read
        outside the act's transaction cannot go stale in the way that matters."""
        if principal is None or agent.definition.shared:
            return
        agent_id = agent.definition.agent_id
        check_owner(await self.reader.owner(agent_id), agent_id, principal)

    def wake(self, agent_id: str) -> None:
        """Make the agent's worker look for work now."""
        agent = self._agents.get(agent_id)
        if agent is not None and agent.wake is not None:
            agent.wake.set()

    # -- the workers --------------------------------------------------------------------------

    async def _run_workers(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        # The workers' own task group: stopping cancels it, never the code inside ``async with``.
        async with anyio.create_task_group() as workers:
            workers.start_soon(self._lease.keep)
            workers.start_soon(self._checkpoint_periodically)
            # A message posted through any process wakes its worker at once where the store
            # can tell; the poll interval is the fallback (docs/host.md#a-message-reaches-its-host).
            workers.start_soon(self.store.watch_posts, self.wake)
            # Each agent's MCP sessions open before its worker takes a turn, so a turn (and a
            # recovery, which must know which calls may run again) sees the servers' tools;
            # a server that fails leaves its tools out and is tried again (docs/mcp.md#sessions).
            sources = [a.definition.mcp for a in self._agents.values() if a.definition.mcp]
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
            for agent in self._agents.values():
                self._live_workers += 1
                await workers.start(self._worker, agent)
            if not self._live_workers:
                self._all_idle.set()
            if self.store_check == "checking":
                # Behind the serving host; a stop cancels it with the workers.
                workers.start_soon(self._check_in_background)
            task_status.started()
            await self._stop_requested.wait()
            with self._grace_scope, self.clock.move_on_after(self._grace):
                await self._all_idle.wait()
            # Idle workers wait for a wake-up and are simply cancelled; only work in a pass
            # is cut off by the end of the grace.
            if any(agent.working for agent in self._agents.values()):
                log.warning("shutdown grace over; cancelling the running work", grace_s=self._grace)
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

    async def _change_marker(self) -> tuple[int, int] | None:
        """The store's change marker; None when it cannot tell or cannot be reached now (every
        worker then looks each poll interval, and a pass says why)."""
        try:
            return await self.store.change_marker()
        except Exception:
            return None

    async def _watch_changes(self, seen: tuple[int, int]) -> None:
        """Once per poll interval: when the store's change marker moved (or the store cannot
        say), wake every worker. Waking one in a pass sets its fresh event, so a change read by
        no pass is never missed."""
        while True:
            await self.clock.sleep(self.poll_interval_s)
            now = await self._change_marker()
            if now is not None and now == seen:
                continue
            seen = now if now is not None else seen
            for agent_id in self._agents:
                self.wake(agent_id)

    async def _worker(
        self, agent: _Agent, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
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

    async def _work_until_stopped(self, agent: _Agent) -> None:
        assert self._limiter is not None
        failures = 0  # passes in a row the store could not be reached for
        while not self._stop_requested.is_set():
            # A post during the pass sets the fresh event, so it is never missed.
            agent.wake = anyio.Event()
            async with self._limiter:
                if self._stop_requested.is_set():
                    return
                agent.working = True
                agent.quiet = False
                try:
                    await self._lease.run_pass(agent.driver.agent_id, lambda: self._pass(agent))
                    failures = 0
                except Exception as exc:
                    failures = self._pass_failed(exc, failures)
                finally:
                    agent.working = False
                    agent.passes += 1
            if self._stop_requested.is_set():
                return
            if agent.quiet and self._hears_changes:
                await agent.wake.wait()
                continue
            with self.clock.move_on_after(self._next_look_s(failures)):
                await agent.wake.wait()

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
            retry_in_s=self._next_look_s(failures + 1),
        )
        return failures + 1

    def _next_look_s(self, failures: int) -> float:
        """How long a worker waits for a wake-up before it looks again: the poll interval, or
        after passes the store could not be reached for, a back-off from 0.25 s doubling up to
        the poll interval, so a turn goes on soon after the store is back."""
        if not failures:
            return self.poll_interval_s
        return min(self.poll_interval_s, _RETRY_FIRST_S * 2 ** min(failures - 1, 16))

    async def _pass(self, agent: _Agent) -> None:
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
            await agent.driver.work(admit=lambda: self.state in ("starting", "running"))
            agent.quiet = agent.driver.idle
