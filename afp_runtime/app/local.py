"""An agent driven in this process, without a host (docs/python.md,
docs/api.md#the-afp-command): the Python ``Store``, ``afp run`` / ``afp demo`` and the scenario
runner.

``LocalAgent`` is the one place these doors post, close questions, work, resume and dismiss;
the loop's ``AgentDriver`` runs the turns. ``drive`` is ``afp run``'s whole use case: open the
store, finish what an earlier process left, post the messages, answer them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.agents import Agent
from afp_runtime.app.questions import abandon, answer
from afp_runtime.loop import AgentDriver, Emitter, EventSink, IdFactory, LoopHooks, RunOutcome
from afp_runtime.mcp import sessions_open
from afp_runtime.records import Clock, OpenTurn, QuestionRow
from afp_runtime.store import Ack, Store, open_store


class LocalAgent:
    """One agent's turns run on ``store`` in this process, one at a time (the caller serialises).

    Args:
        store: the open (writer) store.
        definition: the agent.
        clock: the clock its turns run on.
        ids: the run and message id factory.
        sinks: where the events go.
        rng: the random source of retry jitter.
        hooks: loop hooks (the scenario runner's crash points).
    """

    def __init__(
        self,
        store: Store,
        definition: Agent,
        *,
        clock: Clock,
        ids: IdFactory,
        sinks: Sequence[EventSink] = (),
        rng: random.Random | None = None,
        hooks: LoopHooks | None = None,
    ) -> None:
        self.store = store
        self.definition = definition
        self.clock = clock
        self.agent_id = definition.agent_id
        self._driver = AgentDriver(
            store,
            definition,
            clock=clock,
            ids=ids,
            emitter=Emitter(list(sinks)),
            rng=rng,
            hooks=hooks,
        )

    async def post(
        self,
        text: str,
        *,
        idempotency_key: str | None = None,
        sender: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably; a fresh one (not an idempotent repeat) emits
        ``inbox.accepted``.

        Raises:
            InvalidValue / IdempotencyConflict / NotOwner: as ``app.post``.
            TimeNotEnabled: ``time`` for an agent without the time layer.
        """
        return await self._driver.post(
            text, idempotency_key=idempotency_key, sender=sender, time=time
        )

    async def work(self) -> list[RunOutcome]:
        """Finish the unfinished turn if it may run now, then answer the queued messages; every
        run's outcome in order."""
        return await self._driver.work()

    async def answer(
        self, question_id: str, value: Any, *, sender: str | None = None
    ) -> QuestionRow:
        """Answer a question of the paused turn durably (``app.answer``); ``work`` runs on."""
        return await answer(
            self.store,
            self.agent_id,
            question_id,
            value,
            clock=self.clock,
            sender=sender,
            shared=self.definition.shared,
        )

    async def abandon(self, question_id: str, *, sender: str | None = None) -> QuestionRow:
        """Close a question unanswered (``app.abandon``); ``work`` runs on."""
        return await abandon(
            self.store,
            self.agent_id,
            question_id,
            clock=self.clock,
            sender=sender,
            shared=self.definition.shared,
        )

    async def resume(self) -> list[RunOutcome]:
        """An operator resume of the held or stalled turn, then the queue moves on.

        Raises:
            RunNotResumable: the turn is not held or stalled.
        """
        return await self._driver.resume()

    async def dismiss(self, run_id: str | None = None) -> str:
        """Close the held turn ``dismissed``; returns its message id.

        Raises:
            RunNotHeld: the turn is not held, or ``run_id`` is not one of its runs.
        """
        return await self._driver.dismiss(run_id)

    async def open_turn(self) -> OpenTurn | None:
        """The agent's open turn, None when it has none."""
        state = await self.store.conversation_state(self.agent_id)
        return state.open_turn if state is not None else None


class Driven(msgspec.Struct, frozen=True, kw_only=True):
    """What ``drive`` did.

    Attributes:
        outcomes: every run's outcome, in order.
        open_turn: the turn left open at the end (a stall not yet due, a pause, a hold), if any.
    """

    outcomes: tuple[RunOutcome, ...]
    open_turn: OpenTurn | None


async def drive(
    target: str,
    definition: Agent,
    messages: Sequence[str] = (),
    *,
    clock: Clock,
    ids: IdFactory,
    sinks: Sequence[EventSink] = (),
) -> Driven:
    """Open the store at ``target``, finish the agent's unfinished work, post ``messages`` and
    answer them, with the agent's MCP sessions open throughout; the definition's adapters and
    the store are closed at the end."""
    store = await open_store(target, now_ms=clock.now_ms())
    try:
        local = LocalAgent(store, definition, clock=clock, ids=ids, sinks=sinks)
        async with sessions_open(definition.mcp, clock):
            # Finish what an earlier process left unfinished before taking anything new.
            outcomes = await local.work()
            for text in messages:
                await local.post(text)
            outcomes += await local.work()
            waiting = await local.open_turn()
    finally:
        await definition.aclose()
        await store.aclose()
    return Driven(outcomes=tuple(outcomes), open_turn=waiting)
