"""``afp.open`` and ``afp.Store``: the runtime embedded in an asyncio (anyio) program.

One object over one database: run a person's turn to its outcome, stream its events, answer a
paused turn, finish what a crash left, read what happened (runs, epochs, served views and their
conformance, folded spans and their originals, the findings ledger), and run a standing host with
or without the HTTP API. Everything is async; reads of a run's log run in a worker thread.
docs/python.md is the guide.

Readings settled here:

* ``run`` first finishes the agent's unfinished turn and earlier queued messages (as ``afp run``
  and a host's first pass do), then answers the new message; it returns that message's turn.
* One turn at a time per agent in a ``Store`` (an ``anyio.Lock`` per agent id); different agents
  run concurrently.
* The model adapters of the agents a ``Store`` ran are closed when it closes; adapters make
  their HTTP client again when used later, so an ``Agent`` may outlive the block.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, get_args

import anyio
import anyio.to_thread
import msgspec

from afp_runtime._embed.results import TurnEvents, TurnResult, TurnStatus
from afp_runtime._embed.scheduling import StoreSchedules
from afp_runtime.agents import Agent
from afp_runtime.app import (
    Event,
    EventSink,
    IdFactory,
    LocalAgent,
    RunOutcome,
    SystemClock,
    TimeOrderedIds,
    message_outcome,
)
from afp_runtime.errors import StateError, StoreUnavailable
from afp_runtime.host import Host
from afp_runtime.messages import Cost, Usage
from afp_runtime.records import Clock
from afp_runtime.store import Store as StorePort
from afp_runtime.store import open_store

T = TypeVar("T")


class Store(StoreSchedules):
    """An open afp database: run agents on it and read what they did (see ``afp.open``).

    Args:
        store: the open writer connection.
        clock: the clock every turn runs on.
        ids: the run and message id factory.
        rng: the random source of retry jitter.
        sessions: where the MCP sessions of the agents it runs stay open (``afp.open``'s task
            group); without it an agent with MCP servers is refused.
    """

    def __init__(
        self,
        store: StorePort,
        *,
        clock: Clock,
        ids: IdFactory,
        rng: random.Random | None = None,
        sessions: anyio.abc.TaskGroup | None = None,
    ) -> None:
        super().__init__(store)
        self._sessions = sessions
        self._clock = clock
        self._ids = ids
        self._rng = rng or random.Random()
        self._locks: dict[str, anyio.Lock] = {}
        # Every definition used, whose adapters ``aclose`` closes.
        self._used: list[Agent] = []

    @property
    def path(self) -> Path:
        """The database file."""
        return Path(self._store.location)

    async def aclose(self) -> None:
        """Close the model adapters of the agents this store ran, then the database."""
        with anyio.CancelScope(shield=True):
            try:
                for agent in self._used:
                    await agent.aclose()
            finally:
                await self._store.aclose()

    # -- running turns ------------------------------------------------------------------------

    def _local(self, agent: Agent, sinks: Sequence[EventSink] = ()) -> LocalAgent:
        if not isinstance(agent, Agent):
            raise TypeError(f"expected an afp.Agent, not {type(agent).__name__}")
        self._agents[agent.agent_id] = agent
        if all(used is not agent for used in self._used):
            self._used.append(agent)
        return LocalAgent(
            self._store, agent, clock=self._clock, ids=self._ids, sinks=sinks, rng=self._rng
        )

    async def _open_sessions(self, agent: Agent) -> None:
        """Open the agent's MCP sessions at its first turn here; they stay open while the
        store is (docs/mcp.md#sessions)."""
        source = agent.mcp
        if source is None or source.started:
            return
        if self._sessions is None:
            raise StateError("an agent with MCP servers runs on a store opened with afp.open")
        self._sessions.start_soon(source.run, self._clock)
        await source.wait_ready()

    def _lock(self, agent_id: str) -> anyio.Lock:
        return self._locks.setdefault(agent_id, anyio.Lock())

    async def run(
        self,
        agent: Agent,
        text: str,
        *,
        sender: str | None = None,
        idempotency_key: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> TurnResult:
        """Send the agent a person's message and run the turn until it stops.

        The message is committed to the agent's inbox first (a retry with the same
        ``idempotency_key`` and text is the same message); the agent's unfinished turn and
        earlier queued messages are answered before it.

        Args:
            agent: the agent.
            text: the person's message.
            sender: the sending principal; the first one becomes the conversation's owner.
            idempotency_key: makes a retried send the same message.
            time: the message's time (``{"now": ..., "zone": ...}``) for an agent with time.

        Returns:
            How the message's turn stands: answered (with the answer), paused on a question,
            held, stalled or still queued.

        Raises:
            InvalidValue: the text is empty or too long.
            NotOwner: ``sender`` is not the conversation's owner (nothing is stored).
            IdempotencyConflict: the key was used before with another text.
            TimeNotEnabled: ``time`` for an agent without the time layer.
        """
        return await self._run(agent, text, (), sender, idempotency_key, time)

    async def _run(
        self,
        agent: Agent,
        text: str,
        sinks: Sequence[EventSink],
        sender: str | None,
        idempotency_key: str | None,
        time: Mapping[str, Any] | None,
    ) -> TurnResult:
        local = self._local(agent, sinks)
        await self._open_sessions(agent)
        async with self._lock(agent.agent_id):
            ack = await local.post(text, idempotency_key=idempotency_key, sender=sender, time=time)
            outcomes = await local.work()
        return await self._result(agent.agent_id, ack.message_id, outcomes)

    @asynccontextmanager
    async def stream(
        self,
        agent: Agent,
        text: str,
        *,
        sender: str | None = None,
        idempotency_key: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[TurnEvents]:
        """``run``, with the turn's events as they happen::

            async with store.stream(agent, "Where is order 1042?") as events:
                async for event in events:
                    print(event.type)
            print(events.result.answer)

        Leaving the block early waits for the turn to stop; an exception inside it cancels
        the turn (the next run recovers it from what was committed).
        """
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        events = TurnEvents(receive)

        def deliver(event: Event) -> None:
            # A reader that has gone drops the event; the turn runs on to its end.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(event)

        async def turn() -> None:
            with send:
                events._result = await self._run(
                    agent, text, [deliver], sender, idempotency_key, time
                )

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(turn)
                yield events
        except BaseExceptionGroup as group_error:
            # One failure (the turn's or the block's): raise it as itself.
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        finally:
            receive.close()  # events nobody read are dropped with it

    async def work(self, agent: Agent) -> list[TurnResult]:
        """Finish what the agent left unfinished (a turn cut by a crash, a due retry, an
        answered question) and answer its queued messages, its due schedules' messages among
        them (delivered first, on this store's clock); one result per turn touched."""
        local = self._local(agent)
        await self._open_sessions(agent)
        async with self._lock(agent.agent_id):
            await self._store.ensure_agent(
                agent.agent_id, now_ms=self._clock.now_ms(), definition=agent.profile()
            )
            await self._deliver_schedules(agent)
            outcomes = await local.work()
        message_ids = list(dict.fromkeys(outcome.message_id for outcome in outcomes))
        return [await self._result(agent.agent_id, mid, outcomes) for mid in message_ids]

    async def answer(
        self, agent: Agent, question_id: str, value: Any, *, sender: str | None = None
    ) -> TurnResult:
        """Answer a paused turn's question and run the turn on once every question of its
        pause is closed.

        ``value`` is text for a tool's question, ``{"decision": "approve"}`` or
        ``{"decision": "decline", "note": ...}`` for an approval, and a choice id or range for
        a time question.

        Raises:
            NotFound: the agent has no such question.
            InvalidAnswer: the value does not fit the question.
            QuestionClosed: the question was answered or abandoned already.
            NotOwner: ``sender`` is not the conversation's owner.
        """
        return await self._close(agent, question_id, value, sender=sender, abandon=False)

    async def abandon(
        self, agent: Agent, question_id: str, *, sender: str | None = None
    ) -> TurnResult:
        """Close a question unanswered (the tool is told the person did not reply) and run the
        turn on. Raises as ``answer``."""
        return await self._close(agent, question_id, None, sender=sender, abandon=True)

    async def _close(
        self, agent: Agent, question_id: str, value: Any, *, sender: str | None, abandon: bool
    ) -> TurnResult:
        local = self._local(agent)
        await self._open_sessions(agent)
        async with self._lock(agent.agent_id):
            if abandon:
                row = await local.abandon(question_id, sender=sender)
            else:
                row = await local.answer(question_id, value, sender=sender)
            outcomes = await local.work()
        return await self._result(agent.agent_id, row.message_id, outcomes)

    async def _result(
        self, agent_id: str, message_id: str, outcomes: Sequence[RunOutcome]
    ) -> TurnResult:
        """The message's turn as ``outcomes`` (this call's runs) and the store tell it."""
        mine = tuple(outcome for outcome in outcomes if outcome.message_id == message_id)
        usage = sum((outcome.usage for outcome in mine), Usage())
        costs = [outcome.cost for outcome in mine if outcome.cost is not None]
        cost = sum(costs, Cost()) if costs else None
        questions = tuple(
            q
            for q in await self._store.questions(agent_id, status="open")
            if q.message_id == message_id
        )
        if mine:
            last = mine[-1]
            status: str = last.status
            answer: str | None = last.final_answer
            run_id: str | None = last.run_id
            turn = last.turn
            error_kind, error = last.error_kind, last.error
            typed = self._typed(agent_id, last)
        else:
            # Nothing ran for it now: queued behind another turn, or settled before (a retried
            # send with the same idempotency key).
            found = await message_outcome(self._store, message_id)
            assert found is not None, "the message was committed"
            status, answer, turn = found.row.status, found.answer, found.row.turn or 0
            run_id = found.run_id
            error_kind, error = found.error_kind, found.error
            typed = {}
        return TurnResult(
            agent_id=agent_id,
            message_id=message_id,
            status=_turn_status(status),
            answer=answer,
            turn=turn,
            run_id=run_id,
            runs=mine,
            usage=usage,
            cost=cost,
            **typed,
            error_kind=error_kind,
            error=error,
            questions=questions,
        )

    def _typed(self, agent_id: str, outcome: RunOutcome) -> dict[str, Any]:
        """The typed value (or why there is none) of a run that answered."""
        agent = self._agents.get(agent_id)
        if outcome.output_error is not None:
            return {"output_error": outcome.output_error}
        if outcome.final_value is msgspec.UNSET or agent is None or agent.output is None:
            return {}
        return {"value": agent.output.typed(outcome.final_value)}

    # -- hosting ------------------------------------------------------------------------------

    @asynccontextmanager
    async def host(self, agents: Sequence[Agent], **options: Any) -> AsyncIterator[Host]:
        """A standing host over these agents on this database, running inside the block.

        The host resumes each agent's unfinished work at once and answers messages posted
        to it (``await host.post(agent_id, text)``) or to the inbox by other processes
        (``afp send``). ``options`` are ``Host``'s: ``max_active_turns``, ``poll_interval_s``,
        ``shutdown_grace_s``, ``lease_ttl_s``, ``host_id``, ``telemetry``.
        """
        host = Host(self._store, agents, clock=self._clock, ids=self._ids, **options)
        for agent in agents:
            self._agents[agent.agent_id] = agent
        async with host:
            yield host

    async def serve(
        self,
        agents: Sequence[Agent],
        *,
        address: str = "127.0.0.1",
        port: int | None = 8765,
        token: str | None = None,
        handle_signals: bool = True,
        **options: Any,
    ) -> None:
        """Run a standing host, and the local HTTP API unless ``port`` is None, until
        cancelled or (``handle_signals``, main thread only) SIGTERM/SIGINT: a first signal
        lets running work finish within the grace, a second ends it at once.

        Args:
            agents: the agents to host.
            address: where the API listens; a non-loopback address needs ``token``.
            port: the API's port (0 picks a free one); None: no API.
            token: the bearer token API clients must send (at least 32 characters).
            handle_signals: stop on SIGTERM/SIGINT.
            options: ``Host`` options, as for ``host``.

        Raises:
            ConfigError: a token too short, or a non-loopback address without one.
            StoreUnavailable: the address cannot be bound.
        """
        # The HTTP stack loads only when an API is served (docs/python.md#import-cost), in a
        # worker thread: importing it reads many files.
        await anyio.to_thread.run_sync(importlib.import_module, "afp_runtime.api.serving")
        api: Any = importlib.import_module("afp_runtime.api")
        listener = None
        if port is not None:
            api.check_binding(address, token)
            try:
                listener = await api.open_listener(address, port)
            except OSError as exc:
                raise StoreUnavailable(f"cannot listen on {address}:{port}: {exc}") from exc
        try:
            async with self.host(agents, **options) as host, anyio.create_task_group() as watch:
                if handle_signals:
                    watch.start_soon(host.stop_on_signals)
                if listener is not None:
                    await api.serve_until_stopped(host, listener=listener, token=token)
                else:
                    await host.wait_stopping()
                watch.cancel_scope.cancel()
        finally:
            if listener is not None:
                listener.close()


def _turn_status(status: str) -> TurnStatus:
    """A run's or inbox row's status as a turn's: a ``running`` one that nobody runs now was
    cut off."""
    if status == "running":
        return "crashed"
    return status if status in get_args(TurnStatus) else "queued"  # type: ignore[return-value]


@asynccontextmanager
async def open(
    target: str | os.PathLike[str] = "afp.db",
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    rng: random.Random | None = None,
) -> AsyncIterator[Store]:
    """Open (creating and migrating it if needed) an afp database: ``async with
    afp.open("afp.db") as store:``. Everything it opened is closed when the block ends.

    Args:
        target: a SQLite file path, a ``sqlite:///relative.db`` / ``sqlite:////abs.db``
            URL, or a ``postgresql://`` URL (docs/storage.md#the-postgres-backend).
        clock: the clock turns run on (default: the system clock; ``afp_runtime.testing``
            has a virtual one).
        ids: the run and message id factory (default: time-ordered ids on ``clock``).
        rng: the random source of retry jitter.

    Raises:
        ConfigError: an unknown URL scheme.
        StoreUnavailable: the file cannot be opened or created.
        SchemaTooNew: a newer afp wrote the file (it is never touched).
        StoreDamaged: the file is not an afp database.
    """
    clock = clock or SystemClock()
    ids = ids or TimeOrderedIds(clock.now_ms)
    store = await open_store(target, now_ms=clock.now_ms())
    try:
        # The MCP sessions of the agents it runs stay open in this group while the store is.
        async with anyio.create_task_group() as sessions:
            embedded = Store(store, clock=clock, ids=ids, rng=rng, sessions=sessions)
            try:
                yield embedded
            finally:
                sessions.cancel_scope.cancel()
                await embedded.aclose()
    except BaseExceptionGroup as failed:
        # The block's own exception (no session fails outside a call), raised as itself.
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from None
        raise
