"""The standing host (docs/host.md#running-a-host): agents, inbox, scheduling, stop.

``async with Host(store, definitions, clock=…, ids=…) as host:`` ensures every agent exists in
the store, opens a read-only connection for readers (``host.reader``), and starts one worker per
agent in the host's task group. ``Host`` is a thin composition of one module per concern
(docs/host.md#how-the-host-is-built):

* ``host/admission.py``: what enters (``post``, ``answer``, ``abandon``, ``resume``,
  ``dismiss``), refused while the host does not run or its store failed its check.
* ``host/workers.py``: one worker per agent running ``AgentDriver.work()`` when woken, up to
  ``max_active_turns`` at once, and the tasks beside them (checkpoints, change marker).
* ``host/leases.py``: the host lease, the agents' claims, a pass only on a held agent.
* ``host/lifecycle.py``: start-up, the stop and its grace, signals, the store check after an
  unclean stop and the clean-shutdown marker.
* ``host/store_state.py``: the store's fault as the host last met it (health).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from afp_runtime import models
from afp_runtime.agents import Agent
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.host._timed import TimedCommits
from afp_runtime.host.admission import Admission
from afp_runtime.host.events import DEFAULT_RING_SIZE, DEFAULT_SUBSCRIBER_BUFFER, EventBus
from afp_runtime.host.leases import HostLease
from afp_runtime.host.lifecycle import Lifecycle
from afp_runtime.host.schedules import ScheduleRunner
from afp_runtime.host.states import (
    HostState,
    StoreCheck,
)
from afp_runtime.host.store_state import StoreState
from afp_runtime.host.watch import HostWatch
from afp_runtime.host.workers import HostedAgent, Workers
from afp_runtime.loop import AgentDriver, Emitter, IdFactory, KeptResults, LoopHooks
from afp_runtime.models import Model
from afp_runtime.records import Clock, QuestionRow, StoreFault
from afp_runtime.store import Ack, DefinitionSummary, Store
from afp_runtime.telemetry import Telemetry, TelemetrySink

__all__ = ["Host"]


def _checked_limits(max_active_turns: object, poll_interval_s: float, grace_s: object) -> float:
    """The host's limits as given, or ``AgentDefinitionError`` naming the bad one; returns the
    grace as a float."""
    if (
        isinstance(max_active_turns, bool)
        or not isinstance(max_active_turns, int)
        or (max_active_turns < 1)
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
    if isinstance(grace_s, bool) or not (
        isinstance(grace_s, int | float) and math.isfinite(grace_s) and grace_s >= 0
    ):
        raise AgentDefinitionError(
            f"shutdownGraceS must be a finite number >= 0, not {grace_s!r}",
            field="shutdownGraceS",
        )
    return float(grace_s)


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
        watch: told when a pass begins and ends, a lease period or a checkpoint finished
            (tests, docs/host.md#watching-a-host-in-tests); default: nothing is told.

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
        watch: HostWatch | None = None,
    ) -> None:
        self.shutdown_grace_s = _checked_limits(max_active_turns, poll_interval_s, shutdown_grace_s)
        self.store = store
        self.clock = clock
        self.ids = ids
        self.poll_interval_s = poll_interval_s
        self.max_active_turns = max_active_turns
        self.events = EventBus(
            boot_id=boot_id, ring_size=ring_size, subscriber_buffer=subscriber_buffer
        )
        # With telemetry the drivers commit through a timer (the host's own reads do not).
        timed = TimedCommits(store) if telemetry is not None else None
        # One bound on kept results for the whole process.
        self.kept = kept if kept is not None else KeptResults(clock)
        self._agents = self._hosted(
            definitions, cast(Store, timed) if timed is not None else store, rng, hooks
        )
        watch = watch if watch is not None else HostWatch()
        # Public: the API tells it of a store fault a request met outside the host's own
        # writes (``api/_problems.py``), so health reports it.
        self.store_state = store_state = StoreState(clock, store.location)
        self._lease = HostLease(
            store,
            clock=clock,
            host_id=host_id,
            ttl_s=lease_ttl_s,
            agent_ids=self._agents,
            events=self.events,
            wake=self.wake,
            store_state=store_state,
            on_period=lambda: self._period_ended(watch),
        )
        self._workers = Workers(
            store,
            self._agents,
            clock=clock,
            lease=self._lease,
            store_state=store_state,
            poll_interval_s=poll_interval_s,
            max_active_turns=max_active_turns,
            grace_s=self.shutdown_grace_s,
            admits=lambda: self.state in ("starting", "running"),
            watch=watch,
        )
        self._schedules = ScheduleRunner(
            store,
            self._agents,
            clock=clock,
            ids=ids,
            lease=self._lease,
            store_state=store_state,
            wake=self._workers.wake,
            poll_interval_s=poll_interval_s,
        )
        self._workers.beside.append(self._schedules.run)
        self._life, self._admission = self._compose(telemetry, timed)

    def _period_ended(self, watch: HostWatch) -> None:
        # Claims may have moved, and schedules set by another process are seen (at the latest)
        # here (docs/host.md#schedules).
        self._schedules.changed()
        watch.lease_period()

    def _compose(
        self, telemetry: Telemetry | None, timed: TimedCommits | None
    ) -> tuple[Lifecycle, Admission]:
        """The host's life and its doors, over the agents, lease and workers built already."""
        life = Lifecycle(
            self.store,
            self._agents,
            clock=self.clock,
            events=self.events,
            lease=self._lease,
            workers=self._workers,
            store_state=self.store_state,
            telemetry=telemetry,
            timed=timed,
        )
        admission = Admission(
            self.store,
            self._agents,
            clock=self.clock,
            ids=self.ids,
            life=life,
            lease=self._lease,
            store_state=self.store_state,
            wake=self.wake,
            deliver=self._workers.deliver,
            changed_here=self._workers.changed_here,
        )
        return life, admission

    def _hosted(
        self,
        definitions: Sequence[Agent],
        driver_store: Store,
        rng: random.Random | None,
        hooks: LoopHooks | None,
    ) -> dict[str, HostedAgent]:
        """Every definition with its driver, by id; two with one id are refused."""
        agents: dict[str, HostedAgent] = {}
        rng = rng or random.Random()
        for definition in definitions:
            if definition.agent_id in agents:
                raise AgentDefinitionError(
                    f"two agents are named {definition.agent_id!r}; agent ids must be unique",
                    field="agents",
                )
            driver = AgentDriver(
                driver_store,
                definition,
                clock=self.clock,
                ids=self.ids,
                emitter=Emitter([self.events.publish]),
                rng=rng,
                hooks=hooks,
                kept=self.kept,
            )
            agents[definition.agent_id] = HostedAgent(definition, driver)
        return agents

    # -- lifecycle (host/lifecycle.py) ---------------------------------------------------------

    async def __aenter__(self) -> Host:
        await self._life.start()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        return await self._life.finish(*exc)

    def stop(self, grace_s: float | None = None) -> None:
        """Stop admitting, end every event stream, and let running passes finish for up to
        ``grace_s`` (default ``shutdown_grace_s``) on the clock before cancelling them.

        A second call skips what is left of the grace: the workers are cancelled now. Leaving
        the ``async with`` block waits for the workers either way.
        """
        self._life.stop(grace_s)

    async def wait_stopping(self) -> None:
        """Return once a stop was asked for (``stop()``, or leaving the ``async with``)."""
        await self._life.wait_stopping()

    async def stop_on_signals(self) -> None:
        """Call ``stop()`` at every SIGTERM or SIGINT until cancelled: the first lets running
        work finish within the grace, a second skips what is left of it (run it in a task
        group of the main thread, around ``async with host``)."""
        await self._life.stop_on_signals()

    @property
    def state(self) -> HostState:
        """``starting``, ``running``, ``stopping`` or ``stopped``."""
        return self._life.state

    @property
    def store_check(self) -> StoreCheck:
        """The start-up store check (docs/host.md#after-an-unclean-stop)."""
        return self._life.store_check

    @property
    def telemetry(self) -> TelemetrySink | None:
        """The spans and metrics sink while the host runs with telemetry (docs/telemetry.md)."""
        return self._life.telemetry

    # -- reading ------------------------------------------------------------------------------

    @property
    def reader(self) -> Store:
        """The host's read-only connection to its store (open while the host runs)."""
        return self._life.reader

    @property
    def agent_ids(self) -> tuple[str, ...]:
        """The hosted agents, in registration order."""
        return tuple(self._agents)

    def hosts(self, agent_id: str) -> bool:
        """Whether this host runs ``agent_id``."""
        return agent_id in self._agents

    def profile(self, agent_id: str) -> DefinitionSummary | None:
        """The hosted agent's definition summary (what the store keeps of it too), or None
        when it is not hosted."""
        agent = self._agents.get(agent_id)
        return agent.definition.profile() if agent is not None else None

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

    @property
    def host_id(self) -> str:
        """This host's lease id."""
        return self._lease.host_id

    @property
    def store_fault(self) -> StoreFault | None:
        """Why the store is degraded now, None while it is healthy
        (docs/host.md#hosts-and-a-failing-store)."""
        return self.store_state.fault

    def status_override(self, agent_id: str) -> Literal["not-leased"] | None:
        """``not-leased`` when this host does not hold the agent's claim now (its status then
        says so, docs/host.md#status-values), else None: the stored status stands."""
        return self._lease.status_override(agent_id)

    # -- admission (host/admission.py) ---------------------------------------------------------

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
        return await self._admission.post(
            agent_id, text, idempotency_key=idempotency_key, sender=sender, time=time
        )

    async def resume(
        self, agent_id: str, *, run_id: str | None = None, principal: str | None = None
    ) -> None:
        """Ask for an operator resume of the agent's held or stalled turn
        (docs/host.md#stalled-and-held-turns); it returns before that run starts. With
        ``principal``, only the conversation's owner may (docs/host.md#the-owner-check);
        without, the caller is the operator.

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
        await self._admission.resume(agent_id, run_id=run_id, principal=principal)

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
        return await self._admission.answer(agent_id, question_id, value, sender=sender)

    async def abandon(
        self, agent_id: str, question_id: str, *, sender: str | None = None
    ) -> QuestionRow | None:
        """Close an open question unanswered (docs/host.md#abandoning-a-question), then wake the
        agent.

        Raises:
            As ``answer``, without ``InvalidAnswer``.
        """
        return await self._admission.abandon(agent_id, question_id, sender=sender)

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
        return await self._admission.dismiss(agent_id, run_id=run_id, principal=principal)

    def wake(self, agent_id: str) -> None:
        """Make the agent's worker look for work now, and the schedules be looked at again
        (call it after setting or removing a schedule on the host's store,
        docs/host.md#schedules)."""
        self._workers.wake(agent_id)
        self._schedules.changed()
